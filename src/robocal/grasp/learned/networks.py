"""Networks of the learned grasp controller (seed paper 002, Sec. IV, Fig. 4), in equinox.

Both networks share one shape: an object encoder of four 3D convolutions (stride 2, ReLU) over
a voxel occupancy grid (G, G, G) in the hand frame, flattened; concatenated with the vector
inputs (joint angles, torques or a wrench); four dense layers (ReLU between them).

- estimator: inputs q_grasp, q_contact, q_d, tau_m (4 L); outputs a wrench (6: N, Nm) and a
  scale (N, kept >= 0 by a softplus), see `split_estimate`;
- predictor: inputs q_grasp, q_init and a wrench (2 L + 6); outputs joint torques (L, Nm),
  from which q_d = q_init + tau / k_p.

`encode` may be run once per grasp and `head` every control cycle (same result as `__call__`).
`Scaled` is a network with the input and output statistics of its training set (standardized
inputs, outputs in SI units), as trained and shipped; `in_precision` casts its weights. `moved`
shifts grids by whole voxels (the predictor's averaging at run time, the training's
augmentation).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

CHANNELS = (8, 16, 32, 32)
WIDTH = 256


class GraspNetwork(eqx.Module):
    convs: tuple
    dense: tuple

    def __init__(
        self,
        grid: int,
        n_inputs: int,
        n_outputs: int,
        seed: int | None,
        channels: tuple[int, ...] = CHANNELS,
        width: int = WIDTH,
    ):
        """grid: voxels per side G; n_inputs: length of the vector input; n_outputs: length of
        the output; seed: of the initial weights (`_drawn`), None for zero weights (a network to
        read serialized weights into); channels: the four convolutions' output channels; width:
        dense width."""
        rng = None if seed is None else np.random.default_rng(seed)
        sizes = (1,) + tuple(channels)
        self.convs = tuple(_drawn(partial(eqx.nn.Conv3d, sizes[i], sizes[i + 1], 3, stride=2, padding=1), rng) for i in range(len(channels)))
        side = grid
        for _ in channels:
            side = (side + 1) // 2  # kernel 3, stride 2, padding 1
        n_features = channels[-1] * side**3
        dims = (n_features + n_inputs, width, width, width, n_outputs)
        self.dense = tuple(_drawn(partial(eqx.nn.Linear, dims[i], dims[i + 1]), rng) for i in range(4))

    def encode(self, voxels: jnp.ndarray) -> jnp.ndarray:
        """Object features (F,) of an occupancy grid (G, G, G)."""
        x = voxels[None]
        for conv in self.convs:
            x = jax.nn.relu(conv(x))
        return x.reshape(-1)

    def head(self, features: jnp.ndarray, inputs: jnp.ndarray) -> jnp.ndarray:
        """Output (n_outputs,) from object features (F,) and the vector input (n_inputs,)."""
        x = jnp.concatenate([features, inputs])
        for layer in self.dense[:-1]:
            x = jax.nn.relu(layer(x))
        return self.dense[-1](x)

    def __call__(self, voxels: jnp.ndarray, inputs: jnp.ndarray) -> jnp.ndarray:
        """Output (n_outputs,) for one grid (G, G, G) and vector input (n_inputs,)."""
        return self.head(self.encode(voxels), inputs)


def _drawn(layer: Callable[..., eqx.Module], rng: np.random.Generator | None) -> eqx.Module:
    """The equinox layer `layer(key=...)` makes (a Linear or a Conv), its weight and bias drawn by
    NumPy from `rng` as equinox draws them, uniform in +-1 / sqrt(fan in), or zero without `rng`:
    equinox's own draw compiles one random-number program per weight shape (about 0.4 s each on
    a CPU, seconds of a small training run's start)."""
    shapes = eqx.filter_eval_shape(lambda: layer(key=jax.random.PRNGKey(0)))
    bound = 1.0 / np.sqrt(np.prod(shapes.weight.shape[1:]))
    draw = np.zeros if rng is None else partial(rng.uniform, -bound, bound)
    weight, bias = (jnp.asarray(draw(leaf.shape)) for leaf in (shapes.weight, shapes.bias))
    return eqx.tree_at(lambda m: (m.weight, m.bias), shapes, (weight, bias))


def estimator_network(grid: int, n_joints: int, seed: int | None, **kwargs) -> GraspNetwork:
    """Wrench estimator: inputs (4 L) q_grasp, q_contact, q_d, tau_m; outputs wrench and scale (7)."""
    return GraspNetwork(grid, 4 * n_joints, 7, seed, **kwargs)


def predictor_network(grid: int, n_joints: int, seed: int | None, **kwargs) -> GraspNetwork:
    """Torque predictor: inputs (2 L + 6) q_grasp, q_init, wrench; outputs torques (L,)."""
    return GraspNetwork(grid, 2 * n_joints + 6, n_joints, seed, **kwargs)


@partial(jax.jit, static_argnames="reach")
def moved(grids: jnp.ndarray, offsets: jnp.ndarray | np.ndarray, reach: int) -> jnp.ndarray:
    """Grids (K, G, G, G), each one's content moved by its offsets (K, 3), whole voxels along the
    grid's axes, each within [-reach, reach]: the layer at the face the content moves away from
    is repeated (edge padding), so an object touching a face stays touching it and nothing wraps
    round to the opposite face. Compiled per shape and reach; the grids' dtype is kept."""
    size = grids.shape[1:]
    padded = jnp.pad(grids, ((0, 0),) + ((reach, reach),) * 3, mode="edge")
    return jax.vmap(lambda grid, offset: jax.lax.dynamic_slice(grid, reach - offset, size))(padded, jnp.asarray(offsets, dtype=jnp.int32))


def split_estimate(output: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Wrench (..., 6) and non-negative scale (...,) in N from an estimator output (..., 7)."""
    return output[..., :6], jax.nn.softplus(output[..., 6])


TINY = np.finfo(float).tiny  # smallest positive float: a zero force is not divided by


def capped(wrench: np.ndarray, scale: np.ndarray | float) -> np.ndarray:
    """The wrench (..., 6) the estimator reports: its force shrunk to at most the scale (...,) N
    (torque with it), as the minimal-wrench loss trains it to be read."""
    force = np.sqrt(np.einsum("...i,...i->...", wrench[..., :3], wrench[..., :3]))
    return wrench * np.minimum(1.0, scale / np.maximum(force, TINY))[..., None]


class Scaled(eqx.Module):
    """A GraspNetwork with standardized inputs and scaled outputs (statistics of the training set)."""

    net: GraspNetwork
    x_mean: jnp.ndarray
    x_std: jnp.ndarray
    y_mean: jnp.ndarray
    y_std: jnp.ndarray

    def encode(self, voxels: jnp.ndarray) -> jnp.ndarray:
        """Object features (F,) of a grid (G, G, G) of any dtype (computed in the weights' own)."""
        return self.net.encode(voxels.astype(self.x_mean.dtype))

    def head(self, features: jnp.ndarray, inputs: jnp.ndarray) -> jnp.ndarray:
        """Output in SI units (n_outputs,) from features (F,) and raw inputs (n_inputs,), in the
        weights' dtype."""
        return self.net.head(features, ((inputs - self.x_mean) / self.x_std).astype(self.x_mean.dtype)) * self.y_std + self.y_mean

    def __call__(self, voxels: jnp.ndarray, inputs: jnp.ndarray) -> jnp.ndarray:
        return self.head(self.encode(voxels), inputs)


def in_precision(model: Scaled, precision: str) -> Scaled:
    """The model with every float array in `precision` ("float64" or "float32")."""
    return jax.tree.map(lambda leaf: leaf.astype(precision) if eqx.is_inexact_array(leaf) else leaf, model)
