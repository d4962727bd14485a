"""Shapes attached to robot links, declared in a problem file or read from URDF collisions.

A link shape is a primitive placed in its link frame by a fixed `origin` (4x4). The distance
between two links is the minimum signed distance over their shape pairs.

From a URDF `<collision>`: spheres and boxes map directly; a cylinder whose two end caps are
covered by spheres of the same radius (the usual way to write a capsule in URDF, as in the
DLR-Hand II model) becomes one exact capsule. A cylinder without such spheres has no closed form
here and is reported, not approximated silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from robocal.errors import InputError
from robocal.geometry.distance import Primitive, signed_distance
from robocal.geometry.primitives import Box, Capsule, Sphere, vec3
from robocal.kinematics import transforms as tf
from robocal.kinematics.urdf import parse_document
from robocal.validation import Positive, Strict, Vec3


@dataclass(frozen=True)
class LinkShape:
    link: str
    primitive: Primitive
    origin: tuple[tuple[float, ...], ...] = tuple(tuple(float(v) for v in row) for row in np.eye(4))  # hashable 4x4

    def pose(self, link_pose):
        return link_pose @ jnp.asarray(self.origin)


def link_distance(shapes_a: tuple[LinkShape, ...], pose_a, shapes_b: tuple[LinkShape, ...], pose_b):
    """Minimum signed distance between two links' shapes, given the link poses."""
    distances = [signed_distance(a.primitive, a.pose(pose_a), b.primitive, b.pose(pose_b)) for a in shapes_a for b in shapes_b]
    return distances[0] if len(distances) == 1 else jnp.min(jnp.stack(distances))


# ---- problem-file declaration -------------------------------------------------------------


class SphereConfig(Strict):
    type: Literal["sphere"]
    center: Vec3 = (0.0, 0.0, 0.0)
    radius: Positive


class CapsuleConfig(Strict):
    type: Literal["capsule"]
    p0: Vec3
    p1: Vec3
    radius: Positive


class BoxConfig(Strict):
    type: Literal["box"]
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)
    half_extents: tuple[Positive, Positive, Positive]


ShapeConfig = Annotated[SphereConfig | CapsuleConfig | BoxConfig, Field(discriminator="type")]


def _origin(xyz, rpy=(0.0, 0.0, 0.0)) -> tuple[tuple[float, ...], ...]:
    m = np.asarray(tf.homogeneous(tf.rpy_to_matrix(np.asarray(rpy, dtype=float)), np.asarray(xyz, dtype=float)))
    return tuple(tuple(float(v) for v in row) for row in m)


def shape_from_config(link: str, cfg: SphereConfig | CapsuleConfig | BoxConfig) -> LinkShape:
    if isinstance(cfg, SphereConfig):
        return LinkShape(link, Sphere(cfg.radius), _origin(cfg.center))
    if isinstance(cfg, CapsuleConfig):
        return LinkShape(link, Capsule(cfg.p0, cfg.p1, cfg.radius))
    return LinkShape(link, Box(vec3("half_extents", cfg.half_extents)), _origin(cfg.xyz, cfg.rpy))


# ---- URDF collision elements ---------------------------------------------------------------


def shapes_from_urdf(path: str | Path) -> dict[str, tuple[LinkShape, ...]]:
    """Collision shapes of every link of a URDF (links without usable collisions are absent)."""
    path = Path(path)
    out: dict[str, tuple[LinkShape, ...]] = {}
    for link in parse_document(path).getroot().findall("link"):
        name = link.get("name")
        spheres, cylinders, shapes = [], [], []
        for col in link.findall("collision"):
            origin = col.find("origin")
            xyz = tuple(float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split())
            rpy = tuple(float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split())
            geometry = col.find("geometry")
            shape = geometry[0] if geometry is not None and len(geometry) else None
            if shape is None or not isinstance(shape.tag, str):
                continue
            if shape.tag == "sphere":
                spheres.append((np.array(xyz), float(shape.get("radius"))))
            elif shape.tag == "box":
                half = vec3("half_extents", (float(v) / 2 for v in shape.get("size").split()))
                shapes.append(LinkShape(name, Box(half), _origin(xyz, rpy)))
            elif shape.tag == "cylinder":
                cylinders.append((col, np.array(xyz), tf.rpy_to_matrix(np.asarray(rpy, dtype=float)), float(shape.get("radius")), float(shape.get("length"))))
        used = set()
        for col, center, rot, radius, length in cylinders:
            ends = [center - rot[:, 2] * length / 2, center + rot[:, 2] * length / 2]
            caps = [next((i for i, (c, r) in enumerate(spheres) if abs(r - radius) < 1e-9 and np.linalg.norm(c - e) < 1e-6), None) for e in ends]
            if None in caps:
                raise InputError(path, f"link '{name}': a cylinder is supported only as a capsule (capped by two spheres of its radius)", line=col.sourceline)
            used.update(caps)
            shapes.append(LinkShape(name, Capsule(vec3("p0", ends[0]), vec3("p1", ends[1]), radius)))
        shapes += [LinkShape(name, Sphere(r), _origin(c)) for i, (c, r) in enumerate(spheres) if i not in used]
        if shapes:
            out[name] = tuple(shapes)
    return out


class GeometryFile(Strict):
    """A YAML geometry file: link name -> list of shapes in the link frame."""

    links: dict[str, list[ShapeConfig]]


class GeometryConfig(Strict):
    """`geometry:` of a problem file: files (URDF collisions or YAML geometry), then inline links."""

    files: list[Path] = Field(default_factory=list)
    links: dict[str, list[ShapeConfig]] = Field(default_factory=dict)


def load_geometry(config: GeometryConfig, base: Path) -> dict[str, tuple[LinkShape, ...]]:
    """Shapes per link; a later source replaces the shapes of a link given by an earlier one."""
    from robocal.validation import load_yaml_model

    out: dict[str, tuple[LinkShape, ...]] = {}
    for file in config.files:
        path = file if file.is_absolute() else base / file
        if path.suffix in (".yaml", ".yml"):
            declared = load_yaml_model(path, GeometryFile).links
            out.update({link: tuple(shape_from_config(link, c) for c in shapes) for link, shapes in declared.items()})
        else:
            out.update(shapes_from_urdf(path))
    out.update({link: tuple(shape_from_config(link, c) for c in shapes) for link, shapes in config.links.items()})
    return out
