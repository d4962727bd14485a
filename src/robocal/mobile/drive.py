"""The differential drive: two wheels of radii r_L, r_R on an axle of length b, the base frame at
the axle's center (x forward, y to the left).

Over an interval in which both wheels turn at constant rates, through angles phi_L and phi_R, the
base moves on a circular arc: it advances s = (r_R phi_R + r_L phi_L) / 2 along the arc and turns
by dtheta = (r_R phi_R - r_L phi_L) / b (the seed's Eq. 1 integrated over the interval).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from robocal.mobile.se2 import _xp

NAMES = ("wheel_radius_left", "wheel_radius_right", "wheelbase")


class DriveParameters(NamedTuple):
    wheel_radius_left: float
    wheel_radius_right: float
    wheelbase: float


def arc(s, dtheta):
    """(x, y, yaw) of a circular arc of length s turning by dtheta (a straight line at dtheta = 0)."""
    xp = _xp(s, dtheta)
    small = xp.abs(dtheta) < 1e-9
    safe = xp.where(small, 1.0, dtheta)
    # Taylor series below 1e-9 rad: sin(t)/t = 1 - t²/6, (1 - cos t)/t = t/2, exact to float64.
    sinc = xp.where(small, 1.0 - dtheta**2 / 6.0, xp.sin(safe) / safe)
    cosc = xp.where(small, dtheta / 2.0, (1.0 - xp.cos(safe)) / safe)
    return xp.stack([s * sinc, s * cosc, dtheta], axis=-1)


def increment(p: DriveParameters, phi_left, phi_right):
    """Base motion (n, 3) over intervals in which the wheels turned by phi_left, phi_right (rad)."""
    s = 0.5 * (p.wheel_radius_right * phi_right + p.wheel_radius_left * phi_left)
    return arc(s, (p.wheel_radius_right * phi_right - p.wheel_radius_left * phi_left) / p.wheelbase)


def integrate(p: DriveParameters, start, phi_left, phi_right) -> np.ndarray:
    """Poses (n + 1, 3) of the base from `start` through the n intervals (dead reckoning), yaw
    unwrapped: each step is the arc of its increments, turned by the yaw before it."""
    steps = np.asarray(increment(p, np.asarray(phi_left, float), np.asarray(phi_right, float)))
    start = np.asarray(start, dtype=float)
    yaw = start[2] + np.concatenate([[0.0], np.cumsum(steps[:, 2])])
    c, s = np.cos(yaw[:-1]), np.sin(yaw[:-1])
    moves = np.stack([c * steps[:, 0] - s * steps[:, 1], s * steps[:, 0] + c * steps[:, 1]], axis=1)
    xy = start[:2] + np.concatenate([np.zeros((1, 2)), np.cumsum(moves, axis=0)])
    return np.column_stack([xy, yaw])
