"""Shapes attached to robot links, declared in a problem file or read from URDF collisions.

A link shape is a primitive placed in its link frame by a fixed `origin` (4x4). The distance
between two links is the minimum signed distance over their shape pairs.

From a URDF `<collision>`: spheres and boxes map directly, a `<capsule>` (SDF's and Drake's
extension) is one; a cylinder whose two end caps are covered by spheres of the same radius (the
usual way to write a capsule in URDF, as in the DLR-Hand II model) becomes one exact capsule. A
cylinder without such spheres has no closed form here: it is refused, or read as a capsule where
the problem says so (`geometry.cylinders: capsule`), never approximated silently. Meshes are
refused with their link (`from_urdf` with `bodies`) or leave their link out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import jax.numpy as jnp
import numpy as np
from lxml import etree
from pydantic import Field, model_validator

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

CylinderMode = Literal["refuse", "capsule"]
MESH_REASON = (
    "its <collision> is a <mesh>, which robocal does not read from a URDF; declare the link's contact shapes (sphere, capsule, box) under geometry.links"
)

CYLINDER_REASON = (
    "a <cylinder> is read only as a capsule: cap it with two <sphere>s of its radius, or set geometry.cylinders: "
    "capsule to read it as the capsule of its axis and radius (longer by the radius at each end)"
)


@dataclass(frozen=True)
class UrdfCollisions:
    """The collision shapes of a URDF's links, and the links whose collisions are refused, with
    the reason and the line of the element (a mesh; a bare cylinder unless read as a capsule)."""

    path: Path
    shapes: dict[str, tuple[LinkShape, ...]]
    refused: dict[str, tuple[str, int]]
    links: tuple[str, ...]

    def of(self, link: str) -> tuple[LinkShape, ...]:
        """The link's shapes; a located error where it has none that can be used."""
        if link in self.refused:
            reason, line = self.refused[link]
            raise InputError(self.path, f"link '{link}': {reason}", line=line)
        if link not in self.shapes:
            what = "has no <collision>" if link in self.links else "is no <link> of this URDF"
            raise InputError(self.path, f"link '{link}' {what}; contact bodies need collision shapes")
        return self.shapes[link]


def _numbers(path: Path, element, attribute: str, count: int, default: str | None = None) -> tuple[float, ...]:
    text = element.get(attribute, default) if element is not None else default
    try:
        values = tuple(float(v) for v in (text or "").split())
    except ValueError:
        values = ()
    if len(values) != count or not all(np.isfinite(values)):
        raise InputError(path, f"<{element.tag} {attribute}='{text}'> must be {count} finite number{'s' if count > 1 else ''}", line=element.sourceline)
    return values


def _positive(path: Path, element, attribute: str) -> float:
    (value,) = _numbers(path, element, attribute, 1)
    if value <= 0:
        raise InputError(path, f"<{element.tag} {attribute}='{value:g}'> must be positive", line=element.sourceline)
    return value


def urdf_collisions(path: str | Path, cylinders: CylinderMode = "refuse") -> UrdfCollisions:
    """Every link's `<collision>` shapes: spheres and boxes as they are, a `<capsule radius length>`
    (axis z, as SDF and Drake write it) exactly, a cylinder capped by two spheres of its radius
    as that capsule; a bare cylinder is refused, or with `cylinders="capsule"` read as the capsule
    of its axis and radius (exact on its side, longer by the radius at each end); a mesh is refused."""
    path = Path(path)
    root = parse_document(path).getroot()
    shapes: dict[str, tuple[LinkShape, ...]] = {}
    refused: dict[str, tuple[str, int]] = {}
    for link in root.findall("link"):
        name = link.get("name", "")
        try:
            found = _link_collisions(path, link, name, cylinders)
        except _Refused as exc:
            refused[name] = (exc.reason, exc.line)
            continue
        if found:
            shapes[name] = found
    return UrdfCollisions(path, shapes, refused, tuple(link.get("name", "") for link in root.findall("link")))


class _Refused(Exception):
    def __init__(self, reason: str, line: int):
        super().__init__(reason)
        self.reason, self.line = reason, line


def _link_collisions(path: Path, link, name: str, cylinders: CylinderMode) -> tuple[LinkShape, ...]:
    spheres, bare, shapes = [], [], []
    for col in link.findall("collision"):
        origin = col.find("origin")
        xyz, rpy = _numbers(path, origin, "xyz", 3, "0 0 0"), _numbers(path, origin, "rpy", 3, "0 0 0")
        geometry = col.find("geometry")
        shape = next((child for child in geometry if isinstance(child.tag, str)), None) if geometry is not None else None
        if shape is None:
            continue
        kind = etree.QName(shape).localname
        if kind == "sphere":
            spheres.append((np.array(xyz), _positive(path, shape, "radius")))
        elif kind == "box":
            size = _numbers(path, shape, "size", 3)
            shapes.append(LinkShape(name, Box(vec3("half_extents", (v / 2 for v in size))), _origin(xyz, rpy)))
        elif kind in ("cylinder", "capsule"):
            axis = tf.rpy_to_matrix(np.asarray(rpy, dtype=float))[:, 2]
            radius, length = _positive(path, shape, "radius"), _positive(path, shape, "length")
            ends = (np.array(xyz) - axis * length / 2, np.array(xyz) + axis * length / 2)
            bare.append((kind, ends, radius, shape.sourceline))
        elif kind == "mesh":
            raise _Refused(MESH_REASON, shape.sourceline)
        else:
            raise _Refused(f"its <collision> is a <{kind}>, which robocal does not read", shape.sourceline)
    used: set[int] = set()
    for kind, ends, radius, line in bare:
        caps = [next((i for i, (c, r) in enumerate(spheres) if abs(r - radius) < 1e-9 and np.linalg.norm(c - e) < 1e-6), None) for e in ends]
        if kind == "cylinder" and None in caps and cylinders == "refuse":
            raise _Refused(CYLINDER_REASON, line)
        used.update(c for c in caps if c is not None)
        shapes.append(LinkShape(name, Capsule(vec3("p0", ends[0]), vec3("p1", ends[1]), radius)))
    shapes += [LinkShape(name, Sphere(r), _origin(c)) for i, (c, r) in enumerate(spheres) if i not in used]
    return tuple(shapes)


def shapes_from_urdf(path: str | Path, cylinders: CylinderMode = "refuse") -> dict[str, tuple[LinkShape, ...]]:
    """Collision shapes of every link of a URDF whose collisions can be used: a refused cylinder is
    an error (naming its line), a mesh or another element leaves its link out (`urdf_collisions`)."""
    collisions = urdf_collisions(path, cylinders)
    for link, (reason, line) in collisions.refused.items():
        if reason == CYLINDER_REASON:
            raise InputError(collisions.path, f"link '{link}': {reason}", line=line)
    return collisions.shapes


class GeometryFile(Strict):
    """A YAML geometry file: link name -> list of shapes in the link frame."""

    links: dict[str, list[ShapeConfig]]


class GeometryConfig(Strict):
    """`geometry:` of a problem file: a URDF's collisions (`from_urdf`, optionally only the
    `bodies` named; `true`: the problem's own robot), files (URDF collisions, YAML or JSON
    geometry), then inline links."""

    from_urdf: Literal[True] | Path | None = None
    bodies: list[str] | None = None
    cylinders: CylinderMode = "refuse"
    files: list[Path] = Field(default_factory=list)
    links: dict[str, list[ShapeConfig]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _bodies_need_a_urdf(self):
        if self.bodies is not None and self.from_urdf is None:
            raise ValueError("`bodies` names links of `from_urdf`; give from_urdf: <the URDF>")
        return self


def _from_urdf(config: GeometryConfig, base: Path, robot: Path | None, problem: Path | None) -> Path:
    """The URDF of `from_urdf`: a path (relative to `base`), or with `true` the problem's robot."""
    if config.from_urdf is not True:
        assert config.from_urdf is not None
        return config.from_urdf if config.from_urdf.is_absolute() else base / config.from_urdf
    if robot is None or robot.suffix in (".yaml", ".yml"):
        what = "the problem has no `robot:`" if robot is None else f"the robot {robot.name} is a DH table"
        raise InputError(problem or base, f"from_urdf: true takes the problem's robot URDF, but {what}; give the URDF's path", field="geometry.from_urdf")
    return robot


def load_geometry(config: GeometryConfig, base: Path, robot: Path | None = None, problem: Path | None = None) -> dict[str, tuple[LinkShape, ...]]:
    """Shapes per link: `from_urdf`, then `files` in order, then `links`; a later source replaces
    the shapes of a link given by an earlier one. `robot`: the problem's robot file, which
    `from_urdf: true` names; `problem`: the problem file, which its errors name."""
    from robocal.validation import load_json_model, load_yaml_model

    out: dict[str, tuple[LinkShape, ...]] = {}
    if config.from_urdf is not None:
        collisions = urdf_collisions(_from_urdf(config, base, robot, problem), config.cylinders)
        out.update({link: collisions.of(link) for link in config.bodies} if config.bodies is not None else collisions.shapes)
    for file in config.files:
        path = file if file.is_absolute() else base / file
        if path.suffix in (".yaml", ".yml", ".json"):
            declared = (load_json_model if path.suffix == ".json" else load_yaml_model)(path, GeometryFile).links
            out.update({link: tuple(shape_from_config(link, c) for c in shapes) for link, shapes in declared.items()})
        else:
            out.update(shapes_from_urdf(path, config.cylinders))
    out.update({link: tuple(shape_from_config(link, c) for c in shapes) for link, shapes in config.links.items()})
    return out
