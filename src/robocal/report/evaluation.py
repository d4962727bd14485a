"""Console tables of `robocal evaluate` (mm and mrad for reading; `--json` keeps the SI report)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from robocal.analysis.verdict import Finding, Verdict
from robocal.report.console import print_verdict

SCALE = {"m": (1e3, "mm"), "rad": (1e3, "mrad")}


def _reading(value: float | None, unit: str) -> str:
    factor = SCALE.get(unit, (1.0, unit))[0]
    return "" if value is None else f"{value * factor:.3f}"


def print_held_out(report: dict, console: Console) -> None:
    """The training data's and every held-out file's before/after errors, the generalization
    warnings and the verdict on the held-out data."""
    table = Table(title="held-out errors: before = nominal robot, after = calibrated (frames from the calibration)")
    for column in ("data", "measurement", "n", "figure", "before", "after", "removed", "max after"):
        table.add_column(column, justify="left" if column in ("data", "measurement", "figure") else "right")
    rows = [(Path(report["training"]["data"]).name + " (training)", m) for m in report["training"]["measurements"]]
    rows += [(Path(e["data"]).name, m) for e in report["evaluations"] for m in e["measurements"]]
    for label, m in rows:
        unit, h = m["unit"], m["headline"]
        removed = "" if m.get("removed") is None else f"{m['removed'] * 100:.1f} %"
        table.add_row(
            escape(label),
            escape(m["name"]),
            str(m["n"]),
            f"{h} ({SCALE.get(unit, (1.0, unit))[1]})",
            _reading(m["before"][h], unit),
            _reading(m["after"][h], unit),
            removed,
            _reading(m["after"]["max"], unit),
        )
    console.print(table)
    for warning in report["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(warning['message'])} [dim]({warning['kind']})[/]")
    findings = tuple(Finding(**f) for f in report["verdict"]["findings"])
    print_verdict(Verdict(findings), console)


def print_task(report: dict, console: Console) -> None:
    """The task error of the nominal and the calibrated robot against the true one."""
    table = Table(
        title=f"task error against {Path(report['truth']).name}: {', '.join(report['tips'])} relative to {report['reference']}, "
        f"{report['n']} test configurations (seed {report['seed']})"
    )
    for column in ("robot", "rms (mm)", "mean (mm)", "max (mm)"):
        table.add_column(column, justify="left" if column == "robot" else "right")
    for robot in ("nominal", "calibrated"):
        figures = report["task"][robot]
        table.add_row(robot, *(_reading(figures[k], report["unit"]) for k in ("rms", "mean", "max")))
    console.print(table)
