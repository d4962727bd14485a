"""The MAP solver on linear-Gaussian problems, whose posterior is known in closed form.

rows(theta) = (A theta - b) / sigma with prior N(mu, diag(s^2)): the posterior is Gaussian with
precision L = A^T A / sigma^2 + diag(1 / s^2) and mean L^-1 (A^T b / sigma^2 + diag(1 / s^2) mu).
"""

import jax.numpy as jnp
import numpy as np
import pytest

from robocal.solver import MapProblem, solve, solve_many

SIGMA = 0.1


def linear_rows(theta, data):
    return [((data[0]["A"] @ theta - data[0]["b"]) / SIGMA)[:, None]]


def make_problem(a: np.ndarray, b: np.ndarray, mu: np.ndarray, prior_sigma: np.ndarray) -> MapProblem:
    """`prior_sigma` entries of inf mean no prior."""
    return MapProblem(linear_rows, [{"A": jnp.asarray(a), "b": jnp.asarray(b)}], mu, 1.0 / prior_sigma)


def closed_form(a, b, mu, prior_sigma):
    precision = a.T @ a / SIGMA**2 + np.diag(1.0 / prior_sigma**2)
    covariance = np.linalg.inv(precision)
    return covariance @ (a.T @ b / SIGMA**2 + mu / prior_sigma**2), covariance


@pytest.fixture(scope="module")
def linear():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(12, 5))
    b = a @ rng.normal(size=5) + rng.normal(0.0, SIGMA, 12)
    mu = rng.normal(size=5)
    prior_sigma = np.array([0.5, 1.0, 2.0, 0.2, 1.5])
    return a, b, mu, prior_sigma


def test_posterior_mean_and_covariance(linear):
    a, b, mu, prior_sigma = linear
    mean, covariance = closed_form(*linear)
    solution = solve(make_problem(*linear), np.zeros(5))
    assert solution.converged
    np.testing.assert_allclose(solution.theta, mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(solution.covariance, covariance, rtol=0, atol=1e-9)
    np.testing.assert_allclose(solution.std, np.sqrt(np.diag(covariance)), rtol=0, atol=1e-9)
    r = (a @ mean - b) / SIGMA
    p = (mean - mu) / prior_sigma
    assert solution.cost == pytest.approx(r @ r + p @ p, rel=1e-9)


def test_batched_solves_match_the_closed_form_of_each_row_selection(linear):
    a, b, mu, prior_sigma = linear
    masks = np.array([np.ones(12), np.r_[np.ones(6), np.zeros(6)], np.r_[np.zeros(6), np.ones(6)], np.zeros(12)])
    theta, converged = solve_many(make_problem(*linear), np.zeros(5), [masks])
    assert converged.all()
    for mask, estimate in zip(masks, theta):
        keep = mask > 0
        mean, _ = closed_form(a[keep], b[keep], mu, prior_sigma)
        np.testing.assert_allclose(estimate, mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(theta[-1], mu, rtol=0, atol=1e-12)  # no rows: the prior mean


def test_free_mask_keeps_the_others_fixed(linear):
    """With theta_F fixed at theta0, the free block's posterior is that of b - A_F theta0_F."""
    a, b, mu, prior_sigma = linear
    free = np.array([True, False, True, True, False])
    theta0 = np.array([0.3, -0.7, 0.1, 0.2, 1.1])
    mean, covariance = closed_form(a[:, free], b - a[:, ~free] @ theta0[~free], mu[free], prior_sigma[free])
    solution = solve(make_problem(*linear), theta0, free=free)
    np.testing.assert_array_equal(solution.theta[~free], theta0[~free])
    np.testing.assert_allclose(solution.theta[free], mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(solution.covariance[np.ix_(free, free)], covariance, rtol=0, atol=1e-9)
    assert not solution.covariance[~free].any() and not solution.covariance[:, ~free].any()


def test_unconstrained_direction_has_infinite_std(linear):
    """Parameter 4 appears in no row and has no prior: infinite std; the others are unaffected."""
    a, b, mu, prior_sigma = linear
    a, prior_sigma = a.copy(), prior_sigma.copy()
    a[:, 4], prior_sigma[4] = 0.0, np.inf
    mean, covariance = closed_form(a[:, :4], b, mu[:4], prior_sigma[:4])
    theta0 = np.zeros(5)
    solution = solve(make_problem(a, b, mu, prior_sigma), theta0)
    assert np.isinf(solution.std[4])
    assert np.isfinite(solution.std[:4]).all()
    np.testing.assert_allclose(solution.theta[:4], mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(solution.covariance[:4, :4], covariance, rtol=0, atol=1e-9)
    assert solution.theta[4] == pytest.approx(theta0[4], abs=1e-12)


def test_linearization_with_huber_and_masks_is_the_central_differences_of_the_cost_residual():
    """The solver's (residual, Jacobian): the measurements' Jacobian traced once and the Huber
    weights chained on row by row, against central differences of the residual itself, with rows
    inside and outside the Huber threshold, a masked-out row and a held parameter (zero column)."""
    from robocal.solver.map import _linearization

    rng = np.random.default_rng(8)
    a = rng.normal(size=(2, 10, 4))

    def rows(theta, data):
        return [jnp.stack([jnp.sin(data[0][0] @ theta), jnp.cos(data[0][1] @ theta)], axis=1) * 3.0 - 1.0]

    problem = MapProblem(rows, [jnp.asarray(a)], rng.normal(size=4), np.array([0.5, 0.0, 2.0, 1.0]))
    theta, masks = jnp.asarray(rng.normal(size=4)), [jnp.asarray(np.r_[np.ones(9), 0.0])]
    norms = np.linalg.norm(np.asarray(rows(theta, problem.data)[0]), axis=1)
    assert (norms > 2.0).any() and (norms < 2.0).any()  # both sides of the Huber threshold 2
    free = jnp.asarray([True, True, True, False])
    linearize = _linearization(problem, theta, free, masks, 2.0)
    r, jac = linearize(theta)
    robust = np.stack([np.sqrt(2.0 * 2.0 * n - 2.0**2) / n if n > 2.0 else 1.0 for n in norms])[:, None] * np.asarray(rows(theta, problem.data)[0])
    expected = np.r_[(robust * np.asarray(masks[0])[:, None]).ravel(), (np.asarray(theta) - problem.prior_mean) * problem.prior_sqrt_precision]
    assert np.abs(np.asarray(r) - expected).max() < 1e-14  # the Huber residual written out: sqrt(2 c |r| - c^2) / |r| beyond c
    h = 1e-6
    central = np.stack([(linearize(theta.at[i].add(h))[0] - linearize(theta.at[i].add(-h))[0]) / (2 * h) for i in range(3)], 1)
    assert np.abs(np.asarray(jac)[:, :3] - central).max() < 1e-8  # central differences of smooth O(1) functions at h = 1e-6: ~1e-10
    assert np.all(np.asarray(jac)[:, 3] == 0.0)  # the held parameter
    assert np.all(np.asarray(jac)[18:20] == 0.0)  # the masked row
