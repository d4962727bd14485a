"""Issue 17's remaining named cases, each through the command line in-process: what was silently
wrong now says so, and what was a traceback or data loss is one located error with exit code 2."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from robocal import cli
from tests.cli.test_bad_input import PROBLEM, URDF, synthetic_rows, write_csv


def run(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["robocal", *map(str, args)])
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def said(phrase: str, text: str) -> bool:
    """Whether the console said `phrase`, however rich wrapped it (at spaces or inside a long path)."""
    return "".join(phrase.split()) in "".join(text.split())


@pytest.fixture(scope="module")
def arm(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("arm")
    (folder / "arm.urdf").write_text(URDF)
    write_csv(folder / "train.csv", synthetic_rows(folder / "arm.urdf", 12, seed=1))
    return folder


def problem(folder: Path, **solver) -> Path:
    config = yaml.safe_load(yaml.safe_dump(PROBLEM))
    if solver:
        config["solver"] = solver
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_iteration_limit_is_a_warning_not_only_a_flag(arm, tmp_path, monkeypatch, capsys):
    shutil.copytree(arm, tmp_path / "a")
    code, out, _ = run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a", max_iterations=1), "--out", tmp_path / "out")
    assert code == 0 and said("without converging", out)


def test_two_rows_are_said_to_be_fitted_exactly(arm, tmp_path, monkeypatch, capsys):
    shutil.copytree(arm, tmp_path / "a")
    lines = (tmp_path / "a" / "train.csv").read_text().splitlines()
    (tmp_path / "a" / "train.csv").write_text("\n".join(lines[:2]) + "\n")  # header and one row: 6 residuals, 8 parameters
    code, out, _ = run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a"), "--out", tmp_path / "out")
    assert code == 0 and said("fit these data exactly", out)


def test_out_that_is_a_file_fails_before_the_solve(arm, tmp_path, monkeypatch, capsys):
    shutil.copytree(arm, tmp_path / "a")
    (tmp_path / "result").write_text("keep me")
    code, _, err = run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a"), "--out", tmp_path / "result")
    assert code == 2 and said("existing file", err) and "solving" not in err
    assert (tmp_path / "result").read_text() == "keep me"


def test_design_out_beside_its_data_is_refused(arm, tmp_path, monkeypatch, capsys):
    shutil.copytree(arm, tmp_path / "a")
    before = (tmp_path / "a" / "train.csv").read_bytes()
    code, _, err = run(monkeypatch, capsys, "design", problem(tmp_path / "a"), "--n", 3, "--out", tmp_path / "a")
    assert code == 2 and said("holds input", err) and "problem.yaml" in err
    assert (tmp_path / "a" / "train.csv").read_bytes() == before


def test_frames_file_without_rpy_is_a_located_error(arm, tmp_path, monkeypatch, capsys):
    shutil.copytree(arm, tmp_path / "a")
    result = tmp_path / "result"
    result.mkdir()
    (result / "report.json").write_text('{"parameters": [], "identifiability": {}}')
    (result / "frames.yaml").write_text(yaml.safe_dump({"tracker": {"initial": {"xyz": [0, 0, 0]}}}))
    code, _, err = run(monkeypatch, capsys, "evaluate", problem(tmp_path / "a"), "--result", result, "--data", tmp_path / "a" / "train.csv")
    assert code == 2 and said(str(result / "frames.yaml"), err) and "rpy" in err


@pytest.mark.parametrize("option, value", [("--objects", ","), ("--scales", "-1,0"), ("--scales", "1,inf"), ("--methods", " , ")])
def test_grasp_evaluate_lists(tmp_path, monkeypatch, capsys, option, value):
    code, _, err = run(monkeypatch, capsys, "grasp", "evaluate", "--out", tmp_path / "g", option, value)
    assert code == 2 and said(option, err)
    assert not (tmp_path / "g").exists()


def test_teleop_interactive_without_a_display(tmp_path, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")
    poses = tmp_path / "poses.csv"
    poses.write_text("T0\n0\n")
    code, _, err = run(monkeypatch, capsys, "teleop", "show", "--joints", poses, "--row", 1, "--interactive")
    assert code == 2 and said("--interactive needs a display", err)


def test_all_identical_rows_are_not_a_trusted_calibration(arm, tmp_path, monkeypatch, capsys):
    """Twelve copies of one posture: six residual directions for eight parameters at most, so the
    joint offsets (fitted without a prior here) are not determined; the verdict says so instead
    of a '100 % removed' that means nothing."""
    shutil.copytree(arm, tmp_path / "a")
    header, first = (tmp_path / "a" / "train.csv").read_text().splitlines()[:2]
    (tmp_path / "a" / "train.csv").write_text("\n".join([header] + [first] * 12) + "\n")
    code, out, _ = run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a"), "--out", tmp_path / "out", "--fail-on", "warning")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 1 and report["verdict"]["level"] in ("warning", "fail"), report["verdict"]
    assert {"rank_deficient", "no_prior_weak"} & {f["code"] for f in report["verdict"]["findings"]}
    assert said("verdict:", out)


def test_a_200_mb_data_file_is_refused_before_it_is_read(arm, tmp_path, monkeypatch, capsys):
    """A sparse 200 MB train.csv (no disk used): refused by its size, one located line, at once."""
    shutil.copytree(arm, tmp_path / "a")
    with open(tmp_path / "a" / "train.csv", "r+b") as handle:
        handle.truncate(200 * 2**20)
    code, _, err = run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a"), "--out", tmp_path / "out")
    assert code == 2 and said(str(tmp_path / "a" / "train.csv"), err) and said("200 MiB is more than the 100 MiB", err)
    assert not (tmp_path / "out").exists()


def test_evaluate_html_never_overwrites_and_needs_data(arm, tmp_path, monkeypatch, capsys):
    """--html is checked before the evaluation runs: an existing file (here the data file itself)
    is refused and left as it was; with --truth there is no held-out page to write."""
    shutil.copytree(arm, tmp_path / "a")
    data = tmp_path / "a" / "train.csv"
    before = data.read_bytes()
    code, _, err = run(monkeypatch, capsys, "evaluate", problem(tmp_path / "a"), "--result", tmp_path / "none", "--data", data, "--html", data)
    assert code == 2 and said(f"{data}: exists; give a new file name", err) and data.read_bytes() == before
    code, _, err = run(
        monkeypatch,
        capsys,
        "evaluate",
        problem(tmp_path / "a"),
        "--result",
        tmp_path / "none",
        "--truth",
        tmp_path / "a" / "arm.urdf",
        "--html",
        tmp_path / "page.html",
    )
    assert code == 2 and said("--html: only with --data", err) and not (tmp_path / "page.html").exists()


def test_tables_are_not_cut_where_the_output_is_not_a_terminal(arm, tmp_path):
    """Output to a file or a pipe is LOG_WIDTH wide unless COLUMNS says otherwise: a 40-character
    measurement name and every column of the errors table come through whole, not as 'measureme…'.
    A subprocess, so that the consoles are made without the COLUMNS=80 that pytest-xdist's workers
    inherit (and that a user's COLUMNS would set, as it should)."""
    import os
    import subprocess

    shutil.copytree(arm, tmp_path / "a")
    config = yaml.safe_load(problem(tmp_path / "a").read_text())
    name = "flange markers seen by the lab's tracker"
    config["measurements"][0]["name"] = name
    (tmp_path / "a" / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"NO_COLOR": "1", "JAX_PLATFORMS": "cpu"}
    argv = [sys.executable, "-m", "robocal", "calibrate", str(tmp_path / "a" / "problem.yaml"), "--out", str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and name in done.stdout and "max after" in done.stdout and "…" not in done.stdout
