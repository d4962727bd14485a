"""Relative fingertip positions: the quantity in-hand manipulation needs.

For a reference link r and links l_1..l_F, the task function is p_l(q) - p_r(q) in the root
frame, for every l. A `task` measurement compares it with recorded relative positions (from a
simulator, or any system that measures fingertips relative to each other); it is also the
quantity the hand calibration is scored on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from robocal.measurements.base import (
    BuildContext,
    JointRows,
    Measurement,
    MeasurementConfig,
    data_container,
    point_groups,
)


class TaskConfig(MeasurementConfig):
    type: Literal["task"]
    reference: str = Field(description="reference link (e.g. the thumb tip)")
    links: list[str] = Field(min_length=1, description="links whose positions relative to the reference are measured")
    columns: dict[str, tuple[str, str, str]] = Field(default_factory=dict, description="link -> x, y, z columns (default <link>_x, ...)")


def task_vectors(poses, links_count: int):
    """(n, F, 3) positions of links 1..F relative to link 0, from poses (n, F + 1, 4, 4)."""
    positions = poses[:, :, :3, 3]
    return positions[:, 1 : links_count + 1] - positions[:, :1]


def relative_rows_in_mode(blocks: np.ndarray, tips: tuple[str, ...], belongs) -> tuple[np.ndarray, list[np.ndarray]]:
    """Of rows (n, 3 * (len(tips) - 1), p) of the vectors from tips[0] to each other tip: the
    vectors between the tips that belong to the mode, re-referenced to tips[0] if it belongs, else
    to the first tip that does (p_l - p_b = (p_l - p_r) - (p_b - p_r), a linear map of the rows);
    none with fewer than two tips (`Measurement.rows_in_mode`)."""
    n, _, p = blocks.shape
    inside = [i for i, tip in enumerate(tips) if belongs(tip)]
    if len(inside) < 2:
        return np.zeros((0, p)), []
    relative = np.concatenate([np.zeros((n, 3, p)), blocks], axis=1).reshape(n, len(tips), 3, p)  # tip i minus the reference
    rows = (relative[:, inside[1:]] - relative[:, inside[:1]]).reshape(-1, p)
    return rows, point_groups(n, 3 * (len(inside) - 1), [np.arange(3 * j, 3 * j + 3) for j in range(len(inside) - 1)])


@data_container
class TaskData(JointRows):
    """q (n, n_inputs); relative (n, k, 3): each of the k links' measured position relative to
    the reference link, in the reference link's frame (m)."""

    relative: np.ndarray


class TaskMeasurement(Measurement):
    type_name = "task"
    Config = TaskConfig
    config: TaskConfig
    error_label = "3D distance per link"

    def __init__(self, config: TaskConfig, ctx: BuildContext):
        for i, link in enumerate([config.reference, *config.links]):
            if not ctx.model.tree.has_link(link):
                raise ctx.error(f"unknown link '{link}'", "reference" if i == 0 else f"links[{i - 1}]")
        super().__init__(config, ctx)

    def links(self) -> tuple[str, ...]:
        return (self.config.reference, *self.config.links)

    def column_names(self) -> list[str]:
        return [c for link in self.config.links for c in self.config.columns.get(link, (f"{link}_x", f"{link}_y", f"{link}_z"))]

    def load(self, path: Path):
        table = self.read(path)
        relative = table.columns(self.column_names(), what="position column").reshape(len(table), -1, 3)
        return TaskData(self.joint_matrix(table), relative), table.lines

    def predict(self, theta, data):
        return task_vectors(self.link_poses(theta, data.q, self.links()), len(self.config.links))

    def rows(self, theta, data):
        n = data.q.shape[0]
        return ((self.predict(theta, data) - data.relative) / self.config.sigma).reshape(n, -1)

    def rows_in_mode(self, blocks: np.ndarray, belongs) -> tuple[np.ndarray, list[np.ndarray]]:
        return relative_rows_in_mode(blocks, (self.config.reference, *self.config.links), belongs)

    def row_sigmas(self) -> np.ndarray:
        return np.full(3 * len(self.config.links), self.config.sigma)

    def errors(self, theta, data):
        return jnp.linalg.norm(self.predict(theta, data) - data.relative, axis=-1)
