"""Training losses of the learned grasp controller (seed paper 002, Sec. IV, Eqs. 12-13).

The wrench estimator predicts a wrench w (B, 6) and a scale s (B,). The ground-truth scale is
the applied force norm s_hat = ||w_hat[:, :3]|| (N). With t in (0, 1):

- scale loss (Eq. 12, a pinball loss): mean over samples of (1 - t)(s - s_hat) where
  s_hat < s and t (s_hat - s) otherwise. Setting its derivative in s to zero gives
  #{s_hat < s} / B = t: the optimal s is the t-quantile of the ground-truth scales that share
  one ambiguous input, so s tracks the smallest wrench explaining the measurements.
- wrench loss (Eq. 13): mean over samples of ||w - w_hat||^2, counting only the samples whose
  ground-truth scale is below the predicted one (the mask carries no gradient).

The torque predictor is trained with a plain L2 loss on the torques.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

QUANTILE = 0.05  # t of Eq. 12 (paper: 0.05)


def ground_truth_scale(wrench_true: jnp.ndarray) -> jnp.ndarray:
    """Force norm (B,) in N of ground-truth wrenches (B, 6: force N, moment Nm)."""
    return jnp.linalg.norm(wrench_true[:, :3], axis=-1)


def scale_loss(scale: jnp.ndarray, scale_true: jnp.ndarray, t: float = QUANTILE) -> jnp.ndarray:
    """Eq. 12, averaged over the batch: predicted (B,) and true (B,) scales in N."""
    over = scale_true < scale
    return jnp.mean(jnp.where(over, (1.0 - t) * (scale - scale_true), t * (scale_true - scale)))


def wrench_loss(wrench: jnp.ndarray, wrench_true: jnp.ndarray, scale: jnp.ndarray) -> jnp.ndarray:
    """Eq. 13, averaged over the batch: squared wrench error (B, 6) of the samples whose true
    scale is below the predicted scale (B,); the others count zero."""
    mask = jax.lax.stop_gradient(ground_truth_scale(wrench_true) < scale)
    return jnp.mean(jnp.where(mask, jnp.sum((wrench - wrench_true) ** 2, axis=-1), 0.0))


def estimator_loss(wrench: jnp.ndarray, scale: jnp.ndarray, wrench_true: jnp.ndarray, t: float = QUANTILE) -> jnp.ndarray:
    """Minimal-wrench loss: scale loss plus masked wrench loss (the paper's sum)."""
    return scale_loss(scale, ground_truth_scale(wrench_true), t) + wrench_loss(wrench, wrench_true, scale)


def l2_loss(prediction: jnp.ndarray, target: jnp.ndarray) -> jnp.ndarray:
    """Mean over the batch of the squared error summed over the last axis (B, n)."""
    return jnp.mean(jnp.sum((prediction - target) ** 2, axis=-1))
