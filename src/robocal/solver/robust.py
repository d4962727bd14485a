"""Robust losses expressed as a per-row rescaling of whitened residuals.

For a row with whitened residual vector r and norm e, least squares on s(e) * r minimizes
sum rho(e) when s(e) = sqrt(2 rho(e)) / e. For Huber with threshold k:
rho(e) = e^2 / 2 (e <= k) and k (e - k / 2) (e > k), so s = 1 inside and sqrt(k (2e - k)) / e outside.
"""

from __future__ import annotations

import jax.numpy as jnp


def huber_row_scale(rows, k: float):
    e = jnp.linalg.norm(rows, axis=-1)
    outside = e > k
    safe = jnp.where(outside, e, 1.0)
    return jnp.where(outside, jnp.sqrt(k * (2.0 * safe - k)) / safe, 1.0)
