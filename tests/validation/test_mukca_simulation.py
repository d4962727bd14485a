"""Sphere-in-socket calibration (MUKCa) end to end on a simulated Panda with a known truth.

`robocal simulate sockets` protocol: the origins of panda_joint1..7 and ball_joint perturbed by
up to +-1 mm / +-0.5 deg, 4 plate placements x 2 sockets x 30 configurations, joint noise 0.1
mrad (seed 0). The smallest protocol that passes is ONE training placement: front.yaml as
written (60 rows, 48 xyzrpy parameters of which 26 are identifiable) calibrates the robot so
that every held-out placement scores at its joint-noise floor, the MAE of the TRUE robot at the
same recorded joints (measured, seed 0: held-out MAE / floor 1.01 left, 1.01 right, 1.00 high;
nominal MAE 5.0-6.4 mm, floors 0.087-0.098 mm; seeds 0-4: at most 1.24).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robocal.calibration import calibrate
from robocal.measurements.socket import socket_mae
from robocal.problem import load_problem
from robocal.simulation.sampling import sample_configurations
from robocal.simulation.sockets import simulate_sockets
from tests.conftest import REPO

PANDA = REPO / "examples/mukca/data/urdf/panda.urdf"
TRAINING = "front"
pytestmark = pytest.mark.slow  # about a minute on 2 busy cores: compiling the simulator and the MAP solver


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return simulate_sockets(PANDA, tmp_path_factory.mktemp("mukca_sim"), n_per_socket=30, translation=1e-3, rotation=np.deg2rad(0.5), joint_noise=1e-4, seed=0)


@pytest.fixture(scope="module")
def calibrated(sim):
    """(calibrated robot parameters, their posterior covariance) from the training placement, in
    the parameterization of the simulator's TRUE model (checked name by name)."""
    problem = load_problem(sim.problems[TRAINING])
    cal = calibrate(problem)
    assert cal.solution.converged
    block = problem.layout.blocks["robot"]
    assert [p.name for p in problem.robot.parameters] == [p.name for p in sim.truth.parameters]
    return np.asarray(cal.estimate[block]), np.asarray(cal.solution.covariance)[block][:, block]


@pytest.fixture(scope="module")
def ball_centers(sim):
    """(theta, configurations (n, k)) -> (n, 3) ball centers of the robot with parameters theta."""
    centers = jax.jit(jax.vmap(sim.chain.center, in_axes=(None, 0)))
    return lambda theta, qc: np.asarray(centers(jnp.asarray(theta), jnp.asarray(qc)))


@pytest.mark.parametrize("placement", ["left", "right", "high"])
def test_held_out_placement_at_the_noise_floor(sim, calibrated, ball_centers, placement):
    theta, _ = calibrated
    recorded = sim.recorded[placement]
    socket = jnp.asarray(np.repeat(np.arange(len(recorded)), [len(q) for q in recorded]))
    mae = float(socket_mae(jnp.asarray(ball_centers(theta, np.concatenate(recorded))), socket, len(recorded)))
    entry = sim.truth_json["placements"][placement]
    assert mae <= 2 * entry["noise_floor_mae"], (mae, entry)
    assert entry["nominal_mae"] > 20 * entry["noise_floor_mae"]  # the test is not passed by the nominal robot


def rigid_complement(points: np.ndarray) -> np.ndarray:
    """Projector (3m, 3m) onto displacements of the m points that no rigid motion makes: the part
    of a model error that sockets can see (they fix neither where the robot stands nor how it is
    turned; the known socket distance fixes the scale). To first order, this is the error left
    after the best rigid alignment."""
    arm = points - points.mean(axis=0)
    rigid = np.concatenate([np.tile(np.eye(3), (len(points), 1)), np.stack([np.cross(e, arm).ravel() for e in np.eye(3)], axis=1)], axis=1)
    basis, _ = np.linalg.qr(rigid)
    return np.eye(basis.shape[0]) - basis @ basis.T


def test_calibrated_ball_matches_the_true_ball_up_to_a_rigid_motion(sim, calibrated, ball_centers):
    """Over 300 configurations uniform within the joint limits (the whole workspace, far beyond
    the training placement), the calibrated ball centers minus the TRUE ones, rigid motion
    removed, have an RMS within 3 times what the posterior covariance predicts for that error
    (sqrt(trace(P J C J^T P) / m), P the rigid complement, J the ball's Jacobian in the robot
    parameters); measured 0.11 mm against 0.33 mm predicted, from 7.6 mm for the nominal robot."""
    theta, covariance = calibrated
    qc = sample_configurations(sim.truth.tree, 300, seed=1)[:, list(sim.chain.columns)]
    truth = ball_centers(sim.theta_true, qc)
    project = rigid_complement(truth)

    def aligned_rms(model_theta) -> float:
        return float(np.sqrt(np.sum((project @ (ball_centers(model_theta, qc) - truth).ravel()) ** 2) / len(qc)))

    jac = np.asarray(jax.vmap(jax.jacfwd(sim.chain.center), in_axes=(None, 0))(jnp.asarray(theta), jnp.asarray(qc))).reshape(-1, len(theta))
    projected = project @ jac
    predicted = np.sqrt(np.trace(projected @ covariance @ projected.T) / len(qc))
    assert aligned_rms(theta) < 3 * predicted, (aligned_rms(theta), predicted)
    assert aligned_rms(theta) < 0.1 * aligned_rms(sim.truth.nominal)
