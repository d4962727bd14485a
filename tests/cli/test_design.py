"""`robocal design` end to end: 600 recorded contacts of the nominal DLR-Hand II (the shipped
identifiability data) are the candidates; the chosen rows are written as a data file that
calibrates, and the criterion orders the strategies as it must.

Each run is a process that traces the problem's Jacobians anew (about 10 s) and compiles them or
reads them from the run's compilation cache. So the runs go two at a time: first one strategy
beside the error case (a different problem: nothing to share), then, on the cached compilations,
the other two strategies."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dlr_hand_ii"
MODELS = Path(__file__).resolve().parents[2] / "src" / "robocal" / "models"


def robocal(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "robocal", *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def designs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("design")
    problem = {
        "robot": str(MODELS / "dlr_hand_ii.yaml"),
        "geometry": {"files": [str(MODELS / "dlr_hand_ii_geometry.yaml")]},
        "parameters": {"joints": {"*_q?": "dh"}},
        "priors": {"translation": 0.005, "rotation": float(np.deg2rad(5.0))},
        "measurements": [{"name": "contacts", "type": "contact", "data": str(EXAMPLES / "identifiability_contacts.csv"), "sigma": 1e-4}],
    }
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump(problem))
    commands = {
        strategy: (
            "design",
            path,
            "--n",
            60,
            "--strategy",
            strategy,
            "--tips",
            "thumb_tip,fore_tip,middle_tip,ring_tip",
            "--n-test",
            300,
            "--out",
            folder / strategy,
        )
        for strategy in ("random", "greedy", "detmax")
    }
    commands["too many"] = ("design", EXAMPLES / "identifiability.yaml", "--n", 100000, "--tips", "thumb_tip,fore_tip", "--out", folder / "too_many")
    runs = {}
    with ThreadPoolExecutor(2) as pool:
        for batch in (("random", "too many"), ("greedy", "detmax")):
            runs |= dict(zip(batch, pool.map(lambda name: robocal(*commands[name]), batch)))
    out = {"too many": runs.pop("too many")}
    for strategy, run in runs.items():
        assert run.returncode == 0, run.stderr
        out[strategy] = (json.loads((folder / strategy / "selection.json").read_text()), folder / strategy / "contacts.csv")
    return out


def test_selection_file_and_reduced_data(designs):
    selection, data = designs["detmax"]
    assert selection["n"] == 60 and selection["candidates"] == 600 and selection["unit"] == "m"
    lines = selection["samples"][0]["lines"]
    assert len(lines) == len(set(lines)) == 60
    with open(EXAMPLES / "identifiability_contacts.csv", newline="") as f:
        source = list(csv.reader(f))
    with open(data, newline="") as f:
        written = list(csv.reader(f))
    assert written[0] == source[0]
    assert written[1:] == [source[line - 1] for line in sorted(lines)]  # lines count the header as line 1


def test_strategies_are_ordered_by_the_criterion(designs):
    """DETMAX refines the greedy design, both beat random on the criterion and the predicted task RMS."""
    strategies = ("random", "greedy", "detmax")
    value = {s: designs[s][0]["criterion_logdet"] for s in strategies}
    rms = {s: designs[s][0]["predicted_task_rms"] for s in strategies}
    assert value["detmax"] <= value["greedy"] < value["random"] - 5.0
    assert rms["detmax"] < rms["random"] and rms["greedy"] < rms["random"]


def test_more_samples_than_candidates_is_a_located_error(designs):
    run = designs["too many"]
    assert run.returncode == 2
    assert "only 700 candidate samples" in run.stderr
