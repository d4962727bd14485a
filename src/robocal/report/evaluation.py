"""What `robocal evaluate` shows: console tables and the held-out HTML page (mm and mrad for
reading; `--json` keeps the SI report)."""

from __future__ import annotations

from html import escape as html_escape
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from robocal.analysis.verdict import Finding, Verdict
from robocal.report.console import print_verdict
from robocal.report.page import table_html, verdict_html, write_page

SCALE = {"m": (1e3, "mm"), "rad": (1e3, "mrad")}
BEFORE_AFTER = "before = nominal robot, after = calibrated (frames from the calibration)"


def _reading(value: float | None, unit: str) -> str:
    factor = SCALE.get(unit, (1.0, unit))[0]
    return "" if value is None else f"{value * factor:.3f}"


HELD_OUT_COLUMNS = ("data", "measurement", "n", "figure", "before", "after", "removed", "max after")


def held_out_rows(report: dict) -> list[list[str]]:
    """One row per data file and measurement (training first) in the units of reading, the
    columns of HELD_OUT_COLUMNS; console and HTML show the same rows."""
    rows = [(Path(e["data"]).name + " (training)", m) for e in report["training"] for m in e["measurements"]]
    rows += [(Path(e["data"]).name, m) for e in report["evaluations"] for m in e["measurements"]]
    out = []
    for label, m in rows:
        unit, h = m["unit"], m["headline"]
        removed = "" if m.get("removed") is None else f"{m['removed'] * 100:.1f} %"
        figure = f"{h} ({SCALE.get(unit, (1.0, unit))[1]})"
        out.append(
            [label, m["name"], str(m["n"]), figure, _reading(m["before"][h], unit), _reading(m["after"][h], unit), removed, _reading(m["after"]["max"], unit)]
        )
    return out


def held_out_verdict(report: dict) -> Verdict:
    return Verdict(tuple(Finding(**f) for f in report["verdict"]["findings"]))


def print_held_out(report: dict, console: Console) -> None:
    """The training data's and every held-out file's before/after errors, the generalization
    warnings and the verdict on the held-out data."""
    table = Table(title=f"held-out errors: {BEFORE_AFTER}")
    for column in HELD_OUT_COLUMNS:
        table.add_column(column, justify="left" if column in ("data", "measurement", "figure") else "right")
    for row in held_out_rows(report):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    for warning in report["warnings"]:
        console.print(f"[yellow]warning ({escape(warning['measurement'])}):[/] {escape(warning['message'])} [dim]({warning['kind']})[/]")
    print_verdict(held_out_verdict(report), console)


def write_held_out_page(report: dict, path: Path) -> None:
    """The same as a self-contained HTML page: the verdict, the table and the warnings."""
    warnings = "".join(f"<li>{html_escape(w['measurement'])}: {html_escape(w['message'])} ({html_escape(w['kind'])})</li>" for w in report["warnings"])
    sections = [
        ("Verdict on the held-out data", verdict_html(held_out_verdict(report))),
        ("Errors", table_html(list(HELD_OUT_COLUMNS), held_out_rows(report), BEFORE_AFTER)),
        ("Warnings", f"<ul>{warnings}</ul>" if warnings else "<p>None.</p>"),
    ]
    write_page(path, "Held-out evaluation", f"<p>Calibration: <code>{html_escape(report['result'])}</code></p>", sections)


def print_task(report: dict, console: Console) -> None:
    """The task error of the nominal and the calibrated robot against the true one."""
    table = Table(
        title=f"task error against {Path(report['truth']).name}: {', '.join(report['tips'])} relative to {report['reference']}, "
        f"{report['n']} test configurations (seed {report['seed']})"
    )
    for column in ("robot", "rms (mm)", "mean (mm)", "max (mm)"):
        table.add_column(column, justify="left" if column == "robot" else "right")
    modulo = report.get("task_modulo_gauge")
    for robot in ("nominal", "calibrated"):
        for label, figures in ((robot, report["task"][robot]), (f"{robot}, modulo the gauge", modulo[robot] if modulo else None)):
            if figures is not None:
                table.add_row(label, *(_reading(figures[k], report["unit"]) for k in ("rms", "mean", "max")))
    if modulo:
        table.caption = "modulo the gauge: after the best rigid motion the calibration's gauge allows (what its data could tell; report.json gauge)"
    console.print(table)
