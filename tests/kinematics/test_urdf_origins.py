"""Written-back URDF origins keep the source's roll-pitch-yaw branch: a rotation has two rpy
triples, each angle is defined up to 2 pi, and at gimbal lock only roll + yaw (or yaw - roll) is
defined. `RobotModel.urdf_origins` picks the triple nearest the joint's own, so a calibrated URDF
differs from its source by what calibration changed (here: milliradians), never by a jump to an
equivalent triple (the Gen3 lite's rpy="3.1416 0 0" read back as -3.1416, or a roll of 0.3 at
pitch pi/2 written as roll 0 and yaw - 0.3)."""

from __future__ import annotations

import numpy as np
import pytest

from robocal.kinematics import transforms as tf
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf

SOURCES = {"flipped": (3.1416, 0.0, 0.0), "gimbal_lock": (0.3, np.pi / 2, 0.2), "beyond_pi": (0.0, 0.1, 3.5), "plain": (0.1, -0.2, 0.3)}
URDF = """<robot name="r"><link name="base"/>{links}{joints}</robot>"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    links = "".join(f'<link name="l{k}"/>' for k in range(len(SOURCES)))
    parents = ["base"] + [f"l{k}" for k in range(len(SOURCES) - 1)]
    joints = "".join(
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
        f'<origin rpy="{" ".join(repr(float(v)) for v in rpy)}" xyz="0 0 0.1"/><axis xyz="0 0 1"/>'
        f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
        for k, ((name, rpy), parent) in enumerate(zip(SOURCES.items(), parents))
    )
    path = tmp_path_factory.mktemp("urdf") / "r.urdf"
    path.write_text(URDF.format(links=links, joints=joints))
    return RobotModel(load_urdf(path), {name: "full" for name in SOURCES})


def test_written_rpy_stays_on_the_sources_branch(model):
    theta = model.nominal + np.random.default_rng(0).normal(0.0, 1e-3, len(model.nominal))  # milliradian changes
    origins, exact = model.urdf_origins(theta), model.calibrated_origins(theta)
    for name, source in SOURCES.items():
        xyz, rpy = origins[name]
        np.testing.assert_allclose(tf.homogeneous(tf.rpy_to_matrix(rpy), xyz), exact[name], atol=1e-12)  # the same origin
        if name == "gimbal_lock":
            # Near pitch pi/2 only yaw - roll is well defined: a milliradian rotation moves roll and
            # yaw by tenths of a radian together. Their difference and the pitch stay; no pi flip.
            assert abs((rpy[2] - rpy[0]) - (source[2] - source[0])) < 1e-2 and abs(rpy[1] - source[1]) < 1e-2
            assert np.abs(rpy - np.array(source)).max() < 1.0, (name, rpy, source)
        else:
            assert np.abs(rpy - np.array(source)).max() < 1e-2, (name, rpy, source)
    jumped = [name for name in SOURCES if np.abs(tf.matrix_to_rpy(exact[name][:3, :3]) - np.array(SOURCES[name])).max() > 0.1]
    assert set(jumped) >= {"flipped", "beyond_pi", "gimbal_lock"}  # what the plain conversion would have written


@pytest.mark.parametrize("pitch", [np.pi / 2, -np.pi / 2])
def test_exactly_at_gimbal_lock_the_sources_roll_is_kept(pitch):
    source = np.array([0.3, pitch, 0.2])
    rpy = tf.rpy_near(tf.rpy_to_matrix(source), source)
    np.testing.assert_allclose(rpy, source, atol=1e-9)
    assert abs(tf.matrix_to_rpy(tf.rpy_to_matrix(source))[0]) < 1e-12  # the plain conversion sets roll 0
