"""Drives executed on the true model (4. in the procedure): where each drive's contact is
detected, geometrically or by the static chain's joint torques, and what else it touched."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from robocal.simulation.contact.context import BATCH, GRID, BodyPair, Drive, Search
from robocal.simulation.contact.kernels import all_distances, contact_roots, padded, torque_detection


def _torque_contacts(search: Search, pair: BodyPair, args: tuple, s_hit: np.ndarray, moves_a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, detected) of the torque detection from the geometric contacts s_hit of the drives
    (args: theta, start, dq, padded to BATCH); moves_a: whether a moved, per drive."""
    options = search.options
    mask = np.zeros((len(s_hit), search.n_act))
    for i, m in enumerate(moves_a):
        mask[i, pair.cols[pair.b] if m else pair.cols[pair.a]] = 1.0
    s, detected = torque_detection(
        *args,
        padded(s_hit, BATCH),
        options.max_drive,
        jnp.full(BATCH, pair.p),
        padded(mask, BATCH),
        options.contact_stiffness,
        options.torque_threshold,
        search.lower,
        search.upper,
        search.truth,
        search.scene,
    )
    return np.asarray(s)[: len(s_hit)], np.asarray(detected)[: len(s_hit)]


def execute_drives(search: Search, pair: BodyPair, drives: list[Drive]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The drives on the true model: outcome ("ok" or a failure), drive parameter at detection and
    the smallest distance of a designated body to another body over the executed drive."""
    n, grid, limits, watched = len(drives), search.grid, search.limits, pair.watched
    start, end = np.array([d[0] for d in drives]), np.array([d[1] for d in drives])
    moves_a = np.array([d[2] for d in drives])
    dq = end - start
    outcome, s_rec, other = np.full(n, "", dtype=object), np.zeros(n), np.full(n, np.inf)
    drive = search.clip(start[:, None] + grid[None, :, None] * dq[:, None])
    dt = all_distances(search.truth, search.scene, search.theta_true, drive.reshape(-1, search.n_act)).reshape(n, GRID, search.n_pairs)
    touching = dt[:, :, pair.p] <= 0.0
    hits = touching.any(axis=1)
    at_start = touching[:, 0] | (dt[:, 0, watched] <= 0.0).any(axis=1)
    outcome[~hits] = "miss"
    outcome[hits & at_start] = "start_in_contact"
    k3 = np.flatnonzero(hits & ~at_start)
    if not len(k3):
        return outcome, s_rec, other
    dt = dt[k3]
    g = np.argmax(dt[:, :, pair.p] <= 0.0, axis=1)
    args = (jnp.asarray(search.theta_true), padded(start[k3], BATCH), padded(dq[k3], BATCH))
    roots = contact_roots(
        *args, padded(grid[g - 1], BATCH), padded(grid[g], BATCH), jnp.full(BATCH, pair.p), search.lower, search.upper, search.truth, search.scene
    )
    s_hit = np.asarray(roots)[: len(k3)]
    detected = np.ones(len(k3), bool)
    if search.options.detection == "torque":
        s_hit, detected = _torque_contacts(search, pair, args, s_hit, moves_a[k3])
    s_rec[k3] = s_hit
    q_hit = np.clip(start[k3] + s_hit[:, None] * dq[k3], limits[:, 0], limits[:, 1])
    d_hit = all_distances(search.truth, search.scene, search.theta_true, q_hit)
    executed = grid[None, :] < s_hit[:, None]
    along = np.where(executed, dt[:, :, watched].min(axis=2, initial=np.inf), np.inf).min(axis=1)
    other[k3] = np.minimum(along, d_hit[:, watched].min(axis=1, initial=np.inf))
    outcome[k3[~detected]] = "not_detected"
    outcome[k3[detected & (other[k3] <= 0.0)]] = "obstructed"
    outcome[k3[detected & (other[k3] > 0.0)]] = "ok"
    return outcome, s_rec, other
