"""Exact distances between points and segments, the cores of spheres and capsules.

All functions broadcast over leading axes of their (..., 3) arguments, and the public ones are
jit-compiled once per argument shape, so that calls outside `jax.jit` are fast too.

Gradients: the parameters of the closest points are computed and then held constant
(`lax.stop_gradient`). By the envelope theorem the derivative of a minimum distance is the
derivative of the distance between its minimizing points moved rigidly with their bodies, so
this is the exact gradient, and it never differentiates through an ill-conditioned solve.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def _dot(u: jax.Array, v: jax.Array) -> jax.Array:
    return jnp.sum(u * v, axis=-1)


def safe_norm(v: jax.Array) -> jax.Array:
    """Euclidean norm over the last axis whose gradient at 0 is 0 instead of NaN."""
    sq = _dot(v, v)
    positive = sq > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, sq, 1.0)), 0.0)


@jax.jit
def point_segment_distance(p: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    """Distance from p to the segment a-b: project onto the line, clamp to [0, 1]."""
    d = b - a
    dd = _dot(d, d)
    t = jnp.clip(_dot(p - a, d) / jnp.where(dd > 0.0, dd, 1.0), 0.0, 1.0)
    return safe_norm(p - (a + lax.stop_gradient(t)[..., None] * d))


@jax.jit
def segment_segment_distance(p0: jax.Array, p1: jax.Array, q0: jax.Array, q1: jax.Array) -> jax.Array:
    """Distance between segments p0-p1 and q0-q1, exact for parallel and near-parallel ones.

    The minimum of |p0 + s d1 - q0 - t d2| over the square (s, t) in [0, 1]^2 lies either on an
    edge of the square (an endpoint of one segment against the other segment: four candidates,
    each exact) or at the stationary point of the two lines, taken from the cross-product form
        s = ((q0 - p0) x d2) . n / |n|^2,  t = ((q0 - p0) x d1) . n / |n|^2,  n = d1 x d2,
    when it lies strictly inside the square. Every candidate is the distance of an actual pair
    of points on the segments, so none undercuts the true minimum; rounding in (s, t), large
    for nearly parallel lines, changes the interior candidate only to second order (it is a
    stationary point), or makes it lose to an endpoint candidate. So the minimum over the
    candidates is exact. Parallel lines (n = 0) have no interior candidate, and an endpoint
    pair attains the minimum.
    """
    d1, d2, r = p1 - p0, q1 - q0, q0 - p0
    n = jnp.cross(d1, d2)
    nn = _dot(n, n)
    denominator = jnp.where(nn > 0.0, nn, 1.0)
    s = _dot(jnp.cross(r, d2), n) / denominator
    t = _dot(jnp.cross(r, d1), n) / denominator
    inside = (nn > 0.0) & (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)
    # Replace s, t where unused so that no inf/NaN enters the (masked) backward pass.
    s = lax.stop_gradient(jnp.where(inside, s, 0.0))[..., None]
    t = lax.stop_gradient(jnp.where(inside, t, 0.0))[..., None]
    interior = jnp.where(inside, safe_norm(p0 + s * d1 - (q0 + t * d2)), jnp.inf)
    candidates = jnp.broadcast_arrays(
        point_segment_distance(p0, q0, q1),
        point_segment_distance(p1, q0, q1),
        point_segment_distance(q0, p0, p1),
        point_segment_distance(q1, p0, p1),
        interior,
    )
    return jnp.min(jnp.stack(candidates, axis=-1), axis=-1)
