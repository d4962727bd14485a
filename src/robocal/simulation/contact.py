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

Only contacts of the designated bodies are checked (see `_obstacles`): the coarse proximal
capsules of the DLR-Hand II overlap where the real phalanges do not. A contact shallower than the
motion over one grid step can go unnoticed; the recorded contact is then a later, real one.

Everything is vectorized (`jax.vmap`) and compiled once per robot model; capsules and spheres (all
of the DLR-Hand II geometry) are evaluated as swept spheres in one batched call, other primitives
through `robocal.geometry.distance.signed_distance`.
"""

from __future__ import annotations

import csv
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from typing import Callable, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from scipy.spatial import cKDTree

from robocal.errors import RobocalError
from robocal.geometry.distance import signed_distance
from robocal.geometry.links import LinkShape
from robocal.geometry.primitives import Box, Capsule, Sphere
from robocal.geometry.segments import segment_segment_distance
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.simulation.sampling import sample_configurations

DEFAULT_CONTACT_STIFFNESS = 1.0e4  # N/m, fingertip pad in series with the drive compliance
DEFAULT_TORQUE_THRESHOLD = 0.1  # Nm, as on the DLR-Hand II
DEFAULT_COLLISION_MARGIN = -0.005  # m, nominal signed distance of a planned contact (negative: overlap)
DEFAULT_POOL_SIZE = 20000
DEFAULT_START_CLEARANCE = 0.015  # m, nominal distance of the designated bodies at a drive's start
DEFAULT_PARKING_CLEARANCE = 0.005  # m, nominal distance of the designated bodies to parked bodies
DEFAULT_MAX_DRIVE = 1.5  # drive parameter at the end of the extended drive

GRID = 76  # s samples on [0, max_drive] that bracket the first contact (spacing 0.02)
BATCH = 64  # drives simulated per batch (fixed, so every batch reuses the compiled functions)
CHUNK = 1024  # configurations per compiled evaluation
NEIGHBOURS = 8  # pool partners looked up per configuration
START_CANDIDATES = 16  # random start configurations tried per drive
BISECTIONS = 64  # halvings of a bracket (a grid cell of width 0.02 shrinks below float resolution)
TORQUE_STEPS = 28  # geometric bracketing of the torque threshold: s0 + 1e-8 * 2^k, k < 28 (up to s0 + 1.3)
PARKING_SAMPLES = 64  # pair configurations the parking candidates are scored on
PARKING_CANDIDATES = 4096  # most joint-limit corners scored

FAILURES = ("miss", "start_in_contact", "obstructed", "not_detected")
REJECTIONS = ("no_clear_start", "nominal_obstructed")


@dataclass(frozen=True)
class ContactSample:
    """One simulated contact (a row of a `ContactSimulation`)."""

    moving: str
    static: str
    q: np.ndarray
    start_q: np.ndarray
    end_q: np.ndarray
    s: float
    true_distance: float


@dataclass
class ContactSimulation:
    """Simulated contacts, one row per contact; configurations in `tree.actuated` order.

    The drive of row i is q(s) = clip(start_q[i] + s (end_q[i] - start_q[i]), joint limits); contact
    was detected at s[i] and recorded as q[i] (with encoder noise). other_distance[i] is the
    smallest true signed distance of a designated body to any body but the other designated one,
    over the executed drive (positive, or the drive would have been a failure).
    """

    q: np.ndarray  # (n, n_actuated) recorded joint values at detected contact (with encoder noise)
    pairs: list[tuple[str, str]]  # per row (moving body link, static body link)
    true_distance: np.ndarray  # (n,) true signed distance at the recorded q
    start_q: np.ndarray  # (n, n_actuated) start configuration of each drive
    end_q: np.ndarray | None = None  # (n, n_actuated) planned configuration (nominal overlap), s = 1
    s: np.ndarray | None = None  # (n,) drive parameter at detection
    other_distance: np.ndarray | None = None  # (n,)
    failures: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # pair -> reason -> count
    rejections: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # pair -> reason -> count
    detection: str = "geometric"

    def __len__(self) -> int:
        return len(self.pairs)

    def sample(self, i: int) -> ContactSample:
        end = self.end_q[i] if self.end_q is not None else np.full_like(self.q[i], np.nan)
        s = float(self.s[i]) if self.s is not None else float("nan")
        return ContactSample(self.pairs[i][0], self.pairs[i][1], self.q[i], self.start_q[i], end, s, float(self.true_distance[i]))

    def pair_keys(self) -> list[tuple[str, str]]:
        """The body pair of each row, whichever body moved (names sorted)."""
        return [tuple(sorted(p)) for p in self.pairs]

    def counts(self) -> dict[tuple[str, str], int]:
        """Contacts per body pair (names sorted)."""
        return dict(Counter(self.pair_keys()))

    def summary(self) -> list[dict]:
        """Per requested pair: contacts, failures and planning rejections by reason, and the mean
        and largest |true signed distance| at the recorded configurations (m)."""
        keys = np.array([" ".join(k) for k in self.pair_keys()])
        out = []
        for pair in self.failures:
            d = np.abs(self.true_distance[keys == " ".join(sorted(pair))])
            out.append(
                {
                    "pair": pair,
                    "contacts": int(len(d)),
                    "failures": dict(self.failures[pair]),
                    "rejections": dict(self.rejections.get(pair, {})),
                    "mean_abs_distance": float(d.mean()) if len(d) else float("nan"),
                    "max_abs_distance": float(d.max()) if len(d) else float("nan"),
                }
            )
        return out


# ---- geometry layout: every body pair's signed distance, batched ---------------------------


@dataclass(frozen=True)
class _Scene:
    """Links with geometry, the body pairs that can touch, and their distances from link poses.

    Hashable, so that it can be a static argument of the compiled functions.
    """

    links: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...]  # link indices of every body pair that can touch
    swept: tuple[tuple[int, tuple[float, ...], tuple[float, ...], float], ...]  # link, p0, p1 (link frame), radius
    swept_pairs: tuple[tuple[int, int, int], ...]  # swept shape a, swept shape b, body pair
    generic: tuple[tuple[LinkShape, int, LinkShape, int, int], ...]  # shape, link, shape, link, body pair
    bounds: tuple[tuple[tuple[float, float, float], float], ...]  # per link: bounding sphere (center in link frame, radius)

    def index(self, a: str, b: str) -> int:
        ia, ib = self.links.index(a), self.links.index(b)
        return self.pairs.index((min(ia, ib), max(ia, ib)))

    def distances(self, poses):
        """(len(pairs),) minimum signed distance per body pair, from the link poses (L, 4, 4)."""
        values, owner = [], []
        if self.swept_pairs:
            link = np.array([s[0] for s in self.swept])
            p0, p1 = np.array([s[1] for s in self.swept]), np.array([s[2] for s in self.swept])
            radius = np.array([s[3] for s in self.swept])
            rot, pos = poses[link, :3, :3], poses[link, :3, 3]
            w0 = jnp.einsum("sij,sj->si", rot, p0) + pos
            w1 = jnp.einsum("sij,sj->si", rot, p1) + pos
            ia, ib, pair = (np.array(c) for c in zip(*self.swept_pairs))
            values.append(segment_segment_distance(w0[ia], w1[ia], w0[ib], w1[ib]) - radius[ia] - radius[ib])
            owner.extend(pair)
        for sa, la, sb, lb, pair in self.generic:
            values.append(signed_distance(sa.primitive, sa.pose(poses[la]), sb.primitive, sb.pose(poses[lb]))[None])
            owner.append(pair)
        values = jnp.concatenate([*values, jnp.array([jnp.inf])])
        # (pairs, most shape pairs of one body pair) gather matrix, padded with the trailing inf
        slots = [[k for k, p in enumerate(owner) if p == i] for i in range(len(self.pairs))]
        width = max(len(s) for s in slots)
        gather = np.array([s + [len(owner)] * (width - len(s)) for s in slots])
        return jnp.min(values[gather], axis=1)

    def centers(self, poses):
        """(L, 3) bounding-sphere centers of the links in the world frame."""
        local = np.array([c for c, _ in self.bounds])
        return jnp.einsum("lij,lj->li", poses[:, :3, :3], local) + poses[:, :3, 3]


def _ancestor(tree: KinematicTree, a: str, b: str) -> bool:
    ca, cb = set(tree.chain(a)), set(tree.chain(b))
    return ca <= cb or cb <= ca


def _shape_ball(shape: LinkShape) -> tuple[np.ndarray, float]:
    """A sphere (center in the link frame, radius) that contains the shape."""
    origin = np.asarray(shape.origin, dtype=float)
    prim = shape.primitive
    if isinstance(prim, Capsule):
        ends = origin[:3, :3] @ np.array([prim.p0, prim.p1]).T + origin[:3, 3:4]
        return ends.mean(axis=1), 0.5 * float(np.linalg.norm(ends[:, 1] - ends[:, 0])) + prim.radius
    if isinstance(prim, Sphere):
        return origin[:3, 3], prim.radius
    if isinstance(prim, Box):
        return origin[:3, 3], float(np.linalg.norm(prim.half_extents))
    raise RobocalError(f"no bounding sphere for {type(prim).__name__}")


def _scene(tree: KinematicTree, geometry: dict[str, tuple[LinkShape, ...]]) -> _Scene:
    links = tuple(link for link in tree.links if link in geometry)
    pairs = []
    for i, j in itertools.combinations(range(len(links)), 2):
        between = set(tree.chain(links[i])) ^ set(tree.chain(links[j]))
        # a body and its chain's descendants are not checked against each other, nor bodies that
        # no joint moves relative to each other
        if not _ancestor(tree, links[i], links[j]) and any(tree.joints[k].moves for k in between):
            pairs.append((i, j))
    swept, swept_index, swept_pairs, generic, bounds = [], {}, [], [], []
    for li, link in enumerate(links):
        balls = [_shape_ball(shape) for shape in geometry[link]]
        center = np.mean([c for c, _ in balls], axis=0)
        bounds.append((tuple(float(v) for v in center), float(max(np.linalg.norm(c - center) + r for c, r in balls))))
        for k, shape in enumerate(geometry[link]):
            if isinstance(shape.primitive, (Sphere, Capsule)):
                origin = np.asarray(shape.origin, dtype=float)
                ends = [(0.0, 0.0, 0.0)] * 2 if isinstance(shape.primitive, Sphere) else [shape.primitive.p0, shape.primitive.p1]
                p0, p1 = (tuple(float(v) for v in origin[:3, :3] @ np.asarray(e) + origin[:3, 3]) for e in ends)
                swept_index[(li, k)] = len(swept)
                swept.append((li, p0, p1, float(shape.primitive.radius)))
    for pi, (i, j) in enumerate(pairs):
        for (ka, sa), (kb, sb) in itertools.product(enumerate(geometry[links[i]]), enumerate(geometry[links[j]])):
            if (i, ka) in swept_index and (j, kb) in swept_index:
                swept_pairs.append((swept_index[(i, ka)], swept_index[(j, kb)], pi))
            else:
                generic.append((sa, i, sb, j, pi))
    return _Scene(links, tuple(pairs), tuple(swept), tuple(swept_pairs), tuple(generic), tuple(bounds))


# ---- compiled kernels (one compilation per robot model and scene) ---------------------------


def _pair_distance(model: RobotModel, scene: _Scene, theta, q, p):
    return scene.distances(model.link_poses(theta, q, scene.links))[p]


def _drive(q0, dq, s, lower, upper):
    """The configuration at drive parameter s: a straight line in joint space, held at the limits."""
    return jnp.clip(q0 + s * dq, lower, upper)


@partial(jax.jit, static_argnames=("model", "scene"))
def _batch_evaluate(theta, q, model: RobotModel, scene: _Scene):
    """Distances of every body pair and bounding-sphere centers of every body, per row of q."""

    def one(qi):
        poses = model.link_poses(theta, qi, scene.links)
        return scene.distances(poses), scene.centers(poses)

    return jax.vmap(one)(q)


def evaluate(model: RobotModel, scene: _Scene, theta, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, len(scene.pairs)) signed distances of every body pair and (n, len(scene.links), 3)
    bounding-sphere centers at the configurations q, in fixed-size chunks (one compilation)."""
    q = np.asarray(q, dtype=float)
    theta = jnp.asarray(theta, dtype=float)
    out = [(np.zeros((0, len(scene.pairs))), np.zeros((0, len(scene.links), 3)))]
    for start in range(0, len(q), CHUNK):
        block = q[start : start + CHUNK]
        d, c = _batch_evaluate(theta, _padded(block, CHUNK), model, scene)
        out.append((np.asarray(d)[: len(block)], np.asarray(c)[: len(block)]))
    return np.concatenate([d for d, _ in out]), np.concatenate([c for _, c in out])


def all_distances(model: RobotModel, scene: _Scene, theta, q: np.ndarray) -> np.ndarray:
    """(n, len(scene.pairs)) signed distances of every body pair at the configurations q."""
    return evaluate(model, scene, theta, q)[0]


@partial(jax.jit, static_argnames=("model", "scene"))
def _contact_roots(theta, q0, dq, lo, hi, p, lower, upper, model: RobotModel, scene: _Scene):
    """Bisection of d(q(s)) on [lo, hi] with d(lo) > 0 >= d(hi); returns the hi end."""

    def one(q0, dq, lo, hi, p):
        def body(_, bounds):
            lo, hi = bounds
            mid = 0.5 * (lo + hi)
            touching = _pair_distance(model, scene, theta, _drive(q0, dq, mid, lower, upper), p) <= 0.0
            return jnp.where(touching, lo, mid), jnp.where(touching, mid, hi)

        return lax.fori_loop(0, BISECTIONS, body, (lo, hi))[1]

    return jax.vmap(one)(q0, dq, lo, hi, p)


def _torque_change(model: RobotModel, scene: _Scene, theta, q, p, static_mask, stiffness):
    """(||tau - tau_0||, ||J^T n||) of the static chain: k delta ||J^T n|| and the lever arm."""
    d, grad = jax.value_and_grad(lambda qq: _pair_distance(model, scene, theta, qq, p))(q)
    lever = jnp.linalg.norm(grad * static_mask)
    return stiffness * jnp.maximum(-d, 0.0) * lever, lever


@partial(jax.jit, static_argnames=("model", "scene"))
def _torque_detection(theta, q0, dq, s0, s_max, p, static_mask, stiffness, threshold, lower, upper, model: RobotModel, scene: _Scene):
    """First s >= s0 where the torque change exceeds the threshold, found by probing
    s0 + 1e-8 * 2^k (k < TORQUE_STEPS) until it does, then bisecting the last step.
    One loop evaluates the torque once per iteration (one traced copy). Returns (s, found)."""

    def one(q0, dq, s0, p, mask):
        def body(i, state):
            lo, hi, found = state
            probing = i < TORQUE_STEPS
            s = jnp.where(probing, jnp.minimum(s0 + 1e-8 * 2.0 ** jnp.minimum(i, TORQUE_STEPS - 1), s_max), 0.5 * (lo + hi))
            over = _torque_change(model, scene, theta, _drive(q0, dq, s, lower, upper), p, mask, stiffness)[0] > threshold
            # probing: before the first crossing move lo up to s; at it set hi = s. bisecting: halve.
            new_lo = jnp.where(probing, jnp.where(found | over, lo, s), jnp.where(over, lo, s))
            new_hi = jnp.where(probing, jnp.where(found | ~over, hi, s), jnp.where(over, s, hi))
            bisect_ok = ~probing & found
            return (jnp.where(probing | bisect_ok, new_lo, lo), jnp.where(probing | bisect_ok, new_hi, hi), found | (probing & over))

        lo, hi, found = lax.fori_loop(0, TORQUE_STEPS + BISECTIONS, body, (s0, s_max, jnp.array(False)))
        return hi, found

    return jax.vmap(one)(q0, dq, s0, p, static_mask)


def _padded(array, size: int) -> jnp.ndarray:
    """The rows of array, the last one repeated up to `size` rows."""
    array = np.asarray(array)
    if len(array) < size:
        array = np.concatenate([array, np.repeat(array[-1:], size - len(array), axis=0)])
    return jnp.asarray(array)


# ---- the procedure ---------------------------------------------------------------------------


def _limits(tree: KinematicTree, names, unlimited: float) -> np.ndarray:
    return np.array([tree.joint(n).limits or (-unlimited, unlimited) for n in names], dtype=float).reshape(-1, 2)


def _obstacles(tree: KinematicTree, scene: _Scene, pair: tuple[str, str], pair_cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _parking(tree: KinematicTree, scene: _Scene, nominal: RobotModel, theta, workspace: np.ndarray, others: np.ndarray, pair_cols: np.ndarray, rng) -> np.ndarray:
    """Values of the `others` joints: the joint-limit corner farthest from the pair's bodies."""
    if len(others) == 0:
        return np.zeros(0)
    names = [tree.actuated[i] for i in others]
    bounds = _limits(tree, names, np.pi)
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
    detection: Literal["geometric", "torque"] = "geometric",
    joint_noise: float = 0.0,
    torque_threshold: float = DEFAULT_TORQUE_THRESHOLD,
    contact_stiffness: float = DEFAULT_CONTACT_STIFFNESS,
    collision_margin: float = DEFAULT_COLLISION_MARGIN,
    pool_size: int = DEFAULT_POOL_SIZE,
    start_clearance: float = DEFAULT_START_CLEARANCE,
    parking_clearance: float = DEFAULT_PARKING_CLEARANCE,
    max_drive: float = DEFAULT_MAX_DRIVE,
    max_attempts: int | None = None,
    progress: Callable[[tuple[str, str], int, int], None] | None = None,
) -> ContactSimulation:
    """Simulate `n_per_pair` contacts of each body pair (the procedure: module docstring).

    `nominal`/`theta_nominal` plan the drives, `truth`/`theta_true` touch; both need the same links
    and actuated joints (only their FK is used). Rows are grouped by pair in the order of `pairs`.
    `progress(pair, done, n_per_pair)` is called after every batch of drives. Raises RobocalError
    when a pair has no planned contact in the pools or needs more than `max_attempts` executed
    drives (default 20 n_per_pair + 200).
    """
    if detection not in ("geometric", "torque"):
        raise RobocalError(f"detection must be 'geometric' or 'torque', not '{detection}'")
    tree = nominal.tree
    if truth.tree.actuated != tree.actuated or truth.tree.links != tree.links:
        raise RobocalError("the nominal and the true model must have the same links and actuated joints")
    for link in geometry:
        if not tree.has_link(link):
            raise RobocalError(f"geometry given for unknown link '{link}' of {tree.name}")
    scene = _scene(tree, geometry)
    theta_nominal, theta_true = np.asarray(theta_nominal, dtype=float), np.asarray(theta_true, dtype=float)
    max_attempts = 20 * n_per_pair + 200 if max_attempts is None else max_attempts
    n_act, n_pairs = len(tree.actuated), len(scene.pairs)
    limits = _limits(tree, tree.actuated, np.inf)
    lower, upper = jnp.asarray(limits[:, 0]), jnp.asarray(limits[:, 1])
    grid = np.linspace(0.0, max_drive, GRID)
    rows: dict[str, list] = {k: [] for k in ("q", "pairs", "start", "end", "s", "other")}
    failures, rejections = {}, {}

    def new_pools(rng):
        """Two pools of configurations and their bodies' bounding-sphere centers (nominal model)."""
        draws = [sample_configurations(tree, pool_size, int(rng.integers(2**63 - 1))) for _ in range(2)]
        return [(q, evaluate(nominal, scene, theta_nominal, q)[1]) for q in draws]

    shared_pools = new_pools(np.random.default_rng([seed, len(pairs)]))

    for pair_number, (a, b) in enumerate(pairs):
        for link in (a, b):
            if link not in geometry:
                known = "unknown link" if not tree.has_link(link) else "link without contact geometry"
                raise RobocalError(f"pair ({a}, {b}): '{link}': {known}")
        if _ancestor(tree, a, b):
            raise RobocalError(f"pair ({a}, {b}): one body is on the other's chain; contacts need two independent chains")
        cols = {link: np.array([tree.actuated.index(n) for n in tree.actuated_for([link])], dtype=int) for link in (a, b)}
        if len(cols[a]) == 0 or len(cols[b]) == 0 or set(cols[a]) & set(cols[b]):
            raise RobocalError(f"pair ({a}, {b}): the two bodies must be moved by separate, non-empty sets of actuated joints")
        p, ia, ib = scene.index(a, b), scene.links.index(a), scene.links.index(b)
        pair_cols = np.concatenate([cols[a], cols[b]])
        other_cols = np.setdiff1d(np.arange(n_act), pair_cols)
        strict, loose = _obstacles(tree, scene, (a, b), pair_cols)
        watched = strict | loose
        rng = np.random.default_rng([seed, pair_number])

        def combine(q_a, q_b):
            q = np.zeros((len(q_a), n_act))
            q[:, cols[a]], q[:, cols[b]], q[:, other_cols] = q_a[:, cols[a]], q_b[:, cols[b]], parked
            return q

        # 3. parking, scored on a sample of the pair's workspace
        (qa, _), (qb, _) = shared_pools
        parked = np.zeros(len(other_cols))
        parked = _parking(tree, scene, nominal, theta_nominal, combine(qa[:PARKING_SAMPLES], qb[:PARKING_SAMPLES]), other_cols, pair_cols, rng)

        # 1. shared workspace: planned contacts from the two pools, evaluated a chunk at a time
        def planned(pools):
            (qa, ca), (qb, cb) = pools
            reach = scene.bounds[ia][1] + scene.bounds[ib][1] + max(collision_margin, 0.0)
            dist, partner = cKDTree(cb[:, ib]).query(ca[:, ia], k=NEIGHBOURS, distance_upper_bound=reach)
            near = np.isfinite(dist)
            rows_a = rng.permutation(np.flatnonzero(near.any(axis=1)))
            pick = np.argmax(np.where(near[rows_a], rng.random((len(rows_a), NEIGHBOURS)), -1.0), axis=1)
            rows_b = partner[rows_a, pick]
            for first in range(0, len(rows_a), CHUNK):
                q = combine(qa[rows_a[first : first + CHUNK]], qb[rows_b[first : first + CHUNK]])
                d = all_distances(nominal, scene, theta_nominal, q)
                ok = (d[:, p] < collision_margin) & (d[:, strict] > parking_clearance).all(axis=1)
                yield q[ok]

        stream, pools_used = planned(shared_pools), 1
        candidates, used = np.zeros((0, n_act)), 0

        def next_planned() -> np.ndarray:
            """The next BATCH planned contacts (new pools when the current ones run out)."""
            nonlocal stream, pools_used, candidates, used
            while used + BATCH > len(candidates):
                chunk = next(stream, None)
                if chunk is None:
                    if pools_used >= 20:
                        raise RobocalError(f"pair ({a}, {b}): fewer than {BATCH} planned contacts (nominal signed distance < {collision_margin} m) in 20 pools of {pool_size}")
                    stream, pools_used = planned(new_pools(rng)), pools_used + 1
                    continue
                candidates, used = np.concatenate([candidates[used:], chunk]), 0
            used += BATCH
            return candidates[used - BATCH : used]

        def plan(reject: Counter) -> list[tuple[np.ndarray, np.ndarray, bool]]:
            """2. BATCH drives (start, planned end, a moves?) of which those the nominal model accepts."""
            end = next_planned()
            moves_a = rng.integers(0, 2, BATCH).astype(bool)
            starts = np.repeat(end[:, None], START_CANDIDATES, axis=1)
            fresh = sample_configurations(tree, BATCH * START_CANDIDATES, int(rng.integers(2**63 - 1))).reshape(BATCH, START_CANDIDATES, n_act)
            for k, m in enumerate(moves_a):
                moving_cols = cols[a] if m else cols[b]
                starts[k][:, moving_cols] = fresh[k][:, moving_cols]
            # a start clear of contact in the nominal model
            d0 = all_distances(nominal, scene, theta_nominal, starts.reshape(-1, n_act)).reshape(BATCH, START_CANDIDATES, n_pairs)
            clear = (d0[:, :, p] > start_clearance) & (d0[:, :, strict] > parking_clearance).all(axis=2) & (d0[:, :, loose] > 0.0).all(axis=2)
            start = starts[np.arange(BATCH), np.argmax(clear, axis=1)]
            # the designated bodies touch nothing else before they touch each other (nominal model;
            # up to s = 1, where they overlap, unless a non-negative margin plans them apart)
            k1 = np.flatnonzero(clear.any(axis=1))
            part = grid[grid <= 1.0] if collision_margin < 0.0 else grid
            drive = np.clip(start[k1, None] + part[None, :, None] * (end - start)[k1, None], limits[:, 0], limits[:, 1])
            dn = all_distances(nominal, scene, theta_nominal, drive.reshape(-1, n_act)).reshape(len(k1), len(part), n_pairs)
            touch = dn[:, :, p] <= 0.0
            first = np.where(touch.any(axis=1), np.argmax(touch, axis=1), len(part) - 1)
            before = np.arange(len(part))[None] <= first[:, None]
            blocked = np.zeros(BATCH, bool)
            blocked[k1] = ((dn[:, :, watched] <= 0.0).any(axis=2) & before).any(axis=1)
            accepted, has_start = [], clear.any(axis=1)
            for k in range(BATCH):
                if not has_start[k]:
                    reject["no_clear_start"] += 1
                elif blocked[k]:
                    reject["nominal_obstructed"] += 1
                else:
                    accepted.append((start[k], end[k], bool(moves_a[k])))
            return accepted

        def execute(drives: list[tuple[np.ndarray, np.ndarray, bool]]):
            """4. The drives on the true model: outcome, drive parameter and clearance of each."""
            n = len(drives)
            start, end = np.array([d[0] for d in drives]), np.array([d[1] for d in drives])
            moves_a = np.array([d[2] for d in drives])
            dq = end - start
            outcome, s_rec, other = np.full(n, "", dtype=object), np.zeros(n), np.full(n, np.inf)
            drive = np.clip(start[:, None] + grid[None, :, None] * dq[:, None], limits[:, 0], limits[:, 1])
            dt = all_distances(truth, scene, theta_true, drive.reshape(-1, n_act)).reshape(n, GRID, n_pairs)
            touching = dt[:, :, p] <= 0.0
            hits = touching.any(axis=1)
            at_start = touching[:, 0] | (dt[:, 0, watched] <= 0.0).any(axis=1)
            outcome[~hits] = "miss"
            outcome[hits & at_start] = "start_in_contact"
            k3 = np.flatnonzero(hits & ~at_start)
            if len(k3):
                dt = dt[k3]
                g = np.argmax(dt[:, :, p] <= 0.0, axis=1)
                args = (jnp.asarray(theta_true), _padded(start[k3], BATCH), _padded(dq[k3], BATCH))
                s_hit = np.asarray(_contact_roots(*args, _padded(grid[g - 1], BATCH), _padded(grid[g], BATCH), jnp.full(BATCH, p), lower, upper, truth, scene))[: len(k3)]
                detected = np.ones(len(k3), bool)
                if detection == "torque":
                    mask = np.zeros((len(k3), n_act))
                    for i, k in enumerate(k3):
                        mask[i, cols[b] if moves_a[k] else cols[a]] = 1.0
                    s_hit, detected = _torque_detection(
                        *args, _padded(s_hit, BATCH), max_drive, jnp.full(BATCH, p), _padded(mask, BATCH), contact_stiffness, torque_threshold, lower, upper, truth, scene
                    )
                    s_hit, detected = np.asarray(s_hit)[: len(k3)], np.asarray(detected)[: len(k3)]
                s_rec[k3] = s_hit
                q_hit = np.clip(start[k3] + s_hit[:, None] * dq[k3], limits[:, 0], limits[:, 1])
                d_hit = all_distances(truth, scene, theta_true, q_hit)
                executed = grid[None, :] < s_hit[:, None]
                along = np.where(executed, dt[:, :, watched].min(axis=2, initial=np.inf), np.inf).min(axis=1)
                other[k3] = np.minimum(along, d_hit[:, watched].min(axis=1, initial=np.inf))
                outcome[k3[~detected]] = "not_detected"
                outcome[k3[detected & (other[k3] <= 0.0)]] = "obstructed"
                outcome[k3[detected & (other[k3] > 0.0)]] = "ok"
            return outcome, s_rec, other

        fail, reject, queue, done, attempts = Counter(), Counter(), [], 0, 0
        while done < n_per_pair:
            if attempts >= max_attempts:
                raise RobocalError(f"pair ({a}, {b}): only {done} of {n_per_pair} contacts after {attempts} drives (failures {dict(fail)}, planning rejections {dict(reject)})")
            want = min(BATCH, 2 * (n_per_pair - done) + 4)
            while len(queue) < want:
                if sum(reject.values()) >= 20 * max_attempts:
                    raise RobocalError(f"pair ({a}, {b}): the nominal model rejected {sum(reject.values())} drives ({dict(reject)})")
                queue += plan(reject)
            batch, queue = queue[:want], queue[want:]
            outcome, s_rec, other = execute(batch)
            for (start, end, moves_a), result, s_k, other_k in zip(batch, outcome, s_rec, other):
                if done >= n_per_pair:  # the search stops at the n_per_pair-th contact
                    break
                attempts += 1
                if result != "ok":
                    fail[result] += 1
                    continue
                q = np.clip(start + s_k * (end - start), limits[:, 0], limits[:, 1])
                if joint_noise > 0.0:
                    q[pair_cols] += rng.normal(0.0, joint_noise, len(pair_cols))
                rows["q"].append(q)
                rows["pairs"].append((a, b) if moves_a else (b, a))
                rows["start"].append(start)
                rows["end"].append(end)
                rows["s"].append(s_k)
                rows["other"].append(other_k)
                done += 1
            if progress is not None:
                progress((a, b), done, n_per_pair)
        failures[(a, b)] = {reason: fail[reason] for reason in FAILURES}
        rejections[(a, b)] = {reason: reject[reason] for reason in REJECTIONS}

    q = np.array(rows["q"]).reshape(-1, n_act)
    index = np.array([scene.index(*pair) for pair in rows["pairs"]], dtype=int)
    return ContactSimulation(
        q=q,
        pairs=rows["pairs"],
        true_distance=all_distances(truth, scene, theta_true, q)[np.arange(len(q)), index],
        start_q=np.array(rows["start"]).reshape(-1, n_act),
        end_q=np.array(rows["end"]).reshape(-1, n_act),
        s=np.array(rows["s"], dtype=float),
        other_distance=np.array(rows["other"], dtype=float),
        failures=failures,
        rejections=rejections,
        detection=detection,
    )


# ---- files -----------------------------------------------------------------------------------


def write_contact_csv(path: Path, tree: KinematicTree, sim: ContactSimulation) -> None:
    """The `contact` measurement's data file: body_a (the moving body), body_b (the static one),
    then one column per actuated joint of the tree, at full float64 precision."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["body_a", "body_b", *tree.actuated])
        for (moving, static), q in zip(sim.pairs, sim.q):
            writer.writerow([moving, static, *(repr(float(v)) for v in q)])


# ---- the DLR-Hand II (`robocal simulate contact`) -------------------------------------------

DLR_FINGERS = ("thumb", "fore", "middle", "ring")
DLR_ROBOT, DLR_GEOMETRY = "dlr_hand_ii.yaml", "dlr_hand_ii_geometry.yaml"
DLR_PARAMETERS = {"joints": {"*_q?": "dh"}}  # the 16 finger joints <finger>_q1..q4
SIGMA = 1e-4  # m, sigma of the contact measurement in the written problem


def dlr_hand_pairs() -> list[tuple[str, str]]:
    """The six fingertip pairs of the DLR-Hand II: (<f>_link4, <g>_link4)."""
    return [(f"{f}_link4", f"{g}_link4") for f, g in itertools.combinations(DLR_FINGERS, 2)]


@dataclass
class DlrHandContacts:
    """What `simulate_dlr_hand` simulated and wrote."""

    sim: ContactSimulation
    tree: KinematicTree
    truth: RobotModel  # `dh` parameterization of every finger joint
    theta_true: np.ndarray
    geometry: dict[str, tuple[LinkShape, ...]]
    problem: Path
    files: list[Path]
    seconds: float


@lru_cache(maxsize=8)
def perturbed_dlr_hand(translation: float, rotation: float, seed: int):
    """(tree, geometry, truth, theta_true) of a perturbed DLR-Hand II. Cached, so that repeated
    simulations in one process (tests, demos) reuse the model object and its compiled kernels."""
    from robocal.geometry.links import GeometryConfig, load_geometry
    from robocal.kinematics.dh import load_dh
    from robocal.problem.build import joint_modes
    from robocal.problem.schema import ParametersConfig
    from robocal.simulation.perturb import perturb_parameters

    models = resources.files("robocal").joinpath("models")
    with resources.as_file(models.joinpath(DLR_ROBOT)) as robot, resources.as_file(models.joinpath(DLR_GEOMETRY)) as shapes:
        tree = load_dh(robot)
        geometry = load_geometry(GeometryConfig(files=[shapes]), shapes.parent)
        truth = RobotModel(tree, joint_modes(tree, ParametersConfig(**DLR_PARAMETERS), robot))
    theta_true = perturb_parameters(truth, seed=seed, translation=translation, rotation=rotation)
    theta_true.flags.writeable = False
    return tree, geometry, truth, theta_true


def simulate_dlr_hand(
    out_dir: Path,
    *,
    n_per_pair: int = 50,
    seed: int = 0,
    translation: float = 0.005,
    rotation: float = float(np.deg2rad(5.0)),
    detection: Literal["geometric", "torque"] = "geometric",
    joint_noise: float = 0.0,
    progress: Callable[[tuple[str, str], int, int], None] | None = None,
    **options,
) -> DlrHandContacts:
    """A perturbed DLR-Hand II and its fingertip contacts, written as a ready-to-run problem.

    The truth is the packaged DH table with every DH parameter of the 16 finger joints perturbed
    uniformly by up to `translation` (m) / `rotation` (rad) (`perturb_parameters`, `seed`); the
    drives are planned with the nominal table (`seed` again). Writes to `out_dir`: contacts.csv,
    true.urdf (the true hand), the DH table and geometry files, and problem.yaml: a `contact`
    measurement (sigma 0.1 mm) calibrating the DH parameters of every finger joint, with priors of
    the perturbation's size. `options` go to `simulate_contacts`.
    """
    import yaml

    from robocal.kinematics import transforms as tf
    from robocal.kinematics.urdf import write_urdf

    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    models = resources.files("robocal").joinpath("models")
    for name in (DLR_ROBOT, DLR_GEOMETRY):
        (out_dir / name).write_text(models.joinpath(name).read_text())
    tree, geometry, truth, theta_true = perturbed_dlr_hand(float(translation), float(rotation), int(seed))
    sim = simulate_contacts(truth, truth.nominal, truth, theta_true, geometry, dlr_hand_pairs(), n_per_pair, seed, detection=detection, joint_noise=joint_noise, progress=progress, **options)

    files = [out_dir / name for name in ("contacts.csv", "true.urdf", DLR_ROBOT, DLR_GEOMETRY, "problem.yaml")]
    write_contact_csv(files[0], tree, sim)
    origins = {name: (t[:3, 3], tf.matrix_to_rpy(t[:3, :3])) for name, t in truth.calibrated_origins(theta_true).items()}
    write_urdf(tree, files[1], origins)
    problem = {
        "robot": DLR_ROBOT,
        "parameters": DLR_PARAMETERS,
        "priors": {"translation": float(translation), "rotation": float(rotation)},
        "geometry": {"files": [DLR_GEOMETRY]},
        "measurements": [{"name": "contacts", "type": "contact", "data": files[0].name, "sigma": SIGMA}],
    }
    header = f"# Contact calibration of a simulated DLR-Hand II (robocal simulate contact, seed {seed}); the true hand is true.urdf.\n"
    files[4].write_text(header + yaml.safe_dump(problem, sort_keys=False))
    return DlrHandContacts(sim, tree, truth, np.array(theta_true), geometry, files[4], files, time.perf_counter() - started)
