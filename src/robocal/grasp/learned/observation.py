"""What the learned controller sees of the object: a voxel grid in the hand frame made from one
simulated depth image, never from the exact shape (seed paper 002, Sec. IV-A1).

1. **Depth image.** A pinhole camera near the hand (`ObservationConfig.camera`, palm frame)
   looks at the grid's centre. The image is MuJoCo's: one ray per pixel through the pixel
   centre, cast with `mujoco.mj_multiRay` against the object geom in the compiled grasp scene
   (the same geometry the simulation collides: a mesh as its convex hull). Ray casting needs no
   OpenGL context and gives the same numbers on every machine, which a GPU rasterizer does not.
   Only the object is seen (the observation precedes the grasp, as on the real robot).
2. **Partial cloud.** Every pixel that hits the object back-projects to a surface point (P, 3).
3. **Completion: mirror about the silhouette plane.** The camera sees the front of the object;
   its back is guessed by mirroring every visible point through the plane perpendicular to the
   optical axis at the farthest visible depth (the plane through the silhouette), then the
   convex hull of the visible and mirrored points is taken as the object. Exact for a sphere
   and for a cylinder seen across its axis, but for the perspective (the silhouette lies
   r^2 / D in front of a sphere's centre, 3 mm for r = 3.5 cm at D = 0.42 m); a box seen face-on comes out flat (one face thick)
   and one seen across a corner up to twice as deep: rough, like the paper's "rough voxel
   model", and the networks learn from this same completion.
4. **Voxels.** Occupancy (G, G, G) of the completed shape on a cube of side `side` centred at
   `center` (palm frame, axis order x, y, z): a voxel is occupied when its centre lies inside
   the hull (or, for a cloud spanning no volume, when a cloud point falls in it).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial import ConvexHull, QhullError

from robocal.grasp import mjcf
from robocal.grasp.hand import Hand
from robocal.grasp.objects import GraspObject

OBJECT_GROUP = 5  # MuJoCo geom group given to the object for the rays (the hand's stay in 0)


@dataclass(frozen=True)
class ObservationConfig:
    grid: int = 48  # voxels per side G (the paper's 48)
    side: float = 0.24  # m: edge of the voxel cube (power grasps sit near z = 0.13 m, tripods near 0.24 m)
    center: tuple[float, float, float] = (0.0, 0.0, 0.19)  # m: cube centre, palm frame
    camera: tuple[float, float, float] = (0.05, -0.35, 0.35)  # m: camera position, palm frame
    pixels: int = 96  # image width = height
    fov: float = 40.0  # deg, full field of view

    def voxel(self) -> float:
        """Edge of one voxel (m)."""
        return self.side / self.grid


def camera_rays(config: ObservationConfig) -> tuple[np.ndarray, np.ndarray]:
    """Unit ray directions (H W, 3) through the pixel centres, palm frame, and the optical axis (3,)."""
    eye, target = np.asarray(config.camera, dtype=float), np.asarray(config.center, dtype=float)
    axis = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(axis, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, axis)
    half = np.tan(np.deg2rad(config.fov) / 2)
    u = (np.arange(config.pixels) + 0.5) / config.pixels * 2 - 1
    uu, vv = np.meshgrid(u * half, -u * half)  # rows from the top of the image
    rays = axis + uu.reshape(-1, 1) * right + vv.reshape(-1, 1) * up
    return rays / np.linalg.norm(rays, axis=1, keepdims=True), axis


def depth_image(hand: Hand, obj: GraspObject, pose: np.ndarray, config: ObservationConfig) -> np.ndarray:
    """Depth along the optical axis (H, W) in m of the object at `pose` (4x4, palm frame); inf
    where a pixel sees nothing."""
    model, index = mjcf.build_scene(hand, obj, np.asarray(pose, dtype=float))
    model.geom_group[index.object_geom] = OBJECT_GROUP
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    rays, axis = camera_rays(config)
    n = len(rays)
    geomid, dist = np.zeros(n, dtype=np.int32), np.zeros(n)
    groups = np.zeros(6, dtype=np.uint8)
    groups[OBJECT_GROUP] = 1
    mujoco.mj_multiRay(model, data, np.asarray(config.camera, dtype=float), rays.reshape(-1), groups, 1, -1, geomid, dist, None, n, 10.0)
    depth = np.where(geomid == index.object_geom, dist * (rays @ axis), np.inf)
    return depth.reshape(config.pixels, config.pixels)


def back_project(depth: np.ndarray, config: ObservationConfig) -> np.ndarray:
    """The partial point cloud (P, 3), palm frame, of the finite pixels of a depth image."""
    rays, axis = camera_rays(config)
    d = depth.reshape(-1)
    hit = np.isfinite(d)
    return np.asarray(config.camera, dtype=float) + rays[hit] * (d[hit] / (rays[hit] @ axis))[:, None]


def complete(points: np.ndarray, config: ObservationConfig) -> np.ndarray:
    """The visible points (P, 3) and their mirror images through the silhouette plane (2 P, 3)."""
    _, axis = camera_rays(config)
    depth = (points - np.asarray(config.camera, dtype=float)) @ axis
    mirrored = points + 2.0 * (depth.max() - depth)[:, None] * axis if len(points) else points
    return np.vstack([points, mirrored])


def voxel_centers(config: ObservationConfig) -> np.ndarray:
    """Centres (G, G, G, 3) of the grid's voxels, palm frame (index order x, y, z)."""
    g = (np.arange(config.grid) + 0.5) * config.voxel() - config.side / 2
    return np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1) + np.asarray(config.center, dtype=float)


def voxelize(points: np.ndarray, config: ObservationConfig) -> np.ndarray:
    """Occupancy (G, G, G) of uint8: the voxels whose centres lie in the convex hull of
    `points` (P, 3), or those the points fall in when they span no volume."""
    grid = np.zeros((config.grid,) * 3, dtype=np.uint8)
    if len(points) == 0:
        return grid
    corner = np.asarray(config.center, dtype=float) - config.side / 2
    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        cells = np.floor((points - corner) / config.voxel()).astype(int)
        cells = cells[np.all((cells >= 0) & (cells < config.grid), axis=1)]
        grid[cells[:, 0], cells[:, 1], cells[:, 2]] = 1
        return grid
    lo = np.clip(np.floor((points.min(axis=0) - corner) / config.voxel()).astype(int), 0, config.grid)
    hi = np.clip(np.ceil((points.max(axis=0) - corner) / config.voxel()).astype(int), 0, config.grid)
    box = voxel_centers(config)[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]  # only the hull's bounding box
    inside = np.all(box.reshape(-1, 3) @ hull.equations[:, :3].T + hull.equations[:, 3] <= 1e-12, axis=1)
    grid[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]] |= inside.reshape(box.shape[:3]).astype(np.uint8)
    return grid


def observe(hand: Hand, obj: GraspObject, pose: np.ndarray, config: ObservationConfig) -> np.ndarray:
    """The object's voxel grid (G, G, G, uint8) for the learned networks: depth image, partial
    cloud, mirror completion, voxels (module docstring)."""
    return voxelize(complete(back_project(depth_image(hand, obj, pose, config), config), config), config)
