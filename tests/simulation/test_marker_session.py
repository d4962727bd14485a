"""`robocal simulate markers --robot URDF`: a perturbed copy of any arm seen by motion capture,
written as a lab's files. Calibrated from train.csv, the model predicts the held-out test.csv to
the markers' noise floor (sqrt(3) sigma for a 3D distance of Gaussian coordinates), while the
nominal robot misses by many times that; true.urdf carries exactly the simulated errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from robocal import cli
from robocal.calibration import calibrate
from robocal.evaluation import evaluate_files
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from robocal.results import write_results

ARM = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "arm_6r.urdf"
SIGMA = 1e-4


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("markers") / "session"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            sys,
            "argv",
            ["robocal", "simulate", "markers", "--robot", str(ARM), "--out", str(out), "--n", "40", "--n-test", "20", "--mode", "joint_offsets", "--seed", "3"],
        )
        cli.main()
    return out


def test_files_and_truth(session):
    assert sorted(p.name for p in session.iterdir()) == ["problem.yaml", "robot.urdf", "test.csv", "train.csv", "true.urdf", "truth.json"]
    truth = json.loads((session / "truth.json").read_text())
    problem = yaml.safe_load((session / "problem.yaml").read_text())
    assert truth["link"] == problem["measurements"][0]["link"] == "link6"  # the end of the longest chain
    model = RobotModel(load_urdf(session / "robot.urdf"), {name: "joint_offsets" for name in load_urdf(ARM).actuated})
    true = RobotModel(load_urdf(session / "true.urdf"), {name: "joint_offsets" for name in load_urdf(ARM).actuated})
    offsets = np.array([truth["parameters"][p.name] for p in model.parameters])
    assert np.all(np.abs(offsets) <= np.deg2rad(0.3)) and np.abs(offsets).max() > np.deg2rad(0.1)
    q = np.random.default_rng(0).uniform(-1, 1, len(model.inputs))
    # the true robot's joint zeros sit where nominal + offsets put them
    np.testing.assert_allclose(true.link_poses(true.nominal, q, ("link6",)), model.link_poses(model.nominal + offsets, q, ("link6",)), atol=1e-12)


def test_calibration_reaches_the_noise_floor_on_held_out_postures(session):
    cal = calibrate(load_problem(session / "problem.yaml"))
    write_results(cal, session / "result")
    [held_out] = evaluate_files(session / "problem.yaml", session / "result", [session / "test.csv"])["evaluations"][0]["measurements"]
    floor = np.sqrt(3) * SIGMA
    assert 0.7 * floor < held_out["after"]["rms"] < 1.3 * floor, held_out
    assert held_out["before"]["rms"] > 5 * floor, held_out
    assert cal.verdict.level == "ok", cal.verdict
