"""The bodies of a contact search: links with geometry, the body pairs that can touch, and every
pair's signed distance from the link poses in one batched call.

Capsules and spheres (all of the DLR-Hand II geometry) are evaluated as swept spheres in one
batched call, other primitives through `robocal.geometry.distance.signed_distance`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.geometry.distance import signed_distance
from robocal.geometry.links import LinkShape
from robocal.geometry.primitives import Box, Capsule, Sphere
from robocal.geometry.segments import segment_segment_distance
from robocal.kinematics.tree import KinematicTree

Point = tuple[float, float, float]
SweptShape = tuple[int, Point, Point, float]  # link, p0, p1 (link frame), radius


@dataclass(frozen=True)
class Scene:
    """Links with geometry, the body pairs that can touch, and their distances from link poses.

    Hashable, so that it can be a static argument of the compiled functions.
    """

    links: tuple[str, ...]
    pairs: tuple[tuple[int, int], ...]  # link indices of every body pair that can touch
    swept: tuple[SweptShape, ...]
    swept_pairs: tuple[tuple[int, int, int], ...]  # swept shape a, swept shape b, body pair
    generic: tuple[tuple[LinkShape, int, LinkShape, int, int], ...]  # shape, link, shape, link, body pair
    bounds: tuple[tuple[Point, float], ...]  # per link: bounding sphere (center in link frame, radius)

    def index(self, a: str, b: str) -> int:
        ia, ib = self.links.index(a), self.links.index(b)
        return self.pairs.index((min(ia, ib), max(ia, ib)))

    def distances(self, poses):
        """(len(pairs),) minimum signed distance per body pair, from the link poses (L, 4, 4)."""
        values, owner = [], []
        if self.swept_pairs:
            link = np.array([s[0] for s in self.swept])
            p0, p1 = np.array([s[1] for s in self.swept]), np.array([s[2] for s in self.swept])
            radius = np.array([s[3] for s in self.swept])
            rot, pos = poses[link, :3, :3], poses[link, :3, 3]
            w0 = jnp.einsum("sij,sj->si", rot, p0) + pos
            w1 = jnp.einsum("sij,sj->si", rot, p1) + pos
            ia, ib, pair = (np.array(c) for c in zip(*self.swept_pairs))
            values.append(segment_segment_distance(w0[ia], w1[ia], w0[ib], w1[ib]) - radius[ia] - radius[ib])
            owner.extend(pair)
        for sa, la, sb, lb, pair in self.generic:
            values.append(signed_distance(sa.primitive, sa.pose(poses[la]), sb.primitive, sb.pose(poses[lb]))[None])
            owner.append(pair)
        stacked = jnp.concatenate([*values, jnp.array([jnp.inf])])
        # (pairs, most shape pairs of one body pair) gather matrix, padded with the trailing inf
        slots = [[k for k, p in enumerate(owner) if p == i] for i in range(len(self.pairs))]
        width = max(len(s) for s in slots)
        gather = np.array([s + [len(owner)] * (width - len(s)) for s in slots])
        return jnp.min(stacked[gather], axis=1)

    def centers(self, poses):
        """(L, 3) bounding-sphere centers of the links in the world frame."""
        local = np.array([c for c, _ in self.bounds])
        return jnp.einsum("lij,lj->li", poses[:, :3, :3], local) + poses[:, :3, 3]


def on_one_chain(tree: KinematicTree, a: str, b: str) -> bool:
    """Whether one of the two links is on the other's chain (an ancestor of it, or itself)."""
    ca, cb = set(tree.chain(a)), set(tree.chain(b))
    return ca <= cb or cb <= ca


def _point(values) -> Point:
    x, y, z = (float(v) for v in values)
    return (x, y, z)


def _shape_ball(shape: LinkShape) -> tuple[np.ndarray, float]:
    """A sphere (center in the link frame, radius) that contains the shape."""
    origin = np.asarray(shape.origin, dtype=float)
    prim = shape.primitive
    if isinstance(prim, Capsule):
        ends = origin[:3, :3] @ np.array([prim.p0, prim.p1]).T + origin[:3, 3:4]
        return ends.mean(axis=1), 0.5 * float(np.linalg.norm(ends[:, 1] - ends[:, 0])) + prim.radius
    if isinstance(prim, Sphere):
        return origin[:3, 3], prim.radius
    if isinstance(prim, Box):
        return origin[:3, 3], float(np.linalg.norm(prim.half_extents))
    raise RobocalError(f"no bounding sphere for {type(prim).__name__}")


def _touching_pairs(tree: KinematicTree, links: tuple[str, ...]) -> list[tuple[int, int]]:
    """The link index pairs that can touch: a body and its chain's descendants are not checked
    against each other, nor bodies that no joint moves relative to each other."""
    pairs = []
    for i, j in itertools.combinations(range(len(links)), 2):
        between = set(tree.chain(links[i])) ^ set(tree.chain(links[j]))
        if not on_one_chain(tree, links[i], links[j]) and any(tree.joints[k].moves for k in between):
            pairs.append((i, j))
    return pairs


def _bounding_sphere(shapes: tuple[LinkShape, ...]) -> tuple[Point, float]:
    """A sphere (center in the link frame, radius) that contains every shape of a link."""
    balls = [_shape_ball(shape) for shape in shapes]
    center = np.mean([c for c, _ in balls], axis=0)
    return _point(center), float(max(np.linalg.norm(c - center) + r for c, r in balls))


def build_scene(tree: KinematicTree, geometry: dict[str, tuple[LinkShape, ...]]) -> Scene:
    """The scene of the links of `tree` that have geometry."""
    links = tuple(link for link in tree.links if link in geometry)
    pairs = _touching_pairs(tree, links)
    swept: list[SweptShape] = []
    swept_index: dict[tuple[int, int], int] = {}
    for li, link in enumerate(links):
        for k, shape in enumerate(geometry[link]):
            if isinstance(shape.primitive, (Sphere, Capsule)):
                origin = np.asarray(shape.origin, dtype=float)
                ends = [(0.0, 0.0, 0.0)] * 2 if isinstance(shape.primitive, Sphere) else [shape.primitive.p0, shape.primitive.p1]
                p0, p1 = (_point(origin[:3, :3] @ np.asarray(e) + origin[:3, 3]) for e in ends)
                swept_index[(li, k)] = len(swept)
                swept.append((li, p0, p1, float(shape.primitive.radius)))
    swept_pairs, generic = [], []
    for pi, (i, j) in enumerate(pairs):
        for (ka, sa), (kb, sb) in itertools.product(enumerate(geometry[links[i]]), enumerate(geometry[links[j]])):
            if (i, ka) in swept_index and (j, kb) in swept_index:
                swept_pairs.append((swept_index[(i, ka)], swept_index[(j, kb)], pi))
            else:
                generic.append((sa, i, sb, j, pi))
    bounds = tuple(_bounding_sphere(geometry[link]) for link in links)
    return Scene(links, tuple(pairs), tuple(swept), tuple(swept_pairs), tuple(generic), bounds)
