"""The shipped networks (or those of --weights) on a dataset's test split (objects never
trained on): the predictor's torque error against the best constant (its torques averaged over
the shifted grids as the controller averages them: the weights' `predictor_shift`, or
--predictor-shift), and per grasp kind the force the minimal-wrench estimator reports (capped at
its scale, as the controller uses it) and, with --l2, an L2-trained estimator's (uncapped)
against the applied one, with the ablation's quiet-force figures (`ablation.quiet_force`).

Run from the repository root (figures in docs/grasp.md, "Learned controller"):
    .venv/bin/python examples/learned_grasp/test_split.py --data out/cpu/data1 [--l2 out/gpu/l2/estimator] [--weights DIR] [--predictor-shift K]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from robocal.grasp.learned import ablation, controller, networks
from robocal.grasp.learned.dataset import load
from robocal.grasp.learned.networks import Scaled
from robocal.grasp.learned.training import arrays, outputs


def on_split(net: Scaled, data: dict, network: str, shift: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The network's outputs (S, m') and the targets (S, m) on every sample of a loaded split,
    the outputs averaged over the grids shifted by `shift` voxels (`controller.shifted`)."""
    voxels, rows, inputs, targets = arrays(data, network)
    return np.mean([np.asarray(outputs(net, grids, rows, inputs)) for grids in controller.shifted(voxels, shift)], axis=0), targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a `grasp dataset` folder (its test split)")
    parser.add_argument("--l2", type=Path, help="the L2 estimator's training run folder (its rows left out without)")
    parser.add_argument("--weights", type=Path, default=controller.WEIGHTS, help="the networks' weights folder (default: the shipped ones)")
    parser.add_argument("--predictor-shift", type=int, default=None, help="voxels (default: the weights' own)")
    args = parser.parse_args()
    data, models = load(args.data, "test"), controller.load(args.weights)
    shift = models.predictor_shift if args.predictor_shift is None else args.predictor_shift
    kinds = data["kind"][data["grasp"]]
    print(f"test split: {len(list((args.data / 'test').glob('*.npz')))} objects, {len(data['q_init'])} grasps, {len(kinds)} samples")
    predicted, torques = on_split(models.predictor, data, "predictor", shift)
    rms = np.sqrt(np.mean((predicted - torques) ** 2))
    print(
        f"predictor (shift {shift}): torque RMS error {rms:.4f} Nm against {np.sqrt(np.mean((torques - torques.mean(axis=0)) ** 2)):.3f} Nm for the best constant (the split's own mean)"
    )
    for kind in ("power", "precision"):
        mine = kinds == kind
        print(
            f"predictor (shift {shift}), {kind}: torque RMS error {np.sqrt(np.mean((predicted[mine] - torques[mine]) ** 2)):.4f} Nm, sum of |torques|"
            f" {np.abs(predicted[mine]).sum(axis=1).mean():.3f} Nm on average (the teacher's {np.abs(torques[mine]).sum(axis=1).mean():.3f} Nm)"
        )
    estimators = [(f"minimal-wrench (t = {models.meta['estimator']['quantile']:g})", models.estimator, True)]
    if args.l2 is not None:
        estimators.append(("L2 (ablation)", controller.load_run(args.l2)[0], False))
    for label, net, cap in estimators:
        out, wrenches = on_split(net, data, "estimator")
        wrench, scale = (np.asarray(a) for a in networks.split_estimate(jnp.asarray(out)))
        reported = (networks.capped(wrench, scale) if cap else wrench)[:, :3]
        for kind in ("power", "precision"):
            mine = kinds == kind
            error = np.linalg.norm(reported[mine] - wrenches[mine, :3], axis=1)
            print(
                f"{label}, {kind}: applied {np.linalg.norm(wrenches[mine, :3], axis=1).mean():.2f} N on average, reported"
                f" {np.linalg.norm(reported[mine], axis=1).mean():.2f} N, force error median {np.median(error):.2f} N"
            )
        quiet = ablation.quiet_force(net, args.data, "test")
        print(
            f"{label}, applied force below {ablation.QUIET} N ({quiet['samples']} samples, {quiet['mean_applied']:.3f} N on average):"
            f" network force {quiet['mean_network_force']:.3f} N on average"
            + (f", capped {quiet['mean_force']:.3f} N (largest {quiet['max_force']:.2f} N)" if cap else "")
        )


if __name__ == "__main__":
    main()
