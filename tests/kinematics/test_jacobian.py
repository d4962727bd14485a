"""Autodiff Jacobians of link positions w.r.t. robot parameters against central finite differences,
for every parameterization, and jit + vmap against a plain Python loop."""

from importlib import resources

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import sample_configurations

STEP = 1e-6
# Central differences: truncation ~ STEP^2 |f'''| / 6 ~ 1e-13 m and rounding ~ eps |f| / STEP ~ 1e-11 m
# for positions of ~0.1-1 m, so 1e-8 leaves a wide margin while catching any wrong derivative.
TOLERANCE = 1e-8

URDF = """<?xml version="1.0"?>
<robot name="tiny">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="l4"/><link name="tool"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0.1 0.0 0.3" rpy="0.1 -0.2 0.3"/><axis xyz="0 0 1"/><limit lower="-2" upper="2"/></joint>
  <joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.0 0.2 0.0" rpy="1.2 0.0 0.0"/><axis xyz="1 1 0"/><limit lower="0" upper="0.2"/></joint>
  <joint name="j3" type="continuous"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.3 0.0 0.05" rpy="0 0.7 0"/><axis xyz="0 1 0"/></joint>
  <joint name="j4" type="revolute"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.15 0.0 0.0" rpy="0 0 0"/><axis xyz="1 0 0"/><limit lower="-1" upper="1"/>
    <mimic joint="j3" multiplier="-0.5" offset="0.1"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="l4"/><child link="tool"/>
    <origin xyz="0.05 0.02 0.1" rpy="0.3 0.2 0.1"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def hand():
    with resources.as_file(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml")) as path:
        return load_dh(path)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("urdf") / "tiny.urdf"
    path.write_text(URDF)
    return load_urdf(path)


def hand_modes(tree, mode):
    if mode == "dh":
        return {j.name: "dh" for j in tree.joints if j.origin.kind == "mdh"}
    if mode == "joint_offsets":
        return {name: mode for name in tree.actuated}
    return {j.name: mode for j in tree.joints}


def tip_positions(robot: RobotModel, links):
    """theta, q (n, n_actuated) -> positions (n, len(links), 3), jitted and vmapped over q."""
    return jax.jit(lambda theta, q: jax.vmap(lambda qi: robot.link_poses(theta, qi, links)[:, :3, 3])(q))


def check_jacobian(robot: RobotModel, links, q):
    f = tip_positions(robot, links)
    theta_true = perturb_parameters(robot, seed=1)
    for theta in (robot.nominal, theta_true):  # nominal: zero `full` errors hit the small-angle series
        autodiff = np.asarray(jax.jacfwd(f)(jnp.asarray(theta), jnp.asarray(q)))
        steps = STEP * np.eye(len(theta))
        plus = jax.vmap(lambda t: f(t, q))(jnp.asarray(theta + steps))
        minus = jax.vmap(lambda t: f(t, q))(jnp.asarray(theta - steps))
        finite = np.moveaxis(np.asarray(plus - minus) / (2 * STEP), 0, -1)
        assert np.abs(autodiff).max() > 1e-2  # the parameters do move the links
        np.testing.assert_allclose(autodiff, finite, rtol=1e-7, atol=TOLERANCE)


@pytest.mark.parametrize("mode", ["full", "dh", "joint_offsets"])
def test_hand_jacobian_matches_finite_differences(hand, mode):
    robot = RobotModel(hand, hand_modes(hand, mode))
    check_jacobian(robot, hand.end_effectors, sample_configurations(hand, 4, seed=2))


@pytest.mark.parametrize("mode", ["xyzrpy", "full", "joint_offsets"])
def test_urdf_jacobian_matches_finite_differences(tiny, mode):
    modes = {name: mode for name in tiny.actuated} if mode == "joint_offsets" else {j.name: mode for j in tiny.joints}
    robot = RobotModel(tiny, modes)
    check_jacobian(robot, ("tool", "l2"), sample_configurations(tiny, 4, seed=3))


def test_jit_vmap_matches_python_loop(hand):
    robot = RobotModel(hand, hand_modes(hand, "full"))
    theta = perturb_parameters(robot, seed=4)
    q = sample_configurations(hand, 5, seed=5)
    links = tuple(hand.links)
    batched = jax.jit(jax.vmap(lambda qi: robot.link_poses(theta, qi, links)))(jnp.asarray(q))
    looped = np.stack([np.asarray(robot.link_poses(theta, qi, links)) for qi in q])
    np.testing.assert_allclose(np.asarray(batched), looped, rtol=0, atol=1e-14)
