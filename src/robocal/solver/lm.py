"""Levenberg-Marquardt as a solver with a typed state: `init` / `propose` / `update` /
`terminate`, driven inside one compiled `lax.while_loop` by `step` (a vectorized loop over many
problems: `solver.map.solve_batch`) or from the host by `run` (one problem)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve

Linearize = Callable[[jax.Array], tuple[jax.Array, jax.Array]]  # phi (f,) -> (residual (m,), Jacobian (m, f))


class LMState(NamedTuple):
    """One iterate of Levenberg-Marquardt over f free parameters and m residuals.

    phi (f,): the parameters (held ones do not move); r (m,), jac (m, f): residual and Jacobian
    at phi; lam, nu (): damping and its growth factor; steps (): iterations made; done ():
    converged."""

    phi: jax.Array
    r: jax.Array
    jac: jax.Array
    lam: jax.Array
    nu: jax.Array
    steps: jax.Array
    done: jax.Array


class Proposal(NamedTuple):
    """A damped step from an LMState: step (f,), the point phi + step (f,) it leads to, and the
    cost decrease () the linearization predicts for it."""

    step: jax.Array
    point: jax.Array
    predicted: jax.Array


@partial(jax.tree_util.register_dataclass, data_fields=["step_bound", "free", "tol", "max_steps"], meta_fields=[])
@dataclass(frozen=True)
class LevenbergMarquardt:
    """Levenberg-Marquardt on a residual given with its Jacobian by a `Linearize` function.

    Marquardt's scaled damping (J^T J + lam diag(J^T J)), starting at lam = 1 (cautious first
    steps), with Nielsen's update of lam; each step is scaled down to at most `step_bound` (f,)
    per parameter. Every trial point is linearized (`update` takes the residual and Jacobian
    there): an accepted step needs that Jacobian next, a rejected one wastes it, and the residual
    never needs code of its own, so the Jacobian's compiled code is the only large one (for `run`,
    the one the covariance uses: `solver.map`). The damped normal equations (symmetric positive
    definite: lam > 0, scale > 0) are solved by Cholesky (jax.scipy.linalg; a failed
    factorization gives a non-finite step, which is not accepted). Converged when a step changes
    no parameter by more than tol * (1 + |phi|) and is accepted, or no smaller step can lower the
    cost any more.
    """

    step_bound: jax.Array  # (f,)
    free: jax.Array  # (f,) bool: the entries the convergence test looks at (a held one does not move)
    tol: float | jax.Array  # data, like the others: other settings reuse the compiled steps
    max_steps: int | jax.Array

    def init(self, phi0: jax.Array, r0: jax.Array, jac0: jax.Array) -> LMState:
        """The state at phi0, given the residual r0 (m,) and Jacobian jac0 (m, f) there."""
        return LMState(phi0, r0, jac0, jnp.asarray(1.0, r0.dtype), jnp.asarray(2.0, r0.dtype), jnp.asarray(0), jnp.asarray(False))

    def propose(self, state: LMState) -> Proposal:
        jtj, g = state.jac.T @ state.jac, state.jac.T @ state.r
        scale = jnp.maximum(jnp.diag(jtj), 1e-12 * jnp.maximum(jnp.max(jnp.diag(jtj)), 1.0))
        step = -cho_solve(cho_factor(jtj + state.lam * jnp.diag(scale)), g)
        step = step / jnp.maximum(1.0, jnp.max(jnp.abs(step) / self.step_bound))
        return Proposal(step, state.phi + step, -(2.0 * step @ g + step @ jtj @ step))

    def update(self, state: LMState, proposal: Proposal, r_new: jax.Array, jac_new: jax.Array) -> LMState:
        """The next state, given the residual r_new and Jacobian jac_new at `proposal.point`."""
        phi, lam, nu, step = state.phi, state.lam, state.nu, proposal.step
        cost, cost_new = state.r @ state.r, r_new @ r_new
        rho = (cost - cost_new) / jnp.where(proposal.predicted > 0, proposal.predicted, 1.0)
        # Ties within rounding count as progress: near the optimum the cost cannot resolve the
        # last digits of theta (only sqrt(eps)), the Gauss-Newton step still can.
        accept = (cost_new <= cost * (1.0 + 1e-12)) & jnp.isfinite(cost_new)
        small_step = jnp.max(jnp.abs(step)) <= self.tol * (1.0 + jnp.max(jnp.where(self.free, jnp.abs(phi), 0.0)))
        return LMState(
            phi=jnp.where(accept, proposal.point, phi),
            r=jnp.where(accept, r_new, state.r),
            jac=jnp.where(accept, jac_new, state.jac),
            lam=jnp.where(accept, lam * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), lam * nu),
            nu=jnp.where(accept, 2.0, 2.0 * nu),
            steps=state.steps + 1,
            done=small_step & (accept | (lam > 1e12)),
        )

    def step(self, state: LMState, linearize: Linearize) -> LMState:
        """One iteration traced whole (`linearize` inside it), for `lax.while_loop`."""
        proposal = self.propose(state)
        return self.update(state, proposal, *linearize(proposal.point))

    def terminate(self, state: LMState) -> jax.Array:
        return state.done | (state.steps >= self.max_steps)

    def run(self, phi0: jax.Array, linearize: Linearize) -> LMState:
        """The iterations from phi0 to termination, driven from the host: `linearize` is called
        as it is (its own compiled code, shared with whoever else calls it) and the solver's
        small steps are compiled apart, so no compiled loop holds a second copy of the
        Jacobian's code. Each iteration makes a few dispatches and reads one flag back: a few
        milliseconds per warm solve (docs/benchmarks.md, "One compiled Jacobian per problem")."""
        state = _init(self, phi0, *linearize(phi0))
        while not bool(_terminate(self, state)):
            proposal = _propose(self, state)
            state = _update(self, state, proposal, *linearize(proposal.point))
        return state


_init = jax.jit(LevenbergMarquardt.init)
_propose = jax.jit(LevenbergMarquardt.propose)
_update = jax.jit(LevenbergMarquardt.update)
_terminate = jax.jit(LevenbergMarquardt.terminate)
