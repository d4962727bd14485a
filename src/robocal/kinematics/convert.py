"""A kinematic tree (from a URDF or a DH table) as a DH table, and a DH table as a URDF tree:
`robocal convert`. Pure functions on `KinematicTree`; files are read and written by the caller.

Tree -> DH table. The moving joints are split into serial chains (a chain continues while a
joint's rigid subtree holds exactly one further moving joint). Each row's DH frame has its z axis
on the joint axis (at the reference configuration, every joint variable 0) and its x axis on the
common normal with the next axis (modified) or from the previous one (standard); where that
normal is free, the frame is the URDF link's own when it can be (`dh_frames`). Nothing is
approximated:

- the chain's base is the table's 6-DOF `base` (identity where the parent link's frame already
  is in DH form with the first row);
- two consecutive axes with no usable DH row between them (nearly but not exactly parallel: a
  common normal farther than `dh_frames.FAR`) end the chain; the next chain starts on the last
  DH link with a 6-DOF `base`: the extra fixed transform;
- every URDF link keeps its name and pose: a DH link where the frames coincide, the chain's tip
  where its placement is a DH row, else a chain without rows (a fixed frame: `base` only) on its
  parent link or on its joint's DH link.

`table_difference` checks a conversion: the largest difference in the pose of any common link.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import yaml

from robocal.errors import RobocalError
from robocal.kinematics.dh_frames import ANGLES, Line, coincide, common_normal, dh_values, frame_near, placement
from robocal.kinematics.tree import Joint, KinematicTree, Origin

Convention = Literal["modified", "standard"]


def reference_poses(tree: KinematicTree) -> dict[str, np.ndarray]:
    """Pose of every link in the root frame with every joint variable 0."""
    poses = {tree.root: np.eye(4)}
    for joint in tree.joints:
        poses[joint.child] = poses[joint.parent] @ joint.origin.matrix()
    return poses


def link_poses(tree: KinematicTree, q: dict[str, float]) -> dict[str, np.ndarray]:
    """Pose of every link in the root frame for the actuated joint values q (NumPy)."""
    poses = {tree.root: np.eye(4)}
    for joint in tree.joints:
        pose = poses[joint.parent] @ joint.origin.matrix()
        if joint.moves:
            driver, gain, offset = tree.driver(joint.name)
            pose = pose @ joint.motion(gain * q[driver] + offset)
        poses[joint.child] = pose
    return poses


def table_difference(a: KinematicTree, b: KinematicTree, samples: int = 20, seed: int = 0) -> tuple[float, float]:
    """(largest position difference in m, largest rotation-matrix entry difference) over the
    links both trees have, at the reference and at `samples` random configurations in +-pi."""
    if set(a.actuated) != set(b.actuated):
        raise RobocalError(f"the two models have different actuated joints: {sorted(set(a.actuated) ^ set(b.actuated))}")
    common = set(a.links) & set(b.links)
    rng = np.random.default_rng(seed)
    worst = [0.0, 0.0]
    for k in range(samples + 1):
        q = {name: (0.0 if k == 0 else float(rng.uniform(-np.pi, np.pi))) for name in a.actuated}
        pa, pb = link_poses(a, q), link_poses(b, q)
        for link in common:
            worst[0] = max(worst[0], float(np.abs(pa[link][:3, 3] - pb[link][:3, 3]).max()))
            worst[1] = max(worst[1], float(np.abs(pa[link][:3, :3] - pb[link][:3, :3]).max()))
    return worst[0], worst[1]


# ---- the chains of a tree -----------------------------------------------------------------------


@dataclass(eq=False)
class _Row:
    joint: Joint
    frame: np.ndarray  # the row's DH link frame in the root frame, reference configuration
    link: str | None = None  # the URDF link when the frames coincide
    name: str = ""  # output link name


@dataclass(eq=False)
class _Chain:
    parent: str | _Row  # a link of the source tree, or the DH link of a row of an earlier chain
    parent_frame: np.ndarray
    rows: list[_Row]
    base_frame: np.ndarray = field(default_factory=lambda: np.eye(4))  # the chain base in the root frame
    tip: str | None = None  # a link of the source tree, else a generated `<name>_tip`
    tip_frame: np.ndarray | None = None
    base_link: str | None = None  # a source link that the chain's `<name>_base` is
    base_origin: Origin | None = None  # the source's own numbers for the base, where it is a source joint's origin
    name: str = ""

    @property
    def parent_name(self) -> str:
        return self.parent if isinstance(self.parent, str) else self.parent.name

    def defines(self) -> list[str]:
        tip = [self.tip or f"{self.name}_tip"] if self.rows or self.tip else []
        return [self.base_link or f"{self.name}_base", *(r.name for r in self.rows), *tip]


class _Plan:
    """The chains of one tree in one convention, built from the tree's reference geometry."""

    def __init__(self, tree: KinematicTree, convention: Convention):
        self.tree, self.convention = tree, convention
        self.poses = reference_poses(tree)
        self.children: dict[str, list[Joint]] = {}
        for joint in tree.joints:
            self.children.setdefault(joint.parent, []).append(joint)
        self.represented = {tree.root}
        self.names = _Names(tree)
        self.chains: list[_Chain] = []
        self.notes: list[str] = []

    def line(self, joint: Joint) -> Line:
        pose = self.poses[joint.child]
        return Line(pose[:3, 3].copy(), pose[:3, :3] @ np.asarray(joint.axis))

    def moving_below(self, link: str) -> list[Joint]:
        """The moving joints reached from a link through fixed joints only, in tree order."""
        found = []
        for joint in self.children.get(link, []):
            found += [joint] if joint.moves else self.moving_below(joint.child)
        return found

    def sequences(self) -> list[list[Joint]]:
        """Serial runs of moving joints: each continues while exactly one moving joint follows."""
        starts = self.moving_below(self.tree.root)
        runs = []
        while starts:
            run = [starts.pop(0)]
            while len(following := self.moving_below(run[-1].child)) == 1:
                run.append(following[0])
            following = self.moving_below(run[-1].child)
            starts += following
            runs.append(run)
        return runs

    def build(self) -> None:
        for run in self.sequences():
            build = self._modified if self.convention == "modified" else self._standard
            for chain in build(run, run[0].parent, self.poses[run[0].parent]):
                self._finish(chain)
        for joint in self.tree.joints:  # every other link: a fixed frame on its parent or its DH link
            if joint.child in self.represented:
                continue
            row = next((r for c in self.chains for r in c.rows if r.joint is joint), None)
            on: str | _Row = row if row is not None else joint.parent
            parent_frame = row.frame if row is not None else self.poses[joint.parent]
            fixed = _Chain(on, parent_frame, [], self.poses[joint.child], tip=joint.child, tip_frame=self.poses[joint.child])
            fixed.base_origin = None if row is not None else joint.origin
            self.names.assign(fixed, joint.child)
            self.chains.append(fixed)
            self.represented.add(joint.child)

    def _modified(self, run: list[Joint], parent: str | _Row, parent_frame: np.ndarray) -> list[_Chain]:
        """Modified DH: row k's x axis is the common normal with axis k+1; a chain ends where that
        normal is unusable, and at the run's end (where the last frame is the URDF link's if it can)."""
        chains: list[_Chain] = []
        rows: list[_Row] = []
        lines = [self.line(j) for j in run]
        for k, joint in enumerate(run):
            near, frame = self.poses[joint.child], None
            if k + 1 < len(run):
                normal = common_normal(lines[k], lines[k + 1], near[:3, 0])
                if not normal.far:
                    frame = frame_near(lines[k], near, normal.x, normal.foot1)
                    following = frame_near(lines[k + 1], self.poses[run[k + 1].child])
                    if dh_values(np.linalg.inv(frame) @ following, "modified") is None:
                        frame = None
                if frame is None:
                    self.notes.append(_split_note(joint, run[k + 1]))
            if frame is None:  # the last row of a chain
                frame = near.copy() if lines[k].holds(near) else _last_modified(lines[k], near)
                rows.append(_Row(joint, frame))
                chains.append(_Chain(parent, parent_frame, rows))
                parent, parent_frame, rows = rows[-1], frame, []
            else:
                rows.append(_Row(joint, frame))
        return chains

    def _standard(self, run: list[Joint], parent: str | _Row, parent_frame: np.ndarray) -> list[_Chain]:
        """Standard DH: robocal's link k has its x axis on the common normal from axis k-1; the first
        row's frame is the chain base (the parent link's own frame when its z is on the axis)."""
        chains: list[_Chain] = []
        rows: list[_Row] = []
        lines = [self.line(j) for j in run]
        for k, joint in enumerate(run):
            near, frame = self.poses[joint.child], None
            if rows:
                normal = common_normal(lines[k - 1], lines[k], near[:3, 0])
                if not normal.far:
                    frame = frame_near(lines[k], near, normal.x, normal.foot2)
                    if dh_values(np.linalg.inv(rows[-1].frame) @ frame, "standard") is None:
                        frame = None
                if frame is None:
                    self.notes.append(_split_note(run[k - 1], joint))
                    chains.append(_Chain(parent, parent_frame, rows))
                    parent, parent_frame, rows = rows[-1], rows[-1].frame, []
            if frame is None:
                frame = parent_frame.copy() if lines[k].holds(parent_frame) else (near.copy() if lines[k].holds(near) else frame_near(lines[k], near))
            rows.append(_Row(joint, frame))
        chains.append(_Chain(parent, parent_frame, rows))
        return chains

    def _finish(self, chain: _Chain) -> None:
        """Name the rows' URDF links, choose the base and the tip, and claim the links it holds."""
        for row in chain.rows:
            if coincide(row.frame, self.poses[row.joint.child]):
                row.link = row.joint.child
                self.represented.add(row.link)
        first, last = chain.rows[0], chain.rows[-1]
        if self.convention == "standard":
            chain.base_frame = first.frame
        else:
            in_form = dh_values(np.linalg.inv(chain.parent_frame) @ first.frame, "modified") is not None
            chain.base_frame = chain.parent_frame if in_form else first.frame
        candidates = ([] if last.link else [last.joint.child]) + [j.child for j in self.children.get(last.joint.child, []) if not j.moves]
        for candidate in candidates:
            if candidate not in self.represented and dh_values(np.linalg.inv(last.frame) @ self.poses[candidate], self.convention) is not None:
                chain.tip, chain.tip_frame = candidate, self.poses[candidate]
                self.represented.add(candidate)
                break
        self._base_link(chain)
        if not chain.name:
            self.names.assign(chain, _common_stem([r.joint.name for r in chain.rows]) or self.tree.name)
        self.chains.append(chain)

    def _base_link(self, chain: _Chain) -> None:
        """A chain whose base is a fixed link `<name>_base` of the source (a DH table's own chain
        base, read back from its URDF) gets that name and that link's parent: DH -> URDF -> DH
        gives the table back."""
        link = chain.parent
        if not isinstance(link, str) or link in self.represented or not link.endswith("_base") or len(link) <= 5:
            return
        joint = self.tree.joints[self.tree.parent_joint[link]]
        if joint.moves or not coincide(chain.base_frame, chain.parent_frame):
            return
        chain.base_link, chain.parent, chain.parent_frame = link, joint.parent, self.poses[joint.parent]
        if self.names.assign(chain, link[: -len("_base")], only=True):
            self.represented.add(link)
            chain.base_origin = joint.origin
        else:
            chain.base_link, chain.parent, chain.parent_frame = None, link, self.poses[link]


def _last_modified(line: Line, near: np.ndarray) -> np.ndarray:
    """The last DH frame of a chain whose URDF link frame is not one: on the axis at the link's
    origin, its x axis perpendicular to both z axes, so that the link is the tip in DH form."""
    cross = np.cross(line.direction, near[:3, 2])
    return frame_near(line, near, cross if np.linalg.norm(cross) > 1e-6 else None)


def _split_note(before: Joint, after: Joint) -> str:
    return (
        f"joints '{before.name}' and '{after.name}': no exact DH row joins their axes (nearly but not exactly parallel); "
        f"a fixed transform (a new chain's base) joins them"
    )


def _common_stem(names: list[str]) -> str:
    """The common prefix of joint names without trailing digits, '_' and 'joint' (panda_joint1..7:
    panda); one joint's own name."""
    if len(names) == 1:
        return names[0]
    stem = os.path.commonprefix(names).rstrip("0123456789_-")
    stem = stem.removesuffix("joint").rstrip("_-")
    return stem


class _Names:
    """The names a DH table generates (`<chain>_base`, `<chain>_link<k>`, `<chain>_tip` links,
    `<chain>_base_joint` and `<tip>_joint` joints), kept apart from the source's and each other."""

    def __init__(self, tree: KinematicTree):
        self.links = set(tree.links)
        self.joints = {j.name for j in tree.joints if j.moves}

    def generated(self, chain: _Chain, name: str) -> tuple[set[str], set[str]]:
        links = {f"{name}_link{k + 1}" for k, row in enumerate(chain.rows) if row.link is None}
        links |= set() if chain.base_link else {f"{name}_base"}
        links |= {f"{name}_tip"} if chain.tip is None else set()
        return links, {f"{name}_base_joint", f"{chain.tip or name + '_tip'}_joint"}

    def assign(self, chain: _Chain, hint: str, only: bool = False) -> bool:
        """Name the chain `hint` (or `hint_2`, `hint_3`, ... unless `only`) with none of its
        generated names taken; False when `only` and it is."""
        if chain.tip is not None and f"{chain.tip}_joint" in self.joints:
            raise RobocalError(
                f"link '{chain.tip}' would be placed by a fixed joint '{chain.tip}_joint' in the DH table, the name of another joint; rename one of them"
            )
        for n in range(1, 1000):
            name = hint if n == 1 else f"{hint}_{n}"
            links, joints = self.generated(chain, name)
            if not links & self.links and not joints & self.joints:
                self.links |= links
                self.joints |= joints
                chain.name = name
                for k, row in enumerate(chain.rows):
                    row.name = row.link or f"{name}_link{k + 1}"
                return True
            if only:
                return False
        raise RobocalError(f"no free chain name from '{hint}'")  # pragma: no cover (a thousand taken)


@dataclass(frozen=True)
class Conversion:
    """A DH table (the mapping docs/formats.md section 3 describes) and what the conversion did."""

    table: dict
    coincide: tuple[str, ...]  # source links that are DH links (rows' links or tips)
    fixed: tuple[str, ...]  # source links kept as fixed frames (chains without rows)
    notes: tuple[str, ...]  # fixed transforms inserted between rows, and why


def tree_to_dh(tree: KinematicTree, convention: Convention = "modified") -> Conversion:
    """The tree as a DH table in the given convention: every link of the tree keeps its name and
    its pose at every configuration (see the module's docstring)."""
    plan = _Plan(tree, convention)
    plan.build()
    if any(j.origin.fixed for j in tree.joints):
        plan.notes.append("the source's `fixed` DH entries are not carried over (the rows are new numbers)")
    chains = _ordered(plan.chains, tree.root)
    table = {"name": tree.name, "convention": convention, "root": tree.root, "chains": [_chain_mapping(c, convention, tree.root) for c in chains]}
    dh_links = {r.link for c in chains for r in c.rows if r.link} | {c.tip for c in chains if c.rows and c.tip}
    fixed = tuple(c.tip for c in chains if not c.rows and c.tip)
    return Conversion(table, tuple(sorted(dh_links)), fixed, tuple(plan.notes))


def _ordered(chains: list[_Chain], root: str) -> list[_Chain]:
    """Chains in an order where each one's parent link is defined by an earlier one."""
    defined, pending, out = {root}, list(chains), []
    while pending:
        ready = [c for c in pending if c.parent_name in defined]
        if not ready:  # pragma: no cover (every parent is a link some chain defines)
            raise RuntimeError(f"DH conversion: no chain defines {sorted({c.parent_name for c in pending})}")
        for chain in ready:
            out.append(chain)
            defined |= set(chain.defines())
            pending.remove(chain)
    return out


def _values(t: np.ndarray, convention: Convention) -> tuple[float, float, float, float]:
    values = dh_values(t, convention)
    if values is None:  # pragma: no cover (each row was checked when its frame was chosen)
        raise RuntimeError("DH conversion: a row is not in DH form")
    return values


def _chain_mapping(chain: _Chain, convention: Convention, root: str) -> dict:
    out: dict = {"name": chain.name}
    if chain.parent_name != root:
        out["parent"] = chain.parent_name
    base = np.linalg.inv(chain.parent_frame) @ chain.base_frame
    if chain.base_origin is not None and chain.base_origin.kind == "xyzrpy" and any(chain.base_origin.values):
        out["base"] = {"xyz": list(chain.base_origin.values[:3]), "rpy": list(chain.base_origin.values[3:])}  # as the source wrote it
    elif not coincide(base, np.eye(4)):
        out["base"] = placement(base)
    frames = [r.frame for r in chain.rows]
    rows = []
    for k, row in enumerate(chain.rows):
        if convention == "modified":
            values = _values(np.linalg.inv(frames[k - 1] if k else chain.base_frame) @ row.frame, convention)
        else:
            following = frames[k + 1] if k + 1 < len(frames) else chain.tip_frame
            values = (0.0, 0.0, 0.0, 0.0) if following is None else _values(np.linalg.inv(row.frame) @ following, convention)
        rows.append(_row_mapping(row, values))
    out["joints"] = rows
    out["tip"] = {"name": chain.tip or f"{chain.name}_tip"}
    if convention == "modified" and chain.rows:
        values = (0.0, 0.0, 0.0, 0.0) if chain.tip_frame is None else _values(np.linalg.inv(frames[-1]) @ chain.tip_frame, convention)
        out["tip"].update(zip(("d", "theta", "a", "alpha"), values))
    return out


def _row_mapping(row: _Row, values: tuple[float, float, float, float]) -> dict:
    joint = row.joint
    out: dict = {"name": joint.name}
    if joint.type == "prismatic":
        out["type"] = "prismatic"
    if row.link:
        out["link"] = row.link
    out.update(zip(("d", "theta", "a", "alpha"), values))
    if joint.limits is not None:
        out["limits"] = [float(v) for v in joint.limits]
    if joint.mimic is not None:
        mimic = {"joint": joint.mimic.joint, "multiplier": joint.mimic.multiplier, "offset": joint.mimic.offset}
        out["mimic"] = {k: v for k, v in mimic.items() if k == "joint" or v != {"multiplier": 1.0, "offset": 0.0}[k]}
    return out


def urdf_tree(tree: KinematicTree) -> KinematicTree:
    """The tree as `urdf.write_urdf` should write it for URDF readers: a revolute joint without
    limits is `continuous` (ROS and Pinocchio refuse a revolute joint without <limit>)."""
    joints = tuple(replace(j, type="continuous") if j.type == "revolute" and j.limits is None else j for j in tree.joints)
    return replace(tree, joints=joints)


# ---- the DH table as text -----------------------------------------------------------------------


def _number(value: float) -> str:
    """A number as the DH reader reads it back bit for bit: 0, a multiple of pi / 12 as its
    expression, else Python's shortest repr (with a point, so YAML reads it as a float)."""
    value = float(value)
    if value == 0.0:
        return "0"
    if value in ANGLES:
        return ANGLES[value]
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}.0e{exponent}" if exponent and "." not in mantissa else text


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")


def _text(value) -> str:
    """One YAML flow value: a name (quoted where YAML would read it otherwise), a number or a list."""
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and yaml.safe_load(value) == value
        return value if plain else json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    return _number(value)


def dh_text(table: dict, comment: str = "") -> str:
    """The DH table as YAML in the packaged tables' layout: one row per line."""
    lines = [f"# {line}" for line in comment.splitlines()]
    lines += [f"name: {_text(table['name'])}", f"convention: {table['convention']}", f"root: {_text(table['root'])}"]
    lines.append("chains:" if table["chains"] else "chains: []")
    for chain in table["chains"]:
        lines.append(f"  - name: {_text(chain['name'])}")
        for key in ("parent", "base"):
            if key in chain:
                lines.append(f"    {key}: {_text(chain[key])}")
        if chain["joints"]:
            lines.append("    joints:")
            lines += [f"      - {_text(row)}" for row in chain["joints"]]
        else:
            lines.append("    joints: []")
        lines.append(f"    tip: {_text(chain['tip'])}")
    return "\n".join(lines) + "\n"
