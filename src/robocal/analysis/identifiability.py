"""Identifiability from the residual Jacobian J (unweighted, SI units).

A parameter direction v is identifiable when the data change with it: v^T (J^T J) v > threshold.
The numerical rank is the number of eigenvalues of J^T J above the threshold (default 1e-6 in SI
units, as in the hand-calibration paper); the eigenvectors of the others span the kernel, listed
by parameter name with their weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_THRESHOLD = 1e-6


@dataclass(frozen=True)
class Identifiability:
    n_parameters: int
    rank: int
    threshold: float
    eigenvalues: np.ndarray  # descending
    kernel: list[dict[str, float]]  # one direction per unidentifiable eigenvalue, largest weights first

    def to_dict(self) -> dict:
        return {
            "n_parameters": self.n_parameters,
            "rank": self.rank,
            "threshold": self.threshold,
            "eigenvalues": self.eigenvalues.tolist(),
            "kernel": self.kernel,
        }


def identifiability(jacobian: np.ndarray, names: list[str], threshold: float = DEFAULT_THRESHOLD, min_weight: float = 0.05) -> Identifiability:
    w, v = np.linalg.eigh(jacobian.T @ jacobian)
    order = np.argsort(w)[::-1]
    w, v = w[order], v[:, order]
    rank = int((w > threshold).sum())
    kernel = []
    for k in range(rank, len(w)):
        direction = v[:, k] * np.sign(v[np.argmax(np.abs(v[:, k])), k])
        big = np.argsort(-np.abs(direction))
        kernel.append({names[i]: round(float(direction[i]), 4) for i in big if abs(direction[i]) >= min_weight})
    return Identifiability(len(names), rank, threshold, w, kernel)


def identifiable_subset(jacobian: np.ndarray, candidates: np.ndarray, rtol: float = 1e-8, tie: float = 1e-6) -> np.ndarray:
    """Boolean mask of the `candidates` columns to keep: a base-parameter set.

    The other (non-candidate) columns are always estimated, so their span is projected out
    first. Then a greedy pivoted Gram-Schmidt (QR with column pivoting) picks, at each step, the
    column with the largest remaining norm, and stops when that norm falls below rtol times the
    first pivot. Columns within a relative `tie` of the largest count as equal and the earliest
    (closest to the root) wins, so exact ties (parallel axes) are broken the same way on every
    machine instead of by round-off.
    """
    cols = jacobian[:, candidates].astype(float)
    others = jacobian[:, ~candidates]
    if others.size:
        u, s, _ = np.linalg.svd(others, full_matrices=False)
        u = u[:, s > s.max() * 1e-12]
        cols = cols - u @ (u.T @ cols)
    chosen: list[int] = []
    first = None
    for _ in range(cols.shape[1]):
        norms = np.linalg.norm(cols, axis=0)
        norms[chosen] = 0.0
        best = norms.max()
        first = best if first is None else first
        if best <= rtol * first or best == 0.0:
            break
        pick = int(np.flatnonzero(norms >= best * (1.0 - tie))[0])
        chosen.append(pick)
        q = cols[:, pick] / norms[pick]
        cols = cols - np.outer(q, q @ cols)
    keep = np.zeros(len(candidates), bool)
    keep[np.flatnonzero(candidates)[chosen]] = True
    return keep
