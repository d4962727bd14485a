"""Parameters held at nominal that the measurements see are absorbed by the fitted ones, and the
predicted task error must count that (robocal.analysis.task_uncertainty, `robot_uncertainty`).

A six-joint arm (examples/fleet/arm_6r.urdf) with `full` origins, a marker body on link5 seen in
the root frame, and the six parameters of the `elbow` origin held at nominal: the markers see
them, and the neighbouring origins can take up part of their effect. Linearized, the MAP
estimate's error is G dh for a true deviation dh of the held parameters, G = C J_f^T J_h, and
robot_uncertainty's covariance between the fitted and the held parameters is -G Sigma_h. The
independent reference: the solver itself, on noise-free data of true arms that differ from the
nominal one by a step of one held parameter (a tenth of its prior sigma), its estimate's change
per unit step (central differences: second order in the step). They agree to 4e-8 relative here;
the test asks 1e-5, which leaves room for the solver's termination (a few 1e-10 in theta over a
2e-4 difference) and fails where the response is missing (the held priors counted apart: 100 %).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import yaml

from robocal.analysis.task_uncertainty import robot_uncertainty
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.problem.build import jnp_tree
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.sampling import sample_configurations
from robocal.solver.map import fit, laplace
from tests.conftest import REPO

ARM = REPO / "examples" / "fleet" / "arm_6r.urdf"
BODY = MarkerBody("body", "link5", np.array([[0.06, 0.0, 0.0], [0.0, 0.06, 0.0], [0.0, 0.0, 0.06]]))
POSTURES, SIGMA, STEP = 20, 1e-4, 1e-4


def test_the_fitted_parameters_response_to_a_held_one_is_the_solvers(tmp_path):
    tree = load_robot(ARM)
    nominal = RobotModel(tree)
    q = sample_configurations(tree, POSTURES, seed=4)
    simulate_markers(tmp_path / "markers.csv", nominal, nominal.nominal, q, [BODY])
    config = {
        "robot": str(ARM),
        "parameters": {"default": "full", "fixed": ["elbow.*"]},
        "priors": {"translation": 0.001, "rotation": 0.001, "joint_offset": 0.002},
        "measurements": [{"name": "body", "type": "markers", "data": "markers.csv", "sigma": SIGMA, "link": BODY.link, "points": BODY.points()}],
    }
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    problem = load_problem(tmp_path / "problem.yaml")
    whole = problem.unheld
    names = [p.name for p in whole.robot.parameters]
    held = [names.index(f"elbow.{c}") for c in ("dx", "dy", "dz", "rx", "ry", "rz")]

    def estimate(theta_true: np.ndarray) -> np.ndarray:
        simulate_markers(tmp_path / "markers.csv", whole.robot, theta_true, q, [BODY])
        data = [jnp_tree(m.load(tmp_path / "markers.csv")[0]) for m in problem.measurements]
        return fit(dataclasses.replace(problem.map_problem, data=data), problem.theta0, tolerance=1e-14)

    solver = np.zeros((len(problem.theta0), len(held)))
    for k, h in enumerate(held):
        step = np.zeros(len(names))
        step[h] = STEP
        solver[:, k] = (estimate(whole.robot.nominal + step) - estimate(whole.robot.nominal - step)) / (2 * STEP)
    covariance, _ = laplace(problem.map_problem, problem.theta0, [np.ones(POSTURES)])  # data at the nominal arm: the estimate is theta0
    known = robot_uncertainty(problem, problem.theta0, covariance)
    assert known.held == tuple(names[h] for h in held)
    fitted = [names.index(n) for n in problem.layout.names]
    variance = np.diag(known.covariance)[held]
    response = -known.covariance[np.ix_(fitted, held)] / variance  # G, from the covariance's cross block
    assert np.abs(solver).max() > 0.1  # the fit does absorb the held origin
    assert np.abs(response - solver).max() < 1e-5 * np.abs(solver).max()
    # the fitted block adds G Sigma_h G^T to the posterior
    added = known.covariance[np.ix_(fitted, fitted)] - covariance
    assert np.allclose(added, (solver * variance) @ solver.T, rtol=1e-3, atol=1e-6 * np.abs(added).max())
