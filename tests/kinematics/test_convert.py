"""URDF <-> DH conversion (robocal.kinematics.convert): every link keeps its pose.

Tolerance: 1e-10 m for positions and 1e-10 for rotation-matrix entries (the issue's acceptance).
The conversion is exact up to float64 rounding (about 1e-15 on these models), so the bound has
five orders of margin, while any approximated row, dropped offset or wrong sign moves some link
by 1e-4 or more on these arms. The references are independent of the converter: Pinocchio on
the URDF files, robocal's JAX forward kinematics (RobotModel) of the source model, the published
UR5e DH table evaluated by a product written out here, and the packaged DLR-Hand II table.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from robocal.kinematics.convert import dh_text, tree_to_dh, urdf_tree
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.kinematics.urdf import load_urdf, write_urdf
from tests.conftest import REPO

pin = pytest.importorskip("pinocchio")

TOL = 1e-10
PI = np.pi

# UR5e, Universal Robots' published DH parameters (standard convention; "DH parameters for
# calculations of kinematics and dynamics", universal-robots.com): d, a, alpha per joint.
UR5E_D = (0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996)
UR5E_A = (0.0, -0.425, -0.3922, 0.0, 0.0, 0.0)
UR5E_ALPHA = (PI / 2, 0.0, 0.0, PI / 2, -PI / 2, 0.0)

# A UR5e URDF in the layout of ros-industrial's ur_description (base_link, base_link_inertia
# turned by pi, the wrist origins with rpy, flange and tool0), written here from the table above.
UR5E_URDF = f"""<?xml version="1.0"?>
<robot name="ur5e">
  <link name="base_link"/><link name="base_link_inertia"/><link name="shoulder_link"/><link name="upper_arm_link"/>
  <link name="forearm_link"/><link name="wrist_1_link"/><link name="wrist_2_link"/><link name="wrist_3_link"/>
  <link name="base"/><link name="flange"/><link name="tool0"/>
  <joint name="base_link-base_link_inertia" type="fixed">
    <parent link="base_link"/><child link="base_link_inertia"/><origin xyz="0 0 0" rpy="0 0 {PI!r}"/>
  </joint>
  <joint name="shoulder_pan_joint" type="revolute">
    <parent link="base_link_inertia"/><child link="shoulder_link"/><origin xyz="0 0 0.1625" rpy="0 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-6.283" upper="6.283" effort="150" velocity="3.14"/>
  </joint>
  <joint name="shoulder_lift_joint" type="revolute">
    <parent link="shoulder_link"/><child link="upper_arm_link"/><origin xyz="0 0 0" rpy="{PI / 2!r} 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-6.283" upper="6.283" effort="150" velocity="3.14"/>
  </joint>
  <joint name="elbow_joint" type="revolute">
    <parent link="upper_arm_link"/><child link="forearm_link"/><origin xyz="-0.425 0 0" rpy="0 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3.14" upper="3.14" effort="150" velocity="3.14"/>
  </joint>
  <joint name="wrist_1_joint" type="revolute">
    <parent link="forearm_link"/><child link="wrist_1_link"/><origin xyz="-0.3922 0 0.1333" rpy="0 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-6.283" upper="6.283" effort="28" velocity="6.28"/>
  </joint>
  <joint name="wrist_2_joint" type="revolute">
    <parent link="wrist_1_link"/><child link="wrist_2_link"/><origin xyz="0 -0.0997 0" rpy="{PI / 2!r} 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-6.283" upper="6.283" effort="28" velocity="6.28"/>
  </joint>
  <joint name="wrist_3_joint" type="revolute">
    <parent link="wrist_2_link"/><child link="wrist_3_link"/><origin xyz="0 0.0996 0" rpy="{PI / 2!r} {PI!r} {PI!r}"/>
    <axis xyz="0 0 1"/><limit lower="-6.283" upper="6.283" effort="28" velocity="6.28"/>
  </joint>
  <joint name="base_link-base_fixed_joint" type="fixed">
    <parent link="base_link"/><child link="base"/><origin xyz="0 0 0" rpy="0 0 {PI!r}"/>
  </joint>
  <joint name="wrist_3-flange" type="fixed">
    <parent link="wrist_3_link"/><child link="flange"/><origin xyz="0 0 0" rpy="0 {-PI / 2!r} {-PI / 2!r}"/>
  </joint>
  <joint name="flange-tool0" type="fixed">
    <parent link="flange"/><child link="tool0"/><origin xyz="0 0 0" rpy="{PI / 2!r} 0 {PI / 2!r}"/>
  </joint>
</robot>
"""


@pytest.fixture(scope="module")
def ur5e(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ur5e") / "ur5e.urdf"
    path.write_text(UR5E_URDF)
    return path


URDFS = {
    "panda": REPO / "examples/mukca/data/urdf/panda.urdf",
    "gen3lite": REPO / "examples/mukca/data/urdf/gen3lite.urdf",
    "iiwa14": REPO / "examples/mukca/data/urdf/iiwa14.urdf",
    "arm_6r": REPO / "examples/fleet/arm_6r.urdf",
}


def urdf_path(name: str, ur5e: Path) -> Path:
    return ur5e if name == "ur5e" else URDFS[name]


def configurations(tree: KinematicTree, n: int = 12, seed: int = 5) -> np.ndarray:
    """n configurations of the actuated joints, uniform in +-pi (limits play no part in FK)."""
    return np.random.default_rng(seed).uniform(-PI, PI, (n, len(tree.actuated)))


def robocal_poses(tree: KinematicTree, q: np.ndarray, links: list[str], order: tuple[str, ...]) -> np.ndarray:
    """(n, links, 4, 4) by robocal's JAX forward kinematics; q's columns in the order `order`."""
    model = RobotModel(tree)
    columns = [order.index(name) for name in model.inputs]
    return np.asarray(model.batch_link_poses(model.nominal, q[:, columns], links))


def pinocchio_poses(urdf: Path, tree: KinematicTree, q: np.ndarray, links: list[str]) -> np.ndarray:
    """(n, links, 4, 4) by Pinocchio on the URDF file (continuous joints as cos/sin)."""
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    out = np.empty((len(q), len(links), 4, 4))
    for i, row in enumerate(q):
        values = dict(zip(tree.actuated, row))
        config = pin.neutral(model)
        for jid in range(1, model.njoints):
            driver, gain, offset = tree.driver(model.names[jid])
            value, joint = gain * values[driver] + offset, model.joints[jid]
            config[joint.idx_q : joint.idx_q + joint.nq] = (np.cos(value), np.sin(value)) if joint.nq == 2 else value
        pin.framesForwardKinematics(model, data, config)
        for k, link in enumerate(links):
            out[i, k] = data.oMf[model.getFrameId(link, pin.BODY)].homogeneous
    return out


def converted(tree: KinematicTree, convention: str, folder: Path) -> KinematicTree:
    """The tree through tree_to_dh, written as text and read back by the DH reader."""
    path = folder / f"{tree.name}_{convention}.yaml"
    path.write_text(dh_text(tree_to_dh(tree, convention).table))
    return load_dh(path)


def worst(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    return float(np.abs(a[..., :3, 3] - b[..., :3, 3]).max()), float(np.abs(a[..., :3, :3] - b[..., :3, :3]).max())


@pytest.mark.parametrize("convention", ["modified", "standard"])
@pytest.mark.parametrize("name", ["panda", "gen3lite", "iiwa14", "arm_6r", "ur5e"])
def test_urdf_to_dh_keeps_every_link(name, convention, ur5e, tmp_path):
    urdf = urdf_path(name, ur5e)
    source = load_urdf(urdf)
    table = converted(source, convention, tmp_path)
    links = list(source.links)
    assert set(links) <= set(table.links)  # every URDF link keeps its name
    q = configurations(source)
    dh = robocal_poses(table, q, links, source.actuated)
    assert max(worst(dh, robocal_poses(source, q, links, source.actuated))) < TOL
    assert max(worst(dh, pinocchio_poses(urdf, source, q, links))) < TOL


def test_ur5e_urdf_is_the_published_table(ur5e):
    """The test's UR5e URDF is UR's table: tool0 in `base` equals the DH product written out here,
    and at zero it is at the published (a2 + a3, -(d4 + d6), d1 - d5)."""
    tree = load_urdf(ur5e)
    q = np.vstack([np.zeros(6), configurations(tree)])
    poses = robocal_poses(tree, q, ["base", "tool0"], tree.actuated)
    for row, (base, tool) in zip(q, poses):
        product = np.eye(4)
        for qi, d, a, alpha in zip(row, UR5E_D, UR5E_A, UR5E_ALPHA):
            c, s, ca, sa = np.cos(qi), np.sin(qi), np.cos(alpha), np.sin(alpha)
            product = product @ np.array([[c, -s * ca, s * sa, a * c], [s, c * ca, -c * sa, a * s], [0, sa, ca, d], [0, 0, 0, 1]])
        assert max(worst(np.linalg.inv(base) @ tool, product)) < 1e-12
    zero = np.linalg.inv(poses[0, 0]) @ poses[0, 1]
    np.testing.assert_allclose(zero[:3, 3], [-0.8172, -0.2329, 0.0628], atol=1e-12)


@pytest.fixture(scope="module")
def hand() -> Path:
    with resources.as_file(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml")) as path:
        yield Path(path)


def test_dlr_hand_dh_to_urdf_to_dh(hand, tmp_path):
    """The packaged table as a URDF (checked by Pinocchio), and that URDF back as a DH table: the
    same rows, links, tips and chain bases as the packaged one, in both conventions the same FK."""
    source = load_dh(hand)
    urdf = tmp_path / "hand.urdf"
    write_urdf(urdf_tree(source), urdf)
    links = list(source.links)
    q = configurations(source)
    reference = robocal_poses(source, q, links, source.actuated)
    assert max(worst(pinocchio_poses(urdf, source, q, links), reference)) < TOL
    back = tree_to_dh(load_urdf(urdf), "modified")
    assert back.notes == () and back.fixed == ()
    original = {c["name"]: c for c in __import__("yaml").safe_load(hand.read_text())["chains"]}
    for chain in back.table["chains"]:
        rows = original[chain["name"]]["joints"]
        assert [r["name"] for r in chain["joints"]] == [r["name"] for r in rows]
        expected = load_dh(hand)
        for row in chain["joints"]:
            np.testing.assert_allclose([row[k] for k in ("d", "theta", "a", "alpha")], expected.joint(row["name"]).origin.values, atol=1e-12)
        tip = expected.joint(f"{chain['tip']['name']}_joint").origin.values
        np.testing.assert_allclose([chain["tip"][k] for k in ("d", "theta", "a", "alpha")], tip, atol=1e-12)
    for convention in ("modified", "standard"):
        table = converted(load_urdf(urdf), convention, tmp_path)
        assert max(worst(robocal_poses(table, q, links, source.actuated), reference)) < TOL


def test_dh_table_to_other_convention(hand, tmp_path):
    """A DH table converts to the other convention directly (a DH tree is a tree like any)."""
    source = load_dh(hand)
    table = converted(source, "standard", tmp_path)
    q = configurations(source)
    links = list(source.links)
    assert max(worst(robocal_poses(table, q, links, source.actuated), robocal_poses(source, q, links, source.actuated))) < TOL


def two_joint_arm(tilt: float) -> str:
    """Joint 2 parallel to joint 1 but turned by `tilt` rad about x, 0.3 m away along y."""
    return f"""<robot name="tilted"><link name="b"/><link name="l1"/><link name="l2"/><link name="tool"/>
      <joint name="j1" type="revolute"><parent link="b"/><child link="l1"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0.3 0" rpy="{tilt!r} 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="t" type="fixed"><parent link="l2"/><child link="tool"/><origin xyz="0.1 0 0.05"/></joint></robot>"""


@pytest.mark.parametrize("convention", ["modified", "standard"])
def test_nearly_parallel_axes_get_a_fixed_transform(convention, tmp_path):
    """Axes 1e-7 rad from parallel meet 3000 km away: no DH row is used, the second joint starts a
    chain of its own on the first one's DH link (a 6-DOF base), and FK stays exact. Exactly
    parallel axes are one chain."""
    for tilt, chains in ((1e-7, 2), (0.0, 1)):
        path = tmp_path / f"tilted_{tilt}.urdf"
        path.write_text(two_joint_arm(tilt))
        source = load_urdf(path)
        conversion = tree_to_dh(source, convention)
        moving = [c for c in conversion.table["chains"] if c["joints"]]
        assert len(moving) == chains
        assert bool(conversion.notes) == (chains == 2)
        if chains == 2:
            assert "'j1' and 'j2'" in conversion.notes[0] and "base" in moving[1]
            assert all(abs(v) < 1 for row in moving[0]["joints"] + moving[1]["joints"] for v in (row["d"], row["a"]))
        table = converted(source, convention, tmp_path)
        q = configurations(source)
        links = list(source.links)
        assert max(worst(robocal_poses(table, q, links, source.actuated), pinocchio_poses(path, source, q, links))) < TOL


def test_a_robot_without_joints(tmp_path):
    """One link, no joint: an empty table (`chains: []`) that reads back as that link."""
    path = tmp_path / "one.urdf"
    path.write_text('<robot name="one"><link name="only"/></robot>')
    table = converted(load_urdf(path), "modified", tmp_path)
    assert table.links == ("only",) and table.joints == ()
