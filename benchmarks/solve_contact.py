"""Warm MAP solve of the DLR-Hand II contact calibration: 300 contacts x 64 DH parameters
(target: under 0.5 s on a 2-core machine). Compile time is reported separately.

Run from the repository root:  .venv/bin/python benchmarks/solve_contact.py
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from robocal.problem import load_problem
from robocal.simulation.contact import simulate_dlr_hand
from robocal.solver import solve

TARGET_SECONDS = 0.5


def main(repeats: int = 10) -> None:
    with tempfile.TemporaryDirectory() as folder:
        problem = load_problem(simulate_dlr_hand(Path(folder), n_per_pair=50, seed=0).problem)
    cfg = problem.config.solver
    run = lambda: solve(problem.map_problem, problem.theta0, max_iterations=cfg.max_iterations, tolerance=cfg.tolerance)
    first = run()
    warm = [run().seconds for _ in range(repeats)]
    median = statistics.median(warm)
    print(
        f"contacts={problem.measurements[0].n} parameters={len(problem.layout)} iterations={first.iterations} converged={first.converged} "
        f"compile={first.compile_seconds:.2f} s  warm median={median * 1e3:.1f} ms (min {min(warm) * 1e3:.1f}) "
        f"target {TARGET_SECONDS * 1e3:.0f} ms -> ratio {median / TARGET_SECONDS:.2f}"
    )


if __name__ == "__main__":
    main()
