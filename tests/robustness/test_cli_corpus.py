"""Every generated bad input (tests/robustness/corpus.py) through `robocal calibrate`, and each
also through one of the other commands that load a problem (analyze, design, evaluate, crossval, in turn),
in-process (the one error path of `robocal.cli.main`; tests/cli/test_bad_input.py runs one
case per kind of file in a real process): exit code 2, one `error:` line naming the file, no traceback, every input file
byte-identical afterwards, and no output folder."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

from robocal import cli
from tests.cli.test_bad_input import PROBLEM
from tests.robustness.contract import PROBLEM_COMMANDS, assert_one_located_error, command_line, hashes, valid_folder
from tests.robustness.corpus import CASES


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    return valid_folder(tmp_path_factory.mktemp("valid"))


def test_the_corpus_has_at_least_200_cases():
    assert len(CASES) >= 200


OTHERS = PROBLEM_COMMANDS[1:]
RUNS = [(name, "calibrate") for name in CASES] + [(name, OTHERS[i % len(OTHERS)]) for i, name in enumerate(CASES)]


@pytest.mark.parametrize("name, command", RUNS, ids=[f"{c}: {n}" for n, c in RUNS])
def test_bad_input_is_one_located_error(name, command, valid, tmp_path, monkeypatch, capsys):
    edit, file = CASES[name]
    folder = tmp_path / "case"
    shutil.copytree(valid, folder)
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
    assert_one_located_error(info.value.code, captured.out, captured.err, folder / file, *([path] if file == "problem.yaml" else []))
    assert hashes(folder) == before
    assert not (tmp_path / "out").exists()
