"""Contact warnings for a mapped robot hand: fingertips close to each other or to an object.

A fingertip is the contact shapes of its finger's `contact_link` (for the DLR-Hand II the
distal capsule, radius 0.01425 m); an object is a sphere, box or capsule placed in the robot's
root (palm) frame. Distances are exact signed surface distances (`robocal.geometry`): negative
means the shapes overlap. A warning is a pair closer than the threshold.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.geometry.distance import Primitive
from robocal.geometry.links import LinkShape, link_distance
from robocal.geometry.primitives import Box, Capsule, Sphere, vec3
from robocal.teleop.mapping import HandMapping

# Object syntax of the command line: kind -> (numbers it takes, their meaning).
OBJECT_KINDS = {"sphere": (4, "x,y,z,radius"), "box": (6, "x,y,z,half_x,half_y,half_z (axis-aligned)"), "capsule": (7, "x0,y0,z0,x1,y1,z1,radius")}


@dataclass(frozen=True)
class Obstacle:
    """A primitive object at a fixed pose (4x4, local to robot root frame)."""

    name: str
    shape: Primitive
    pose: np.ndarray

    def shapes(self) -> tuple[LinkShape, ...]:
        return (LinkShape(self.name, self.shape, tuple(tuple(float(v) for v in row) for row in self.pose)),)


def sphere(name: str, center, radius: float) -> Obstacle:
    pose = np.eye(4)
    pose[:3, 3] = center
    return Obstacle(name, Sphere(radius), pose)


def parse_object(text: str, name: str | None = None) -> Obstacle:
    """An object from `kind:numbers` in the palm frame (m): `sphere:x,y,z,r`,
    `box:x,y,z,hx,hy,hz` (axis-aligned, half extents) or `capsule:x0,y0,z0,x1,y1,z1,r`."""
    kind, _, numbers = text.partition(":")
    if kind not in OBJECT_KINDS:
        raise RobocalError(f"object '{text}': kind must be one of {', '.join(OBJECT_KINDS)} (a cylinder is given as a capsule)")
    count, meaning = OBJECT_KINDS[kind]
    try:
        values = [float(v) for v in numbers.split(",")]
    except ValueError:
        values = []
    if len(values) != count or not np.isfinite(values).all():
        raise RobocalError(f"object '{text}': {kind} takes {count} finite numbers in m: {kind}:{meaning}")
    name = name or text
    try:
        if kind == "sphere":
            return sphere(name, values[:3], values[3])
        if kind == "box":
            pose = np.eye(4)
            pose[:3, 3] = values[:3]
            return Obstacle(name, Box(vec3("half_extents", values[3:])), pose)
        return Obstacle(name, Capsule(vec3("p0", values[:3]), vec3("p1", values[3:6]), values[6]), np.eye(4))
    except RobocalError as exc:
        raise RobocalError(f"object '{text}': {exc}") from None


@dataclass(frozen=True)
class ContactWarning:
    """Fingertip `a` is `distance` (m, surface to surface) from fingertip or object `b`."""

    a: str
    b: str
    distance: float

    def __str__(self) -> str:
        return f"{self.a} - {self.b}: {self.distance * 1e3:.1f} mm"


def contact_distances(mapping: HandMapping, q, objects: Sequence[Obstacle] = ()) -> list[ContactWarning]:
    """Signed distance of every fingertip pair, then of every fingertip to every object."""
    config = mapping.config
    links = [f.contact_link for f in config.fingers]
    poses = mapping.robot_model.link_poses(mapping.robot_model.nominal, jnp.asarray(q, dtype=float), links)
    tips = [(f.name, config.shapes[f.contact_link], pose) for f, pose in zip(config.fingers, poses)]
    out = [ContactWarning(a, b, float(link_distance(sa, pa, sb, pb))) for (a, sa, pa), (b, sb, pb) in itertools.combinations(tips, 2)]
    out += [ContactWarning(a, o.name, float(link_distance(sa, pa, o.shapes(), jnp.eye(4)))) for a, sa, pa in tips for o in objects]
    return out


def contact_warnings(mapping: HandMapping, q, objects: Sequence[Obstacle] = (), threshold: float | None = None) -> list[ContactWarning]:
    """The pairs closer than `threshold` (m; default: the mapping file's), closest first."""
    threshold = mapping.config.threshold if threshold is None else threshold
    return sorted((c for c in contact_distances(mapping, q, objects) if c.distance < threshold), key=lambda c: c.distance)
