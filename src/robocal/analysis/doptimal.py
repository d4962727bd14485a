"""Task D-optimal experiment design: which calibration samples to measure (or keep).

A candidate sample i contributes whitened Jacobian rows J_i (d x p; a contact gives one row, a
marker configuration three per point). With a set S of samples, the MAP information and the
posterior covariance are

    A(S) = P0 + sum_{i in S} J_i^T J_i,      C(S) = A(S)^-1,

with P0 the prior precision, so both are defined even when the data alone leave directions
unidentified. The task is a measurement function h(q, theta) that is not measured but must be
right (e.g. fingertip positions relative to the thumb), evaluated on a test set q_1..q_M drawn
uniformly in the task space. Its parameter sensitivity over the test set is

    M = 1/M sum_m Jt_m^T Jt_m = U diag(lam) U^T        (unweighted task Jacobians Jt_m, SI units),

and the predicted mean squared task error of a calibration from S is tr(C M). Task D-optimality
(Carrillo et al.) minimizes the log-determinant of the task-space covariance,

    U(S) = log det(T C(S) T^T),      T = diag(sqrt(lam_r)) U_r^T,

over the r task directions with lam > rtol * max(lam). When M has full rank this is
log det C + log det M, the classic Bayesian D-criterion plus a constant, as in Carrillo et al.;
when the task itself is blind to some directions (parallel axes), those are left out instead of
making the criterion -inf. With N a basis of the task kernel, a Gaussian identity gives

    U(S) = -log det A(S) + log det(N^T A(S) N) + const,

so a sample's effect is the difference of two determinant-lemma terms, one for the full
information and one for the information on the task kernel:

    U(S + i) - U(S) = -log det(I + J_i C J_i^T) + log det(I + (J_i N) C_N (J_i N)^T),

C_N = (N^T A N)^-1. Each term is tracked for every candidate and updated after each choice by a
Sherman-Morrison-Woodbury step (rank d), so a greedy step costs O(N_candidates d p), not a
refactorization per candidate; `slogdet` is used throughout, never `det`.

Strategies: `greedy` adds the best sample until n are chosen; `detmax` (Mitchell's DETMAX)
improves a design by excursions: add k best, then remove k worst, kept when U decreases, with k
growing up to `max_excursion` while no excursion helps; `random` draws uniformly (the baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_RTOL = 1e-10  # task directions with lam <= rtol * max(lam) count as the task's kernel
REFRESH = 64  # updates between exact recomputations of the tracked quantities (bounds round-off drift)


@dataclass(frozen=True)
class TaskMetric:
    """The task's sensitivity over its test set: M = T^T T, and a basis of its kernel."""

    matrix: np.ndarray  # M (p, p), m^2 per squared parameter unit, summed over the task's coordinates
    transform: np.ndarray  # T (r, p)
    kernel: np.ndarray  # N (p, p - r), orthonormal
    tips: int  # task points per configuration (tr(C M) / tips is the mean squared error per point)

    @classmethod
    def from_jacobians(cls, jacobians: np.ndarray, rtol: float = DEFAULT_RTOL) -> TaskMetric:
        """jacobians (M, F, 3, p): d(task point f at test configuration m) / d(theta), unweighted."""
        m, f = jacobians.shape[:2]
        flat = jacobians.reshape(-1, jacobians.shape[-1])
        matrix = flat.T @ flat / m
        lam, vec = np.linalg.eigh(matrix)
        keep = lam > rtol * lam.max()
        return cls(matrix, np.sqrt(lam[keep])[:, None] * vec[:, keep].T, vec[:, ~keep], f)

    def predicted_rms(self, covariance: np.ndarray) -> float:
        """Root mean squared task error per point (m) for a parameter covariance."""
        return float(np.sqrt(max(np.trace(covariance @ self.matrix), 0.0) / self.tips))


class _Information:
    """log det of A = prior + sum_{i in S} J_i^T J_i, and for every candidate the d x d matrix
    J_i C J_i^T (C = A^-1) that the determinant lemma needs, kept current under additions and
    removals of samples."""

    def __init__(self, blocks: np.ndarray, prior: np.ndarray, selected: np.ndarray):
        self.blocks, self.prior = blocks, prior
        self._recompute(selected)

    def _recompute(self, selected: np.ndarray) -> None:
        _, d, p = self.blocks.shape
        chosen = self.blocks[selected].reshape(int(selected.sum()) * d, p)
        info = self.prior + chosen.T @ chosen
        self.logdet = np.linalg.slogdet(info)[1]
        self.cov = np.linalg.inv(info)
        self.cov = 0.5 * (self.cov + self.cov.T)
        projected = self.blocks @ self.cov  # (N, d, p)
        self.quad = projected @ self.blocks.transpose(0, 2, 1)  # (N, d, d)
        self.updates = 0

    def change(self, sign: float) -> np.ndarray:
        """log det A(S +- i) - log det A(S) for every candidate i (+ adds, - removes)."""
        eye = np.eye(self.quad.shape[-1])
        return np.linalg.slogdet(eye + sign * self.quad)[1]

    def update(self, i: int, sign: float, selected: np.ndarray) -> None:
        """Add (+1) or remove (-1) sample i; `selected` is the set after the change."""
        if self.blocks.shape[-1] == 0:
            return
        self.updates += 1
        if self.updates >= REFRESH:
            self._recompute(selected)
            return
        eye = np.eye(self.quad.shape[-1])
        inner = eye + sign * self.quad[i]
        self.logdet += np.linalg.slogdet(inner)[1]
        w = self.cov @ self.blocks[i].T  # (p, d)
        solved = np.linalg.solve(inner, w.T)  # (d, p)
        self.cov -= sign * w @ solved
        v = self.blocks @ w  # (N, d, d): J_k C J_i^T
        self.quad -= sign * v @ np.linalg.solve(inner, v.transpose(0, 2, 1))


@dataclass
class Design:
    order: np.ndarray  # chosen candidate indices, in the order chosen (greedy: nested designs)
    criterion: float  # U = log det(T C T^T)
    predicted_rms: float  # m, root mean squared task error per point predicted by C
    strategy: str
    exchanges: int = 0  # DETMAX: accepted excursions


class TaskDOptimal:
    """The task D-criterion over candidate samples (module docstring)."""

    def __init__(self, blocks: np.ndarray, prior_precision: np.ndarray, task: TaskMetric):
        """blocks (N, d, p): whitened Jacobian rows per candidate (zero rows pad a shorter sample);
        prior_precision (p, p) or (p,) diagonal; must make A positive definite on its own."""
        self.blocks = np.asarray(blocks, dtype=float)
        prior = np.asarray(prior_precision, dtype=float)
        self.prior = np.diag(prior) if prior.ndim == 1 else prior
        if np.linalg.eigvalsh(self.prior).min() <= 0:
            raise ValueError("the design needs a prior on every parameter (a positive definite prior precision)")
        self.task = task
        n = task.kernel
        self._kernel_blocks = self.blocks @ n
        self._kernel_prior = n.T @ self.prior @ n

    @property
    def n_candidates(self) -> int:
        return len(self.blocks)

    def _trackers(self, selected: np.ndarray) -> tuple[_Information, _Information]:
        return _Information(self.blocks, self.prior, selected), _Information(self._kernel_blocks, self._kernel_prior, selected)

    def _evaluate(self, order: np.ndarray, strategy: str, exchanges: int = 0) -> Design:
        selected = np.zeros(self.n_candidates, bool)
        selected[order] = True
        full = _Information(self.blocks, self.prior, selected)
        t = self.task.transform
        criterion = float(np.linalg.slogdet(t @ full.cov @ t.T)[1]) if len(t) else 0.0
        return Design(np.asarray(order), criterion, self.task.predicted_rms(full.cov), strategy, exchanges)

    def criterion(self, indices) -> float:
        return self._evaluate(np.asarray(indices, dtype=int), "given").criterion

    def greedy(self, n: int, start=()) -> Design:
        """Add, one at a time, the candidate that lowers U most, until n are chosen (after `start`)."""
        self._check_size(n)
        order = list(start)
        selected = np.zeros(self.n_candidates, bool)
        selected[order] = True
        full, kernel = self._trackers(selected)
        while len(order) < n:
            gain = full.change(+1) - kernel.change(+1)  # = U(S) - U(S + i)
            gain[selected] = -np.inf
            i = int(np.argmax(gain))
            order.append(i)
            selected[i] = True
            full.update(i, +1, selected)
            kernel.update(i, +1, selected)
        return self._evaluate(np.array(order), "greedy")

    def detmax(self, initial, max_excursion: int = 4, max_excursions: int = 10_000) -> Design:
        """Mitchell's DETMAX from the design `initial`: an excursion of length k adds the k best
        candidates one by one, then removes the k worst members one by one; it is kept when U
        decreased, else k grows; stops when no excursion up to `max_excursion` improves U."""
        design = list(initial)
        self._check_size(len(design))
        selected = np.zeros(self.n_candidates, bool)
        selected[design] = True
        full, kernel = self._trackers(selected)
        value = kernel.logdet - full.logdet
        accepted, k, tried = 0, 1, 0
        longest = min(max_excursion, self.n_candidates - len(design))  # an excursion adds k candidates the design does not hold
        while k <= longest and tried < max_excursions:
            tried += 1
            trial = selected.copy()
            moves = []
            for sign in (+1, -1):
                for _ in range(k):
                    change = full.change(sign) - kernel.change(sign)  # U(S) - U(S +- i)
                    change[trial if sign > 0 else ~trial] = -np.inf
                    i = int(np.argmax(change))
                    trial[i] = sign > 0
                    moves.append((i, sign))
                    full.update(i, sign, trial)
                    kernel.update(i, sign, trial)
            new_value = kernel.logdet - full.logdet
            if new_value < value - 1e-10 * max(1.0, abs(value)):
                selected, value, accepted, k = trial, new_value, accepted + 1, 1
            else:
                for i, sign in reversed(moves):  # undo the excursion
                    trial[i] = sign < 0
                    full.update(i, -sign, trial)
                    kernel.update(i, -sign, trial)
                k += 1
        kept = [i for i in design if selected[i]]
        order = np.array(kept + [i for i in np.flatnonzero(selected) if i not in set(kept)])
        return self._evaluate(order, "detmax", accepted)

    def random(self, n: int, seed: int) -> Design:
        """n candidates drawn uniformly without replacement (prefixes of one permutation per seed)."""
        self._check_size(n)
        return self._evaluate(np.random.default_rng(seed).permutation(self.n_candidates)[:n], "random")

    def _check_size(self, n: int) -> None:
        if not 0 < n <= self.n_candidates:
            raise ValueError(f"cannot choose {n} of {self.n_candidates} candidates")
