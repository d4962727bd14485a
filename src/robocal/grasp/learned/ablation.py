"""The minimal-wrench loss's purpose, measured (seed paper 002, Sec. V-D / Fig. 9c): the force a
wrench estimator reports where (almost) none acts.

`quiet_force(estimator, data, split)` runs the estimator on a dataset split's samples whose
applied force is below `QUIET` and returns the mean and the largest norm of the force it
reports (capped at its predicted scale, as `LearnedEstimator` does) and the mean norm of the
network's wrench output before that cap (the only output an L2-trained estimator has trained). An estimator trained with
plain L2 answers an ambiguous input with the mean of the wrenches that produce it, so it reports
a force where none acts; the minimal-wrench loss answers with the smallest.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.grasp.learned import networks
from robocal.grasp.learned.dataset import load
from robocal.grasp.learned.training import Scaled, arrays

QUIET = 0.5  # N: samples with an applied force below this count as "no wrench"


def quiet_force(estimator: Scaled, data: Path, split: str = "test") -> dict:
    """Mean and largest reported force (N), and the network's mean force before the cap, over
    the split's samples with applied force < QUIET (module docstring)."""
    voxels, rows, inputs, targets = arrays(load(data, split), "estimator")
    quiet = np.linalg.norm(targets[:, :3], axis=1) < QUIET
    if not quiet.any():
        return {"samples": 0}
    features = jax.vmap(estimator.encode)(jnp.asarray(voxels, dtype=float))
    out = jax.vmap(estimator.head)(features[rows[quiet]], jnp.asarray(inputs[quiet]))
    wrench, scale = (np.asarray(a) for a in networks.split_estimate(out))
    raw = np.linalg.norm(wrench[:, :3], axis=1)
    force = np.minimum(raw, scale)
    applied = np.linalg.norm(targets[quiet, :3], axis=1)
    return {
        "samples": int(quiet.sum()),
        "mean_applied": float(applied.mean()),
        "mean_force": float(force.mean()),
        "max_force": float(force.max()),
        "mean_network_force": float(raw.mean()),
    }
