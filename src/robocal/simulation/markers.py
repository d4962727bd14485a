"""Simulated marker measurements, written as the CSV files the `markers` measurement reads.

For a marker body placed at T_body on a link, with points p_k in the body frame, and a
measuring system whose frame sees the robot root at T_frame:

    measured point     = T_frame T_link(theta, q) T_body p_k + e,   e ~ N(0, sigma^2 I),
    measured rotation  = R_frame R_link(theta, q) R_body Exp(w),   w ~ N(0, sigma_rot^2 I),

the rotation noise w being a rotation vector in the body frame (the frame of the residual).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np

from robocal.kinematics import transforms as tf
from robocal.kinematics.model import RobotModel
from robocal.simulation.sampling import batch_link_poses


@dataclass(frozen=True, eq=False)
class MarkerBody:
    """Marker points rigidly attached to a link through a marker body (one `markers` measurement)."""

    name: str  # column prefix
    link: str
    offsets: np.ndarray  # (m, 3) points in the body frame (m)
    body: np.ndarray = field(default_factory=lambda: np.eye(4))  # body pose in the link frame
    orientation: bool = False  # also write the body orientation as a quaternion

    def point_columns(self, k: int) -> tuple[str, str, str]:
        return (f"{self.name}_p{k}_x", f"{self.name}_p{k}_y", f"{self.name}_p{k}_z")

    def quaternion_columns(self) -> tuple[str, str, str, str]:
        return (f"{self.name}_qw", f"{self.name}_qx", f"{self.name}_qy", f"{self.name}_qz")

    def points(self, known: bool = True) -> list[dict]:
        """The `points:` entry of a problem file; `known`: offsets given, else estimated from 0."""
        return [
            {"name": f"p{k}", "columns": list(self.point_columns(k)), "offset": [float(v) for v in p] if known else "unknown"}
            for k, p in enumerate(np.asarray(self.offsets, dtype=float))
        ]


@dataclass(frozen=True, eq=False)
class MarkerTable:
    """What `simulate_markers` wrote: the CSV header and the values of its rows."""

    path: Path
    header: tuple[str, ...]
    values: np.ndarray  # (n, len(header))


def write_csv(path: str | Path, header: Sequence[str], values: np.ndarray) -> None:
    """A CSV with one header line, full float64 precision (row i is on line i + 2)."""
    np.savetxt(path, values, delimiter=",", header=",".join(header), comments="", fmt="%.17g")


def simulate_markers(
    path: str | Path,
    robot: RobotModel,
    theta: np.ndarray,
    q: np.ndarray,
    bodies: Sequence[MarkerBody],
    *,
    frame: np.ndarray | None = None,
    sigma: float = 0.0,
    orientation_sigma: float = 0.0,
    seed: int = 0,
) -> MarkerTable:
    """Simulate and write marker data for inputs q (n, n_inputs) of the robot at theta.

    Columns: every input (actuated joint, or raw sensor with joint sensors), then per body its points' x, y, z and, for
    bodies with `orientation`, the quaternion w, x, y, z. `frame`: 4x4 pose of the robot root in
    the measurement frame (identity: data in the root frame).
    """
    q = np.asarray(q, dtype=float)
    links = tuple(dict.fromkeys(b.link for b in bodies))
    poses = (np.eye(4) if frame is None else np.asarray(frame)) @ batch_link_poses(robot, theta, q, links)
    rng = np.random.default_rng(seed)
    header, columns = list(robot.inputs), [q]
    for b in bodies:
        world = poses[:, links.index(b.link)] @ b.body
        offsets = np.asarray(b.offsets, dtype=float)
        points = np.einsum("nij,mj->nmi", world[:, :3, :3], offsets) + world[:, None, :3, 3]
        points = points + rng.normal(0.0, sigma, points.shape)
        header += [c for k in range(len(offsets)) for c in b.point_columns(k)]
        columns.append(points.reshape(len(q), -1))
        if b.orientation:
            noise = np.asarray(jax.vmap(tf.rotvec_to_matrix)(rng.normal(0.0, orientation_sigma, (len(q), 3))))
            header += b.quaternion_columns()
            columns.append(np.array([tf.matrix_to_quaternion(r) for r in world[:, :3, :3] @ noise]))
    values = np.hstack(columns)
    write_csv(path, header, values)
    return MarkerTable(Path(path), tuple(header), values)
