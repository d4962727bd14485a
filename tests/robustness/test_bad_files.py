"""The hand-made bad files of tests/data/bad/ through every command that reads that kind of file:
in-process for every (file, command) pair (the same `robocal.cli.main` a shell runs), and each command
once more in a real process of its own (on a different file each), as a shell or the platform runs
robocal. Each answer: exit code 2, one `error:` line naming the file, no traceback, every input
byte-identical afterwards, no output folder."""

from __future__ import annotations

import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from robocal import cli
from tests.robustness.contract import (
    PROBLEM_COMMANDS,
    assert_one_located_error,
    command_line,
    hashes,
    in_subprocess,
    valid_folder,
)

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"
FILES = sorted(p.name for p in BAD.iterdir() if p.suffix in (".urdf", ".csv"))
ROBOT_COMMANDS = ("simulate sockets", "simulate fleet")  # read a URDF given with --robot
TABLE_COMMANDS = ("teleop show",)  # reads a joint-value table given with --joints


def commands(name: str) -> list[str]:
    return list(PROBLEM_COMMANDS) + list(ROBOT_COMMANDS if name.endswith(".urdf") else TABLE_COMMANDS)


def case(name: str, command: str, work: Path, valid: Path) -> tuple[list[str], Path, Path]:
    """The command line of `command` on the bad file `name` placed in a copy of the valid folder
    (as its arm.urdf or train.csv), the folder, and the path the error must name."""
    folder = work / "case"
    shutil.copytree(valid, folder)
    target = folder / ("arm.urdf" if name.endswith(".urdf") else "train.csv")
    target.write_bytes((BAD / name).read_bytes())
    out = str(work / "out")
    if command == "simulate sockets":
        return ["simulate", "sockets", "--robot", str(target), "--link", "tool", "--out", out], folder, target
    if command == "simulate fleet":
        return ["simulate", "fleet", "--robot", str(target), "--units", "2", "--out", out], folder, target
    if command == "teleop show":
        return ["teleop", "show", "--joints", str(target), "--out", str(work / "out" / "teleop.png")], folder, target
    return command_line(command, folder / "problem.yaml", work), folder, target


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    return valid_folder(tmp_path_factory.mktemp("valid"))


def test_there_are_hand_made_files_of_each_kind():
    assert sum(n.endswith(".urdf") for n in FILES) >= 8 and sum(n.endswith(".csv") for n in FILES) >= 10


@pytest.mark.parametrize("name, command", [(n, c) for n in FILES for c in commands(n)])
def test_in_process(name, command, valid, tmp_path, monkeypatch, capsys):
    args, folder, target = case(name, command, tmp_path, valid)
    before = hashes(folder)
    monkeypatch.setattr(sys, "argv", ["robocal", *args])
    monkeypatch.setenv("COLUMNS", "500")
    with pytest.raises(SystemExit) as info:
        cli.main()
    captured = capsys.readouterr()
    assert_one_located_error(info.value.code, captured.out, captured.err, target)
    assert hashes(folder) == before and not (tmp_path / "out").exists()


def test_each_command_in_a_process_of_its_own(valid, tmp_path):
    urdfs, tables = [n for n in FILES if n.endswith(".urdf")], [n for n in FILES if n.endswith(".csv")]
    pairs = [(urdfs[i], c) for i, c in enumerate(PROBLEM_COMMANDS + ROBOT_COMMANDS)] + [(tables[i], c) for i, c in enumerate(TABLE_COMMANDS)]
    runs = []
    for name, command in pairs:
        work = tmp_path / f"{name} {command}"
        work.mkdir()
        args, folder, target = case(name, command, work, valid)
        runs.append((args, folder, target, hashes(folder), work))
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda run: in_subprocess(run[0]), runs))
    for (args, folder, target, before, work), (code, out, err) in zip(runs, answers):
        assert_one_located_error(code, out, err, target)
        assert hashes(folder) == before and not (work / "out").exists(), args
