"""The human hand and the robot hand side by side in one mapped pose (matplotlib, 3D).

Each chain is a polyline through its joint frames from the root to the tip; fingertips are dots.
On the robot the fingertip contact shapes are drawn to scale (capsules as wireframe end
spheres joined by their core), fingertips in a contact warning in red, with the warnings in the
title; objects are drawn in grey, the fingertip targets of the fingertip mapping as crosses.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure

from robocal.errors import RobocalError
from robocal.geometry.primitives import Box, Capsule, Sphere
from robocal.kinematics.model import RobotModel
from robocal.teleop.contact import ContactWarning, Obstacle
from robocal.teleop.mapping import HandMapping

WARN, OK, OBJECT = "tab:red", "tab:blue", "0.5"


def _chains(ax, model: RobotModel, q, color: str) -> dict[str, np.ndarray]:
    """Draw every chain to an end effector; returns the link poses by name."""
    tree = model.tree
    links = list(tree.links[1:])
    poses = dict(zip(links, np.asarray(model.link_poses(model.nominal, q, links))))
    poses[tree.root] = np.eye(4)
    for tip in tree.end_effectors:
        path = np.array([poses[tree.root][:3, 3]] + [poses[tree.joints[i].child][:3, 3] for i in tree.chain(tip)])
        ax.plot(*path.T, "-o", color=color, markersize=2.5, linewidth=1.5)
        ax.scatter(*path[-1], color=color, s=30)
    return poses


def _sphere(ax, center, radius: float, color: str) -> None:
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 13), np.linspace(0, np.pi, 7))
    xyz = [center[0] + radius * np.cos(u) * np.sin(v), center[1] + radius * np.sin(u) * np.sin(v), center[2] + radius * np.cos(v)]
    ax.plot_wireframe(*xyz, color=color, linewidth=0.5)


def _shape(ax, shape, pose: np.ndarray, color: str) -> None:
    if isinstance(shape, Sphere):
        _sphere(ax, pose[:3, 3], shape.radius, color)
    elif isinstance(shape, Capsule):
        ends = np.array([shape.p0, shape.p1]) @ pose[:3, :3].T + pose[:3, 3]
        for end in ends:
            _sphere(ax, end, shape.radius, color)
        ax.plot(*ends.T, color=color, linewidth=2)
    elif isinstance(shape, Box):
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * shape.half_extents
        world = corners @ pose[:3, :3].T + pose[:3, 3]
        for i in range(8):
            for j in range(i + 1, 8):
                if np.sum(corners[i] != corners[j]) == 1:
                    ax.plot(*world[[i, j]].T, color=color, linewidth=1)


def _equal_axes(ax, points: np.ndarray, title: str) -> None:
    center, half = (points.max(0) + points.min(0)) / 2, (points.max(0) - points.min(0)).max() / 2 + 0.02
    for set_lim, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), center):
        set_lim(c - half, c + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    ax.set_title(title)


def draw(
    mapping: HandMapping,
    human_q,
    robot_q,
    warnings: Sequence[ContactWarning] = (),
    objects: Sequence[Obstacle] = (),
    targets=None,
    figure: Figure | None = None,
    title: str = "",
) -> Figure:
    """Both hands in one figure (a new 12 x 6 inch Figure unless one is given)."""
    fig = figure or Figure(figsize=(12, 6))
    human_ax, robot_ax = fig.add_subplot(1, 2, 1, projection="3d"), fig.add_subplot(1, 2, 2, projection="3d")
    human_poses = _chains(human_ax, mapping.human_model, mapping.human_vector(human_q), "tab:orange")
    _equal_axes(human_ax, np.array([p[:3, 3] for p in human_poses.values()]), f"human hand ({mapping.config.human.name}, frame {mapping.config.human.root})")
    robot_poses = _chains(robot_ax, mapping.robot_model, np.asarray(robot_q, dtype=float), "tab:gray")
    warned = {name for w in warnings for name in (w.a, w.b)}
    points = [p[:3, 3] for p in robot_poses.values()]
    for finger in mapping.config.fingers:
        pose = robot_poses[finger.contact_link]
        for shape in mapping.config.shapes[finger.contact_link]:
            _shape(robot_ax, shape.primitive, pose @ np.asarray(shape.origin), WARN if finger.name in warned else OK)
    for o in objects:
        _shape(robot_ax, o.shape, o.pose, WARN if o.name in warned else OBJECT)
        points.append(o.pose[:3, 3])
    if targets is not None:
        robot_ax.scatter(*np.asarray(targets).T, marker="x", color="k", s=40, label="fingertip targets")
        robot_ax.legend(loc="upper left")
    _equal_axes(robot_ax, np.array(points), f"robot hand ({mapping.config.robot.name}, frame {mapping.config.robot.root})")
    text = "contact warnings: " + ("; ".join(str(w) for w in warnings) if warnings else "none")
    fig.suptitle(f"{title}\n{text}" if title else text, color=WARN if warnings else "black")
    return fig


def check_picture_path(path: Path, inputs: Iterable[Path | None] = ()) -> None:
    """Raise a RobocalError naming --out unless `save_picture` can write `path`: a picture suffix
    matplotlib writes (but pgf), not an existing folder, none of the command's `inputs`, and in a folder that
    exists or can be created (an earlier picture there is replaced)."""
    path = Path(path)
    formats = sorted(set(FigureCanvasBase.get_supported_filetypes()) - {"pgf"})  # pgf: LaTeX source, written by running a TeX install
    if path.suffix.lower().removeprefix(".") not in formats:
        raise RobocalError(f"{path}: --out must be a picture file ending in one of {', '.join('.' + f for f in formats)}")
    if path.is_dir():
        raise RobocalError(f"{path}: --out is an existing folder; give a picture file name")
    if any(p is not None and Path(p).resolve() == path.resolve() for p in inputs):
        raise RobocalError(f"{path}: --out is one of the command's input files")
    existing = next((p for p in path.parents if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise RobocalError(f"{path}: --out cannot be written there ({existing} is not a writable folder)")


def save_picture(fig: Figure, path: str | Path, dpi: int = 100) -> Path:
    """Write the figure (PNG, or any format matplotlib knows from the suffix; `check_picture_path` first tells a bad one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path
