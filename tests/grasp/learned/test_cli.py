"""Bad options of the learned controller's commands: one line naming the option, exit 2,
before any work."""

import json
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


def test_a_folder_where_one_network_was_trained_starts_its_next_run(tiny_dataset, tmp_path, monkeypatch, capfd):
    """`grasp train --networks estimator --init A`, where A holds only an estimator run: the new
    run starts from A's result (its first validation loss is A's, recomputed), and prints which
    step's network is its result; --weights from such a folder is refused before anything is
    written, since the predictor it would need is not there."""
    small = ["--data", str(tiny_dataset), "--networks", "estimator", "--batch", "16", "--width", "16", "--channels", "2,4,4,4", "--eval-every", "2"]

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["robocal", "grasp", "train", *small, *map(str, args)])
        try:
            cli.main()
        except SystemExit as exit:
            return exit.code
        return 0

    assert run("--steps", "4", "--out", tmp_path / "a") == 0
    assert not (tmp_path / "a" / "predictor").exists()
    first = json.loads((tmp_path / "a" / "estimator" / "state.json").read_text())
    capfd.readouterr()
    assert run("--steps", "2", "--init", tmp_path / "a", "--out", tmp_path / "b") == 0
    printed = " ".join(capfd.readouterr().out.split())  # the console wraps long lines
    second = json.loads((tmp_path / "b" / "estimator" / "state.json").read_text())
    step = second["best"][0]
    assert f"the run's result is step {step}'s network, force error (N) {second['best'][1]:.4g}, {dict(second['quiet'])[step]:.3g} N reported" in printed
    result = dict(first["scores"])[first["best"][0]]
    assert second["scores"][0][1] == pytest.approx(result, rel=1e-12)
    assert run("--steps", "2", "--init", tmp_path / "a", "--out", tmp_path / "c", "--weights", tmp_path / "w") == 2
    assert "predictor" in capfd.readouterr().err and not (tmp_path / "c").exists() and not (tmp_path / "w").exists()


def test_the_evaluation_records_the_predictor_shift_it_ran_with(tmp_path, monkeypatch):
    """The weights' own shift unless --predictor-shift overrides it: results.json says which."""
    short = ["--objects", "sphere_35", "--grasps", "1", "--forces", "1", "--methods", "controller", "--ramp", "0.05", "--hold", "0.05", "--workers", "1"]
    for extra, shift in (([], 1), (["--predictor-shift", "0"], 0)):
        out = tmp_path / f"shift{shift}"
        monkeypatch.setattr(sys, "argv", ["robocal", "grasp", "evaluate", "--controller", "learned", *short, *extra, "--out", str(out)])
        cli.main()
        assert json.loads((out / "results.json").read_text())["config"]["predictor_shift"] == shift
