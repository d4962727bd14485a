"""Simulated self-contact data: a "true" robot touching its own bodies along drives planned with
the nominal model, following the contact search of the contact-calibration paper (Sec. V).

For each body pair (a, b) -- two links with contact geometry on independent chains, e.g. two
fingertips -- contacts are simulated until `n_per_pair` succeed:

1. **Shared workspace.** Two pools of `pool_size` random configurations, uniform within the joint
   limits. For each configuration of a's chain from the first pool, the configurations of b's
   chain from the second pool whose bodies' bounding spheres overlap are looked up (k-d tree, up to
   8), one of them is picked at random, and the pair is a *planned contact* when the NOMINAL
   signed distance of a and b is below `collision_margin` and both stay `parking_clearance` away
   from the parked chains. The margin is signed. The default, -5 mm, keeps configurations where
   the nominal bodies overlap by at least 5 mm: the scale of the fingertip error of a hand whose
   DH parameters are off by +-5 mm / +-5 deg (about 10 to 20 mm between two fingertips), so that
   most true hands touch on the way there as well.
2. **Drive.** One of the two bodies is chosen at random to move, the other stays. The moving chain
   starts at a random configuration (the first of 16 tries) at which, in the nominal model, the
   designated bodies are more than `start_clearance` apart and touch no other body, and drives in
   a straight line in joint space through the planned configuration and beyond:
   q(s) = clip(q_start + s (q_plan - q_start), joint limits), s in [0, max_drive], max_drive = 1.5,
   so that the true bodies meet even where the nominal model is off. A drive on which, in the
   nominal model, a designated body touches another body before the two touch each other is not
   executed (a planning rejection).
3. **Parking.** The chains outside the pair wait at one configuration per pair: the corner of their
   joint-limit box (every joint at a limit) whose bodies stay farthest, in the nominal model, from
   the pair's bodies over a sample of the pair's workspace. Drives on which a parked body touches
   a designated body in the true model are failures, so parked chains never take part in a contact.
4. **Detection, on the true model.** `geometric`: the first root of the true signed distance along
   the drive, bracketed on a grid of s (spacing 0.02) and refined by bisection to float resolution
   (|d| ~ 1e-17 m). `torque`: a compliant contact. At penetration depth delta the bodies push each
   other with f = contact_stiffness * delta along the contact normal n; the static chain's joint
   torques are tau = J^T f, J the position Jacobian of the contact point on the static body with
   respect to the static chain's actuated joints (a coupled joint, such as q4 = q3, adds its torque
   to its driver's). The sensed change is ||tau - tau_0|| = contact_stiffness * delta * ||J^T n||
   (tau_0, without contact, is the offset set before the drive). J^T n is the gradient of the
   signed distance with respect to the static chain's actuated joints (envelope theorem: the
   witness point moves with its body), taken by differentiating the distance through FK. Contact
   is detected at the first s where the change exceeds `torque_threshold`, so the recorded
   configuration penetrates by delta = torque_threshold / (contact_stiffness * ||J^T n||). The
   default stiffness, 1e4 N/m (10 N/mm: a padded fingertip in series with the finger's drive
   compliance), and the DLR-Hand II's lever arms ||J^T n|| (0.01 to 0.18 m) give depths of 0.05
   to 1 mm, about 0.12 mm on average.
   Gaussian encoder noise (`joint_noise`, rad) is then added to the recorded joint values of both
   chains of the pair (the parked chains are recorded as commanded).
5. **Failures are retried, counted and reported** (`ContactSimulation.failures`): the true bodies
   miss each other (`miss`), one of them touches something at the start (`start_in_contact`),
   a designated body touches another body first (`obstructed`), or the torque stays below the
   threshold (`not_detected`). Drives the nominal model rejects are counted in `rejections`.

Only contacts of the designated bodies are checked (see `pair.obstacles`): the coarse proximal
capsules of the DLR-Hand II overlap where the real phalanges do not. A contact shallower than the
motion over one grid step can go unnoticed; the recorded contact is then a later, real one.

Everything is vectorized (`jax.vmap`) and compiled once per robot model (`kernels`); the bodies'
distances are batched in `scene`. The steps live in `workspace` (1.), `planning` (2.), `pair` (3.)
and `detection` (4.); this module runs them pair by pair (5.).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.geometry.links import LinkShape
from robocal.kinematics.model import RobotModel
from robocal.simulation.contact.context import (
    BATCH,
    DEFAULT_COLLISION_MARGIN,
    DEFAULT_CONTACT_STIFFNESS,
    DEFAULT_MAX_DRIVE,
    DEFAULT_PARKING_CLEARANCE,
    DEFAULT_POOL_SIZE,
    DEFAULT_START_CLEARANCE,
    DEFAULT_TORQUE_THRESHOLD,
    GRID,
    BodyPair,
    Detection,
    Drive,
    Search,
    SearchOptions,
    joint_limits,
)
from robocal.simulation.contact.detection import execute_drives
from robocal.simulation.contact.kernels import all_distances
from robocal.simulation.contact.pair import Pool, body_pair
from robocal.simulation.contact.planning import plan_drives
from robocal.simulation.contact.results import FAILURES, REJECTIONS, ContactSimulation
from robocal.simulation.contact.scene import build_scene
from robocal.simulation.contact.workspace import PlannedContacts, new_pools

Progress = Callable[[tuple[str, str], int, int], None]


@dataclass
class _Rows:
    """The contacts found so far, one entry per contact."""

    q: list[np.ndarray] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    start: list[np.ndarray] = field(default_factory=list)
    end: list[np.ndarray] = field(default_factory=list)
    s: list[float] = field(default_factory=list)
    other: list[float] = field(default_factory=list)

    def add(self, q: np.ndarray, pair: tuple[str, str], drive: Drive, s: float, other: float) -> None:
        self.q.append(q)
        self.pairs.append(pair)
        self.start.append(drive[0])
        self.end.append(drive[1])
        self.s.append(s)
        self.other.append(other)


def _new_search(
    nominal: RobotModel, theta_nominal, truth: RobotModel, theta_true, geometry: dict[str, tuple[LinkShape, ...]], options: SearchOptions
) -> Search:
    """The run's models and scene, after checking that the two models and the geometry agree."""
    if options.detection not in ("geometric", "torque"):
        raise RobocalError(f"detection must be 'geometric' or 'torque', not '{options.detection}'")
    tree = nominal.tree
    if truth.tree.actuated != tree.actuated or truth.tree.links != tree.links:
        raise RobocalError("the nominal and the true model must have the same links and actuated joints")
    for link in geometry:
        if not tree.has_link(link):
            raise RobocalError(f"geometry given for unknown link '{link}' of {tree.name}")
    scene = build_scene(tree, geometry)
    limits = joint_limits(tree, tree.actuated, np.inf)
    return Search(
        nominal=nominal,
        theta_nominal=np.asarray(theta_nominal, dtype=float),
        truth=truth,
        theta_true=np.asarray(theta_true, dtype=float),
        scene=scene,
        options=options,
        limits=limits,
        lower=jnp.asarray(limits[:, 0]),
        upper=jnp.asarray(limits[:, 1]),
        grid=np.linspace(0.0, options.max_drive, GRID),
    )


def _search_pair(
    search: Search,
    pair: BodyPair,
    planned: PlannedContacts,
    n_per_pair: int,
    max_attempts: int,
    rng: np.random.Generator,
    rows: _Rows,
    progress: Progress | None,
) -> tuple[Counter, Counter]:
    """5. Drives of one pair until n_per_pair contacts are found (added to rows): failures and
    planning rejections by reason."""
    a, b = pair.a, pair.b
    pair_cols, noise = pair.pair_cols, search.options.joint_noise
    fail: Counter = Counter()
    reject: Counter = Counter()
    queue: list[Drive] = []
    done, attempts = 0, 0
    while done < n_per_pair:
        if attempts >= max_attempts:
            raise RobocalError(
                f"pair ({a}, {b}): only {done} of {n_per_pair} contacts after {attempts} drives (failures {dict(fail)}, planning rejections {dict(reject)})"
            )
        want = min(BATCH, 2 * (n_per_pair - done) + 4)
        while len(queue) < want:
            if sum(reject.values()) >= 20 * max_attempts:
                raise RobocalError(f"pair ({a}, {b}): the nominal model rejected {sum(reject.values())} drives ({dict(reject)})")
            queue += plan_drives(search, pair, planned, rng, reject)
        batch, queue = queue[:want], queue[want:]
        outcome, s_rec, other = execute_drives(search, pair, batch)
        for drive, result, s_k, other_k in zip(batch, outcome, s_rec, other):
            if done >= n_per_pair:  # the search stops at the n_per_pair-th contact
                break
            attempts += 1
            if result != "ok":
                fail[result] += 1
                continue
            start, end, moves_a = drive
            q = search.clip(start + s_k * (end - start))
            if noise > 0.0:
                q[pair_cols] += rng.normal(0.0, noise, len(pair_cols))
            rows.add(q, (a, b) if moves_a else (b, a), drive, s_k, other_k)
            done += 1
        if progress is not None:
            progress((a, b), done, n_per_pair)
    return fail, reject


def simulate_contacts(
    nominal: RobotModel,
    theta_nominal: np.ndarray,
    truth: RobotModel,
    theta_true: np.ndarray,
    geometry: dict[str, tuple[LinkShape, ...]],
    pairs: list[tuple[str, str]],
    n_per_pair: int,
    seed: int = 0,
    *,
    detection: Detection = "geometric",
    joint_noise: float = 0.0,
    torque_threshold: float = DEFAULT_TORQUE_THRESHOLD,
    contact_stiffness: float = DEFAULT_CONTACT_STIFFNESS,
    collision_margin: float = DEFAULT_COLLISION_MARGIN,
    pool_size: int = DEFAULT_POOL_SIZE,
    start_clearance: float = DEFAULT_START_CLEARANCE,
    parking_clearance: float = DEFAULT_PARKING_CLEARANCE,
    max_drive: float = DEFAULT_MAX_DRIVE,
    max_attempts: int | None = None,
    progress: Progress | None = None,
) -> ContactSimulation:
    """Simulate `n_per_pair` contacts of each body pair (the procedure: module docstring).

    `nominal`/`theta_nominal` plan the drives, `truth`/`theta_true` touch; both need the same links
    and actuated joints (only their FK is used). Rows are grouped by pair in the order of `pairs`.
    `progress(pair, done, n_per_pair)` is called after every batch of drives. Raises RobocalError
    when a pair has no planned contact in the pools or needs more than `max_attempts` executed
    drives (default 20 n_per_pair + 200).
    """
    options = SearchOptions(
        detection, joint_noise, torque_threshold, contact_stiffness, collision_margin, pool_size, start_clearance, parking_clearance, max_drive
    )
    search = _new_search(nominal, theta_nominal, truth, theta_true, geometry, options)
    max_attempts = 20 * n_per_pair + 200 if max_attempts is None else max_attempts
    rows = _Rows()
    failures, rejections = {}, {}
    shared_pools: list[Pool] = new_pools(search, np.random.default_rng([seed, len(pairs)]))
    for pair_number, (a, b) in enumerate(pairs):
        rng = np.random.default_rng([seed, pair_number])
        pair = body_pair(search, geometry, a, b, shared_pools, rng)
        planned = PlannedContacts(search, pair, shared_pools, rng)
        fail, reject = _search_pair(search, pair, planned, n_per_pair, max_attempts, rng, rows, progress)
        failures[(a, b)] = {reason: fail[reason] for reason in FAILURES}
        rejections[(a, b)] = {reason: reject[reason] for reason in REJECTIONS}
    return _simulation(search, rows, failures, rejections)


def _simulation(search: Search, rows: _Rows, failures: dict, rejections: dict) -> ContactSimulation:
    """The contacts found, with the true signed distance of each pair at its recorded q."""
    n_act = search.n_act
    q = np.array(rows.q).reshape(-1, n_act)
    index = np.array([search.scene.index(*pair) for pair in rows.pairs], dtype=int)
    return ContactSimulation(
        q=q,
        pairs=rows.pairs,
        true_distance=all_distances(search.truth, search.scene, search.theta_true, q)[np.arange(len(q)), index],
        start_q=np.array(rows.start).reshape(-1, n_act),
        end_q=np.array(rows.end).reshape(-1, n_act),
        s=np.array(rows.s, dtype=float),
        other_distance=np.array(rows.other, dtype=float),
        failures=failures,
        rejections=rejections,
        detection=search.options.detection,
    )
