"""The geometry of Denavit-Hartenberg frames: joint axes as lines, their common normals, frames on
an axis, and the four DH numbers of a transform (both conventions), checked exactly.

A DH frame of joint k has its z axis on the joint's axis line. In the modified (Craig) convention
its x axis is the common normal towards the next axis; in the standard (distal) convention the
frame of robocal's link k (`kinematics/dh.py`) has its x axis on the common normal from the
previous axis. Where the common normal is not unique (parallel, intersecting or coincident axes)
the free part is chosen nearest to a given frame, the URDF link frame, so that DH frames coincide
with URDF links wherever they can. Everything is NumPy (files in and out, never differentiated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robocal.kinematics import transforms as tf
from robocal.kinematics.dh import _expression

# Geometric tolerance (unit vectors, and lengths in m): axes closer to parallel than this are
# parallel, lines closer than this intersect. A conversion's error is bounded by it times the
# robot's size, well below the 1e-10 m to which conversions are checked.
TOLERANCE = 1e-12
# A common normal whose feet lie farther than this from the joints (m) comes from two nearly but
# not exactly parallel axes (a URDF's rpy 1.5708 instead of pi/2): their DH numbers would be
# kilometres, exact in theory and useless in practice, so the chain gets a fixed transform there.
FAR = 5.0
# A transform is in DH form when the four numbers rebuild it to this (max abs entry, m or unit).
EXACT = 1e-11


@dataclass(frozen=True)
class Line:
    """A joint axis in the root frame: a point on it and its unit direction."""

    point: np.ndarray
    direction: np.ndarray

    def project(self, point: np.ndarray) -> np.ndarray:
        return self.point + float(np.dot(point - self.point, self.direction)) * self.direction

    def holds(self, frame: np.ndarray) -> bool:
        """The frame's z axis lies on this line (same direction)."""
        on_line = np.linalg.norm(frame[:3, 3] - self.project(frame[:3, 3])) < TOLERANCE
        return bool(on_line and np.abs(frame[:3, 2] - self.direction).max() < TOLERANCE)


@dataclass(frozen=True)
class Normal:
    """The common normal of two lines: its direction `x` (from the first line towards the second
    where they are apart), its feet on each line (None where free: parallel lines), and `far`."""

    x: np.ndarray | None
    foot1: np.ndarray | None
    foot2: np.ndarray | None
    far: bool = False


def _toward(x: np.ndarray, near: np.ndarray, default_sign: float) -> np.ndarray:
    """x or -x: the one closer to `near`, or `default_sign` x when near is perpendicular to it."""
    dot = float(np.dot(x, near))
    sign = np.sign(dot) if abs(dot) > 1e-9 else default_sign
    return sign * x


def common_normal(first: Line, second: Line, near: np.ndarray) -> Normal:
    """The common normal of two axis lines; its sign follows `near` (a preferred x direction)."""
    u1, u2 = first.direction, second.direction
    w = second.point - first.point
    n = np.cross(u1, u2)
    s = float(np.linalg.norm(n))
    if s < TOLERANCE:  # parallel: the normal's direction is fixed, its position along the axes free
        perpendicular = w - np.dot(w, u1) * u1
        distance = float(np.linalg.norm(perpendicular))
        if distance < TOLERANCE:
            return Normal(None, None, None)
        return Normal(_toward(perpendicular / distance, near, 1.0), None, None)
    x = n / s
    b, d, e = float(np.dot(u1, u2)), float(np.dot(u1, w)), float(np.dot(u2, w))
    t1, t2 = (d - b * e) / (1.0 - b * b), (b * d - e) / (1.0 - b * b)
    foot1, foot2 = first.point + t1 * u1, second.point + t2 * u2
    apart = float(np.dot(w, x))  # signed distance between the lines along x
    x = _toward(x, near, np.sign(apart) if abs(apart) > TOLERANCE else 1.0)
    return Normal(x, foot1, foot2, far=max(abs(t1), abs(t2)) > FAR)


def frame(origin: np.ndarray, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The 4x4 frame with this origin, x and z axes (x made exactly perpendicular to z)."""
    x = x - np.dot(x, z) * z
    x = x / np.linalg.norm(x)
    out = np.eye(4)
    out[:3, 0], out[:3, 1], out[:3, 2], out[:3, 3] = x, np.cross(z, x), z, origin
    return out


def frame_near(line: Line, near: np.ndarray, x: np.ndarray | None = None, origin: np.ndarray | None = None) -> np.ndarray:
    """A frame with its z axis on the line: origin and x as given, else nearest to `near`'s."""
    if origin is None:
        origin = line.project(near[:3, 3])
    if x is None:
        x = near[:3, 0] - np.dot(near[:3, 0], line.direction) * line.direction
        if np.linalg.norm(x) < 1e-6:  # near's x is along the axis: its y is not
            x = near[:3, 1] - np.dot(near[:3, 1], line.direction) * line.direction
    return frame(origin, x, line.direction)


def coincide(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.abs(a - b).max() < TOLERANCE)


def modified_values(t: np.ndarray) -> tuple[float, float, float, float] | None:
    """(d, theta, a, alpha) with RotX(alpha) TransX(a) RotZ(theta) TransZ(d) = t, or None when no
    such numbers exist (checked by rebuilding t)."""
    r, p = t[:3, :3], t[:3, 3]
    alpha, theta = np.arctan2(-r[1, 2], r[2, 2]), np.arctan2(-r[0, 1], r[0, 0])
    a, d = p[0], -np.sin(alpha) * p[1] + np.cos(alpha) * p[2]
    values = (_tidy(d), _tidy(theta, angle=True), _tidy(a), _tidy(alpha, angle=True))
    return values if np.abs(tf.dh_modified(*values) - t).max() < EXACT else None


def standard_values(t: np.ndarray) -> tuple[float, float, float, float] | None:
    """(d, theta, a, alpha) with RotZ(theta) TransZ(d) TransX(a) RotX(alpha) = t, or None."""
    r, p = t[:3, :3], t[:3, 3]
    theta, alpha = np.arctan2(r[1, 0], r[0, 0]), np.arctan2(r[2, 1], r[2, 2])
    d, a = p[2], np.cos(theta) * p[0] + np.sin(theta) * p[1]
    values = (_tidy(d), _tidy(theta, angle=True), _tidy(a), _tidy(alpha, angle=True))
    return values if np.abs(tf.dh_standard(*values) - t).max() < EXACT else None


def dh_values(t: np.ndarray, convention: str) -> tuple[float, float, float, float] | None:
    return modified_values(t) if convention == "modified" else standard_values(t)


def _pi_text(k: int) -> str:
    """k pi / 12 as the DH reader writes it: "pi / 2", "-2 * pi / 3", "pi"."""
    g = math.gcd(k, 12)
    p, q = k // g, 12 // g
    numerator = {1: "pi", -1: "-pi"}.get(p, f"{p} * pi")
    return numerator if q == 1 else f"{numerator} / {q}"


# Multiples of pi / 12 (15 degrees), by their value as the DH reader computes their text.
ANGLES: dict[float, str] = {_expression(_pi_text(k)): _pi_text(k) for k in range(-24, 25) if k}


def _tidy(value: float, angle: bool = False) -> float:
    """`value`, or 0 (or, for an angle, a multiple of pi / 12) when it is within 1e-14 of it, or its
    12-digit rounding within 2e-15: the rounding noise of the geometry (1.5707963267948968 for
    pi / 2, 0.3839999999999999 for 0.384) goes, and tables read as written. An angle of -pi is
    pi: `arctan2` gives either for a half turn, by the sign of a rounding-noise zero."""
    value = float(value)
    if abs(value) < 1e-14:
        return 0.0
    if angle and abs(value + np.pi) < 1e-14:
        return float(np.pi)
    if angle:
        for multiple in ANGLES:
            if abs(value - multiple) < 1e-14:
                return multiple
    short = float(f"{value:.12g}")  # 0.384 for 0.3839999999999999
    return short if abs(short - value) < 2e-15 else value


def placement(t: np.ndarray) -> dict[str, list[float]]:
    """A DH table's `base` for the transform t: `xyz` and `rpy`, or `rotvec` where rpy cannot
    rebuild t exactly (near a pitch of +-pi/2, where roll and yaw are ill-conditioned)."""
    xyz = [_tidy(v) for v in t[:3, 3]]
    rpy = [_tidy(v, angle=True) for v in tf.matrix_to_rpy(t[:3, :3])]
    if np.abs(tf.rpy_to_matrix(np.array(rpy)) - t[:3, :3]).max() < EXACT / 10:
        return {"xyz": xyz, "rpy": rpy}
    q = tf.matrix_to_quaternion(t[:3, :3])  # Shepperd's: accurate at every angle, unlike arccos
    vector = float(np.linalg.norm(q[1:]))
    rotvec = (2.0 * np.arctan2(vector, q[0]) / vector) * q[1:] if vector > 0 else np.zeros(3)
    return {"xyz": xyz, "rotvec": [float(v) for v in rotvec]}
