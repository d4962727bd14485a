"""`robocal grasp evaluate` end to end on one object: the files, the summary's figures against the
trials, the same records whatever the number of worker processes, bad input named."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from robocal.grasp.evaluation import EvaluationConfig, run_evaluation
from robocal.grasp.metrics import NO_FORCE_LIMIT
from tests.conftest import REPO

ARGS = ["--objects", "sphere_35", "--grasps", "2", "--forces", "2", "--scales", "1,3", "--ramp", "1", "--hold", "0.5"]


def robocal(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", COLUMNS="200", PYTHONPATH=str(REPO / "src"))
    return subprocess.run([sys.executable, "-m", "robocal", *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("grasp")
    run = robocal("grasp", "evaluate", "--out", out, *ARGS, "--workers", "1")
    assert run.returncode == 0, run.stderr
    return out, json.loads((out / "results.json").read_text()), run


def test_files_and_table(evaluated):
    out, results, run = evaluated
    stdout = run.stdout
    assert (out / "breaks_vs_torque.png").stat().st_size > 10_000 and (out / "deviations.png").stat().st_size > 10_000
    rows = results["summary"]["methods"]
    assert [(r["method"], r["scale"]) for r in rows] == [
        ("controller", 1.0),
        ("fixed_offsets", 1.0),
        ("fixed_offsets", 3.0),
        ("without_wrench_estimate", 1.0),
        ("without_wrench_estimate", 3.0),
    ]
    for row in rows:  # every figure of the table is its trials' figure
        trials = [t for t in results["trials"] if (t["method"], t["scale"]) == (row["method"], row["scale"]) and t["force"] >= 0]
        assert row["trials"] == len(trials) == 2 * 2
        assert row["kept"] == pytest.approx(np.mean([not t["broken"] for t in trials]))
        assert row["torque_sum"] == pytest.approx(np.mean([t["torque_sum"] for t in trials]))
        assert f"{row['method']:26s} {row['scale']:5g}" in stdout
    kinds = [(g["kind"], g["status"], g["evaluated"]) for g in results["grasps"]]
    assert ("power", "ok", True) in kinds and ("precision", "ok", True) in kinds
    assert all(g["reason"] for g in results["grasps"] if g["status"] != "ok")
    # stderr is no terminal here: the progress comes as log lines, each phase's end included
    assert re.search(r"^grasp attempts per object: 1/1 after \d+ s$", run.stderr, re.MULTILINE), run.stderr
    assert re.search(r"^trials per grasp: 2/2 after \d+ s$", run.stderr, re.MULTILINE), run.stderr


def test_forces_follow_the_protocol(evaluated):
    _, results, _ = evaluated
    for t in results["trials"]:
        if t["force"] >= 0:
            assert t["magnitude"] == {"power": 10.0, "precision": 5.0}[t["kind"]]
            assert t["broken"] == (t["max_translation"] > 0.03 or t["max_rotation"] > np.deg2rad(20))
    quiet = [t for t in results["trials"] if t["force"] < 0]
    assert len(quiet) == 2 and all(t["estimate_max"] < NO_FORCE_LIMIT and t["magnitude"] == 0 for t in quiet)


def test_records_do_not_depend_on_the_workers(evaluated):
    _, results, _ = evaluated
    config = EvaluationConfig(objects=("sphere_35",), grasps=2, forces=2, scales=(1.0, 3.0), ramp=1.0, hold=0.5)
    again = run_evaluation(config, workers=2)
    assert again["trials"] == results["trials"] and again["grasps"] == results["grasps"]


def test_unknown_object_is_named():
    run = robocal("grasp", "evaluate", "--objects", "sphere_35,teapot", "--out", "/nonexistent/never")
    assert run.returncode == 2 and "teapot" in run.stderr and "sphere_35" in run.stderr
