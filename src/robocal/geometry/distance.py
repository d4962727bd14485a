"""Signed distance between two posed primitives, differentiable in both poses.

Positive: the Euclidean distance between the shapes. Negative: minus the penetration depth,
the length of the shortest translation that separates them. Spheres and capsules are a point
or segment core swollen by a radius, and for convex cores signed distances subtract the radii
exactly, so those pairs are the core distance minus both radii (two segments have zero depth).
Every pair is exact up to rounding (see `segments` and `boxes` for how), except that box edges
within 1e-9 rad of parallel may shift a box's depth by ~1e-9 of its size (`boxes.PARALLEL_SINE`).

Gradients are exact wherever the distance is differentiable. Where it is not (coincident
sphere centers, crossing capsule cores, ties between closest features) the gradient is still
finite: a zero norm contributes zero, ties contribute the mean of the tied candidates.
"""

from __future__ import annotations

from collections.abc import Callable

import jax

from robocal.geometry.boxes import box_box_signed_distance, point_box_signed_distance, segment_box_signed_distance
from robocal.geometry.primitives import Box, Capsule, Sphere
from robocal.geometry.segments import point_segment_distance, safe_norm, segment_segment_distance

Primitive = Sphere | Capsule | Box


def signed_distance(a: Primitive, pose_a: jax.Array, b: Primitive, pose_b: jax.Array) -> jax.Array:
    """Signed distance (m) between primitive `a` at `pose_a` and `b` at `pose_b` (4x4, local to world).

    The primitives are static (hashable): under `jax.jit` close over them or mark them static.
    """
    pair = _PAIRS.get((type(a), type(b)))
    if pair is not None:
        return pair(a, pose_a, b, pose_b)
    pair = _PAIRS.get((type(b), type(a)))
    if pair is not None:
        return pair(b, pose_b, a, pose_a)
    raise TypeError(f"no signed distance between {type(a).__name__} and {type(b).__name__}")


def _sphere_sphere(a: Sphere, pose_a: jax.Array, b: Sphere, pose_b: jax.Array) -> jax.Array:
    return safe_norm(b.center(pose_b) - a.center(pose_a)) - a.radius - b.radius


def _sphere_capsule(a: Sphere, pose_a: jax.Array, b: Capsule, pose_b: jax.Array) -> jax.Array:
    return point_segment_distance(a.center(pose_a), *b.segment(pose_b)) - a.radius - b.radius


def _capsule_capsule(a: Capsule, pose_a: jax.Array, b: Capsule, pose_b: jax.Array) -> jax.Array:
    return segment_segment_distance(*a.segment(pose_a), *b.segment(pose_b)) - a.radius - b.radius


def _sphere_box(a: Sphere, pose_a: jax.Array, b: Box, pose_b: jax.Array) -> jax.Array:
    return point_box_signed_distance(a.center(pose_a), *b.frame(pose_b)) - a.radius


def _capsule_box(a: Capsule, pose_a: jax.Array, b: Box, pose_b: jax.Array) -> jax.Array:
    return segment_box_signed_distance(*a.segment(pose_a), *b.frame(pose_b)) - a.radius


def _box_box(a: Box, pose_a: jax.Array, b: Box, pose_b: jax.Array) -> jax.Array:
    return box_box_signed_distance(*a.frame(pose_a), *b.frame(pose_b))


_PAIRS: dict[tuple[type, type], Callable[..., jax.Array]] = {
    (Sphere, Sphere): _sphere_sphere,
    (Sphere, Capsule): _sphere_capsule,
    (Capsule, Capsule): _capsule_capsule,
    (Sphere, Box): _sphere_box,
    (Capsule, Box): _capsule_box,
    (Box, Box): _box_box,
}
