"""`robocal analyze` end to end on the shipped DLR-Hand II example (examples/dlr_hand_ii/identifiability.yaml).

Three runs in parallel: the whole hand as JSON (the issue's keys and numbers), two modes at the
parameters of a stored calibration with the kernel inclusion test and the spectrum plot, and a
bad option (one error line, exit code 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from robocal.problem import load_problem

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dlr_hand_ii" / "identifiability.yaml"
TILT = 0.05  # rad added to thumb_q3.alpha in the stored "calibration": thumb q2 and q3 no longer parallel


def robocal(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "robocal", *map(str, args)], capture_output=True, text=True, env=env, timeout=300)


def stored_result(folder: Path) -> Path:
    """A minimal `robocal calibrate` output folder: the nominal hand with one tilted axis."""
    folder.mkdir()
    parameters = []
    for p in load_problem(EXAMPLE).layout.parameters:
        value = p.nominal + (TILT if p.name == "thumb_q3.alpha" else 0.0)
        parameters.append({"name": p.name, "baseline": p.nominal, "estimate": value})
    (folder / "report.json").write_text(json.dumps({"parameters": parameters, "identifiability": {"unidentifiable_fixed": []}}))
    (folder / "frames.yaml").write_text(yaml.safe_dump({}))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analyze")
    result, plot = stored_result(tmp / "result"), tmp / "spectra.png"
    commands = {
        "whole": ("analyze", EXAMPLE, "--json"),
        "modes": (
            "analyze",
            EXAMPLE,
            "--json",
            "--result",
            result,
            "--kernel-of",
            "contacts",
            "--within",
            "task",
            "--links",
            "thumb_tip,fore_tip",
            "--links",
            "thumb_tip, fore_tip, middle_tip, ring_tip",
            "--plot",
            plot,
        ),
        "bad": ("analyze", EXAMPLE, "--kernel-of", "contacts"),
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        done = dict(zip(commands, pool.map(lambda args: robocal(*args), commands.values())))
    return done, plot


def test_json_whole_hand(runs):
    run = runs[0]["whole"]
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert {"n_parameters", "rank", "threshold", "eigenvalues", "kernel", "scaled_condition_number", "observability", "measurements", "inclusion"} <= set(
        report
    )
    assert (report["n_parameters"], report["rank"], report["threshold"], len(report["eigenvalues"]), len(report["kernel"])) == (64, 56, 1e-6, 64, 8)
    assert set(report["observability"]) == {"O1", "O2", "O3", "O4", "O5"}
    assert [(m["name"], m["rows"], m["rank"]) for m in report["measurements"]] == [("contacts", 600, 56), ("task", 900, 56)]
    assert report["links"] is None and report["inclusion"] is None


def test_modes_at_stored_parameters_with_inclusion_and_plot(runs):
    run, plot = runs[0]["modes"], runs[1]
    assert run.returncode == 0, run.stderr
    pair, whole = json.loads(run.stdout)["modes"]
    assert pair["links"] == ["thumb_tip", "fore_tip"] and len(pair["parameters"]) == 32
    assert [(m["name"], m["rank"]) for m in pair["measurements"]] == [("contacts", 26), ("task", 27)]
    assert not pair["inclusion"]["holds"] and (pair["inclusion"]["dim_a"], pair["inclusion"]["dim_b"]) == (6, 5)
    assert whole["inclusion"]["kernel_of"] == "contacts" and whole["inclusion"]["within"] == "task"
    # at the stored parameters the thumb's q2/q3 shift is no longer exact: 7 exact zeros, not 8
    for m in whole["measurements"]:
        assert sum(w < 1e-25 for w in m["eigenvalues"]) == 7, m["name"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_option_is_one_error_line(runs):
    run = runs[0]["bad"]
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "--within" in lines[0]
