"""Homogeneous transforms (float64), written once and shared by every model.

Each function computes with JAX when any argument is a JAX array (a tracer under `jit`, `vmap`
or `grad`), and with NumPy otherwise: a constant origin or a frame read from a file is then a
few microseconds of NumPy instead of one eagerly dispatched (and compiled) JAX op per line.

Rotations follow the URDF convention: rpy = (roll, pitch, yaw) means
R = Rz(yaw) @ Ry(pitch) @ Rx(roll) (fixed axes x, y, z).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def array_module(*args):
    """`jax.numpy` when any argument is a JAX array (concrete or traced), else `numpy`."""
    return jnp if any(isinstance(a, jax.Array) for a in args) else np


def rpy_to_matrix(rpy):
    """Rz(yaw) Ry(pitch) Rx(roll), multiplied out: fewer primitives in a traced graph than the
    product of the three rotations."""
    xp = array_module(rpy)
    (cr, cp, cy), (sr, sp, sy) = xp.cos(rpy), xp.sin(rpy)
    csp, ssp = cy * sp, sy * sp
    return xp.array([[cy * cp, csp * sr - sy * cr, csp * cr + sy * sr], [sy * cp, ssp * sr + cy * cr, ssp * cr - cy * sr], [-sp, cp * sr, cp * cr]])


def homogeneous(rotation, translation):
    xp = array_module(rotation, translation)
    top = xp.concatenate([xp.asarray(rotation, dtype=float), xp.reshape(xp.asarray(translation, dtype=float), (3, 1))], axis=1)
    return xp.concatenate([top, xp.array([[0.0, 0.0, 0.0, 1.0]])], axis=0)


# skew(v) = LEVI_CIVITA @ v: entry (i, j) is -sum_k eps_ijk v_k (one exact product in a traced graph)
LEVI_CIVITA = -np.array([[[0, 0, 0], [0, 0, 1], [0, -1, 0]], [[0, 0, -1], [0, 0, 0], [1, 0, 0]], [[0, 1, 0], [-1, 0, 0], [0, 0, 0]]], dtype=float)


def skew(v):
    """The cross-product matrix [v]x of a 3-vector: skew(v) @ u = v x u."""
    return array_module(v).tensordot(LEVI_CIVITA, v, axes=1)


def rotvec_to_matrix(w):
    """Rodrigues' formula, smooth at w = 0 (series for the small-angle coefficients)."""
    xp = array_module(w)
    w = xp.asarray(w, dtype=float)
    theta2 = xp.dot(w, w)
    small = theta2 < 1e-12
    safe2 = xp.where(small, 1.0, theta2)
    theta = xp.sqrt(safe2)
    a = xp.where(small, 1.0 - theta2 / 6.0, xp.sin(theta) / theta)
    b = xp.where(small, 0.5 - theta2 / 24.0, (1.0 - xp.cos(theta)) / safe2)
    k = skew(w)
    return xp.eye(3) + a * k + b * (k @ k)


def matrix_to_rotvec(r):
    """Inverse of :func:`rotvec_to_matrix` for angles below pi (used for orientation residuals)."""
    xp = array_module(r)
    cos = xp.clip((xp.trace(r) - 1.0) / 2.0, -1.0, 1.0)
    theta = xp.arccos(cos)
    vee = xp.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    small = theta < 1e-6
    sin = xp.where(small, 1.0, xp.sin(theta))
    factor = xp.where(small, 0.5 + theta**2 / 12.0, theta / (2.0 * sin))
    return factor * vee


def perturbation(delta):
    """The 6-DOF placement error used by the `full` parameterization and by unknown frames.

    delta = (dx, dy, dz, rx, ry, rz): a translation and a rotation vector, composed as
    Trans(d) @ Rot(r) and applied on the right of the nominal transform (in its own frame).
    """
    return homogeneous(rotvec_to_matrix(delta[3:6]), delta[0:3])


def axis_angle_to_matrix(axis, angle):
    return rotvec_to_matrix(array_module(axis, angle).asarray(axis, dtype=float) * angle)


def dh_modified(d, theta, a, alpha):
    """Craig's modified DH, RotX(alpha) TransX(a) RotZ(theta) TransZ(d), multiplied out: fewer
    primitives in a traced graph than the product of the four transforms."""
    xp = array_module(d, theta, a, alpha)
    ct, st, ca, sa = xp.cos(theta), xp.sin(theta), xp.cos(alpha), xp.sin(alpha)
    return xp.array([[ct, -st, 0.0, a], [st * ca, ct * ca, -sa, -sa * d], [st * sa, ct * sa, ca, ca * d], [0.0, 0.0, 0.0, 1.0]])


def dh_standard(d, theta, a, alpha):
    """Classic (distal) DH, RotZ(theta) TransZ(d) TransX(a) RotX(alpha), multiplied out."""
    xp = array_module(d, theta, a, alpha)
    ct, st, ca, sa = xp.cos(theta), xp.sin(theta), xp.cos(alpha), xp.sin(alpha)
    return xp.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st], [0.0, sa, ca, d], [0.0, 0.0, 0.0, 1.0]])


# ---- NumPy helpers for I/O (not differentiated) ---------------------------------------------


def matrix_to_rpy(r: np.ndarray) -> np.ndarray:
    """URDF rpy of a rotation matrix; at gimbal lock (|pitch| = pi/2) roll is set to 0."""
    r = np.asarray(r, dtype=float)
    pitch = np.arctan2(-r[2, 0], np.hypot(r[0, 0], r[1, 0]))
    if np.hypot(r[0, 0], r[1, 0]) < 1e-12:
        return np.array([0.0, pitch, np.arctan2(-r[0, 1], r[1, 1])])
    return np.array([np.arctan2(r[2, 1], r[2, 2]), pitch, np.arctan2(r[1, 0], r[0, 0])])


def rpy_near(r: np.ndarray, reference) -> np.ndarray:
    """The URDF rpy of rotation r nearest `reference` (rpy, rad): a rotation has two triples,
    (a, b, c) and (a + pi, pi - b, c + pi), each angle defined up to 2 pi; at gimbal lock only
    yaw - roll (pitch pi/2) or yaw + roll (pitch -pi/2) is defined, and the reference's roll is
    kept. A written-back origin then differs from the source by what changed, not by a jump to
    an equivalent triple."""
    reference = np.asarray(reference, dtype=float)
    a, b, c = matrix_to_rpy(r)
    if np.hypot(r[0, 0], r[1, 0]) < 1e-9:  # gimbal lock: matrix_to_rpy gave roll 0
        sign = np.sign(b)
        candidates = [np.array([reference[0], b, c + sign * reference[0]])]
    else:
        candidates = [np.array([a, b, c]), np.array([a + np.pi, np.pi - b, c + np.pi])]
    wrapped = [reference + (x - reference + np.pi) % (2 * np.pi) - np.pi for x in candidates]
    return min(wrapped, key=lambda x: float(np.sum((x - reference) ** 2)))


def matrix_to_quaternion(r: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) with w >= 0 (Shepperd's method)."""
    r = np.asarray(r, dtype=float)
    tr = np.trace(r)
    candidates = np.array([tr, r[0, 0], r[1, 1], r[2, 2]])
    i = int(np.argmax(candidates))
    if i == 0:
        s = 2.0 * np.sqrt(1.0 + tr)
        q = np.array([s / 4, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s])
    elif i == 1:
        s = 2.0 * np.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = np.array([(r[2, 1] - r[1, 2]) / s, s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s])
    elif i == 2:
        s = 2.0 * np.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = np.array([(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = np.array([(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4])
    return q if q[0] >= 0 else -q


def quaternion_to_matrix(q):
    """Rotation matrix of a (w, x, y, z) quaternion; the quaternion is normalized first."""
    xp = array_module(q)
    q = q / xp.linalg.norm(q)
    w, x, y, z = q
    return xp.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
