"""URDF in and out with lxml: read a kinematic tree, write back calibrated joint origins only.

Reading keeps the parsed document so that writing changes the `xyz`/`rpy` attributes of the
calibrated joints' `<origin>` elements and nothing else: comments, unknown tags, attribute order,
whitespace, and every byte outside the `<robot>` element are preserved.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from lxml import etree

from robocal.errors import InputError
from robocal.kinematics.transforms import matrix_to_rpy
from robocal.kinematics.tree import Joint, KinematicTree, Mimic, Origin

SUPPORTED = ("revolute", "continuous", "prismatic", "fixed")


def _floats(path: Path, element, attribute: str, default: str, count: int) -> tuple[float, ...]:
    text = element.get(attribute, default) if element is not None else default
    try:
        values = tuple(float(v) for v in text.split())
    except ValueError:
        values = ()
    if len(values) != count:
        raise InputError(path, f"{element.tag} {attribute}='{text}' must be {count} numbers", line=element.sourceline)
    return values


def parse_document(path: str | Path) -> etree._ElementTree:
    path = Path(path)
    try:
        return etree.parse(str(path), etree.XMLParser(remove_comments=False, remove_blank_text=False))
    except OSError as exc:
        raise InputError(path, f"cannot read URDF ({exc})") from None
    except etree.XMLSyntaxError as exc:
        raise InputError(path, f"not valid XML: {exc.msg}", line=exc.lineno) from None


def load_urdf(path: str | Path) -> KinematicTree:
    """Kinematic tree of a URDF file (meshes and inertias are never read)."""
    path = Path(path)
    robot = parse_document(path).getroot()
    if robot.tag != "robot":
        raise InputError(path, f"root element is <{robot.tag}>, expected <robot>", line=robot.sourceline)
    links = [link.get("name") for link in robot.findall("link")]
    joints = {}
    for el in robot.findall("joint"):
        name, kind = el.get("name"), el.get("type")
        if kind not in SUPPORTED:
            raise InputError(path, f"joint '{name}' has type '{kind}'; supported: {', '.join(SUPPORTED)}", line=el.sourceline)
        parent, child = el.find("parent"), el.find("child")
        if parent is None or child is None:
            raise InputError(path, f"joint '{name}' needs <parent> and <child>", line=el.sourceline)
        origin = el.find("origin")
        xyz = _floats(path, origin, "xyz", "0 0 0", 3)
        rpy = _floats(path, origin, "rpy", "0 0 0", 3)
        axis_el = el.find("axis")
        axis = np.array(_floats(path, axis_el, "xyz", "1 0 0", 3))
        if kind != "fixed":
            norm = np.linalg.norm(axis)
            if norm == 0:
                raise InputError(path, f"joint '{name}' has a zero axis", line=el.sourceline)
            axis = axis / norm
        limit = el.find("limit")
        limits = None
        if kind in ("revolute", "prismatic") and limit is not None and "lower" in limit.keys() and "upper" in limit.keys():
            limits = (float(limit.get("lower")), float(limit.get("upper")))
        mimic_el = el.find("mimic")
        mimic = None
        if mimic_el is not None and kind != "fixed":
            mimic = Mimic(mimic_el.get("joint"), float(mimic_el.get("multiplier", 1.0)), float(mimic_el.get("offset", 0.0)))
        joints[name] = Joint(
            name=name,
            type=kind,
            parent=parent.get("link"),
            child=child.get("link"),
            origin=Origin("xyzrpy", xyz + rpy),
            axis=tuple(float(a) for a in axis),
            mimic=mimic,
            limits=limits,
        )
    children = {j.child for j in joints.values()}
    roots = [link for link in links if link not in children]
    if len(roots) != 1:
        raise InputError(path, f"expected exactly one root link, found {roots or 'none'}")
    return KinematicTree(name=robot.get("name", path.stem), root=roots[0], joints=_topological(path, roots[0], joints), source=path)


def _topological(path: Path, root: str, joints: dict[str, Joint]) -> tuple[Joint, ...]:
    by_parent: dict[str, list[Joint]] = {}
    for joint in joints.values():
        by_parent.setdefault(joint.parent, []).append(joint)
    ordered, stack = [], [root]
    while stack:
        link = stack.pop()
        for joint in reversed(by_parent.get(link, [])):
            ordered.append(joint)
            stack.append(joint.child)
    if len(ordered) != len(joints):
        orphans = sorted(set(joints) - {j.name for j in ordered})
        raise InputError(path, f"joints not connected to root link '{root}': {', '.join(orphans)}")
    return tuple(ordered)


def _fmt(values) -> str:
    return " ".join(repr(float(v)) if abs(v) > 0 else "0" for v in values)


def write_calibrated_urdf(source: str | Path, destination: str | Path, origins: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Copy `source` to `destination`, replacing the origin (xyz, rpy) of the joints named in `origins`."""
    source = Path(source)
    doc = parse_document(source)
    robot = doc.getroot()
    found = set()
    for el in robot.findall("joint"):
        name = el.get("name")
        if name not in origins:
            continue
        origin = el.find("origin")
        if origin is None:
            origin = etree.Element("origin")
            el.insert(0, origin)
            origin.tail = el.text
        xyz, rpy = origins[name]
        origin.set("xyz", _fmt(xyz))
        origin.set("rpy", _fmt(rpy))
        found.add(name)
    missing = set(origins) - found
    if missing:
        raise InputError(source, f"no joint named {', '.join(sorted(missing))}")
    raw = source.read_bytes()
    start, end = re.search(rb"<robot[\s>/]", raw).start(), raw.rfind(b"</robot>")
    body = etree.tostring(robot, encoding="UTF-8", with_tail=False)
    with open(destination, "wb") as handle:  # bytes outside <robot> (declaration, comments) verbatim
        handle.write(raw[:start] + body + (raw[end + len(b"</robot>") :] if end >= 0 else b"\n"))


def write_urdf(tree: KinematicTree, destination: str | Path, origins: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> None:
    """A new URDF for a tree (e.g. one built from a DH table), origins overridden by `origins`."""
    robot = etree.Element("robot", name=tree.name)
    robot.append(etree.Comment(f" generated by robocal from {tree.source.name if tree.source else tree.name} "))
    for link in tree.links:
        etree.SubElement(robot, "link", name=link)
    for joint in tree.joints:
        el = etree.SubElement(robot, "joint", name=joint.name, type=joint.type)
        if joint.name in (origins or {}):
            xyz, rpy = origins[joint.name]
        else:
            m = np.asarray(joint.origin.matrix())
            xyz, rpy = m[:3, 3], matrix_to_rpy(m[:3, :3])
        etree.SubElement(el, "origin", xyz=_fmt(xyz), rpy=_fmt(rpy))
        etree.SubElement(el, "parent", link=joint.parent)
        etree.SubElement(el, "child", link=joint.child)
        if joint.moves:
            etree.SubElement(el, "axis", xyz=_fmt(joint.axis))
        if joint.limits is not None:
            etree.SubElement(el, "limit", lower=repr(joint.limits[0]), upper=repr(joint.limits[1]), effort="0", velocity="0")
        if joint.mimic is not None:
            etree.SubElement(el, "mimic", joint=joint.mimic.joint, multiplier=repr(joint.mimic.multiplier), offset=repr(joint.mimic.offset))
    etree.indent(robot, space="  ")
    Path(destination).write_bytes(etree.tostring(robot, xml_declaration=True, encoding="UTF-8", pretty_print=True))
