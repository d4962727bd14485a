"""Two of issue 23's observations that had no test of their own: a joint glob that matches no joint
of a real URDF (the README's `joint_[1-6]` on the Panda) names every joint the robot has, and a
parameter that neither the data nor a prior constrain is written to report.json with std null
(as docs/formats.md says), not as the non-JSON `Infinity`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.problem import load_problem
from robocal.results import write_results
from tests.conftest import REPO

PANDA = REPO / "examples" / "mukca" / "data" / "urdf" / "panda.urdf"


def test_a_joint_glob_matching_nothing_lists_the_robots_joints(tmp_path: Path) -> None:
    path = tmp_path / "problem.yaml"
    path.write_text(
        f"""robot: {PANDA}
parameters: {{joints: {{"joint_[1-6]": full}}}}
measurements:
  - {{name: tip, type: markers, data: missing.csv, link: panda_link8, sigma: 0.001, points: [{{name: m, columns: [x, y, z], offset: [0, 0, 0]}}]}}
"""
    )
    with pytest.raises(InputError) as caught:
        load_problem(path)
    joints = [el.get("name") for el in etree.parse(str(PANDA)).getroot().findall("joint")]  # read apart from robocal's loader
    assert caught.value.field == "parameters.joints.joint_[1-6]"
    assert "no joint matches 'joint_[1-6]'" in caught.value.detail
    listed = caught.value.detail.split("(the robot's joints: ", 1)[1].removesuffix(")").split(", ")
    assert sorted(listed) == sorted(joints) and len(joints) == 13
    assert str(caught.value).count("no joint matches") == 1  # said once, not wrapped in a second 'field parameters' message


ARM = """<robot name="branches">
  <link name="base"/><link name="l1"/><link name="side"/>
  <joint name="j1" type="revolute">
    <origin xyz="0 0 0.1" rpy="0 0 0"/><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
  </joint>
  <joint name="side_joint" type="fixed">
    <origin xyz="0 0.2 0" rpy="0 0 0"/><parent link="base"/><child link="side"/>
  </joint>
</robot>
"""
OFFSET = np.array([0.3, 0.0, 0.05])  # the marker on l1 (known)
TRUE_J1 = 0.01  # rad, j1's offset


def test_an_unconstrained_parameter_has_std_null_in_report_json(tmp_path: Path) -> None:
    """side_joint's origin (full, no prior) moves no measured point: its six parameters have
    infinite variance; j1's offset, seen by the marker, a finite one of about sigma / (lever arm
    sqrt(n)) = 1e-4 / (0.3 sqrt(20)) = 7.5e-5 rad."""
    (tmp_path / "arm.urdf").write_text(ARM)
    q = np.linspace(-1.0, 1.0, 20)
    angle = q + TRUE_J1
    points = np.column_stack([np.cos(angle) * OFFSET[0], np.sin(angle) * OFFSET[0], np.full_like(q, 0.1 + OFFSET[2])])
    rows = "\n".join(",".join(repr(float(v)) for v in row) for row in np.column_stack([q, points]))
    (tmp_path / "data.csv").write_text("j1,x,y,z\n" + rows + "\n")
    path = tmp_path / "problem.yaml"
    path.write_text(
        f"""robot: arm.urdf
parameters: {{joints: {{j1: joint_offsets, side_joint: full}}}}
priors: {{translation: null, rotation: null, joint_offset: null}}
measurements:
  - {{name: tip, type: markers, data: data.csv, link: l1, sigma: 0.0001, points: [{{name: m, columns: [x, y, z], offset: {OFFSET.tolist()}}}]}}
"""
    )
    write_results(calibrate(load_problem(path)), tmp_path / "out", figures=False)
    text = (tmp_path / "out" / "report.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    std = {p["name"]: p["std"] for p in json.loads(text)["parameters"]}
    assert [name for name, s in std.items() if s is None] == [f"side_joint.{c}" for c in ("dx", "dy", "dz", "rx", "ry", "rz")]
    assert std["j1.offset"] == pytest.approx(1e-4 / (0.3 * np.sqrt(20)), rel=1e-6)  # |dp/d offset| is 0.3 m at every angle
