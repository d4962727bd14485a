"""Closest reachable fingertip: bounded inverse kinematics of the fingers of one robot hand.

For each finger f, with its actuated joints x_f in their limit box B_f and a target point t_f,

    minimize ||tip_f(x_f) - t_f||^2  over x_f in B_f,

which is exact inverse kinematics where t_f is reachable and the closest reachable point where
it is not. Fingers share no joints, so the problems are independent and are solved side by
side, stacked. Mimic joints need nothing special: a finger's tip is a function of its actuated
joints and moves the coupled ones with them.

The problem is not convex (a finger can reach towards a point from two sides), so the solver
starts from the previous solution (continuity while the operator moves) and from a coarse joint
grid, precomputed: in each block of the joint box (the lower or upper half of every joint's
range) the sample whose fingertip lies nearest the target, so that every basin of the distance
gets a start near its bottom. From each, a fixed number of projected, damped Gauss-Newton
(Levenberg-Marquardt) iterations with an active set: joints at a bound whose gradient points
out of the box are held there, the damped normal equations are solved for the others, the step
is clipped into the box, and kept only if it lowers that finger's objective (the damping grows
tenfold on a rejected step and shrinks threefold on a kept one). The best start wins per
finger; the previous solution wins ties, so the robot does not jump between two equally close
postures.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.tree import KinematicTree
from robocal.teleop.chains import TipChains

TIE = 1e-6  # m: the previous solution wins unless the grid start ends this much closer
PULL = 1e-5  # m/rad: weight of the pull towards mid-range (see `ClosestReach`)
DAMPING = 1e-6  # m^2 / rad^2: initial damping, about 1e-4 of a DLR finger's J^T J
MIN_DAMPING = 1e-12


def _solve_spd(a, b):
    """x with a x = b for a batch of small symmetric positive definite a (F, k, k): Cholesky
    unrolled over k, so it compiles to fused elementwise operations instead of a LAPACK call."""
    k = a.shape[-1]
    low = [[None] * k for _ in range(k)]
    for i in range(k):
        for j in range(i + 1):
            s = a[:, i, j] - sum(low[i][p] * low[j][p] for p in range(j))
            low[i][j] = jnp.sqrt(s) if i == j else s / low[j][j]
    y = []
    for i in range(k):
        y.append((b[:, i] - sum(low[i][p] * y[p] for p in range(i))) / low[i][i])
    x = [None] * k
    for i in reversed(range(k)):
        x[i] = (y[i] - sum(low[p][i] * x[p] for p in range(i + 1, k))) / low[i][i]
    return jnp.stack(x, axis=-1)


class ClosestReach:
    """Closest reachable point of the fingertips `tips` of a tree, each moved by its own joints.

    Every joint that moves a tip needs limits, and no joint may move two tips. `grid_step`
    (rad) is the largest spacing of the coarse seed grid along a joint; `iterations` the
    Gauss-Newton steps from each start. Joint values are per finger, x (F, k), as in
    `TipChains` (padded slots stay 0).

    The objective carries a faint pull towards the middle of the joint ranges,
    PULL^2 ||x - x_mid||^2. It decides between postures that reach a point equally well: where
    a target re-enters the workspace through the stretched finger, the finger can bend either
    way, and only the way with room to keep bending (towards mid-range) lets the joints follow
    the target continuously. Its cost to the fingertip is PULL^2 |x - x_mid| / sigma(J), well
    under a micrometre away from singular postures and at most PULL |x - x_mid| (10 um per
    rad) at them.
    """

    def __init__(self, tree: KinematicTree, tips: Sequence[str], grid_step: float = 0.15, iterations: int = 15):
        self.chains = chains = TipChains(tree, tips)
        self.iterations = iterations
        used = chains.columns[chains.columns >= 0]
        if len(set(used)) != len(used):
            raise RobocalError(f"{tree.source or tree.name}: some joints move more than one of {', '.join(tips)}")
        limits = {name: tree.joint(name).limits for name in tree.actuated}
        missing = [tree.actuated[c] for c in used if limits[tree.actuated[c]] is None]
        if missing:
            raise RobocalError(f"{tree.source or tree.name}: the fingertip mapping needs joint limits ({', '.join(missing)} has none)")
        bounds = {name: limit for name, limit in limits.items() if limit is not None}
        self.lower, self.upper = np.zeros(chains.columns.shape), np.zeros(chains.columns.shape)  # padded slots: [0, 0]
        for (f, i), c in np.ndenumerate(chains.columns):
            if c >= 0:
                self.lower[f, i], self.upper[f, i] = bounds[tree.actuated[c]]
        self.middle = (self.lower + self.upper) / 2
        self.points = jax.jit(chains.points)
        # The seed grid: per finger, the product of its joints' samples, cut into blocks by the
        # lower and upper half of each joint's range (the blocks overlap where a joint has an
        # odd number of samples). Each block gives the start nearest the target within it, so
        # the starts spread over the joint box; blocks are padded to one size by repeating
        # their first sample (a repeat never changes the nearest one).
        blocks = []
        for f, row in enumerate(chains.columns):
            axes = [np.linspace(lo, hi, max(2, int(np.ceil((hi - lo) / grid_step)) + 1)) for lo, hi, c in zip(self.lower[f], self.upper[f], row) if c >= 0]
            halves = [(a[: (len(a) + 1) // 2], a[len(a) // 2 :]) for a in axes]
            blocks.append([np.array(list(itertools.product(*parts))) for parts in itertools.product(*halves)])
        n_blocks, size = max(len(b) for b in blocks), max(len(g) for b in blocks for g in b)
        self.grid = np.zeros((len(blocks), n_blocks, size, chains.k))
        for f, finger in enumerate(blocks):
            for b in range(n_blocks):
                g = finger[b % len(finger)]
                self.grid[f, b, :, : g.shape[1]] = np.concatenate([g, np.repeat(g[:1], size - len(g), axis=0)])
        flat = self.grid.reshape(len(blocks), -1, chains.k)
        points = np.asarray(jax.jit(jax.vmap(chains.points, in_axes=1, out_axes=1))(flat))  # (F, B * S, 3)
        self.grid_points = np.moveaxis(points.reshape(len(blocks), n_blocks, size, 3), 3, 2)  # (F, B, 3, S)

    def _residual_and_jacobian(self, x, targets):
        basis = jnp.broadcast_to(jnp.eye(self.chains.k)[:, None, :], (self.chains.k, *x.shape))
        tips, jac = jax.vmap(lambda v: jax.jvp(self.chains.points, (x,), (v,)), out_axes=(None, -1))(basis)
        return tips - targets, jac  # (F, 3), (F, 3, k)

    def grid_starts(self, targets):
        """Per finger and block, the grid sample whose fingertip is nearest the target (F, B, k)."""
        p = self.grid_points
        d = sum((p[:, :, i] - targets[:, None, i : i + 1]) ** 2 for i in range(3))  # (F, B, S)
        nearest = jnp.min(d, axis=2, keepdims=True)
        # The first index attaining the minimum, by two plain reductions (XLA's argmin is a
        # scalar loop on CPU, several times slower).
        index = jnp.min(jnp.where(d <= nearest, jnp.arange(d.shape[2]), d.shape[2]), axis=2)
        return jnp.take_along_axis(jnp.asarray(self.grid), index[:, :, None, None], axis=2)[:, :, 0]

    def _descend(self, x, targets):
        """`iterations` projected damped Gauss-Newton steps from x; returns (x, residual (F, 3),
        cost (F,))."""
        lower, upper, middle = jnp.asarray(self.lower), jnp.asarray(self.upper), jnp.asarray(self.middle)

        def objective(x, r):
            return jnp.sum(r**2, axis=1) + PULL**2 * jnp.sum((x - middle) ** 2, axis=1)

        r, jac = self._residual_and_jacobian(x, targets)
        cost = objective(x, r)
        damping = jnp.full(len(self.chains.tips), DAMPING)
        eye = jnp.eye(self.chains.k)

        def step(_, state):
            x, r, jac, cost, damping = state
            gradient = jnp.sum(jac * r[:, :, None], axis=1) + PULL**2 * (x - middle)  # (F, k)
            free = ~(((x <= lower) & (gradient > 0)) | ((x >= upper) & (gradient < 0)) | (lower == upper))
            jf = jac * free[:, None, :]
            normal = jnp.sum(jf[:, :, :, None] * jf[:, :, None, :], axis=1) + eye * jnp.where(free, PULL**2 + damping[:, None], 1.0)[:, None, :]
            trial = jnp.clip(x - _solve_spd(normal, jnp.where(free, gradient, 0.0)), lower, upper)
            r_trial, jac_trial = self._residual_and_jacobian(trial, targets)
            cost_trial = objective(trial, r_trial)
            keep = cost_trial < cost
            return (
                jnp.where(keep[:, None], trial, x),
                jnp.where(keep[:, None], r_trial, r),
                jnp.where(keep[:, None, None], jac_trial, jac),
                jnp.where(keep, cost_trial, cost),
                jnp.where(keep, jnp.maximum(damping / 3.0, MIN_DAMPING), damping * 10.0),
            )

        x, r, _, cost, _ = jax.lax.fori_loop(0, self.iterations, step, (x, r, jac, cost, damping))
        return x, r, cost

    def solve(self, targets, previous):
        """Per-finger joint values (F, k) whose fingertips are closest to `targets` (F, 3),
        within the limits, and those fingertips (F, 3). `previous` (F, k): the last solution,
        the warm start. Traceable: call it inside `jax.jit`."""
        seeds = self.grid_starts(targets)
        starts = jnp.concatenate([jnp.clip(previous, self.lower, self.upper)[None], jnp.moveaxis(seeds, 1, 0)])
        x, r, cost = jax.vmap(self._descend, in_axes=(0, None))(starts, targets)  # (1 + B, F, ...)
        score = jnp.sqrt(cost)  # (1 + B, F): m, like the distance
        best = jnp.min(score[1:], axis=0)
        use = jnp.where(
            best < score[0] - TIE, 1 + jnp.min(jnp.where(score[1:] <= best, jnp.arange(seeds.shape[1])[:, None], seeds.shape[1]), axis=0), 0
        )  # (F,)

        def pick(a):
            return jnp.take_along_axis(a, use[None, :, None], axis=0)[0]

        return pick(x), pick(r) + targets
