"""Warm MAP solve of the DLR-Hand II contact calibration: 300 contacts x 64 DH parameters
(target: under 0.5 s on a 2-core machine). Compile time is reported separately.

Run from the repository root:  .venv/bin/python benchmarks/solve_contact.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from robocal.problem import load_problem
from robocal.simulation.contact import simulate_dlr_hand
from timing import report_solve

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        problem = load_problem(simulate_dlr_hand(Path(folder), n_per_pair=50, seed=0).problem)
    report_solve("contact full DH", problem, target_seconds=0.5)
