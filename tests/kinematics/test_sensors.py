"""Joint sensors (a data glove's raw readings -> joint values) inside the differentiable model."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robocal.errors import InputError
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.kinematics.sensors import JointSensors
from robocal.models import packaged
from robocal.simulation.glove import GLOVE, HAND, glove_model


@pytest.fixture(scope="module")
def model():
    return glove_model(packaged(HAND), packaged(GLOVE))


def test_joint_values_are_offset_plus_gains_times_raw(model):
    rng = np.random.default_rng(0)
    theta = model.nominal + rng.normal(0, 1e-3, len(model.nominal))
    raw = rng.uniform(0, 255, len(model.inputs))
    sensors = model.calibrated_sensors(theta)
    values = model.joint_values(theta, raw)
    expected = sensors.joint_values(raw)
    assert np.allclose([values[j] for j in model.tree.actuated], expected, atol=1e-12)
    # The twist no sensor reads is Eq. 4's third row: a linear function of the two thumb-base sensors.
    t = {n: theta[i] for i, n in enumerate(p.name for p in model.parameters)}
    s = dict(zip(model.inputs, raw))
    twist = t["thumb_twist.offset"] + t["thumb_twist.gain.thumb_roll"] * s["thumb_roll"] + t["thumb_twist.gain.thumb_abduction"] * s["thumb_abduction"]
    assert float(values["thumb_twist"]) == pytest.approx(twist, abs=1e-12)


def test_gain_column_is_offset_column_times_reading(model):
    """The seed's Eq. 9: the fingertip's sensitivity to a gain is its sensitivity to the offset of
    the same joint times the raw reading; checked on autodiff against central differences too."""
    names = [p.name for p in model.parameters]
    raw = np.random.default_rng(1).uniform(20, 200, len(model.inputs))

    def tip(theta):
        return model.link_poses(theta, jnp.asarray(raw), ("index_tip",))[0, :3, 3]

    jac = np.asarray(jax.jacfwd(tip)(jnp.asarray(model.nominal)))
    for joint, sensor in (("index_pip", "index_pip"), ("index_abd", "index_middle_abduction")):
        offset, gain = names.index(f"{joint}.offset"), names.index(f"{joint}.gain.{sensor}")
        assert np.allclose(jac[:, gain], jac[:, offset] * raw[model.inputs.index(sensor)], rtol=1e-12, atol=1e-15)
    h = 1e-7
    for i in (names.index("index_dip.offset"), names.index("index_dip.gain.index_dip"), names.index("index_tip_joint.a")):
        step = np.zeros(len(names))
        step[i] = h
        fd = (np.asarray(tip(model.nominal + step)) - np.asarray(tip(model.nominal - step))) / (2 * h)
        assert np.allclose(jac[:, i], fd, rtol=1e-6, atol=1e-9)


def test_data_columns_are_the_sensors_that_move_a_tip(model):
    assert model.inputs_for(["little_tip"]) == ("middle_ring_abduction", "little_mcp", "little_pip", "little_dip", "ring_little_abduction")  # file order
    assert model.inputs_for(["middle_tip"]) == ("middle_mcp", "middle_pip", "middle_dip")  # no abduction sensor


def test_calibrated_sensor_file_round_trips(model, tmp_path):
    theta = model.nominal + np.random.default_rng(2).normal(0, 1e-3, len(model.nominal))
    path = tmp_path / "calibrated.yaml"
    model.calibrated_sensors(theta).write(path)
    again = JointSensors.load(path, model.tree.actuated)
    raw = np.random.default_rng(3).uniform(0, 255, (5, len(model.inputs)))
    assert np.allclose(again.joint_values(raw), model.calibrated_sensors(theta).joint_values(raw), atol=1e-12)


def test_sensor_file_errors_name_the_file_and_field(tmp_path):
    tree = load_dh(packaged(HAND))
    text = packaged(GLOVE).read_text()
    cases = {
        "missing.yaml": (text.replace("  middle_abd: {offset: 0.0}\n", ""), "middle_abd"),
        "unknown.yaml": (text.replace("{index_pip: 0.0105}", "{index_pipp: 0.0105}"), "joints.index_pip.gains.index_pipp"),
        "extra.yaml": (text + "  wrist: {offset: 0.0}\n", "joints.wrist"),
    }
    for name, (content, where) in cases.items():
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(InputError) as err:
            JointSensors.load(path, tree.actuated)
        assert name in str(err.value) and where in str(err.value), str(err.value)


def test_joint_offsets_and_sensors_exclude_each_other():
    tree = load_dh(packaged(HAND))
    sensors = JointSensors.load(packaged(GLOVE), tree.actuated)
    with pytest.raises(Exception, match="sensor model's `index_mcp.offset`"):
        RobotModel(tree, {"index_mcp": "joint_offsets"}, sensors=sensors)
