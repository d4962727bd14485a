"""Uncertainty propagation: the task error the posterior predicts against the simulated truth.

Fingertip markers with Gaussian noise of the declared sigma on perturbed DLR-Hand II units: the
posterior covariance is then the right one (up to linearization and the prior's shape), so the
task error it predicts must match the error against the true hand on average over hands."""

import dataclasses
import fnmatch
from importlib import resources

import numpy as np
import pytest
import yaml

from robocal.analysis.task_error import task_errors
from robocal.analysis.task_uncertainty import Task, predicted_task_error
from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.problem.build import jnp_tree
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set
from robocal.solver import solve

TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")
SIGMA, N_CONFIGS, HANDS = 1e-4, 40, 8


@pytest.fixture(scope="module")
def markers_problem(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uncertainty")
    (folder / "hand.yaml").write_text(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml").read_text())
    bodies = [MarkerBody(tip, tip, np.zeros((1, 3))) for tip in TIPS]
    problem = {
        "robot": "hand.yaml",
        "parameters": {"joints": {"*_q?": "dh"}},
        "priors": {"translation": 0.005, "rotation": float(np.deg2rad(5.0))},
        "task": {"reference": TIPS[0], "tips": list(TIPS[1:]), "n": 300, "seed": 7},
        "measurements": [{"name": b.name, "type": "markers", "data": "markers.csv", "sigma": SIGMA, "link": b.link, "points": b.points()} for b in bodies],
    }
    (folder / "problem.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))
    tree = load_dh(folder / "hand.yaml")
    truth = RobotModel(tree, {j.name: "dh" for j in tree.joints if fnmatch.fnmatchcase(j.name, "*_q?")})
    return folder, bodies, truth


def _simulate(folder, bodies, truth, seed):
    theta_true = perturb_parameters(truth, seed=seed, translation=0.005, rotation=float(np.deg2rad(5.0)))
    q = sample_configurations(truth.tree, N_CONFIGS, seed=seed + 100)
    simulate_markers(folder / "markers.csv", truth, theta_true, q, bodies, sigma=SIGMA, seed=seed + 200)
    return theta_true


@pytest.fixture(scope="module")
def loaded(markers_problem):
    """The problem loaded on hand 0's data, once: its solver compiles once for the calibration
    below and the hands of the next test (which swap the data; same shapes, same solver)."""
    folder, bodies, truth = markers_problem
    _simulate(folder, bodies, truth, seed=0)
    return load_problem(folder / "problem.yaml")


def test_report_carries_the_predicted_task_error(loaded):
    problem = loaded
    cal = calibrate(problem)
    task = cal.report()["task"]
    assert task["reference"] == TIPS[0] and task["tips"] == list(TIPS[1:]) and task["unit"] == "m"
    # Noise of the declared sigma and a model that can represent the hand: the mean squared
    # whitened residual is about 1 (480 residuals; fewer degrees of freedom than residuals).
    assert 0.5 < task["fit_per_residual"] < 1.5 and "warning" not in task
    # The RMS is the trace formula over the same test set (an independent path through TaskMetric).
    metric = Task(TIPS[0], TIPS[1:], n=300, seed=7).metric(problem, cal.estimate)
    assert task["predicted"]["rms"] == pytest.approx(metric.predicted_rms(cal.solution.covariance), rel=1e-9)
    # For an isotropic 3D Gaussian E|e| / RMS = sqrt(8 / (3 pi)) = 0.921; anisotropic ones lie lower.
    assert 0.6 < task["predicted"]["mean"] / task["predicted"]["rms"] < 0.95


def test_predicted_task_error_matches_the_truth_over_hands(markers_problem, loaded):
    folder, bodies, truth = markers_problem
    problem = loaded
    task = Task(TIPS[0], TIPS[1:], n=300, seed=7)
    predicted, actual = [], []
    for seed in range(HANDS):
        theta_true = _simulate(folder, bodies, truth, seed)
        data = [jnp_tree(m.load(folder / "markers.csv")[0]) for m in problem.measurements]
        solution = solve(dataclasses.replace(problem.map_problem, data=data), problem.theta0)
        q_test = uniform_cartesian_test_set(problem.robot, solution.theta, TIPS, task.n, task.seed)
        errors = task_errors(problem.robot, solution.theta, truth, theta_true, q_test, TIPS[0], TIPS[1:])
        predicted.append(predicted_task_error(task.jacobians(problem, solution.theta), solution.covariance))
        actual.append(errors)
    actual = np.array(actual)
    rms_ratio = np.sqrt((actual**2).mean()) / np.sqrt(np.mean([p["rms"] ** 2 for p in predicted]))
    mean_ratio = actual.mean() / np.mean([p["mean"] for p in predicted])
    # 8 hands, each one draw of the parameter error: about 10 % spread of the pooled ratio.
    assert 0.75 < rms_ratio < 1.3
    assert 0.75 < mean_ratio < 1.3


def test_unbounded_parameters_give_no_prediction():
    jac = np.zeros((2, 1, 3, 3))
    jac[..., 0] = 1.0
    cov = np.diag([1.0, np.inf, 1.0])
    assert predicted_task_error(jac, cov)["rms"] == pytest.approx(np.sqrt(3.0))  # parameter 1 moves nothing
    jac[..., 1] = 1.0
    assert predicted_task_error(jac, cov) == {"rms": None, "mean": None, "interval95": None}


def test_task_links_are_checked_with_their_field(markers_problem, tmp_path):
    folder, bodies, truth = markers_problem
    _simulate(folder, bodies, truth, seed=0)
    config = yaml.safe_load((folder / "problem.yaml").read_text())
    config["task"]["tips"][1] = "pinky_tip"
    bad = folder / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match=r"task\.tips\[1\].*pinky_tip|pinky_tip.*task\.tips\[1\]"):
        load_problem(bad)
