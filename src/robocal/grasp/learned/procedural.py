"""Procedural training objects for the learned controller: a seeded family of graspable shapes,
split by object into train / validation / test. The evaluation catalog
(`robocal.grasp.objects.catalog`) is never part of this family: every name starts with `proc_`
and ends with the object's kind (`KINDS`):

- sphere, cylinder (axis z), box: MuJoCo primitives;
- ellipsoid: semi-axes a, b, c;
- superquadric: the superellipsoid with semi-axes a, b, c and exponents eps1 (latitude), eps2
  (longitude) in `EPS_MIN`-1 (box-like to ellipsoid-like; exponents up to 2 keep it convex,
  above 2 it is not);
- union: two primitives (sphere, cylinder or box) of half extents `PART_MIN`-`PART_MAX`, the
  second one turned at random with its centre inside the first (so they overlap).

Every half extent (radius, half height, semi-axis; of the whole union) lies in
`HALF_MIN`-`HALF_MAX` (1.5-4 cm, like the evaluation primitives). The last three kinds are
inline meshes (`objects.inline_mesh`): points on the surface (`surface_points`), simulated as
their convex hull like every mesh object, so a union's concave parts are filled, like the YCB
meshes'. The curved surfaces are sampled on an (eta, omega) grid of `GRID` steps per half turn,
which includes the axis extremes (the hull keeps the half extents exactly) and loses less
than 1 - cos^3(pi / (GRID sqrt 2)) (2.9 %) of an ellipsoid's volume (1.6 % in fact).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from robocal.grasp.objects import GraspObject, inline_mesh, primitive

KINDS = ("sphere", "cylinder", "box", "ellipsoid", "superquadric", "union")
HALF_MIN, HALF_MAX = 0.015, 0.04  # m: half extents (radii, half heights, semi-axes) of the family
PART_MIN, PART_MAX = 0.015, 0.03  # m: half extents of a union's two parts
EPS_MIN = 0.3  # superquadric exponents eps1, eps2 are drawn in [EPS_MIN, 1]
GRID = 16  # surface grid steps per half turn (eta in [-pi/2, pi/2]; omega in [-pi, pi) has 2 GRID)
SPLITS = (("train", 0.8), ("val", 0.1), ("test", 0.1))
_SIZE_COUNT = {"sphere": 1, "cylinder": 2, "box": 3}


def surface_points(kind: str, size: tuple[float, ...]) -> np.ndarray:
    """(V, 3) points whose convex hull is the shape, centred at the origin: "box" (half extents:
    its corners), "cylinder" (radius, half height: two rings of 2 `GRID` points), "sphere"
    (radius), "ellipsoid" (a, b, c) or "superquadric" (a, b, c, eps1, eps2): the superellipsoid
    x = a C(eta)^eps1 C(omega)^eps2, y = b C(eta)^eps1 S(omega)^eps2, z = c S(eta)^eps1 (signed
    powers) on the grid of `GRID` (module docstring)."""
    omega = np.linspace(-np.pi, np.pi, 2 * GRID, endpoint=False)
    if kind == "box":
        return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * np.asarray(size)
    if kind == "cylinder":
        r, h = size
        ring = np.column_stack([r * np.cos(omega), r * np.sin(omega)])
        return np.vstack([np.column_stack([ring, np.full(len(ring), z)]) for z in (-h, h)])
    half, (eps1, eps2) = {"sphere": (size * 3, (1.0, 1.0)), "ellipsoid": (size, (1.0, 1.0)), "superquadric": (size[:3], size[3:])}[kind]
    eta = np.linspace(-np.pi / 2, np.pi / 2, GRID + 1)[1:-1]
    e, w = (g.ravel() for g in np.meshgrid(eta, omega, indexing="ij"))

    def power(x, p):
        return np.sign(x) * np.abs(x) ** p

    ring = power(np.cos(e), eps1)
    unit = np.column_stack([ring * power(np.cos(w), eps2), ring * power(np.sin(w), eps2), power(np.sin(e), eps1)])
    return np.vstack([unit, [[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]]]) * np.asarray(half)


def union_parts(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The surface points of a union's two parts (kinds sphere / cylinder / box, half extents
    `PART_MIN`-`PART_MAX`), in the first part's frame: the second part turned at random, its
    centre at 0.3-0.9 of the way from the first's centre to its surface (so they overlap); drawn
    again until the union's half extents are at most `HALF_MAX` (they are at least the first
    part's, `PART_MIN`)."""
    while True:
        parts = []
        for _ in range(2):
            kind = ("sphere", "cylinder", "box")[rng.integers(3)]
            parts.append((kind, tuple(float(v) for v in rng.uniform(PART_MIN, PART_MAX, _SIZE_COUNT[kind]))))
        turn = Rotation.random(random_state=rng).as_matrix()
        offset = rng.uniform(0.3, 0.9) * primitive("part", *parts[0]).ray_exit(np.zeros(3), rng.normal(size=3))[0]
        first, second = surface_points(*parts[0]), surface_points(*parts[1]) @ turn.T + offset
        if np.max(np.ptp(np.vstack([first, second]), axis=0)) <= 2 * HALF_MAX:
            return first, second


def _draw(rng: np.random.Generator, name: str, kind: str) -> GraspObject:
    if kind in _SIZE_COUNT:
        return primitive(name, kind, tuple(float(v) for v in rng.uniform(HALF_MIN, HALF_MAX, _SIZE_COUNT[kind])))
    if kind == "union":
        return inline_mesh(name, np.vstack(union_parts(rng)), "procedural union of two primitives")
    half = tuple(float(v) for v in rng.uniform(HALF_MIN, HALF_MAX, 3))
    shape = half if kind == "ellipsoid" else half + tuple(float(v) for v in rng.uniform(EPS_MIN, 1.0, 2))
    return inline_mesh(name, surface_points(kind, shape), f"procedural {kind} {shape}")


def procedural_object(seed: int, index: int) -> GraspObject:
    """Object `index` of the family of `seed`, drawn from its own generator (keyed by (seed,
    index): any one object is made without the others), each kind (`KINDS`) with the same
    probability; the same object, bit for bit, for the same key."""
    rng = np.random.default_rng([seed, index])
    kind = KINDS[rng.integers(len(KINDS))]
    return _draw(rng, f"proc_{seed}_{index:05d}_{kind}", kind)


def procedural_objects(seed: int, n: int) -> tuple[GraspObject, ...]:
    """The first n objects of the family of `seed`."""
    return tuple(procedural_object(seed, i) for i in range(n))


def split_indices(n: int, seed: int) -> dict[str, tuple[int, ...]]:
    """Disjoint train / val / test sets (fractions `SPLITS`) of the object indices 0..n-1, shuffled by `seed`."""
    order = np.random.default_rng(seed).permutation(n)
    out, start = {}, 0
    for k, (name, fraction) in enumerate(SPLITS):
        stop = n if k == len(SPLITS) - 1 else start + round(fraction * n)
        out[name] = tuple(int(i) for i in order[start:stop])
        start = stop
    return out
