"""Procedural training objects for the learned controller: a seeded family of spheres,
cylinders (axis z) and boxes of graspable sizes (half extents 1.5-4 cm, like the evaluation
primitives), split by object into train / validation / test. The evaluation catalog
(`robocal.grasp.objects.catalog`) is never part of this family: every name starts with
`proc_`.
"""

from __future__ import annotations

import numpy as np

from robocal.grasp.objects import GraspObject, primitive

KINDS = ("sphere", "cylinder", "box")
HALF_MIN, HALF_MAX = 0.015, 0.04  # m: half extents (radii, half heights) of the family
SPLITS = (("train", 0.8), ("val", 0.1), ("test", 0.1))


def procedural_objects(seed: int, n: int) -> tuple[GraspObject, ...]:
    """n objects drawn from the family with numpy's generator seeded by `seed` (same seed, same objects)."""
    rng = np.random.default_rng(seed)
    objects = []
    for i in range(n):
        kind = KINDS[rng.integers(len(KINDS))]
        count = {"sphere": 1, "cylinder": 2, "box": 3}[kind]
        size = tuple(float(v) for v in rng.uniform(HALF_MIN, HALF_MAX, count))
        objects.append(primitive(f"proc_{seed}_{i:05d}_{kind}", kind, size))
    return tuple(objects)


def split(objects: tuple[GraspObject, ...], seed: int) -> dict[str, tuple[GraspObject, ...]]:
    """Disjoint train / val / test sets (fractions `SPLITS`) of whole objects, shuffled by `seed`."""
    order = np.random.default_rng(seed).permutation(len(objects))
    out, start = {}, 0
    for k, (name, fraction) in enumerate(SPLITS):
        stop = len(objects) if k == len(SPLITS) - 1 else start + round(fraction * len(objects))
        out[name] = tuple(objects[i] for i in order[start:stop])
        start = stop
    return out
