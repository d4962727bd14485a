"""The planar sensor pose from paired motions: A X = X B in SE(2) (the seed's Eq. 3-5).

A_k is the base's motion over an interval (from ground truth or calibrated odometry), B_k the
sensor's own motion over the same interval (scan matching, or the motion-capture body). With
X = (l_x, l_y, l_theta), the translation part of A X = X B is linear in (l_x, l_y, cos, sin):

    (R(A_theta) - I) [l_x, l_y] - R(l_theta) [B_x, B_y] = -[A_x, A_y]

and the rotation part holds for any X (planar rotations commute), which is why rotations alone
never reveal the mounting and the robot must translate while it turns.
"""

from __future__ import annotations

import numpy as np

from robocal.mobile.circle import minimize_on_circle


def translation_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, 2, 5): each interval's two rows over z = (l_x, l_y, cos, sin, 1)."""
    ca, sa = np.cos(a[:, 2]), np.sin(a[:, 2])
    row_x = np.stack([ca - 1, -sa, -b[:, 0], b[:, 1], a[:, 0]], axis=-1)
    row_y = np.stack([sa, ca - 1, -b[:, 1], -b[:, 0], a[:, 1]], axis=-1)
    return np.stack([row_x, row_y], axis=1)


def sensor_pose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X = (l_x, l_y, l_theta) minimizing the translation residuals of A_k X = X B_k, with the
    unit-circle constraint on (cos, sin) of l_theta (the seed's Eq. 5)."""
    rows = translation_rows(np.asarray(a, float), np.asarray(b, float)).reshape(-1, 5)
    z = minimize_on_circle(rows.T @ rows, 2, homogeneous=False)[0]
    return np.array([z[0], z[1], np.arctan2(z[3], z[2])])
