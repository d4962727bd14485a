"""Warm MAP solve time of the TIAGo problems (target: under 0.2 s on a 2-core machine for `full`).

Run from the repository root:  .venv/bin/python benchmarks/solve_tiago.py
Compile time (tracing + XLA, the first solve of a process) is reported separately from the warm
solve, which is the median of repeated solves.
"""

from __future__ import annotations

import platform
from pathlib import Path

import jax

from robocal.problem import load_problem
from timing import report_solve

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tiago_mocap"

if __name__ == "__main__":
    print(f"{platform.machine()}, {jax.device_count()} {jax.devices()[0].platform} device(s), jax {jax.__version__}")
    for name in ("full", "full_prior", "joint_offsets"):
        report_solve(name, load_problem(EXAMPLES / f"{name}.yaml"), target_seconds=0.2, repeats=20)
