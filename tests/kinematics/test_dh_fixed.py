"""DH rows with entries known exactly (`fixed:` on a row or tip of a DH table): calibration holds
them at nominal and moves the others; `parameters.fixed` patterns in the problem file do the same.

The robot is the DLR-Hand II's fore finger (its packaged modified-DH rows, one chain) with
`fixed: [d, alpha]` on fore_q2, `fixed: true` on fore_q3 and `fixed: [theta]` on the tip. The
true finger differs from nominal in every other DH number (up to 5 mm and 5 deg); noise-free
fingertip positions of 60 postures are calibrated with the `dh` mode on every row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.kinematics import transforms as tf
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import position_errors, sample_configurations

ROWS = [
    "{name: fore_q1, d: 0, theta: 0, a: 0, alpha: 0}",
    "{name: fore_q2, d: 0, theta: 0, a: 0, alpha: pi / 2, fixed: [d, alpha]}",
    "{name: fore_q3, d: 0, theta: 0, a: 0.075, alpha: 0, fixed: true}",
    "{name: fore_q4, d: 0, theta: -pi / 2, a: 0.04, alpha: 0, mimic: {joint: fore_q3}}",
]
TIP = "{name: fore_tip, d: 0.029, theta: pi, a: 0, alpha: -pi / 2, fixed: [theta]}"
HELD = ["fore_q2.d", "fore_q2.alpha", "fore_q3.d", "fore_q3.theta", "fore_q3.a", "fore_q3.alpha", "fore_tip_joint.theta"]
PARAMETERS = {"joints": {"fore_q?": "dh", "fore_tip_joint": "dh"}}


def finger(rows=ROWS, tip=TIP, convention="modified") -> str:
    body = "\n".join(f"      - {row}" for row in rows)
    return f"name: fore\nconvention: {convention}\nroot: palm\nchains:\n  - name: fore\n    joints:\n{body}\n    tip: {tip}\n"


def strip_fixed(text: str) -> str:
    for entry in (", fixed: [d, alpha]", ", fixed: true", ", fixed: [theta]"):
        text = text.replace(entry, "")
    return text


def all_dh_names() -> list[str]:
    return [f"{j}.{c}" for j in ("fore_q1", "fore_q2", "fore_q3", "fore_q4", "fore_tip_joint") for c in ("d", "theta", "a", "alpha")]


def test_fixed_entries_are_no_parameters(tmp_path):
    path = tmp_path / "fore.yaml"
    path.write_text(finger())
    tree = load_dh(path)
    assert tree.joint("fore_q2").origin.fixed == ("d", "alpha")
    assert tree.joint("fore_q3").origin.fixed == ("d", "theta", "a", "alpha")
    model = RobotModel(tree, {j.name: "dh" for j in tree.joints if j.origin.kind == "mdh"})
    assert [p.name for p in model.parameters] == [n for n in all_dh_names() if n not in HELD]


def test_standard_convention_holds_the_next_joints_parameters(tmp_path):
    """In the standard convention row k's numbers are the origin of joint k+1 (docs/formats.md),
    so `fixed: [a]` on row 1 holds `<joint 2>.a`."""
    path = tmp_path / "standard.yaml"
    path.write_text(finger(["{name: j1, a: 0.1, fixed: [a]}", "{name: j2, a: 0.2}"], "{name: tip}", "standard"))
    tree = load_dh(path)
    model = RobotModel(tree, {"j2": "dh", "tip_joint": "dh"})
    names = [p.name for p in model.parameters]
    assert "j2.a" not in names and {"j2.d", "j2.theta", "j2.alpha", "tip_joint.a"} <= set(names)


@pytest.mark.parametrize(
    "row, tip, convention, field",
    [
        ("{name: fore_q1, fixed: [d, length]}", "{name: t}", "modified", "chains[0].joints[0].fixed[1]"),
        ("{name: fore_q1, fixed: [d, d]}", "{name: t}", "modified", "chains[0].joints[0].fixed"),
        ("{name: fore_q1, fixed: d}", "{name: t}", "modified", "chains[0].joints[0].fixed"),
        ("{name: fore_q1}", "{name: t, fixed: [d]}", "standard", None),
    ],
)
def test_bad_fixed_entries_are_located(tmp_path, row, tip, convention, field):
    path = tmp_path / "bad.yaml"
    path.write_text(finger([row], tip, convention))
    with pytest.raises(InputError) as error:
        load_dh(path)
    assert error.value.field == field
    assert field is not None or "give no tip values" in str(error.value)


@pytest.fixture(scope="module")
def calibrations(tmp_path_factory):
    """Three problems on the same data: fixed entries in the table, the same entries as
    `parameters.fixed` patterns, and both."""
    folder = tmp_path_factory.mktemp("fixed")
    (folder / "fixed.yaml").write_text(finger())
    (folder / "free.yaml").write_text(strip_fixed(finger()))
    tree = load_dh(folder / "fixed.yaml")
    truth = RobotModel(tree, {j.name: "dh" for j in tree.joints if j.origin.kind == "mdh"})
    theta_true = perturb_parameters(truth, seed=3)
    tip = MarkerBody("tip", "fore_tip", np.zeros((1, 3)))
    simulate_markers(folder / "tip.csv", truth, theta_true, sample_configurations(tree, 60, seed=1), [tip])
    measurement = {"name": "tip", "type": "markers", "data": "tip.csv", "sigma": 1e-4, "link": "fore_tip", "points": tip.points(True)}
    priors = {"translation": 0.005, "rotation": 0.09}  # the perturbation's scale: the prior settles what fingertips cannot see
    out = {}
    for name, robot, fixed in (("row", "fixed.yaml", []), ("problem", "free.yaml", HELD), ("both", "fixed.yaml", ["fore_q3.*", "fore_q2.d"])):
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"robot": robot, "parameters": {**PARAMETERS, "fixed": fixed}, "priors": priors, "measurements": [measurement]}))
        problem = load_problem(path)
        out[name] = (problem, calibrate(problem))
    heldout = sample_configurations(tree, 50, seed=2)
    return truth, theta_true, heldout, out


def test_fixed_entries_stay_at_nominal_and_the_others_move(calibrations):
    truth, theta_true, heldout, out = calibrations
    problem, cal = out["row"]
    robot = problem.robot
    estimate = cal.estimate[problem.layout.blocks["robot"]]
    assert [p.name for p in robot.parameters] == [n for n in all_dh_names() if n not in HELD]
    # the free numbers explain the data: fingertip errors against the truth from > 1 mm to < 1 um
    assert position_errors(robot, robot.nominal, truth, theta_true, heldout, ("fore_tip",)).mean() > 1e-3
    assert position_errors(robot, estimate, truth, theta_true, heldout, ("fore_tip",)).max() < 1e-6
    moved = {p.name: e - p.nominal for p, e in zip(robot.parameters, estimate)}
    assert sum(abs(v) > 1e-4 for v in moved.values()) >= 8  # most free numbers moved
    # the calibrated origins hold the fixed numbers: fore_q3 as written, fore_q2's d and alpha
    origins = robot.calibrated_origins(estimate)
    nominal = robot.tree.joint("fore_q3").origin
    assert "fore_q3" not in origins or np.array_equal(origins["fore_q3"], nominal.matrix())
    q2 = dict(zip(("theta", "a"), (estimate[[p.name for p in robot.parameters].index(f"fore_q2.{c}")] for c in ("theta", "a"))))
    expected = tf.dh_modified(0.0, q2["theta"], q2["a"], np.pi / 2)  # d = 0 and alpha = pi / 2 as in the table
    np.testing.assert_allclose(np.asarray(origins["fore_q2"]), expected, atol=1e-15)


def test_problem_file_patterns_agree_with_row_entries(calibrations):
    """`parameters.fixed` naming the same entries gives the same parameters and the same
    estimate; patterns and row entries together are no error and change nothing."""
    _, _, _, out = calibrations
    names = {k: [p.name for p in problem.robot.parameters] for k, (problem, _) in out.items()}
    assert names["row"] == names["problem"] == names["both"]
    estimates = {k: cal.estimate[problem.layout.blocks["robot"]] for k, (problem, cal) in out.items()}
    np.testing.assert_allclose(estimates["problem"], estimates["row"], atol=1e-12)
    np.testing.assert_allclose(estimates["both"], estimates["row"], atol=1e-12)


def test_docs_describe_the_field():
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    assert "`…joints[].fixed`" in text and "`parameters.fixed`" in text
