"""The calibration description inside a URDF (robocal.problem.description, `robocal describe`):
lossless both ways, invisible to URDF readers (robocal's own tree and Pinocchio's model are those
of the plain file), and a calibration from the URDF is the calibration from the problem file."""

from __future__ import annotations

import sys

import numpy as np
import pinocchio as pin
import pytest
import yaml

from robocal import cli
from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from robocal.problem.description import embed, extract
from tests.cli.test_bad_input import PROBLEM, URDF, synthetic_rows, write_csv

# every kind of value a problem file holds, and keys that are no XML names
AWKWARD = {
    **PROBLEM,
    "parameters": {"joints": {"j[23]": "joint_offsets", "j2": "joint_offsets"}, "default": "none"},
    "priors": {"joint_offset": None, "translation": 0.001, "rotation": 1},
    "joint_values": {"j1": -0.0},
    "solver": {"max_iterations": 50, "loss": "huber", "tolerance": 1e-10},
    "frames": {"tracker": {"initial": "auto"}, "other frame": {"initial": [1, 2.5, "3"]}},
    "task": {"tips": [], "n": 10},
}


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("described")
    (folder / "arm.urdf").write_text(URDF)
    write_csv(folder / "train.csv", synthetic_rows(folder / "arm.urdf", 12, seed=1))
    (folder / "problem.yaml").write_text(yaml.safe_dump(PROBLEM, sort_keys=False))
    return folder


def test_round_trip_is_exact(arm, tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_bytes(embed(arm / "arm.urdf", AWKWARD, {"tolerance": {"joint_offset": 0.001}, "sigmas": 3}))
    problem, criteria = extract(urdf)
    assert problem == {**AWKWARD, "robot": "arm.urdf"}
    assert criteria == {"tolerance": {"joint_offset": 0.001}, "sigmas": 3}
    assert type(problem["priors"]["rotation"]) is int and problem["frames"]["other frame"]["initial"][2] == "3"
    again = tmp_path / "again.urdf"  # describing a described URDF replaces its description
    again.write_bytes(embed(urdf, PROBLEM))
    assert extract(again) == ({**PROBLEM, "robot": "again.urdf"}, None)


def test_urdf_readers_see_the_same_robot(arm, tmp_path):
    described = tmp_path / "arm.urdf"
    described.write_bytes(embed(arm / "arm.urdf", PROBLEM))
    plain, extended = load_urdf(arm / "arm.urdf"), load_urdf(described)
    assert [repr(j) for j in plain.joints] == [repr(j) for j in extended.joints] and len(plain.joints) == 4
    models = [pin.buildModelFromXML(path.read_text()) for path in (arm / "arm.urdf", described)]
    assert models[0].nq == models[1].nq == 3 and [n for n in models[0].names] == [n for n in models[1].names]
    q = np.random.default_rng(0).uniform(-1, 1, 3)
    placements = []
    for model in models:
        data = model.createData()
        pin.forwardKinematics(model, data, q)
        placements.append(data.oMi[model.njoints - 1].homogeneous)
    np.testing.assert_array_equal(placements[0], placements[1])


def test_calibrating_the_urdf_is_calibrating_the_problem(arm, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["robocal", "describe", str(arm / "problem.yaml"), "--out", str(arm / "arm_calibration.urdf")])
    cli.main()
    from_yaml, from_urdf = calibrate(load_problem(arm / "problem.yaml")), calibrate(load_problem(arm / "arm_calibration.urdf"))
    np.testing.assert_allclose(from_urdf.estimate, from_yaml.estimate, rtol=0, atol=1e-12)
    monkeypatch.setattr(sys, "argv", ["robocal", "describe", str(arm / "arm_calibration.urdf"), "--out", str(arm / "back.yaml")])
    cli.main()
    assert yaml.safe_load((arm / "back.yaml").read_text()) == {**PROBLEM, "robot": "arm_calibration.urdf"}
    monkeypatch.setattr(sys, "argv", ["robocal", "describe", str(arm / "arm_calibration.urdf"), "--out", str(arm / "back.yaml")])
    with pytest.raises(SystemExit) as info:
        cli.main()
    assert info.value.code == 2 and "exists" in capsys.readouterr().err


@pytest.mark.parametrize(
    "body, message",
    [
        ('<robocal:problem kind="table"/>', "kind 'table'"),
        ('<robocal:problem kind="map"><robocal:solver kind="map"/><robocal:solver kind="map"/></robocal:problem>', "'solver' given twice"),
        ("<robocal:recipe/>", "expected <robocal:problem>"),
        ('<robocal:problem kind="map"><robocal:measurements kind="list"/></robocal:problem>', "measurements"),
    ],
)
def test_a_bad_description_is_a_located_error(arm, tmp_path, body, message):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(
        URDF.replace("</robot>", f'<robocal:calibration xmlns:robocal="urn:robocal:description:1" version="1">{body}</robocal:calibration>\n</robot>')
    )
    with pytest.raises(InputError, match=message) as info:
        load_problem(urdf)
    assert str(urdf) in str(info.value)


def test_criteria_are_checked_on_the_way_in_and_out(arm, tmp_path, monkeypatch, capsys):
    """describe --criteria carries only checked criteria (a wrong one names its file and field, a
    missing file is named), and criteria read back from a URDF are checked before anything is
    written."""

    def describe(*args):
        monkeypatch.setattr(sys, "argv", ["robocal", "describe", *map(str, args)])
        with pytest.raises(SystemExit) as info:
            cli.main()
        return info.value.code, capsys.readouterr().err.strip()

    (arm / "bad_criteria.yaml").write_text("sigmas: 3\nmax_rms: x\n")
    code, err = describe(arm / "problem.yaml", "--out", arm / "checked.urdf", "--criteria", arm / "bad_criteria.yaml")
    assert code == 2 and f"{arm / 'bad_criteria.yaml'}, field 'max_rms'" in err and not (arm / "checked.urdf").exists()
    code, err = describe(arm / "problem.yaml", "--out", arm / "checked.urdf", "--criteria", arm / "no_criteria.yaml")
    assert code == 2 and "no_criteria.yaml: --criteria: no such file" in err and not (arm / "checked.urdf").exists()
    urdf = arm / "carried.urdf"
    urdf.write_bytes(embed(arm / "arm.urdf", PROBLEM, {"sigmas": "many"}))
    code, err = describe(urdf, "--out", arm / "carried.yaml")
    assert code == 2 and f"{urdf}, field 'sigmas'" in err
    assert not (arm / "carried.yaml").exists() and not (arm / "criteria.yaml").exists()
