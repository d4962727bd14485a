"""`robocal record sockets` refuses, before anything is recorded, what it could not finish: bad
option combinations, an output folder it would overwrite, and a standard input that is not a
terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robocal.cli import app
from robocal.errors import RobocalError
from robocal.io.sockets import write_socket_folder
from tests.robustness.contract import hashes
from tests.robustness.test_named_cases import run, said

URDF = Path(__file__).resolve().parents[2] / "examples" / "mukca" / "data" / "urdf" / "panda.urdf"


def refusal(*args: str) -> str:
    """The error message of `robocal record sockets --robot URDF ARGS`, run in this process."""
    result = CliRunner().invoke(app, ["record", "sockets", "--robot", str(URDF), *args])
    assert isinstance(result.exception, RobocalError), result.output
    return str(result.exception)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--source", "replay"], "--replay FOLDER goes with --source replay, and only with it"),
        (["--source", "sim", "--replay", "x"], "--replay FOLDER goes with --source replay, and only with it"),
        (["--source", "sim", "--topic", "/arm/joint_states"], "--topic: only with --source ros2"),
        (["--distance", "0.05", "--sockets", "1"], "--distance 0.05: must be positive (m), between sockets 0 and 1 of a plate with --sockets 2 or more"),
        (["--distance", "-0.05"], "--distance -0.05: must be positive"),
    ],
)
def test_option_combinations(tmp_path, args, message):
    assert message in refusal("--out", str(tmp_path / "out"), *args)


def test_a_non_empty_output_folder_needs_force(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "hole_0.csv").write_text("0,0,0,0,0,0,0\n")
    assert (
        refusal("--out", str(out), "--source", "sim")
        == f"{out}: --out: the folder exists and is not empty; choose a new one, or pass --force to replace its socket files"
    )
    (tmp_path / "file").write_text("")
    assert refusal("--out", str(tmp_path / "file"), "--source", "sim") == f"{tmp_path / 'file'}: --out: exists and is not a folder"


@pytest.mark.parametrize("where", ["the replayed folder", "inside it"])
def test_out_that_would_write_into_the_replayed_folder_is_refused(tmp_path, monkeypatch, capsys, where):
    """Written to the folder it replays (with --force), the recording would replace the recording
    it shows; beside it, in a subfolder, it would change that input. Refused before the terminal
    is asked for."""
    replay = tmp_path / "front"
    write_socket_folder(replay, [[[0.0] * 7] * 2, [[0.1] * 7] * 2])
    before = hashes(replay)
    out = replay if where == "the replayed folder" else replay / "again"
    code, _, err = run(monkeypatch, capsys, "record", "sockets", "--robot", URDF, "--out", out, "--source", "replay", "--replay", replay, "--force")
    message = f"{out}: --out holds input file(s) {replay}" if out == replay else f"{out}: --out is inside the input folder {replay}"
    assert code == 2 and said(message, err)
    assert hashes(replay) == before and not (replay / "again").exists()


def test_standard_input_must_be_a_terminal(tmp_path):
    env = dict(os.environ, NO_COLOR="1", TERM="dumb")
    args = ["record", "sockets", "--robot", str(URDF), "--out", str(tmp_path / "out"), "--source", "sim"]
    result = subprocess.run([sys.executable, "-m", "robocal", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: robocal record sockets reads single key presses: run it in a terminal (its standard input is not one)"
    ]
    assert not (tmp_path / "out").exists()
