"""The verdict from a calibration report: each criterion flips it on its own, with its reason; results counted per verdict."""

from __future__ import annotations

import copy

import pytest

from robocal.errors import InputError
from robocal.fleet.criteria import Criteria, judge, load_criteria
from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.jobs import verdicts
from robocal.fleet.store.models import Result
from robocal.fleet.store.sessions import ingest
from tests.fleet.test_store import make_fleet

REPORT = {
    "verdict": {"level": "ok", "findings": [{"code": "held_at_nominal", "level": "info", "sentence": "2 parameters held at nominal", "evidence": {}}]},
    "measurements": [{"name": "tool", "n": 120, "rejected": 0, "after": {"rms": 1.7e-4}}],
    "parameters": [
        {"name": "elbow.offset", "unit": "rad", "nominal": 0.0, "estimate": 0.0008, "std": 1e-4},
        {"name": "tool.p0.x", "unit": "m", "nominal": 0.0, "estimate": 0.3, "std": 1e-3},  # no tolerance for its kind
    ],
}
KINDS = {"elbow.offset": "joint_offset", "tool.p0.x": "marker"}
CRITERIA = Criteria(tolerance={"joint_offset": 0.001}, max_rms=8.7e-4)


def changed(path, value):
    report = copy.deepcopy(REPORT)
    *keys, last = path
    target = report
    for k in keys:
        target = target[k]
    target[last] = value
    return report


def test_within_tolerance_and_a_trusted_calibration_passes():
    assert judge(REPORT, KINDS, CRITERIA).status == "pass"
    # 1.2 mrad is beyond 1 mrad, but by less than 3 std (0.3 mrad): not a defect
    assert judge(changed(("parameters", 0, "estimate"), 0.0012), KINDS, CRITERIA).status == "pass"


@pytest.mark.parametrize(
    "path, value, status, reason",
    [
        (("parameters", 0, "estimate"), -0.02, "rework", "elbow.offset: -0.02 rad from nominal"),
        (("measurements", 0, "rejected"), 10, "rework", "tool: 8% of rows rejected"),
        (("measurements", 0, "after"), {"rms": 1e-3}, "fail", "tool: rms error 1.000 mm > 0.870 mm"),
        (("verdict", "findings", 0, "level"), "fail", "fail", "held_at_nominal: 2 parameters held at nominal"),
        (("verdict", "findings", 0, "level"), "warning", "rework", "held_at_nominal: 2 parameters held at nominal"),
    ],
)
def test_each_criterion(path, value, status, reason):
    verdict = judge(changed(path, value), KINDS, CRITERIA)
    assert verdict.status == status and len(verdict.reasons) == 1 and reason in verdict.reasons[0], verdict


def test_bad_criteria_file_is_located(tmp_path):
    (tmp_path / "criteria.yaml").write_text("tolerance: {joint_offset: 0.001}\nsigma: 3\n")
    with pytest.raises(InputError, match="criteria.yaml"):
        load_criteria(tmp_path / "criteria.yaml")
    assert load_criteria(tmp_path / "none.yaml") == Criteria()


def test_verdicts_are_counted(tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    make_fleet(tmp_path / "batch", 3)
    ingest(engine, tmp_path / "batch")
    statuses = iter(["pass", "rework", "pass"])
    run(engine, work=lambda e, s: Result(session_id=s, parameters=[], report="{}", verdict={"status": next(statuses), "reasons": []}))
    assert verdicts(engine) == {"pass": 2, "rework": 1}


def test_a_criteria_file_error_names_its_line_or_field(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text("sigmas: 3\ntolerance: {joint_offset: [\n")
    with pytest.raises(InputError, match="not valid YAML") as error:
        load_criteria(path)
    assert error.value.line == 3
    path.write_text("sigmas: 3\nmax_rms: -1\n")
    with pytest.raises(InputError) as error:
        load_criteria(path)
    assert error.value.field == "max_rms"
    path.write_bytes(b"sigmas: \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_criteria(path)


@pytest.mark.parametrize(
    "text, field",
    [
        ("tolerance: {joint_offset: -0.001}\n", "tolerance.joint_offset"),  # would send every unit to rework
        ("tolerance: {joint_offset: .nan}\n", "tolerance.joint_offset"),  # would pass every unit
        ("tolerance: {joint_ofset: 0.001}\n", "tolerance.joint_ofset"),  # a misspelt kind would check nothing
        ("sigmas: .inf\n", "sigmas"),
        ("max_rms: .inf\n", "max_rms"),
        ("max_rejected_share: .nan\n", "max_rejected_share"),
    ],
)
def test_criteria_that_would_judge_nothing_or_everything_are_refused(tmp_path, text, field):
    path = tmp_path / "criteria.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        load_criteria(path)
    assert error.value.field == field, error.value
