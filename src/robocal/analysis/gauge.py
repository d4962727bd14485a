"""Gauges: rigid motions of the robot that no measurement sees but the task does, fixed explicitly.

Measurements often see a robot only up to a rigid motion of everything below its root: contacts
between fingertips see where the fingers are relative to each other, not how the whole set of
fingers stands on the palm; markers seen in a tracker frame that is estimated too see the arm up to
where the tracker registration puts it. Where the parameterization can move every used link by
one rigid motion (`full` joint origins next to the root can), the data leave that motion to the
priors: the MAP estimate then picks whatever the prior minimum happens to be, and a task expressed
in the root frame (fingertips relative to the thumb, in the palm frame; the tool in the base
frame) inherits it.

`find_gauge` finds such directions and `fix_gauge` fixes them explicitly:

1. Twists xi = (v, w) in the root frame (dx, dy, dz, rx, ry, rz) move the used links (those the
   measurements and the task use) as T -> exp(xi) T. A twist is *representable* where the robot
   parameters reproduce that change of every used link at SAMPLES configurations to a relative
   REPRESENTABLE; its parameter direction b is the least-squares one.
2. Such a direction is *unseen* where, with the non-robot parameters (frames, marker offsets)
   following it at least squares, the measurement Jacobian (unweighted, SI) changes along it by
   less than the identifiability threshold, the test that makes `rank_deficient` directions.
3. It is a *gauge* where the task sees it: the task Jacobian along it exceeds TASK_VISIBLE of its
   largest value. Unseen twists the task does not see either (a common translation of all
   fingertips, for a task of relative positions) are left alone.

The fix keeps the task's reference frame at nominal: among the estimates that differ only by the
gauge (the data fit is the same for all), it takes the one whose task points on the task's test
set are best aligned with the nominal robot's (least squares over the rigid motions of the gauge;
`align`). The robot parameters are then solved so that every used link is moved by that rigid
motion exactly (Gauss-Newton on the link poses), and the non-robot parameters follow. The task
error *modulo the gauge* is the task error after the best such alignment with the truth: what a
calibration can know; the raw error adds the true robot's own, unknowable, gauge component.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from robocal.analysis.identifiability import DEFAULT_THRESHOLD
from robocal.kinematics import transforms as tf
from robocal.kinematics.model import RobotModel
from robocal.measurements.task import task_vectors
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set

if TYPE_CHECKING:
    from robocal.analysis.task_uncertainty import Task
    from robocal.problem.build import Problem

TWISTS = ("dx", "dy", "dz", "rx", "ry", "rz")  # translation (m) and rotation (rad) in the root frame
SAMPLES = 8  # configurations on which the parameters must reproduce a rigid motion of the used links
REPRESENTABLE = 1e-6  # relative residual of that reproduction below which a twist is representable
TASK_VISIBLE = 1e-6  # share of the largest task sensitivity below which a direction is task-invisible
POSE_TOLERANCE = 1e-12  # m and rad: the fixed estimate reproduces the moved link poses to this
ITERATIONS = 30
RCOND = 1e-9  # least-squares cut-off relative to the largest singular value: redundant parameters (a `full` chain) are not steps


@dataclass(frozen=True)
class Gauge:
    """Rigid motions of every link below `root` that the measurements do not see and the task
    does. `twists` (k, 6): an orthonormal basis of them (dx, dy, dz in m, rx, ry, rz in rad, root
    frame); `directions` (P, k): the change of every problem parameter per unit of each basis
    twist (the robot's own and those that follow it: `compensated`); `points`: the task's points
    are positions in the root frame (its reference is the root), else vectors between links."""

    root: str
    twists: np.ndarray
    directions: np.ndarray
    points: bool
    links: tuple[str, ...]
    compensated: tuple[str, ...]

    @property
    def components(self) -> tuple[str, ...]:
        """The coordinate twists the gauge holds whole (all of them when it is coordinate-aligned)."""
        inside = np.einsum("ij,ij->j", self.twists, self.twists)  # squared norm of each axis' projection
        return tuple(name for name, share in zip(TWISTS, inside) if share > 1.0 - 1e-6)

    def describe(self) -> str:
        """The gauge in words, e.g. 'rotation about x, y, z of every link below palm (its frame's axes)'."""
        names = self.components
        if len(names) != len(self.twists):
            return f"{len(self.twists)} rigid motion(s) of every link below {self.root} (combinations of {', '.join(TWISTS)})"
        parts = [f"{kind} {', '.join(n[1] for n in names if n[0] == key)}" for kind, key in (("translation along", "d"), ("rotation about", "r"))]
        return " and ".join(p for p in parts if not p.endswith(" ")) + f" of every link below {self.root} (its frame's axes)"


@dataclass(frozen=True)
class GaugeFix:
    """A gauge and how the estimate was moved along it: `shift` (6,) the applied rigid motion as
    (translation, rotation vector) in the root frame; `map_theta` the solver's estimate before and
    `theta` the fixed one (every problem parameter); `data_change` the largest change of a whitened measurement row (zero for a true gauge, up to
    rounding); `prior_cost` the prior term before and after."""

    gauge: Gauge
    shift: np.ndarray
    map_theta: np.ndarray
    theta: np.ndarray
    data_change: float
    prior_cost: tuple[float, float]

    def report(self, names: list[str], most: int = 8) -> dict:
        """report.json `gauge`."""
        directions = []
        for column, twist in zip(self.gauge.directions.T, self.gauge.twists):
            top = np.argsort(-np.abs(column))[:most]
            scale = np.abs(column).max()
            directions.append({"twist": dict(zip(TWISTS, map(float, twist))), "parameters": {names[i]: float(column[i] / scale) for i in top if column[i]}})
        return {
            "description": self.gauge.describe(),
            "root": self.gauge.root,
            "components": list(self.gauge.components),
            "links": list(self.gauge.links),
            "compensated": list(self.gauge.compensated),
            "rule": "the task's reference frame kept at nominal: the task points best aligned with the nominal robot's",
            "shift": {
                "translation": [float(v) for v in self.shift[:3]],
                "rotation": [float(v) for v in self.shift[3:]],
                "angle": float(np.linalg.norm(self.shift[3:])),
            },
            "directions": directions,
            "data_change": self.data_change,
            "prior_cost": {"before": self.prior_cost[0], "after": self.prior_cost[1]},
        }


# ---- rigid motions and their alignment ------------------------------------------------------------


def motion(xi: np.ndarray) -> np.ndarray:
    """The rigid motion Trans(v) Rot(w) of a twist xi = (v, w) (4x4): first order exp(xi)."""
    return np.asarray(tf.homogeneous(tf.rotvec_to_matrix(np.asarray(xi[3:], dtype=float)), np.asarray(xi[:3], dtype=float)))


def twist_of(g: np.ndarray) -> np.ndarray:
    """(translation, rotation vector) of a rigid motion: the inverse of `motion`."""
    return np.concatenate([g[:3, 3], np.asarray(tf.matrix_to_rotvec(g[:3, :3]))])


def apply(g: np.ndarray, t: np.ndarray, points: bool) -> np.ndarray:
    """Task points (..., 3) moved by g: positions rotate and translate, vectors only rotate."""
    return t @ g[:3, :3].T + (g[:3, 3] if points else 0.0)


def align(t_from: np.ndarray, t_to: np.ndarray, twists: np.ndarray, points: bool) -> np.ndarray:
    """The rigid motion g in the span of `twists` (k, 6) minimizing sum |apply(g, t_from) - t_to|^2
    (Gauss-Newton with left updates g <- motion(twists^T d) g), 4x4."""
    g, a, b = np.eye(4), t_from.reshape(-1, 3), t_to.reshape(-1, 3)
    for _ in range(ITERATIONS):
        current = apply(g, a, points)
        jac = np.stack([(np.cross(x[3:], current) + (x[:3] if points else 0.0)).ravel() for x in twists], axis=1)
        step = np.linalg.lstsq(jac, (b - current).ravel(), rcond=None)[0]
        g = motion(twists.T @ step) @ g
        if np.abs(step).max() < 1e-15:
            break
    return g


def modulo_errors(t_model: np.ndarray, t_true: np.ndarray, twists: np.ndarray, points: bool) -> np.ndarray:
    """(n, F) task errors |t_model - t_true| after the best rigid motion in the span of the
    gauge's `twists` (k, 6) (what a calibration can know); t_* (n, F, 3) task points, positions
    in the root frame when `points` (`Gauge.points`), else vectors between links."""
    g = align(t_model, t_true, twists, points)
    return np.linalg.norm(apply(g, t_model, points) - t_true, axis=-1)


def modulo_jacobians(jacobians: np.ndarray, points: np.ndarray, twists: np.ndarray, positions: bool) -> np.ndarray:
    """Task Jacobians (n, F, 3, P) with the gauge's rigid motions projected out. A parameter error
    delta's task error modulo the gauge is min over the twists' span of |Jt delta + motion of the
    task points|, i.e. |(I - U U^T) Jt delta| with U an orthonormal basis of the task points'
    first-order motions (w x t, plus v for positions) over the whole test set: the gauge acts on
    the task points alone, whatever the parameterization. points (n, F, 3): the task points."""
    motions = np.stack([(np.cross(x[3:], points) + (x[:3] if positions else 0.0)).ravel() for x in twists], axis=1)
    u, s, _ = np.linalg.svd(motions, full_matrices=False)
    u = u[:, s > TASK_VISIBLE * s.max(initial=0.0)]
    flat = jacobians.reshape(-1, jacobians.shape[-1])
    return (flat - u @ (u.T @ flat)).reshape(jacobians.shape)


def predicted_modulo(gauge: Gauge, task: Task, robot: RobotModel, theta: np.ndarray, jacobians: np.ndarray, covariance: np.ndarray) -> dict:
    """`predicted_task_error` modulo the gauge: the task Jacobians (`Task.robot_jacobians` of robot
    at theta, its test set) with the gauge's motions of the task points projected out."""
    from robocal.analysis.task_uncertainty import predicted_task_error

    q = uniform_cartesian_test_set(robot, theta, (task.reference, *task.tips), task.n, task.seed)
    projected = modulo_jacobians(jacobians, task_points(robot, theta, q, task), gauge.twists, gauge.points)
    return predicted_task_error(projected, covariance)


# ---- finding a gauge ----------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("robot", "links"))
def _pose_jacobian(theta, q, robot: RobotModel, links: tuple[str, ...]):
    """(S, L, 6, P): d(link pose)/d(theta) as twists (dp, dw) in the root frame, and the poses."""

    def poses(th, qi):
        return robot.link_poses(th, qi, links)

    values = jax.vmap(poses, in_axes=(None, 0))(theta, q)
    jac = jax.vmap(jax.jacfwd(poses), in_axes=(None, 0))(theta, q)  # (S, L, 4, 4, P)
    spin = jnp.einsum("slijp,slkj->slikp", jac[:, :, :3, :3], values[:, :, :3, :3])  # dR R^T
    dw = jnp.stack([spin[:, :, 2, 1], spin[:, :, 0, 2], spin[:, :, 1, 0]], axis=2)
    return jnp.concatenate([jac[:, :, :3, 3], dw], axis=2), values


def _twist_targets(positions: np.ndarray) -> np.ndarray:
    """(S, L, 6, 6): the change (dp, dw) of each link per unit of each twist (v, w): dp = v + w x p, dw = w."""
    out = np.zeros((*positions.shape[:2], 6, 6))
    out[..., :3, :3] = np.eye(3)
    for k in range(3):
        out[..., :3, 3 + k] = np.cross(np.eye(3)[k], positions)
    out[..., 3:, 3:] = np.eye(3)
    return out


def used_links(problem: Problem, task: Task) -> tuple[tuple[str, ...], bool]:
    """(the links the measurements and the task use, in the tree's order, the root left out;
    whether a measurement uses the root itself). The task's reference may be the root: its points
    are then positions in the root frame, which a motion below the root moves."""
    assert problem.tree is not None
    measured: set[str] = set()
    for m in problem.measurements:
        if getattr(m.ctx, "robot", None) is not None:
            measured |= set(m.links())
    wanted = (measured | {task.reference, *task.tips}) - {problem.tree.root}
    return tuple(link for link in problem.tree.links if link in wanted), problem.tree.root in measured


def _representable(jac: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(twists (6, r), parameter directions (P, r)): the twists whose link motions the parameters
    reproduce to REPRESENTABLE of their size, and the least-squares parameter change of each."""
    u, s, vt = np.linalg.svd(targets, full_matrices=False)
    whitened = vt.T / s  # twist per unit of target size
    solution = np.linalg.lstsq(jac, targets @ whitened, rcond=RCOND)[0]
    residual = targets @ whitened - jac @ solution
    _, rs, rvt = np.linalg.svd(residual, full_matrices=True)
    rs = np.concatenate([rs, np.zeros(6 - len(rs))])
    keep = rvt[rs <= REPRESENTABLE].T  # (6, r) in whitened coordinates
    return whitened @ keep, solution @ keep


def find_gauge(problem: Problem, theta: np.ndarray, task: Task, masks: list[np.ndarray] | None = None, free: np.ndarray | None = None) -> Gauge | None:
    """The gauge of the problem at theta for the task (module docstring), or None; `free` (p,)
    bool: the parameters the fit estimates (default all), the only ones a gauge motion moves."""
    robot, tree = problem.robot, problem.tree
    if robot is None or tree is None or robot.sensors is not None:
        return None
    links, root_measured = used_links(problem, task)
    if root_measured:
        return None  # a measurement sees the root itself: no motion below it goes unseen
    block = problem.layout.blocks["robot"]
    q = sample_configurations(tree, SAMPLES, seed=0)
    jac, poses = (np.asarray(a) for a in _pose_jacobian(jnp.asarray(theta[block]), jnp.asarray(q), robot, links))
    if free is not None:
        jac = jac * free[block]  # a held parameter does not move: no least-squares direction uses it
    targets = _twist_targets(poses[:, :, :3, 3])
    twists, robot_dirs = _representable(jac.reshape(-1, jac.shape[-1]), targets.reshape(-1, 6))
    if twists.shape[1] == 0:
        return None
    measured = problem.unweighted_jacobian(theta, masks)
    others = np.setdiff1d(np.arange(len(theta)), np.arange(len(theta))[block])
    directions = np.zeros((len(theta), twists.shape[1]))
    directions[block] = robot_dirs
    if len(others):
        directions[others] = -np.linalg.lstsq(measured[:, others], measured[:, block] @ robot_dirs, rcond=RCOND)[0]
    # unseen: |J g|^2 <= threshold |g|^2 over the span (generalized eigenproblem, whitened by G^T G)
    w, v = np.linalg.eigh(directions.T @ directions)
    independent = w > 1e-12 * w.max()
    basis = v[:, independent] / np.sqrt(w[independent])
    seen_by_data = measured @ directions @ basis
    lam, y = np.linalg.eigh(seen_by_data.T @ seen_by_data)
    unseen = basis @ y[:, lam <= DEFAULT_THRESHOLD]
    if unseen.shape[1] == 0:
        return None
    q_twist, r = np.linalg.qr(twists @ unseen)  # an orthonormal twist basis of the unseen motions; their directions follow (r: upper triangular, invertible)
    unseen_dirs = directions @ unseen @ np.linalg.inv(r)
    sensitivity = task.robot_jacobians(robot, theta[block])
    flat = sensitivity.reshape(-1, sensitivity.shape[-1])
    _, s, vt = np.linalg.svd(flat @ unseen_dirs[block], full_matrices=False)
    seen = vt[s > TASK_VISIBLE * max(float(np.linalg.norm(flat, 2)), 1e-300)].T  # orthonormal in twist coordinates
    if seen.shape[1] == 0:
        return None
    g = unseen_dirs @ seen
    compensated = tuple(problem.layout.names[i] for i in others if np.abs(g[i]).max() > 1e-9 * np.abs(g).max())
    return Gauge(tree.root, (q_twist @ seen).T, g, task.reference == tree.root, links, compensated)


# ---- fixing it -------------------------------------------------------------------------------------


def _pose_errors(target: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """(S, L, 6): (position, rotation vector) of target relative to poses, in the root frame."""
    spin = np.einsum("slij,slkj->slik", target[..., :3, :3], poses[..., :3, :3])
    rotation = np.stack([np.asarray(tf.matrix_to_rotvec(r)) for r in spin.reshape(-1, 3, 3)]).reshape(*spin.shape[:2], 3)
    return np.concatenate([target[..., :3, 3] - poses[..., :3, 3], rotation], axis=-1)


def realize(robot: RobotModel, theta: np.ndarray, links: tuple[str, ...], g: np.ndarray, free: np.ndarray) -> np.ndarray | None:
    """Robot parameters that place every link of `links` at g T(theta) (the rigid motion g of the
    root frame applied to them) at SAMPLES configurations, to POSE_TOLERANCE: Gauss-Newton with
    least-norm steps from theta over the `free` (P,) ones. None where it cannot (the motion is not
    representable)."""
    q = jnp.asarray(sample_configurations(robot.tree, SAMPLES, seed=0))
    target = g @ np.asarray(_pose_jacobian(jnp.asarray(theta), q, robot, links)[1])
    current = np.array(theta, dtype=float)
    for _ in range(ITERATIONS):
        jac, poses = (np.asarray(a) for a in _pose_jacobian(jnp.asarray(current), q, robot, links))
        error = _pose_errors(target, poses)
        if np.abs(error).max() <= POSE_TOLERANCE:
            return current
        current = current + np.linalg.lstsq((jac * free).reshape(-1, jac.shape[-1]), error.ravel(), rcond=RCOND)[0]
    return None


def _follow(problem: Problem, theta: np.ndarray, others: np.ndarray, masks: list[np.ndarray]) -> np.ndarray:
    """theta with the parameters `others` re-fitted (Gauss-Newton on the MAP objective, the rest held)."""
    from robocal.solver.map import rows_and_jacobian

    mp, theta = problem.map_problem, np.array(theta, dtype=float)
    sqrt_prec = np.asarray(mp.prior_sqrt_precision)
    for _ in range(ITERATIONS):
        blocks, jac = rows_and_jacobian(mp, theta)
        keep = np.concatenate([np.repeat(m, b.shape[1]) for b, m in zip(blocks, masks)])
        rows = np.concatenate([np.asarray(b).ravel() for b in blocks]) * keep
        residual = np.concatenate([rows, (theta[others] - np.asarray(mp.prior_mean)[others]) * sqrt_prec[others]])
        step = np.linalg.lstsq(np.vstack([jac[:, others] * keep[:, None], np.diag(sqrt_prec[others])]), -residual, rcond=None)[0]
        theta[others] += step
        if np.abs(step).max() < 1e-15:
            break
    return theta


def task_points(robot: RobotModel, theta: np.ndarray, q: np.ndarray, task: Task) -> np.ndarray:
    """(n, F, 3) the task's points: the tips relative to the reference link, in the root frame."""
    return task_vectors(batch_link_poses(robot, theta, q, (task.reference, *task.tips)), len(task.tips))


def fix_gauge(problem: Problem, theta: np.ndarray, task: Task, masks: list[np.ndarray], free: np.ndarray | None = None) -> GaugeFix | None:
    """The estimate moved along the problem's gauge (if it has one) so that the task's reference
    frame stays at nominal: the task points on the task's test set best aligned with the nominal
    robot's (module docstring). None without a gauge, or where the motion cannot be reproduced
    by the `free` parameters (default all; the others stay) to POSE_TOLERANCE (then the estimate
    stays as the solver left it)."""
    from robocal.solver.map import rows_and_jacobian

    free = np.ones(len(theta), bool) if free is None else np.asarray(free, bool)
    gauge = find_gauge(problem, theta, task, masks, free)
    if gauge is None or problem.robot is None:
        return None
    robot, block = problem.robot, problem.layout.blocks["robot"]
    q = uniform_cartesian_test_set(robot, robot.nominal, (task.reference, *task.tips), task.n, task.seed)
    g = align(task_points(robot, theta[block], q, task), task_points(robot, robot.nominal, q, task), gauge.twists, gauge.points)
    moved = realize(robot, theta[block], gauge.links, g, free[block])
    if moved is None:
        return None
    fixed = np.array(theta, dtype=float)
    fixed[block] = moved
    others = np.array([problem.layout.names.index(name) for name in gauge.compensated], dtype=int)
    if len(others):
        fixed = _follow(problem, fixed, others, masks)
    mp = problem.map_problem
    blocks = [rows_and_jacobian(mp, t)[0] for t in (theta, fixed)]
    before, after = (np.concatenate([np.asarray(b).ravel() for b in rows]) for rows in blocks)
    keep = np.concatenate([np.repeat(m, b.shape[1]) for b, m in zip(blocks[0], masks)]) > 0
    prior = [float(np.sum(((t - np.asarray(mp.prior_mean)) * np.asarray(mp.prior_sqrt_precision)) ** 2)) for t in (theta, fixed)]
    return GaugeFix(gauge, twist_of(g), np.array(theta, dtype=float), fixed, float(np.abs(after - before)[keep].max(initial=0.0)), (prior[0], prior[1]))
