"""Cross-validation in the verdict (`calibrate --crossval`) and the prior-strength sweep
(`robocal crossval`) on a simulated overfit: the arm of verdict_problems with `full` joints
(42 parameters, 30 identifiable) from 8 postures within +-0.3 rad (72 residuals), true joint
offsets of 0.1 mrad, marker noise 0.1 mm.

Without a prior the 30 identifiable directions are fitted to 72 noisy numbers from a small
corner of the workspace: the training error falls below the noise while a held-out posture's
error grows far above the nominal robot's (which is off by less than the noise). With the
default priors (1 mm, 1 mrad, 10 mrad) the same fit stays near nominal and predicts held-out
postures better than it. What the test checks is that order, not tuned figures.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from robocal.analysis.crossval import cross_validate, reference_sigmas, with_prior_scale
from robocal.analysis.verdict import VerdictConfig, crossval_findings
from robocal.calibration import calibrate
from robocal.problem import load_problem
from tests.analysis.test_verdict import NO_PRIORS, cli_calibrate
from tests.analysis.verdict_problems import write_problem

OVERFIT = dict(parameters={"default": "full"}, postures=8, spread=0.3, true_offsets=np.full(6, 1e-4))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("overfit")
    (base / "no_prior").mkdir()
    (base / "default_prior").mkdir()
    return write_problem(base / "no_prior", priors=NO_PRIORS, **OVERFIT), write_problem(base / "default_prior", **OVERFIT)


def test_overfit_fails_with_the_crossval_evidence_and_the_default_prior_is_ok(folders, monkeypatch, capsys):
    no_prior, default_prior = folders
    code, report = cli_calibrate(monkeypatch, no_prior, "--crossval", "--fail-on", "fail")
    assert "cross-validation (5 folds), tool: held-out rms" in capsys.readouterr().out.replace("\n", " ")
    findings = {f["code"]: f for f in report["verdict"]["findings"]}
    assert code == 1 and report["verdict"]["level"] == "fail"
    worse = findings["crossval_worse_than_nominal"]
    evidence = worse["evidence"]
    assert evidence["k"] == 5 and evidence["held_out_after"] > evidence["held_out_before"] > evidence["training_after"]
    assert evidence["unstable"] and all(p["name"] in worse["sentence"] for p in evidence["unstable"])
    assert report["crossval"]["held_out"][0]["after"]["rms"] == evidence["held_out_after"]
    assert "no_prior_weak" in findings and findings["rank_deficient"]["level"] == "warning"
    page = (no_prior.parent / "out" / "report.html").read_text()
    cv = report["crossval"]["held_out"][0]
    assert "Held-out errors (cross-validation)" in page and "5-fold cross-validation (seed 0)" in page
    assert f"<td>{round(1e3 * cv['before']['rms'], 4):g}</td>" in page.replace('<td class="num">', "<td>")

    problem = load_problem(default_prior)
    cal = calibrate(problem)
    cal.crossval = cross_validate(problem, 5, 0, cal).report()
    report = cal.report()
    assert report["verdict"]["level"] == "ok"
    held_out = report["crossval"]["held_out"][0]
    assert held_out["after"]["rms"] < held_out["before"]["rms"]
    assert [f["code"] for f in report["verdict"]["findings"]] == ["rank_deficient"]  # info: the priors hold the 12 directions
    # crossval_overfit turns on exactly where held-out rms / training rms passes the threshold
    ratio = held_out["after"]["rms"] / cal.metrics[0]["after"]["rms"]
    (overfit,) = crossval_findings(cal, cal.crossval, VerdictConfig(crossval_ratio=0.99 * ratio))
    assert overfit.code == "crossval_overfit" and overfit.level == "warning"
    assert crossval_findings(cal, cal.crossval, VerdictConfig(crossval_ratio=1.01 * ratio)) == []


def test_prior_scale_replaces_the_robot_priors_only(folders):
    problem = load_problem(folders[1])
    declared = np.asarray(problem.map_problem.prior_sqrt_precision)
    np.testing.assert_array_equal(with_prior_scale(problem, 1.0).prior_sqrt_precision, declared)
    np.testing.assert_allclose(with_prior_scale(problem, 10.0).prior_sqrt_precision, declared / 10)
    assert not np.any(with_prior_scale(problem, 0.0).prior_sqrt_precision)
    # without declared priors the reference is robocal's defaults per kind: 1 mm, 1 mrad, 10 mrad
    bare = load_problem(folders[0])
    assert not np.any(bare.map_problem.prior_sqrt_precision)
    np.testing.assert_array_equal(reference_sigmas(bare), 1.0 / declared)


def test_crossval_command_recommends_the_prior(folders, monkeypatch, capsys):
    import sys

    from robocal import cli

    out = folders[0].parent / "sweep"
    monkeypatch.setattr(sys, "argv", ["robocal", "crossval", str(folders[0]), "--out", str(out), "--scales", "0,1,10"])
    cli.main()
    report = json.loads((out / "crossval.json").read_text())
    scores = {s["label"]: s["score"] for s in report["settings"]}
    assert scores["no prior"] > report["before"] > scores["x1"] and scores["x10"] > scores["x1"]
    assert report["recommended"] == 1.0 and "robocal's default prior sigmas" in report["recommendation"]
    assert (out / "crossval.png").read_bytes()[:4] == b"\x89PNG"
    assert "recommendation: use robocal's default prior sigmas" in capsys.readouterr().out.replace("\n", " ")
    monkeypatch.setattr(sys, "argv", ["robocal", "crossval", str(folders[0]), "--out", str(out), "--scales", "1,-1"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 2
