"""The calibration description inside a URDF: everything a problem file says (parameters, priors,
frames, measurements, sigmas, verdict thresholds) and the fleet's acceptance criteria, in one
namespaced element of the robot's own URDF, so the model and how to calibrate it travel as one file.

    <robot name="arm">
      ... links and joints, untouched ...
      <robocal:calibration xmlns:robocal="urn:robocal:description:1" version="1">
        <robocal:problem kind="map">
          <robocal:parameters kind="map"><robocal:default>joint_offsets</robocal:default></robocal:parameters>
          <robocal:measurements kind="list"><robocal:item kind="map">...</robocal:item></robocal:measurements>
        </robocal:problem>
        <robocal:criteria kind="map">...</robocal:criteria>
      </robocal:calibration>
    </robot>

URDF readers (ROS, Pinocchio, robocal's own) skip elements of other namespaces. The mapping is
generic and lossless for any YAML document of mappings, lists and scalars: a mapping or list is an
element with `kind="map"` / `kind="list"` (list entries are `<robocal:item>`; a key that is not an
XML name is kept in an `<robocal:entry key="...">`), a scalar is its YAML text, so types survive
the round trip exactly. The problem's `robot:` is the URDF itself and is never written; relative
data paths are relative to the URDF's folder, as they are to a problem file's.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from lxml import etree

from robocal.errors import InputError
from robocal.kinematics.urdf import parse_document
from robocal.validation import yaml_problem

NAMESPACE = "urn:robocal:description:1"  # an identifier, never fetched
VERSION = "1"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")  # a key usable as an element name as it is


def _tag(name: str) -> str:
    return f"{{{NAMESPACE}}}{name}"


def _element(parent: etree._Element, key: str | None, value) -> None:
    """`value` as a child of `parent` (key None: a list item)."""
    if key is None:
        child = etree.SubElement(parent, _tag("item"))
    elif _NAME.match(key) and key not in ("item", "entry"):
        child = etree.SubElement(parent, _tag(key))
    else:
        child = etree.SubElement(parent, _tag("entry"), key=key)
    if isinstance(value, dict):
        child.set("kind", "map")
        for k, v in value.items():
            _element(child, str(k), v)
    elif isinstance(value, list):
        child.set("kind", "list")
        for v in value:
            _element(child, None, v)
    else:
        child.text = yaml.safe_dump(value, default_flow_style=True, width=float("inf")).removesuffix("\n...\n").rstrip("\n")


def _value(path: Path, element: etree._Element):
    """The YAML value an element holds (the inverse of `_element`)."""
    kind = element.get("kind")
    children = [c for c in element if isinstance(c.tag, str)]
    if kind == "map":
        mapping = {}
        for child in children:
            key = child.get("key") if etree.QName(child).localname == "entry" else etree.QName(child).localname
            if key in mapping:
                raise InputError(path, f"calibration description: '{key}' given twice", line=child.sourceline)
            mapping[key] = _value(path, child)
        return mapping
    if kind == "list":
        return [_value(path, child) for child in children]
    if kind is not None or children:
        raise InputError(
            path,
            f"calibration description: <{etree.QName(element).localname}> with kind '{kind}' and "
            f'{len(children)} child elements; expected kind="map", kind="list" or a scalar',
            line=element.sourceline,
        )
    try:
        return yaml.safe_load(element.text or "")
    except yaml.YAMLError as exc:
        raise InputError(
            path, f"calibration description: <{etree.QName(element).localname}> holds no YAML scalar ({yaml_problem(exc)[0]})", line=element.sourceline
        ) from None


def embed(urdf: Path, problem: dict, criteria: dict | None = None) -> bytes:
    """The URDF's bytes with a calibration description (replacing any it had): `problem` without
    its `robot` key (the URDF is the robot) and the fleet's `criteria`, when given."""
    document = parse_document(urdf)
    robot = document.getroot()
    for old in robot.findall(_tag("calibration")):
        robot.remove(old)
    calibration = etree.SubElement(robot, _tag("calibration"), nsmap={"robocal": NAMESPACE}, version=VERSION)
    _element(calibration, "problem", {k: v for k, v in problem.items() if k != "robot"})
    if criteria is not None:
        _element(calibration, "criteria", criteria)
    etree.indent(calibration, space="  ", level=1)
    previous = calibration.getprevious()
    if previous is not None:
        previous.tail = "\n  "
    calibration.tail = "\n"
    return etree.tostring(document, xml_declaration=True, encoding="utf-8")


def extract(urdf: Path) -> tuple[dict, dict | None]:
    """The problem (as a problem file's mapping, `robot` = the URDF itself) and the criteria (None
    when absent) of a URDF's calibration description."""
    robot = parse_document(urdf).getroot()
    found = robot.findall(_tag("calibration"))
    if len(found) != 1:
        raise InputError(
            urdf,
            f"{'no' if not found else len(found)} <robocal:calibration> elements (namespace {NAMESPACE}); "
            "expected one: write it with `robocal describe PROBLEM.yaml --out ROBOT.urdf`",
        )
    calibration = found[0]
    if calibration.get("version") != VERSION:
        raise InputError(
            urdf, f"calibration description version '{calibration.get('version')}'; this robocal reads version {VERSION}", line=calibration.sourceline
        )
    parts = {etree.QName(c).localname: c for c in calibration if isinstance(c.tag, str)}
    unknown = sorted(set(parts) - {"problem", "criteria"})
    if unknown or "problem" not in parts:
        raise InputError(
            urdf,
            f"<robocal:calibration> holds {', '.join(sorted(parts)) or 'nothing'}; expected <robocal:problem> and optionally <robocal:criteria>",
            line=calibration.sourceline,
        )
    problem = _value(urdf, parts["problem"])
    if not isinstance(problem, dict):
        raise InputError(urdf, '<robocal:problem> must be a mapping (kind="map")', line=parts["problem"].sourceline)
    criteria = _value(urdf, parts["criteria"]) if "criteria" in parts else None
    return {"robot": urdf.name, **problem}, criteria


def is_description(path: Path) -> bool:
    """Whether a problem path names a URDF (with a calibration description) rather than a problem file."""
    return path.suffix.lower() == ".urdf"
