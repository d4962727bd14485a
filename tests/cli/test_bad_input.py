"""The command line end to end, on a tiny synthetic arm built here (no ../shared needed).

Bad input: exit code 2, exactly one `error:` line on stderr naming the file (and line and column
or field where they apply), never a traceback: every case through `robocal.cli.main` in this
process, and one case per kind of file in a `python -m robocal` process of its own. Good input: a noise-free dataset calibrates to the
true joint offsets, `evaluate` confirms it on held-out samples, and calibrated.urdf differs from
the input only in the origins of the calibrated joints.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from lxml import etree

from robocal import cli
from robocal.frames import placement_matrix
from robocal.kinematics import transforms as tf
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf

URDF = """<?xml version="1.0" encoding="utf-8"?>
<!-- three-joint test arm: yaw, pitch, pitch, and a fixed tool -->
<robot name="arm3">
  <link name="base"/>
  <link name="l1"/>
  <link name="l2"/>
  <link name="l3">
    <visual>
      <origin xyz="0.15 0 0" rpy="0 1.5708 0"/>
      <geometry><cylinder radius="0.02" length="0.3"/></geometry>
    </visual>
  </link>
  <link name="tool"/>
  <joint name="j1" type="revolute">
    <origin xyz="0 0 0.1" rpy="0 0 0"/>
    <parent link="base"/>
    <child link="l1"/>
    <axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="1"/>
  </joint>
  <joint name="j2" type="revolute">
    <!-- shoulder -->
    <origin xyz="0 0 0.2" rpy="0 0 0"/>
    <parent link="l1"/>
    <child link="l2"/>
    <axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="1"/>
  </joint>
  <joint name="j3" type="revolute">
    <origin rpy="0.1 0 0" xyz="0.3 0 0"/>
    <parent link="l2"/>
    <child link="l3"/>
    <axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="1"/>
  </joint>
  <joint name="tool_joint" type="fixed">
    <origin xyz="0.25 0 0.02" rpy="0 0 0"/>
    <parent link="l3"/>
    <child link="tool"/>
  </joint>
  <gazebo reference="tool"><mu1>0.2</mu1></gazebo>
</robot>
"""

TRUE_OFFSETS = {"j2": 0.02, "j3": -0.015}  # rad
TRUE_FRAME = placement_matrix((1.0, -0.5, 0.3), (0.1, -0.2, 0.3))  # robot root in the tracker frame
POINTS = {"a": (0.05, 0.0, 0.0), "b": (0.0, 0.04, 0.01)}  # marker offsets on the tool (known)
HEADER = ["q1", "j2", "j3", "ax", "ay", "az", "bx", "by", "bz"]  # joint j1 is logged as column q1
PROBLEM = {
    "robot": "arm.urdf",
    "parameters": {"joints": {"j2": "joint_offsets", "j3": "joint_offsets"}},
    "priors": {"joint_offset": None},
    "frames": {"tracker": {"initial": "auto"}},
    "measurements": [
        {
            "name": "tip & <markers>",
            "type": "markers",
            "data": "train.csv",
            "link": "tool",
            "frame": "tracker",
            "sigma": 0.001,
            "joints": {"j1": "q1"},
            "points": [{"name": name, "columns": [f"{name}x", f"{name}y", f"{name}z"], "offset": list(p)} for name, p in POINTS.items()],
        }
    ],
}


def synthetic_rows(urdf: Path, n: int, seed: int) -> list[list[str]]:
    """CSV rows (header first) of noise-free marker positions from the perturbed arm."""
    model = RobotModel(load_urdf(urdf), {name: "joint_offsets" for name in TRUE_OFFSETS})
    theta = jnp.array([TRUE_OFFSETS[p.name.split(".")[0]] for p in model.parameters])
    q = np.random.default_rng(seed).uniform(-1.2, 1.2, size=(n, 3))
    tool = np.asarray(jax.vmap(lambda qi: model.link_poses(theta, qi, ("tool",))[0])(jnp.asarray(q)))
    world = TRUE_FRAME @ tool
    points = [world[:, :3, :3] @ np.array(p) + world[:, :3, 3] for p in POINTS.values()]
    values = np.column_stack([q, *points])
    return [HEADER] + [[repr(float(v)) for v in row] for row in values]


def write_csv(path: Path, rows: list[list[str]]) -> None:
    path.write_text("".join(",".join(row) + "\n" for row in rows))


def write_problem(folder: Path, problem: dict) -> Path:
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump(problem, sort_keys=False))
    return path


def robocal(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "robocal", *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("arm3")
    (folder / "arm.urdf").write_text(URDF)
    write_csv(folder / "train.csv", synthetic_rows(folder / "arm.urdf", 25, seed=1))
    write_csv(folder / "test.csv", synthetic_rows(folder / "arm.urdf", 15, seed=2))
    write_problem(folder, PROBLEM)
    return folder


# ---- bad input ------------------------------------------------------------------------------


def _set_cell(folder: Path, line: int, column: str, text: str) -> None:
    """Replace one cell of train.csv (line as an editor shows it, header = 1)."""

    def edit(lines: list[str]) -> None:
        cells = lines[line - 1].split(",")
        cells[HEADER.index(column)] = text
        lines[line - 1] = ",".join(cells)

    _edit_lines(folder / "train.csv", edit)


def _edit_lines(path: Path, edit) -> None:
    """Apply `edit` to the list of lines of a text file (keeping a byte-order mark if any)."""
    lines = path.read_text().splitlines()
    edit(lines)
    path.write_text("\n".join(lines) + "\n")


def _drop_column(folder: Path, column: str) -> None:
    index = HEADER.index(column)
    _edit_lines(folder / "train.csv", lambda ls: ls.__setitem__(slice(None), [",".join(c for i, c in enumerate(line.split(",")) if i != index) for line in ls]))


def _problem(edit):
    """A case that edits the problem dict (then rewrites problem.yaml)."""
    return lambda folder, problem: (edit(problem), write_problem(folder, problem))


def _marker(problem: dict) -> dict:
    return problem["measurements"][0]


def _urdf_line(text: str) -> int:
    return URDF.splitlines().index(text) + 1


L2_LINE = _urdf_line('  <link name="l2"/>')
J1_AXIS_LINE = _urdf_line('    <axis xyz="0 0 1"/>')

# case: (edit(folder, problem dict), file the error must name, texts the error line must contain)
CASES = {
    "missing joint column": (lambda d, p: _drop_column(d, "j3"), "train.csv", ["missing joint column 'j3'"]),
    "NaN cell": (lambda d, p: _set_cell(d, 4, "j2", "nan"), "train.csv", ["line 4", "column 'j2'", "not a finite number"]),
    "non-numeric cell": (lambda d, p: _set_cell(d, 7, "ay", "1.2.3"), "train.csv", ["line 7", "column 'ay'", "'1.2.3' is not a number"]),
    "non-numeric cell after a blank line": (
        lambda d, p: (_edit_lines(d / "train.csv", lambda ls: ls.insert(2, "")), _set_cell(d, 5, "bz", "x")),
        "train.csv",
        ["line 5", "column 'bz'"],
    ),
    "bad cell in a column named with [brackets]": (
        lambda d, p: (
            _set_cell(d, 3, "ax", "?"),
            _edit_lines(d / "train.csv", lambda ls: ls.__setitem__(0, ls[0].replace("ax", "ax[/m]"))),
            _problem(lambda p: _marker(p)["points"][0]["columns"].__setitem__(0, "ax[/m]"))(d, p),
        ),
        "train.csv",
        ["line 3", "column 'ax[/m]'"],
    ),
    "byte-order mark, empty cell in the first column": (
        lambda d, p: (_set_cell(d, 3, "q1", ""), (d / "train.csv").write_text("\ufeff" + (d / "train.csv").read_text())),
        "train.csv",
        ["line 3", "column 'q1'", "'' is not a number"],
    ),
    "column named twice in the header": (
        lambda d, p: _edit_lines(d / "train.csv", lambda ls: ls.__setitem__(slice(None), [ls[0] + ",j2"] + [line + ",0" for line in ls[1:]])),
        "train.csv",
        ["line 1", "column 'j2'"],
    ),
    "row with an extra field": (
        lambda d, p: _edit_lines(d / "train.csv", lambda ls: ls.__setitem__(5, ls[5] + ",0.5")),
        "train.csv",
        ["line 6", "expected 9 fields", "found 10"],
    ),
    "row with a missing field": (
        lambda d, p: _edit_lines(d / "train.csv", lambda ls: ls.__setitem__(9, ls[9].rsplit(",", 1)[0])),
        "train.csv",
        ["line 10", "found 8"],
    ),
    "empty data file": (lambda d, p: (d / "train.csv").write_text(""), "train.csv", ["empty"]),
    "header only": (lambda d, p: (d / "train.csv").write_text(",".join(HEADER) + "\n"), "train.csv", ["no data rows"]),
    "missing data file": (_problem(lambda p: _marker(p).__setitem__("data", "missing.csv")), "missing.csv", ["cannot read data file"]),
    "unknown link": (_problem(lambda p: _marker(p).__setitem__("link", "gripper")), "problem.yaml", ["field 'measurements[0].link'", "'gripper'"]),
    "unknown frame": (_problem(lambda p: _marker(p).__setitem__("frame", "camera")), "problem.yaml", ["field 'measurements[0].frame'", "'camera'"]),
    "unknown joint in the measurement's joints mapping": (
        _problem(lambda p: _marker(p).__setitem__("joints", {"j9": "q1"})),
        "problem.yaml",
        ["field 'measurements[0].joints.j9'", "'j9' is not an actuated joint"],
    ),
    "unknown joint in parameters.joints": (
        _problem(lambda p: p["parameters"]["joints"].__setitem__("elbow", "full")),
        "problem.yaml",
        ["field 'parameters.joints.elbow'", "no joint matches 'elbow'"],
    ),
    "YAML typo (unknown key)": (
        _problem(lambda p: _marker(p).__setitem__("sigm", _marker(p).pop("sigma"))),
        "problem.yaml",
        ["field 'measurements[0].sigm'", "unknown key 'sigm'", "did you mean 'sigma'"],
    ),
    "YAML typo inside a union (frame placement)": (
        _problem(lambda p: p["frames"]["tracker"].__setitem__("initial", {"xyz": [0, 0, 0], "rpyy": [0, 0, 0]})),
        "problem.yaml",
        ["field 'frames.tracker.initial.rpyy'", "unknown key 'rpyy'"],
    ),
    "task seed below 0": (
        _problem(lambda p: p.__setitem__("task", {"tips": ["tool"], "seed": -1})),
        "problem.yaml",
        ["field 'task.seed'", "greater than or equal to 0"],
    ),
    "YAML key given twice": (
        lambda d, p: _edit_lines(d / "problem.yaml", lambda ls: ls.insert(1, "robot: other.urdf")),
        "problem.yaml",
        ["line 2", "'robot' given twice"],
    ),
    "malformed URDF": (
        lambda d, p: (d / "arm.urdf").write_text(URDF.replace('<link name="l2"/>', '<link name="l2 & co"/>')),
        "arm.urdf",
        [f"line {L2_LINE}", "not valid XML"],
    ),
    "URDF axis with two numbers": (
        lambda d, p: (d / "arm.urdf").write_text(URDF.replace('<axis xyz="0 0 1"/>', '<axis xyz="0 1"/>')),
        "arm.urdf",
        [f"line {J1_AXIS_LINE}", "must be 3 numbers"],
    ),
    "DH table: base with both rpy and rotvec": (
        lambda d, p: _dh_robot(d, p, "    base: {xyz: [0, 0, 0.1], rpy: [0, 0, 0], rotvec: [0, 0, 0]}"),
        "arm.yaml",
        ["field 'chains[0].base'", "rpy or rotvec"],
    ),
    "DH table: malformed expression in pi": (
        lambda d, p: _dh_robot(d, p, "    base: {xyz: [0, 0, 0.1]}", alpha="pi /"),
        "arm.yaml",
        ["field 'chains[0].joints[1].alpha'"],
    ),
}


def _dh_robot(folder: Path, problem: dict, base: str, alpha: str = "pi / 2") -> None:
    """Replace the URDF by a DH table of the same arm (modified convention) and point the problem at it."""
    rows = ["      - {name: j1, d: 0.1}", f"      - {{name: j2, alpha: {alpha}}}", "      - {name: j3, a: 0.3}"]
    text = ["name: arm3", "convention: modified", "chains:", "  - name: arm", base, "    joints:", *rows, "    tip: {name: tool, a: 0.25}"]
    (folder / "arm.yaml").write_text("\n".join(text) + "\n")
    problem["robot"] = "arm.yaml"
    write_problem(folder, problem)


def _case_folder(case: str, parent: Path, dataset: Path) -> Path:
    """A copy of the valid dataset with the case's edit applied (to a deep copy of the problem)."""
    folder = parent / "case"
    shutil.copytree(dataset, folder)
    CASES[case][0](folder, json.loads(json.dumps(PROBLEM)))
    return folder


def _assert_located_error(case: str, folder: Path, code: int | str | None, stderr: str) -> None:
    _, file_name, parts = CASES[case]
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert str(folder / file_name) in lines[0], lines[0]
    for part in parts:
        assert part in lines[0], lines[0]
    assert not (folder.parent / "out").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case: str, dataset: Path, tmp_path: Path, monkeypatch, capfd) -> None:
    """Every case through `robocal.cli.main` in this process (the code a shell runs, less the
    interpreter's start: about 0.7 s a case); capfd also takes what is written to file
    descriptor 2 directly. The cases of REAL_PROCESS_CASES also run in processes of their own."""
    folder = _case_folder(case, tmp_path, dataset)
    monkeypatch.setattr(sys, "argv", ["robocal", "calibrate", str(folder / "problem.yaml"), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as info:
        cli.main()
    captured = capfd.readouterr()
    assert "Traceback" not in captured.out
    _assert_located_error(case, folder, info.value.code, captured.err)


# One case per file an error can name (data file, problem, URDF, DH table, a missing file) in a
# real `python -m robocal` process: its exit status through `run`, and a stderr with nothing else
# on it (no warning, no log line from an import or from XLA).
REAL_PROCESS_CASES = ("missing joint column", "missing data file", "YAML typo (unknown key)", "malformed URDF", "DH table: malformed expression in pi")


@pytest.fixture(scope="module")
def real_runs(dataset: Path, tmp_path_factory) -> dict:
    """REAL_PROCESS_CASES run concurrently (each CLI start costs seconds of imports): case -> (folder, result)."""
    folders = {case: _case_folder(case, tmp_path_factory.mktemp("case"), dataset) for case in REAL_PROCESS_CASES}

    def run(case):
        return robocal("calibrate", folders[case] / "problem.yaml", "--out", folders[case].parent / "out")

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return {case: (folders[case], result) for case, result in zip(folders, pool.map(run, folders))}


@pytest.mark.parametrize("case", REAL_PROCESS_CASES)
def test_bad_input_in_a_process_of_its_own(case: str, real_runs: dict) -> None:
    folder, result = real_runs[case]
    assert "Traceback" not in result.stdout
    _assert_located_error(case, folder, result.returncode, result.stderr)


def test_usage_error_exits_2_without_traceback(tmp_path: Path) -> None:
    result = robocal("calibrate", "--no-such-option", tmp_path / "problem.yaml")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "no-such-option" in result.stderr


# ---- good input -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def calibrated(dataset: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("result")
    result = robocal("calibrate", dataset / "problem.yaml", "--out", out)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return out


def test_clean_data_calibrates_to_the_truth(calibrated: Path) -> None:
    report = json.loads((calibrated / "report.json").read_text())
    (metrics,) = report["measurements"]
    assert metrics["before"]["rms"] > 1e-3  # the offsets are visible with the nominal robot
    assert metrics["after"]["rms"] < 1e-6
    estimates = {p["name"]: p["estimate"] for p in report["parameters"]}
    for joint, offset in TRUE_OFFSETS.items():
        assert abs(estimates[f"{joint}.offset"] - offset) < 1e-6
    assert report["identifiability"]["rank"] == report["identifiability"]["n_parameters"]
    assert report["rejected"] == []


def test_html_report_is_self_contained_and_escaped(calibrated: Path) -> None:
    html = (calibrated / "report.html").read_text()
    assert html.count("<svg") == 2 and "data:image/" not in html  # the error plots inline: per sample and histogram
    (metrics,) = json.loads((calibrated / "report.json").read_text())["measurements"]
    removed = round(100.0 * metrics["removed"], 1)  # the headline (rms) row's removed %, as the console shows it
    assert "<th>removed (%)</th>" in html and f'<td>rms</td><td class="num">{round(1e3 * metrics["before"]["rms"], 4):.6g}' in html
    assert f'<td class="num">{removed:.6g}</td></tr>' in html
    assert "tip &amp; &lt;markers&gt;" in html and "<markers>" not in html
    assert "j2.offset" in html and "problem.yaml" in html
    assert "<script" not in html and "http" not in html.split("</style>", 1)[1]


def test_evaluate_on_held_out_data(dataset: Path, calibrated: Path) -> None:
    result = robocal("evaluate", dataset / "problem.yaml", "--result", calibrated, "--data", dataset / "test.csv", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    table = robocal("evaluate", dataset / "problem.yaml", "--result", calibrated, "--data", dataset / "test.csv")  # for reading: mm
    (row,) = [line for line in table.stdout.splitlines() if line.startswith("│ test.csv")]
    assert f"{report['evaluations'][0]['measurements'][0]['before']['rms'] * 1e3:.3f}" in row and "rms (mm)" in row
    (evaluation,) = report["evaluations"]
    (metrics,) = evaluation["measurements"]
    assert evaluation["data"] == str(dataset / "test.csv")
    assert metrics["before"]["rms"] > 1e-3
    assert metrics["after"]["rms"] < 1e-6
    assert metrics["removed"] == pytest.approx(1.0 - metrics["after"]["rms"] / metrics["before"]["rms"])
    assert report["training"][0]["measurements"][0]["after"]["rms"] < 1e-6 and report["warnings"] == []


def _nodes(doc: etree._ElementTree) -> list:
    """Every node of a document in order: comments and PIs around the root, then the root's subtree."""
    root = doc.getroot()
    return list(reversed(list(root.itersiblings(preceding=True)))) + list(root.iter()) + list(root.itersiblings())


def test_calibrated_urdf_changes_only_calibrated_origins(dataset: Path, calibrated: Path) -> None:
    source, written = dataset / "arm.urdf", calibrated / "calibrated.urdf"
    report = json.loads((calibrated / "report.json").read_text())
    estimates = {p["name"]: p["estimate"] for p in report["parameters"]}
    before, after = etree.parse(str(source)), etree.parse(str(written))
    assert (after.docinfo.xml_version, after.docinfo.encoding) == (before.docinfo.xml_version, before.docinfo.encoding)
    changed_lines = set()
    old_nodes, new_nodes = _nodes(before), _nodes(after)
    assert len(old_nodes) == len(new_nodes)
    for old, new in zip(old_nodes, new_nodes):
        assert (old.tag, old.text, old.tail) == (new.tag, new.text, new.tail)
        assert list(old.attrib) == list(new.attrib)  # same attributes, same order
        parent = old.getparent()
        if old.tag == "origin" and parent is not None and parent.tag == "joint" and parent.get("name") in TRUE_OFFSETS:
            # the offset about the joint axis (y) is folded into the origin: R_new = R_old @ Ry(offset)
            old_xyz, new_xyz = (np.array(e.get("xyz").split(), float) for e in (old, new))
            np.testing.assert_allclose(new_xyz, old_xyz, atol=1e-12)
            turn = np.asarray(tf.axis_angle_to_matrix(jnp.array([0.0, 1.0, 0.0]), estimates[f"{parent.get('name')}.offset"]))
            expected = np.asarray(tf.rpy_to_matrix(jnp.array(old.get("rpy").split(), float))) @ turn
            np.testing.assert_allclose(np.asarray(tf.rpy_to_matrix(jnp.array(new.get("rpy").split(), float))), expected, atol=1e-12)
            changed_lines.add(old.sourceline)
        else:
            assert dict(old.attrib) == dict(new.attrib), f"line {old.sourceline}"
    assert changed_lines == {_urdf_line('    <origin xyz="0 0 0.2" rpy="0 0 0"/>'), _urdf_line('    <origin rpy="0.1 0 0" xyz="0.3 0 0"/>')}

    # a line diff from the <robot> element on touches exactly those origin lines
    old_text, new_text = source.read_text(), written.read_text()
    robot_line = old_text[: old_text.index("<robot")].count("\n") + 1
    old_lines, new_lines = (text[text.index("<robot") :].splitlines() for text in (old_text, new_text))
    assert len(old_lines) == len(new_lines)
    assert {robot_line + k for k, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b} == changed_lines
    assert written.read_text().endswith("\n")


def test_calibrated_urdf_keeps_the_lines_before_the_robot_element(dataset: Path, calibrated: Path) -> None:
    before = (dataset / "arm.urdf").read_text().split("<robot", 1)[0]
    assert (calibrated / "calibrated.urdf").read_text().split("<robot", 1)[0] == before
