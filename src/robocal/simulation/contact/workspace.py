"""The shared workspace of a body pair (1. in the procedure): pools of random configurations and
the planned contacts found in them, configurations where the nominal bodies overlap."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.spatial import cKDTree

from robocal.errors import RobocalError
from robocal.simulation.contact.context import BATCH, BodyPair, Search
from robocal.simulation.contact.kernels import CHUNK, all_distances, evaluate
from robocal.simulation.contact.pair import Pool
from robocal.simulation.sampling import sample_configurations

NEIGHBOURS = 8  # pool partners looked up per configuration
MOST_POOLS = 20  # pools tried per pair before giving up


def new_pools(search: Search, rng: np.random.Generator) -> list[Pool]:
    """Two pools of configurations and their bodies' bounding-sphere centers (nominal model)."""
    size = search.options.pool_size
    draws = [sample_configurations(search.tree, size, int(rng.integers(2**63 - 1))) for _ in range(2)]
    return [(q, evaluate(search.nominal, search.scene, search.theta_nominal, q)[1]) for q in draws]


def _planned(search: Search, pair: BodyPair, pools: list[Pool], rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The planned contacts of two pools, a chunk at a time: each configuration of a's chain from
    the first pool with one of its k-d tree neighbours of b's chain from the second, kept where
    the nominal bodies overlap by the margin and stay clear of the parked bodies."""
    (qa, ca), (qb, cb) = pools
    scene, margin = search.scene, search.options.collision_margin
    reach = scene.bounds[pair.ia][1] + scene.bounds[pair.ib][1] + max(margin, 0.0)
    dist, partner = cKDTree(cb[:, pair.ib]).query(ca[:, pair.ia], k=NEIGHBOURS, distance_upper_bound=reach)
    near = np.isfinite(dist)
    rows_a = rng.permutation(np.flatnonzero(near.any(axis=1)))
    pick = np.argmax(np.where(near[rows_a], rng.random((len(rows_a), NEIGHBOURS)), -1.0), axis=1)
    rows_b = partner[rows_a, pick]
    for first in range(0, len(rows_a), CHUNK):
        q = pair.combine(qa[rows_a[first : first + CHUNK]], qb[rows_b[first : first + CHUNK]])
        d = all_distances(search.nominal, scene, search.theta_nominal, q)
        ok = (d[:, pair.p] < margin) & (d[:, pair.strict] > search.options.parking_clearance).all(axis=1)
        yield q[ok]


class PlannedContacts:
    """The planned contacts of one pair, BATCH at a time, from the shared pools first and from new
    pools (drawn with the pair's generator) when those run out."""

    def __init__(self, search: Search, pair: BodyPair, shared_pools: list[Pool], rng: np.random.Generator):
        self.search, self.pair, self.rng = search, pair, rng
        self.stream, self.pools_used = _planned(search, pair, shared_pools, rng), 1
        self.candidates, self.used = np.zeros((0, search.n_act)), 0

    def next_batch(self) -> np.ndarray:
        """The next BATCH planned contacts."""
        while self.used + BATCH > len(self.candidates):
            chunk = next(self.stream, None)
            if chunk is None:
                if self.pools_used >= MOST_POOLS:
                    options = self.search.options
                    raise RobocalError(
                        f"pair ({self.pair.a}, {self.pair.b}): fewer than {BATCH} planned contacts (nominal signed distance < {options.collision_margin} m) in {MOST_POOLS} pools of {options.pool_size}"
                    )
                self.stream, self.pools_used = _planned(self.search, self.pair, new_pools(self.search, self.rng), self.rng), self.pools_used + 1
                continue
            self.candidates, self.used = np.concatenate([self.candidates[self.used :], chunk]), 0
        self.used += BATCH
        return self.candidates[self.used - BATCH : self.used]
