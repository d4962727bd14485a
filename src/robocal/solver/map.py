"""Maximum-a-posteriori least squares: Levenberg-Marquardt on whitened residuals stacked with
the Gaussian prior, then the Laplace posterior covariance.

cost(theta) = sum_rows ||r_i(theta)||^2 (robust optional) + sum_j ((theta_j - mu_j) / sigma_j)^2,
where each measurement row r_i is already divided by its sigma. At the optimum the posterior
covariance is (J^T W J + P)^-1 with P = diag(1 / sigma_j^2); J^T W J is evaluated with the
rows that were kept (not rejected), without robust down-weighting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from robocal.solver.lm import LevenbergMarquardt, Linearize, LMState
from robocal.solver.robust import huber_row_scale

# rows(theta, data) -> list of (n_i, k_i) whitened residual blocks, one per measurement.
RowsFn = Callable[[jnp.ndarray, Sequence], list]


@dataclass(frozen=True)
class MapProblem:
    rows: RowsFn
    data: Sequence  # one pytree of arrays per measurement, passed to `rows`
    prior_mean: np.ndarray
    prior_sqrt_precision: np.ndarray  # 1 / sigma, 0 where no prior


@dataclass(frozen=True)
class Rejection:
    block: int
    row: int
    normalized_error: float
    threshold: float | None
    round: int
    reason: str | None = None  # set where the rule was not a whitened-error threshold


@dataclass
class Solution:
    theta: np.ndarray
    covariance: np.ndarray
    std: np.ndarray
    iterations: int
    converged: bool
    seconds: float
    compile_seconds: float
    cost: float
    masks: list[np.ndarray]
    rejections: list[Rejection] = field(default_factory=list)


def _robust(rows, huber):
    """(n, k) whitened rows, each rescaled by the Huber weight of its norm (as they are without `huber`)."""
    return rows if huber is None else rows * huber_row_scale(rows, huber)[:, None]


@partial(jax.jit, static_argnames=("huber",))
def _assemble(theta, blocks, jac, masks, mean, sqrt_prec, free, huber):
    """(residual (m,), Jacobian (m, p)) of the cost at theta from the measurements' whitened row
    blocks (n_i, k_i) and their stacked Jacobian (sum n_i k_i, p) there: the robust weights
    chained on row by row, the masks applied, the prior's rows appended; a held entry's column
    (`free` false) is zero."""
    values, jacobians, start = [], [], 0
    for rows, mask in zip(blocks, masks):
        n, k = rows.shape
        block_jac = jac[start : start + n * k].reshape(n, k, -1)
        start += n * k
        if huber is not None:
            weights = jax.vmap(jax.jacfwd(lambda row: _robust(row[None], huber)[0]))(rows)  # (n, k, k)
            block_jac = jnp.einsum("nij,njp->nip", weights, block_jac)
        values.append((_robust(rows, huber) * mask[:, None]).ravel())
        jacobians.append((block_jac * mask[:, None, None]).reshape(n * k, -1))
    values.append((theta - mean) * sqrt_prec)
    jacobians.append(jnp.diag(jnp.asarray(sqrt_prec, dtype=jac.dtype)))
    return jnp.concatenate(values), jnp.concatenate(jacobians) * free


def _linearization(problem: MapProblem, theta0, free, masks, huber) -> Linearize:
    """phi (p,) -> the cost's (residual, Jacobian) at theta = phi on `free`, theta0 elsewhere.
    The measurements' part is `_rows_and_jacobian`, the covariance's: called from the host, one
    compiled Jacobian serves the solver and the covariance after it (for a hand with contacts,
    seconds of every run); traced inside a jit (a vectorized solve), it is part of that jit."""

    def linearize(phi):
        theta = jnp.where(free, phi, theta0)
        blocks, jac = _rows_and_jacobian(theta, problem.data, problem.rows)
        return _assemble(theta, blocks, jac, masks, problem.prior_mean, problem.prior_sqrt_precision, free, huber)

    return linearize


def _solver(free, sqrt_prec, max_steps: int, tol: float) -> LevenbergMarquardt:
    """Levenberg-Marquardt over all of theta (p,), the entries outside `free` (p,) bool held:
    their Jacobian column is zero, so their damped step is exactly zero, and one compiled solver
    serves every choice of free parameters (the baseline's frames and the full fit alike). Trust
    region: a step moves no parameter by more than one prior sigma (1 m or 1 rad without a
    prior), so a strongly nonlinear model (a contact that flips side) is not jumped across."""
    sqrt_prec = jnp.asarray(sqrt_prec, dtype=float)
    has_prior = sqrt_prec > 0
    return LevenbergMarquardt(jnp.where(has_prior, 1.0 / jnp.where(has_prior, sqrt_prec, 1.0), 1.0), jnp.asarray(free), tol, max_steps)


def _fit(problem: MapProblem, theta0: np.ndarray, free, masks: list[np.ndarray], huber: float | None, max_steps: int, tol: float):
    """(theta (p,), steps, converged): Levenberg-Marquardt from theta0 over the `free` entries,
    driven from the host (`LevenbergMarquardt.run`)."""
    start = jnp.asarray(theta0, dtype=float)
    linearize = _linearization(problem, start, free, [jnp.asarray(m, dtype=float) for m in masks], huber)
    state = _solver(free, problem.prior_sqrt_precision, max_steps, tol).run(start, linearize)
    return np.asarray(jnp.where(free, state.phi, start)), int(state.steps), bool(state.done)


def fit(
    problem: MapProblem,
    theta0: np.ndarray,
    *,
    free: np.ndarray | None = None,
    masks: list[np.ndarray] | None = None,
    max_iterations: int = 1000,
    tolerance: float = 1e-10,
    huber: float | None = None,
) -> np.ndarray:
    """The MAP estimate (p,) alone: `solve` without outlier rejection and without the covariance
    (e.g. a calibration's baseline, the frames fitted to the nominal robot). It shares `solve`'s
    traced and compiled solver for the same problem, whatever `free` is."""
    if masks is None:
        masks = _all_rows(problem, theta0)
    huber = None if huber is None else float(huber)
    return _fit(problem, theta0, _free_mask(free, len(theta0)), [np.asarray(m, dtype=float) for m in masks], huber, int(max_iterations), float(tolerance))[0]


def solve_many(
    problem: MapProblem, theta0: np.ndarray, masks: list[np.ndarray], *, free: np.ndarray | None = None, max_iterations: int = 1000, tolerance: float = 1e-10
) -> tuple[np.ndarray, np.ndarray]:
    """MAP estimates for a batch of row selections of one problem (e.g. one calibration per
    design and set size): masks[k] (B, n_k) selects the rows of measurement k for each of the B
    solves. Returns (B, p) estimates and a (B,) converged flag; plain least squares (no robust
    loss, no rejection), each started from theta0. One compiled solver serves every selection;
    the solves run one after the other, so a slow one (hundreds of steps) does not hold up the
    others as it would in a vectorized batch. free: (p,) boolean, as in `solve`."""
    free_mask = _free_mask(free, len(theta0))
    fits = [_fit(problem, theta0, free_mask, [m[b] for m in masks], None, int(max_iterations), float(tolerance)) for b in range(len(masks[0]))]
    return np.array([theta for theta, _, _ in fits]), np.array([converged for _, _, converged in fits])


@partial(jax.jit, static_argnames=("problem_rows", "huber", "max_steps", "tol"))
def _lm_batch_init(theta0, free, data, mean, sqrt_prec, masks, problem_rows, huber, max_steps, tol) -> LMState:
    """The initial LMState of B members (a leading axis B on theta0, every data leaf and masks)."""

    def one(theta, data, masks):
        linearize = _linearization(MapProblem(problem_rows, data, mean, sqrt_prec), theta, free, masks, huber)
        return _solver(free, sqrt_prec, max_steps, tol).init(theta, *linearize(theta))

    return jax.vmap(one)(theta0, data, masks)


@partial(jax.jit, static_argnames=("problem_rows", "huber", "max_steps", "tol"))
def _lm_batch(state, quota, theta0, free, data, mean, sqrt_prec, masks, problem_rows, huber, max_steps, tol):
    """`_fit` for B members at once: the LMStates `state` (leading axis B, as on theta0, every
    data leaf and masks) advanced by vectorized steps, a member that has terminated left as it
    is, until at most `quota` members are still running. Returns (state, theta (B, p), running (B,)).

    A member's sequence of states is the one `_fit` makes; the loop stops early (quota) so that
    the few members that need many more steps (a slipped joint, far from its prior) go on in a
    smaller batch instead of holding up all of them."""

    def running(s: LMState) -> jax.Array:
        return ~(s.done | (s.steps >= max_steps))

    def step(s: LMState) -> LMState:
        def one(s, theta, data, masks):
            linearize = _linearization(MapProblem(problem_rows, data, mean, sqrt_prec), theta, free, masks, huber)
            return _solver(free, sqrt_prec, max_steps, tol).step(s, linearize)

        new, keep = jax.vmap(one)(s, theta0, data, masks), running(s)
        return jax.tree.map(lambda a, b: jnp.where(keep.reshape(keep.shape + (1,) * (a.ndim - 1)), a, b), new, s)

    state = jax.lax.while_loop(lambda s: jnp.sum(running(s)) > quota, step, state)
    return state, jax.vmap(lambda phi, theta: jnp.where(free, phi, theta))(state.phi, theta0), running(state)


def _take(tree, index: np.ndarray):
    """The members `index` of a pytree of (B, ...) arrays, as JAX arrays."""
    return jax.tree.map(lambda leaf: jnp.asarray(leaf[index]), tree)


def _fit_batch(theta0s: np.ndarray, free, datas: Sequence[Sequence], shared: tuple, masks: Sequence[list[np.ndarray]], statics: dict):
    """(theta (B, p), steps (B,), converged (B,), compile seconds): `_fit` of each member, in
    vectorized rounds: all members until at most 1/16 of them run, then those in a batch of
    their own, and so on. Each round's batch is padded to a power of two (repeating its last
    member), so other batch sizes reuse the compiled rounds."""
    size = len(datas)
    data = jax.tree.map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *datas)
    mask = [np.stack([m[k] for m in masks]) for k in range(len(masks[0]))]
    theta, steps, done, compile_seconds = np.array(theta0s), np.zeros(size, int), np.zeros(size, bool), 0.0
    state, active = None, np.arange(size)
    while len(active):
        pick = np.concatenate([active, np.repeat(active[-1:], (1 << max(len(active) - 1, 0).bit_length()) - len(active))])
        args = (jnp.asarray(theta0s[pick]), free, _take(data, pick), *shared, [jnp.asarray(m[pick]) for m in mask])
        here = _lm_batch_init(*args, **statics) if state is None else _take(state, pick)
        quota = jnp.asarray(len(pick) // 16 if len(pick) > 16 else 0)
        started = time.perf_counter()
        compiled = _lm_batch.lower(here, quota, *args, **statics).compile()
        compile_seconds += time.perf_counter() - started
        out, value, running = compiled(here, quota, *args)
        out = jax.tree.map(np.asarray, out)
        if state is None:
            state = jax.tree.map(lambda leaf: np.repeat(leaf[:1], size, axis=0), out)
        n = len(active)
        for full, part in zip(jax.tree.leaves(state), jax.tree.leaves(out)):
            full[active] = part[:n]
        theta[active], steps[active], done[active] = np.asarray(value)[:n], out.steps[:n], out.done[:n]
        active = active[np.asarray(running)[:n]]
    return theta, steps, done, compile_seconds


def solve_batch(
    problem: MapProblem,
    datas: Sequence[Sequence],
    theta0s: np.ndarray,
    *,
    masks: Sequence[list[np.ndarray]] | None = None,
    free: np.ndarray | None = None,
    max_iterations: int = 1000,
    tolerance: float = 1e-10,
    huber: float | None = None,
    outlier_threshold: float | None = None,
    max_rejection_rounds: int = 5,
) -> list[Solution]:
    """`solve` for B problems of one structure, their Levenberg-Marquardt fits vectorized
    (`jax.vmap` over the members' steps): the b-th Solution is `solve(replace(problem,
    data=datas[b]), theta0s[b], ...)` to rounding, with the same iterations.

    problem: the template; its `rows`, prior_mean (p,) and prior_sqrt_precision (p,) serve every
    member, its `data` is not used. datas: B sequences like `problem.data` (one pytree per
    measurement), leaf for leaf of one shape across members. theta0s: (B, p). masks: B lists of
    (n_k,) row masks (default all rows). free: (p,) boolean, as in `solve`.

    The vectorized steps run until at most 1/16 of the members are still running; those go on in
    a batch of their own (`_fit_batch`), so that a member far from its prior does not hold up
    the others. Rejection rounds (with `outlier_threshold`) and the Laplace covariance follow per
    member, with one compiled solver shared by all. `seconds` and `compile_seconds` of each
    Solution are the batch's divided by B, plus the member's own rounds and covariance."""
    size = len(datas)
    theta0s = np.asarray(theta0s, dtype=float).reshape(size, -1)
    if masks is None:
        masks = [_all_rows(replace(problem, data=datas[0]), theta0s[0])] * size
    masks = [[np.asarray(m, dtype=float) for m in ms] for ms in masks]
    free_mask = _free_mask(free, theta0s.shape[1])
    huber = None if huber is None else float(huber)
    statics = dict(problem_rows=problem.rows, huber=huber, max_steps=int(max_iterations), tol=float(tolerance))
    shared = (problem.prior_mean, problem.prior_sqrt_precision)
    t0 = time.perf_counter()
    first = _fit_batch(theta0s, free_mask, datas, shared, masks, statics)
    compile_seconds, batch_seconds = first[3], time.perf_counter() - t0 - first[3]

    def fitter(b: int, member: MapProblem) -> Callable:
        calls = iter(range(max_rejection_rounds + 2))

        def fit(theta: np.ndarray, masks: list[np.ndarray]):
            if next(calls) == 0:  # the batch's fit
                return first[0][b], first[1][b], first[2][b]
            return _fit(member, theta, free_mask, masks, huber, int(max_iterations), float(tolerance))

        return fit

    out = []
    for b in range(size):
        started = time.perf_counter()
        member = MapProblem(problem.rows, datas[b], *shared)
        theta, steps, converged, kept, rejections = _fit_rejecting(fitter(b, member), member, theta0s[b], masks[b], outlier_threshold, max_rejection_rounds)
        covariance, cost = laplace(member, theta, kept, np.flatnonzero(free_mask))
        seconds = batch_seconds / size + time.perf_counter() - started
        out.append(Solution(theta, covariance, np.sqrt(np.diag(covariance)), steps, converged, seconds, compile_seconds / size, cost, kept, rejections))
    return out


@partial(jax.jit, static_argnames=("problem_rows",))
def _rows_and_jacobian(theta, data, problem_rows):
    """Whitened measurement rows per block and the Jacobian of all of them stacked (no prior)."""

    def stacked(th):
        blocks = problem_rows(th, data)
        return jnp.concatenate([b.ravel() for b in blocks]), blocks

    jac, blocks = jax.jacfwd(stacked, has_aux=True)(theta)
    return blocks, jac


def rows_and_jacobian(problem: MapProblem, theta) -> tuple[list[np.ndarray], np.ndarray]:
    blocks, jac = _rows_and_jacobian(jnp.asarray(theta), problem.data, problem.rows)
    return [np.asarray(b) for b in blocks], np.asarray(jac)


def posterior_covariance(jacobian: np.ndarray, sqrt_precision: np.ndarray) -> np.ndarray:
    """(J^T J + P)^-1; directions neither the data nor the prior constrain get infinite variance."""
    info = jacobian.T @ jacobian + np.diag(sqrt_precision**2)
    w, v = np.linalg.eigh(info)
    tiny = w.max(initial=0.0) * 1e-15 if w.size else 0.0
    inv = np.where(w > tiny, 1.0 / np.where(w > tiny, w, 1.0), np.inf)
    cov = (v * np.where(np.isfinite(inv), inv, 0.0)) @ v.T
    unconstrained = ~np.isfinite(inv)
    if unconstrained.any():
        spread = np.abs(v[:, unconstrained]).max(axis=1) > 1e-8
        cov[np.ix_(spread, spread)] = np.inf
    return cov


def solve(
    problem: MapProblem,
    theta0: np.ndarray,
    *,
    max_iterations: int = 1000,
    tolerance: float = 1e-10,
    huber: float | None = None,
    outlier_threshold: float | None = None,
    max_rejection_rounds: int = 5,
    free: np.ndarray | None = None,
    masks: list[np.ndarray] | None = None,
) -> Solution:
    """MAP estimate; with `outlier_threshold`, rows whose whitened error norm exceeds it are
    rejected and the problem is solved again, up to `max_rejection_rounds` times.

    `free` (boolean mask) restricts the estimate to some parameters, the others staying at
    `theta0`; the covariance is then that of the free parameters (zero for the others).
    `masks` (one 0/1 vector per measurement) leaves rows out from the start, e.g. the held-out
    fold of a cross-validation; the compiled solver is the same for every mask.
    """
    masks = [np.asarray(m, dtype=float) for m in (_all_rows(problem, theta0) if masks is None else masks)]
    theta = np.asarray(theta0, dtype=float)
    free_mask = _free_mask(free, len(theta))
    huber = None if huber is None else float(huber)

    def fit(theta: np.ndarray, masks: list[np.ndarray], steps: int = int(max_iterations)):
        return _fit(problem, theta, free_mask, masks, huber, steps, float(tolerance))

    t0 = time.perf_counter()
    fit(theta, masks, 1)  # compiles the Jacobian (the covariance's too) and the solver's steps: `seconds` is warm time
    compile_seconds = time.perf_counter() - t0

    theta, steps, converged, masks, rejections = _fit_rejecting(fit, problem, theta, masks, outlier_threshold, max_rejection_rounds)
    covariance, cost = laplace(problem, theta, masks, np.flatnonzero(free_mask))
    return Solution(
        theta=theta,
        covariance=covariance,
        std=np.sqrt(np.diag(covariance)),
        iterations=steps,
        converged=converged,
        seconds=time.perf_counter() - t0 - compile_seconds,
        compile_seconds=compile_seconds,
        cost=cost,
        masks=masks,
        rejections=rejections,
    )


def _free_mask(free: np.ndarray | None, p: int) -> jax.Array:
    """(p,) bool: the free parameters (all of them by default)."""
    return jnp.asarray(np.ones(p, bool) if free is None else np.asarray(free, bool).reshape(p))


def _all_rows(problem: MapProblem, theta0: np.ndarray) -> list[np.ndarray]:
    """Masks (n_k,) keeping every row of each measurement."""
    return [np.ones(shape.shape[0]) for shape in jax.eval_shape(problem.rows, jnp.asarray(theta0, dtype=float), problem.data)]


def _fit_rejecting(fit: Callable, problem: MapProblem, theta: np.ndarray, masks: list[np.ndarray], threshold: float | None, max_rounds: int):
    """(theta, steps, converged, masks, rejections): `fit(theta, masks)` (the compiled
    solver), then, with a `threshold`, rounds of rejecting rows whose whitened error norm exceeds
    it and fitting again, up to `max_rounds` times. The caller's zero rows stay out whatever the
    rounds say.

    A gross outlier drags the least-squares fit and pushes clean rows over the threshold too, so
    each round rejects only the clearly worst rows (above half the largest error), and every row
    is judged again at the new estimate: a clean row comes back once the fit is."""
    held_out = [m == 0 for m in masks]
    first_rejected: dict[tuple[int, int], int] = {}
    errors: list[np.ndarray] = []
    total_steps = 0
    for round_ in range(max_rounds + 1):
        value, steps, ok = fit(theta, masks)
        theta, total_steps, converged = np.asarray(value), total_steps + int(steps), bool(ok)
        if threshold is None:
            break
        errors = [np.linalg.norm(b, axis=-1) for b in rows_and_jacobian(problem, theta)[0]]
        cut = max(threshold, 0.5 * max(float(e.max()) for e in errors))
        new = [np.where(out, 0.0, np.where(e <= threshold, 1.0, np.where(e > cut, 0.0, m))) for e, m, out in zip(errors, masks, held_out)]
        if all(np.array_equal(a, b) for a, b in zip(new, masks)) or round_ == max_rounds:
            break
        for b, (old, m) in enumerate(zip(masks, new)):
            for i in np.flatnonzero((old > 0) & (m == 0)):
                first_rejected.setdefault((b, int(i)), round_ + 1)
        masks = new
    rejections = [Rejection(b, i, float(errors[b][i]), threshold, r) for (b, i), r in sorted(first_rejected.items()) if masks[b][i] == 0]
    return theta, total_steps, converged, masks, rejections


def laplace(problem: MapProblem, theta: np.ndarray, masks: list[np.ndarray], free: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """(posterior covariance, cost) at theta, the rows outside `masks` left out: the Gauss-Newton
    (Laplace) approximation about an estimate, wherever the estimate came from. `free`: indices of
    the parameters that were estimated (the others get zero covariance)."""
    blocks, jac = rows_and_jacobian(problem, theta)
    row_mask = np.concatenate([np.repeat(m, b.shape[1]) for b, m in zip(blocks, masks)])
    idx = np.arange(len(theta)) if free is None else free
    cov = np.zeros((len(theta), len(theta)))
    cov[np.ix_(idx, idx)] = posterior_covariance((jac * row_mask[:, None])[:, idx], np.asarray(problem.prior_sqrt_precision)[idx])
    kept = np.concatenate([(b * m[:, None]).ravel() for b, m in zip(blocks, masks)])
    prior = (theta - problem.prior_mean) * problem.prior_sqrt_precision
    return cov, float(kept @ kept + prior @ prior)
