"""Distance between two points, each rigidly attached to a link or fixed in the robot root frame:
a self-touch of two chains (fingertip to fingertip), a ball bar between the tool and a fixed
pivot, a caliper or a string-pot length.

residual = (|p_a(theta, q) - p_b(theta, q)| - L) / sigma, p = FK_link(theta, q) @ point (or point
itself where `link` is omitted). L is the configuration's `length` (m) or, per row, the data
file's `length_column`. The points are known (m, in their link's frame).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from robocal.measurements.base import BuildContext, JointRows, Measurement, MeasurementConfig, data_container
from robocal.validation import Positive, Strict, Vec3


class DistancePoint(Strict):
    link: str | None = Field(None, description="link the point is attached to (fixed in the robot root frame if omitted)")
    point: Vec3 = Field((0.0, 0.0, 0.0), description="the point in the link's frame (m)")


class DistanceConfig(MeasurementConfig):
    type: Literal["distance"]
    a: DistancePoint
    b: DistancePoint
    length: Positive | None = Field(None, description="known distance (m) for every row; else each row's `length_column`")
    length_column: str = "length"


@data_container
class DistanceData(JointRows):
    """q (n, n_inputs); length (n,): the measured distance of each row (m)."""

    length: np.ndarray


class DistanceMeasurement(Measurement):
    type_name = "distance"
    Config = DistanceConfig
    config: DistanceConfig
    error_label = "|distance error|"

    def __init__(self, config: DistanceConfig, ctx: BuildContext):
        for key, end in (("a", config.a), ("b", config.b)):
            if end.link is not None and not ctx.model.tree.has_link(end.link):
                raise ctx.error(f"unknown link '{end.link}'", f"{key}.link")
        if config.a.link is None and config.b.link is None:
            raise ctx.error("both points are fixed: at least one needs a `link`", "a.link")
        self.ends = (config.a, config.b)
        super().__init__(config, ctx)

    def links(self) -> tuple[str, ...]:
        return tuple(sorted({end.link for end in self.ends if end.link is not None}))

    def load(self, path: Path):
        table = self.read(path)
        n = len(table.lines)
        if self.config.length is None:
            length = table.columns([self.config.length_column], what="length column")[:, 0]
        else:
            length = np.full(n, self.config.length)
        return DistanceData(self.joint_matrix(table), length), table.lines

    def points(self, theta, q) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Positions (n, 3) of points a and b in the robot root frame at configurations q (n, n_inputs)."""
        links = self.links()
        poses = self.link_poses(theta, q, links)
        out = []
        for end in self.ends:
            p = jnp.asarray(end.point, dtype=float)
            if end.link is None:
                out.append(jnp.broadcast_to(p, (q.shape[0], 3)))
            else:
                pose = poses[:, links.index(end.link)]
                out.append(pose[:, :3, :3] @ p + pose[:, :3, 3])
        return out[0], out[1]

    def signed_errors(self, theta, data) -> jnp.ndarray:
        """(n,) predicted minus measured distance (m)."""
        a, b = self.points(theta, data.q)
        return jnp.linalg.norm(a - b, axis=1) - data.length

    def rows(self, theta, data):
        return self.signed_errors(theta, data)[:, None] / self.config.sigma

    def row_sigmas(self) -> np.ndarray:
        return np.array([self.config.sigma])

    def errors(self, theta, data):
        return jnp.abs(self.signed_errors(theta, data))[:, None]
