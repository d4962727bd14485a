"""docs/your-robot.md, run as written: every `$ robocal ...` line of the page in order, in a fresh
folder that sees the repository's examples/, each answering exit code 0; then the figures the page
quotes, from the same runs (the calibration at the noise floor on held-out postures, the task
error against the truth cut by more than half)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np

from robocal import cli

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "your-robot.md"


def commands() -> list[list[str]]:
    return [shlex.split(line.removeprefix("$ robocal ")) for line in PAGE.read_text().splitlines() if line.startswith("$ robocal ")]


def robocal(monkeypatch, capsys, args: list[str]) -> str:
    monkeypatch.setattr(sys, "argv", ["robocal", *args])
    cli.main()  # a failure exits non-zero (SystemExit), which fails the test
    return capsys.readouterr().out


def test_the_walk_through(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    steps = commands()
    assert [s[0] for s in steps] == ["simulate", "analyze", "design", "calibrate", "evaluate", "evaluate"]
    for args in steps:
        robocal(monkeypatch, capsys, args)
    page = (tmp_path / "my_arm" / "evaluation.html").read_text()
    assert "test.csv" in page and "train.csv (training)" in page and "% </td>" not in page and "Verdict on the held-out data" in page
    html = steps[4].index("--html")
    held_out = json.loads(robocal(monkeypatch, capsys, [*steps[4][:html], *steps[4][html + 2 :], "--json"]))
    [test] = held_out["evaluations"][0]["measurements"]
    floor = np.sqrt(3) * 1e-4  # m: 0.1 mm per coordinate, as a 3D distance
    assert 0.8 * floor < test["after"]["rms"] < 1.3 * floor < 5 * floor < test["before"]["rms"]
    assert held_out["verdict"]["level"] == "ok"
    task = json.loads(robocal(monkeypatch, capsys, [*steps[5], "--json"]))["task"]
    assert task["calibrated"]["rms"] < 0.5 * task["nominal"]["rms"]
    assert (tmp_path / "my_arm" / "design" / "markers.csv").read_text().count("\n") == 21  # header + the 20 chosen postures
