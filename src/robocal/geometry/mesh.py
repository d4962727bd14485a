"""Convex meshes, and signed distances between any two shapes by coal's GJK/EPA.

coal (the maintained successor of FCL) computes the signed distance (GJK when separated, EPA
when penetrating) with witness points w_a, w_b and the unit normal n from a to b, so that
w_b - w_a = distance * n. Its answer is differentiated with the envelope theorem: the distance
changes to first order as n . (velocity of w_b - velocity of w_a), each witness point moving
rigidly with its body. That is exact where the distance is differentiable (separated convex
shapes always are) and is implemented as a `jax.custom_jvp` around a host callback, so it
composes with `jax.grad`, `jax.jit` and `jax.vmap` (the callback then runs once per pose).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache, partial

import coal
import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial import ConvexHull, QhullError

from robocal.errors import RobocalError
from robocal.geometry.primitives import Box, Capsule, Sphere, Vec3

# Stopping tolerances of GJK (relative duality gap) and EPA, and their iteration caps: tight
# enough that results agree with the closed forms to rounding.
_TOLERANCE = 1e-14
_MAX_ITERATIONS = 1000


@dataclass(frozen=True)
class ConvexMesh:
    """The convex hull of `vertices` (local frame, m). Only the hull's vertices are kept, sorted,
    so meshes with the same hull compare (and hash) equal; the hash is computed once."""

    vertices: tuple[Vec3, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        points = np.asarray(self.vertices, dtype=float)
        try:
            hull = ConvexHull(points)
        except (QhullError, ValueError) as error:
            raise RobocalError(f"ConvexMesh needs at least 4 points spanning a volume: {error}") from error
        vertices = tuple(sorted(tuple(p) for p in points[hull.vertices].tolist()))
        object.__setattr__(self, "vertices", vertices)
        object.__setattr__(self, "_hash", hash(vertices))

    def __hash__(self) -> int:
        return self._hash


Shape = Sphere | Capsule | Box | ConvexMesh


@dataclass(frozen=True, eq=False)
class Contact:
    """coal's answer in world coordinates: point_b - point_a = distance * normal."""

    distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray


def mesh_closest_points(a: Shape, pose_a: np.ndarray, b: Shape, pose_b: np.ndarray) -> Contact:
    """Signed distance, witness points and normal of two posed shapes (not differentiable)."""
    geometry_a, offset_a = _coal_geometry(a)
    geometry_b, offset_b = _coal_geometry(b)
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    request.gjk_tolerance = request.epa_tolerance = _TOLERANCE
    request.gjk_max_iterations = request.epa_max_iterations = _MAX_ITERATIONS
    result = coal.DistanceResult()
    transform_a = _transform(np.asarray(pose_a) @ offset_a)
    transform_b = _transform(np.asarray(pose_b) @ offset_b)
    coal.distance(geometry_a, transform_a, geometry_b, transform_b, request, result)
    point_a, point_b = result.getNearestPoint1().copy(), result.getNearestPoint2().copy()
    return Contact(result.min_distance, point_a, point_b, result.normal.copy())


def mesh_signed_distance(a: Shape, pose_a: jax.Array, b: Shape, pose_b: jax.Array) -> jax.Array:
    """Signed distance (m) of any two shapes, meshes included, by coal; differentiable in both
    poses (4x4, local to world). Like `signed_distance`, the shapes are static arguments."""
    return _signed_distance(a, b, pose_a, pose_b)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _signed_distance(a: Shape, b: Shape, pose_a: jax.Array, pose_b: jax.Array) -> jax.Array:
    return _witnesses(a, b, pose_a, pose_b)[0]


@_signed_distance.defjvp
def _signed_distance_jvp(a: Shape, b: Shape, primals: tuple, tangents: tuple) -> tuple[jax.Array, jax.Array]:
    pose_a, pose_b = primals
    dpose_a, dpose_b = tangents
    distance, local_a, local_b, normal = _witnesses(a, b, pose_a, pose_b)
    velocity_a = dpose_a[:3, :3] @ local_a + dpose_a[:3, 3]
    velocity_b = dpose_b[:3, :3] @ local_b + dpose_b[:3, 3]
    return distance, normal @ (velocity_b - velocity_a)


def _witnesses(a: Shape, b: Shape, pose_a: jax.Array, pose_b: jax.Array) -> tuple[jax.Array, ...]:
    """Distance, witness points in their bodies' local frames, and world normal, from coal."""

    def host(pose_a: np.ndarray, pose_b: np.ndarray) -> tuple[np.ndarray, ...]:
        contact = mesh_closest_points(a, pose_a, b, pose_b)
        local_a = pose_a[:3, :3].T @ (contact.point_a - pose_a[:3, 3])
        local_b = pose_b[:3, :3].T @ (contact.point_b - pose_b[:3, 3])
        return tuple(np.asarray(x, dtype=pose_a.dtype) for x in (contact.distance, local_a, local_b, contact.normal))

    dtype = jnp.result_type(pose_a, pose_b)
    shapes = [jax.ShapeDtypeStruct(shape, dtype) for shape in ((), (3,), (3,), (3,))]
    return jax.pure_callback(host, shapes, pose_a.astype(dtype), pose_b.astype(dtype), vmap_method="sequential")


def _transform(pose: np.ndarray) -> coal.Transform3s:
    return coal.Transform3s(np.ascontiguousarray(pose[:3, :3]), np.ascontiguousarray(pose[:3, 3]))


@lru_cache(maxsize=256)
def _coal_geometry(shape: Shape) -> tuple[coal.CollisionGeometry, np.ndarray]:
    """coal's geometry for a shape, and the pose of coal's frame in the shape's local frame."""
    offset = np.eye(4)
    match shape:
        case Sphere(radius=radius):
            return coal.Sphere(radius), offset
        case Box(half_extents=half):
            return coal.Box(*(2.0 * np.asarray(half))), offset
        case Capsule(p0=p0, p1=p1, radius=radius):
            axis = np.subtract(p1, p0)
            length = float(np.linalg.norm(axis))
            offset[:3, 3] = 0.5 * np.add(p0, p1)
            if length == 0.0:
                return coal.Sphere(radius), offset
            offset[:3, :3] = _frame_with_z(axis / length)  # coal's capsule lies along its z axis
            return coal.Capsule(radius, length), offset
        case ConvexMesh(vertices=vertices):
            hull = ConvexHull(np.asarray(vertices))
            points = coal.StdVec_Vec3s()
            for point in hull.points:
                points.append(point)
            triangles = coal.StdVec_Triangle()
            for i, j, k in hull.simplices.tolist():
                triangles.append(coal.Triangle(i, j, k))
            return coal.Convex(points, triangles), offset
    raise TypeError(f"no coal geometry for {type(shape).__name__}")


def _frame_with_z(z: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector z."""
    helper = np.eye(3)[np.argmin(np.abs(z))]
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])
