"""The one internal kinematic tree that URDF files and DH tables are both turned into.

A joint places its child link relative to its parent link by a constant *origin* followed by
the joint *motion* (rotation about, or translation along, the joint axis). The origin keeps its
native coordinates (URDF xyz+rpy, or the four numbers of a DH row) so that calibration can
perturb exactly the numbers the user knows and write them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Literal

import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics import transforms as tf

OriginKind = Literal["xyzrpy", "mdh", "dh"]
JointType = Literal["revolute", "continuous", "prismatic", "fixed"]

ORIGIN_COORDINATES: dict[str, tuple[str, ...]] = {
    "xyzrpy": ("x", "y", "z", "roll", "pitch", "yaw"),
    "mdh": ("d", "theta", "a", "alpha"),
    "dh": ("d", "theta", "a", "alpha"),
}
# Which coordinates are lengths (m); the others are angles (rad).
LENGTH_COORDINATES = {"x", "y", "z", "d", "a"}
# Plausibility limits of a model file: no robot has joint origins a kilometre away (or angles of a
# thousand radians), and a tree of more joints than this is a generated or corrupted file whose
# forward kinematics would take minutes to compile.
MAX_ORIGIN_VALUE = 1e3
MAX_JOINTS = 2000


@dataclass(frozen=True)
class Origin:
    """Constant placement of a joint frame in its parent link, in native coordinates; `fixed`
    names those known exactly (a DH row's `fixed:`), which calibration holds at their value."""

    kind: OriginKind
    values: tuple[float, ...]
    fixed: tuple[str, ...] = ()

    @property
    def coordinates(self) -> tuple[str, ...]:
        return ORIGIN_COORDINATES[self.kind]

    def matrix(self, values=None):
        """4x4 transform for the given native values (defaults to the nominal ones): NumPy for
        NumPy values, JAX for JAX arrays (`transforms.array_module`)."""
        v = np.asarray(self.values, dtype=float) if values is None else values
        if self.kind == "xyzrpy":
            return tf.homogeneous(tf.rpy_to_matrix(v[3:6]), v[0:3])
        if self.kind == "mdh":
            return tf.dh_modified(v[0], v[1], v[2], v[3])
        return tf.dh_standard(v[0], v[1], v[2], v[3])


@dataclass(frozen=True)
class Mimic:
    """q = multiplier * q[joint] + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Joint:
    name: str
    type: JointType
    parent: str
    child: str
    origin: Origin
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    mimic: Mimic | None = None
    limits: tuple[float, float] | None = None

    @property
    def moves(self) -> bool:
        return self.type != "fixed"

    @property
    def actuated(self) -> bool:
        """An independent degree of freedom: moves and follows no other joint."""
        return self.moves and self.mimic is None

    def motion(self, q):
        """Transform produced by the joint variable q (NumPy or JAX, as q): a translation
        I + q T, a rotation A + sin(q) B + cos(q) C (`motion_basis`), a few primitives in a
        traced graph instead of Rodrigues' thirty."""
        if self.type == "fixed":
            return np.eye(4)
        constant, sine, cosine, scale = motion_basis(self.type, self.axis)
        if self.type == "prismatic":
            return constant + q * sine
        xp = tf.array_module(q)
        angle = q if scale == 1.0 else q * scale
        return constant + xp.sin(angle) * sine + xp.cos(angle) * cosine


@cache
def motion_basis(joint_type: str, axis: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Constant 4x4 matrices (A, B, C) and the axis length s of a moving joint's motion. Prismatic:
    Trans(axis q) = A + q B. Revolute about the unit axis u = axis / s by the angle s q, with K the
    skew matrix of u, Rodrigues' I + sin K + (1 - cos) K^2 = A + sin(s q) B + cos(s q) C with
    A = I + K^2, B = K, C = -K^2 (zero outside the rotation block, A[3, 3] = 1)."""
    a = np.asarray(axis, dtype=float)
    scale = float(np.linalg.norm(a))
    constant, sine, cosine = np.eye(4), np.zeros((4, 4)), np.zeros((4, 4))
    if joint_type == "prismatic":
        sine[:3, 3] = a
        return constant, sine, cosine, 1.0
    u = a / scale
    k = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    constant[:3, :3] += k @ k
    sine[:3, :3] = k
    cosine[:3, :3] = -(k @ k)
    return constant, sine, cosine, scale


@dataclass(frozen=True)
class KinematicTree:
    """Links connected by joints, listed parent-before-child from a single root link."""

    name: str
    root: str
    joints: tuple[Joint, ...]
    source: Path | None = None
    source_kind: Literal["urdf", "dh"] = "urdf"
    end_effectors: tuple[str, ...] = field(default=())

    def __post_init__(self):
        where = self.source or self.name
        if len(self.joints) > MAX_JOINTS:
            raise RobocalError(f"{where}: {len(self.joints)} joints, more than the {MAX_JOINTS} a robot model may have")
        if len(self.joint_index) != len(self.joints):
            twice = sorted({j.name for j in self.joints if sum(k.name == j.name for k in self.joints) > 1})
            raise RobocalError(f"{where}: joint names given twice: {', '.join(twice)}")
        seen = {self.root}
        for joint in self.joints:
            if joint.parent not in seen:
                raise RobocalError(f"{where}: joint '{joint.name}' comes before its parent link '{joint.parent}'")
            if joint.child in seen:
                raise RobocalError(f"{where}: link '{joint.child}' of joint '{joint.name}' already has a parent (a link has one parent joint)")
            seen.add(joint.child)
            bad = [c for c, v in zip(joint.origin.coordinates, joint.origin.values) if not abs(v) <= MAX_ORIGIN_VALUE]
            if bad:
                raise RobocalError(f"{where}: joint '{joint.name}': origin {', '.join(bad)} must be finite and within +-{MAX_ORIGIN_VALUE:g}")
        for joint in self.joints:
            if joint.mimic is not None and joint.mimic.joint not in self.joint_index:
                raise RobocalError(f"{where}: joint '{joint.name}' mimics unknown joint '{joint.mimic.joint}'")
        for joint in self.joints:
            followed, current = {joint.name}, joint
            while current.mimic is not None:
                current = self.joints[self.joint_index[current.mimic.joint]]
                if current.name in followed:
                    raise RobocalError(f"{where}: joint '{joint.name}' mimics itself through {', '.join(sorted(followed))}")
                followed.add(current.name)

    @cached_property
    def joint_index(self) -> dict[str, int]:
        return {j.name: i for i, j in enumerate(self.joints)}

    @cached_property
    def links(self) -> tuple[str, ...]:
        return (self.root,) + tuple(j.child for j in self.joints)

    @cached_property
    def parent_joint(self) -> dict[str, int]:
        """Index of the joint whose child is the link."""
        return {j.child: i for i, j in enumerate(self.joints)}

    @cached_property
    def actuated(self) -> tuple[str, ...]:
        """Independent joint variables, in tree order (the order of a configuration vector)."""
        return tuple(j.name for j in self.joints if j.actuated)

    def joint(self, name: str) -> Joint:
        try:
            return self.joints[self.joint_index[name]]
        except KeyError:
            raise RobocalError(f"{self.source or self.name}: no joint named '{name}'") from None

    def has_link(self, link: str) -> bool:
        return link == self.root or link in self.parent_joint

    def chain(self, link: str) -> tuple[int, ...]:
        """Indices of the joints from the root to the link, root first."""
        if not self.has_link(link):
            raise RobocalError(f"{self.source or self.name}: no link named '{link}'")
        out = []
        while link != self.root:
            i = self.parent_joint[link]
            out.append(i)
            link = self.joints[i].parent
        return tuple(reversed(out))

    def driver(self, name: str) -> tuple[str, float, float]:
        """The actuated joint that drives a moving joint, with the composed mimic gain and offset."""
        joint, gain, offset = self.joint(name), 1.0, 0.0
        while joint.mimic is not None:
            gain, offset = gain * joint.mimic.multiplier, offset + gain * joint.mimic.offset
            joint = self.joint(joint.mimic.joint)
        if not joint.actuated:
            raise RobocalError(f"{self.source or self.name}: joint '{name}' follows fixed joint '{joint.name}'")
        return joint.name, gain, offset

    def actuated_for(self, links) -> tuple[str, ...]:
        """Actuated joints that move at least one of the links (the columns a data file needs)."""
        needed = set()
        for link in links:
            for i in self.chain(link):
                if self.joints[i].moves:
                    needed.add(self.driver(self.joints[i].name)[0])
        return tuple(name for name in self.actuated if name in needed)
