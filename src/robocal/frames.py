"""Rigid transforms that are unknowns of a problem (measurement frame, marker body, ...).

Each estimated frame is parameterized like a `full` joint error: its pose is
initial @ Trans(dx,dy,dz) Rot(rx,ry,rz), six parameters around an initial guess that is either
given or computed from the data (`initial: auto`).
"""

from __future__ import annotations

from dataclasses import dataclass

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
            Parameter(
                f"frame.{self.name}.{c}",
                "frame_translation" if i < 3 else "frame_rotation",
                0.0,
                prior_translation if i < 3 else prior_rotation,
                "m" if i < 3 else "rad",
            )
            for i, c in enumerate(FULL_COORDINATES)
        ]

    def pose(self, theta):
        """The frame (4x4) at theta: NumPy for a NumPy theta, JAX for a JAX one."""
        initial = np.asarray(self.initial, dtype=float)
        return initial if self.block is None else initial @ tf.perturbation(theta[self.block])

    def estimate(self, theta) -> np.ndarray:
        return np.asarray(self.pose(np.asarray(theta, dtype=float)))


def placement_matrix(xyz, rpy) -> np.ndarray:
    return tf.homogeneous(tf.rpy_to_matrix(np.asarray(rpy, dtype=float)), np.asarray(xyz, dtype=float))


def kabsch(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Rigid transform T (4x4) minimizing sum ||T source_i - target_i||^2 (Kabsch / Umeyama, no scale)."""
    translations, rotations = rigid_fits(source, target[None], np.ones((1, len(source))))
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = rotations[0], translations[0]
    return t


def rigid_fits(layout: np.ndarray, seen: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched weighted Kabsch: for each of n frames, the rotation R and translation t minimizing
    sum_k w_k ||R layout_k + t - seen_k||^2. layout (k, 3), seen (n, k, 3), weights (n, k);
    a point of weight 0 may be NaN in `seen` (an occluded marker). Returns (t (n, 3), R (n, 3, 3))."""
    w = np.asarray(weights, dtype=float)
    seen = np.where(w[..., None] > 0, seen, 0.0)
    total = np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    seen_center = np.einsum("nk,nki->ni", w, seen) / total
    model_center = w @ layout / total
    h = np.einsum("nk,nki,nkj->nij", w, seen - seen_center[:, None], layout[None] - model_center[:, None])
    u, _, vt = np.linalg.svd(h)
    fix = np.ones((len(h), 3))
    fix[:, 2] = np.sign(np.linalg.det(u @ vt))
    rotations = u @ (fix[:, :, None] * vt)
    return seen_center - np.einsum("nij,nj->ni", rotations, model_center), rotations
