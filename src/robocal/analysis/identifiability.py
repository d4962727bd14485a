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
