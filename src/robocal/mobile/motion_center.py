"""Where the base frame sits in the motion-capture marker body: its origin is the motion center
(the midpoint of the wheel axle, about which the base turns), its x axis the driving direction.

The markers cannot be put on the motion center: it is a point in the air between the wheels. Two
motions reveal it (the platform paper's recipe, section 4.2):

1. Spin in place. The motion center stays put while the marker body turns about it. For every
   sample k, the body position p_k plus the body-frame offset m rotated by the body yaw psi_k is
   the same world point c: p_k + R(psi_k) m = c. Linear in (m, c); all samples together give
   their least-squares solution (a circle fit of the body track about c, of radius |m|). The
   paper fits the circle and then takes two poses of the straight drive; using every sample of
   both motions averages the tracking noise down.
2. Drive straight forward. The motion center then moves along the base x axis, so the base
   heading is the direction of travel of its track c_k = p_k + R(psi_k) m: the least-squares line
   through them, pointed the way the robot went. The yaw of the base in the body frame is the
   circular mean of heading - psi_k.

Inputs are planar marker-body poses (x, y, yaw) in the world; `planar` turns a tracked 3-D rigid
body into them. Rows with a NaN (occluded frames) are dropped.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from robocal.errors import RobocalError
from robocal.mobile.se2 import inverse

MIN_SPIN = np.deg2rad(90.0)  # rad of yaw covered by the spin: less leaves the circle's center poorly defined
MIN_STRAIGHT = 0.2  # m driven straight: less leaves the heading at the mercy of the tracking noise
MAX_SPIN_RMS = 0.01  # m: a motion center that wanders more than this was not spinning in place
# (a drive on a circle passes: it is a rotation about the circle's center, at a radius the size
# of the circle rather than of the robot)


class MotionCenter(NamedTuple):
    """The BASE frame expressed in the MARKER-BODY frame: x, y (m) of the motion center in the
    body frame, yaw (rad) of the base x axis from the body x axis. radius (m): distance of the body
    origin from the motion center (|(x, y)|). rms (m): how far the motion-center track strays from
    the ideal motions (a fixed point while spinning, a line while driving straight), over all
    samples."""

    x: float
    y: float
    yaw: float
    radius: float
    rms: float

    def marker_in_base(self) -> np.ndarray:
        """(x, y, yaw) of the marker body in the base frame: the sensor-pose parameter of a
        marker body on a mobile base (the inverse of this pose)."""
        return inverse(np.array([self.x, self.y, self.yaw]))


def _rotation(yaw: np.ndarray) -> np.ndarray:
    """(n, 2, 2) planar rotations."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([np.stack([c, -s], axis=-1), np.stack([s, c], axis=-1)], axis=-2)


def planar(positions, quaternions, valid=None) -> np.ndarray:
    """(n, 3) planar poses (x, y, yaw about the world z) of a tracked rigid body: positions (n, 3),
    quaternions (n, 4) as (x, y, z, w). Rows not `valid` come out NaN.

    The yaw is the heading of whichever body axis, x or y, lies flatter on average (minus pi/2
    for y): a body mounted tilted on a base that moves in the plane still turns every fixed body
    axis by the base's yaw, so either heading differs from the base yaw by a constant, which the
    motion-center calibration absorbs.
    """
    positions, q = np.asarray(positions, dtype=float), np.asarray(quaternions, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = np.moveaxis(q, -1, 0)
    x_axis = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + z * w)])  # world x, y of the body x axis
    y_axis = np.stack([2 * (x * y - z * w), 1 - 2 * (x * x + z * z)])
    flat_x, flat_y = (np.nanmean(np.hypot(*axis)) for axis in (x_axis, y_axis))
    yaw = np.arctan2(x_axis[1], x_axis[0]) if flat_x >= flat_y else np.arctan2(y_axis[1], y_axis[0]) - 0.5 * np.pi
    poses = np.column_stack([positions[:, 0], positions[:, 1], np.arctan2(np.sin(yaw), np.cos(yaw))])
    if valid is not None:
        poses[~np.asarray(valid, dtype=bool)] = np.nan
    return poses


def _valid_poses(poses, what: str) -> np.ndarray:
    poses = np.asarray(poses, dtype=float)
    if poses.ndim != 2 or poses.shape[1] != 3:
        raise RobocalError(f"{what}: planar poses must be an (n, 3) array of x, y, yaw; got shape {poses.shape}")
    poses = poses[np.isfinite(poses).all(axis=1)]
    if len(poses) < 3:
        raise RobocalError(f"{what}: {len(poses)} valid pose(s) (the others NaN); the motion center cannot be told from fewer than 3")
    return poses


def _spin_fit(spin: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m, c, residuals (n, 2)) of p_k + R(psi_k) m - c = 0 in the least-squares sense."""
    turned = np.ptp(np.unwrap(spin[:, 2]))
    if turned < MIN_SPIN:
        raise RobocalError(
            f"the spin covers {np.rad2deg(turned):.1f} deg of yaw; at least {np.rad2deg(MIN_SPIN):.0f} deg are needed to find the motion center (spin the base in place longer)"
        )
    n = len(spin)
    a = np.concatenate([_rotation(spin[:, 2]), np.broadcast_to(-np.eye(2), (n, 2, 2))], axis=2).reshape(2 * n, 4)
    b = -spin[:, :2].reshape(2 * n)
    solution = np.linalg.lstsq(a, b, rcond=None)[0]  # well posed: the yaws span MIN_SPIN
    residuals = (a @ solution - b).reshape(n, 2)
    rms = float(np.sqrt(np.mean(np.sum(residuals**2, axis=1))))
    if rms > MAX_SPIN_RMS:
        raise RobocalError(
            f"the motion center moved by {rms * 1e3:.1f} mm rms during the spin (at most {MAX_SPIN_RMS * 1e3:g} mm): the base did not spin in place (wheel slip, or not a spin segment?)"
        )
    return solution[:2], solution[2:], residuals


def _heading(track: np.ndarray) -> tuple[float, np.ndarray]:
    """(heading, perpendicular residuals) of the least-squares line through a track, pointed
    from its start towards its end."""
    centered = track - track.mean(axis=0)
    direction = np.linalg.svd(centered, full_matrices=False)[2][0]
    along = centered @ direction
    if along[-1] < along[0]:
        direction, along = -direction, -along
    length = along.max() - along.min()
    if length < MIN_STRAIGHT:
        raise RobocalError(f"the straight drive covers {length:.3f} m; at least {MIN_STRAIGHT:g} m are needed for the base heading (drive further)")
    return float(np.arctan2(direction[1], direction[0])), centered @ np.array([-direction[1], direction[0]])


def motion_center(spin, straight) -> MotionCenter:
    """The base frame in the marker-body frame from marker-body poses (n, 3) recorded while the
    base spun in place (`spin`, at least 90 deg) and while it drove straight forward along its x
    axis (`straight`, at least 0.2 m; backwards would flip the yaw by pi).

    Raises RobocalError when either motion has fewer than 3 valid poses (the center cannot be
    told) or is too small, or when the spin was not in place.
    """
    spin, straight = _valid_poses(spin, "spin"), _valid_poses(straight, "straight drive")
    m, _, spin_residuals = _spin_fit(spin)
    track = straight[:, :2] + np.einsum("nij,j->ni", _rotation(straight[:, 2]), m)
    heading, line_residuals = _heading(track)
    relative = heading - straight[:, 2]
    yaw = float(np.arctan2(np.sin(relative).mean(), np.cos(relative).mean()))
    squares = np.concatenate([np.sum(spin_residuals**2, axis=1), line_residuals**2])
    return MotionCenter(float(m[0]), float(m[1]), yaw, float(np.hypot(*m)), float(np.sqrt(squares.mean())))
