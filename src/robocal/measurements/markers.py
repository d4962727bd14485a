"""Marker points rigidly attached to a link, measured in an external frame (motion capture, laser
tracker, stereo camera), optionally with the orientation of the marker body.

prediction_ij = T_frame(theta) @ FK_link(theta, q_i) @ p_j(theta), residual = (prediction - measured) / sigma.
Unknowns: the external frame (a problem frame), each point's offset on the link (or marker body),
and, for orientation measurements, the marker body's rotation relative to the link (a frame).
Orientation residuals are the rotation vector of R_measured^T R_predicted, masked per component.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from robocal.frames import kabsch
from robocal.kinematics import transforms as tf
from robocal.measurements.base import (
    BuildContext,
    JointRows,
    Measurement,
    MeasurementConfig,
    data_container,
    rows_on_own_parameters,
)
from robocal.parameters import Parameter
from robocal.validation import Sigma, Strict, Vec3


class PointOffset(Strict):
    initial: Vec3 = (0.0, 0.0, 0.0)
    estimate: bool = True


class PointConfig(Strict):
    name: str
    columns: tuple[str, str, str]
    offset: Literal["unknown"] | Vec3 | PointOffset = "unknown"

    def offset_spec(self) -> PointOffset:
        if self.offset == "unknown":
            return PointOffset()
        if isinstance(self.offset, PointOffset):
            return self.offset
        return PointOffset(initial=self.offset, estimate=False)


class OrientationConfig(Strict):
    columns: tuple[str, str, str, str] = Field(description="quaternion w, x, y, z of the marker body in the frame")
    body: str | None = Field(None, description="problem frame: marker body relative to the link (identity if omitted)")
    mask: tuple[bool, bool, bool] = (True, True, True)
    sigma: Sigma


class MarkersConfig(MeasurementConfig):
    type: Literal["markers"]
    link: str
    frame: str | None = Field(None, description="problem frame the data are expressed in (robot root if omitted)")
    points: list[PointConfig] = Field(min_length=1)
    orientation: OrientationConfig | None = None


@data_container
class MarkerData(JointRows):
    """q (n, n_inputs); points (n, m, 3): the m marker points of each row (m, in the measurement
    frame); quaternion (n, 4): w, x, y, z of the marker body, where an orientation is measured."""

    points: np.ndarray
    quaternion: np.ndarray | None = None


class MarkerMeasurement(Measurement):
    type_name = "markers"
    Config = MarkersConfig
    config: MarkersConfig
    error_label = "3D distance per point"

    def __init__(self, config: MarkersConfig, ctx: BuildContext):
        if not ctx.model.tree.has_link(config.link):
            raise ctx.error(f"unknown link '{config.link}'", "link")
        for key, name in (("frame", config.frame), ("orientation.body", config.orientation and config.orientation.body)):
            if name is not None and name not in ctx.frames:
                raise ctx.error(f"unknown frame '{name}' (declare it under frames:)", key)
        specs = [p.offset_spec() for p in config.points]
        estimated = [(p, s) for p, s in zip(config.points, specs) if s.estimate]
        self.initial_offsets = np.array([s.initial for s in specs], dtype=float)
        self.offset_index = np.full((len(specs), 3), -1)
        params: list[Parameter] = []
        for k, (p, s) in enumerate(zip(config.points, specs)):
            if s.estimate:
                self.offset_index[k] = np.arange(len(params), len(params) + 3)
                params += [Parameter(f"{config.name}.{p.name}.{c}", "point", s.initial[i]) for i, c in enumerate("xyz")]
        self.block = ctx.layout.add(f"measurement:{config.name}", params) if estimated else None
        super().__init__(config, ctx)

    def links(self) -> tuple[str, ...]:
        return (self.config.link,)

    def load(self, path: Path):
        table = self.read(path)
        points = table.columns([c for p in self.config.points for c in p.columns]).reshape(len(table), -1, 3)
        quaternion = None if self.config.orientation is None else table.columns(list(self.config.orientation.columns))
        return MarkerData(self.joint_matrix(table), points, quaternion), table.lines

    def offsets(self, theta):
        """(m, 3) point offsets in the link (or marker body) frame."""
        if self.block is None:
            return jnp.asarray(self.initial_offsets)
        values = jnp.concatenate([theta[self.block], jnp.zeros(1)])
        estimated = jnp.asarray(self.offset_index >= 0)
        return jnp.where(estimated, values[jnp.asarray(self.offset_index)], jnp.asarray(self.initial_offsets))

    def _frame(self, name, theta):
        return jnp.eye(4) if name is None else self.ctx.frames[name].pose(theta)

    def predict(self, theta, data: MarkerData):
        """Predicted points (n, m, 3) and marker-body rotations (n, 3, 3) in the measurement frame."""
        link = self.link_poses(theta, data.q, self.links())[:, 0]
        world = self._frame(self.config.frame, theta) @ link
        body = self._frame(self.config.orientation.body if self.config.orientation else None, theta)
        world_body = world @ body
        points = jnp.einsum("nij,mj->nmi", world_body[:, :3, :3], self.offsets(theta)) + world_body[:, None, :3, 3]
        return points, world_body[:, :3, :3]

    def own_parameters(self) -> np.ndarray:
        """Indices of theta the rows depend on: the robot parameters that move the link, the
        frames' parameters and the point offsets."""
        ctx, blocks = self.ctx, [self.block]
        for name in (self.config.frame, self.config.orientation.body if self.config.orientation else None):
            if name is not None:
                blocks.append(ctx.frames[name].block)
        own = [ctx.robot_block.start + ctx.model.parameters_affecting(self.links())]
        own += [np.arange(b.start, b.stop) for b in blocks if b is not None]
        return np.concatenate(own).astype(int)

    def rows(self, theta, data):
        return rows_on_own_parameters(self, theta, data)

    def own_rows(self, theta, data):
        points, rotations = self.predict(theta, data)
        n = points.shape[0]
        rows = ((points - data.points) / self.config.sigma).reshape(n, -1)
        if self.config.orientation is None or data.quaternion is None:
            return rows
        o = self.config.orientation
        measured = jax.vmap(tf.quaternion_to_matrix)(data.quaternion)
        angle = jax.vmap(lambda rm, rp: tf.matrix_to_rotvec(rm.T @ rp))(measured, rotations)
        return jnp.concatenate([rows, angle * jnp.asarray(o.mask, dtype=float) / o.sigma], axis=1)

    def point_columns(self) -> list[np.ndarray]:
        """One point per marker; the orientation columns (rad) are no point."""
        return [np.arange(3 * j, 3 * j + 3) for j in range(len(self.config.points))]

    def row_sigmas(self) -> np.ndarray:
        sigmas = np.full(3 * len(self.config.points), self.config.sigma)
        if self.config.orientation is not None:
            sigmas = np.concatenate([sigmas, np.full(3, self.config.orientation.sigma)])
        return sigmas

    def errors(self, theta, data):
        points, _ = self.predict(theta, data)
        return jnp.linalg.norm(points - data.points, axis=-1)

    def frame_guess(self, frame: str, theta: np.ndarray) -> np.ndarray | None:
        """Measurement frame from the data: alternate a Kabsch fit of the frame with a linear
        least-squares fit of the unknown point offsets (which start at their initial value)."""
        if frame != self.config.frame:
            return None
        link = np.asarray(self.link_poses(jnp.asarray(theta), self.data.q, self.links())[:, 0])
        body = self.config.orientation.body if self.config.orientation else None
        if body is not None and self.ctx.frames[body].initial is not None:
            link = link @ self.ctx.frames[body].initial
        measured = self.data.points
        offsets = self.initial_offsets.copy()
        estimated = (self.offset_index >= 0).any(axis=1)
        transform = np.eye(4)
        for _ in range(20):
            predicted = np.einsum("nij,mj->nmi", link[:, :3, :3], offsets) + link[:, None, :3, 3]
            transform = kabsch(predicted.reshape(-1, 3), measured.reshape(-1, 3))
            if not estimated.any():
                break
            # measured = R (R_i o + t_i) + t  =>  (R R_i) o = measured - R t_i - t, per point, stacked over rows.
            r = transform[:3, :3]
            for k in np.flatnonzero(estimated):
                a = np.einsum("ij,njk->nik", r, link[:, :3, :3]).reshape(-1, 3)
                b = (measured[:, k] - link[:, :3, 3] @ r.T - transform[:3, 3]).reshape(-1)
                offsets[k] = np.linalg.lstsq(a, b, rcond=None)[0]
        return transform
