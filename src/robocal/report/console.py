"""Console summary of a calibration (rich tables, mm / mrad for reading)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from robocal.calibration import MISFIT, Calibration


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
    for m in metrics:
        if m["fit_per_residual"] > MISFIT:
            console.print(f"[yellow]warning:[/] {escape(m['name'])}: the calibrated model leaves residuals {m['fit_per_residual'] ** 0.5:.1f} times the declared sigma: it does not explain these data (model error such as joint backlash or elasticity, or a sigma set too small)")
    s, ident = cal.solution, cal.identifiability
    console.print(
        f"solver: {s.iterations} iterations, converged={s.converged}, {s.seconds:.3f} s (+{s.compile_seconds:.1f} s compile); "
        f"identifiable {ident.rank} of {ident.n_parameters} parameters; {len(s.rejections)} rows rejected"
    )
    if not s.converged:
        console.print(f"[yellow]warning:[/] the solver stopped after {s.iterations} iterations without converging (solver.max_iterations, "
                      "solver.tolerance): the estimate is where it stopped, not a calibration")
    residuals = sum(m.n * len(m.row_sigmas()) for m in cal.problem.measurements)
    if residuals <= ident.n_parameters:
        console.print(f"[yellow]warning:[/] {residuals} measured residuals for {ident.n_parameters} parameters: the model can "
                      "fit these data exactly whatever the robot, so the 'removed' figures say nothing; record more samples")
    kappa = ", ".join(f"{name} {value:.0f}" if value is not None else f"{name} inf" for name, value in cal.conditioning.items())
    console.print(f"Schroer-scaled condition number (target < 100): {kappa}")
    task = cal.task_prediction
    if task is not None and task["predicted"]["rms"] is not None:
        p = task["predicted"]
        console.print(f"predicted task error ({', '.join(task['tips'])} relative to {task['reference']}): mean {p['mean'] * 1e3:.3f} mm, rms {p['rms'] * 1e3:.3f} mm")
        if "warning" in task:
            console.print(f"[yellow]warning:[/] {escape(task['warning'])}")


@contextmanager
def step(console: Console, text: str) -> Iterator[None]:
    """A spinner while a step of a long command runs, then a line with its duration."""
    started = time.perf_counter()
    with console.status(text + " ..."):
        yield
    console.print(f"[green]✓[/] {text} ({time.perf_counter() - started:.1f} s)")
