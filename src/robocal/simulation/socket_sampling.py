"""Configurations of an arm whose flange ball sits in a socket: samples of its self-motion manifold.

A ball fixed to the flange is seated in the sockets of a plate, one placement of the plate at a
time; the operator records many joint configurations per socket. Every configuration holds the
ball center exactly at its socket, so the data are samples of the *self-motion manifold*
{q : p_ball(q) = socket}: 3 position constraints leave a 4-D manifold for a 7-joint arm (3-D for
a 6-joint one). The recording is only informative when it spreads over that manifold, so
`sample_socket_configurations` draws configurations as the operator does, by moving the arm
around while the ball stays in place:

1. **Starts.** Damped least squares from random configurations (uniform within the joint limits)
   on the ball position *and* the approach axis pointing straight down, clipped to the limits.
2. **Walk.** From each feasible start a chain of random null-space steps: a Gaussian joint step
   projected onto the null space of the position Jacobian (it moves the arm but, to first order,
   not the ball), then Newton steps back onto the constraint. A step is kept only when it lands
   within the joint limits with the approach axis inside the cone (the ball can be seated: the
   flange points at most `cone` away from straight down), so every state of a chain is feasible.
   Each sample is the last state of its own chain, so the samples are independent given their
   starts.

A socket's position is exact to float rounding (< 1e-10 m) on the robot the configurations were
solved for; collisions of the arm with the plate or itself are not modelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel

DEFAULT_APPROACH = (0.0, 0.0, 1.0)  # the link's +z: the flange axis
DEFAULT_CONE = float(np.deg2rad(60.0))

POSITION_TOLERANCE = 1e-10  # m, largest accepted distance of the ball center from its socket
NEWTON_ITERATIONS = 10  # at most, back onto the constraint after a null-space step
CONVERGED = 1e-13  # m, Newton stops below this distance (the last step still improves on it)
START_ITERATIONS = 60  # damped least squares from a random configuration (more find few more starts)
START_DAMPING = 1e-4  # m^2, keeps far-from-solution steps short
NEWTON_DAMPING = 1e-12  # m^2, only guards against an exactly singular J J^T
APPROACH_WEIGHT = 0.1  # m per unit of approach-axis error in the start solve (the arm's scale)


@dataclass(frozen=True, eq=False)
class BallChain:
    """The actuated joints that move the ball link, their limits, and the approach axis.

    Configurations of the chain (`qc`, in `joints` order: the columns of a socket file) are
    scattered into the robot's full actuated vector with every other joint at 0, which cannot
    move the ball. Hashed by identity: it is the static argument of the jitted kernels below.
    """

    robot: RobotModel
    link: str
    joints: tuple[str, ...]
    columns: tuple[int, ...]  # index of each chain joint in robot.tree.actuated
    lower: np.ndarray
    upper: np.ndarray
    approach: tuple[float, float, float]  # unit vector in the link frame

    def full(self, qc):
        return jnp.zeros(len(self.robot.tree.actuated), dtype=qc.dtype).at[np.array(self.columns)].set(qc)

    def pose(self, theta, qc):
        return self.robot.link_poses(theta, self.full(qc), (self.link,))[0]

    def center(self, theta, qc):
        return self.pose(theta, qc)[:3, 3]

    def approach_cosine(self, theta, qc):
        """Cosine of the angle between the approach axis and straight down (-z of the root)."""
        return -(self.pose(theta, qc)[:3, :3] @ jnp.asarray(self.approach))[2]

    def feasible(self, theta, qc, center, cos_cone):
        """Ball at the socket, joints within their limits, approach inside the cone."""
        at_socket = jnp.linalg.norm(self.center(theta, qc) - center) < POSITION_TOLERANCE
        within = jnp.all((qc >= self.lower) & (qc <= self.upper))
        return at_socket & within & (self.approach_cosine(theta, qc) >= cos_cone)


@lru_cache(maxsize=16)
def ball_chain(robot: RobotModel, link: str, approach: Sequence[float] = DEFAULT_APPROACH) -> BallChain:
    """The chain of `link` (cached per robot object, so its kernels compile once per robot)."""
    tree = robot.tree
    joints = tree.actuated_for([link])
    if not joints:
        raise RobocalError(f"{tree.source or tree.name}: no actuated joint moves link '{link}'")
    bounds = np.array([tree.joint(name).limits or (-np.pi, np.pi) for name in joints], dtype=float)
    axis = np.asarray(approach, dtype=float)
    if axis.shape != (3,) or not np.linalg.norm(axis) > 0:
        raise RobocalError(f"approach axis {approach} must be a nonzero 3-vector in the frame of '{link}'")
    ax, ay, az = (float(a) for a in axis / np.linalg.norm(axis))
    return BallChain(robot, link, joints, tuple(tree.actuated.index(name) for name in joints), bounds[:, 0], bounds[:, 1], (ax, ay, az))


def _twice(f, x):
    """(f(x), f(x)) from one evaluation: a function and its Jacobian in one `jacfwd(has_aux=True)` pass."""
    y = f(x)
    return y, y


def position_jacobian(chain: BallChain, theta, qc):
    """(J (3, k), p (3,)) of the ball center, one forward pass."""
    return jax.jacfwd(partial(_twice, partial(chain.center, theta)), has_aux=True)(qc)


def _newton(chain: BallChain, theta, qc, center):
    """Minimum-norm Newton steps q <- q - J^T (J J^T)^-1 (p(q) - center): back onto the socket
    while moving the joints as little as possible. Stops when the ball is CONVERGED from the
    socket (about 5 steps from a 0.1 m drift: the convergence is quadratic) or after
    NEWTON_ITERATIONS."""

    def unconverged(state):
        i, _, error = state
        return (i < NEWTON_ITERATIONS) & (error > CONVERGED)

    def step(state):
        i, q, _ = state
        jac, p = position_jacobian(chain, theta, q)
        return i + 1, q - jac.T @ jnp.linalg.solve(jac @ jac.T + NEWTON_DAMPING * jnp.eye(3), p - center), jnp.linalg.norm(p - center)

    return jax.lax.while_loop(unconverged, step, (0, qc, jnp.inf))[1]


@partial(jax.jit, static_argnames=("chain",))
def _solve_starts(theta, q0, center, cos_cone, chain: BallChain):
    """Damped least squares from each row of q0 to the socket with the approach axis straight
    down (clipped to the limits), then Newton on the position alone: (q, feasible, position
    error, approach cosine) per start."""
    down = jnp.array([0.0, 0.0, -1.0])

    def residual(q):
        pose = chain.pose(theta, q)
        return jnp.concatenate([pose[:3, 3] - center, APPROACH_WEIGHT * (pose[:3, :3] @ jnp.asarray(chain.approach) - down)])

    def step(_, q):
        jac, r = jax.jacfwd(partial(_twice, residual), has_aux=True)(q)
        dq = jac.T @ jnp.linalg.solve(jac @ jac.T + START_DAMPING * jnp.eye(6), r)
        return jnp.clip(q - dq, chain.lower, chain.upper)

    def one(q):
        q = _newton(chain, theta, jax.lax.fori_loop(0, START_ITERATIONS, step, q), center)
        error = jnp.linalg.norm(chain.center(theta, q) - center)
        return q, chain.feasible(theta, q, center, cos_cone), error, chain.approach_cosine(theta, q)

    return jax.vmap(one)(q0)


@partial(jax.jit, static_argnames=("chain",))
def _walk(theta, q0, noise, center, cos_cone, chain: BallChain):
    """One chain of null-space steps per row of q0 (noise: (chains, steps, k) joint steps): the
    last state of each chain; a step that leaves the feasible set is not taken."""

    def step(q, dq):
        jac, _ = position_jacobian(chain, theta, q)
        null_step = dq - jac.T @ jnp.linalg.solve(jac @ jac.T + NEWTON_DAMPING * jnp.eye(3), jac @ dq)
        moved = _newton(chain, theta, q + null_step, center)
        ok = chain.feasible(theta, moved, center, cos_cone)
        return jnp.where(ok, moved, q), None

    return jax.vmap(lambda q, steps: jax.lax.scan(step, q, steps)[0])(q0, noise)


def _unreachable(chain: BallChain, center: np.ndarray, cone: float, error: np.ndarray, cosine: np.ndarray) -> RobocalError:
    """Why no start reached the socket: too far, or only with the flange pointing too far from down."""
    where = f"'{chain.link}' at ({', '.join(f'{c:.4f}' for c in center)}) m"
    reached = error < POSITION_TOLERANCE
    if not reached.any():
        why = f"none of {len(error)} random starts reached it within the joint limits (closest {error.min() * 1e3:.1f} mm away)"
    else:
        best = np.degrees(np.arccos(np.clip(cosine[reached].max(), -1.0, 1.0)))
        why = f"the ball reaches it only with the approach axis at least {best:.0f} deg from straight down (cone {np.degrees(cone):.0f} deg)"
    return RobocalError(f"cannot seat {where}: {why}")


def sample_socket_configurations(
    robot: RobotModel,
    theta: np.ndarray,
    link: str,
    center: Sequence[float],
    n: int,
    rng: np.random.Generator,
    *,
    approach: Sequence[float] = DEFAULT_APPROACH,
    cone: float = DEFAULT_CONE,
    step: float = 0.3,
    steps: int = 40,
    starts: int | None = None,
) -> np.ndarray:
    """(n, k) configurations of the k actuated joints moving `link` (URDF actuated order) that put
    the link's origin at `center` (root frame, m) to < 1e-10 m on the robot at `theta`, within the
    joint limits, with `approach` (a unit axis of the link frame) within `cone` (rad) of straight
    down, spread over the self-motion manifold by `steps` null-space steps of std `step` (rad)
    per joint from `starts` (default 2 n, at least 16) random starts (see the module docstring).
    """
    if n < 1:
        raise RobocalError(f"n = {n}: at least one configuration per socket")
    chain = ball_chain(robot, link, tuple(float(a) for a in approach))
    theta_j, center_j = jnp.asarray(theta, dtype=float), jnp.asarray(center, dtype=float)
    cos_cone = float(np.cos(cone))
    q0 = rng.uniform(chain.lower, chain.upper, size=(starts or max(2 * n, 16), len(chain.joints)))
    q, ok, error, cosine = (np.asarray(a) for a in _solve_starts(theta_j, jnp.asarray(q0), center_j, cos_cone, chain))
    if not ok.any():
        raise _unreachable(chain, np.asarray(center_j), cone, error, cosine)
    begin = q[ok][rng.integers(ok.sum(), size=n)]
    noise = rng.normal(0.0, step, size=(n, steps, len(chain.joints)))
    samples = _walk(theta_j, jnp.asarray(begin), jnp.asarray(noise), center_j, cos_cone, chain)
    return np.asarray(samples)


# ---- the experiment (`robocal simulate sockets`) ----------------------------------------------
