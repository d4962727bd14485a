"""Reading a result folder of `robocal calibrate` back (robocal.results.read_results, for `evaluate`,
`analyze --result` and `design --result`): a damaged report.json or frames.yaml is one located
error naming the file and the field, exit code 2, never an internal error; a report without an
`inputs` block (an older robocal) is still read, with a warning."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from robocal import cli
from robocal.errors import InputError
from robocal.results import read_results
from tests.cli.test_bad_input import PROBLEM, URDF, synthetic_rows, write_csv
from tests.robustness.contract import hashes


def main(monkeypatch, *args) -> int:
    """The exit code of `robocal ARGS` run in this process."""
    monkeypatch.setattr(sys, "argv", ["robocal", *map(str, args)])
    monkeypatch.setenv("COLUMNS", "500")  # one line per message
    try:
        cli.main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def run(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    code = main(monkeypatch, *args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    """A folder with arm.urdf, train.csv, problem.yaml and `result`, the output of `robocal calibrate`."""
    folder = tmp_path_factory.mktemp("arm")
    (folder / "arm.urdf").write_text(URDF)
    write_csv(folder / "train.csv", synthetic_rows(folder / "arm.urdf", 12, seed=1))
    (folder / "problem.yaml").write_text(yaml.safe_dump(PROBLEM, sort_keys=False))
    with pytest.MonkeyPatch.context() as patch:
        assert main(patch, "calibrate", folder / "problem.yaml", "--out", folder / "result") == 0
    return folder


def damaged(calibrated: Path, tmp_path: Path, change: Callable[[dict], None]) -> Path:
    """A copy of the result folder with report.json changed by `change`."""
    result = tmp_path / "result"
    shutil.copytree(calibrated / "result", result)
    report = json.loads((result / "report.json").read_text())
    change(report)
    (result / "report.json").write_text(json.dumps(report))
    return result


def _set(key: str, value) -> Callable[[dict], None]:
    return lambda report: report["inputs"].__setitem__(key, value) if key != "inputs" else report.__setitem__("inputs", value)


DAMAGED_INPUTS = [
    pytest.param(_set("inputs", []), "inputs", "valid dictionary", id="inputs-list"),
    pytest.param(_set("inputs", "x"), "inputs", "valid dictionary", id="inputs-string"),
    pytest.param(_set("inputs", None), "inputs", "valid dictionary", id="inputs-null"),
    pytest.param(_set("problem", "x"), "inputs.problem", "valid dictionary", id="role-string"),
    pytest.param(lambda r: r["inputs"]["problem"].pop("sha256"), "inputs.problem.sha256", "Field required", id="no-sha256"),
    pytest.param(lambda r: r["inputs"]["problem"].pop("path"), "inputs.problem.path", "Field required", id="no-path"),
    pytest.param(lambda r: r["inputs"]["problem"].__setitem__("sha256", 5), "inputs.problem.sha256", "valid string", id="sha256-number"),
    pytest.param(lambda r: r["inputs"]["problem"].__setitem__("sha256", "x"), "inputs.problem.sha256", "pattern", id="sha256-not-hex"),
]


@pytest.mark.parametrize("change, field, message", DAMAGED_INPUTS)
def test_a_damaged_inputs_block_is_an_input_error_naming_the_field(calibrated, tmp_path, change, field, message):
    result = damaged(calibrated, tmp_path, change)
    with pytest.raises(InputError) as info:
        read_results(result)
    assert info.value.path == result / "report.json" and info.value.field == field and message in info.value.detail


@pytest.mark.parametrize("command", ["evaluate", "analyze", "design"])
@pytest.mark.parametrize("change, field, message", DAMAGED_INPUTS[:1] + DAMAGED_INPUTS[3:5])
def test_commands_reading_a_result_say_which_field_is_damaged(calibrated, tmp_path, monkeypatch, capsys, command, change, field, message):
    result = damaged(calibrated, tmp_path, change)
    before = hashes(calibrated) | hashes(result)
    problem, data = calibrated / "problem.yaml", calibrated / "train.csv"
    args = {
        "evaluate": ["evaluate", problem, "--result", result, "--data", data, "--html", tmp_path / "held_out.html"],
        "analyze": ["analyze", problem, "--result", result],
        "design": ["design", problem, "--result", result, "--n", 3, "--out", tmp_path / "design"],
    }[command]
    code, _, err = run(monkeypatch, capsys, *args)
    assert code == 2, err
    assert f"error: {result / 'report.json'}, field '{field}': " in err and message in err and "internal error" not in err
    assert hashes(calibrated) | hashes(result) == before
    assert not (tmp_path / "held_out.html").exists() and not (tmp_path / "design").exists()


def test_a_report_without_inputs_is_read_with_a_warning(calibrated, tmp_path, monkeypatch, capsys):
    result = damaged(calibrated, tmp_path, lambda report: report.pop("inputs"))
    assert read_results(result).inputs is None
    code, _, err = run(monkeypatch, capsys, "evaluate", calibrated / "problem.yaml", "--result", result, "--data", calibrated / "train.csv")
    assert code == 0, err
    assert "records no input hashes" in err


def test_the_recorded_inputs_are_read_as_written(calibrated):
    stored = read_results(calibrated / "result")
    report = json.loads((calibrated / "result" / "report.json").read_text())
    assert stored.inputs == report["inputs"] and set(stored.inputs) == {"problem", "robot", "data:tip & <markers>"}


@pytest.mark.parametrize("name", ["report.json", "frames.yaml"])
def test_a_folder_in_place_of_a_result_file_is_an_input_error(calibrated, tmp_path, monkeypatch, capsys, name):
    result = tmp_path / "result"
    shutil.copytree(calibrated / "result", result)
    (result / name).unlink()
    (result / name).mkdir()
    with pytest.raises(InputError) as info:
        read_results(result)
    assert info.value.path == result / name and "cannot read" in info.value.detail
    code, _, err = run(monkeypatch, capsys, "evaluate", calibrated / "problem.yaml", "--result", result, "--data", calibrated / "train.csv")
    assert code == 2 and f"error: {result / name}: cannot read file" in err and "internal error" not in err


def test_frames_that_are_not_yaml_are_one_line_naming_the_line(calibrated, tmp_path, monkeypatch, capsys):
    result = tmp_path / "result"
    shutil.copytree(calibrated / "result", result)
    (result / "frames.yaml").write_text("tracker:\n  initial: {xyz: [1, 2\n  rpy: 3\n")
    with pytest.raises(InputError) as info:
        read_results(result)
    assert info.value.path == result / "frames.yaml" and info.value.line == 3 and "not valid YAML" in info.value.detail
    assert "\n" not in str(info.value)
    code, _, err = run(monkeypatch, capsys, "evaluate", calibrated / "problem.yaml", "--result", result, "--data", calibrated / "train.csv")
    assert code == 2 and err.strip() == f"error: {info.value}"


@pytest.mark.parametrize(
    "frames, field",
    [
        ({"tracker": {"initial": {"xyz": [0, 0, 0]}}}, "tracker.initial.rpy"),
        ({"tracker": {"initial": {"xyz": [0, 0], "rpy": [0, 0, 0]}}}, "tracker.initial.xyz[2]"),
        ({"tracker": "x"}, "tracker"),
    ],
)
def test_a_damaged_frame_names_its_field(calibrated, tmp_path, frames, field):
    result = tmp_path / "result"
    shutil.copytree(calibrated / "result", result)
    (result / "frames.yaml").write_text(yaml.safe_dump(frames))
    with pytest.raises(InputError) as info:
        read_results(result)
    assert info.value.path == result / "frames.yaml" and info.value.field == field


@pytest.mark.parametrize("key, value", [("estimate", "nan"), ("baseline", "inf")])
def test_a_parameter_that_is_not_a_finite_number_is_named(calibrated, tmp_path, key, value):
    result = damaged(calibrated, tmp_path, lambda report: report["parameters"][2].__setitem__(key, value))
    with pytest.raises(InputError, match="finite number") as info:
        read_results(result)
    assert info.value.path == result / "report.json" and info.value.field == f"parameters[2].{key}"


def _gauge(twist: dict) -> Callable[[dict], None]:
    return lambda report: report.__setitem__("gauge", {"directions": [{"twist": twist, "parameters": {}}]})


@pytest.mark.parametrize(
    "change, field, message",
    [
        pytest.param(lambda r: r.__setitem__("parameters", 3), "parameters", "valid list", id="parameters-number"),
        pytest.param(lambda r: r["parameters"][1].pop("baseline"), "parameters[1].baseline", "Field required", id="no-baseline"),
        pytest.param(lambda r: r["parameters"][0].__setitem__("estimate", True), "parameters[0].estimate", "boolean", id="estimate-boolean"),
        pytest.param(lambda r: r["parameters"][0].__setitem__("name", ["j2"]), "parameters[0].name", "valid string", id="name-list"),
        pytest.param(lambda r: r.__setitem__("gauge", 5), "gauge", "valid dictionary", id="gauge-number"),
        pytest.param(_gauge({"dx": 0.0}), "gauge.directions[0].twist.dy", "Field required", id="twist-incomplete"),
        pytest.param(_gauge(dict.fromkeys(("dx", "dy", "dz", "rx", "ry"), 0.0) | {"rz": "x"}), "gauge.directions[0].twist.rz", "number", id="twist-text"),
    ],
)
def test_a_damaged_parameter_or_gauge_names_the_field(calibrated, tmp_path, monkeypatch, capsys, change, field, message):
    """What `read_results` reads of report.json besides `inputs` (the parameters' values, the
    gauge's twists) is checked by field name as `inputs` is: one located line, exit code 2."""
    result = damaged(calibrated, tmp_path, change)
    with pytest.raises(InputError) as info:
        read_results(result)
    assert info.value.path == result / "report.json" and info.value.field == field and message in info.value.detail
    code, _, err = run(monkeypatch, capsys, "evaluate", calibrated / "problem.yaml", "--result", result, "--data", calibrated / "train.csv")
    assert code == 2 and err.strip() == f"error: {info.value}"


def test_fields_robocal_never_reads_back_are_not_checked(calibrated, tmp_path):
    """verdict, solver and measurements are for people and other programs: a result whose read
    fields are sound stays usable whatever they hold."""
    result = damaged(calibrated, tmp_path, lambda r: r.update(verdict=5, solver="x", measurements={"a": None}))
    assert read_results(result).estimate == read_results(calibrated / "result").estimate


def test_a_result_of_other_parameters_is_refused_not_dropped(calibrated, tmp_path, monkeypatch, capsys):
    """A stored parameter the problem does not have (the result was fitted with other parameters)
    is an error naming it, not a value dropped in silence."""

    def rename(report):
        report["parameters"][0]["name"] = "j9.origin.x"

    result = damaged(calibrated, tmp_path, rename)
    problem, data = calibrated / "problem.yaml", calibrated / "train.csv"
    code, _, err = run(monkeypatch, capsys, "evaluate", problem, "--result", result, "--data", data)
    assert code == 2 and f"error: {result / 'report.json'}: j9.origin.x: not parameters of this problem" in err, err
