"""The hand as the grasp controller and the simulator both see it.

Kinematics come from the project's own model (the packaged DH table of the DLR-Hand II, or any
URDF with the same structure), contact geometry from its capsules (a packaged geometry file or
the URDF's collisions), and the palm, whose shape is not published, is one box below the finger
bases (`PALM`). The hand's root link (the palm) is the world frame of the simulation: the hand is
fixed in space.

Everything here is plain numpy: the controller evaluates it a few times per grasp and the
simulator builder once, so there is nothing to compile.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from robocal.errors import RobocalError
from robocal.geometry.links import GeometryConfig, LinkShape, load_geometry
from robocal.geometry.primitives import Capsule
from robocal.kinematics.load import load_robot
from robocal.kinematics.tree import KinematicTree
from robocal.models import packaged


@dataclass(frozen=True)
class PalmBox:
    """A box in the palm frame: center (m) and half extents (m), axis aligned."""

    center: tuple[float, float, float]
    half_extents: tuple[float, float, float]


# Below the finger bases (z 0.10-0.14 m), spanning the four bases in x and y; its top face
# (z = 0.095 m) is what a power grasp presses the object against. Chosen, not published.
PALM = PalmBox(center=(-0.005, -0.012, 0.055), half_extents=(0.055, 0.065, 0.04))
EFFORT = 2.0  # Nm, the joints' torque limit (the shared DLR-Hand II URDF's effort)


@dataclass(frozen=True)
class Hand:
    """A fixed multi-fingered hand: tree, capsules per link, palm box, the joints' torque limit."""

    tree: KinematicTree
    capsules: dict[str, tuple[Capsule, ...]]
    palm: PalmBox = PALM
    effort: float = EFFORT  # Nm

    @classmethod
    def load(cls, robot: str | Path | None = None, geometry: str | Path | None = None) -> Hand:
        """The packaged DLR-Hand II by default; `robot` a URDF or DH table, `geometry` a YAML
        geometry file or a URDF with capsule collisions (defaults: the packaged capsules, or the
        robot file itself when it is a URDF)."""
        robot = Path(robot) if robot is not None else packaged("dlr_hand_ii.yaml")
        if geometry is None:
            geometry = robot if robot.suffix not in (".yaml", ".yml") else packaged("dlr_hand_ii_geometry.yaml")
        tree = load_robot(robot)
        shapes = load_geometry(GeometryConfig(files=[Path(geometry)]), Path(geometry).parent)
        capsules = {}
        for link, link_shapes in shapes.items():
            if not tree.has_link(link):
                raise RobocalError(f"{geometry}: shapes for link '{link}', which {robot} does not have")
            capsules[link] = tuple(_capsule_in_link(s, geometry) for s in link_shapes)
        return cls(tree, capsules)

    @cached_property
    def joints(self) -> tuple[str, ...]:
        """The actuated joints, in the order of every configuration vector here."""
        return self.tree.actuated

    @cached_property
    def _leaves(self) -> tuple[str, ...]:
        """The last link of every finger chain (links that are no joint's parent), in tree order."""
        parents = {j.parent for j in self.tree.joints}
        return tuple(j.child for j in self.tree.joints if j.child not in parents)

    @cached_property
    def fingers(self) -> tuple[str, ...]:
        """Finger names: the leaf link names without a `_tip` suffix, in tree order."""
        return tuple(leaf.removesuffix("_tip") for leaf in self._leaves)

    @cached_property
    def tips(self) -> tuple[str, ...]:
        """Fingertip (distal contact) link of each finger: the last capsule-bearing link of its chain."""
        out = []
        for finger, leaf in zip(self.fingers, self._leaves):
            links = [self.tree.joints[i].child for i in self.tree.chain(leaf)]
            bearing = [link for link in links if link in self.capsules]
            if not bearing:
                raise RobocalError(f"{self.tree.source}: finger '{finger}' has no contact capsules")
            out.append(bearing[-1])
        return tuple(out)

    def finger_of(self, link: str) -> int | None:
        """Index of the finger a link belongs to (None for the palm)."""
        if link == self.tree.root:
            return None
        for k, leaf in enumerate(self._leaves):
            if link in {self.tree.joints[i].child for i in self.tree.chain(leaf)}:
                return k
        raise RobocalError(f"link '{link}' is on no finger of {self.tree.name}")

    @cached_property
    def limits(self) -> np.ndarray:
        """(L, 2) joint limits of the actuated joints (rad)."""
        return np.array([self.tree.joint(name).limits or (-np.inf, np.inf) for name in self.joints], dtype=float)

    @cached_property
    def origins(self) -> list[np.ndarray]:
        """Every joint's constant origin transform (4x4, in the order of `tree.joints`)."""
        return [np.asarray(j.origin.matrix(), dtype=float) for j in self.tree.joints]

    def joint_values(self, q: np.ndarray) -> np.ndarray:
        """Value of every tree joint (mimic joints follow their driver; fixed joints 0)."""
        column = {name: i for i, name in enumerate(self.joints)}
        out = np.zeros(len(self.tree.joints))
        for i, joint in enumerate(self.tree.joints):
            if joint.moves:
                driver, gain, offset = self.tree.driver(joint.name)
                out[i] = gain * q[column[driver]] + offset
        return out

    def link_poses(self, q: np.ndarray) -> dict[str, np.ndarray]:
        """4x4 pose of every link in the palm frame at actuated configuration q (L,)."""
        values = self.joint_values(np.asarray(q, dtype=float))
        poses = {self.tree.root: np.eye(4)}
        for joint, constant, value in zip(self.tree.joints, self.origins, values):
            pose = poses[joint.parent] @ constant
            if joint.moves:
                pose = pose @ _motion(joint.axis, joint.type, value)
            poses[joint.child] = pose
        return poses

    def point_jacobian(self, q: np.ndarray, link: str, point: np.ndarray, poses: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """(3, L) velocity of a point fixed to `link` (given in the palm frame at q) per actuated
        joint velocity; a mimic joint adds its gain times its own column to its driver's."""
        poses = self.link_poses(q) if poses is None else poses
        column = {name: i for i, name in enumerate(self.joints)}
        out = np.zeros((3, len(self.joints)))
        if link == self.tree.root:
            return out
        for i in self.tree.chain(link):
            joint = self.tree.joints[i]
            if not joint.moves:
                continue
            driver, gain, _ = self.tree.driver(joint.name)
            frame = poses[joint.child]  # the joint axis is fixed in the child frame
            axis = frame[:3, :3] @ np.asarray(joint.axis, dtype=float)
            axis = axis / np.linalg.norm(axis)
            velocity = axis if joint.type == "prismatic" else np.cross(axis, point - frame[:3, 3])
            out[:, column[driver]] += gain * velocity
        return out


@cache
def default_hand() -> Hand:
    """The packaged DLR-Hand II, read once per process (a Hand does not change)."""
    return Hand.load()


def _motion(axis, kind: str, value: float) -> np.ndarray:
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    out = np.eye(4)
    if kind == "prismatic":
        out[:3, 3] = axis * value
        return out
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    out[:3, :3] = np.eye(3) + np.sin(value) * k + (1 - np.cos(value)) * (k @ k)
    return out


def _capsule_in_link(shape: LinkShape, path) -> Capsule:
    """A capsule expressed in its link frame (the shape's origin applied to its end points)."""
    if not isinstance(shape.primitive, Capsule):
        raise RobocalError(f"{path}: link '{shape.link}' has a {type(shape.primitive).__name__.lower()}; the grasp hand is made of capsules")
    origin = np.asarray(shape.origin, dtype=float)
    ends = [origin[:3, :3] @ np.asarray(p) + origin[:3, 3] for p in (shape.primitive.p0, shape.primitive.p1)]
    return Capsule(tuple(ends[0]), tuple(ends[1]), shape.primitive.radius)
