"""The real recordings through the fleet: a MUKCa unit (sphere in socket) and the TIAGo arm (motion
capture), each made a session folder (problem, robot, data) as a line would upload it, ingested and
run. The stored result has the figures of `robocal calibrate` on the example problem: the same
estimates and errors (the same data, the same core), and for MUKCa the published figure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.orm import Session as DbSession

from robocal.calibration import calibrate
from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.models import Result
from robocal.fleet.store.sessions import ingest
from robocal.problem import load_problem

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def session(folder: Path, example: Path, robot: Path, data: dict[str, Path]) -> Path:
    """A session folder from an example problem: its robot and data copied in, paths rewritten."""
    folder.mkdir(parents=True)
    problem = yaml.safe_load(example.read_text())
    shutil.copy(robot, folder / "robot.urdf")
    problem["robot"] = "robot.urdf"
    for m in problem["measurements"]:
        source = data[m["name"]]
        (shutil.copytree if source.is_dir() else shutil.copy)(source, folder / source.name)
        m["data"] = source.name
    (folder / "problem.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))
    return folder


def fleet_report(tmp_path: Path, batch: Path) -> dict:
    engine = open_store(tmp_path / "robocal.db", create=True)
    assert ingest(engine, batch) == (1, 0) and run(engine) == {"done": 1, "failed": 0}
    with DbSession(engine) as db:
        return json.loads(db.scalar(sa.select(Result.report)))


def assert_same_figures(stored: dict, direct: dict) -> None:
    np.testing.assert_allclose([p["estimate"] for p in stored["parameters"]], [p["estimate"] for p in direct["parameters"]], rtol=0, atol=1e-12)
    for a, b in zip(stored["measurements"], direct["measurements"], strict=True):
        for when in ("before", "after"):
            assert a[when] == pytest.approx(b[when], rel=1e-9, abs=1e-15), (a["name"], when)


def test_mukca_unit(tmp_path):
    example = EXAMPLES / "mukca" / "panda_1_front.yaml"
    data = EXAMPLES / "mukca" / "data"
    batch = tmp_path / "batch"
    session(batch / "panda_1", example, data / "urdf" / "panda.urdf", {"front": data / "panda_1" / "front"})
    stored = fleet_report(tmp_path, batch)
    assert_same_figures(stored, json.loads(json.dumps(calibrate(load_problem(example)).report())))
    [front] = stored["measurements"]
    assert front["before"]["mae"] == pytest.approx(10.34e-3, abs=0.005e-3) and front["after"]["mae"] <= 0.22e-3  # docs/validation.md


def test_tiago_arm(tmp_path):
    example = EXAMPLES / "tiago_mocap" / "full.yaml"
    problem = yaml.safe_load(example.read_text())
    robot = (example.parent / problem["robot"]).resolve()
    data = {m["name"]: example.parent / m["data"] for m in problem["measurements"]}
    batch = tmp_path / "batch"
    session(batch / "tiago", example, robot, data)
    assert_same_figures(fleet_report(tmp_path, batch), json.loads(json.dumps(calibrate(load_problem(example)).report())))
