"""The seed's Fig. 9 for the shipped learned estimator: one precision grasp of a catalog box
(never trained on), 5 N pushes through its centre of mass in 19 x 36 directions, the force each
estimator reports for the measured torques (`robocal.grasp.learned.ablation.sphere_map`):
the shipped minimal-wrench estimator beside an estimator trained with plain L2 (the ablation,
a `grasp train --loss l2` run folder; without --l2 the shipped one alone), and what each reports
with no force at all.

Run from the repository root (figure and figures in docs/grasp.md, "Learned controller"):
    .venv/bin/python examples/learned_grasp/sphere_map.py [--l2 out/gpu/l2/estimator] --out docs/grasp_sphere_map.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robocal.grasp.figures import plot_sphere_maps
from robocal.grasp.grasps import generate_grasps
from robocal.grasp.hand import Hand
from robocal.grasp.learned import ablation, controller
from robocal.grasp.objects import get
from robocal.grasp.simulation import situation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--l2", type=Path, help="the L2 estimator's training run (a `grasp train --loss l2` estimator folder)")
    parser.add_argument("--object", default="box_60x40x100")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    hand, obj, models = Hand.load(), get(args.object), controller.load()
    grasp = next(g for g in generate_grasps(hand, obj, seed=args.seed, n_power=0, n_precision=1, until_ok=True) if g.ok)
    scene = situation(hand, obj, grasp)
    voxels = controller.object_voxels(models, hand, obj, grasp)
    estimators = [("minimal-wrench loss (shipped)", models.estimator, True)]
    if args.l2 is not None:
        estimators.append(("plain L2 loss (no trained scale)", controller.load_run(args.l2)[0], False))
    directions = ablation.force_directions()
    maps = {}
    for label, estimator, cap in estimators:
        reported = ablation.sphere_map(estimator, models.predictor, scene, voxels, directions, cap=cap)
        maps[label] = reported[:-1].reshape(directions.shape[:2])
        held = maps[label][np.isfinite(maps[label])]
        print(
            f"{label}: {held.size} of {maps[label].size} directions held; reported force for 5 N pushes "
            f"mean {held.mean():.2f} N, median {np.median(held):.2f} N, max {held.max():.2f} N; with no force {reported[-1]:.3f} N"
        )
    plot_sphere_maps(directions, maps, args.out, ablation.FORCE)
    print(f"{obj.name}, precision grasp {grasp.attempt}; wrote {args.out}")


if __name__ == "__main__":
    main()
