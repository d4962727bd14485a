"""The verdict on small simulated calibrations (robocal.analysis.verdict), each built to produce
its findings; the figures are checked against what the simulation put in.

The arm (examples/fleet/arm_6r.urdf) has six revolute joints and a fixed tool mount; with `full`
joints it has 7 x 6 = 42 parameters. Three markers on the tool give its full pose, so (Everett and
Hollerbach's count) 4 per revolute joint + 6 = 30 of them are identifiable: 12 directions are not.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from rich.console import Console

from robocal import cli
from robocal.analysis.verdict import Finding, Verdict, VerdictConfig, judge
from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.problem import load_problem
from robocal.report.console import print_summary
from robocal.report.html import write_html_report
from tests.analysis.verdict_problems import NOISE, write_problem

PARAMETERS, IDENTIFIABLE = 42, 30
NO_PRIORS = {"translation": None, "rotation": None, "joint_offset": None}


def run(tmp_path, **kwargs):
    return calibrate(load_problem(write_problem(tmp_path, **kwargs)))


def by_code(verdict: Verdict) -> dict[str, Finding]:
    return {f.code: f for f in verdict.findings}


def test_level_is_the_worst_finding():
    assert Verdict().level == "ok" and Verdict().to_dict() == {"level": "ok", "findings": []}
    warning, fail = Finding("a", "warning", "w"), Finding("b", "fail", "f")
    assert Verdict((warning,)).level == "warning" and Verdict((warning, fail)).level == "fail"
    assert Verdict((warning,)).at_least("warning") and not Verdict((warning,)).at_least("fail") and Verdict().at_least("ok")
    assert Verdict((warning, fail)).codes() == ["a", "b"]
    assert Verdict((Finding("c", "info", "i"),)).level == "ok"


def cli_calibrate(monkeypatch, problem, *options) -> tuple[int, dict | None]:
    """`robocal calibrate` in this process: (exit code, report.json or None)."""
    out = problem.parent / "out"
    monkeypatch.setattr(sys, "argv", ["robocal", "calibrate", str(problem), "--out", str(out), *options])
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    report = out / "report.json"
    return code, json.loads(report.read_text()) if report.exists() else None


def test_clean_calibration_is_ok(tmp_path, monkeypatch):
    problem = write_problem(tmp_path, true_offsets=np.full(6, 5e-4))
    code, report = cli_calibrate(monkeypatch, problem, "--fail-on", "warning")
    assert code == 0 and report["verdict"] == {"level": "ok", "findings": []}
    assert cli_calibrate(monkeypatch, problem, "--fail-on", "never")[0] == 2


def test_held_out_worse_than_nominal(tmp_path, monkeypatch, capsys):
    """Calibrated on an arm whose joint offsets are 0.5 mrad, evaluated on the same arm after its
    zeros were reset (the nominal robot): the calibration now adds its 0.5 mrad corrections (about
    0.3 mm at the tool) to 0.1 mm noise, so it is worse than nominal on these held-out data."""
    problem = write_problem(tmp_path, true_offsets=np.full(6, 5e-4))
    assert cli_calibrate(monkeypatch, problem)[0] == 0
    (tmp_path / "reset").mkdir()
    write_problem(tmp_path / "reset", seed=7)
    capsys.readouterr()
    monkeypatch.setattr(
        sys, "argv", ["robocal", "evaluate", str(problem), "--result", str(tmp_path / "out"), "--data", str(tmp_path / "reset" / "tool.csv"), "--json"]
    )
    cli.main()
    report = json.loads(capsys.readouterr().out)
    (finding,) = [f for f in report["verdict"]["findings"] if f["code"] == "held_out_worse_than_nominal"]
    assert report["verdict"]["level"] == "fail" and finding["evidence"]["after"] > 1.5 * finding["evidence"]["before"]


def test_sizes_and_residuals(tmp_path):
    """shoulder_pan's true offset is 0.3 rad (17 deg, 30 prior sigmas of 0.01 rad); the marker
    noise of `loud` is ten times its declared sigma, that of `quiet` a hundredth."""
    cal = run(tmp_path, true_offsets=[0.3, 0, 0, 0, 0, 0], bodies={"loud": (10 * NOISE, NOISE), "quiet": (0.1 * NOISE, 10 * NOISE)})
    found = by_code(cal.verdict)
    assert cal.verdict.level == "fail" and set(found) == {"implausible_size", "beyond_prior", "misfit", "small_residuals"}
    (moved,) = found["implausible_size"].evidence["parameters"]
    assert moved["name"] == "shoulder_pan.offset" and moved["change"] == pytest.approx(0.3, abs=1e-3)
    assert "17.2 deg" in found["implausible_size"].sentence
    (beyond,) = found["beyond_prior"].evidence["parameters"]
    assert beyond["sigmas"] == pytest.approx(30.0, rel=0.01)
    # 180 residuals of `loud`, 6 parameters: rms / sigma = 10 sqrt(1 - 6/180), chi-square spread ~5 %
    assert found["misfit"].evidence["measurement"] == "loud"
    assert found["misfit"].evidence["rms_over_sigma"] == pytest.approx(10 * np.sqrt(1 - 6 / 180), rel=0.15)
    assert found["small_residuals"].evidence["measurement"] == "quiet" and found["small_residuals"].evidence["rms_over_sigma"] < 0.5
    # the thresholds decide: a 20 deg limit and a looser prior bound accept the same estimate
    json.dumps(cal.report())  # plain numbers only: report.json takes it as it is
    relaxed = judge(cal, VerdictConfig(max_rotation=np.radians(20), prior_sigmas=40, misfit=200, small_residuals=1e-3))
    assert relaxed.level == "ok"


def test_iteration_limit(tmp_path, monkeypatch):
    problem = write_problem(tmp_path, true_offsets=np.full(6, 5e-3), solver={"max_iterations": 1})
    code, report = cli_calibrate(monkeypatch, problem, "--fail-on", "fail")
    findings = {f["code"]: f for f in report["verdict"]["findings"]}  # beside it: the misfit of where it stopped
    assert code == 1 and report["verdict"]["level"] == "fail" and findings["iteration_limit"]["evidence"]["iterations"] == 1


def test_no_prior_and_too_few_rows(tmp_path):
    """Four postures (36 residuals) for 42 parameters without priors: four tool poses are 24
    independent numbers, so 42 - 24 = 18 directions are undetermined."""
    cal = run(tmp_path, postures=4, parameters={"default": "full"}, priors=NO_PRIORS, true_offsets=np.full(6, 1e-3))
    found = by_code(cal.verdict)
    assert cal.verdict.level == "fail" and {"too_few_residuals", "rank_deficient", "no_prior_weak"} <= set(found)
    assert found["too_few_residuals"].evidence == {"residuals": 36, "parameters": PARAMETERS}
    assert len(found["rank_deficient"].evidence["directions"]) == PARAMETERS - 4 * 6
    assert found["rank_deficient"].level == "warning" and found["rank_deficient"].evidence["unheld"] == PARAMETERS - 4 * 6  # no prior holds them
    weak = {e["name"] for e in found["no_prior_weak"].evidence["parameters"]}
    assert set(found["rank_deficient"].evidence["parameters"]) <= weak  # undetermined: no std at all


def test_held_at_nominal(tmp_path):
    cal = run(tmp_path, parameters={"default": "full", "select": "identifiable"}, true_offsets=np.full(6, 5e-4))
    found = by_code(cal.verdict)
    assert set(found) == {"held_at_nominal"} and found["held_at_nominal"].level == "info" and cal.verdict.level == "ok"
    assert found["held_at_nominal"].evidence["n_parameters"] == PARAMETERS
    assert len(found["held_at_nominal"].evidence["parameters"]) == PARAMETERS - IDENTIFIABLE
    assert f"{PARAMETERS - IDENTIFIABLE} of the robot's {PARAMETERS} parameters held at nominal" in found["held_at_nominal"].sentence
    console = Console(record=True, width=400)
    print_summary(cal, console)
    text = console.export_text()
    assert f"{IDENTIFIABLE} parameters fitted, the data determine {IDENTIFIABLE} directions of them; {PARAMETERS - IDENTIFIABLE} more held at nominal" in text
    assert "verdict: ok: nothing found against this calibration" in text and "(held_at_nominal)" in text
    write_html_report(cal, tmp_path / "report.html", {})
    html = (tmp_path / "report.html").read_text()
    assert html.index("<h2>Verdict</h2>") < html.index("<h2>Errors") and "held_at_nominal" in html


def test_thresholds_are_validated(tmp_path):
    path = write_problem(tmp_path, postures=2, verdict={"prior_sigmas": -1})
    with pytest.raises(InputError, match="verdict.prior_sigmas"):
        load_problem(path)
