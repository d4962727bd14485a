"""Signed distances through coal: exactly the closed forms on primitives, and within the
tessellation error on convex meshes; witness-point gradients under jit/vmap."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from geometry_helpers import (
    BOX,
    PAIRS,
    RANDOM_ROWS,
    SHAPES,
    SPHERE,
    batched_derivatives,
    closed_form,
    closed_form_batch,
    configurations,
    surface_samples,
)
from scipy.spatial import ConvexHull

import robocal  # noqa: F401  (float64)
from robocal.errors import RobocalError
from robocal.geometry import Capsule, Sphere

pytest.importorskip("coal")
from robocal.geometry import ConvexMesh, mesh_closest_points, mesh_signed_distance  # noqa: E402

RANDOM = slice(0, 2 * RANDOM_ROWS)
SEPARATED = slice(0, RANDOM_ROWS)


@pytest.mark.parametrize(("name_a", "name_b"), PAIRS)
def test_coal_matches_closed_form_on_primitives(name_a: str, name_b: str) -> None:
    """coal's GJK/EPA on the primitives themselves gives the closed-form value: it stops at a
    duality gap of 1e-14 of the distance, so they agree to rounding (1e-15 m). The witness-point
    gradient (custom_jvp, here under jit and vmap) gives the closed-form gradient: both are
    exact up to the witness points' accuracy (~1e-15 m), tolerance 1e-9 of the gradient."""
    reference = closed_form_batch(name_a, name_b)
    a, b = SHAPES[name_a], SHAPES[name_b]
    values, grads, _ = batched_derivatives(mesh_signed_distance, a, b, reference.poses_a[RANDOM], reference.poses_b[RANDOM], 1e-6)
    np.testing.assert_allclose(values, reference.values[RANDOM], rtol=0.0, atol=1e-15)
    for grad, expected in zip(grads, reference.grads[RANDOM]):
        np.testing.assert_allclose(grad, expected, rtol=0.0, atol=1e-9 * np.linalg.norm(expected))


def test_contact_convention() -> None:
    """point_b - point_a = distance * normal, a unit normal from a to b, points on the surfaces."""
    ((pose_a, pose_b),) = configurations("sphere", "box", 4, True, 1)
    contact = mesh_closest_points(SPHERE, pose_a, BOX, pose_b)
    assert contact.distance == pytest.approx(closed_form(SPHERE, pose_a, BOX, pose_b), abs=1e-15)
    np.testing.assert_allclose(contact.point_b - contact.point_a, contact.distance * contact.normal, rtol=0.0, atol=1e-15)
    assert np.linalg.norm(contact.normal) == pytest.approx(1.0, abs=1e-15)
    assert np.linalg.norm(contact.point_a - pose_a[:3, 3]) == pytest.approx(SPHERE.radius, abs=1e-15)
    on_box = np.eye(4)
    on_box[:3, 3] = contact.point_b
    assert closed_form(Sphere(0.0), on_box, BOX, pose_b) == pytest.approx(0.0, abs=1e-15)


# --- tessellated spheres and capsules ----------------------------------------------------------


@functools.cache
def tessellation(shape: Sphere | Capsule) -> tuple[ConvexMesh, float]:
    """The hull of surface samples ~0.4 mm apart, and its exact depth delta below the surface:
    the hull contains the shape shrunk by delta (core swollen by radius - delta) and lies inside
    the shape, so for any other convex X
        sd(shape, X) <= sd(hull, X) <= sd(shape, X) + delta.
    The shrunk shape lies in the hull iff its support value h_core(n) + radius - delta is at most
    the offset of every hull facet (n, offset), so delta is the largest excess over the facets."""
    points, _ = surface_samples(shape, np.eye(4), 4e-4)
    hull = ConvexHull(points)
    normals, offsets = hull.equations[:, :3], -hull.equations[:, 3]
    core = np.array([shape.p0, shape.p1]) if isinstance(shape, Capsule) else np.zeros((1, 3))
    delta = float(np.max(np.max(normals @ core.T, axis=1) + shape.radius - offsets))
    assert 0.0 < delta < 1e-5  # fine enough to mean something, coarse enough to be seen
    return ConvexMesh(points), delta


# (pair, tessellate a, tessellate b)
VARIANTS = {
    "sphere-meshed capsule": ("sphere", "capsule", False, True),
    "meshed capsule-capsule": ("capsule", "capsule", True, False),
    "meshed capsule-box": ("capsule", "box", True, False),
    "meshed sphere-meshed capsule": ("sphere", "capsule", True, True),
}


@functools.cache
def mesh_batch(variant: str):
    """The random configurations of the pair's closed-form batch with shapes tessellated:
    (closed-form batch, total delta, values, gradients, central differences with h = 1e-7)."""
    name_a, name_b, mesh_a, mesh_b = VARIANTS[variant]
    reference = closed_form_batch(name_a, name_b)
    a, delta_a = tessellation(SHAPES[name_a]) if mesh_a else (SHAPES[name_a], 0.0)
    b, delta_b = tessellation(SHAPES[name_b]) if mesh_b else (SHAPES[name_b], 0.0)
    poses_a, poses_b = reference.poses_a[RANDOM], reference.poses_b[RANDOM]
    values, grads, fd = batched_derivatives(mesh_signed_distance, a, b, poses_a, poses_b, 1e-7)
    return reference, delta_a + delta_b, values, grads, fd


def _gradient_bound(variant: str, delta: float, distances: np.ndarray) -> np.ndarray:
    """eps = 2 sqrt(delta / D) per configuration (see the translation-gradient test)."""
    name_a, name_b, _, _ = VARIANTS[variant]
    core_distance = distances + getattr(SHAPES[name_a], "radius", 0.0) + getattr(SHAPES[name_b], "radius", 0.0)
    assert np.all(delta <= core_distance / 4)
    return 2.0 * np.sqrt(delta / core_distance)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_tessellation_within_its_error(variant: str) -> None:
    """sd(shapes) <= sd(meshes) <= sd(shapes) + delta, separated and penetrating (GJK and EPA),
    up to coal's accuracy (1e-15 m)."""
    reference, delta, values, _, _ = mesh_batch(variant)
    exact = reference.values[RANDOM]
    assert np.all(exact - 1e-15 <= values)
    assert np.all(values <= exact + delta + 1e-15)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_tessellation_translation_gradient(variant: str) -> None:
    """For separated shapes, as a function of the translation t of b, the mesh distance f(t) is
    the distance from t to a convex set (so convex), and the exact distance g(t) is the distance
    to the cores' Minkowski difference (at core distance D = g + radii) minus the radii, whose
    Hessian is at most 1 / (D - tau) within tau. With g <= f <= g + delta, for unit e:
        tau grad f . e <= f(t + tau e) - f(t) <= tau grad g . e + tau^2 / (2 (D - tau)) + delta,
    and tau = sqrt(delta D) <= D / 2 gives |grad f - grad g| <= 2 sqrt(delta / D) = eps. The
    same holds for translating a. (Translations in the bodies' frames: a rotation of both.)"""
    reference, delta, _, grads, _ = mesh_batch(variant)
    eps = _gradient_bound(variant, delta, reference.values[SEPARATED])
    error = grads[SEPARATED] - reference.grads[SEPARATED]
    assert np.all(np.linalg.norm(error[:, 0:3], axis=1) <= eps)
    assert np.all(np.linalg.norm(error[:, 6:9], axis=1) <= eps)


def test_tessellated_capsule_full_gradient_against_sphere() -> None:
    """With a sphere as a, every pose derivative follows from that of its center, with the
    bound eps above. Turning the sphere about its center changes nothing (0 for both, to
    rounding). Perturbing the mesh b by (v, w) moves the center, at c in b's frame, by
    -(v + w x c): d/dw = -(c x n) with n the gradient in c, off by at most |c| eps."""
    variant = "sphere-meshed capsule"
    reference, delta, _, grads, _ = mesh_batch(variant)
    eps = _gradient_bound(variant, delta, reference.values[SEPARATED])
    error = (grads[SEPARATED] - reference.grads[SEPARATED]).reshape(-1, 4, 3)
    for pose_a, pose_b, bound, (_, turn_a, _, turn_b) in zip(reference.poses_a, reference.poses_b, eps, error):
        center = pose_b[:3, :3].T @ (pose_a[:3, 3] - pose_b[:3, 3])
        assert np.linalg.norm(turn_a) <= 1e-15
        assert np.linalg.norm(turn_b) <= np.linalg.norm(center) * bound


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_mesh_gradient_matches_finite_differences(variant: str) -> None:
    """The witness-point JVP against central differences (h = 1e-7) of coal's own distance,
    moving and turning both bodies. Between changes of the closest features the mesh distance is
    smooth, with second derivatives up to ~(1 + l)^2 / D (lever l <= 5 cm, core distance
    D >= 1 mm); across a change its gradient stays continuous. The differences are off by about
    (l / D) h ~ 5e-6 at most; coal's rounding adds ~1e-17 m / h = 1e-10."""
    _, _, _, grads, fd = mesh_batch(variant)
    np.testing.assert_allclose(grads, fd, rtol=0.0, atol=5e-6)


def test_batched_mesh_values_equal_single_queries() -> None:
    reference, _, values, _, _ = mesh_batch("meshed capsule-box")
    mesh, _ = tessellation(SHAPES["capsule"])
    poses = zip(reference.poses_a[RANDOM], reference.poses_b[RANDOM])
    assert list(values) == [mesh_closest_points(mesh, pose_a, BOX, pose_b).distance for pose_a, pose_b in poses]


def test_convex_mesh_keeps_hull_vertices_only() -> None:
    corners = [(x, y, z) for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)]
    mesh = ConvexMesh([*corners, (0.0, 0.0, 0.0), (0.5, -0.5, 0.2)])
    assert mesh.vertices == tuple(sorted(corners))
    assert mesh == ConvexMesh(corners[::-1])
    assert hash(mesh) == hash(ConvexMesh(corners[::-1]))
    with pytest.raises(RobocalError):
        ConvexMesh([(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0)])
