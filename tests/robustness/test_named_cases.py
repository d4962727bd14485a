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
from tests.robustness.contract import hashes


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


@pytest.mark.parametrize("inside", [False, True])
def test_design_out_in_the_result_it_reads_is_refused(arm, tmp_path, monkeypatch, capsys, inside):
    """`design --result R --out R` (or a folder in R) would mix the selection into the calibration it was made from."""
    shutil.copytree(arm, tmp_path / "a")
    result = tmp_path / "result"
    assert run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a"), "--out", result)[0] == 0
    before = hashes(result)
    out = result / "design" if inside else result
    code, _, err = run(monkeypatch, capsys, "design", tmp_path / "a" / "problem.yaml", "--n", 3, "--result", result, "--out", out)
    expected = f"{out}: --out is inside the input folder {result}" if inside else f"{out}: --out holds input file(s) {result}"
    assert code == 2 and said(expected, err)
    assert hashes(result) == before


MUKCA = Path(__file__).resolve().parents[2] / "examples" / "mukca"


@pytest.fixture()
def placement(tmp_path) -> Path:
    """A copy of a MUKCa problem whose data are a placement folder: tmp_path/p.yaml, tmp_path/data/panda_1/front."""
    shutil.copytree(MUKCA / "data" / "urdf", tmp_path / "data" / "urdf")
    shutil.copytree(MUKCA / "data" / "panda_1" / "front", tmp_path / "data" / "panda_1" / "front")
    shutil.copy(MUKCA / "panda_1_front.yaml", tmp_path / "p.yaml")
    return tmp_path / "data" / "panda_1" / "front"


@pytest.mark.parametrize("command", ["calibrate", "crossval", "design"])
def test_out_inside_a_placement_folder_is_refused(placement, monkeypatch, capsys, command):
    """Results written into a placement folder would change the input (and the hash the result
    records of it, so that `evaluate` would then refuse the calibration as stale)."""
    before = hashes(placement)
    args = ["--n", 3] if command == "design" else []
    code, _, err = run(monkeypatch, capsys, command, placement.parents[2] / "p.yaml", "--out", placement / "result", *args)
    assert code == 2 and said(f"{placement / 'result'}: --out is inside the input folder {placement}", err)
    assert hashes(placement) == before


def test_more_folds_than_rows_are_refused_before_the_solve(arm, tmp_path, monkeypatch, capsys):
    """`crossval --k` (and `calibrate --crossval`'s five folds) above a measurement's rows: one
    error naming the data file, before the calibration runs."""

    def solve(problem):
        raise AssertionError("the calibration ran")

    monkeypatch.setattr("robocal.calibration.calibrate", solve)
    shutil.copytree(arm, tmp_path / "a")
    data = tmp_path / "a" / "train.csv"
    code, _, err = run(monkeypatch, capsys, "crossval", problem(tmp_path / "a"), "--k", 20, "--out", tmp_path / "out")
    assert code == 2 and said(f"{data}: measurement 'tip & <markers>' has 12 rows, fewer than the 20 folds", err)
    data.write_text("\n".join(data.read_text().splitlines()[:5]) + "\n")
    code, _, err = run(monkeypatch, capsys, "calibrate", problem(tmp_path / "a"), "--crossval", "--out", tmp_path / "out")
    assert code == 2 and said(f"{data}: measurement 'tip & <markers>' has 4 rows, fewer than the 5 folds", err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["crossval", "design", "evaluate", "simulate", "grasp dataset", "grasp train", "station"])
def test_a_negative_seed_is_a_usage_error(arm, tmp_path, monkeypatch, capsys, command):
    """numpy takes no seed below 0: refused where the option is read, not an internal error later."""
    shutil.copytree(arm, tmp_path / "a")
    args = {
        "crossval": ["crossval", problem(tmp_path / "a"), "--out", tmp_path / "out"],
        "design": ["design", problem(tmp_path / "a"), "--n", 3, "--out", tmp_path / "out"],
        "evaluate": ["evaluate", problem(tmp_path / "a"), "--result", tmp_path / "none", "--truth", tmp_path / "a" / "arm.urdf"],
        "simulate": ["simulate", "markers", "--robot", tmp_path / "a" / "arm.urdf", "--out", tmp_path / "out"],
        "grasp dataset": ["grasp", "dataset", "--out", tmp_path / "out"],
        "grasp train": ["grasp", "train", "--data", tmp_path / "a", "--out", tmp_path / "out"],
        "station": ["station", "--server", "http://127.0.0.1:9", "--token", "t", "--model", "m", "--spool", tmp_path / "out"],
    }[command]
    code, _, err = run(monkeypatch, capsys, *args, "--seed", -1)
    assert code == 2 and said("Invalid value for '--seed'", err) and said("greater than or equal to 0", err)
    assert not (tmp_path / "out").exists()


def test_design_keeps_a_measurement_named_like_a_path_inside_out(arm, tmp_path, monkeypatch, capsys):
    """A measurement's name becomes a file name of its own (as the result's figures do): `../x`
    writes no file outside --out."""
    shutil.copytree(arm, tmp_path / "a")
    config = yaml.safe_load(problem(tmp_path / "a").read_text())
    config["measurements"][0]["name"] = "../../escaped"
    (tmp_path / "a" / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp_path / "x" / "y" / "out"
    code, _, err = run(monkeypatch, capsys, "design", tmp_path / "a" / "problem.yaml", "--n", 3, "--out", out)
    assert code == 0, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.csv")) == [Path("a/train.csv"), out.relative_to(tmp_path) / ".._.._escaped.csv"]
    (sample,) = json.loads((out / "selection.json").read_text())["samples"]
    assert sample["written"] == ".._.._escaped.csv" and len((out / ".._.._escaped.csv").read_text().splitlines()) == 1 + 3


def test_design_writes_two_names_of_one_file_stem_to_two_files(arm, tmp_path, monkeypatch, capsys):
    shutil.copytree(arm, tmp_path / "a")
    config = yaml.safe_load(problem(tmp_path / "a").read_text())
    config["measurements"] = [config["measurements"][0] | {"name": name} for name in ("a/b", "a_b")]
    (tmp_path / "a" / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    code, _, err = run(monkeypatch, capsys, "design", tmp_path / "a" / "problem.yaml", "--n", 24, "--out", tmp_path / "out")
    assert code == 0, err
    samples = json.loads((tmp_path / "out" / "selection.json").read_text())["samples"]
    assert [(s["measurement"], s["written"]) for s in samples] == [("a/b", "a_b.csv"), ("a_b", "a_b_1.csv")]
    assert all(len((tmp_path / "out" / s["written"]).read_text().splitlines()) == 1 + 12 for s in samples)


def test_design_refuses_a_placement_folder_before_the_long_work(placement, monkeypatch, capsys):
    """`design` copies chosen rows of a data table; a placement folder is refused at once, naming
    it, not after the Jacobians as a data file that 'cannot be read'."""

    def criterion(*args):
        raise AssertionError("the Jacobians were computed")

    monkeypatch.setattr("robocal.design.design_criterion", criterion)
    out = placement.parents[2] / "out"
    code, _, err = run(monkeypatch, capsys, "design", placement.parents[2] / "p.yaml", "--n", 3, "--out", out)
    assert code == 2 and said(f"{placement}: measurement 'front' reads a placement folder", err) and not out.exists()


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


def test_evaluate_html_inside_a_placement_folder_is_refused(placement, monkeypatch, capsys):
    """The held-out page written into the placement folder it evaluates would change that input."""
    before = hashes(placement)
    page = placement / "page.html"
    code, _, err = run(
        monkeypatch, capsys, "evaluate", placement.parents[2] / "p.yaml", "--result", placement.parents[2] / "none", "--data", placement, "--html", page
    )
    assert code == 2 and said(f"{page}: is inside the input folder {placement}", err)
    assert hashes(placement) == before


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
