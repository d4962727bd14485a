"""`robocal fleet report`: one self-contained HTML page of a batch (no script, nothing fetched):
yield per model and station, the calibrated errors across units, every parameter's spread with
its outlying units and a batch-wide bias flagged, and the units that drifted between sessions."""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
from sqlalchemy import Engine

from robocal import svg
from robocal.fleet.statistics import BIAS, OUTLIER, drifts, latest, results, spreads, yields
from robocal.fleet.store.jobs import counts

STYLE = "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}.bad{color:#b00}"


def _reading(value: float, unit: str) -> str:
    return f"{value * 1e3:.3f} mm" if unit == "m" else f"{value * 1e3:.3f} mrad" if unit == "rad" else f"{value:.4g} {unit}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def fleet_page(engine: Engine) -> str:
    """The report's HTML."""
    rows = results(engine)
    units = latest(rows)
    jobs = counts(engine)
    parts = [
        f"<h1>Fleet report</h1><p>{len(units)} units, {len(rows)} results; jobs: " + ", ".join(f"{escape(s)} {n}" for s, n in sorted(jobs.items())) + "</p>"
    ]
    parts.append(
        "<h2>Yield</h2>"
        + _table(
            ["model @ station", "pass", "rework", "fail", "yield"],
            [[escape(k), str(v["pass"]), str(v["rework"]), str(v["fail"]), f"{100 * v['yield']:.1f} %"] for k, v in yields(units).items()],
        )
    )
    errors = [r.rms * 1e3 for r in units if np.isfinite(r.rms)]
    if errors:
        parts.append("<h2>Calibrated errors</h2>" + svg.histogram(errors, "largest calibrated rms per unit", "mm"))
    found = spreads(rows)
    flagged = [s for s in found if s.outliers or s.biased]
    parts.append(
        f"<h2>Parameters across units</h2><p>Outliers: more than {OUTLIER:g} scaled MADs from the batch median. "
        f"Bias: a batch mean more than {BIAS:g} standard errors from zero, which points at the line, not at a unit.</p>"
    )
    parts.append(
        _table(
            ["parameter", "units", "batch mean", "std error", "bias", "outlying units"],
            [
                [
                    escape(s.name),
                    str(len(s.deviations)),
                    _reading(s.mean, s.unit),
                    _reading(s.standard_error, s.unit),
                    '<span class="bad">biased</span>' if s.biased else "",
                    escape(", ".join(s.outliers)),
                ]
                for s in sorted(found, key=lambda s: (not (s.outliers or s.biased), s.name))
            ],
        )
    )
    parts += [
        svg.histogram(
            list(s.deviations * (1e3 if s.unit in ("m", "rad") else 1.0)),
            s.name,
            f"estimate - nominal ({'mm' if s.unit == 'm' else 'mrad' if s.unit == 'rad' else s.unit})",
        )
        for s in flagged
    ]
    moved = drifts(rows)
    parts.append(
        "<h2>Drift between sessions</h2>"
        + (
            _table(
                ["unit", "parameter", "change", "sigmas"], [[escape(d.serial), escape(d.name), _reading(d.change, d.unit), f"{d.sigmas:.1f}"] for d in moved]
            )
            if moved
            else "<p>No unit moved beyond 3 sigmas between its last two sessions.</p>"
        )
    )
    return f"<!doctype html><html><head><meta charset='utf-8'><title>Fleet report</title><style>{STYLE}</style></head><body>{''.join(parts)}</body></html>"


def write_fleet_report(engine: Engine, out: Path) -> Path:
    """fleet.html under `out` (written aside, then moved into place)."""
    out.mkdir(parents=True, exist_ok=True)
    partial, target = out / ".fleet.html.partial", out / "fleet.html"
    partial.write_text(fleet_page(engine), encoding="utf-8")
    partial.replace(target)
    return target
