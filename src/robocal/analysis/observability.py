"""How well the data pin the parameters down: scaled condition number and observability indices.

Both are read from the singular values of the unweighted residual Jacobian J (m rows, SI units),
sigma_1 >= ... >= sigma_r, over its r identifiable directions only (r = the numerical rank of
`robocal.analysis.identifiability`: eigenvalues sigma^2 of J^T J above the threshold). On a
rank-deficient J (parallel axes, a pair of fingertips) the smallest singular value is zero, which
would make every index 0 and the condition number infinite whatever the data; restricted to the r
directions they grade what can be identified, as for a base parameter set.

Schroer scaling. Parameters of different units (m, rad) and leverage make sigma_1 / sigma_r
meaningless as it stands. Each parameter j is therefore measured in the deviation h_j that moves
an end point by 1 mm at the pose where it acts most (the extremal scale):

    h_j = 1 mm / max_p ||c_j(p)||,

c_j(p) the rows of J's column j that belong to one measured point p (a fingertip's 3 coordinates,
a marker's 3 coordinates, one signed distance), so ||c_j(p)|| dtheta_j is that point's
displacement. With H = diag(h), the scaled Jacobian is C = J H (d = C (H^-1 dtheta)), and

    kappa = sigma_1(C) / sigma_r(C),

over C's r largest singular values. A parameter that moves no point keeps h_j = 1. Schroer's
rule of thumb asks for kappa < 100.

Observability indices (Sun and Hollerbach's summary of the literature), from the r leading
singular values of J itself (unscaled), with m the number of rows of J (scalar residuals):

    O1 = (sigma_1 ... sigma_r)^(1/r) / sqrt(m)    geometric mean, per row (Borm and Menq)
    O2 = sigma_r / sigma_1                         inverse condition number (Driels and Pathre)
    O3 = sigma_r                                   minimum singular value (Nahvi and Hollerbach)
    O4 = sigma_r^2 / sigma_1                       noise amplification index (Nahvi and Hollerbach)
    O5 = 1 / (1/sigma_1 + ... + 1/sigma_r)         (Sun and Hollerbach)

Larger is better for every index. Units: O1, O3, O4, O5 carry those of J (m per parameter unit,
mixed m/m and m/rad for DH parameters), O2 is a pure number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robocal.analysis.identifiability import spectrum

MILLIMETRE = 1e-3


def singular_values(jacobian: np.ndarray) -> np.ndarray:
    """Singular values of J, descending, one per column (zeros beyond the number of rows)."""
    return np.sqrt(spectrum(jacobian)[0])


def schroer_scales(jacobian: np.ndarray, points: Sequence[np.ndarray], displacement: float = MILLIMETRE) -> np.ndarray:
    """h (n,): per parameter, the deviation that moves some point by `displacement` (m) at the
    pose where the parameter acts most. `points`: row indices of J, one array per measured point
    (their rows' Euclidean norm is the point's displacement)."""
    jacobian = np.asarray(jacobian, dtype=float)
    largest = np.zeros(jacobian.shape[1])
    for rows in points:
        largest = np.maximum(largest, np.linalg.norm(jacobian[np.asarray(rows)], axis=0))
    return np.where(largest > 0, displacement / np.where(largest > 0, largest, 1.0), 1.0)


def scaled_condition_number(jacobian: np.ndarray, points: Sequence[np.ndarray], rank: int) -> float:
    """kappa = sigma_1 / sigma_rank of J H (H: Schroer scales); inf when rank is 0 or sigma_rank is 0."""
    s = singular_values(np.asarray(jacobian, dtype=float) * schroer_scales(jacobian, points))
    if rank < 1 or rank > len(s) or s[rank - 1] == 0:
        return float("inf")
    return float(s[0] / s[rank - 1])


def observability_indices(sigma: np.ndarray, m: int) -> dict[str, float]:
    """O1..O5 from singular values `sigma` (the r identifiable ones, any order) of a Jacobian with
    m rows. All 0 when there are none."""
    s = np.sort(np.asarray(sigma, dtype=float))[::-1]
    if s.size == 0 or s[-1] <= 0:
        return {f"O{k}": 0.0 for k in range(1, 6)}
    return {
        "O1": float(np.exp(np.log(s).mean()) / np.sqrt(m)),
        "O2": float(s[-1] / s[0]),
        "O3": float(s[-1]),
        "O4": float(s[-1] ** 2 / s[0]),
        "O5": float(1.0 / np.sum(1.0 / s)),
    }


def observability(jacobian: np.ndarray, points: Sequence[np.ndarray], rank: int) -> dict:
    """The Schroer-scaled condition number and O1..O5 of J over its `rank` identifiable directions."""
    s = singular_values(jacobian)[:rank]
    return {"scaled_condition_number": scaled_condition_number(jacobian, points, rank), "observability": observability_indices(s, len(jacobian))}
