"""The contact rows' own Jacobian (one reverse pass per row, every pair through one traced row
function) against central differences, on the shipped identifiability contacts of the
DLR-Hand II (6 finger pairs, 600 rows), and as the solver sees it through the custom JVP."""

import jax
import jax.numpy as jnp
import numpy as np

from robocal.problem import load_problem
from tests.conftest import REPO


def test_own_jacobian_is_the_central_differences_and_each_pair_sees_only_its_fingers():
    problem = load_problem(REPO / "examples/dlr_hand_ii/identifiability.yaml")
    m, data = problem.measurements[0], problem.map_problem.data[0]
    theta = jnp.asarray(problem.theta0 + np.random.default_rng(5).normal(0.0, 1e-3, len(problem.theta0)))
    rows, jac = jax.jit(m.own_jacobian)(theta, data)
    jac = np.asarray(jac)[:, 0]
    rows_at = jax.jit(m.rows)
    assert np.array_equal(np.asarray(rows), np.asarray(rows_at(theta, data)))
    own, h = m.own_parameters(), 1e-7
    central = np.stack([(np.asarray(rows_at(theta.at[i].add(h), data)) - np.asarray(rows_at(theta.at[i].add(-h), data)))[:, 0] / (2 * h) for i in own], axis=1)
    # a distance's curvature is ~1/radius (radii >= 14 mm): over h = 1e-7 central differences are exact to ~1e-6 of the slope
    assert np.abs(jac - central).max() < 1e-5 * np.abs(central).max()
    for k, pair in enumerate(m.pairs):
        moving = np.isin(own, m.ctx.robot_block.start + m.ctx.model.parameters_affecting(pair))
        block = jac[np.asarray(data.pair) == k]
        assert 0 < moving.sum() < len(own)  # two fingers of four
        assert np.all(block[:, ~moving] == 0.0)  # exactly: the other fingers do not move this pair's bodies
        assert np.abs(block[:, moving]).max() > 1.0  # metres per radian over a 0.1 mm sigma: far from zero
    tangent = jnp.asarray(np.random.default_rng(6).normal(size=len(theta)))
    _, pushed = jax.jit(lambda t, v: jax.jvp(lambda x: m.rows(x, data), (t,), (v,)))(theta, tangent)  # the custom JVP, as the solver's jacfwd uses it
    assert np.allclose(np.asarray(pushed)[:, 0], jac @ np.asarray(tangent)[own], rtol=0, atol=1e-12 * np.abs(jac).max())
