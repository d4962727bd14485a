"""A measurement type that lives outside the package: a probe point on a link touches a known
plane (a face of a calibrated fixture, a table top). Written as a third party would write one:
this module and one `register_measurement` call, no edit to robocal.

residual = (n . p(theta, q) - d) / sigma, p = FK_link(theta, q) @ point; each data row gives the
joint values and the touched plane {x : n . x = d} in the robot root frame (unit normal n, offset
d in m), so one fixture with several faces is one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from robocal.measurements.base import BuildContext, JointRows, Measurement, MeasurementConfig, data_container
from robocal.validation import Vec3

PLANE_COLUMNS = ("normal_x", "normal_y", "normal_z", "offset")


class PlaneConfig(MeasurementConfig):
    type: Literal["plane"]
    link: str = Field(description="link that carries the probe")
    point: Vec3 = Field((0.0, 0.0, 0.0), description="probe point in the link's frame (m)")


@data_container
class PlaneData(JointRows):
    """q (n, n_inputs); normal (n, 3): unit normal of each row's plane; offset (n,): its offset (m)."""

    normal: np.ndarray
    offset: np.ndarray


class PlaneMeasurement(Measurement):
    type_name = "plane"
    Config = PlaneConfig
    config: PlaneConfig
    error_label = "|distance to plane|"

    def __init__(self, config: PlaneConfig, ctx: BuildContext):
        if not ctx.model.tree.has_link(config.link):
            raise ctx.error(f"unknown link '{config.link}'", "link")
        super().__init__(config, ctx)

    def links(self) -> tuple[str, ...]:
        return (self.config.link,)

    def load(self, path: Path):
        table = self.read(path)
        plane = table.columns(list(PLANE_COLUMNS), what="plane column")
        return PlaneData(self.joint_matrix(table), plane[:, :3] / np.linalg.norm(plane[:, :3], axis=1, keepdims=True), plane[:, 3]), table.lines

    def signed_errors(self, theta, data) -> jnp.ndarray:
        """(n,) signed distance (m) of the probe point from each row's plane."""
        pose = self.link_poses(theta, data.q, self.links())[:, 0]
        p = pose[:, :3, :3] @ jnp.asarray(self.config.point) + pose[:, :3, 3]
        return jnp.sum(data.normal * p, axis=1) - data.offset

    def rows(self, theta, data):
        return self.signed_errors(theta, data)[:, None] / self.config.sigma

    def row_sigmas(self) -> np.ndarray:
        return np.array([self.config.sigma])

    def errors(self, theta, data):
        return jnp.abs(self.signed_errors(theta, data))[:, None]
