"""Exact signed distances from boxes to points, segments and other boxes.

A box is given in world coordinates by its center, its axes (columns of a rotation matrix)
and its half extents; the public functions are jit-compiled once per argument shape. Points,
segments and boxes are convex polytopes, which makes both cases exact:

* Separated: the distance between two convex polytopes is attained by a pair of closest
  points of which at least one lies on an edge (closest points interior to two faces need
  parallel faces, and sliding along them reaches an edge). So it is the minimum over the
  vertex-to-polytope distances and the edge-to-edge segment distances, all exact.
* Overlapping: the penetration depth (the shortest translation that separates the shapes) is
  the distance from the origin to the boundary of their Minkowski difference, i.e. the
  smallest support value over its facet normals. Those normals are the face normals of either
  shape and the cross products of an edge direction of each; no other unit axis gives a
  smaller overlap, so the largest signed gap over these axes (the separating-axis test, SAT)
  is exactly minus the depth. It is also positive exactly when the shapes are separated, which
  selects between the two cases.

Cross-product axes of edges within `PARALLEL_SINE` of parallel are dropped: their direction is
dominated by rounding. A sliver facet skipped this way changes a depth by at most about
PARALLEL_SINE times the box size (1e-10 m for a 0.1 m box).
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from robocal.geometry.segments import safe_norm, segment_segment_distance

PARALLEL_SINE = 1e-9

_CORNERS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
_EDGES = np.array([(i, j) for i, j in itertools.combinations(range(8), 2) if np.sum(_CORNERS[i] != _CORNERS[j]) == 1])


@jax.jit
def point_box_signed_distance(p: jax.Array, center: jax.Array, axes: jax.Array, half: jax.Array) -> jax.Array:
    """Signed distance of points p (..., 3) to the box: outside, the norm of the per-axis excess
    over the half extents; inside, minus the distance to the nearest face."""
    excess = jnp.abs((p - center) @ axes) - half
    return safe_norm(jnp.maximum(excess, 0.0)) + jnp.minimum(jnp.max(excess, axis=-1), 0.0)


@jax.jit
def segment_box_signed_distance(p0: jax.Array, p1: jax.Array, center: jax.Array, axes: jax.Array, half: jax.Array) -> jax.Array:
    """Signed distance from the segment p0-p1 to the box (exact; see the module docstring)."""
    d = p1 - p0
    cross, cross_ok = _cross_axes(d[None], axes.T)
    normals = jnp.concatenate([axes.T, cross])
    valid = jnp.concatenate([jnp.ones(3, bool), cross_ok])
    half_widths = 0.5 * jnp.abs(normals @ d) + _box_half_widths(normals, axes, half)
    sat = _max_gap(normals, valid, 0.5 * (p0 + p1) - center, half_widths)
    _, e0, e1 = _box_skeleton(center, axes, half)
    separated = jnp.minimum(
        jnp.min(point_box_signed_distance(jnp.stack([p0, p1]), center, axes, half)),
        jnp.min(segment_segment_distance(p0, p1, e0, e1)),
    )
    return jnp.where(sat > 0.0, separated, sat)


@jax.jit
def box_box_signed_distance(center_a: jax.Array, axes_a: jax.Array, half_a: jax.Array, center_b: jax.Array, axes_b: jax.Array, half_b: jax.Array) -> jax.Array:
    """Signed distance between two boxes (exact; see the module docstring)."""
    cross, cross_ok = _cross_axes(axes_a.T, axes_b.T)
    normals = jnp.concatenate([axes_a.T, axes_b.T, cross])
    valid = jnp.concatenate([jnp.ones(6, bool), cross_ok])
    half_widths = _box_half_widths(normals, axes_a, half_a) + _box_half_widths(normals, axes_b, half_b)
    sat = _max_gap(normals, valid, center_b - center_a, half_widths)
    corners_a, a0, a1 = _box_skeleton(center_a, axes_a, half_a)
    corners_b, b0, b1 = _box_skeleton(center_b, axes_b, half_b)
    separated = jnp.min(
        jnp.concatenate(
            [
                point_box_signed_distance(corners_a, center_b, axes_b, half_b),
                point_box_signed_distance(corners_b, center_a, axes_a, half_a),
                segment_segment_distance(a0[:, None], a1[:, None], b0[None], b1[None]).ravel(),
            ]
        )
    )
    return jnp.where(sat > 0.0, separated, sat)


def _box_skeleton(center: jax.Array, axes: jax.Array, half: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The 8 corners and the 12 edges (start and end points) of the box."""
    corners = center + (_CORNERS * half) @ axes.T
    return corners, corners[_EDGES[:, 0]], corners[_EDGES[:, 1]]


def _box_half_widths(normals: jax.Array, axes: jax.Array, half: jax.Array) -> jax.Array:
    """Half the extent of the box projected on each unit normal: sum_i h_i |n . axis_i|."""
    return jnp.abs(normals @ axes) @ half


def _cross_axes(directions_a: jax.Array, directions_b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Unit cross products of every pair of directions, and which pairs are not near-parallel."""
    cross = jnp.cross(directions_a[:, None], directions_b[None]).reshape(-1, 3)
    scale = (safe_norm(directions_a)[:, None] * safe_norm(directions_b)[None]).ravel()
    norm = safe_norm(cross)
    ok = norm > PARALLEL_SINE * scale
    return cross / jnp.where(ok, norm, 1.0)[:, None], ok


def _max_gap(normals: jax.Array, valid: jax.Array, offset: jax.Array, half_widths: jax.Array) -> jax.Array:
    """Largest signed gap |n . offset| - half_widths over the valid unit normals (SAT)."""
    gaps = jnp.abs(normals @ offset) - half_widths
    return jnp.max(jnp.where(valid, gaps, -jnp.inf))
