"""Self-contact: each row names two bodies (links with contact geometry) that touch at the
recorded joint values; the signed distance between their shapes should be zero.

residual = signed_distance(shapes_a @ FK_a(theta, q), shapes_b @ FK_b(theta, q)) / sigma.
The body pairs are fixed by the calibration data; rows are grouped by pair (each group a static
shape), so every row evaluates only its own two bodies.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import InputError, RobocalError
from robocal.geometry.links import link_distance
from robocal.measurements.base import (
    BuildContext,
    JointRows,
    Measurement,
    MeasurementConfig,
    data_container,
    point_groups,
    rows_on_own_parameters,
)


class ContactConfig(MeasurementConfig):
    type: Literal["contact"]
    pair_columns: tuple[str, str] = ("body_a", "body_b")


@data_container
class ContactGroup(JointRows):
    """The rows of one body pair: q (n_k, n_inputs); index (n_k,): their places in file order."""

    index: np.ndarray


@data_container
class ContactData:
    """groups: one ContactGroup per body pair of the calibration data (`pairs`), in that order;
    pair (n,): each row's pair, in file order."""

    groups: tuple[ContactGroup, ...]
    pair: np.ndarray


class ContactMeasurement(Measurement):
    type_name = "contact"
    Config = ContactConfig
    config: ContactConfig
    error_label = "|signed distance|"
    rows_first = False  # the data hold the rows per pair

    def __init__(self, config: ContactConfig, ctx: BuildContext):
        self.pairs: tuple[tuple[str, str], ...] | None = None  # set by the calibration data
        super().__init__(config, ctx)

    def _known_pairs(self) -> tuple[tuple[str, str], ...]:
        """The calibration data's body pairs (known once those data are loaded)."""
        if self.pairs is None:
            raise RobocalError(f"measurement '{self.name}': its body pairs are known once the calibration data are loaded")
        return self.pairs

    def links(self) -> tuple[str, ...]:
        return tuple(sorted({link for pair in self._known_pairs() for link in pair}))

    def load(self, path: Path):
        table = self.read(path)
        names = table.strings(list(self.config.pair_columns), what="body column")
        for r, row in enumerate(names):
            for c, link in enumerate(row):
                if link not in self.ctx.geometry:
                    known = "unknown link" if not self.ctx.model.tree.has_link(link) else "link without contact geometry (declare it under geometry:)"
                    raise InputError(path, f"'{link}': {known}", line=int(table.lines[r]), field=self.config.pair_columns[c])
        keys = [tuple(sorted(row)) for row in names]
        if self.pairs is None:
            self.pairs = tuple(sorted(set(keys)))
        for r, key in enumerate(keys):
            if key not in self.pairs:
                raise InputError(
                    path, f"pair {key} is not among the calibration data's pairs {self.pairs}", line=int(table.lines[r]), field=self.config.pair_columns[0]
                )
        q = self.joint_matrix(table)
        pair = np.array([self.pairs.index(key) for key in keys])
        groups = tuple(ContactGroup(q[pair == k], np.flatnonzero(pair == k)) for k in range(len(self.pairs)))
        return ContactData(groups, pair), table.lines

    @staticmethod
    def configurations(data: ContactData) -> np.ndarray:
        """(n, n_actuated) joint values of the rows, in file order (the data hold them per pair)."""
        q = np.empty((len(data.pair), data.groups[0].q.shape[1]))
        for group in data.groups:
            q[np.asarray(group.index)] = np.asarray(group.q)
        return q

    def _distance(self, pair: tuple[str, str], pose_a, pose_b):
        """Signed distance between the two bodies of a pair at their poses (4, 4)."""
        (a, b), geometry = pair, self.ctx.geometry
        return link_distance(geometry[a], pose_a, geometry[b], pose_b)

    def signed_distances(self, theta, data):
        """(n,) signed distance of each row's pair at its joint values, in file order. The poses
        of every contact body come from one forward kinematics over all rows (one trace, not
        one per pair)."""
        links = self.links()
        poses = self.link_poses(theta, jnp.concatenate([group.q for group in data.groups]), links)
        out, start = jnp.zeros(data.pair.shape[0]), 0
        for pair, group in zip(self._known_pairs(), data.groups):
            stop = start + group.index.shape[0]
            a, b = (links.index(link) for link in pair)
            out = out.at[group.index].set(jax.vmap(partial(self._distance, pair))(poses[start:stop, a], poses[start:stop, b]))
            start = stop
        return out

    def own_parameters(self) -> np.ndarray:
        """Indices of theta the rows depend on: the robot parameters that move any contact body."""
        return self.ctx.robot_block.start + self.ctx.model.parameters_affecting(self.links())

    def rows(self, theta, data):
        return rows_on_own_parameters(self, theta, data)

    def own_rows(self, theta, data):
        return self.signed_distances(theta, data)[:, None] / self.config.sigma

    def own_jacobian(self, theta, data):
        """(own_rows (n, 1), their Jacobian (n, 1, len(own_parameters()))). A row is one scalar
        that depends on the poses of its pair's two bodies, so: the pose of each contact body on
        the rows that touch it (one forward kinematics per body, vectorized over those rows), the
        gradient of each pair's distances with respect to its two poses, then each body's
        reverse pass with that cotangent. A row costs the kinematics of its two bodies, not of
        every contact body, and each body's kinematics is traced once, not once per pair (seconds
        of start-up for a hand). A row has exact zeros for the parameters that move neither of
        its bodies."""
        own, pairs = self.own_parameters(), self._known_pairs()
        q = jnp.concatenate([group.q for group in data.groups])  # the rows in pair order
        pair = np.repeat(np.arange(len(pairs)), [len(group.index) for group in data.groups])
        touching = {link: np.flatnonzero([link in pairs[k] for k in pair]) for link in self.links()}  # each body's rows, ascending
        sub = theta[own]

        def pose(sub, q, link):
            return self.link_poses(theta.at[own].set(sub), q[None], (link,))[0, 0]

        def pulled(sub, q, cotangent, link):
            return jnp.sum(pose(sub, q, link) * cotangent)

        poses = {link: jax.vmap(partial(pose, sub, link=link))(q[rows]) for link, rows in touching.items()}
        values, cotangents = jnp.zeros(len(pair)), {link: jnp.zeros((len(rows), 4, 4)) for link, rows in touching.items()}
        for k, (a, b) in enumerate(pairs):
            rows = np.flatnonzero(pair == k)
            at_a, at_b = np.searchsorted(touching[a], rows), np.searchsorted(touching[b], rows)
            value, (cot_a, cot_b) = jax.vmap(jax.value_and_grad(partial(self._distance, (a, b)), argnums=(0, 1)))(poses[a][at_a], poses[b][at_b])
            values = values.at[rows].set(value)
            cotangents[a] = cotangents[a].at[at_a].add(cot_a)  # added, not set: right also for a body paired with itself
            cotangents[b] = cotangents[b].at[at_b].add(cot_b)
        jac = jnp.zeros((len(pair), len(own)))
        for link, rows in touching.items():
            jac = jac.at[rows].add(jax.vmap(jax.grad(partial(pulled, link=link)), in_axes=(None, 0, 0))(sub, q[rows], cotangents[link]))
        order = jnp.concatenate([group.index for group in data.groups])
        n, sigma = data.pair.shape[0], self.config.sigma
        rows_out, jacobian = jnp.zeros(n).at[order].set(values), jnp.zeros((n, len(own))).at[order].set(jac)
        return rows_out[:, None] / sigma, jacobian[:, None, :] / sigma

    def rows_in_mode(self, blocks: np.ndarray, belongs) -> tuple[np.ndarray, list[np.ndarray]]:
        """The contacts whose two bodies both belong to the mode."""
        pairs = self._known_pairs()
        keep = np.array([all(belongs(link) for link in pairs[int(i)]) for i in np.asarray(self.data.pair)], dtype=bool)
        return blocks[keep, 0], point_groups(int(keep.sum()), 1, self.point_columns())

    def row_sigmas(self) -> np.ndarray:
        return np.array([self.config.sigma])

    def errors(self, theta, data):
        return jnp.abs(self.signed_distances(theta, data))[:, None]
