"""Is the predicted task error calibrated? Over 50 seeded simulated calibrations, how often the
realized mean task error falls inside the 95 % interval the prediction gives.

A six-joint arm (examples/fleet/arm_6r.urdf), every joint origin and zero in the model (`full`)
with Gaussian priors, a three-marker body on link5 seen in the robot root frame, 40 postures,
noise of the declared sigma. The task is the tool's position, which joint 6 and the tool origin
move but the markers on link5 do not see: those directions are known only to their prior, so a
prediction is calibrated only if it carries the prior uncertainty of what the data leave
undetermined. Each unit's truth is drawn from the prior (nominal + N(0, sigma) per parameter of
the whole model), the distribution the prediction assumes. Two problems:

- every parameter fitted: the posterior holds the unseen directions at their prior;
- the unseen ones held at nominal (`parameters.fixed`, as `select: identifiable` does): the
  prediction adds their prior (`robot_uncertainty`), which the posterior of the fitted
  parameters alone does not have.

A calibrated 95 % interval holds the realized figure in 95 % of units: 47.5 of 50, binomial
standard deviation 1.5. The issue's acceptance is 85-99 % (43 to 49 of 50). The interval from the
data alone (the covariance (J^T J)^+ of the measured rows), or from the fitted parameters alone
when some are held, holds almost none: the prior-held directions dominate the tool's error.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from robocal.analysis.task_error import task_errors, task_jacobians
from robocal.analysis.task_uncertainty import predicted_task_error, robot_uncertainty
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.problem.build import jnp_tree
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.sampling import sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set
from robocal.solver.map import laplace, rows_and_jacobian, solve_many
from tests.conftest import REPO

ARM = REPO / "examples" / "fleet" / "arm_6r.urdf"
UNITS, POSTURES, SIGMA = 50, 40, 1e-4
BODY = MarkerBody("body", "link5", np.array([[0.06, 0.0, 0.0], [0.0, 0.06, 0.0], [0.0, 0.0, 0.06]]))
REFERENCE, TIPS = "base", ("tool",)
UNSEEN = ["wrist_3.*", "tool_mount.*"]  # the markers on link5 do not see them; the tool does


def holds(jac: np.ndarray, covariance: np.ndarray, realized: float) -> bool:
    low, high = predicted_task_error(jac, covariance)["interval95"]
    return bool(low <= realized <= high)


def coverage(folder, fixed: list[str]) -> np.ndarray:
    """(UNITS, 3): realized mean task error (m), inside the prediction's interval, inside the
    interval of the fitted parameters' posterior (fixed) or of the data alone (nothing fixed)."""
    config = {
        "robot": str(ARM),
        "parameters": {"default": "full", "fixed": fixed},
        "priors": {"translation": 0.001, "rotation": 0.001, "joint_offset": 0.002},
        "measurements": [{"name": "body", "type": "markers", "data": "markers.csv", "sigma": SIGMA, "link": BODY.link, "points": BODY.points()}],
    }
    (folder / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    tree = load_robot(ARM)
    postures = [sample_configurations(tree, POSTURES, seed=unit) for unit in range(UNITS)]
    nominal = RobotModel(tree)
    simulate_markers(folder / "markers.csv", nominal, nominal.nominal, postures[0], [BODY])
    problem = load_problem(folder / "problem.yaml")  # loaded once: every unit has its structure, so one compiled solver
    block = problem.layout.blocks["robot"]
    # The whole model (held parameters included) with every parameter at its prior: the truth's distribution.
    whole = problem.unheld if fixed else problem
    truth, prior_sigma = whole.robot, 1.0 / np.asarray(whole.map_problem.prior_sqrt_precision)[whole.layout.blocks["robot"]]
    q_test = uniform_cartesian_test_set(problem.robot, problem.theta0[block], (REFERENCE, *TIPS), 200, seed=3)
    rng = np.random.default_rng(2026)
    out = []
    for unit, q in enumerate(postures):
        theta_true = truth.nominal + rng.normal(0.0, prior_sigma)
        simulate_markers(folder / "markers.csv", truth, theta_true, q, [BODY], sigma=SIGMA, seed=1000 + unit)
        fitted = dataclasses.replace(problem.map_problem, data=[jnp_tree(m.load(folder / "markers.csv")[0]) for m in problem.measurements])
        (theta,), (converged,) = solve_many(fitted, problem.theta0, [np.ones((1, POSTURES))])
        covariance, _ = laplace(fitted, theta, [np.ones(POSTURES)])
        assert converged
        realized = float(task_errors(problem.robot, theta[block], truth, theta_true, q_test, REFERENCE, TIPS).mean())
        known = robot_uncertainty(problem, theta, covariance, data=fitted.data)
        inside = holds(task_jacobians(known.robot, known.theta, q_test, REFERENCE, TIPS), known.covariance, realized)
        jac = task_jacobians(problem.robot, theta[block], q_test, REFERENCE, TIPS)
        if fixed:
            narrow = covariance[block, block]
        else:
            measured = rows_and_jacobian(fitted, theta)[1][:, block]
            narrow = np.linalg.pinv(measured.T @ measured)
        out.append((realized, inside, holds(jac, narrow, realized)))
    return np.array(out)


@pytest.fixture(scope="module")
def fitted_all(tmp_path_factory):
    return coverage(tmp_path_factory.mktemp("all"), [])


@pytest.fixture(scope="module")
def unseen_held(tmp_path_factory):
    return coverage(tmp_path_factory.mktemp("held"), UNSEEN)


@pytest.mark.parametrize("units", ["fitted_all", "unseen_held"])
def test_the_predicted_interval_holds_the_realized_task_error_in_85_to_99_percent(units, request):
    inside = request.getfixturevalue(units)[:, 1].astype(bool)
    assert 43 <= inside.sum() <= 49, f"{inside.sum()} of {len(inside)} inside"


@pytest.mark.parametrize("units", ["fitted_all", "unseen_held"])
def test_without_the_prior_held_directions_it_would_not(units, request):
    """The interval of the data alone, or of the fitted parameters alone, is far too narrow: the
    realized errors (millimetres: joint 6 and the tool origin at their prior) lie outside it."""
    result = request.getfixturevalue(units)
    assert result[:, 2].astype(bool).sum() <= 5
    assert 5e-4 < np.median(result[:, 0]) < 5e-3


def test_the_report_adds_the_held_parameters_prior(tmp_path):
    """calibrate's task prediction names the 12 held parameters and adds their prior: its mean
    squared error exceeds the fitted parameters' by sum_h sigma_h^2 mean |d tool / d theta_h|^2,
    here with the derivatives by central finite differences of the tool position."""
    from robocal.analysis.task_uncertainty import Task
    from robocal.calibration import calibrate
    from robocal.simulation.sampling import batch_link_poses

    tree = load_robot(ARM)
    nominal = RobotModel(tree)
    simulate_markers(tmp_path / "markers.csv", nominal, nominal.nominal, sample_configurations(tree, POSTURES, seed=0), [BODY], sigma=SIGMA, seed=1)
    config = {
        "robot": str(ARM),
        "parameters": {"default": "full", "fixed": UNSEEN},
        "priors": {"translation": 0.001, "rotation": 0.001, "joint_offset": 0.002},
        "task": {"tips": list(TIPS), "reference": REFERENCE, "n": 100, "seed": 3},
        "measurements": [{"name": "body", "type": "markers", "data": "markers.csv", "sigma": SIGMA, "link": BODY.link, "points": BODY.points()}],
    }
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    problem = load_problem(tmp_path / "problem.yaml")
    cal = calibrate(problem)
    report = cal.report()["task"]
    assert len(report["held_at_nominal"]) == 12 and all(n.startswith(("wrist_3.", "tool_mount.")) for n in report["held_at_nominal"])
    task = Task(REFERENCE, TIPS, n=100, seed=3)
    fitted_only = predicted_task_error(task.jacobians(problem, cal.estimate), cal.solution.covariance)["rms"]
    known = robot_uncertainty(problem, cal.estimate, cal.solution.covariance)
    q = uniform_cartesian_test_set(known.robot, known.theta, (REFERENCE, *TIPS), 100, 3)
    added = 0.0
    for name in report["held_at_nominal"]:
        i = [p.name for p in known.robot.parameters].index(name)
        step = np.zeros(len(known.theta))
        step[i] = 1e-6
        tool = [batch_link_poses(known.robot, known.theta + s, q, TIPS)[:, 0, :3, 3] for s in (step, -step)]
        added += known.covariance[i, i] * np.mean(np.sum(((tool[0] - tool[1]) / 2e-6) ** 2, axis=1))
    assert report["predicted"]["rms"] ** 2 == pytest.approx(fitted_only**2 + added, rel=1e-5)
    assert report["predicted"]["rms"] > 3 * fitted_only
