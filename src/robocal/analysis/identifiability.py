"""Identifiability from the residual Jacobian J (unweighted, SI units).

A parameter direction v is identifiable when the data change with it: v^T (J^T J) v > threshold.
The numerical rank is the number of eigenvalues of J^T J above the threshold (default 1e-6 in SI
units, as in the hand-calibration paper); the eigenvectors of the others span the kernel, listed
by parameter name with their weights.

The eigenvalues are the squared singular values of J: the SVD of J resolves an exact kernel down
to round-off of J itself (about 1e-16 sigma_max) instead of that of J^T J (1e-16 sigma_max^2), so
a kernel that only nearly vanishes is told apart from an exact one. The listed kernel directions
are a reduced basis of the kernel subspace: pivot parameters are chosen one per direction (the
largest remaining weight, ties to the earlier parameter, as in `identifiable_subset`), and each
direction has weight 0 on the other directions' pivots. For the parallel joint axes of a finger
this reads "d of q2 minus d of q4" instead of an arbitrary mixture of every finger's d's.

Kernel inclusion (two measurement functions A, B on the same parameters, e.g. contact and
task): kernel(A) is contained in kernel(B) when every direction A cannot see, B cannot see
either. Measured by the largest principal angle between kernel(A) and kernel(B): with orthonormal
bases Na, Nb, residual = ||(I - Nb Nb^T) Na||_2 = sin(largest angle); the inclusion holds when the
residual is at most a tolerance (default 1e-3, about 0.06 deg). An empty kernel(A) is contained
in anything; a kernel(A) larger than kernel(B) never is (residual 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEFAULT_THRESHOLD = 1e-6
DEFAULT_INCLUSION_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Identifiability:
    n_parameters: int
    rank: int
    threshold: float
    eigenvalues: np.ndarray  # descending
    kernel: list[dict[str, float]]  # one direction per unidentifiable eigenvalue (reduced basis), largest weights first
    basis: np.ndarray | None = field(default=None, repr=False, compare=False)  # (n, n - rank) orthonormal basis of the kernel

    def to_dict(self) -> dict:
        return {
            "n_parameters": self.n_parameters,
            "rank": self.rank,
            "threshold": self.threshold,
            "eigenvalues": self.eigenvalues.tolist(),
            "kernel": self.kernel,
        }


def spectrum(jacobian: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of J^T J, descending, and their eigenvectors (columns), from the SVD of J.

    A tall J is first reduced to the R of its QR factorization (same singular values and right
    vectors; the SVD then works on an n x n matrix). The SVD is LAPACK's gesvd: the
    divide-and-conquer driver flattens singular values at round-off level."""
    from scipy.linalg import qr, svd

    jacobian = np.asarray(jacobian, dtype=float)
    m, n = jacobian.shape
    if m == 0:
        return np.zeros(n), np.eye(n)
    if m > n:
        jacobian = qr(jacobian, mode="r")[0][:n]
    _, s, vt = svd(jacobian, full_matrices=m < n, lapack_driver="gesvd")
    return np.pad(s, (0, n - len(s))) ** 2, vt.T


def reduced_basis(basis: np.ndarray) -> np.ndarray:
    """Unit directions spanning the same subspace as the columns of `basis`, each with weight 0
    on the pivot parameters of the others (pivots: module docstring), ordered by pivot."""
    if basis.shape[1] == 0:
        return basis
    pivots = np.flatnonzero(identifiable_subset(basis.T, np.ones(len(basis), bool)))
    if len(pivots) != basis.shape[1]:  # not expected for orthonormal columns; keep them as they are
        return basis
    directions = basis @ np.linalg.inv(basis[pivots])
    return directions / np.linalg.norm(directions, axis=0)


def identifiability(jacobian: np.ndarray, names: list[str], threshold: float = DEFAULT_THRESHOLD, min_weight: float = 0.05) -> Identifiability:
    w, v = spectrum(jacobian)
    rank = int((w > threshold).sum())
    basis = v[:, rank:]
    kernel = []
    for direction in reduced_basis(basis).T:
        big = sorted(range(len(names)), key=lambda i: (-round(abs(float(direction[i])), 4), i))
        kernel.append({names[i]: round(float(direction[i]), 4) for i in big if abs(direction[i]) >= min_weight})
    return Identifiability(len(names), rank, threshold, w, kernel, basis)


@dataclass(frozen=True)
class Inclusion:
    """Whether span(A) lies in span(B): module docstring."""

    dim_a: int
    dim_b: int
    residual: float  # sin of the largest principal angle
    largest_angle_deg: float
    tolerance: float
    holds: bool

    def to_dict(self) -> dict:
        return {
            "dim_a": self.dim_a,
            "dim_b": self.dim_b,
            "residual": self.residual,
            "largest_angle_deg": self.largest_angle_deg,
            "tolerance": self.tolerance,
            "holds": self.holds,
        }


def subspace_inclusion(a: np.ndarray, b: np.ndarray, tolerance: float = DEFAULT_INCLUSION_TOLERANCE) -> Inclusion:
    """Is span(a) contained in span(b)? a, b: orthonormal columns of the same length."""
    residual = min(float(np.linalg.norm(a - b @ (b.T @ a), 2)), 1.0) if a.shape[1] else 0.0
    return Inclusion(a.shape[1], b.shape[1], residual, float(np.degrees(np.arcsin(residual))), tolerance, residual <= tolerance)


def kernel_inclusion(a: Identifiability, b: Identifiability, tolerance: float = DEFAULT_INCLUSION_TOLERANCE) -> Inclusion:
    """kernel(A) subset of kernel(B)? Both analyses must be over the same parameters."""
    if a.n_parameters != b.n_parameters:
        raise ValueError(f"kernels of {a.n_parameters} and {b.n_parameters} parameters cannot be compared")
    if a.basis is None or b.basis is None:
        raise ValueError("kernel inclusion needs both analyses' kernel bases")
    return subspace_inclusion(a.basis, b.basis, tolerance)


@dataclass(frozen=True)
class SpectrumSeries:
    """One line of an eigenvalue-spectrum plot: a measurement (colour) in a mode (marker)."""

    measurement: str
    mode: str
    eigenvalues: np.ndarray


def plot_spectra(series: Sequence[SpectrumSeries], path: Path, threshold: float = DEFAULT_THRESHOLD, title: str | None = None, floor: float = 1e-12) -> Path:
    """The ordered eigenvalues of J^T J of every series on a log scale (as the hand-calibration
    paper's Figs. 5 and 6): colour per measurement, marker per mode, a dashed line at the
    threshold and a grey vertical line at each mode's number of parameters. Eigenvalues below
    `threshold * floor` (an exact kernel computes to round-off, 1e-30 or less) are drawn at that
    level. Writes a PNG (or any format matplotlib knows from the suffix) to `path`."""
    from matplotlib.figure import Figure

    path = Path(path)
    measurements = list(dict.fromkeys(s.measurement for s in series))
    modes = list(dict.fromkeys(s.mode for s in series))
    floor = threshold * floor
    fig = Figure(figsize=(7.5, 4.5))
    ax = fig.add_subplot()
    markers = "o^sDvh<>p*"
    for s in series:
        w = np.sort(np.asarray(s.eigenvalues, dtype=float))[::-1]
        ax.plot(
            np.arange(1, len(w) + 1),
            np.maximum(w, floor),
            linestyle="-",
            linewidth=0.8,
            marker=markers[modes.index(s.mode) % len(markers)],
            markersize=3.5,
            color=f"C{measurements.index(s.measurement)}",
            label=f"{s.measurement}, {s.mode}",
        )
    for n in sorted({len(s.eigenvalues) for s in series}):
        ax.axvline(n, color="0.8", linewidth=1.0, zorder=0)
    ax.axhline(threshold, color="k", linestyle="--", linewidth=0.8, label=f"threshold {threshold:g}")
    ax.set_yscale("log")
    ax.set_xlabel("eigenvalue index (descending)")
    ax.set_ylabel("eigenvalue of $J^T J$ (SI units)")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    return path


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
