"""Bad options of the learned controller's commands: one line naming the option, exit 2,
before any work."""

import pytest

from tests.grasp.test_evaluation import robocal


@pytest.mark.parametrize(
    "args, named",
    [
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
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, named):
    run = robocal(*(a.replace("{tmp}", str(tmp_path)) for a in args), "--out", tmp_path / "out")
    assert run.returncode == 2 and named in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not (tmp_path / "out").exists()
