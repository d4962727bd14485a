"""Bad options of the learned controller's commands: one line naming the option, exit 2,
before any work."""

import sys

import pytest

from robocal import cli
from tests.grasp.test_evaluation import robocal

CASES = [
    (["grasp", "evaluate", "--controller", "neural"], "--controller"),
    (["grasp", "evaluate", "--kinds", "pinch"], "--kinds"),
    (["grasp", "evaluate", "--controller", "learned", "--weights", "{tmp}"], "no learned weights"),
    (["grasp", "train", "--data", "{tmp}", "--channels", "4,8"], "--channels"),
    (["grasp", "train", "--data", "{tmp}", "--networks", "critic"], "--networks"),
    (["grasp", "train", "--data", "{tmp}", "--loss", "l1"], "--loss"),
    (["grasp", "train", "--data", "{tmp}", "--precision", "float16"], "--precision"),
    (["grasp", "train", "--data", "{tmp}", "--batch", "64", "--per-grid", "5"], "--per-grid"),
    (["grasp", "train", "--data", "{tmp}", "--init", "{tmp}"], "no learned weights"),
    (["grasp", "train", "--data", "{tmp}", "--layers", "convolutions"], "--layers"),
    (["grasp", "train", "--data", "{tmp}", "--layers", "dense"], "--layers dense: give --init"),
    (["grasp", "train", "--data", "{tmp}", "--quantile", "1"], "--quantile"),
    (["grasp", "train", "--data", "{tmp}", "--networks", "estimator", "--weights", "{tmp}/w"], "--weights with --networks estimator: give --init"),
]


def _arguments(args, tmp_path):
    return [a.replace("{tmp}", str(tmp_path)) for a in args] + ["--out", str(tmp_path / "out")]


def _assert_refused(code, stderr, named, tmp_path):
    assert code == 2 and named in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, named", CASES)
def test_bad_options_are_one_line_and_exit_2(tmp_path, monkeypatch, capfd, args, named):
    """Through `robocal.cli.main` in this process (the code a shell runs, less the interpreter's
    start); capfd also takes what is written to file descriptor 2 directly."""
    monkeypatch.setattr(sys, "argv", ["robocal", *_arguments(args, tmp_path)])
    with pytest.raises(SystemExit) as info:
        cli.main()
    _assert_refused(info.value.code, capfd.readouterr().err, named, tmp_path)


@pytest.mark.parametrize("args, named", [CASES[0], CASES[2]])
def test_in_a_process_of_its_own(tmp_path, args, named):
    """One option refused by the parser and one by the weights' loader in a real `python -m
    robocal`: the exit status through the shell, nothing else on stderr."""
    run = robocal(*_arguments(args, tmp_path))
    _assert_refused(run.returncode, run.stderr, named, tmp_path)
