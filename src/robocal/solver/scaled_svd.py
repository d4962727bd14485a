"""The data-glove seed's identification procedure, beside the MAP solver on the same problem:
iterated linear least squares through the SVD, with Schroer's parameter scaling.

At theta, the stacked whitened residuals r and their Jacobian J (prior rows appended when the
problem has priors, so the objective is the MAP one; without priors it is the seed's plain least
squares) give the Gauss-Newton step

    d = -H (J H)^+ r,       H = diag(h),   h_j = 1 mm / max_p ||c_j(p)||,

with c_j(p) the unweighted (SI) Jacobian column j over the rows of one measured point p (Schroer's
extremal scaling, `robocal.analysis.observability.schroer_scales`). The pseudo-inverse comes from
the SVD of J H, singular values below `rcond` times the largest dropped (a direction the data do
not determine is not moved). The scaling does not change the least-squares step where J has full
rank; it makes the SVD's cut-off and the convergence test meaningful across units (m, rad,
rad/count). The iteration stops when no parameter moves by more than `tolerance` in scaled units
(1 = a change that moves some point by 1 mm).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from robocal.analysis.observability import schroer_scales
from robocal.solver.map import MapProblem, Solution, laplace, rows_and_jacobian


def solve_scaled_svd(
    problem: MapProblem,
    theta0: np.ndarray,
    masks: list[np.ndarray],
    row_sigmas: np.ndarray,
    points: Sequence[np.ndarray],
    *,
    free: np.ndarray | None = None,
    max_iterations: int = 100,
    tolerance: float = 1e-9,
    rcond: float = 1e-12,
) -> Solution:
    """Least squares by scaled-SVD Gauss-Newton steps from theta0, over the rows in `masks`.

    `row_sigmas`: the sigma of every stacked row (to undo the whitening for the scaling);
    `points`: row indices (into the stacked rows) of each measured point; `free` (p,) bool: the
    parameters estimated (default all), the others held at theta0 (their columns left out of
    the steps).
    """
    started = time.perf_counter()
    rows_and_jacobian(problem, theta0)  # compile first, so `seconds` is warm time
    compile_seconds = time.perf_counter() - started
    started += compile_seconds
    theta = np.asarray(theta0, dtype=float).copy()
    keep = np.concatenate([np.repeat(np.asarray(m) > 0, b.shape[1]) for m, b in zip(masks, jax.eval_shape(problem.rows, jnp.asarray(theta), problem.data))])
    kept_index = -np.ones(len(keep), int)
    kept_index[keep] = np.arange(int(keep.sum()))
    kept_points = [kept_index[p] for p in points if keep[p].all()]
    prior = np.asarray(problem.prior_sqrt_precision)
    free = np.ones(len(theta), bool) if free is None else np.asarray(free, bool)
    converged, iteration = False, 0
    while iteration < max_iterations:
        iteration += 1
        blocks, jac = rows_and_jacobian(problem, theta)
        r = np.concatenate([b.ravel() for b in blocks])[keep]
        jac = jac[keep] * free  # a held parameter's column is zero: its step is zero
        h = schroer_scales(jac * row_sigmas[keep, None], kept_points)
        r = np.concatenate([r, (theta - problem.prior_mean) * prior])
        jac = np.vstack([jac, np.diag(prior)])
        u, s, vt = np.linalg.svd(jac * h, full_matrices=False)
        inverse = np.where(s > rcond * s[0], 1.0 / np.where(s > 0, s, 1.0), 0.0)
        scaled_step = -(vt.T * inverse) @ (u.T @ r)
        theta = theta + h * scaled_step
        if np.max(np.abs(scaled_step)) < tolerance:
            converged = True
            break
    covariance, cost = laplace(problem, theta, masks, np.flatnonzero(free))
    return Solution(theta, covariance, np.sqrt(np.diag(covariance)), iteration, converged, time.perf_counter() - started, compile_seconds, cost, masks)
