"""Shared by the benchmark scripts: the machine's CPU name; compile time and warm time of a problem's MAP solve."""

from __future__ import annotations

import platform
import statistics
from pathlib import Path

from robocal.analysis.selection import free_mask, selection
from robocal.problem import Problem
from robocal.solver import solve


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def report_solve(name: str, problem: Problem, target_seconds: float, repeats: int = 10) -> None:
    """Print parameters (fitted ones: `parameters.select` applied), rows, iterations, compile time
    (first solve of the process) and the median warm solve time over `repeats`, with its ratio to
    the target."""
    cfg = problem.config.solver
    free = free_mask(problem, selection(problem))

    def run():
        return solve(problem.map_problem, problem.theta0, free=free, max_iterations=cfg.max_iterations, tolerance=cfg.tolerance)

    first = run()
    warm = [run().seconds for _ in range(repeats)]
    median = statistics.median(warm)
    print(
        f"{name:14s} parameters={int(free.sum()):3d} rows={sum(m.n for m in problem.measurements):4d} iterations={first.iterations:3d} "
        f"converged={first.converged} compile={first.compile_seconds:6.2f} s  warm median={median * 1e3:7.1f} ms (min {min(warm) * 1e3:.1f}) "
        f"target {target_seconds * 1e3:.0f} ms -> ratio {median / target_seconds:.2f}"
    )
