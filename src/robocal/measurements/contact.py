"""Self-contact: each row names two bodies (links with contact geometry) that touch at the
recorded joint values; the signed distance between their shapes should be zero.

residual = signed_distance(shapes_a @ FK_a(theta, q), shapes_b @ FK_b(theta, q)) / sigma.
The body pairs are fixed by the calibration data; under `jit` every row evaluates each pair's
distance and keeps its own, which keeps shapes static at the cost of a few cheap distances.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import InputError
from robocal.geometry.links import link_distance
from robocal.measurements.base import BuildContext, Measurement, MeasurementConfig


class ContactConfig(MeasurementConfig):
    type: Literal["contact"]
    pair_columns: tuple[str, str] = ("body_a", "body_b")


class ContactMeasurement(Measurement):
    type_name = "contact"
    Config = ContactConfig
    error_label = "|signed distance|"

    def __init__(self, config: ContactConfig, ctx: BuildContext):
        self.pairs: tuple[tuple[str, str], ...] | None = None  # set by the calibration data
        super().__init__(config, ctx)

    def links(self) -> tuple[str, ...]:
        return tuple(sorted({link for pair in self.pairs for link in pair}))

    def load(self, path: Path):
        table = self.read(path)
        names = table.strings(list(self.config.pair_columns), what="body column")
        for r, row in enumerate(names):
            for c, link in enumerate(row):
                if link not in self.ctx.geometry:
                    known = "unknown link" if not self.ctx.robot.tree.has_link(link) else "link without contact geometry (declare it under geometry:)"
                    raise InputError(path, f"'{link}': {known}", line=int(table.lines[r]), field=self.config.pair_columns[c])
        keys = [tuple(sorted(row)) for row in names]
        if self.pairs is None:
            self.pairs = tuple(sorted(set(keys)))
        for r, key in enumerate(keys):
            if key not in self.pairs:
                raise InputError(path, f"pair {key} is not among the calibration data's pairs {self.pairs}", line=int(table.lines[r]), field=self.config.pair_columns[0])
        pair = np.array([self.pairs.index(key) for key in keys])
        return {"q": self.joint_matrix(table), "pair": pair}, table.lines

    def signed_distances(self, theta, data):
        """(n,) signed distance of each row's pair at its joint values."""
        links = self.links()
        poses = self.link_poses(theta, data["q"], links)
        geometry = self.ctx.geometry
        per_pair = [
            jax.vmap(lambda pa, pb, a=a, b=b: link_distance(geometry[a], pa, geometry[b], pb))(poses[:, links.index(a)], poses[:, links.index(b)])
            for a, b in self.pairs
        ]
        return jnp.take_along_axis(jnp.stack(per_pair, axis=1), data["pair"][:, None], axis=1)[:, 0]

    def rows(self, theta, data):
        return self.signed_distances(theta, data)[:, None] / self.config.sigma

    def row_sigmas(self) -> np.ndarray:
        return np.array([self.config.sigma])

    def errors(self, theta, data):
        return jnp.abs(self.signed_distances(theta, data))[:, None]
