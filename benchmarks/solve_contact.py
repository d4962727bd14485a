"""Warm MAP solve of the DLR-Hand II contact calibration: 300 contacts x 64 DH parameters
(target: under 0.5 s on a 2-core machine). Compile time is reported separately.

Run from the repository root:  .venv/bin/python benchmarks/solve_contact.py
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from rich.console import Console

from robocal.demos.contact import N_PER_PAIR, _write_problem
from robocal.problem import load_problem
from robocal.solver import solve

TARGET_SECONDS = 0.5


def main() -> None:
    from robocal.demos import contact

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        contact.run_demo(out, Console(quiet=True))  # writes the simulated contacts and problem files
        problem = load_problem(_write_problem(out, "full_dh"))
        cfg = problem.config.solver
        run = lambda: solve(problem.map_problem, problem.theta0, max_iterations=cfg.max_iterations, tolerance=cfg.tolerance)
        first = run()
        warm = [run().seconds for _ in range(10)]
    median = statistics.median(warm)
    print(
        f"contacts={6 * N_PER_PAIR} parameters={len(problem.layout)} iterations={first.iterations} compile={first.compile_seconds:.2f} s "
        f"warm median={median * 1e3:.1f} ms (min {min(warm) * 1e3:.1f}) target {TARGET_SECONDS * 1e3:.0f} ms -> ratio {median / TARGET_SECONDS:.2f}"
    )


if __name__ == "__main__":
    main()
