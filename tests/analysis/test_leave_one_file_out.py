"""Leave-one-file-out cross-validation on real data: the MUKCa Panda unit 1 calibrated from two
plate placements (examples/mukca/several_placements). Holding one placement out must be exactly
a calibration from the other placement alone, scored on the held-out one: the fold estimates are
compared with `calibrate` on a problem file that names only the training placement, and the
held-out figures with that calibration's errors on the held-out placement."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import yaml

from robocal import cli
from robocal.analysis.crossval import cross_validate
from robocal.calibration import calibrate
from robocal.errors import RobocalError
from robocal.measurements.base import measurement_errors, summarize
from robocal.problem import load_problem
from tests.conftest import REPO

TWO = REPO / "examples" / "mukca" / "several_placements" / "panda_1_front_right.yaml"


@pytest.fixture(scope="module")
def folds():
    return cross_validate(load_problem(TWO), by_file=True)


def alone(tmp_path, keep: str):
    """The two-placement problem with only the measurement `keep`, written beside the original
    (its relative paths stay valid)."""
    config = yaml.safe_load(TWO.read_text())
    config["measurements"] = [m for m in config["measurements"] if m["name"] == keep]
    path = TWO.parent / f".{keep}_alone_{tmp_path.name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.parametrize(("held_out", "trained"), [("front", "right"), ("right", "front")])
def test_a_fold_is_the_calibration_from_the_other_placement(folds, tmp_path, held_out, trained):
    """The fold that holds a placement out and the calibration from the other placement alone
    solve the same cost from the same start (no frames: the baseline is the nominal robot), so
    they agree to the solver's tolerance (1e-10 relative on the step: far below a nanometre for
    origins of ~0.3 m); the held-out errors are that calibration's errors on the held-out folder."""
    assert folds.files == ["../data/panda_1/front", "../data/panda_1/right"] and folds.k == 2
    index = folds.files.index(f"../data/panda_1/{held_out}")
    fold = folds.folds[index]
    path = alone(tmp_path, trained)
    try:
        single = calibrate(load_problem(path))
    finally:
        path.unlink()
    np.testing.assert_allclose(fold.solution.theta, single.estimate, rtol=0, atol=1e-9)
    held = folds.calibration.problem.measurements[index]
    assert held.name == held_out and fold.held_out[index].all() and not fold.train[index].any()
    expected = summarize(measurement_errors(held, held.data, single.estimate))
    pooled = folds.report()["held_out"][index]["after"]
    assert pooled["mean"] == pytest.approx(expected["mean"], rel=1e-6)
    # Real data, independent of the code path: a placement the fit never saw still loses most of
    # its nominal error (docs/validation.md: 88-95 % on this unit's held-out placements).
    before = folds.report()["held_out"][index]["before"]["mean"]
    assert pooled["mean"] < 0.25 * before


def test_the_command_writes_the_files_it_held_out(tmp_path, monkeypatch, capsys):
    out = tmp_path / "loo"
    monkeypatch.setattr(sys, "argv", ["robocal", "crossval", str(TWO), "--by-file", "--scales", "1", "--out", str(out)])
    cli.main()
    report = json.loads((out / "crossval.json").read_text())
    assert report["held_out_files"] == ["../data/panda_1/front", "../data/panda_1/right"] and report["k"] == 2
    assert "held-out errors (leave one file out)" in capsys.readouterr().out.replace("\n", " ")


def test_one_data_file_or_k_with_by_file_is_refused(tmp_path, monkeypatch, capsys):
    one = REPO / "examples" / "mukca" / "panda_1_front.yaml"
    with pytest.raises(RobocalError, match=r"leave-one-file-out needs two or more data files; panda_1_front\.yaml reads one \(data/panda_1/front\)"):
        cross_validate(load_problem(one), by_file=True)
    for argv in ([str(one), "--by-file"], [str(TWO), "--by-file", "--k", "3"]):
        monkeypatch.setattr(sys, "argv", ["robocal", "crossval", *argv, "--out", str(tmp_path / "x")])
        with pytest.raises(SystemExit) as exit_:
            cli.main()
        assert exit_.value.code == 2
    assert not (tmp_path / "x").exists()
