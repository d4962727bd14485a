"""Console summary of a calibration (rich tables, mm / mrad for reading)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from robocal.analysis.verdict import Verdict
from robocal.calibration import Calibration


def print_summary(cal: Calibration, console: Console) -> None:
    table = Table(title="errors (mm): before = nominal robot, frames fitted; after = calibrated")
    for col in ("measurement", "n", "figure", "before", "after", "removed", "max before", "max after"):
        table.add_column(col, justify="left" if col in ("measurement", "figure") else "right")
    metrics = cal.metrics
    for m in metrics:
        b, a, h = m["before"], m["after"], m["headline"]
        removed = "" if m["removed"] is None else f"{m['removed'] * 100:.1f} %"
        table.add_row(escape(m["name"]), str(m["n"]), h, f"{b[h] * 1e3:.3f}", f"{a[h] * 1e3:.3f}", removed, f"{b['max'] * 1e3:.3f}", f"{a['max'] * 1e3:.3f}")
    console.print(table)
    s, ident = cal.solution, cal.identifiability
    held = len(cal.held)
    console.print(
        f"solver: {s.iterations} iterations, converged={s.converged}, {s.seconds:.3f} s (+{s.compile_seconds:.1f} s compile); "
        f"{parameter_line(ident.rank, ident.n_parameters, held)}; {len(s.rejections)} rows rejected"
    )
    console.print(conditioning_line(cal.conditioning))
    task = cal.task_prediction
    if task is not None and task["predicted"]["rms"] is not None:
        p = task["predicted"]
        console.print(
            f"predicted task error ({', '.join(task['tips'])} relative to {task['reference']}): mean {p['mean'] * 1e3:.3f} mm, rms {p['rms'] * 1e3:.3f} mm; "
            f"the test set's mean error lies in [{p['interval95'][0] * 1e3:.3f}, {p['interval95'][1] * 1e3:.3f}] mm with 95 % probability"
            + (f", counting the prior of the {len(task['held_at_nominal'])} parameters held at nominal" if task["held_at_nominal"] else "")
        )
        modulo = task.get("predicted_modulo_gauge")
        if cal.gauge is not None and modulo is not None and modulo["mean"] is not None:
            console.print(
                f"modulo the gauge ({escape(cal.gauge.gauge.describe())}, which the data do not see): mean {modulo['mean'] * 1e3:.3f} mm, "
                f"rms {modulo['rms'] * 1e3:.3f} mm, 95 % interval [{modulo['interval95'][0] * 1e3:.3f}, {modulo['interval95'][1] * 1e3:.3f}] mm"
            )
        if "warning" in task:
            console.print(f"[yellow]warning:[/] {escape(task['warning'])}")
    if cal.crossval is not None:
        training = {m["name"]: m["after"]["rms"] for m in metrics}
        for m in cal.crossval["held_out"]:
            console.print(
                f"cross-validation ({cal.crossval['k']} folds), {escape(m['name'])}: held-out rms {m['after']['rms'] * 1e3:.3f} mm "
                f"(nominal robot {m['before']['rms'] * 1e3:.3f} mm, training rows {training[m['name']] * 1e3:.3f} mm)"
            )
    print_verdict(cal.verdict, console)


STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "fail": "red"}


def print_verdict(verdict: Verdict, console: Console) -> None:
    """The verdict's level, then one line per finding (docs/trust.md)."""
    against = any(f.level != "info" for f in verdict.findings)
    console.print(f"verdict: [bold {STYLE[verdict.level]}]{verdict.level}[/]" + ("" if against else ": nothing found against this calibration"))
    for f in verdict.findings:
        console.print(f"[{STYLE[f.level]}]{f.level}:[/] {escape(f.sentence)} [dim]({f.code})[/]")


def parameter_line(rank: int, fitted: int, held: int) -> str:
    """How many parameters were fitted, how many of them the data determine, and how many were held."""
    line = f"{fitted} parameters fitted, the data determine {rank} directions of them"
    return line + (f"; {held} more held at nominal (parameters.select: identifiable)" if held else "")


def conditioning_line(conditioning: dict[str, float | None]) -> str:
    """Schroer's scaled condition number, said as what it means."""
    kappa = ", ".join(f"{name} {value:.0f}" if value is not None else f"{name} inf" for name, value in conditioning.items())
    return (
        f"conditioning (Schroer-scaled, over the determined directions): {kappa}: the worst-determined combination of parameters "
        "moves the measured points that many times less than the best one, so noise enters it that many times more; "
        "whether that matters is in the parameters' std and the held-out errors (Schroer's guideline for designing poses: < 100)"
    )


@contextmanager
def step(console: Console, text: str) -> Iterator[None]:
    """A spinner while a step of a long command runs, then a line with its duration."""
    started = time.perf_counter()
    with console.status(text + " ..."):
        yield
    console.print(f"[green]✓[/] {text} ({time.perf_counter() - started:.1f} s)")
