"""Fingertip positions of a nominal kinematic tree, compiled for a real-time loop.

`RobotModel.link_poses` multiplies 4x4 matrices joint by joint; under `jax.jit` on a CPU that is
some ten small XLA operations per joint, about 70 us for the four DLR fingers, and the fingertip
mapping needs two dozen evaluations per frame. Here each chain from the root to a tip is reduced
once to constant affine maps C_j between its moving joints, T = C_0 M_1 C_1 ... M_m C_m, and a
tip is the point C_0 M_1 ... M_m C_m 0, applied from the right as rotations (Rodrigues) and
translations of one 3-vector. The chains are stacked (padded with identity steps to a common
length), so every step is a few elementwise operations on all fingers at once, which XLA fuses.

A chain's joint values are its own actuated joints, x (F, k): `columns` says which of the tree's
actuated joints they are (padded slots are -1). Mimic joints follow their driver with the tree's
gain and offset. Nominal origins only; a calibrated hand is a calibrated model file.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from robocal.kinematics.tree import KinematicTree


class TipChains:
    """Positions (in the root frame) of the `tips` of a tree, from each chain's joint values."""

    def __init__(self, tree: KinematicTree, tips: Sequence[str]):
        self.tree, self.tips = tree, tuple(tips)
        actuated = {name: i for i, name in enumerate(tree.actuated)}
        columns = [tree.actuated_for([tip]) for tip in self.tips]
        self.k = max(1, max(len(c) for c in columns))
        self.m = max(1, max(sum(tree.joints[i].moves for i in tree.chain(tip)) for tip in self.tips))
        n_chains = len(self.tips)
        self.columns = -np.ones((n_chains, self.k), dtype=int)
        constants = np.tile(np.eye(4), (n_chains, self.m + 1, 1, 1))
        axes = np.tile([0.0, 0.0, 1.0], (n_chains, self.m, 1))
        select = np.zeros((n_chains, self.m, self.k))  # angle_j = sum_c select[j, c] x[c] + offset_j
        offsets = np.zeros((n_chains, self.m))
        revolute = np.ones((n_chains, self.m))
        for f, tip in enumerate(self.tips):
            own = {name: c for c, name in enumerate(columns[f])}
            self.columns[f, : len(columns[f])] = [actuated[name] for name in columns[f]]
            step, current = 0, np.eye(4)
            for i in tree.chain(tip):
                joint = tree.joints[i]
                current = current @ np.asarray(joint.origin.matrix())
                if joint.moves:
                    constants[f, step] = current
                    driver, gain, offset = tree.driver(joint.name)
                    select[f, step, own[driver]] = gain
                    offsets[f, step] = offset
                    axes[f, step] = joint.axis
                    revolute[f, step] = float(joint.type != "prismatic")
                    step, current = step + 1, np.eye(4)
            constants[f, step] = current  # the padded steps after it stay identity
        self._rotation = jnp.asarray(constants[..., :3, :3])
        self._translation = jnp.asarray(constants[..., :3, 3])
        self._axes = jnp.asarray(axes / np.linalg.norm(axes, axis=-1, keepdims=True))
        self._select, self._offsets, self._revolute = jnp.asarray(select), jnp.asarray(offsets), jnp.asarray(revolute)

    def gather(self, q):
        """Per-chain joint values (F, k) from a vector in `tree.actuated` order (padding: 0)."""
        q = jnp.asarray(q)
        return jnp.where(self.columns >= 0, q[np.maximum(self.columns, 0)], 0.0)

    def scatter(self, x, q):
        """q (tree order) with the chains' joints set from per-chain values x (F, k)."""
        valid = self.columns >= 0
        return jnp.asarray(q).at[self.columns[valid]].set(x[valid])

    def points(self, x):
        """Tip positions (F, 3) for per-chain joint values x (F, k)."""
        angles = jnp.sum(self._select * x[:, None, :], axis=-1) + self._offsets
        v = jnp.zeros((len(self.tips), 3))
        for j in range(self.m, -1, -1):
            v = jnp.sum(self._rotation[:, j] * v[:, None, :], axis=-1) + self._translation[:, j]
            if j == 0:
                break
            a, angle, rev = self._axes[:, j - 1], angles[:, j - 1 : j], self._revolute[:, j - 1 : j]
            c, s = jnp.cos(angle * rev), jnp.sin(angle * rev)
            along = jnp.sum(a * v, axis=-1, keepdims=True) * a
            rotated = v * c + jnp.cross(a, v) * s + along * (1.0 - c)
            v = rotated + (1.0 - rev) * a * angle
        return v
