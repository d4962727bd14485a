"""Generated bad inputs for the CLI contract: each case edits a copy of a valid tiny-arm problem
folder (tests.cli.test_bad_input's arm) and names the file the error must point at.

A case is (name, edit, file): `edit(folder, problem)` changes files in `folder` (the problem as a
dict is written afterwards), `file` is the input that the one-line error must name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from tests.cli.test_bad_input import URDF

Edit = Callable[[Path, dict], None]
CASES: dict[str, tuple[Edit, str]] = {}


def case(name: str, file: str) -> Callable[[Edit], Edit]:
    def register(edit: Edit) -> Edit:
        assert name not in CASES, name
        CASES[name] = (edit, file)
        return edit

    return register


def urdf_case(name: str, old: str, new: str, count: int = 1) -> None:
    assert old in URDF, old
    case(f"urdf: {name}", "arm.urdf")(lambda d, p: (d / "arm.urdf").write_text(URDF.replace(old, new, count)))


# ---- the robot model -------------------------------------------------------------------------
BAD_NUMBERS = ["nan", "inf", "-inf", "1e300", "abc", "", "1,5", "0x10", "--1", "1e", "1_0_"]
for attribute, good in (("xyz", '<origin xyz="0 0 0.1" rpy="0 0 0"/>'), ("rpy", '<origin xyz="0 0 0.1" rpy="0 0 0"/>')):
    for i, bad in enumerate(BAD_NUMBERS):
        values = ["0", "0", "0.1"] if attribute == "xyz" else ["0", "0", "0"]
        values[i % 3] = bad
        text = good.replace(f'{attribute}="{" ".join(["0", "0", "0.1"] if attribute == "xyz" else ["0", "0", "0"])}"', f'{attribute}="{" ".join(values)}"')
        urdf_case(f"origin {attribute} with '{bad}'", good, text)
for bad in BAD_NUMBERS:
    urdf_case(f"j3 origin xyz '{bad}'", '<origin rpy="0.1 0 0" xyz="0.3 0 0"/>', f'<origin rpy="0.1 0 0" xyz="0.3 {bad} 0"/>')
    urdf_case(f"tool origin rpy '{bad}'", '<origin xyz="0.25 0 0.02" rpy="0 0 0"/>', f'<origin xyz="0.25 0 0.02" rpy="{bad} 0 0"/>')
for bad in ["0 0", "0 0 0 1", "0 0 0", "a b c", "nan 0 1"]:
    urdf_case(f"axis '{bad}'", '<axis xyz="0 0 1"/>', f'<axis xyz="{bad}"/>')
for bad in ['lower="x" upper="3"', 'lower="-3" upper="nan"', 'lower="3" upper="-3"', 'lower="" upper="1"']:
    urdf_case(f"limit {bad}", '<limit lower="-3" upper="3"', f"<limit {bad}")
for bad in ['<mimic joint="j2" multiplier="two"/>', '<mimic joint="j2" offset="inf"/>', "<mimic/>", '<mimic joint="ghost"/>', '<mimic joint="j3"/>']:
    urdf_case(f"mimic {bad}", '<child link="l3"/>', f'<child link="l3"/>{bad}')
urdf_case("joint without a name", '<joint name="j2" type="revolute">', '<joint type="revolute">')
urdf_case("joint with an empty name", '<joint name="j2" type="revolute">', '<joint name=" " type="revolute">')
urdf_case("joint type unknown", '<joint name="j2" type="revolute">', '<joint name="j2" type="spherical">')
urdf_case("joint type missing", '<joint name="j2" type="revolute">', '<joint name="j2">')
urdf_case("joint defined twice", '<joint name="j3" type="revolute">', '<joint name="j2" type="revolute">')
urdf_case("link defined twice", '<link name="l2"/>', '<link name="l2"/><link name="l2"/>')
urdf_case("link without a name", '<link name="tool"/>', "<link/>")
urdf_case("child link undeclared", '<child link="tool"/>', '<child link="ghost"/>')
urdf_case("parent link undeclared", '<parent link="l3"/>', '<parent link="ghost"/>')
urdf_case("parent missing", '<parent link="l3"/>', "")
urdf_case("child missing", '<child link="tool"/>', "")
urdf_case("child without link attribute", '<child link="tool"/>', "<child/>")
urdf_case("joint connects a link to itself", '<child link="tool"/>', '<child link="l3"/>')
urdf_case("link with two parents", '<child link="tool"/>', '<child link="l2"/>')
urdf_case("cycle below the root", '<parent link="l3"/>\n    <child link="tool"/>', '<parent link="tool"/>\n    <child link="l1"/>')
urdf_case("second root", '<link name="tool"/>', '<link name="tool"/><link name="orphan"/>')
urdf_case("root element not robot", '<robot name="arm3">', '<model name="arm3">')
urdf_case("unclosed element", "</robot>", "")
urdf_case("a NUL character inside", '<link name="tool"/>', '\0<link name="tool"/>')
urdf_case("not XML at all", '<?xml version="1.0" encoding="utf-8"?>', "robot: arm3\n")


@case("urdf: external entity in a number", "arm.urdf")
def _(d, p):
    doctype = '<!DOCTYPE robot [<!ENTITY x SYSTEM "file:///etc/hostname">]>\n<robot name="arm3">'
    (d / "arm.urdf").write_text(URDF.replace('<robot name="arm3">', doctype).replace('<axis xyz="0 0 1"/>', '<axis xyz="&x;"/>'))


@case("urdf: empty file", "arm.urdf")
def _(d, p):
    (d / "arm.urdf").write_text("")


@case("urdf: binary garbage", "arm.urdf")
def _(d, p):
    (d / "arm.urdf").write_bytes(bytes(range(256)) * 4)


@case("urdf: billion laughs", "arm.urdf")
def _(d, p):
    entities = '<!ENTITY l0 "ha">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    (d / "arm.urdf").write_text(
        URDF.replace('<robot name="arm3">', f'<!DOCTYPE robot [{entities}]>\n<robot name="arm3">').replace(
            '<link name="base"/>', '<link name="base"/><link name="&l9;"/>'
        )
    )


@case("urdf: 10,000-link chain", "arm.urdf")
def _(d, p):
    links = "".join(f'<link name="x{i}"/>' for i in range(10_001))
    joints = "".join(f'<joint name="xj{i}" type="revolute"><parent link="x{i}"/><child link="x{i + 1}"/><axis xyz="0 0 1"/></joint>' for i in range(10_000))
    (d / "arm.urdf").write_text(f'<robot name="long">{links}{joints}</robot>')


# ---- the problem file -------------------------------------------------------------------------
def problem_case(name: str, change: Callable[[dict], None], file: str = "problem.yaml") -> None:
    """A change of the problem; the error names `file` (the problem, or a file it points at)."""
    case(f"problem: {name}", file)(lambda d, p: change(p))


def set_path(path: str, value) -> Callable[[dict], None]:
    def change(problem: dict) -> None:
        node, keys = problem, path.split(".")
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(keys[-1])] = value
        else:
            node[keys[-1]] = value

    return change


def delete(path: str) -> Callable[[dict], None]:
    def change(problem: dict) -> None:
        node, keys = problem, path.split(".")
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[keys[-1]]

    return change


for value in [True, False, 0, -1, -0.001, 1e-300, float("inf"), float("nan"), "abc", "", None, [0.001], {"a": 1}, 1e9]:
    problem_case(f"sigma {value!r}", set_path("measurements.0.sigma", value))
for value in [True, -1, 0, float("inf"), "x", [1, 2]]:
    problem_case(f"prior joint_offset {value!r}", set_path("priors.joint_offset", value))
for prior in ("translation", "rotation"):
    for value in [True, -1, 0, float("nan"), "x", 1e-300]:
        problem_case(f"prior {prior} {value!r}", set_path(f"priors.{prior}", value))
for value in ["nonsense", 3, [], None, "dh_full", {"a": 1}]:
    problem_case(f"joint mode {value!r}", set_path("parameters.joints.j2", value))
for value in [0, -5, "many", True, 1.5]:
    problem_case(f"solver max_iterations {value!r}", lambda p, v=value: p.setdefault("solver", {}).update(max_iterations=v))
for value in ["lasers", None, 7, ""]:
    problem_case(f"measurement type {value!r}", set_path("measurements.0.type", value))
for field in ["name", "type", "data", "sigma", "link", "frame", "points"]:
    problem_case(f"measurement without {field}", delete(f"measurements.0.{field}"))
for value in [[], None, "markers", [None], [1]]:
    problem_case(f"measurements {value!r}", set_path("measurements", value))
for value in [7, None, []]:
    problem_case(f"robot {value!r}", set_path("robot", value))
for value in ["missing.urdf", "train.csv", "../../../../etc/passwd"]:
    problem_case(f"robot {value!r}", set_path("robot", value), file=value)
problem_case("unknown top-level key", lambda p: p.update(solvr={"max_iterations": 5}))
problem_case("unknown measurement key", set_path("measurements.0.sigmaa", 0.001))
problem_case("two measurements with the same name", lambda p: p["measurements"].append(dict(p["measurements"][0])))
problem_case("joint glob matching nothing", lambda p: p["parameters"]["joints"].update({"joint_[1-6]": "full"}))
problem_case("frame unknown", set_path("measurements.0.frame", "camera"))
problem_case("link unknown", set_path("measurements.0.link", "gripper"))
problem_case("joint column for an unknown joint", set_path("measurements.0.joints", {"j9": "q9"}))
problem_case("point columns two", set_path("measurements.0.points.0.columns", ["ax", "ay"]))
problem_case("point offset not numbers", set_path("measurements.0.points.0.offset", ["a", 0, 0]))
problem_case("point offset nan", set_path("measurements.0.points.0.offset", [float("nan"), 0, 0]))
problem_case("data file missing", set_path("measurements.0.data", "nowhere.csv"), file="nowhere.csv")


@case("problem: data is a folder", "sub")
def _(d, p):
    (d / "sub").mkdir()
    set_path("measurements.0.data", "sub")(p)


problem_case("frame initial nonsense", set_path("frames.tracker.initial", "guess"))
problem_case("frame initial rpy two numbers", set_path("frames.tracker.initial", {"xyz": [0, 0, 0], "rpy": [0, 0]}))


@case("problem: not YAML", "problem.yaml")
def _(d, p):
    p.clear()
    p["__raw__"] = "robot: [unclosed\n"


@case("problem: a list at the top", "problem.yaml")
def _(d, p):
    p.clear()
    p["__raw__"] = "- robot: arm.urdf\n"


@case("problem: key given twice", "problem.yaml")
def _(d, p):
    p["__raw__"] = yaml.safe_dump(p, sort_keys=False) + "robot: arm.urdf\n"


@case("problem: a NUL character", "problem.yaml")
def _(d, p):
    p["__raw__"] = yaml.safe_dump(p, sort_keys=False) + "name: a\0b\n"


@case("problem: not UTF-8", "problem.yaml")
def _(d, p):
    p["__raw__"] = b"robot: \xff\xfe\n"


# ---- the data file ----------------------------------------------------------------------------
def csv_case(name: str, change: Callable[[str], str]) -> None:
    case(f"csv: {name}", "train.csv")(lambda d, p: (d / "train.csv").write_text(change((d / "train.csv").read_text())))


def cell(row: int, column: int, value: str) -> Callable[[str], str]:
    def change(text: str) -> str:
        lines = text.splitlines()
        cells = lines[row].split(",")
        cells[column] = value
        lines[row] = ",".join(cells)
        return "\n".join(lines) + "\n"

    return change


for value in ["nan", "NaN", "inf", "-inf", "abc", "", '"1,5"', "1e999", "0x1p3", "None", "true"]:
    csv_case(f"cell {value!r}", cell(3, 4, value))
for value in ["nan", "", "x"]:
    csv_case(f"joint cell {value!r}", cell(2, 0, value))
csv_case("header without a joint column", lambda t: t.replace("q1,", "qq1,", 1))
csv_case("header without a marker column", lambda t: t.replace(",az,", ",a_z,", 1))
csv_case("duplicate header", lambda t: t.replace(",bx,", ",ax,", 1))
csv_case("trailing comma on a row", lambda t: t.replace("\n", ",\n", 2))
csv_case("a row too short", lambda t: "\n".join(line.rsplit(",", 1)[0] if i == 4 else line for i, line in enumerate(t.splitlines())) + "\n")
csv_case("comma decimals", lambda t: t.replace(".", ",", 3))
csv_case("semicolons", lambda t: t.replace(",", ";"))
csv_case("header only", lambda t: t.splitlines()[0] + "\n")
csv_case("empty", lambda t: "")
csv_case("blank lines only", lambda t: "\n\n\n")
csv_case("unterminated quote", lambda t: t.replace("\n", '\n"', 1))


@case("csv: not UTF-8", "train.csv")
def _(d, p):
    (d / "train.csv").write_bytes(b"q1,j2\n\xff\xfe,1\n")


@case("csv: NUL bytes", "train.csv")
def _(d, p):
    (d / "train.csv").write_bytes((d / "train.csv").read_bytes().replace(b",", b"\0,", 5))


# ---- a DH table instead of the URDF ---------------------------------------------------------
DH = "name: arm3\nconvention: modified\nchains:\n  - name: arm\n    joints:\n      - {name: j1, d: 0.1}\n      - {name: j2, alpha: ROW2}\n      - {name: j3, a: 0.3}\n    tip: {name: tool, a: 0.25}\n"
for value in [
    ".nan",
    ".inf",
    "1e300",
    "pi/0",
    "true",
    "'os.system(1)'",
    "pi ** 2",
    "[1, 2]",
    "'((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))'",
]:
    case(f"dh: alpha {value}", "arm.yaml")(lambda d, p, v=value: ((d / "arm.yaml").write_text(DH.replace("ROW2", v)), p.update(robot="arm.yaml")))
for name, text in (
    ("convention unknown", DH.replace("modified", "craig")),
    ("no chains", "name: arm3\nconvention: modified\n"),
    ("row without a name", DH.replace("{name: j1, d: 0.1}", "{d: 0.1}")),
    ("unknown row key", DH.replace("d: 0.1}", "dd: 0.1}")),
    ("mimic cycle", DH.replace("{name: j1, d: 0.1}", "{name: j1, d: 0.1, mimic: {joint: j2}}").replace("alpha: ROW2}", "alpha: 0, mimic: {joint: j1}}")),
    ("joint name twice", DH.replace("name: j3", "name: j2")),
):
    case(f"dh: {name}", "arm.yaml")(lambda d, p, t=text: ((d / "arm.yaml").write_text(t.replace("ROW2", "0")), p.update(robot="arm.yaml")))
