"""Planar rigid motions as (x, y, yaw) arrays, batched over leading axes; NumPy or JAX arrays."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def _xp(*arrays):
    return np if all(isinstance(a, (np.ndarray, float, int)) for a in arrays) else jnp


def wrap(angle):
    """Angle in (-pi, pi]."""
    xp = _xp(angle)
    return xp.arctan2(xp.sin(angle), xp.cos(angle))


def compose(a, b):
    """a ⊕ b: the motion b expressed in the frame a, then a."""
    xp = _xp(a, b)
    c, s = xp.cos(a[..., 2]), xp.sin(a[..., 2])
    return xp.stack([a[..., 0] + c * b[..., 0] - s * b[..., 1], a[..., 1] + s * b[..., 0] + c * b[..., 1], a[..., 2] + b[..., 2]], axis=-1)


def inverse(a):
    """⊖a, so that a ⊕ ⊖a = 0."""
    xp = _xp(a)
    c, s = xp.cos(a[..., 2]), xp.sin(a[..., 2])
    return xp.stack([-c * a[..., 0] - s * a[..., 1], s * a[..., 0] - c * a[..., 1], -a[..., 2]], axis=-1)


def between(a, b):
    """⊖a ⊕ b: the pose b seen from the pose a (the relative motion from a to b), yaw wrapped."""
    d = compose(inverse(a), b)
    return d.at[..., 2].set(wrap(d[..., 2])) if _xp(d) is jnp else np.concatenate([d[..., :2], wrap(d[..., 2:])], axis=-1)


def conjugate(x, a):
    """⊖x ⊕ a ⊕ x: the motion a of a body seen by a frame mounted on it at x (A X = X B, B = X⁻¹ A X)."""
    return compose(inverse(x), compose(a, x))
