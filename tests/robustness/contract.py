"""The CLI's bad-input contract, shared by the generated corpus and the hand-made files: a command
line per command, the check of its answer, and hashes that show no input was touched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli.test_bad_input import PROBLEM, URDF, synthetic_rows, write_csv

PROBLEM_COMMANDS = ("calibrate", "analyze", "design", "evaluate", "crossval")  # every command that loads a problem and its data


def valid_folder(folder: Path) -> Path:
    """The tiny arm's valid problem folder: arm.urdf, train.csv (12 rows), problem.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "arm.urdf").write_text(URDF)
    write_csv(folder / "train.csv", synthetic_rows(folder / "arm.urdf", 12, seed=1))
    (folder / "problem.yaml").write_text(yaml.safe_dump(PROBLEM, sort_keys=False))
    return folder


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def command_line(command: str, problem: Path, work: Path) -> list[str]:
    """`command` on `problem`, writing (if at all) to work/out; evaluate reads a stored result
    that names no inputs (an older robocal), so only the problem's own files can fail it."""
    if command == "calibrate":
        return ["calibrate", str(problem), "--out", str(work / "out")]
    if command == "design":
        return ["design", str(problem), "--n", "3", "--out", str(work / "out")]
    if command == "analyze":
        return ["analyze", str(problem), "--json"]
    if command == "crossval":
        return ["crossval", str(problem), "--out", str(work / "out")]
    assert command == "evaluate", command
    result = work / "result"
    result.mkdir(exist_ok=True)
    (result / "report.json").write_text('{"parameters": [], "identifiability": {}}')
    (result / "frames.yaml").write_text("{}\n")
    return ["evaluate", str(problem), "--result", str(result), "--data", str(problem.parent / "train.csv")]


def in_subprocess(args: list[str]) -> tuple[int, str, str]:
    """`robocal ARGS` in its own Python process: exit code, stdout, stderr."""
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu", COLUMNS="500")
    done = subprocess.run([sys.executable, "-m", "robocal", *args], capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stdout, done.stderr


def assert_one_located_error(code: int, out: str, err: str, *files: Path) -> None:
    """Exit code 2, no traceback, exactly one non-empty stderr line, `error: ...` naming one of `files`."""
    assert code == 2, (code, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert any(str(f) in lines[0] for f in files), (lines[0], files)
