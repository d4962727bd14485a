"""Compiled kernels of the contact search (one compilation per robot model and scene): every body
pair's distance and every body's bounding-sphere center over many configurations, the bisection of
the first contact along a drive, and the torque-threshold detection."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from robocal.kinematics.model import RobotModel
from robocal.simulation.contact.scene import Scene

CHUNK = 1024  # configurations per compiled evaluation
BISECTIONS = 64  # halvings of a bracket (a grid cell of width 0.02 shrinks below float resolution)
TORQUE_STEPS = 28  # geometric bracketing of the torque threshold: s0 + 1e-8 * 2^k, k < 28 (up to s0 + 1.3)


def padded(array, size: int) -> jax.Array:
    """The rows of array, the last one repeated up to `size` rows."""
    array = np.asarray(array)
    if len(array) < size:
        array = np.concatenate([array, np.repeat(array[-1:], size - len(array), axis=0)])
    return jnp.asarray(array)


def _pair_distance(model: RobotModel, scene: Scene, theta, q, p):
    return scene.distances(model.link_poses(theta, q, scene.links))[p]


def _drive(q0, dq, s, lower, upper):
    """The configuration at drive parameter s: a straight line in joint space, held at the limits."""
    return jnp.clip(q0 + s * dq, lower, upper)


@partial(jax.jit, static_argnames=("model", "scene"))
def _batch_evaluate(theta, q, model: RobotModel, scene: Scene):
    """Distances of every body pair and bounding-sphere centers of every body, per row of q."""

    def one(qi):
        poses = model.link_poses(theta, qi, scene.links)
        return scene.distances(poses), scene.centers(poses)

    return jax.vmap(one)(q)


def evaluate(model: RobotModel, scene: Scene, theta, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, len(scene.pairs)) signed distances of every body pair and (n, len(scene.links), 3)
    bounding-sphere centers at the configurations q, in fixed-size chunks (one compilation)."""
    q = np.asarray(q, dtype=float)
    theta = jnp.asarray(theta, dtype=float)
    out = [(np.zeros((0, len(scene.pairs))), np.zeros((0, len(scene.links), 3)))]
    for start in range(0, len(q), CHUNK):
        block = q[start : start + CHUNK]
        d, c = _batch_evaluate(theta, padded(block, CHUNK), model, scene)
        out.append((np.asarray(d)[: len(block)], np.asarray(c)[: len(block)]))
    return np.concatenate([d for d, _ in out]), np.concatenate([c for _, c in out])


def all_distances(model: RobotModel, scene: Scene, theta, q: np.ndarray) -> np.ndarray:
    """(n, len(scene.pairs)) signed distances of every body pair at the configurations q."""
    return evaluate(model, scene, theta, q)[0]


@partial(jax.jit, static_argnames=("model", "scene"))
def contact_roots(theta, q0, dq, lo, hi, p, lower, upper, model: RobotModel, scene: Scene):
    """Bisection of d(q(s)) on [lo, hi] with d(lo) > 0 >= d(hi); returns the hi end."""

    def one(q0, dq, lo, hi, p):
        def body(_, bounds):
            lo, hi = bounds
            mid = 0.5 * (lo + hi)
            touching = _pair_distance(model, scene, theta, _drive(q0, dq, mid, lower, upper), p) <= 0.0
            return jnp.where(touching, lo, mid), jnp.where(touching, mid, hi)

        return lax.fori_loop(0, BISECTIONS, body, (lo, hi))[1]

    return jax.vmap(one)(q0, dq, lo, hi, p)


def _torque_change(model: RobotModel, scene: Scene, theta, q, p, static_mask, stiffness):
    """(||tau - tau_0||, ||J^T n||) of the static chain: k delta ||J^T n|| and the lever arm."""

    def distance(qq):
        return _pair_distance(model, scene, theta, qq, p)

    d, grad = jax.value_and_grad(distance)(q)
    lever = jnp.linalg.norm(grad * static_mask)
    return stiffness * jnp.maximum(-d, 0.0) * lever, lever


@partial(jax.jit, static_argnames=("model", "scene"))
def torque_detection(theta, q0, dq, s0, s_max, p, static_mask, stiffness, threshold, lower, upper, model: RobotModel, scene: Scene):
    """First s >= s0 where the torque change exceeds the threshold, found by probing
    s0 + 1e-8 * 2^k (k < TORQUE_STEPS) until it does, then bisecting the last step.
    One loop evaluates the torque once per iteration (one traced copy). Returns (s, found)."""

    def one(q0, dq, s0, p, mask):
        def body(i, state):
            lo, hi, found = state
            probing = i < TORQUE_STEPS
            s = jnp.where(probing, jnp.minimum(s0 + 1e-8 * 2.0 ** jnp.minimum(i, TORQUE_STEPS - 1), s_max), 0.5 * (lo + hi))
            over = _torque_change(model, scene, theta, _drive(q0, dq, s, lower, upper), p, mask, stiffness)[0] > threshold
            # probing: before the first crossing move lo up to s; at it set hi = s. bisecting: halve.
            new_lo = jnp.where(probing, jnp.where(found | over, lo, s), jnp.where(over, lo, s))
            new_hi = jnp.where(probing, jnp.where(found | ~over, hi, s), jnp.where(over, s, hi))
            bisect_ok = ~probing & found
            return (jnp.where(probing | bisect_ok, new_lo, lo), jnp.where(probing | bisect_ok, new_hi, hi), found | (probing & over))

        lo, hi, found = lax.fori_loop(0, TORQUE_STEPS + BISECTIONS, body, (s0, s_max, jnp.array(False)))
        return hi, found

    return jax.vmap(one)(q0, dq, s0, p, static_mask)
