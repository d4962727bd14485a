"""The dashboard, served by the application: server-rendered HTML with inline SVG plots, no script.

/login takes a token and keeps it in an HttpOnly, SameSite=Strict cookie; / shows the fleet yield
over time per model and station, the queue, every unit with its latest verdict and the parameter
deviations across the fleet; /units/SERIAL a unit's history with its verdicts, reports and URDFs."""

from __future__ import annotations

from datetime import datetime
from html import escape

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session as DbSession

from robocal import svg
from robocal.service.auth import COOKIE, Caller, verify
from robocal.service.routes import visible_unit
from robocal.service.routes.results import statistics
from robocal.service.routes.units import history

router = APIRouter(include_in_schema=False)
STYLE = "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}.pass{color:#2ca02c}.rework{color:#ff7f0e}.fail{color:#d62728}"
HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'"}


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>'
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def signed_in(request: Request) -> Caller | None:
    try:
        return verify(request.app.state.engine, request.cookies.get(COOKIE))
    except HTTPException:
        return None


@router.get("/login")
def login_form() -> HTMLResponse:
    form = '<form method="post" action="/login"><label>Token <input name="token" type="password" size="60" autocomplete="off"></label> <button type="submit">Sign in</button></form>'
    return page("robocal: sign in", "<h1>robocal calibration service</h1>" + form)


@router.post("/login")
def login(request: Request, token: str = Form(max_length=200)) -> Response:
    try:
        verify(request.app.state.engine, token)
    except HTTPException as exc:
        return page("robocal: sign in", f'<h1>Sign in failed</h1><p>{escape(exc.detail)}</p><a href="/login">again</a>', status=401)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
    return response


def _yield_section(stats: dict, entries: list[dict]) -> str:
    rows = "".join(
        f'<tr data-group="{escape(g)}"><td>{escape(g)}</td><td>{v["pass"]}</td><td>{v["rework"]}</td><td>{v["fail"]}</td><td class="yield">{100 * v["yield"]:.1f} %</td></tr>'
        for g, v in stats["yield"].items()
    )
    series: dict[str, list[tuple[float, float]]] = {}
    passed: dict[str, list[int]] = {}
    times = [datetime.fromisoformat(e["created"]) for e in entries]  # entries are in session order
    for e, moment in zip(entries, times):
        if e["verdict"] is None:
            continue
        group = f"{e['model']} @ {e['station']}"
        tally = passed.setdefault(group, [0, 0])
        tally[0] += e["verdict"] == "pass"
        tally[1] += 1
        minutes = (moment - times[0]).total_seconds() / 60
        series.setdefault(group, []).append((minutes, 100 * tally[0] / tally[1]))
    plot = svg.lines(series, "yield over time (cumulative)", "minutes since the first session", "yield %", (0.0, 100.0)) if series else ""
    return f'<section id="yield"><h2>Yield per model and station</h2><table><tr><th>model @ station</th><th>pass</th><th>rework</th><th>fail</th><th>yield</th></tr>{rows}</table>{plot}</section>'


@router.get("/")
def overview(request: Request) -> Response:
    who = signed_in(request)
    if who is None:
        return RedirectResponse("/login", status_code=303)
    with DbSession(request.app.state.engine) as db:
        entries, stats = history(db, who), statistics(db, who)
    queue = "".join(f'<td id="queue-{s}">{stats["jobs"].get(s, 0)}</td>' for s in ("queued", "running", "done", "failed"))
    latest = {e["unit"]: e for e in entries}
    units = "".join(
        f'<tr><td><a href="/units/{escape(u)}">{escape(u)}</a></td><td>{escape(e["station"] or "")}</td><td>{escape(e["status"])}</td><td class="{escape(e["verdict"] or "")}">{escape(e["verdict"] or "")}</td></tr>'
        for u, e in sorted(latest.items())
    )
    histograms = "".join(svg.histogram(values, name, "estimate - nominal") for name, values in sorted(stats["deviations"].items()))
    body = (
        "<h1>Fleet</h1>"
        + _yield_section(stats, entries)
        + f'<section id="queue"><h2>Queue</h2><table><tr><th>queued</th><th>running</th><th>done</th><th>failed</th></tr><tr>{queue}</tr></table></section>'
        + f'<section id="units"><h2>Units</h2><table><tr><th>unit</th><th>station</th><th>job</th><th>verdict</th></tr>{units}</table></section>'
        + f'<section id="parameters"><h2>Parameters across the fleet</h2>{histograms}</section>'
    )
    return page("robocal: fleet", body)


@router.get("/units/{serial}")
def unit_page(serial: str, request: Request) -> Response:
    who = signed_in(request)
    if who is None:
        return RedirectResponse("/login", status_code=303)
    with DbSession(request.app.state.engine) as db:
        try:
            unit = visible_unit(db, who, serial)
        except HTTPException as exc:
            return page("robocal: unit", f"<p>{escape(exc.detail)}</p>", status=exc.status_code)
        entries = history(db, who, [unit.id])
    rows = ""
    for e in entries:
        links = (
            f'<a href="/api/results/{e["session"]}/urdf">calibrated URDF</a> <a href="/api/results/{e["session"]}/report">report</a>' if e["verdict"] else ""
        )
        reasons = "<br>".join(escape(r) for r in e["reasons"])
        offset = "" if e["clock_offset"] is None else f"{1e3 * e['clock_offset']:.1f} ms"
        rows += f'<tr><td>{e["session"]}</td><td>{escape(e["created"])}</td><td>{escape(e["station"] or "")}</td><td>{escape(e["model"] or "")}</td><td>{offset}</td><td>{escape(e["status"])}</td><td class="verdict {escape(e["verdict"] or "")}">{escape(e["verdict"] or "")}</td><td>{reasons}</td><td>{links}</td></tr>'
    head = "<tr><th>session</th><th>recorded</th><th>station</th><th>model</th><th>clock offset</th><th>job</th><th>verdict</th><th>reasons</th><th>downloads</th></tr>"
    return page(f"robocal: {unit.serial}", f'<p><a href="/">fleet</a></p><h1>Unit {escape(unit.serial)}</h1><table id="history">{head}{rows}</table>')
