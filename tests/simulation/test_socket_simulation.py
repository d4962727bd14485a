"""The sphere-in-socket (MUKCa) simulator on the Panda, checked through independent paths.

One simulation (4 default placements x 2 sockets x 30 configurations, seed 0) written by the
function behind `robocal simulate sockets` serves most tests. Independent references: the robot
read back from the written true.urdf (no parameterization, the URDF reader and `write_calibrated_urdf`)
with `batch_link_poses` and `jax.jacfwd` of its forward kinematics, the socket-folder reader, and
the joint limits of the URDF. Tolerances come from the physics: the Newton projection converges
to float rounding; the joint noise moves the ball by J dq to first order.
"""

from __future__ import annotations

import filecmp
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from robocal.cli import app
from robocal.errors import InputError, RobocalError
from robocal.io.sockets import read_socket_folder
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.simulation.sampling import batch_link_poses
from robocal.simulation.sockets import Placement, sample_socket_configurations, simulate_sockets
from tests.conftest import REPO

PANDA = REPO / "examples/mukca/data/urdf/panda.urdf"
N = 30
JOINT_NOISE = 1e-4
CONE = np.deg2rad(60.0)
NULL_SPACE = 7 - 3  # joints minus the ball's position constraints


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return simulate_sockets(PANDA, tmp_path_factory.mktemp("sockets"), n_per_socket=N, joint_noise=JOINT_NOISE, seed=0)


@pytest.fixture(scope="module")
def true_robot(sim):
    """The TRUE robot as written to true.urdf: a plain model, no calibration parameters."""
    return RobotModel(load_urdf(sim.files[1]))


def full_configurations(robot: RobotModel, joints, qc: np.ndarray) -> np.ndarray:
    """Chain configurations (socket-file columns) as the robot's full actuated vector."""
    q = np.zeros((len(qc), len(robot.tree.actuated)))
    q[:, [robot.tree.actuated.index(name) for name in joints]] = qc
    return q


def ball_poses(robot: RobotModel, joints, qc: np.ndarray) -> np.ndarray:
    return batch_link_poses(robot, robot.nominal, full_configurations(robot, joints, qc), ["ball_link"])[:, 0]


@pytest.fixture(scope="module")
def ball_jacobians(sim, true_robot):
    """qc (n, k) -> (n, 3, k) d(ball center) / d(chain joints) of the TRUE robot, by forward-mode
    autodiff of the plain model."""
    columns = np.array([true_robot.tree.actuated.index(name) for name in sim.chain.joints])

    def center(q):
        return true_robot.link_poses(true_robot.nominal, jnp.zeros(len(true_robot.tree.actuated)).at[columns].set(q), ("ball_link",))[0, :3, 3]

    return jax.jit(jax.vmap(jax.jacfwd(center)))


def test_true_robot_holds_the_ball_in_each_socket(sim, true_robot):
    """Noise-free configurations put the TRUE ball center at its socket to float rounding."""
    for name, configurations in sim.configurations.items():
        for k, qc in enumerate(configurations):
            socket = np.array(sim.truth_json["placements"][name]["sockets"][k])
            error = np.linalg.norm(ball_poses(true_robot, sim.chain.joints, qc)[:, :3, 3] - socket, axis=1)
            assert error.max() < 1e-9, (name, k, error.max())


def test_joint_limits_and_approach_cone(sim, true_robot):
    limits = np.array([load_urdf(PANDA).joint(name).limits for name in sim.chain.joints])
    for name, configurations in sim.configurations.items():
        qc = np.concatenate(configurations)
        assert (qc >= limits[:, 0]).all() and (qc <= limits[:, 1]).all(), name
        flange = ball_poses(true_robot, sim.chain.joints, qc)[:, :3, 2]  # the link's +z axis
        assert (-flange[:, 2] >= np.cos(CONE) - 1e-12).all(), name


def test_configurations_spread_over_the_self_motion_manifold(sim):
    """Per socket: 30 distinct configurations (repeated starts without the null-space walk give
    about half as many) spanning all 4 null-space dimensions by more than 0.3 rad RMS each (the
    walk's step; a sampler stuck near one configuration, or on a curve of the 4-D manifold,
    fails), and the redundancy actually used: joints 1 and 7 (the base and flange rotations,
    free about a seated ball) vary by more than 0.5 rad std, as in the MUKCa recordings
    (about 1 to 1.7 rad)."""
    for name, configurations in sim.configurations.items():
        for qc in configurations:
            gaps = np.linalg.norm(qc[:, None] - qc[None], axis=-1)
            gaps[np.diag_indices(N)] = np.inf
            assert gaps.min() > 1e-3, name
            spread = np.linalg.svd(qc - qc.mean(axis=0), compute_uv=False) / np.sqrt(N)
            assert spread[NULL_SPACE - 1] > 0.3, (name, spread)
            assert qc[:, [0, 6]].std(axis=0).min() > 0.5, (name, qc.std(axis=0))


def test_files_read_back(sim, true_robot):
    out = sim.files[0].parent
    assert filecmp.cmp(out / "nominal.urdf", PANDA, shallow=False)
    truth = json.loads((out / "truth.json").read_text())
    assert truth == json.loads(json.dumps(sim.truth_json))
    for name, recorded in sim.recorded.items():
        recording = read_socket_folder(out / "data" / name, sim.chain.joints)
        assert np.array_equal(recording.q, np.concatenate(recorded))
        assert np.array_equal(recording.socket, np.repeat([0, 1], N))
        problem = yaml.safe_load((out / f"{name}.yaml").read_text())
        assert problem["robot"] == "nominal.urdf"
        assert problem["parameters"]["joints"] == {f"panda_joint{i}": "xyzrpy" for i in range(1, 8)} | {"ball_joint": "xyzrpy"}
        (measurement,) = problem["measurements"]
        assert measurement == {
            "name": name,
            "type": "socket",
            "data": f"data/{name}",
            "link": "ball_link",
            "sigma": truth["placements"][name]["sigma"],
            "distance": 0.05,
            "distance_sigma": 2e-5,
        }
    # true.urdf is the perturbed model: same FK as the simulator's parameterized truth.
    q = full_configurations(true_robot, sim.chain.joints, np.concatenate(sim.configurations["front"]))
    expected = batch_link_poses(sim.truth, sim.theta_true, q, ["ball_link"])
    assert np.abs(batch_link_poses(true_robot, true_robot.nominal, q, ["ball_link"]) - expected).max() < 1e-12


def test_noise_floor_is_the_joint_noise_seen_through_the_jacobian(sim, ball_jacobians):
    """To first order the recorded joints move the TRUE ball by e = J dq, dq ~ N(0, s^2 I), so the
    noise floor (MAE of the TRUE robot at the recorded joints) is predicted by the mean of E|e_i|
    (Monte Carlo over dq), shrunk by sqrt(1 - 1/30) because each socket's spread is measured
    about its own mean; it must agree within 4 standard errors of a 60-row mean. The written
    sigma is the per-coordinate std, s sqrt(mean ||J||_F^2 / 3)."""
    draws = np.random.default_rng(1).normal(0.0, JOINT_NOISE, (4000, len(sim.chain.joints)))
    for name, configurations in sim.configurations.items():
        entry = sim.truth_json["placements"][name]
        jac = np.asarray(ball_jacobians(jnp.asarray(np.concatenate(configurations))))
        norms = np.linalg.norm(np.einsum("nij,dj->ndi", jac, draws), axis=-1)  # (rows, draws)
        predicted = norms.mean() * np.sqrt(1.0 - 1.0 / N)
        standard_error = np.sqrt(norms.var(axis=1).sum()) / len(jac)
        assert abs(entry["noise_floor_mae"] - predicted) < 4 * standard_error, (name, entry["noise_floor_mae"], predicted, standard_error)
        assert entry["sigma"] == pytest.approx(JOINT_NOISE * np.sqrt(np.mean(np.sum(jac**2, axis=(1, 2))) / 3), rel=1e-9)
        assert entry["nominal_mae"] > 10 * entry["noise_floor_mae"]  # +-1 mm / 0.5 deg errors: mm, not 0.1 mm


def test_deterministic_given_the_seed(sim, tmp_path):
    again = simulate_sockets(PANDA, tmp_path / "again", n_per_socket=N, joint_noise=JOINT_NOISE, seed=0)
    for first, second in zip(sim.files, again.files):
        assert first.name == second.name and filecmp.cmp(first, second, shallow=False), first
    other = simulate_sockets(PANDA, tmp_path / "other", n_per_socket=N, joint_noise=JOINT_NOISE, seed=1)
    assert not np.allclose(other.theta_true, sim.theta_true)
    assert not np.allclose(other.recorded["front"][0], sim.recorded["front"][0])


def test_narrower_cone(sim):
    center = sim.truth_json["placements"]["front"]["sockets"][0]
    cone = np.deg2rad(20.0)
    qc = sample_socket_configurations(sim.truth, sim.theta_true, "ball_link", center, N, np.random.default_rng(3), cone=cone)
    poses = np.stack([np.asarray(sim.chain.pose(jnp.asarray(sim.theta_true), jnp.asarray(q))) for q in qc])
    assert (-poses[:, 2, 2] >= np.cos(cone) - 1e-12).all()
    assert np.abs(poses[:, :3, 3] - center).max() < 1e-9


def test_unreachable_placements_say_which_and_why(sim, tmp_path):
    far = Placement("far", (2.0, 0.0, 0.02))
    with pytest.raises(
        RobocalError, match=r"placement 'far', socket 0: cannot seat 'ball_link' at \(2\.0000, 0\.0000, 0\.0200\) m: none of \d+ random starts reached it"
    ):
        simulate_sockets(PANDA, tmp_path, placements=[far], n_per_socket=N)
    overhead = Placement("overhead", (0.0, -0.025, 1.0))  # reachable only with the flange pointing up
    with pytest.raises(
        RobocalError, match=r"placement 'overhead', socket 0: .* only with the approach axis at least \d+ deg from straight down \(cone 60 deg\)"
    ):
        simulate_sockets(PANDA, tmp_path, placements=[overhead], n_per_socket=N)
    with pytest.raises(InputError, match=r"panda\.urdf: no link named 'tool0' to carry the ball"):
        simulate_sockets(PANDA, tmp_path, link="tool0")


def test_cli(tmp_path):
    result = CliRunner().invoke(app, ["simulate", "sockets", "--robot", str(PANDA), "--out", str(tmp_path), "--n-per-socket", str(N)])
    assert result.exit_code == 0, result.output
    for name in ("front", "left", "right", "high"):
        assert (tmp_path / f"{name}.yaml").is_file() and (tmp_path / "data" / name / "hole_1.csv").is_file()
        assert f"robocal calibrate {tmp_path / name}.yaml" in result.output.replace("\n", "")
    assert "noise floor (mm)" in result.output
