"""Every generated bad input (tests/robustness/corpus.py) through `robocal calibrate`, and each
also through one of the other commands that read a problem (analyze, design, evaluate, in turn),
in-process (the one error path of `robocal.cli.main`; tests/cli/test_bad_input.py runs real
processes): exit code 2, one `error:` line naming the file, no traceback, every input file
byte-identical afterwards, and no output folder."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from robocal import cli
from tests.cli.test_bad_input import PROBLEM, URDF, synthetic_rows, write_csv
from tests.robustness.corpus import CASES


@pytest.fixture(scope="module")
def valid_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("valid")
    (folder / "arm.urdf").write_text(URDF)
    write_csv(folder / "train.csv", synthetic_rows(folder / "arm.urdf", 12, seed=1))
    return folder


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_corpus_has_at_least_200_cases():
    assert len(CASES) >= 200


OTHERS = ("analyze", "design", "evaluate")
RUNS = [(name, "calibrate") for name in CASES] + [(name, OTHERS[i % len(OTHERS)]) for i, name in enumerate(CASES)]


def command_line(command: str, problem: Path, tmp_path: Path) -> list[str]:
    """The command on `problem`; evaluate reads a stored result that names no inputs (an older robocal)."""
    if command == "calibrate":
        return ["calibrate", str(problem), "--out", str(tmp_path / "out")]
    if command == "design":
        return ["design", str(problem), "--n", "3", "--out", str(tmp_path / "out")]
    if command == "analyze":
        return ["analyze", str(problem), "--json"]
    result = tmp_path / "result"
    result.mkdir()
    (result / "report.json").write_text('{"parameters": [], "identifiability": {}}')
    (result / "frames.yaml").write_text("{}\n")
    return ["evaluate", str(problem), "--result", str(result), "--data", str(problem.parent / "train.csv")]


@pytest.mark.parametrize("name, command", RUNS, ids=[f"{c}: {n}" for n, c in RUNS])
def test_bad_input_is_one_located_error(name, command, valid_folder, tmp_path, monkeypatch, capsys):
    edit, file = CASES[name]
    folder = tmp_path / "case"
    shutil.copytree(valid_folder, folder)
    problem = yaml.safe_load(yaml.safe_dump(PROBLEM))
    edit(folder, problem)
    raw = problem.pop("__raw__", None)
    path = folder / "problem.yaml"
    if isinstance(raw, bytes):
        path.write_bytes(raw)
    else:
        path.write_text(raw if raw is not None else yaml.safe_dump(problem, sort_keys=False))
    before = hashes(folder)
    monkeypatch.setattr(sys, "argv", ["robocal", *command_line(command, path, tmp_path)])
    monkeypatch.setenv("COLUMNS", "500")
    with pytest.raises(SystemExit) as info:
        cli.main()
    captured = capsys.readouterr()
    assert info.value.code == 2, captured.err
    assert "Traceback" not in captured.err + captured.out
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert str(folder / file) in lines[0] or (file == "problem.yaml" and str(path) in lines[0]), lines[0]
    assert hashes(folder) == before
    assert not (tmp_path / "out").exists()
