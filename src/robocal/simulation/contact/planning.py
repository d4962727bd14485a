"""Drives planned with the nominal model (2. in the procedure): a clear start for the moving
body, then a straight line in joint space through a planned contact, kept when the designated
bodies touch nothing else before they touch each other."""

from __future__ import annotations

from collections import Counter

import numpy as np

from robocal.simulation.contact.context import BATCH, BodyPair, Drive, Search
from robocal.simulation.contact.kernels import all_distances
from robocal.simulation.contact.workspace import PlannedContacts
from robocal.simulation.sampling import sample_configurations

START_CANDIDATES = 16  # random start configurations tried per drive


def _starts(search: Search, pair: BodyPair, end: np.ndarray, moves_a: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per drive, the first of START_CANDIDATES random starts of the moving chain that is clear of
    contact in the nominal model, and whether there is one."""
    n_act, n_pairs, options = search.n_act, search.n_pairs, search.options
    starts = np.repeat(end[:, None], START_CANDIDATES, axis=1)
    fresh = sample_configurations(search.tree, BATCH * START_CANDIDATES, int(rng.integers(2**63 - 1))).reshape(BATCH, START_CANDIDATES, n_act)
    for k, m in enumerate(moves_a):
        moving_cols = pair.cols[pair.a] if m else pair.cols[pair.b]
        starts[k][:, moving_cols] = fresh[k][:, moving_cols]
    d0 = all_distances(search.nominal, search.scene, search.theta_nominal, starts.reshape(-1, n_act)).reshape(BATCH, START_CANDIDATES, n_pairs)
    clear = (
        (d0[:, :, pair.p] > options.start_clearance)
        & (d0[:, :, pair.strict] > options.parking_clearance).all(axis=2)
        & (d0[:, :, pair.loose] > 0.0).all(axis=2)
    )
    return starts[np.arange(BATCH), np.argmax(clear, axis=1)], np.asarray(clear.any(axis=1))


def _blocked(search: Search, pair: BodyPair, start: np.ndarray, end: np.ndarray, k1: np.ndarray) -> np.ndarray:
    """(BATCH,) whether a designated body touches another body before the two touch each other
    (nominal model; up to s = 1, where they overlap, unless a non-negative margin plans them
    apart), for the drives k1."""
    grid = search.grid
    part = grid[grid <= 1.0] if search.options.collision_margin < 0.0 else grid
    drive = search.clip(start[k1, None] + part[None, :, None] * (end - start)[k1, None])
    dn = all_distances(search.nominal, search.scene, search.theta_nominal, drive.reshape(-1, search.n_act)).reshape(len(k1), len(part), search.n_pairs)
    touch = dn[:, :, pair.p] <= 0.0
    first = np.where(touch.any(axis=1), np.argmax(touch, axis=1), len(part) - 1)
    before = np.arange(len(part))[None] <= first[:, None]
    blocked = np.zeros(BATCH, bool)
    blocked[k1] = ((dn[:, :, pair.watched] <= 0.0).any(axis=2) & before).any(axis=1)
    return blocked


def plan_drives(search: Search, pair: BodyPair, planned: PlannedContacts, rng: np.random.Generator, reject: Counter) -> list[Drive]:
    """BATCH drives through the next planned contacts, one of the two bodies moving (chosen at
    random), of which those the nominal model accepts; the others are counted in `reject`."""
    end = planned.next_batch()
    moves_a = rng.integers(0, 2, BATCH).astype(bool)
    start, has_start = _starts(search, pair, end, moves_a, rng)
    blocked = _blocked(search, pair, start, end, np.flatnonzero(has_start))
    accepted = []
    for k in range(BATCH):
        if not has_start[k]:
            reject["no_clear_start"] += 1
        elif blocked[k]:
            reject["nominal_obstructed"] += 1
        else:
            accepted.append((start[k], end[k], bool(moves_a[k])))
    return accepted
