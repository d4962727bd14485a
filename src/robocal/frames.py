"""Rigid transforms that are unknowns of a problem (measurement frame, marker body, ...).

Each estimated frame is parameterized like a `full` joint error: its pose is
initial @ Trans(dx,dy,dz) Rot(rx,ry,rz), six parameters around an initial guess that is either
given or computed from the data (`initial: auto`).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from robocal.kinematics import transforms as tf
from robocal.kinematics.model import FULL_COORDINATES
from robocal.parameters import Parameter


@dataclass
class Frame:
    name: str
    initial: np.ndarray | None  # 4x4; None until guessed from data
    block: slice | None  # parameters, None when the frame is known

    def parameters(self, prior_translation, prior_rotation) -> list[Parameter]:
        return [
            Parameter(f"frame.{self.name}.{c}", "frame_translation" if i < 3 else "frame_rotation", 0.0, prior_translation if i < 3 else prior_rotation, "m" if i < 3 else "rad")
            for i, c in enumerate(FULL_COORDINATES)
        ]

    def pose(self, theta):
        initial = jnp.asarray(self.initial)
        return initial if self.block is None else initial @ tf.perturbation(theta[self.block])

    def estimate(self, theta) -> np.ndarray:
        return np.asarray(self.pose(jnp.asarray(theta)))


def placement_matrix(xyz, rpy) -> np.ndarray:
    return np.asarray(tf.homogeneous(tf.rpy_to_matrix(jnp.asarray(rpy, dtype=float)), jnp.asarray(xyz, dtype=float)))


def kabsch(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Rigid transform T (4x4) minimizing sum ||T source_i - target_i||^2 (Kabsch / Umeyama, no scale)."""
    ms, mt = source.mean(axis=0), target.mean(axis=0)
    u, _, vt = np.linalg.svd((target - mt).T @ (source - ms))
    d = np.sign(np.linalg.det(u @ vt))
    r = u @ np.diag([1.0, 1.0, d]) @ vt
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = r, mt - r @ ms
    return t
