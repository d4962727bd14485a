"""Simultaneous calibration of odometry and sensor pose from the sensor's own motion (Censi,
Franchi, Marchionni, Oriolo, IEEE T-RO 2013), the method of the published reference results.

Each interval k gives the wheel rotations (phi_L, phi_R) and the sensor's displacement B_k (scan
matching), both over the same time. With J21 = -r_L / b and J22 = r_R / b:

1. The sensor turns as the base does, so B_theta = J21 phi_L + J22 phi_R: linear least squares.
2. With the heading change o_theta of each interval known, the base's translation is b times a
   known vector (the arc of `drive.arc` with s = b (J22 phi_R - J21 phi_L) / 2), and A X = X B is
   linear in z = (b, l_x, l_y, cos l_theta, sin l_theta): least squares on the unit circle
   (`circle.minimize_on_circle`). z and -z fit equally well; b > 0 picks one.
3. Trimming: the worst `fraction` of the records by translation or by rotation disagreement are
   dropped, and 1-2 repeated, `rounds` times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robocal.errors import RobocalError
from robocal.mobile import se2
from robocal.mobile.circle import minimize_on_circle
from robocal.mobile.drive import DriveParameters, arc, increment
from robocal.mobile.handeye import translation_rows


@dataclass
class CensiResult:
    drive: DriveParameters
    sensor: np.ndarray  # (x, y, yaw) of the sensor in the base frame
    left_in_round: np.ndarray  # (n,) int: the trimming round that dropped each record, 0 if kept

    @property
    def keep(self) -> np.ndarray:
        return self.left_in_round == 0


def _estimate(phi: np.ndarray, b: np.ndarray) -> tuple[DriveParameters, np.ndarray]:
    if len(phi) < 3:
        raise RobocalError(f"{len(phi)} intervals are too few to calibrate a differential drive and a sensor (at least 3)")
    J = np.linalg.lstsq(phi, b[:, 2], rcond=None)[0]
    j21, j22 = J
    o_theta = phi @ J
    unit = arc(0.5 * (j22 * phi[:, 1] - j21 * phi[:, 0]), o_theta)  # base motion per unit of b
    # A X = X B with A's translation b * unit: the hand-eye rows, their constant column now b's
    rows = translation_rows(unit, b)[..., [4, 0, 1, 2, 3]].reshape(-1, 5)
    z = next(z for z in minimize_on_circle(rows.T @ rows, 3, homogeneous=True) if z[0] > 0)
    axle = z[0]
    return DriveParameters(-j21 * axle, j22 * axle, axle), np.array([z[1], z[2], np.arctan2(z[4], z[3])])


def disagreement(drive: DriveParameters, sensor: np.ndarray, phi: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, 3): X ⊕ B_k - A_k ⊕ X, the mismatch of each interval (m, m, rad)."""
    x = np.broadcast_to(sensor, b.shape)
    return se2.compose(x, b) - se2.compose(np.asarray(increment(drive, phi[:, 0], phi[:, 1])), x)


def calibrate(phi_left, phi_right, sensor_motion, *, rounds: int = 4, fraction: float = 0.01) -> CensiResult:
    """Wheel radii, wheelbase and sensor pose from wheel rotations (rad) and sensor motions (n, 3)."""
    phi = np.stack([np.asarray(phi_left, float), np.asarray(phi_right, float)], axis=-1)
    b = np.asarray(sensor_motion, float)
    left_in_round = np.zeros(len(phi), int)
    for round_ in range(1, rounds + 2):
        keep = left_in_round == 0
        drive, sensor = _estimate(phi[keep], b[keep])
        if round_ > rounds:
            break
        err = disagreement(drive, sensor, phi, b)
        err_xy, err_theta = np.hypot(err[:, 0], err[:, 1]), np.abs(err[:, 2])
        n = int(keep.sum())
        index = min(int(round((1 - fraction) * n)), n - 1)
        limit_xy, limit_theta = np.sort(err_xy[keep])[index], np.sort(err_theta[keep])[index]
        left_in_round[keep & ((err_xy > limit_xy) | (err_theta > limit_theta))] = round_
    return CensiResult(drive, sensor, left_in_round)
