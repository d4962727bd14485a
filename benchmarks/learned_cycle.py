"""Real-time check of the learned grasp controller (seed paper 002, Sec. IV): time of one
control cycle = the wrench estimator network + the torque predictor network (their dense
layers, `LearnedEstimator.estimate` + `LearnedPredictor.offsets`, batch 1, in the weights' dtype (the shipped: float32), JAX on one
CPU core), the object encoding (both networks' four 3D convolutions) done once per grasp in
`start` and timed separately. Target: 1 ms per cycle (the paper: 6 ms on a V100). The
predictor averages over its grid shifted `--predictor-shift` voxels (the shipped weights' own by
default: 6 grids encoded, 6 heads a cycle in one batched call).

Networks of the paper's shape (grid 48 by default, channels 8-16-32-32, 256 wide): the shipped
weights when their grid matches, otherwise zero weights of that shape (the time does not
depend on the values). Inputs: a random voxel grid, joint angles and torques drifting from cycle
to cycle.

Usage: .venv/bin/python benchmarks/learned_cycle.py [--grid 48] [--cycles 2000] [--seed 0] [--predictor-shift K]
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_ENABLE_X64", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from robocal.grasp.learned.controller import LearnedEstimator, LearnedPredictor, shifted, skeleton  # noqa: E402
from robocal.grasp.learned.training import TrainConfig  # noqa: E402
from timing import cpu_name  # noqa: E402

TARGET = 1e-3  # s per cycle
L = 12  # DLR-Hand II actuated joints


def networks(grid: int):
    """Estimator, predictor of the paper's shape and the predictor's shift: the shipped weights
    if their grid is `grid`."""
    from robocal.grasp.learned.controller import WEIGHTS, load

    if (WEIGHTS / "learned.json").exists():
        models = load()
        if models.observation.grid == grid:
            return models.estimator, models.predictor, models.predictor_shift, "shipped weights"
    nets = [skeleton(TrainConfig(network=name), grid, L) for name in ("estimator", "predictor")]
    return *nets, 0, "zero weights"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", type=int, default=48)
    parser.add_argument("--cycles", type=int, default=2000)
    parser.add_argument("--grasps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--predictor-shift", type=int, default=None, help="default: the shipped weights' own")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {cpu_name()}, jax {jax.__version__}, one core (affinity {sorted(os.sched_getaffinity(0))})")
    estimator_net, predictor_net, shift, origin = networks(args.grid)
    shift = shift if args.predictor_shift is None else args.predictor_shift
    rng = np.random.default_rng(args.seed)
    situation = SimpleNamespace(grasp=SimpleNamespace(q_grasp=rng.uniform(0, 1.5, L), q_init=rng.uniform(0, 1.5, L)), hand=SimpleNamespace(effort=2.0))
    encodings, cycles = [], []
    for g in range(args.grasps + 1):  # the first grasp compiles: not counted
        voxels = (rng.uniform(size=(args.grid,) * 3) > 0.9).astype(np.uint8)
        estimator, predictor = LearnedEstimator(estimator_net, voxels), LearnedPredictor(predictor_net, voxels, shift)
        start = time.perf_counter()
        estimator.start(situation)
        predictor.start(situation)
        encoded = time.perf_counter() - start
        q_d, tau = situation.grasp.q_init.copy(), np.zeros(L)
        times = []
        for _ in range(args.cycles):
            q_m = q_d + rng.normal(scale=0.01, size=L)
            tau = tau + rng.normal(scale=0.01, size=L)
            start, cpu = time.perf_counter(), time.process_time()
            wrench = estimator.estimate(q_d, q_m, tau)
            q_d = situation.grasp.q_init + predictor.offsets(wrench)
            times.append((time.perf_counter() - start, time.process_time() - cpu))
        if g:
            encodings.append(encoded)
            cycles += times
    wall, cpu = np.array(cycles).T
    median, q99 = statistics.median(wall), float(np.quantile(wall, 0.99))
    print(
        f"grid {args.grid}^3, {origin}, predictor shift {shift} ({len(shifted(voxels, shift))} grids): encoding once per grasp {statistics.median(encodings) * 1e3:.2f} ms (median of {args.grasps} grasps)"
    )
    print(
        f"control cycle (estimator + predictor, batch 1): median {median * 1e3:.3f} ms, 99th percentile {q99 * 1e3:.3f} ms over {len(cycles)} cycles; target {TARGET * 1e3:.0f} ms -> ratio {median / TARGET:.2f}"
    )
    print(
        f"CPU time of this process per cycle (what the cycle costs on a core shared with other work): median {statistics.median(cpu) * 1e3:.3f} ms, mean {cpu.mean() * 1e3:.3f} ms"
    )


if __name__ == "__main__":
    main()
