"""Sphere-in-socket measurements (MUKCa): groups of joint configurations that hold one point of a
link (the ball center on the flange) in one fixed, unknown place (a socket of a plate).

The figures users judge a placement by, for predicted ball centers p_i in socket s(i) with mean m_s:
- MAE: mean over all rows of ||p_i - m_s(i)|| (the count-weighted mean of the per-socket means);
- distortion: | ||m_0 - m_1|| - distance |, the error of the known distance between sockets 0 and 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, model_validator

from robocal import svg
from robocal.errors import InputError
from robocal.io.sockets import read_socket_folder
from robocal.measurements.base import (
    BuildContext,
    JointRows,
    Measurement,
    MeasurementConfig,
    data_container,
    rows_on_own_parameters,
    summarize,
)
from robocal.validation import Positive, Sigma, Vec3


def _means(points, one_hot):
    """(K, 3) mean point per socket from the (n, K) one-hot socket matrix."""
    return (one_hot.T @ points) / one_hot.sum(axis=0)[:, None]


def socket_means(points, socket, n_sockets: int):
    """(n_sockets, 3) mean point of each socket; `socket` (n,) holds integer ids 0..n_sockets-1."""
    return _means(points, jax.nn.one_hot(socket, n_sockets, dtype=points.dtype))


def socket_spread(points, socket, n_sockets: int):
    """(n,) distance of each predicted point from the mean of its socket."""
    return jnp.linalg.norm(points - socket_means(points, socket, n_sockets)[socket], axis=-1)


def socket_mae(points, socket, n_sockets: int):
    return socket_spread(points, socket, n_sockets).mean()


def socket_distortion(points, socket, n_sockets: int, distance: float):
    """| ||m_0 - m_1|| - distance |."""
    means = socket_means(points, socket, n_sockets)
    return jnp.abs(jnp.linalg.norm(means[1] - means[0]) - distance)


class SocketConfig(MeasurementConfig):
    type: Literal["socket"]
    link: str = Field("ball_link", description="the link whose origin is the ball center")
    distance: Positive | None = Field(None, description="known distance between the centers of sockets 0 and 1 (m)")
    distance_sigma: Sigma | None = Field(None, description="std of that distance (m), e.g. the caliper's")
    positions: list[Vec3] | None = Field(None, description="known socket centers in the robot root frame (m), one per socket")

    @model_validator(mode="after")
    def _distance_needs_sigma(self):
        if self.distance is not None and self.distance_sigma is None:
            raise ValueError("distance_sigma is required with distance")
        if self.positions is not None and self.distance is not None:
            raise ValueError("give either positions (absolute socket centers) or distance, not both")
        return self


@data_container
class SocketData(JointRows):
    """q (n, n_inputs); one_hot (n, K): row i's socket as a one-hot vector over the K sockets."""

    one_hot: np.ndarray


class SocketMeasurement(Measurement):
    """Residuals of a placement with sockets s = 0..K-1 (n rows, the ball center p_i of row i):

    - spread: (p_i - m_s(i)) / sigma, with m_s the mean predicted center of socket s. The socket's
      unknown center is eliminated by its least-squares estimate (variable projection), so the
      cost is the paper's per-socket scatter and the rows carry no nuisance parameters;
    - distortion: (||m_1 - m_0|| - distance) / (distance_sigma sqrt(n)) appended to every row,
      so the rows together carry the square of the error of the known distance exactly once;
    - with known `positions` c_s instead: (p_i - c_s(i)) / sigma.

    The rows share the socket means, so none may be dropped (no outlier rejection).
    """

    type_name = "socket"
    Config = SocketConfig
    config: SocketConfig
    error_label = "distance of the predicted ball center from its socket's mean"
    headline = "mae"
    independent_rows = False

    def __init__(self, config: SocketConfig, ctx: BuildContext):
        if not ctx.model.tree.has_link(config.link):
            raise ctx.error(f"unknown link '{config.link}'", "link")
        super().__init__(config, ctx)

    @property
    def n_sockets(self) -> int:
        return int(self.data.one_hot.shape[1])

    def links(self) -> tuple[str, ...]:
        return (self.config.link,)

    def load(self, path: Path):
        """A placement folder (hole_<k>.csv) or a CSV with the joint columns and a `socket` column."""
        if path.is_dir():
            recording = read_socket_folder(path, self.chain_joints())
            q, socket, lines = self.with_other_joints(recording.q), recording.socket, recording.lines
        else:
            table = self.read(path)
            q, socket, lines = self.joint_matrix(table), self._socket_ids(table), table.lines
        counts = np.bincount(socket)
        if (counts < 2).any():
            k = int(np.argmin(counts))
            raise InputError(path, f"socket {k} has {counts[k]} configuration{'s' if counts[k] != 1 else ''}; a socket needs at least 2 to show a spread")
        if self.config.distance is not None and len(counts) < 2:
            raise InputError(path, "distance is given but the data hold only socket 0")
        if self.config.positions is not None and len(self.config.positions) != len(counts):
            raise self.ctx.error(f"{len(self.config.positions)} positions for {len(counts)} sockets in {self.config.data}", "positions")
        return SocketData(q, np.eye(len(counts))[socket]), lines

    @staticmethod
    def _socket_ids(table) -> np.ndarray:
        ids = table.columns(["socket"], what="column")[:, 0]
        for value, line in zip(ids, table.lines):
            if value != int(value) or value < 0:
                raise InputError(table.path, f"'{value:g}' is not a socket number (0, 1, ...)", line=int(line), field="socket")
        ids = ids.astype(int)
        missing = sorted(set(range(ids.max() + 1)) - set(ids))
        if missing:
            raise InputError(table.path, f"no rows for socket {', '.join(map(str, missing))}; sockets are numbered 0, 1, ... without gaps", field="socket")
        return ids

    def center(self, theta, q):
        """(3,) predicted ball center of one configuration, in the robot root frame."""
        return self.ctx.model.link_poses(theta[self.ctx.robot_block], q, self.links())[0, :3, 3]

    def points(self, theta, data):
        """(n, 3) predicted ball centers."""
        return jax.vmap(self.center, in_axes=(None, 0))(theta, data.q)

    def own_parameters(self) -> np.ndarray:
        return self.ctx.robot_block.start + self.ctx.model.parameters_affecting(self.links())

    def rows(self, theta, data):
        return rows_on_own_parameters(self, theta, data)

    def own_rows(self, theta, data):
        return self._rows_of_points(self.points(theta, data), data)

    def own_jacobian(self, theta, data):
        """Each row's ball center depends on the own parameters through forward kinematics, and
        the rows on the centers through a cheap map (means, distance). So: a reverse pass per
        center coordinate (3 per row, not one tangent per parameter: 4x faster on a Panda), then
        those Jacobians pushed forward through the map."""
        idx = jnp.asarray(self.own_parameters())

        def center(sub, q):
            p = self.center(theta.at[idx].set(sub), q)
            return p, p

        jac_p, p = jax.vmap(jax.jacrev(center, has_aux=True), in_axes=(None, 0))(theta[idx], data.q)  # (n, 3, m), (n, 3)

        def rows_of(points):
            return self._rows_of_points(points, data)

        def push(tangent):
            return jax.jvp(rows_of, (p,), (tangent,))[1]

        return rows_of(p), jax.vmap(push, in_axes=2, out_axes=2)(jac_p)

    def _rows_of_points(self, p, data):
        one_hot, cfg = data.one_hot, self.config
        centers = jnp.asarray(cfg.positions) if cfg.positions is not None else _means(p, one_hot)
        rows = (p - one_hot @ centers) / cfg.sigma
        if cfg.distance is None:
            return rows
        n = p.shape[0]
        error = jnp.linalg.norm(centers[1] - centers[0]) - cfg.distance
        return jnp.concatenate([rows, jnp.full((n, 1), error / (cfg.distance_sigma * np.sqrt(n)))], axis=1)

    def point_columns(self) -> list[np.ndarray]:
        """The ball center, and the distance error where there is one."""
        return [np.arange(3)] + ([np.array([3])] if self.config.distance is not None else [])

    def row_sigmas(self) -> np.ndarray:
        cfg = self.config
        sigmas = [cfg.sigma] * 3
        if cfg.distance is not None:
            sigmas.append(cfg.distance_sigma * np.sqrt(self.n))
        return np.array(sigmas)

    def errors(self, theta, data):
        """(n, 1) distance of each predicted ball center from its socket's mean."""
        p = self.points(theta, data)
        return jnp.linalg.norm(p - data.one_hot @ _means(p, data.one_hot), axis=1)[:, None]

    def predicted_points(self, data, theta) -> np.ndarray:
        return np.asarray(self.jitted("points")(jnp.asarray(theta), jax.tree.map(jnp.asarray, data)))

    def figures(self, data, theta, keep=None) -> dict[str, float]:
        """MAE and distortion (the README's definitions) besides the error statistics; every row
        counts (the rows share the socket means), so `keep` must keep them all."""
        p, one_hot = self.predicted_points(data, theta), np.asarray(data.one_hot)
        means = _means(p, one_hot)
        spread = np.linalg.norm(p - one_hot @ means, axis=1)
        out = {"mae": float(spread.mean()), **summarize(spread)}
        if self.config.distance is not None:
            out["distortion"] = float(abs(np.linalg.norm(means[1] - means[0]) - self.config.distance))
        return out

    def figure(self, before: np.ndarray, after: np.ndarray) -> str:
        """Predicted ball centers about their socket's mean, top (x-y) and side (x-z) views, in mm,
        as one SVG: a row per socket, before calibration in the left half, after in the right
        (each half on its own scale); the dashed circle's radius is the socket's MAE."""

        one_hot = np.asarray(self.data.one_hot)
        halves = []
        for label, theta in (("before", before), ("after", after)):
            p = self.predicted_points(self.data, theta)
            offsets = (p - one_hot @ _means(p, one_hot)) * 1e3
            halves.append((label, offsets, 1.1 * float(np.abs(offsets).max())))
        rows = []
        for s in range(self.n_sockets):
            panels = []
            for k, (label, offsets, limit) in enumerate(halves):
                mine = offsets[one_hot[:, s] > 0]
                mae = float(np.linalg.norm(mine, axis=1).mean())
                for i, j in ((0, 1), (0, 2)):
                    title = f"socket {s} {label}: MAE {mae:.3f} mm"
                    panels.append(svg.scatter(mine[:, [i, j]], title, f"{'xyz'[i]} (mm)", f"{'xyz'[j]} (mm)", limit, color=4 if k == 0 else 0, circle=mae))
            rows.append(panels)
        return svg.grid(rows, f"{self.name}: predicted ball centers about each socket's mean (circle: MAE)")
