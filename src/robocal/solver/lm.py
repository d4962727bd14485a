"""Levenberg-Marquardt as a solver with a typed state: `init` / `step` / `terminate`, for a
`lax.while_loop` (one problem) or a vectorized loop over many (`solver.map.solve_batch`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve


class LMState(NamedTuple):
    """One iterate of Levenberg-Marquardt over f free parameters and m residuals.

    phi (f,): the parameters (held ones do not move); r (m,), jac (m, f): residual and Jacobian at the last point
    linearized; stale (): True when they are not at phi (after an accepted step); lam, nu ():
    damping and its growth factor; steps (): iterations made; done (): converged."""

    phi: jax.Array
    r: jax.Array
    jac: jax.Array
    stale: jax.Array
    lam: jax.Array
    nu: jax.Array
    steps: jax.Array
    done: jax.Array


@dataclass(frozen=True)
class LevenbergMarquardt:
    """Levenberg-Marquardt on `residual(phi) -> (m,)`, with `init` / `step` / `terminate` for
    `lax.while_loop`.

    Marquardt's scaled damping (J^T J + lam diag(J^T J)), starting at lam = 1 (cautious first
    steps), with Nielsen's update of lam; each step is scaled down to at most `step_bound` (f,)
    per parameter. `linearize` gives the residual and its Jacobian (the solver's is the one the
    covariance uses, see `_flat_linearized`); it is recomputed only after an accepted step (at
    the top of the next iteration, so the compiled loop holds one copy of the Jacobian's code).
    The damped normal equations (symmetric positive definite: lam > 0, scale > 0) are solved by
    Cholesky (jax.scipy.linalg; a failed factorization gives a non-finite step, which is not
    accepted). Converged when a step changes no parameter by more than tol * (1 + |phi|) and is
    accepted, or no smaller step can lower the cost any more.
    """

    residual: Callable[[jax.Array], jax.Array]  # phi (f,) -> (m,)
    linearize: Callable[[jax.Array], tuple[jax.Array, jax.Array]]  # phi (f,) -> (residual (m,), Jacobian (m, f))
    step_bound: jax.Array
    free: jax.Array  # (f,) bool: the entries the convergence test looks at (a held one does not move)
    tol: float
    max_steps: int

    def init(self, phi0: jax.Array) -> LMState:
        # No linearization here: the first step makes it (stale), as after every accepted step.
        # A second call site would double the traced and compiled Jacobian code (tens of seconds
        # for a hand with contacts) for the same values. The residual's shape comes from
        # `linearize`, whose Jacobian the first step traces anyway: its jitted part is traced
        # once for both, where the shape of `residual` would trace the rows once more.
        r = jax.eval_shape(self.linearize, phi0)[0]
        zero = partial(jnp.zeros, dtype=r.dtype)
        return LMState(
            phi0, zero(r.shape), zero((r.shape[0], phi0.shape[0])), jnp.asarray(True), jnp.asarray(1.0), jnp.asarray(2.0), jnp.asarray(0), jnp.asarray(False)
        )

    def step(self, state: LMState) -> LMState:
        phi, lam, nu = state.phi, state.lam, state.nu
        r, jac = jax.lax.cond(state.stale, self.linearize, lambda _: (state.r, state.jac), phi)
        jtj, g = jac.T @ jac, jac.T @ r
        scale = jnp.maximum(jnp.diag(jtj), 1e-12 * jnp.maximum(jnp.max(jnp.diag(jtj)), 1.0))
        step = -cho_solve(cho_factor(jtj + lam * jnp.diag(scale)), g)
        step = step / jnp.maximum(1.0, jnp.max(jnp.abs(step) / self.step_bound))
        r_new = self.residual(phi + step)
        cost, cost_new = r @ r, r_new @ r_new
        predicted = -(2.0 * step @ g + step @ jtj @ step)
        rho = (cost - cost_new) / jnp.where(predicted > 0, predicted, 1.0)
        # Ties within rounding count as progress: near the optimum the cost cannot resolve the
        # last digits of theta (only sqrt(eps)), the Gauss-Newton step still can.
        accept = (cost_new <= cost * (1.0 + 1e-12)) & jnp.isfinite(cost_new)
        small_step = jnp.max(jnp.abs(step)) <= self.tol * (1.0 + jnp.max(jnp.where(self.free, jnp.abs(phi), 0.0)))
        return LMState(
            phi=jnp.where(accept, phi + step, phi),
            r=r,
            jac=jac,
            stale=accept,  # r and jac are at phi, not at the new phi: linearize there next time
            lam=jnp.where(accept, lam * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), lam * nu),
            nu=jnp.where(accept, 2.0, 2.0 * nu),
            steps=state.steps + 1,
            done=small_step & (accept | (lam > 1e12)),
        )

    def terminate(self, state: LMState) -> jax.Array:
        return state.done | (state.steps >= self.max_steps)
