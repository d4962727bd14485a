"""The minimal-wrench loss's purpose, measured (seed paper 002, Sec. V-D, Fig. 9).

`quiet_force` (Fig. 9c): the force a wrench estimator reports where (almost) none acts.

`quiet_force(estimator, data, split)` runs the estimator on a dataset split's samples whose
applied force is below `QUIET` and returns the mean and the largest norm of the force it
reports (capped at its predicted scale, as `LearnedEstimator` does) and the mean norm of the
network's wrench output before that cap (the only output an L2-trained estimator has trained). An estimator trained with
plain L2 answers an ambiguous input with the mean of the wrenches that produce it, so it reports
a force where none acts; the minimal-wrench loss answers with the smallest.

`sphere_map` (Fig. 9b): for one grasp, a force of `FORCE` newtons through the object's centre
of mass in every direction of a latitude-longitude grid; the joints commanded to the learned
predictor's q_d for no wrench; the measured torques from the teacher's elastic contact model
(`teacher.equilibrium`, with the grasp's preload); the force the estimator reports for them.
Directions in which the grasp breaks are NaN. Where a force moves no joint (pushing along the
fingers) a minimal-wrench estimator reports none.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robocal.grasp.learned import networks
from robocal.grasp.learned.dataset import load
from robocal.grasp.learned.networks import Scaled
from robocal.grasp.learned.quiet import QUIET
from robocal.grasp.learned.training import arrays, outputs
from robocal.grasp.simulation import GraspSituation

FORCE = 5.0  # N: the force of the sphere map (the paper's 5 N)


def quiet_force(estimator: Scaled, data: Path, split: str = "test") -> dict:
    """Mean and largest reported force (N), and the network's mean force before the cap, over
    the split's samples with applied force < QUIET (module docstring)."""
    voxels, rows, inputs, targets = arrays(load(data, split), "estimator")
    quiet = np.linalg.norm(targets[:, :3], axis=1) < QUIET
    if not quiet.any():
        return {"samples": 0}
    wrench, scale = (np.asarray(a) for a in networks.split_estimate(outputs(estimator, voxels, rows[quiet], inputs[quiet])))
    raw = np.linalg.norm(wrench[:, :3], axis=1)
    force = np.linalg.norm(networks.capped(wrench, scale)[:, :3], axis=1)
    applied = np.linalg.norm(targets[quiet, :3], axis=1)
    return {
        "samples": int(quiet.sum()),
        "mean_applied": float(applied.mean()),
        "mean_force": float(force.mean()),
        "max_force": float(force.max()),
        "mean_network_force": float(raw.mean()),
    }


def force_directions(n_lat: int = 19, n_lon: int = 36) -> np.ndarray:
    """Unit vectors (n_lat, n_lon, 3) of a latitude-longitude grid, poles included (palm frame)."""
    lat = np.linspace(-np.pi / 2, np.pi / 2, n_lat)[:, None]
    lon = np.linspace(-np.pi, np.pi, n_lon)[None, :]
    return np.stack(np.broadcast_arrays(np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat) + 0 * lon), axis=-1)


def sphere_map(
    estimator: Scaled, predictor: Scaled, situation: GraspSituation, voxels: np.ndarray, directions: np.ndarray, force: float = FORCE, cap: bool = True
) -> np.ndarray:
    """The reported force norm (N) for a `force` along each of `directions` (..., 3), NaN where
    the grasp breaks, and for no force at all at the end of the flattened result: shape
    (N + 1,) for N directions (module docstring). `cap` as `LearnedEstimator`'s."""
    from robocal.grasp.controller import AnalyticalPredictor, linearized
    from robocal.grasp.learned.controller import LearnedEstimator, LearnedPredictor
    from robocal.grasp.learned.teacher import MARGIN, equilibrium

    model = linearized(situation)
    preload = AnalyticalPredictor(MARGIN)
    preload.start(situation)
    assert preload.delta0 is not None  # set by start
    command = LearnedPredictor(predictor, voxels)
    command.start(situation)
    q_offset = command.offsets(np.zeros(6))
    learned = LearnedEstimator(estimator, voxels, cap)
    learned.start(situation)
    q_d = np.asarray(situation.grasp.q_init, dtype=float) + q_offset
    forces = np.vstack([force * np.asarray(directions, dtype=float).reshape(-1, 3), np.zeros(3)])
    out = np.full(len(forces), np.nan)
    for i, f in enumerate(forces):
        tau = equilibrium(model, q_offset, np.r_[f, 0.0, 0.0, 0.0], preload.delta0)
        if tau is not None:
            out[i] = np.linalg.norm(learned.estimate(q_d, None, tau)[:3])
    return out
