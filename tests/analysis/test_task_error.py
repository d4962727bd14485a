"""Task error (relative fingertip positions against a true model) and `robocal evaluate --truth`.

- The same hand written as a DH table and as a URDF has zero task error (1e-12 m: float64 FK
  round-off), whatever the order of the joints in each file.
- Translating one finger base by t moves its tip by t and nothing else, so the finger's task
  error is |t| and the others' 0; translating the reference finger makes every error |t|.
- End to end: two perturbed fingers of the DLR-Hand II (32 DH parameters, up to 5 mm / 5 deg),
  calibrated from noise-free fingertip markers without prior, then scored by the command line
  against the true hand (a URDF): the nominal task error is millimetres, the calibrated one
  round-off (every task-relevant combination is identified from exact data).
- `evaluate --data` on the fixture's two marker measurements (thumb and fore tip, one CSV): a
  held-out CSV goes to both (a table row each, before = the nominal hand's tip error by the numpy
  reference, after round-off); a file that two measurements trained on different files can both
  read is refused unless named (`--data NAME=FILE`).
- The problem's `task:` sets the test set of `evaluate --truth` and `design` (its n and seed,
  each option given on the command line in its place): the figure equals the independent numpy
  forward kinematics of tests/analysis/reference_hand.py on that test set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import yaml

from robocal.analysis.task_error import task_errors
from robocal.calibration import calibrate
from robocal.kinematics import transforms as tf
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.kinematics.urdf import load_urdf, write_urdf
from robocal.problem import load_problem
from robocal.results import write_results
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set

TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")


@pytest.fixture(scope="module")
def hand_file():
    with resources.as_file(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml")) as path:
        yield Path(path)


@pytest.fixture(scope="module")
def tree(hand_file) -> KinematicTree:
    return load_dh(hand_file)


@pytest.fixture(scope="module")
def q(tree) -> np.ndarray:
    robot = RobotModel(tree)
    return uniform_cartesian_test_set(robot, robot.nominal, TIPS, 200, seed=0)


def test_same_hand_in_another_file_has_zero_task_error(tree, q, tmp_path):
    write_urdf(tree, tmp_path / "hand.urdf")
    urdf = load_urdf(tmp_path / "hand.urdf")
    fingers = [tip.removesuffix("_tip") for tip in reversed(TIPS)]
    permuted = KinematicTree(urdf.name, urdf.root, tuple(j for finger in fingers for j in urdf.joints if j.name.startswith(finger)))
    assert permuted.actuated != tree.actuated  # the joint order differs from the DH table's
    dh, other = RobotModel(tree), RobotModel(permuted)
    e = task_errors(dh, dh.nominal, other, other.nominal, q, "thumb_tip", TIPS)
    assert e.shape == (len(q), 3)
    assert e.max() < 1e-12


@pytest.mark.parametrize("moved, expected", [("fore", [1.0, 0.0, 0.0]), ("thumb", [1.0, 1.0, 1.0])])
def test_translated_finger_base(tree, q, moved, expected):
    """|t| = 3 mm on the `moved` finger's base origin (root frame): error |t| where expected is 1."""
    model = RobotModel(tree, {f"{moved}_base_joint": "xyzrpy"})
    theta = model.nominal.copy()
    t = np.array([0.002, -0.001, 0.002])
    theta[:3] += t
    truth = RobotModel(tree)
    e = task_errors(model, theta, truth, truth.nominal, q, "thumb_tip", TIPS)
    np.testing.assert_allclose(e, np.tile(np.array(expected) * np.linalg.norm(t), (len(q), 1)), atol=1e-15)


TASK_N, TASK_SEED = 40, 3  # the fixture problem's `task:`
HELD_OUT = 15  # configurations of the fixture's test.csv


@pytest.fixture(scope="module")
def calibration(hand_file, tree, tmp_path_factory) -> dict:
    """Thumb and fore DH parameters perturbed and calibrated from exact fingertip markers."""
    folder = tmp_path_factory.mktemp("evaluate")
    parameters = {"joints": {"thumb_q?": "dh", "fore_q?": "dh"}}
    truth = RobotModel(tree, {f"{finger}_q{i}": "dh" for finger in ("thumb", "fore") for i in range(1, 5)})
    theta_true = perturb_parameters(truth, seed=0)
    origins = {name: (t[:3, 3], tf.matrix_to_rpy(t[:3, :3])) for name, t in truth.calibrated_origins(theta_true).items()}
    write_urdf(tree, folder / "true.urdf", origins)
    bodies = [MarkerBody(tip, tip, np.zeros((1, 3))) for tip in TIPS[:2]]
    simulate_markers(folder / "train.csv", truth, theta_true, sample_configurations(tree, 40, seed=1), bodies)
    simulate_markers(folder / "test.csv", truth, theta_true, sample_configurations(tree, HELD_OUT, seed=2), bodies)  # held out
    measurements = [{"type": "markers", "name": b.name, "data": "train.csv", "sigma": 1e-4, "link": b.link, "points": b.points()} for b in bodies]
    problem = {"robot": str(hand_file), "parameters": parameters, "priors": {"translation": None, "rotation": None}, "measurements": measurements}
    problem["task"] = {"tips": list(TIPS), "reference": "thumb_tip", "n": TASK_N, "seed": TASK_SEED}
    (folder / "problem.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))
    write_results(calibrate(load_problem(folder / "problem.yaml")), folder / "result")
    return {"folder": folder, "truth": dict(zip([p.name for p in truth.parameters], theta_true))}


def robocal(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "robocal", *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


def test_evaluate_truth_from_the_command_line(calibration):
    folder = calibration["folder"]
    run = robocal("evaluate", folder / "problem.yaml", "--result", folder / "result", "--truth", folder / "true.urdf", "--n", 300, "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["reference"], report["tips"], report["n"], report["seed"], report["unit"]) == ("thumb_tip", list(TIPS[1:]), 300, TASK_SEED, "m")
    assert report["task"]["nominal"]["mean"] > 1e-3
    assert report["task"]["calibrated"]["mean"] < 1e-6
    assert report["task"]["calibrated"]["max"] < 1e-6


def test_evaluate_needs_exactly_one_of_data_and_truth(calibration):
    folder = calibration["folder"]
    run = robocal("evaluate", folder / "problem.yaml", "--result", folder / "result", "--truth", folder / "true.urdf", "--data", folder / "train.csv")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == ["error: give exactly one of --data (a data file) and --truth (the true robot)"]


def reference_task_rms(hand_file, truth: dict[str, float], n: int, seed: int) -> float:
    """RMS over the test set (n, seed) and the three tips of the nominal hand's task error against
    the true one, by the numpy forward kinematics of reference_hand.py."""
    from . import reference_hand as ref

    hand = ref.ReferenceHand(hand_file, hand_file.parent / "dlr_hand_ii_geometry.yaml")
    true_theta = np.array([truth.get(name, value) for name, value in zip(hand.names, hand.nominal)])
    robot = RobotModel(load_dh(hand_file))
    q = uniform_cartesian_test_set(robot, robot.nominal, TIPS, n, seed)
    joints = dict(zip(robot.tree.actuated, q.T))

    def relative(theta):
        return np.stack([hand.tip(theta, tip.removesuffix("_tip"), joints) - hand.tip(theta, "thumb", joints) for tip in TIPS[1:]], axis=1)

    return float(np.sqrt(np.mean(np.sum((relative(hand.nominal) - relative(true_theta)) ** 2, axis=-1))))


def test_evaluate_truth_takes_n_and_seed_from_the_task(calibration, hand_file):
    from robocal.evaluation import evaluate_truth

    folder = calibration["folder"]
    args = (folder / "problem.yaml", folder / "result", folder / "true.urdf")
    declared, explicit = evaluate_truth(*args), evaluate_truth(*args, n=TASK_N, seed=TASK_SEED)
    assert (declared["n"], declared["seed"], declared["reference"], declared["tips"]) == (TASK_N, TASK_SEED, "thumb_tip", list(TIPS[1:]))
    assert declared["task"] == explicit["task"]
    rms = declared["task"]["nominal"]["rms"]
    assert rms == pytest.approx(reference_task_rms(hand_file, calibration["truth"], TASK_N, TASK_SEED), rel=1e-9)
    old = reference_task_rms(hand_file, calibration["truth"], 1000, 0)  # the figure of the old defaults, n 1000 and seed 0
    assert abs(old - rms) > 1e-3 * rms


def test_design_takes_its_task_from_the_problem(calibration, tmp_path, monkeypatch, capsys):
    from robocal import cli
    from robocal.analysis.task_uncertainty import Task
    from robocal.evaluation import chosen_task

    problem = load_problem(calibration["folder"] / "problem.yaml")
    assert chosen_task(problem) == Task("thumb_tip", TIPS[1:], TASK_N, TASK_SEED)
    assert chosen_task(problem, n=50, seed=0) == Task("thumb_tip", TIPS[1:], 50, 0)
    assert chosen_task(problem, tips=["fore_tip", "ring_tip"]) == Task("fore_tip", ("ring_tip",), TASK_N, TASK_SEED)  # other tips, their own reference
    monkeypatch.setattr(sys, "argv", ["robocal", "design", str(calibration["folder"] / "problem.yaml"), "--n", "4", "--out", str(tmp_path / "design")])
    cli.main()
    said = " ".join(capsys.readouterr().out.split())  # the console wraps at the terminal's width (COLUMNS=80 under pytest-xdist)
    assert f"task: fore_tip, middle_tip, ring_tip relative to thumb_tip, {TASK_N} test configurations (seed {TASK_SEED})" in said


def test_evaluate_every_measurement_with_held_out_data(calibration, hand_file):
    from rich.console import Console

    from robocal.evaluation import evaluate_files
    from robocal.report.evaluation import print_held_out

    from . import reference_hand as ref

    folder = calibration["folder"]
    report = evaluate_files(folder / "problem.yaml", folder / "result", [folder / "test.csv"])
    assert [(e["data"], [m["name"] for m in e["measurements"]]) for e in report["training"]] == [(str(folder / "train.csv"), ["thumb_tip", "fore_tip"])]
    [held_out] = report["evaluations"]
    assert held_out["data"] == str(folder / "test.csv") and report["verdict"]["level"] == "ok"
    hand = ref.ReferenceHand(hand_file, hand_file.parent / "dlr_hand_ii_geometry.yaml")
    true_theta = np.array([calibration["truth"].get(name, value) for name, value in zip(hand.names, hand.nominal)])
    rows = ref.read_rows(folder / "test.csv")
    q = ref.joint_values(rows, [j for j in load_dh(hand_file).actuated if j in rows[0]])
    for metrics in held_out["measurements"]:
        finger = metrics["name"].removesuffix("_tip")
        distances = np.linalg.norm(hand.tip(hand.nominal, finger, q) - hand.tip(true_theta, finger, q), axis=1)
        assert metrics["n"] == HELD_OUT and metrics["before"]["rms"] == pytest.approx(np.sqrt(np.mean(distances**2)), rel=1e-9)
        assert metrics["before"]["rms"] > 1e-3 and metrics["after"]["rms"] < 1e-6
    console = Console(record=True, width=200)
    print_held_out(report, console)
    table = [line.split("│")[1:3] for line in console.export_text().splitlines() if "│" in line]
    assert [(d.strip(), m.strip()) for d, m in table] == [
        ("train.csv (training)", "thumb_tip"),
        ("train.csv (training)", "fore_tip"),
        ("test.csv", "thumb_tip"),
        ("test.csv", "fore_tip"),
    ]


def test_a_held_out_file_for_measurements_trained_on_different_files(calibration, tmp_path):
    from robocal.errors import RobocalError
    from robocal.evaluation import held_out_files

    folder = calibration["folder"]
    spec = yaml.safe_load((folder / "problem.yaml").read_text())
    for m in spec["measurements"]:
        m["data"] = str(folder / "train.csv")
    spec["measurements"][1]["data"] = str(tmp_path / "fore.csv")
    (tmp_path / "fore.csv").write_text((folder / "train.csv").read_text())
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    problem = load_problem(tmp_path / "problem.yaml")
    test = folder / "test.csv"
    with pytest.raises(RobocalError) as caught:
        held_out_files(problem, [test])
    assert str(caught.value) == (
        f"--data {test}: measurements thumb_tip, fore_tip, trained on different files ({folder / 'train.csv'}, {tmp_path / 'fore.csv'}), "
        f"can all read it; say which with --data NAME={test}"
    )
    assert [(m.name, path) for m, path, _ in held_out_files(problem, [Path(f"fore_tip={test}")])] == [("fore_tip", test)]
    assert [m.name for m, _, _ in held_out_files(problem, [test], "thumb_tip")] == ["thumb_tip"]
