"""Test helpers shared by the geometry tests: random rigid poses, 6-DOF pose perturbations,
batched gradients and finite differences under jit/vmap, the shapes and configurations both test
files use (batches are computed once per session), and surface samples with a known covering
radius (every surface point lies within that distance of a sample)."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial.transform import Rotation

import robocal  # noqa: F401  (float64)
from robocal.geometry import Box, Capsule, Sphere, signed_distance


def random_pose(rng: np.random.Generator, spread: float) -> np.ndarray:
    """Uniformly random rotation, translation uniform in [-spread, spread]^3."""
    pose = np.eye(4)
    pose[:3, :3] = Rotation.random(random_state=rng).as_matrix()
    pose[:3, 3] = rng.uniform(-spread, spread, 3)
    return pose


def perturbed(poses: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """poses @ [R(xi[..., 3:]) xi[..., :3]; 0 1]: translations and rotation vectors applied in the
    poses' own frames (broadcast over leading axes)."""
    delta = np.broadcast_to(np.eye(4), (*xi.shape[:-1], 4, 4)).copy()
    delta[..., :3, :3] = Rotation.from_rotvec(xi[..., 3:].reshape(-1, 3)).as_matrix().reshape(*xi.shape[:-1], 3, 3)
    delta[..., :3, 3] = xi[..., :3]
    return poses @ delta


# d perturbed(pose, xi) / d xi_k at xi = 0 is pose @ GENERATORS[k]: unit translations, then
# the cross-product matrices [e_x]x, [e_y]x, [e_z]x of the unit rotation vectors.
GENERATORS = np.zeros((6, 4, 4))
GENERATORS[[0, 1, 2], [0, 1, 2], 3] = 1.0
GENERATORS[3:, :3, :3] = [
    [[0, 0, 0], [0, 0, -1], [0, 1, 0]],
    [[0, 0, 1], [0, 0, 0], [-1, 0, 0]],
    [[0, -1, 0], [1, 0, 0], [0, 0, 0]],
]


@functools.cache
def _compiled(distance, a, b):
    """Compiled, batched over configurations and over poses per configuration: the distance and
    its gradient with respect to both 4x4 poses."""
    value_and_grad = jax.value_and_grad(lambda pose_a, pose_b: distance(a, pose_a, b, pose_b), argnums=(0, 1))
    return jax.jit(jax.vmap(jax.vmap(value_and_grad)))


def batched_derivatives(distance, a, b, poses_a, poses_b, steps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Under jit and vmap over configurations: distances, their 12 pose derivatives (6-DOF
    perturbation of each pose, see `perturbed`) by jax.grad, and the same by central
    differences (one step per configuration)."""
    poses_a, poses_b = np.stack(poses_a), np.stack(poses_b)
    steps = np.broadcast_to(np.asarray(steps, dtype=float), (len(poses_a),))
    xis = steps[:, None, None] * np.concatenate([np.zeros((1, 12)), np.eye(12), -np.eye(12)])
    values, (grad_a, grad_b) = _compiled(distance, a, b)(
        jnp.asarray(perturbed(poses_a[:, None], xis[..., :6])), jnp.asarray(perturbed(poses_b[:, None], xis[..., 6:]))
    )
    values = np.asarray(values)
    grads = np.concatenate(
        [
            np.einsum("nij,nkij->nk", grad_a[:, 0], poses_a[:, None] @ GENERATORS),
            np.einsum("nij,nkij->nk", grad_b[:, 0], poses_b[:, None] @ GENERATORS),
        ],
        axis=1,
    )
    return values[:, 0], grads, (values[:, 1:13] - values[:, 13:]) / (2.0 * steps[:, None])


def closed_form(a, pose_a, b, pose_b) -> float:
    """One signed distance, one configuration, outside jit."""
    return float(signed_distance(a, jnp.asarray(pose_a), b, jnp.asarray(pose_b)))


# --- shared shapes and configurations -----------------------------------------------------------

SPHERE = Sphere(0.008)
CAPSULE = Capsule((0.0, 0.0, -0.012), (0.002, 0.001, 0.013), 0.006)
BOX = Box((0.01, 0.015, 0.007))
SHAPES = {"sphere": SPHERE, "capsule": CAPSULE, "box": BOX}
PAIRS = list(itertools.combinations_with_replacement(SHAPES, 2))
RANDOM_ROWS = 3  # per kind: the batches below start with this many separated, then penetrating rows


@functools.cache
def configurations(name_a: str, name_b: str, seed: int, separated: bool, count: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Random poses (fixed seed) with signed distance > 1 mm (separated) or < -1 mm. Generic:
    with probability one no two closest features tie, so the distance is smooth there."""
    a, b = SHAPES[name_a], SHAPES[name_b]
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < count:
        pose_a, pose_b = random_pose(rng, 0.005), random_pose(rng, 0.03)
        distance = closed_form(a, pose_a, b, pose_b)
        if (distance > 1e-3) if separated else (distance < -1e-3):
            found.append((pose_a, pose_b))
    return tuple(found)


def _pose_from(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = rotation
    pose[:3, 3] = translation
    return pose


def special_cases(name_a: str, name_b: str) -> list[tuple[np.ndarray, np.ndarray, float, float]]:
    """(pose_a, pose_b, signed distance, finite-difference step, NaN where the distance is not
    differentiable) for the pair: near-parallel capsules, and degenerate overlaps (coincident
    centers and cores, crossing cores, a core through a box).

    Near-parallel cores at angle theta: turning a core by e turns their common normal by ~e/theta,
    so the k-th derivative grows like 1/theta^k and the relative truncation error of central
    differences like C (h/theta)^2, with C ~ 1e3 here (h = 1e-6 at theta = 1e-3 is off by 1e-3).
    These cases use h = 1e-8: truncation <= 1e-7, rounding ~1e-17 m / h = 1e-9."""
    frame = random_pose(np.random.default_rng(8), 0.05)
    p0, p1 = np.array(CAPSULE.p0), np.array(CAPSULE.p1)
    middle, axis = 0.5 * (p0 + p1), (p1 - p0) / np.linalg.norm(p1 - p0)
    normal = np.cross(axis, [1.0, 0.0, 0.0])
    normal /= np.linalg.norm(normal)
    r_sphere, r_capsule, half = SPHERE.radius, CAPSULE.radius, np.array(BOX.half_extents)
    kink = np.nan

    def turned_about_normal(angle: float, gap: float, shift: float) -> np.ndarray:
        """Capsule pose whose core is CAPSULE's turned by `angle` about `normal` through its
        midpoint, then moved by gap along `normal` and shift along the core: the cores' common
        perpendicular is `normal` and their core distance is `gap`."""
        rotation = Rotation.from_rotvec(angle * normal).as_matrix()
        return _pose_from(rotation, middle + gap * normal + shift * axis - rotation @ middle)

    match (name_a, name_b):
        case ("sphere", "sphere"):
            return [(frame, frame, -2 * r_sphere, kink)]
        case ("sphere", "capsule"):
            return [(frame @ _pose_from(np.eye(3), middle), frame, -r_sphere - r_capsule, kink)]
        case ("capsule", "capsule"):
            near_parallel = [
                (frame, frame @ turned_about_normal(angle, 0.02, shift), 0.02 - 2 * r_capsule, 1e-8) for angle in (1e-3, 1e-2) for shift in (0.0, 0.004)
            ]
            coincident = (frame, frame, -2 * r_capsule, kink)
            crossing = (frame, frame @ turned_about_normal(1.0, 0.0, 0.0), -2 * r_capsule, kink)
            return [*near_parallel, coincident, crossing]
        case ("sphere", "box"):
            return [(frame, frame, -np.min(half) - r_sphere, kink)]
        case ("capsule", "box"):
            onto_z = Rotation.align_vectors([[0.0, 0.0, 1.0]], [axis])[0].as_matrix()
            return [(frame @ _pose_from(onto_z, -onto_z @ middle), frame, -min(half[0], half[1]) - r_capsule, kink)]
        case ("box", "box"):
            return [(frame, frame, -2 * np.min(half), kink)]
    raise KeyError((name_a, name_b))


@dataclass(frozen=True, eq=False)
class Batch:
    """Configurations of one pair with closed-form results computed under jit(vmap(...)): rows
    [0, RANDOM_ROWS) random separated, [RANDOM_ROWS, 2 RANDOM_ROWS) random penetrating, then the
    special cases. `expected`: plain one-at-a-time values (random) or known values (special)."""

    poses_a: tuple[np.ndarray, ...]
    poses_b: tuple[np.ndarray, ...]
    expected: np.ndarray
    steps: np.ndarray
    values: np.ndarray
    grads: np.ndarray
    fd: np.ndarray


@functools.cache
def closed_form_batch(name_a: str, name_b: str) -> Batch:
    """The pair's batch: 3 + 3 random configurations (seed 3) and its special cases."""
    a, b = SHAPES[name_a], SHAPES[name_b]
    random_rows = [
        (pose_a, pose_b, closed_form(a, pose_a, b, pose_b), 1e-6)
        for separated in (True, False)
        for pose_a, pose_b in configurations(name_a, name_b, 3, separated, RANDOM_ROWS)
    ]
    poses_a, poses_b, expected, steps = zip(*random_rows, *special_cases(name_a, name_b))
    steps = np.array(steps)
    values, grads, fd = batched_derivatives(signed_distance, a, b, poses_a, poses_b, np.nan_to_num(steps, nan=1.0))
    return Batch(poses_a, poses_b, np.array(expected), steps, values, grads, fd)


# --- surface samples ---------------------------------------------------------------------------


def _perpendicular_frame(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.cross(np.eye(3)[np.argmin(np.abs(z))], z)
    x /= np.linalg.norm(x)
    return x, np.cross(z, x)


def _hemisphere(center, z, x, y, radius, n_theta, n_phi) -> np.ndarray:
    """Polar angle 0..pi/2 from z in n_theta steps, n_phi azimuths."""
    theta = np.linspace(0.0, 0.5 * np.pi, n_theta + 1)[:, None, None]
    phi = np.linspace(0.0, 2.0 * np.pi, n_phi, endpoint=False)[None, :, None]
    directions = np.cos(theta) * z + np.sin(theta) * (np.cos(phi) * x + np.sin(phi) * y)
    return (center + radius * directions).reshape(-1, 3)


def surface_samples(shape, pose: np.ndarray, spacing: float) -> tuple[np.ndarray, float]:
    """World points on the surface of a posed primitive, about `spacing` apart, and their
    covering radius. On a sphere or hemisphere a point reaches the nearest sample by moving at
    most half a polar step along its meridian and half an azimuth step along its circle of
    latitude, so the arc (>= chord) is at most r (dtheta + dphi) / 2; on a cylinder it is
    dz / 2 + r dphi / 2; on a box face half the diagonal of a grid cell."""
    match shape:
        case Sphere(radius=r):
            n_theta = max(2, int(np.ceil(0.5 * np.pi * r / spacing)))
            n_phi = 4 * n_theta
            z, x, y = np.eye(3)
            points = np.concatenate([_hemisphere(np.zeros(3), z, x, y, r, n_theta, n_phi), _hemisphere(np.zeros(3), -z, x, y, r, n_theta, n_phi)])
            cover = 0.5 * r * (0.5 * np.pi / n_theta + 2.0 * np.pi / n_phi)
        case Capsule(p0=p0, p1=p1, radius=r):
            p0, p1 = np.asarray(p0), np.asarray(p1)
            length = np.linalg.norm(p1 - p0)
            z = (p1 - p0) / length
            x, y = _perpendicular_frame(z)
            n_theta = max(2, int(np.ceil(0.5 * np.pi * r / spacing)))
            n_phi = 4 * n_theta
            n_z = max(2, int(np.ceil(length / spacing)) + 1)
            phi = np.linspace(0.0, 2.0 * np.pi, n_phi, endpoint=False)[None, :, None]
            ring = r * (np.cos(phi) * x + np.sin(phi) * y)
            axial = np.linspace(0.0, 1.0, n_z)[:, None, None] * (p1 - p0)
            points = np.concatenate(
                [
                    _hemisphere(p1, z, x, y, r, n_theta, n_phi),
                    _hemisphere(p0, -z, x, y, r, n_theta, n_phi),
                    (p0 + axial + ring).reshape(-1, 3),
                ]
            )
            cover = max(0.5 * r * (0.5 * np.pi / n_theta + 2.0 * np.pi / n_phi), 0.5 * length / (n_z - 1) + r * np.pi / n_phi)
        case Box(half_extents=half):
            half = np.asarray(half)
            counts = np.maximum(2, np.ceil(2.0 * half / spacing).astype(int) + 1)
            grids = [np.linspace(-h, h, n) for h, n in zip(half, counts)]
            faces = []
            for axis in range(3):
                u, v = [grids[k] for k in range(3) if k != axis]
                uu, vv = np.meshgrid(u, v, indexing="ij")
                for sign in (-1.0, 1.0):
                    face = np.empty((uu.size, 3))
                    face[:, axis] = sign * half[axis]
                    face[:, [k for k in range(3) if k != axis]] = np.column_stack([uu.ravel(), vv.ravel()])
                    faces.append(face)
            points = np.concatenate(faces)
            cover = 0.5 * np.linalg.norm(2.0 * half / (counts - 1))
    return points @ pose[:3, :3].T + pose[:3, 3], cover
