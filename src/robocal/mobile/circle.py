"""Least squares with a unit-circle constraint: minimize q(z) = z^T Q z over z = (v, cos a, sin a)
or z = (v, cos a, sin a, 1), with v free. Both planar sensor-pose problems of the seed (Eq. 5) and
Censi's simultaneous calibration take this form, the angle entering through (cos, sin).

The free part is eliminated exactly (v = -Q_vv^-1 Q_vu u), which leaves a quadratic form on the
unit circle: a trigonometric polynomial of degree 2 in a. Its global minimum is found by a dense
scan followed by Newton steps to machine precision (for the homogeneous form this is the smallest
eigenvector of a 2x2 matrix, up to sign; the scan gives both signs and the caller chooses).
"""

from __future__ import annotations

import numpy as np

from robocal.errors import RobocalError


def reduced_form(Q: np.ndarray, n_free: int) -> tuple[np.ndarray, np.ndarray]:
    """(R, G): q at its minimum over v is w^T R w for w = the rest of z; v = G w."""
    Qvv, Qvw = Q[:n_free, :n_free], Q[:n_free, n_free:]
    cond = np.linalg.cond(Qvv)
    if not np.isfinite(cond) or cond > 1e12:
        raise RobocalError(f"the data do not determine the unknowns (condition number {cond:.3g}): the motions are too alike (drive both straight and turning)")
    G = -np.linalg.solve(Qvv, Qvw)
    return Q[n_free:, n_free:] + Qvw.T @ G, G


def minimize_on_circle(Q: np.ndarray, n_free: int, *, homogeneous: bool) -> list[np.ndarray]:
    """The minimizers z of z^T Q z (ascending cost): one for the inhomogeneous form (last entry of
    z is 1), the pair z, -z for the homogeneous one."""
    R, G = reduced_form(Q, n_free)

    def w(a):
        return np.array([np.cos(a), np.sin(a), 1.0]) if not homogeneous else np.array([np.cos(a), np.sin(a)])

    def cost(a):
        return w(a) @ R @ w(a)

    grid = np.linspace(-np.pi, np.pi, 721, endpoint=False)
    a = grid[int(np.argmin([cost(g) for g in grid]))]
    for _ in range(50):
        c, s = np.cos(a), np.sin(a)
        dw, ddw = np.array([-s, c, 0.0][: len(R)]), np.array([-c, -s, 0.0][: len(R)])
        grad, hess = 2 * dw @ R @ w(a), 2 * (dw @ R @ dw + ddw @ R @ w(a))
        step = -grad / hess if hess > 0 else -np.sign(grad) * 1e-3
        a += step
        if abs(step) < 1e-15:
            break
    best = [np.concatenate([G @ w(a), w(a)])]
    return best if not homogeneous else [best[0], -best[0]]
