"""Training throughput of the learned grasp networks (`robocal grasp train`): optimizer steps per
second of the compiled step (`training.training_step`: minibatch drawn on the device, forward,
backward, Adam) for each `--per-grid` (samples of one grasp per minibatch, its object grid
encoded once for them), with the ratio to per_grid 1 (one grid encoded per sample) in the same
process.

The split is synthetic, of the dataset's shapes (grids of G^3 voxels, 40 samples per grasp, the
estimator's 48 inputs and 6 targets or the predictor's 30 and 12): the time does not depend on
the values. The paper's network shape (channels 8-16-32-32, 256 wide). On whatever device JAX
picks (a GPU where there is one), on all of a CPU's cores.

Usage: .venv/bin/python benchmarks/learned_training.py [--network estimator] [--grid 48] [--batch 256]
       [--per-grid 1,8,32] [--steps 5] [--precision float32]
"""

from __future__ import annotations

import argparse
import platform
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from robocal.grasp.learned import training
from timing import cpu_name

SAMPLES_PER_GRASP = 40  # the dataset's teacher samples per grasp
L = 12  # DLR-Hand II actuated joints


def synthetic_split(network: str, grid: int, grasps: int, precision: str, seed: int = 0) -> tuple:
    """(voxels, grid rows, inputs, targets) on the device, of `grasps` grasps."""
    rng = np.random.default_rng(seed)
    n_in, n_out = (4 * L, 6) if network == "estimator" else (2 * L + 6, L)
    rows = np.repeat(np.arange(grasps), SAMPLES_PER_GRASP)
    voxels = (rng.uniform(size=(grasps, grid, grid, grid)) > 0.9).astype(np.uint8)
    return training.on_device((voxels, rows, rng.normal(size=(len(rows), n_in)), rng.normal(size=(len(rows), n_out))), precision)


def steps_per_second(config: training.TrainConfig, split: tuple, steps: int) -> tuple[float, float]:
    """(compile and first step in s, warm steps per second) of `config`'s training step."""
    model = training.new_network(config, split[0].shape[1], np.asarray(split[2]), np.asarray(split[3]))
    optimizer, step = training.training_step(training.loss_of(config), config.learning_rate, config.batch, config.per_grid)
    state, key = optimizer.init(eqx.filter(model, eqx.is_array)), jax.random.PRNGKey(0)
    start = time.perf_counter()
    model, state, value = step(model, state, split, key, jnp.uint32(0))
    value.block_until_ready()
    first = time.perf_counter() - start
    start = time.perf_counter()
    for number in range(1, steps + 1):
        model, state, value = step(model, state, split, key, jnp.uint32(number))
    value.block_until_ready()
    return first, steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", choices=("estimator", "predictor"), default="estimator")
    parser.add_argument("--grid", type=int, default=48)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--per-grid", default="1,8,32")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--grasps", type=int, default=400)
    parser.add_argument("--precision", choices=("float32", "float64"), default="float32")
    args = parser.parse_args()
    device = jax.devices()[0]
    print(f"machine: {platform.platform()}, {cpu_name()}, jax {jax.__version__}, device {device.device_kind} ({device.platform})")
    print(f"{args.network}, grid {args.grid}, batch {args.batch}, {args.precision}, {args.grasps} synthetic grasps, {args.steps} timed steps each")
    split = synthetic_split(args.network, args.grid, args.grasps, args.precision)
    base = None
    for per_grid in (int(k) for k in args.per_grid.split(",")):
        config = training.TrainConfig(network=args.network, batch=args.batch, per_grid=per_grid, precision=args.precision)
        first, rate = steps_per_second(config, split, args.steps)
        base = base or rate
        print(
            f"per_grid {per_grid:3d}: {args.batch // per_grid:4d} grids per step, compile + first step {first:6.2f} s, "
            f"{rate:8.2f} steps/s ({rate * args.batch:9.0f} samples/s), ratio to per_grid {args.per_grid.split(',')[0]}: {rate / base:5.2f}"
        )


if __name__ == "__main__":
    main()
