"""Closed-form signed distances: known geometry, brute force, finite differences, jit/vmap."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from geometry_helpers import (
    BOX,
    PAIRS,
    RANDOM_ROWS,
    SHAPES,
    SPHERE,
    closed_form,
    closed_form_batch,
    configurations,
    random_pose,
    surface_samples,
)
from scipy.spatial import ConvexHull, cKDTree
from scipy.spatial.transform import Rotation

import robocal  # noqa: F401  (float64)
from robocal.errors import RobocalError
from robocal.geometry import Box, Capsule, Sphere, signed_distance

FINGERTIP = Capsule((-0.01, 0.0, 0.0), (0.01, 0.0, 0.0), 0.001)  # 20 mm core, 1 mm radius
CUBE = Box((0.01, 0.01, 0.01))


def _pose(translation=(0.0, 0.0, 0.0), rotvec=(0.0, 0.0, 0.0)) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    pose[:3, 3] = translation
    return pose


# --- capsule pairs with known geometry -------------------------------------------------------


@pytest.mark.parametrize("angle", [0.0, 1e-6, 1e-3, 1e-2])
@pytest.mark.parametrize("frame_seed", [None, 7])
def test_near_parallel_capsules_are_exact(angle: float, frame_seed: int | None) -> None:
    """Core b is core a lifted 5 mm along z and turned by `angle` about the z axis through both
    midpoints, their common perpendicular: the closest points are the midpoints for any angle
    (any other pair adds an in-plane offset), so the core distance is exactly 5 mm and the
    signed distance 5 - 2 * 1 mm, also seen from a random frame 0.1 m away. Rounding of the
    coordinates is ~1e-17 m."""
    frame = np.eye(4) if frame_seed is None else random_pose(np.random.default_rng(frame_seed), 0.1)
    pose_b = _pose((0.0, 0.0, 0.005), (0.0, 0.0, angle))
    assert abs(closed_form(FINGERTIP, frame, FINGERTIP, frame @ pose_b) - 0.003) <= 1e-12


@pytest.mark.parametrize(
    ("offset", "expected_core"),
    [
        ((0.0, 0.0, 0.005), 0.005),  # parallel, fully overlapping
        ((0.015, 0.0, 0.005), 0.005),  # parallel, partly overlapping
        ((0.03, 0.0, 0.0), 0.01),  # collinear, 10 mm gap between the ends
        ((0.025, 0.003, 0.004), np.hypot(0.005, 0.005)),  # parallel, ends 5 mm apart axially, 5 mm laterally
    ],
)
def test_parallel_capsules(offset: tuple[float, float, float], expected_core: float) -> None:
    assert abs(closed_form(FINGERTIP, np.eye(4), FINGERTIP, _pose(offset)) - (expected_core - 0.002)) <= 1e-15


# --- known values for every pair, penetration included ---------------------------------------


@pytest.mark.parametrize(
    ("a", "pose_a", "b", "pose_b", "expected"),
    [
        (SPHERE, _pose(), Sphere(0.002), _pose((0.006, 0.0, 0.008)), 0.0),  # touching
        (SPHERE, _pose(), Sphere(0.002), _pose(), -0.01),
        (SPHERE, _pose((0.004, 0.0, 0.0)), FINGERTIP, _pose((0.0, 0.0, 0.003)), -0.006),  # center 3 mm off the core
        (SPHERE, _pose((0.02, 0.003, 0.004)), FINGERTIP, _pose(), 0.005 * np.sqrt(5) - 0.009),  # beyond an end
        (FINGERTIP, _pose(), FINGERTIP, _pose(rotvec=(0.0, 0.0, np.pi / 2)), -0.002),  # crossing cores
        (Sphere(0.001), _pose((0.0, 0.0, 0.003)), BOX, _pose(), -0.004 - 0.001),  # 4 mm below the +z face
        (Sphere(0.001), _pose((0.013, 0.019, 0.007)), BOX, _pose(), 0.005 - 0.001),  # nearest: a corner
        (FINGERTIP, _pose((0.002, 0.0, 0.0), (0.0, np.pi / 2, 0.0)), BOX, _pose(), -0.008 - 0.001),  # out via +x
        (FINGERTIP, _pose((0.0, 0.0, 0.009)), BOX, _pose(), 0.002 - 0.001),  # parallel to the +z face
        (BOX, _pose(), BOX, _pose((0.018, 0.0, 0.001)), -0.002),  # faces overlap 2 mm along x
        (BOX, _pose(), BOX, _pose((0.03, 0.04, 0.0)), np.hypot(0.01, 0.01)),  # edge to edge
        (BOX, _pose(), BOX, _pose(), -0.014),  # coincident: out along z
        # cubes turned 45 deg about x (top ridge along x) and about y (bottom ridge along y),
        # stacked: only the crossing ridges' middles are closest (edge-edge), 3 mm apart / 2 mm deep
        (CUBE, _pose(rotvec=(np.pi / 4, 0, 0)), CUBE, _pose((0, 0, 0.02 * np.sqrt(2) + 0.003), (0, np.pi / 4, 0)), 0.003),
        (CUBE, _pose(rotvec=(np.pi / 4, 0, 0)), CUBE, _pose((0, 0, 0.02 * np.sqrt(2) - 0.002), (0, np.pi / 4, 0)), -0.002),
        (  # a cube turned 45 deg about z: one vertical edge pokes 0.5 mm into the +x face
            BOX,
            _pose(),
            Box((0.005, 0.005, 0.005)),
            _pose((0.0095 + 0.005 * np.sqrt(2), 0.0, 0.0), (0.0, 0.0, np.pi / 4)),
            -0.0005,
        ),
    ],
)
def test_known_signed_distances(a, pose_a, b, pose_b, expected: float) -> None:
    """Hand-computed values, both argument orders. Values are ~1e-2 m; rounding ~1e-17 m."""
    assert abs(closed_form(a, pose_a, b, pose_b) - expected) <= 1e-15
    assert abs(closed_form(b, pose_b, a, pose_a) - expected) <= 1e-15


def test_point_core_capsule_equals_sphere() -> None:
    capsule = Capsule((0.02, 0.001, 0.0), (0.02, 0.001, 0.0), 0.003)
    pose_b = random_pose(np.random.default_rng(5), 0.01)
    for other in SHAPES.values():
        expected = closed_form(Sphere(0.003), _pose((0.02, 0.001, 0.0)), other, pose_b)
        assert closed_form(capsule, np.eye(4), other, pose_b) == pytest.approx(expected, abs=1e-16)


# --- brute force --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name_a", "name_b"), PAIRS)
def test_separated_distance_matches_surface_samples(name_a: str, name_b: str) -> None:
    """The closest pair of surface samples is no closer than the shapes, and at most the two
    covering radii farther: D <= D_samples <= D + cover_a + cover_b."""
    a, b = SHAPES[name_a], SHAPES[name_b]
    for pose_a, pose_b in configurations(name_a, name_b, 1, True, 3):
        points_a, cover_a = surface_samples(a, pose_a, 4e-4)
        points_b, cover_b = surface_samples(b, pose_b, 4e-4)
        sampled = cKDTree(points_b).query(points_a)[0].min()
        distance = closed_form(a, pose_a, b, pose_b)
        assert distance <= sampled + 1e-15
        assert sampled <= distance + cover_a + cover_b


@pytest.mark.parametrize(("name_a", "name_b"), [("sphere", "box"), ("capsule", "box"), ("box", "box")])
def test_penetration_depth_matches_minkowski_hull(name_a: str, name_b: str) -> None:
    """With overlapping polytope cores (a point, a segment or a box) the core depth is the
    distance from the origin, inside their Minkowski difference A - B, to its boundary: the
    smallest facet offset of the convex hull of all vertex differences (Qhull). This does not
    enumerate separating axes, so it checks that none is missing."""
    a, b = SHAPES[name_a], SHAPES[name_b]
    radius = getattr(a, "radius", 0.0)
    rng = np.random.default_rng(6)
    checked = 0
    while checked < 4:
        pose_a, pose_b = random_pose(rng, 0.005), random_pose(rng, 0.015)
        distance = closed_form(a, pose_a, b, pose_b)
        if distance + radius > -1e-3:
            continue
        difference = (_core_vertices(a, pose_a)[:, None] - _core_vertices(b, pose_b)[None]).reshape(-1, 3)
        offsets = ConvexHull(difference).equations[:, 3]  # n . x + offset <= 0 inside, |n| = 1
        assert distance == pytest.approx(np.max(offsets) - radius, abs=1e-15)
        checked += 1


def _core_vertices(shape, pose: np.ndarray) -> np.ndarray:
    match shape:
        case Sphere():
            local = np.zeros((1, 3))
        case Capsule(p0=p0, p1=p1):
            local = np.array([p0, p1])
        case Box(half_extents=half):
            local = np.array(list(itertools.product((-1.0, 1.0), repeat=3))) * half
    return local @ pose[:3, :3].T + pose[:3, 3]


# --- batches under jit/vmap, gradients, degenerate configurations -------------------------------


@pytest.mark.parametrize(("name_a", "name_b"), PAIRS)
def test_batched_values_and_gradients(name_a: str, name_b: str) -> None:
    """A batch per pair under jit(vmap(...)): random separated and penetrating configurations,
    then special ones (near-parallel cores, degenerate overlaps; see `special_cases`). Values
    equal plain one-at-a-time calls or the known value, to 1e-15 m. Gradients are finite
    everywhere; where the distance is differentiable the 12 pose derivatives (6-DOF perturbation
    of each pose) from jax.grad match central differences. Random rows use h = 1e-6: truncation
    ~h^2 |f'''| (<= 1e-6 relative for curvature radii >= 1 mm at gradients of order 1) plus
    rounding ~1e-17 m / h = 1e-11. Tolerance: 1e-6 of the gradient's norm."""
    batch = closed_form_batch(name_a, name_b)
    np.testing.assert_allclose(batch.values, batch.expected, rtol=0.0, atol=1e-15)
    assert np.all(np.isfinite(batch.grads))
    differentiable = np.isfinite(batch.steps)
    assert differentiable[: 2 * RANDOM_ROWS].all()
    for grad, difference in zip(batch.grads[differentiable], batch.fd[differentiable]):
        np.testing.assert_allclose(grad, difference, rtol=0.0, atol=1e-6 * np.linalg.norm(difference))


# --- static primitives, errors ------------------------------------------------------------------


def test_primitives_are_static_arguments() -> None:
    """Primitives are hashable by value, so they can be static arguments of jit."""
    assert hash(Capsule([0, 0, 0], (0, 0, 1), 1)) == hash(Capsule((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 1.0))
    compiled = jax.jit(signed_distance, static_argnums=(0, 2))
    pose = jnp.asarray(_pose((0.05, 0.0, 0.0)))
    assert float(compiled(Sphere(0.01), jnp.eye(4), Box((0.01, 0.01, 0.01)), pose)) == pytest.approx(0.03, abs=1e-15)


@pytest.mark.parametrize(
    "make",
    [lambda: Sphere(-0.001), lambda: Capsule((0, 0), (0, 0, 1), 0.01), lambda: Box((0.01, 0.0, 0.01))],
)
def test_invalid_primitives_are_rejected(make) -> None:
    with pytest.raises(RobocalError):
        make()


def test_unknown_pair_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        signed_distance(SPHERE, jnp.eye(4), "cone", jnp.eye(4))
