"""URDF in and out with lxml: read a kinematic tree, write back calibrated joint origins (and a
calibrated wheel's cylinder radii) only.

Reading keeps the parsed document so that writing changes the `xyz`/`rpy` attributes of the
calibrated joints' `<origin>` elements (and the `radius` of calibrated wheels' `<cylinder>`s) and
nothing else: comments, unknown tags, attribute order, whitespace, and every byte outside the
`<robot>` element are preserved.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from lxml import etree

from robocal.errors import InputError, RobocalError
from robocal.kinematics.transforms import matrix_to_rpy
from robocal.kinematics.tree import MAX_JOINTS, MAX_ORIGIN_VALUE, Joint, KinematicTree, Mimic, Origin

SUPPORTED = ("revolute", "continuous", "prismatic", "fixed")


# A URDF is a small text file; one this large is not a robot description (meshes live in files
# of their own). Parsing is bounded so that a hostile file cannot exhaust memory.
MAX_BYTES = 32 * 2**20


def _floats(path: Path, element, attribute: str, default: str, count: int) -> tuple[float, ...]:
    """`count` finite numbers from an attribute (the default where the element or attribute is absent)."""
    text = element.get(attribute, default) if element is not None else default
    try:
        values = tuple(float(v) for v in text.split())
    except ValueError:
        values = ()
    if len(values) != count or not all(abs(v) <= MAX_ORIGIN_VALUE for v in values):
        raise InputError(
            path, f"<{element.tag} {attribute}='{text}'> must be {count} numbers, finite and within +-{MAX_ORIGIN_VALUE:g}", line=element.sourceline
        )
    return values


def _float(path: Path, element, attribute: str, default: float | None = None) -> float:
    """One finite number from an attribute; absent is an error unless there is a default."""
    text = element.get(attribute)
    if text is None and default is not None:
        return default
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value):
        raise InputError(path, f"<{element.tag}> attribute {attribute}='{text}' must be a finite number", line=element.sourceline)
    return value


def _name(path: Path, element, what: str) -> str:
    name = (element.get("name") or "").strip()
    if not name:
        raise InputError(path, f"a <{what}> without a name", line=element.sourceline)
    return name


def parse_document(path: str | Path) -> etree._ElementTree:
    """The parsed XML, without DTDs, entity expansion or network access (XXE, billion laughs)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(path, f"cannot read URDF ({exc.strerror})") from None
    if size > MAX_BYTES:
        raise InputError(path, f"{size / 2**20:.0f} MiB is more than the {MAX_BYTES // 2**20} MiB a URDF may have")
    parser = etree.XMLParser(remove_comments=False, remove_blank_text=False, resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        document = etree.parse(str(path), parser)
    except OSError as exc:
        raise InputError(path, f"cannot read URDF ({exc})") from None
    except etree.XMLSyntaxError as exc:
        raise InputError(path, f"not valid XML: {exc.msg.splitlines()[0]}", line=exc.lineno) from None  # libxml2 may add "\n, line L, column C"
    info = document.docinfo
    if info.internalDTD is not None or info.system_url or info.public_id:
        raw = path.read_bytes()
        head = raw[: raw.find(b"<!DOCTYPE") + 1]
        raise InputError(
            path,
            "declares a DOCTYPE; a URDF has none, and robocal reads no DTD (its entities could read local "
            "files, reach the network or expand without bound): remove the <!DOCTYPE ...> declaration",
            line=head.count(b"\n") + 1,
        )
    return document


def load_urdf(path: str | Path) -> KinematicTree:
    """Kinematic tree of a URDF file (meshes and inertias are never read)."""
    path = Path(path)
    robot = parse_document(path).getroot()
    if robot.tag != "robot":
        raise InputError(path, f"root element is <{robot.tag}>, expected <robot>", line=robot.sourceline)
    links: dict[str, int] = {}
    for el in robot.findall("link"):
        name = _name(path, el, "link")
        if name in links:
            raise InputError(path, f"link '{name}' is defined twice (first on line {links[name]})", line=el.sourceline)
        links[name] = el.sourceline
    if len(robot.findall("joint")) > MAX_JOINTS:
        raise InputError(path, f"{len(robot.findall('joint'))} joints, more than the {MAX_JOINTS} a robot model may have")
    joints: dict[str, Joint] = {}
    lines: dict[str, int] = {}
    parent_of: dict[str, str] = {}
    for el in robot.findall("joint"):
        joint = _joint(path, el, links)
        if joint.name in joints:
            raise InputError(path, f"joint '{joint.name}' is defined twice (first on line {lines[joint.name]})", line=el.sourceline)
        if joint.child in parent_of:
            raise InputError(
                path,
                f"link '{joint.child}' is the child of joints '{parent_of[joint.child]}' and '{joint.name}'; a link has one parent joint",
                line=el.sourceline,
            )
        joints[joint.name], lines[joint.name], parent_of[joint.child] = joint, el.sourceline, joint.name
    for name, joint in joints.items():
        if joint.mimic is not None and joint.mimic.joint not in joints:
            raise InputError(path, f"joint '{name}' mimics unknown joint '{joint.mimic.joint}'", line=lines[name])
    roots = [link for link in links if link not in parent_of]
    if len(roots) != 1:
        raise InputError(path, f"expected exactly one root link, found {', '.join(roots) or 'none'}" + ("" if roots else " (the joints form a cycle)"))
    try:
        return KinematicTree(name=robot.get("name", path.stem), root=roots[0], joints=_topological(path, roots[0], joints), source=path)
    except RobocalError as exc:  # the tree's own checks (mimic cycles), located by file
        raise InputError(path, str(exc).removeprefix(f"{path}: ")) from None


def _joint(path: Path, el, links: dict[str, int]) -> Joint:
    name, kind = _name(path, el, "joint"), el.get("type")
    if kind not in SUPPORTED:
        raise InputError(path, f"joint '{name}' has type '{kind}'; supported: {', '.join(SUPPORTED)}", line=el.sourceline)
    ends = {}
    for end in ("parent", "child"):
        tag = el.find(end)
        if tag is None or not tag.get("link"):
            raise InputError(path, f"joint '{name}' needs <{end} link='...'/>", line=el.sourceline)
        if tag.get("link") not in links:
            raise InputError(path, f"joint '{name}': {end} link '{tag.get('link')}' is not a <link> of the file", line=tag.sourceline)
        ends[end] = tag.get("link")
    if ends["parent"] == ends["child"]:
        raise InputError(path, f"joint '{name}' connects link '{ends['child']}' to itself", line=el.sourceline)
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
        limits = (_float(path, limit, "lower"), _float(path, limit, "upper"))
        if limits[0] > limits[1]:
            raise InputError(path, f"joint '{name}': lower limit {limits[0]:g} above upper limit {limits[1]:g}", line=limit.sourceline)
    mimic_el = el.find("mimic")
    mimic = None
    if mimic_el is not None and kind != "fixed":
        if not mimic_el.get("joint"):
            raise InputError(path, f"joint '{name}': <mimic> needs joint='...'", line=mimic_el.sourceline)
        mimic = Mimic(mimic_el.get("joint"), _float(path, mimic_el, "multiplier", 1.0), _float(path, mimic_el, "offset", 0.0))
    return Joint(
        name=name,
        type=kind,
        parent=ends["parent"],
        child=ends["child"],
        origin=Origin("xyzrpy", xyz + rpy),
        axis=(float(axis[0]), float(axis[1]), float(axis[2])),
        mimic=mimic,
        limits=limits,
    )


def _topological(path: Path, root: str, joints: dict[str, Joint]) -> tuple[Joint, ...]:
    """Joints parent-before-child from the root. Every link has at most one parent joint (checked
    by the caller), so the walk from the root visits each joint once and cannot cycle."""
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
        raise InputError(path, f"joints not connected to root link '{root}' (a cycle or a second tree): {', '.join(orphans)}")
    return tuple(ordered)


def _fmt(values) -> str:
    return " ".join(repr(float(v)) if abs(v) > 0 else "0" for v in values)


def link_cylinders(robot, link: str) -> list:
    """The `<cylinder>` elements of the `<collision>` and `<visual>` geometry of link `link`
    (`robot`: the document's root element)."""
    return [c for el in robot.findall("link") if el.get("name") == link for part in ("collision", "visual") for c in el.findall(f"{part}/geometry/cylinder")]


def write_calibrated_urdf(
    source: str | Path,
    destination: str | Path,
    origins: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    radii: Mapping[str, float] | None = None,
) -> None:
    """Copy `source` to `destination`, replacing the origin (xyz, rpy; rpy None: kept) of the
    joints named in `origins` and the `radius` of the collision and visual cylinders of the links
    named in `radii` (a calibrated wheel)."""
    source = Path(source)
    doc = parse_document(source)
    robot = doc.getroot()
    for link, radius in (radii or {}).items():
        cylinders = link_cylinders(robot, link)
        if not cylinders:
            raise InputError(source, f"link '{link}' has no <cylinder> in its <collision> or <visual>")
        for cylinder in cylinders:
            cylinder.set("radius", _fmt([radius]))
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
        if rpy is not None:
            origin.set("rpy", _fmt(rpy))
        found.add(name)
    missing = set(origins) - found
    if missing:
        raise InputError(source, f"no joint named {', '.join(sorted(missing))}")
    raw = source.read_bytes()
    opening = re.search(rb"<robot[\s>/]", raw)
    if opening is None:
        raise InputError(source, "no <robot> element")
    start, end = opening.start(), raw.rfind(b"</robot>")
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
        if origins is not None and joint.name in origins:
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
