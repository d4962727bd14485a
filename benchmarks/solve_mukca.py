"""Warm MAP solve of one Panda sphere-in-socket placement (panda_1/front: 62 configurations,
48 origin parameters; target under 0.1 s, the README's IPOPT reference takes 0.16 s). Compile
time is reported separately.

Run from the repository root:  .venv/bin/python benchmarks/solve_mukca.py
"""

from __future__ import annotations

from pathlib import Path

from robocal.problem import load_problem
from timing import report_solve

if __name__ == "__main__":
    problem = load_problem(Path(__file__).resolve().parents[1] / "examples/mukca/panda_1_front.yaml")
    report_solve("socket panda", problem, target_seconds=0.1)
