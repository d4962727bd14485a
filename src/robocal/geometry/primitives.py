"""Convex primitives, each fixed in its own local frame (meters).

A primitive holds only its shape, as tuples of floats, so it is hashable and can be a static
argument of `jax.jit`; where it is, is a pose: a 4x4 homogeneous matrix mapping local to
world coordinates, which is what gets differentiated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from robocal.errors import RobocalError

Vec3 = tuple[float, float, float]


def vec3(name: str, values: Iterable[float]) -> Vec3:
    """Three floats from `values`, named `name` in the error when there are not three."""
    vec = tuple(float(v) for v in values)
    if len(vec) != 3:
        raise RobocalError(f"{name} needs 3 numbers, got {len(vec)}")
    return vec


def _radius(value: float) -> float:
    radius = float(value)
    if not radius >= 0.0:
        raise RobocalError(f"radius must be >= 0, got {value}")
    return radius


def apply_pose(pose: jax.Array, points: jax.Array) -> jax.Array:
    """World coordinates of local points (..., 3)."""
    return points @ pose[:3, :3].T + pose[:3, 3]


@dataclass(frozen=True)
class Sphere:
    """Ball of `radius` around the local origin."""

    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "radius", _radius(self.radius))

    def center(self, pose: jax.Array) -> jax.Array:
        return pose[:3, 3]


@dataclass(frozen=True)
class Capsule:
    """All points within `radius` of the segment p0-p1 (its core), in the local frame."""

    p0: Vec3
    p1: Vec3
    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "p0", vec3("p0", self.p0))
        object.__setattr__(self, "p1", vec3("p1", self.p1))
        object.__setattr__(self, "radius", _radius(self.radius))

    def segment(self, pose: jax.Array) -> tuple[jax.Array, jax.Array]:
        """World endpoints of the core segment."""
        ends = apply_pose(pose, jnp.array([self.p0, self.p1]))
        return ends[0], ends[1]


@dataclass(frozen=True)
class Box:
    """Axis-aligned box |x_i| <= half_extents_i in the local frame."""

    half_extents: Vec3

    def __post_init__(self) -> None:
        half = vec3("half_extents", self.half_extents)
        if not all(h > 0.0 for h in half):
            raise RobocalError(f"half_extents must be > 0, got {half}")
        object.__setattr__(self, "half_extents", half)

    def frame(self, pose: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """World center, axes (columns) and half extents."""
        return pose[:3, 3], pose[:3, :3], jnp.array(self.half_extents)
