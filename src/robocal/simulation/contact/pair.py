"""One body pair of a contact search: its checks, the body pairs its drives must keep apart, and
where the chains outside the pair are parked."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.simulation.contact.context import BodyPair, Search, joint_limits
from robocal.simulation.contact.kernels import all_distances
from robocal.simulation.contact.scene import Scene, on_one_chain

PARKING_SAMPLES = 64  # pair configurations the parking candidates are scored on
PARKING_CANDIDATES = 4096  # most joint-limit corners scored

Pool = tuple[np.ndarray, np.ndarray]  # configurations (n, n_actuated) and bounding-sphere centers (n, L, 3)


def obstacles(tree: KinematicTree, scene: Scene, pair: tuple[str, str], pair_cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The body pairs a drive of `pair` must keep apart, as two masks over scene.pairs.

    Only contacts of the two designated bodies count: they are where the contact is sensed and
    recorded, so each must touch nothing but the other from the start of a drive to detection.
    strict: a designated body against a parked body (one moved only by joints outside the pair's
    chains), planned with `parking_clearance`; other: a designated body against any other body.
    Other body pairs are not checked: coarse capsules overlap where the real bodies do not (the
    proximal phalanges of neighbouring DLR fingers overlap at q = 0, also with a finger parked
    between them).
    """
    pair_names = {tree.actuated[i] for i in pair_cols}
    moved = [set(tree.actuated_for([link])) for link in scene.links]
    parked_body = [bool(m) and not (m & pair_names) for m in moved]
    designated = {scene.links.index(link) for link in pair}
    p = scene.index(*pair)
    strict, loose = np.zeros(len(scene.pairs), bool), np.zeros(len(scene.pairs), bool)
    for k, (i, j) in enumerate(scene.pairs):
        if k == p or not (i in designated or j in designated):
            continue
        other = j if i in designated else i
        strict[k], loose[k] = parked_body[other], not parked_body[other]
    return strict, loose


def parking(
    tree: KinematicTree, scene: Scene, nominal: RobotModel, theta, workspace: np.ndarray, others: np.ndarray, pair_cols: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Values of the `others` joints: the joint-limit corner farthest from the pair's bodies."""
    if len(others) == 0:
        return np.zeros(0)
    names = [tree.actuated[i] for i in others]
    bounds = joint_limits(tree, names, np.pi)
    if 2 ** len(others) <= PARKING_CANDIDATES:
        corners = np.array(list(itertools.product((0, 1), repeat=len(others))))
    else:
        corners = rng.integers(0, 2, size=(PARKING_CANDIDATES, len(others)))
    candidates = np.where(corners == 1, bounds[:, 1], bounds[:, 0])
    pair_names = {tree.actuated[i] for i in pair_cols}
    moved = [set(tree.actuated_for([link])) for link in scene.links]
    parked = {i for i, m in enumerate(moved) if m & set(names) and not m & pair_names}
    chain = {i for i, m in enumerate(moved) if m & pair_names}
    relevant = [k for k, (i, j) in enumerate(scene.pairs) if (i in parked and j in chain) or (j in parked and i in chain)]
    if not relevant:
        return candidates[0]
    rows = np.repeat(workspace[None], len(candidates), axis=0)
    rows[:, :, others] = candidates[:, None, :]
    d = all_distances(nominal, scene, theta, rows.reshape(-1, rows.shape[-1]))[:, relevant]
    score = d.reshape(len(candidates), len(workspace), -1).min(axis=(1, 2))
    return candidates[int(np.argmax(score))]


def _columns(tree: KinematicTree, geometry, a: str, b: str) -> dict[str, np.ndarray]:
    """The actuated columns that move each body, after checking that the pair can be simulated."""
    for link in (a, b):
        if link not in geometry:
            known = "unknown link" if not tree.has_link(link) else "link without contact geometry"
            raise RobocalError(f"pair ({a}, {b}): '{link}': {known}")
    if on_one_chain(tree, a, b):
        raise RobocalError(f"pair ({a}, {b}): one body is on the other's chain; contacts need two independent chains")
    cols = {link: np.array([tree.actuated.index(n) for n in tree.actuated_for([link])], dtype=int) for link in (a, b)}
    if len(cols[a]) == 0 or len(cols[b]) == 0 or set(cols[a]) & set(cols[b]):
        raise RobocalError(f"pair ({a}, {b}): the two bodies must be moved by separate, non-empty sets of actuated joints")
    return cols


def body_pair(search: Search, geometry, a: str, b: str, pools: list[Pool], rng: np.random.Generator) -> BodyPair:
    """The pair (a, b) of `search`, its other chains parked (3. in the procedure: the corner scored
    on the first PARKING_SAMPLES configurations of the shared pools)."""
    tree, scene = search.tree, search.scene
    cols = _columns(tree, geometry, a, b)
    pair_cols = np.concatenate([cols[a], cols[b]])
    other_cols = np.setdiff1d(np.arange(search.n_act), pair_cols)
    strict, loose = obstacles(tree, scene, (a, b), pair_cols)
    pair = BodyPair(
        a, b, scene.index(a, b), scene.links.index(a), scene.links.index(b), cols, other_cols, strict, loose, np.zeros(len(other_cols)), search.n_act
    )
    (qa, _), (qb, _) = pools
    workspace = pair.combine(qa[:PARKING_SAMPLES], qb[:PARKING_SAMPLES])
    parked = parking(tree, scene, search.nominal, search.theta_nominal, workspace, other_cols, pair_cols, rng)
    return replace(pair, parked=parked)
