"""The default human hand -> DLR-Hand II mapping file and the joint and fingertip mappings.

The reference frames of the fingertip mapping are checked by what they were chosen for: at the
zero pose of both hands, every mapped human joint moves the scaled human fingertip in the
direction its robot joint moves the robot fingertip, and the straight human finger points
where the straight robot finger does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from robocal.errors import InputError, RobocalError
from robocal.kinematics import transforms as tf
from robocal.teleop import HandMapping, default_mapping_path, load_mapping


@pytest.fixture(scope="module")
def mapping():
    return HandMapping.load()


def _tip_in(model, q, tip, reference, xyz):
    """Fingertip in a reference frame (link moved by xyz), by the model's own FK."""
    poses = model.link_poses(model.nominal, q, [reference, tip])
    return poses[0][:3, :3].T @ (poses[1][:3, 3] - poses[0][:3, 3]) - xyz


def test_the_references_align_zero_pose_and_every_mapped_joint(mapping):
    """In the palm frame, from the targets (whose formula the next test checks) and the robot
    fingertips (`TipChains`, checked against the model's FK in test_reach.py)."""
    config = mapping.config
    hq, rq = jnp.zeros(len(config.human.actuated)), jnp.zeros(len(config.robot.actuated))

    def robot(q):
        return mapping.reach.chains.points(mapping.reach.chains.gather(q))

    origins = np.asarray(mapping.robot_model.link_poses(mapping.robot_model.nominal, rq, [f.robot_reference for f in config.fingers]))[:, :3, 3]

    def unit(v):
        return np.asarray(v) / np.linalg.norm(v, axis=0)

    # The straight fingers point the same way (1e-12: exact rotations, round-off only).
    np.testing.assert_allclose(unit((jax.jit(mapping.targets)(hq) - origins).T), unit((jax.jit(robot)(rq) - origins).T), atol=1e-12)
    jh, jr = np.asarray(jax.jit(jax.jacfwd(mapping.targets))(hq)), np.asarray(jax.jit(jax.jacfwd(robot))(rq))
    for i, f in enumerate(config.fingers):
        for joint, source, scale in zip(f.joints, f.sources, f.scales):
            vh = jh[i, :, config.human.actuated.index(source)]
            vr = scale * jr[i, :, config.robot.actuated.index(joint)]
            np.testing.assert_allclose(unit(vh), unit(vr), atol=1e-12, err_msg=f"{joint} <- {source}")


def test_fingertip_targets_are_the_scaled_human_tips_in_the_robot_references(mapping):
    """Recomputed from the file's numbers and the models' FK, independently of the compiled path."""
    config = mapping.config
    raw = yaml.safe_load(default_mapping_path().read_text())
    rng = np.random.default_rng(3)
    lo, hi = (np.array([config.human.joint(n).limits[i] for n in config.human.actuated]) for i in (0, 1))
    q = rng.uniform(lo, hi)
    targets = np.asarray(jax.jit(mapping.targets)(q))
    for f, target in zip(config.fingers, targets):
        spec = raw["fingers"][f.name]["reference"]
        rpy = [eval(str(v), {"pi": np.pi}) for v in spec["rpy"]]
        local = _tip_in(mapping.human_model, q, f.human_tip, spec["human"]["link"], np.array(spec["human"].get("xyz", [0, 0, 0]), dtype=float))
        base = mapping.robot_model.link_poses(mapping.robot_model.nominal, jnp.zeros(12), [spec["robot"]["link"]])[0]
        expected = base[:3, :3] @ (raw["scale"] * tf.rpy_to_matrix(jnp.array(rpy)) @ local) + base[:3, 3]
        np.testing.assert_allclose(target, expected, atol=1e-12)


def test_joint_mapping_of_a_known_pose_and_clamping(mapping):
    human = dict.fromkeys(mapping.config.human.actuated, 0.0)
    human.update(index_abd=0.2, index_mcp=0.5, index_pip=0.7, thumb_T1=0.3, thumb_T2=0.4, thumb_T3=0.6, ring_abd=-0.1, little_mcp=1.0)
    q = dict(zip(mapping.config.robot.actuated, mapping.joint_map(human)))
    expected = dict(
        thumb_q1=0.3,
        thumb_q2=0.4,
        thumb_q3=0.6,
        fore_q1=-0.2,
        fore_q2=0.5,
        fore_q3=0.7,
        middle_q1=0.0,
        middle_q2=0.0,
        middle_q3=0.0,
        ring_q1=0.1,
        ring_q2=0.0,
        ring_q3=0.0,
    )
    assert q == pytest.approx(expected, abs=1e-15)
    # Beyond the robot's limits (q1 +-30 deg, q2 -20..86 deg, q3 -8..96 deg): clamped to them.
    human.update(index_abd=-0.8, index_mcp=-0.5, index_pip=1.9, middle_abd=0.9, middle_mcp=2.0, middle_pip=-0.3)
    q = dict(zip(mapping.config.robot.actuated, mapping.joint_map(human)))
    deg = np.pi / 180
    assert (q["fore_q1"], q["fore_q2"], q["fore_q3"]) == pytest.approx((30 * deg, -20 * deg, 96 * deg), abs=1e-15)
    assert (q["middle_q1"], q["middle_q2"], q["middle_q3"]) == pytest.approx((-30 * deg, 86 * deg, -8 * deg), abs=1e-15)


def test_fingertip_mapping_reaches_reachable_scaled_tips(mapping):
    """A human pose whose scaled tips the robot can reach: the robot tips are the targets."""
    human = dict.fromkeys(mapping.config.human.actuated, 0.0)
    human.update(
        thumb_T1=0.5,
        thumb_T2=0.6,
        thumb_T3=0.6,
        index_mcp=0.8,
        index_pip=0.9,
        index_dip=0.6,
        middle_mcp=0.4,
        middle_pip=0.5,
        ring_abd=0.1,
        ring_mcp=0.6,
        ring_pip=0.8,
    )
    result = mapping.fingertip_map(human)
    assert result.reached.all()
    np.testing.assert_allclose(result.tips, result.targets, atol=1e-9)
    tips = mapping.robot_model.link_poses(mapping.robot_model.nominal, result.q, [f.robot_tip for f in mapping.config.fingers])[:, :3, 3]
    np.testing.assert_allclose(np.asarray(tips), result.tips, atol=1e-12)
    assert (result.q >= mapping.lower).all() and (result.q <= mapping.upper).all()


def test_bad_human_values_are_refused(mapping):
    with pytest.raises(RobocalError, match="missing thumb_T0"):
        mapping.joint_map({"index_abd": 0.0})
    values = np.zeros(len(mapping.config.human.actuated))
    values[6] = np.nan
    with pytest.raises(RobocalError, match="not finite at index_mcp"):
        mapping.fingertip_map(values)


@pytest.mark.parametrize(
    "edit, field, message",
    [
        (lambda d: d["fingers"]["fore"]["joints"]["fore_q2"].update(human="index_mpc"), "fingers.fore.joints.fore_q2.human", "not an actuated joint"),
        (lambda d: d["fingers"]["fore"]["joints"].pop("fore_q3"), "fingers.fore.joints", "exactly the actuated joints"),
        (
            lambda d: d["fingers"]["ring"]["reference"]["robot"].update(link="ring_link2"),
            "fingers.ring.reference.robot.link",
            "moves with the robot hand's joints",
        ),
        (lambda d: d["fingers"]["thumb"].update(human_tip="thumb_tp"), "fingers.thumb.human_tip", "no link 'thumb_tp'"),
        (lambda d: d["fingers"]["middle"]["reference"].update(rpy=[0, 0]), "fingers.middle.reference.rpy[2]", "Field required"),
        (lambda d: d.update(scael=1.5), "scael", "unknown key"),
    ],
)
def test_mapping_file_errors_name_the_file_and_field(tmp_path, edit, field, message):
    data = yaml.safe_load(default_mapping_path().read_text())
    models = default_mapping_path().parent
    data["robot"], data["human"] = str(models / data["robot"]), str(models / data["human"])
    data["contact"]["geometry"] = str(models / data["contact"]["geometry"])
    edit(data)
    path = tmp_path / "mapping.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=message) as info:
        load_mapping(path)
    assert info.value.path == path and info.value.field == field
