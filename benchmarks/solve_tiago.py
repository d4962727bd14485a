"""Warm MAP solve time of the TIAGo `full` problems (target: under 0.2 s on a 2-core machine).

Run from the repository root:  .venv/bin/python benchmarks/solve_tiago.py
Compile time (tracing + XLA, the first solve of a process without a warm compilation cache) is
reported separately from the warm solve, which is the median of repeated solves.
"""

from __future__ import annotations

import platform
import statistics
import time
from pathlib import Path

import jax

from robocal.problem import load_problem
from robocal.solver import solve

TARGET_SECONDS = 0.2
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tiago_mocap"


def bench(name: str, repeats: int = 20) -> None:
    problem = load_problem(EXAMPLES / f"{name}.yaml")
    cfg = problem.config.solver
    run = lambda: solve(problem.map_problem, problem.theta0, max_iterations=cfg.max_iterations, tolerance=cfg.tolerance)
    first = run()
    warm = [run().seconds for _ in range(repeats)]
    median = statistics.median(warm)
    print(
        f"{name:11s} parameters={len(problem.layout):3d} rows={problem.measurements[0].n} iterations={first.iterations:3d} "
        f"compile={first.compile_seconds:6.2f} s  warm median={median * 1e3:7.1f} ms (min {min(warm) * 1e3:.1f}) "
        f"target {TARGET_SECONDS * 1e3:.0f} ms -> ratio {median / TARGET_SECONDS:.2f}"
    )


if __name__ == "__main__":
    print(f"{platform.processor() or platform.machine()}, {jax.device_count()} {jax.devices()[0].platform} device(s), jax {jax.__version__}")
    for name in ("full", "full_prior", "joint_offsets"):
        bench(name)
