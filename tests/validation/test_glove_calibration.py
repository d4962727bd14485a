"""Data-glove calibration of a simulated operator (issue 7, the glove seed's protocol): 60
calibration poses, 200 held-out test poses, 0.5 mm vision noise per coordinate.

The seed's iterated SVD least squares with Schroer scaling (the problem's `solver.method:
scaled_svd`) and the core's MAP solver (no priors: the same objective) must reach the same
optimum; the calibrated hand must predict the held-out fingertips as the seed reports (every
error < 5 mm) and to the noise (mean < 1 mm: 3D noise alone has mean 0.5 mm * sqrt(8/pi) = 0.80 mm).
"""

from __future__ import annotations

import numpy as np
import pytest

from robocal.calibration import calibrate, solver_options
from robocal.measurements.base import measurement_errors
from robocal.problem import load_problem
from robocal.simulation.glove import VISION_NOISE, simulate_glove
from robocal.simulation.sampling import batch_link_poses
from robocal.solver import solve


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    sim = simulate_glove(tmp_path_factory.mktemp("glove"), seed=0)
    problem = load_problem(sim.problem)
    cal = calibrate(problem)
    truth = np.array([sim.truth[name] for name in problem.layout.names])
    return sim, problem, cal, truth


def test_svd_and_map_reach_the_same_optimum(fitted):
    _, problem, cal, _ = fitted
    assert problem.config.solver.method == "scaled_svd" and cal.solution.converged
    map_fit = solve(problem.map_problem, problem.theta0, **solver_options(problem))
    assert map_fit.converged
    assert np.max(np.abs(cal.estimate - map_fit.theta) / cal.solution.std) < 1e-6
    assert cal.solution.cost == pytest.approx(map_fit.cost, rel=1e-9)


def test_scaled_condition_number_below_100_for_every_finger(fitted):
    _, problem, cal, _ = fitted
    assert cal.identifiability.rank == len(problem.layout)
    kappa = {m.name: cal.conditioning[m.name] for m in problem.measurements}
    assert all(k is not None and k < 100 for k in kappa.values()), kappa


def test_estimate_agrees_with_the_operator_within_its_uncertainty(fitted):
    _, _, cal, truth = fitted
    z = np.abs(cal.estimate - truth) / cal.solution.std
    # 65 parameters: the largest of 65 standard normals exceeds 4 with probability 0.4 %.
    assert z.max() < 4.0


def test_held_out_fingertips(fitted):
    sim, problem, cal, truth = fitted
    measured, exact = [], []
    for m in problem.measurements:
        data = m.load(sim.folder / "test.csv")[0]
        measured.append(measurement_errors(m, data, cal.estimate)[:, 0])
        link = m.config.link
        predicted = batch_link_poses(problem.robot, cal.estimate, data.q, (link,))[:, 0, :3, 3]
        exact.append(np.linalg.norm(predicted - batch_link_poses(problem.robot, truth, data.q, (link,))[:, 0, :3, 3], axis=1))
    measured, exact = np.concatenate(measured), np.concatenate(exact)
    assert len(measured) == 5 * 200
    assert measured.max() < 0.005 and measured.mean() < 0.001
    # Against the noise-free fingertips: the estimate's own error, well under one coordinate's noise.
    assert np.sqrt(np.mean(exact**2)) < VISION_NOISE


def test_result_folder_reproduces_the_calibrated_hand(fitted, tmp_path):
    """What an application loads (calibrated.urdf + calibrated_sensors.yaml) gives the calibrated
    fingertips from raw readings alone."""
    from robocal.kinematics.model import RobotModel
    from robocal.kinematics.sensors import JointSensors
    from robocal.kinematics.urdf import load_urdf
    from robocal.results import write_results

    sim, problem, cal, _ = fitted
    write_results(cal, tmp_path)
    tree = load_urdf(tmp_path / "calibrated.urdf")
    deployed = RobotModel(tree, sensors=JointSensors.load(tmp_path / "calibrated_sensors.yaml", tree.actuated))
    raw = sim.test.values[:, : len(problem.robot.inputs)]
    tips = problem.tree.end_effectors
    expected = batch_link_poses(problem.robot, cal.estimate, raw, tips)[..., :3, 3]
    assert np.max(np.abs(batch_link_poses(deployed, deployed.nominal, raw, tips)[..., :3, 3] - expected)) < 1e-9
