"""A mobile base's calibration written into its URDF (robocal.mobile.urdf): the example
examples/mobile_base/ run as its comment says (`robocal simulate base`, then `robocal calibrate`
on its problem.yaml) in a fresh folder. calibrated.urdf carries the estimates exactly, recovers
the simulated truth within the posterior std (the declared sigmas are the simulator's noise, so
4 std is a 1-in-15,000 miss per parameter), changes no other byte of base.urdf, and Pinocchio reads
back the same numbers; a problem that names the URDF's joints wrongly is refused, by field, before
any data are read."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from lxml import etree

from robocal import cli
from robocal.errors import InputError
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "mobile_base"
SENSORS = {"laser": "laser_joint", "markers": "markers_joint"}  # parameter prefix -> joint
WHEELS = {"wheel_radius_left": "wheel_left_link", "wheel_radius_right": "wheel_right_link"}
TRUTH_NAMES = {"laser": "sensor", "markers": "markers"}  # prefix -> truth.json's prefix


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, dict, dict, dict]:
    """(result folder, estimate by name, std by name, truth.json's true values)."""
    folder = tmp_path_factory.mktemp("mobile_base")
    shutil.copytree(EXAMPLE, folder / "examples" / "mobile_base")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        for args in (["simulate", "base", "--out", "out/base"], ["calibrate", "examples/mobile_base/problem.yaml", "--out", "out/base/cal"]):
            mp.setattr(sys, "argv", ["robocal", *args])
            cli.main()  # a failure exits non-zero (SystemExit), which fails the test
    result = folder / "out" / "base" / "cal"
    parameters = json.loads((result / "report.json").read_text())["parameters"]
    truth = json.loads((folder / "out" / "base" / "truth.json").read_text())["true"]
    return result, {p["name"]: p["estimate"] for p in parameters}, {p["name"]: p["std"] for p in parameters}, truth


def numbers(element, attribute: str) -> np.ndarray:
    return np.array([float(v) for v in element.get(attribute).split()])


def test_calibrated_urdf_carries_the_estimates(run) -> None:
    result, est, _, _ = run
    robot = etree.parse(str(result / "calibrated.urdf")).getroot()
    joint = {el.get("name"): el for el in robot.findall("joint")}
    for name, link in WHEELS.items():
        radii = [float(c.get("radius")) for c in robot.findall(f"link[@name='{link}']/*/geometry/cylinder")]
        assert len(radii) == 2 and np.allclose(radii, est[name], rtol=0, atol=1e-12)  # collision and visual
    left, right = (numbers(joint[f"wheel_{side}_joint"].find("origin"), "xyz") for side in ("left", "right"))
    # base.urdf's axle centre is (0, 0): the wheels move apart symmetrically, x and z kept
    assert np.allclose(left, [0, est["wheelbase"] / 2, 0.0975], rtol=0, atol=1e-12)
    assert np.allclose(right, [0, -est["wheelbase"] / 2, 0.0975], rtol=0, atol=1e-12)
    for prefix, name in SENSORS.items():
        origin = joint[name].find("origin")
        assert np.allclose(numbers(origin, "xyz")[:2], [est[f"{prefix}_x"], est[f"{prefix}_y"]], rtol=0, atol=1e-12)
        assert abs(numbers(origin, "rpy")[2] - est[f"{prefix}_yaw"]) < 1e-12
    assert numbers(joint["laser_joint"].find("origin"), "xyz")[2] == 0.3 and numbers(joint["markers_joint"].find("origin"), "xyz")[2] == 0.62


def test_calibrated_numbers_recover_the_truth(run) -> None:
    _, est, std, truth = run
    expected = {"wheel_radius_left", "wheel_radius_right", "wheelbase"} | {f"{p}_{c}" for p in SENSORS for c in ("x", "y", "yaw")}
    assert set(est) == expected
    for name in expected:
        prefix, _, coordinate = name.rpartition("_")
        true = truth[name] if name in truth else truth[f"{TRUTH_NAMES[prefix]}_{coordinate}"]
        assert abs(est[name] - true) < 4 * std[name], (name, est[name], true, std[name])
    # the simulator's documented precision (simulation/base.py, Noise): radii to 0.05 mm and the
    # wheelbase to 0.2 mm at 3 std
    assert max(std["wheel_radius_left"], std["wheel_radius_right"]) < 5e-5 / 3 and std["wheelbase"] < 2e-4 / 3


def test_nothing_else_changes(run) -> None:
    result, _, _, _ = run
    source, written = (EXAMPLE / "base.urdf").read_text().splitlines(), (result / "calibrated.urdf").read_text().splitlines()
    assert len(source) == len(written)
    changed = [i for i, (a, b) in enumerate(zip(source, written)) if a != b]
    # 4 cylinders (collision and visual of two wheels), 2 wheel origins, 2 sensor origins
    assert len(changed) == 8
    values = re.compile(r'\b(radius|xyz|rpy)="[^"]*"')
    assert [values.sub(r'\1=""', source[i]) for i in changed] == [values.sub(r'\1=""', written[i]) for i in changed]
    wheel_origins = [i for i in changed if "origin" in source[i] and "-1.5707963267948966 0 0" in source[i]]
    assert len(wheel_origins) == 2 and all('rpy="-1.5707963267948966 0 0"' in written[i] for i in wheel_origins)


def test_pinocchio_and_our_reader_load_the_calibrated_urdf(run) -> None:
    result, est, _, _ = run
    path = str(result / "calibrated.urdf")
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    for prefix, name in SENSORS.items():
        placement = data.oMf[model.getFrameId(name.replace("joint", "link"))]
        heading = np.arctan2(placement.rotation[1, 0], placement.rotation[0, 0])
        assert np.allclose(placement.translation[:2], [est[f"{prefix}_x"], est[f"{prefix}_y"]], rtol=0, atol=1e-12)
        assert abs(heading - est[f"{prefix}_yaw"]) < 1e-12
    lateral = [model.jointPlacements[model.getJointId(f"wheel_{side}_joint")].translation[1] for side in ("left", "right")]
    assert abs(lateral[0] - lateral[1] - est["wheelbase"]) < 1e-12
    geometry = pin.buildGeomFromUrdf(model, path, pin.GeometryType.COLLISION)
    radius = {o.name.removesuffix("_0"): o.geometry.radius for o in geometry.geometryObjects if o.name.startswith("wheel")}
    assert radius == pytest.approx({link: est[name] for name, link in WHEELS.items()}, abs=1e-12)
    tree = load_urdf(path)
    assert tree.joint("laser_joint").origin.values[0] == pytest.approx(est["laser_x"], abs=1e-12)


def problem(tmp_path: Path, drive: str = "wheels: [wheel_left_joint, wheel_right_joint]", sensor: str = "joint: laser_joint", extra: str = "") -> Path:
    """A problem on the example's base.urdf whose data file does not exist: a refusal below comes
    before any data are read."""
    path = tmp_path / "problem.yaml"
    path.write_text(
        f"""robot: {EXAMPLE / "base.urdf"}
drive: {{wheel_radius_left: 0.0975, wheel_radius_right: 0.0975, wheelbase: 0.43, {drive}}}
{extra}
measurements:
  - {{type: odometry, name: laser, data: missing.csv, sigma: 0.0003, sigma_yaw: 0.0005, sensor: {{name: laser, {sensor}}}}}
"""
    )
    return path


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        ({"drive": "wheels: [wheel_right_joint, wheel_left_joint]"}, "drive.wheels", "is not left of the right one"),
        ({"drive": "wheels: [wheel_joint, wheel_right_joint]"}, "drive.wheels[0]", "'wheel_joint' is not a joint of base.urdf"),
        ({"drive": "wheels: [caster_joint, wheel_right_joint]"}, "drive.wheels[0]", "joint 'caster_joint' is fixed; it must be revolute or continuous"),
        ({"sensor": "joint: wheel_left_joint"}, "measurements[0].sensor.joint", "it must be fixed"),
        ({"drive": "wheels: null"}, "measurements[0].sensor.joint", "give `drive.wheels` as well"),
        ({"extra": "parameters: {joints: {laser_joint: full}}"}, "measurements[0].sensor.joint", "calibrated by `parameters` as well"),
    ],
)
def test_a_wrong_joint_is_refused_by_field_before_the_data(tmp_path: Path, edit: dict, field: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        load_problem(problem(tmp_path, **edit))
    assert caught.value.field == field and message in str(caught.value), str(caught.value)


def test_a_base_without_a_urdf_is_refused(tmp_path: Path) -> None:
    path = problem(tmp_path)
    path.write_text("\n".join(line for line in path.read_text().splitlines() if not line.startswith("robot:")))
    with pytest.raises(InputError, match="no `robot:`") as caught:
        load_problem(path)
    assert caught.value.field == "drive.wheels"


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ([('rpy="-1.5707963267948966 0 0"', 'rpy="0 0 0"')], "not about its y axis"),
        ([('<origin xyz="0 0.215 0.0975"', '<origin xyz="0.01 0.215 0.0975"')], "share one axle"),
        (
            [
                ('<cylinder length="0.03" radius="0.0975"/>', '<sphere radius="0.0975"/>'),
                ('<cylinder radius="0.0975" length="0.03"/>', '<sphere radius="0.0975"/>'),
            ],
            "no <cylinder>",
        ),
    ],
)
def test_a_urdf_that_is_not_a_differential_drive_is_refused(tmp_path: Path, edits: list[tuple[str, str]], message: str) -> None:
    """Each edit changes the first match: the left wheel's joint or link."""
    text = (EXAMPLE / "base.urdf").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    (tmp_path / "base.urdf").write_text(text)
    path = problem(tmp_path)
    path.write_text(path.read_text().replace(str(EXAMPLE / "base.urdf"), "base.urdf"))
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        load_problem(path)
    assert caught.value.field in ("drive.wheels", "drive.wheels[0]")
