"""The data-glove seed's protocol on a simulated operator: the seed's scaled-SVD least squares
beside the MAP solver on the same data, and the held-out fingertip errors, as Markdown for
docs/validation.md.

Run from the repository root:  .venv/bin/python examples/glove/validate.py [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from robocal.calibration import Calibration, calibrate
from robocal.measurements.base import measurement_errors
from robocal.problem import Problem, load_problem
from robocal.problem.schema import SolverConfig
from robocal.simulation.glove import simulate_glove
from robocal.simulation.sampling import batch_link_poses


def held_out(problem: Problem, cal: Calibration, test: Path, truth: np.ndarray) -> dict[str, tuple[float, float, float]]:
    """Per finger: (max, mean) error against the measured test fingertips, rms against the true ones (m)."""
    out = {}
    for m in problem.measurements:
        data = m.load(test)[0]
        measured = measurement_errors(m, data, cal.estimate)[:, 0]
        poses = [batch_link_poses(problem.robot, theta, data.q, (m.config.link,))[:, 0, :3, 3] for theta in (cal.estimate, truth)]
        out[m.name] = (measured.max(), measured.mean(), np.sqrt(np.mean(np.sum((poses[0] - poses[1]) ** 2, axis=1))))
    return out


def main(seed: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        sim = simulate_glove(folder, seed=seed)
        problem = load_problem(sim.problem)
        truth = np.array([sim.truth[name] for name in problem.layout.names])
        svd = calibrate(problem)
        map_ = calibrate(Problem(problem.config.model_copy(update={"solver": SolverConfig(method="map")}), sim.problem))
        errors = held_out(problem, svd, sim.folder / "test.csv", truth)
    print(f"Simulated operator, seed {seed}: 60 calibration and 200 test poses, vision noise 0.5 mm per coordinate, {len(truth)} parameters.\n")
    print("| finger | scaled condition number | test error max (mm) | test error mean (mm) | rms vs true fingertip (mm) |")
    print("|---|---|---|---|---|")
    for name, (worst, mean, exact) in errors.items():
        print(f"| {name} | {svd.conditioning[name]:.1f} | {worst * 1e3:.2f} | {mean * 1e3:.3f} | {exact * 1e3:.3f} |")
    z = np.abs(svd.estimate - map_.estimate) / svd.solution.std
    print("\n| solver | iterations | cost | seconds (warm) |")
    print("|---|---|---|---|")
    for label, cal in (("scaled SVD (seed)", svd), ("MAP (Levenberg-Marquardt)", map_)):
        print(f"| {label} | {cal.solution.iterations} | {cal.solution.cost:.6f} | {cal.solution.seconds:.3f} |")
    print(
        f"\nLargest difference between the two estimates: {z.max():.1e} std; largest distance of the estimate from the truth: {(np.abs(svd.estimate - truth) / svd.solution.std).max():.2f} std."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args().seed)
