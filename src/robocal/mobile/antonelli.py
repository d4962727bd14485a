"""Odometry from ground-truth poses: the linear least squares of Antonelli et al. (2005), the
seed's Eq. 1-2.

With C = [[r_R/2, r_L/2], [r_R/b, -r_L/b]] (the seed's Eq. 1), the heading change over a
trajectory segment is linear in the second row: theta_end - theta_start = C21 sum(phi_R) +
C22 sum(phi_L). Given those, each step's heading is known, so the segment's displacement in the
world is linear in (r_R, r_L): sum_i R(theta_i) arc(1, dtheta_i) (r_R phi_R,i + r_L phi_L,i) / 2.

Segments are open paths of constant-sign curvature (the seed, after Antonelli): a closed loop
brings the heading back and tells nothing, and curvature of both signs cancels within one
segment. `segments` cuts a run of intervals at each change of turning direction and at every
`max_turn` of heading.
"""

from __future__ import annotations

import numpy as np

from robocal.errors import RobocalError
from robocal.mobile import se2
from robocal.mobile.drive import DriveParameters, arc


def segments(phi: np.ndarray, *, max_turn: float = np.pi / 2, min_steps: int = 3, straight: float = 1e-3) -> list[slice]:
    """Slices of consecutive intervals turning one way (or straight), each turning less than
    `max_turn` (rad, by the wheel-angle difference of a unit-wheel, unit-axle robot: a proxy
    that only needs the sign and a rough size). Pieces shorter than `min_steps` are dropped."""
    turn = phi[:, 1] - phi[:, 0]
    sign = np.where(np.abs(turn) < straight * np.abs(phi).sum(axis=1).clip(min=1e-12), 0, np.sign(turn))
    out, start, total = [], 0, 0.0
    for i in range(1, len(phi) + 1):
        total += abs(turn[i - 1])
        if i == len(phi) or sign[i] != sign[start] or total > max_turn:
            if i - start >= min_steps:
                out.append(slice(start, i))
            start, total = i, 0.0
    return out


def calibrate(poses: np.ndarray, phi: np.ndarray, pieces: list[slice] | None = None) -> DriveParameters:
    """Wheel radii and wheelbase from base poses (n + 1, 3) at the interval boundaries (ground
    truth, e.g. motion capture moved to the motion center) and wheel rotations (n, 2) (left,
    right) over each interval."""
    poses, phi = np.asarray(poses, float), np.asarray(phi, float)
    pieces = segments(phi) if pieces is None else pieces
    if len(pieces) < 2:
        raise RobocalError(f"{len(pieces)} usable trajectory segment(s): drive at least two open paths, turning both ways")
    turns = np.array([se2.wrap(poses[p.stop, 2] - poses[p.start, 2]) for p in pieces])
    sums = np.array([[phi[p, 1].sum(), phi[p, 0].sum()] for p in pieces])
    c21, c22 = np.linalg.lstsq(sums, turns, rcond=None)[0]
    rows, rhs = [], []
    for p in pieces:
        dtheta = c21 * phi[p, 1] + c22 * phi[p, 0]
        heading = poses[p.start, 2] + np.concatenate([[0.0], np.cumsum(dtheta)[:-1]])
        unit = arc(np.ones_like(dtheta), dtheta)[:, :2]  # step displacement per unit of arc length
        c, s = np.cos(heading), np.sin(heading)
        world = np.stack([c * unit[:, 0] - s * unit[:, 1], s * unit[:, 0] + c * unit[:, 1]], axis=-1)
        rows.append(0.5 * np.stack([world.T @ phi[p, 1], world.T @ phi[p, 0]], axis=-1))
        rhs.append(poses[p.stop, :2] - poses[p.start, :2])
    r_right, r_left = np.linalg.lstsq(np.concatenate(rows), np.concatenate(rhs), rcond=None)[0]
    wheelbase = (c21 * r_right - c22 * r_left) / (c21**2 + c22**2)  # least squares of C21 b = r_R, -C22 b = r_L
    return DriveParameters(float(r_left), float(r_right), float(wheelbase))
