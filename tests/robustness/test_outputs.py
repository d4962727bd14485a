"""The output contract: --out checked before any work, results written aside and moved into
place, inputs never overwritten, results tied to the exact files they were fitted on, and an
unexpected exception reported in one line with exit code 70 (issue 17)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import robocal.problem
from robocal import cli
from robocal.errors import RobocalError
from robocal.outputs import moved, preflight, staged
from robocal.provenance import changed_inputs, check_inputs, fingerprints, sha256


def test_out_that_is_an_existing_file_is_refused(tmp_path):
    target = tmp_path / "result"
    target.write_text("not a folder")
    with pytest.raises(RobocalError, match="existing file"):
        preflight(target)


def test_out_holding_an_input_is_refused(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("q,x\n0,0\n")
    with pytest.raises(RobocalError, match="holds input"):
        preflight(tmp_path, [data])  # `design --out .` beside its data file
    preflight(tmp_path / "out", [data])


def test_out_below_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(RobocalError, match="cannot create or write"):
        preflight(tmp_path / "notes.txt" / "out")


def test_failed_run_leaves_the_earlier_result_intact(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("earlier")
    with pytest.raises(ValueError), staged(out) as stage:
        (stage / "report.json").write_text("half")
        raise ValueError("the solve failed")
    assert (out / "report.json").read_text() == "earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no stage left behind


def test_successful_run_moves_every_file_into_place(tmp_path):
    out = tmp_path / "new" / "out"
    with staged(out) as stage:
        written = [stage / "report.json", stage / "sub" / "a.png"]
        written[1].parent.mkdir()
        for path in written:
            path.write_text(path.name)
        final = moved(written, stage, out)
    assert final == [out / "report.json", out / "sub" / "a.png"]
    assert [p.read_text() for p in final] == ["report.json", "a.png"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]


def fake_problem(folder: Path) -> SimpleNamespace:
    """What provenance reads of a problem: its path and config (robot, sensors, measurements)."""
    for name, text in (("problem.yaml", "robot: arm.urdf\n"), ("arm.urdf", "<robot/>"), ("data.csv", "q\n0\n")):
        (folder / name).write_text(text)
    config = SimpleNamespace(robot=Path("arm.urdf"), sensors=None, measurements=[SimpleNamespace(name="m", data=Path("data.csv"))])
    return SimpleNamespace(path=folder / "problem.yaml", config=config)


def test_sha256_of_a_file_and_of_a_folder(tmp_path):
    (tmp_path / "a.csv").write_bytes(b"1,2\n")
    assert sha256(tmp_path / "a.csv") == hashlib.sha256(b"1,2\n").hexdigest()
    before = sha256(tmp_path)
    (tmp_path / "b.csv").write_bytes(b"")
    assert sha256(tmp_path) != before  # a placement folder changes with any file in it


def test_result_refuses_inputs_edited_after_the_fit(tmp_path):
    problem = fake_problem(tmp_path)
    recorded = fingerprints(problem)
    assert set(recorded) == {"problem", "robot", "data:m"}
    assert changed_inputs(recorded, problem) == []
    (tmp_path / "arm.urdf").write_text("<robot name='edited'/>")
    with pytest.raises(RobocalError, match=r"robot \(.*arm.urdf\) changed after the calibration"):
        check_inputs(recorded, problem, tmp_path / "out", force=False, warn=None)
    warnings = []
    check_inputs(recorded, problem, tmp_path / "out", force=True, warn=warnings.append)
    assert len(warnings) == 1 and warnings[0].startswith("WARNING") and "arm.urdf" in warnings[0]


def test_result_without_recorded_inputs_says_it_cannot_be_checked(tmp_path):
    warnings = []
    check_inputs(None, fake_problem(tmp_path), tmp_path / "out", force=False, warn=warnings.append)
    assert "records no input hashes" in warnings[0]


def test_unexpected_exception_is_one_line_and_exit_70(tmp_path, monkeypatch, capsys):
    def broken(path):
        raise ZeroDivisionError("a bug")

    problem = tmp_path / "problem.yaml"
    problem.write_text("robot: arm.urdf\n")
    monkeypatch.setattr(robocal.problem, "load_problem", broken)
    monkeypatch.setattr(sys, "argv", ["robocal", "calibrate", str(problem), "--out", str(tmp_path / "out")])
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(SystemExit) as info:
        cli.main()
    assert info.value.code == cli.INTERNAL_ERROR == 70
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr and "ZeroDivisionError: a bug" in stderr
    [dump] = tmp_path.glob("robocal-traceback-*.txt")
    assert dump.name in stderr.replace("\n", "") or str(dump) in stderr.replace("\n", "")
    assert "Traceback" in dump.read_text() and "ZeroDivisionError" in dump.read_text()
    assert not (tmp_path / "out").exists()
