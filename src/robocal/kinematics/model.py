"""A kinematic tree plus its calibration parameterization: differentiable forward kinematics.

Per joint one of four parameterizations is chosen:

- ``joint_offsets``: an additive offset on an actuated joint variable (propagates to mimic joints);
- ``full``: the 6-DOF placement error of the joint origin, Trans(dx,dy,dz) Rot(rx,ry,rz) applied
  on the right of the nominal origin (in the joint frame, before the joint motion). For a revolute
  joint whose axis is a coordinate axis, the rotation about it is exactly a joint offset and gets
  the `joint_offset` prior kind;
- ``dh`` / ``xyzrpy``: additive errors on the origin's native numbers (d, theta, a, alpha for DH
  rows; x, y, z, roll, pitch, yaw for URDF origins);
- ``none``.

With joint sensors (`robocal.kinematics.sensors`), the input vector is the raw sensor readings
instead of the actuated joint values, and the sensors' offsets and gains are robot parameters too.

FK is a Python loop over the joints of the requested chains, jitted per (model, links) so that it
unrolls into one fixed graph, also when called eagerly; ``jax.vmap`` batches it over samples.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from functools import partial
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics import transforms as tf
from robocal.kinematics.sensors import JointSensors
from robocal.kinematics.tree import LENGTH_COORDINATES, KinematicTree
from robocal.parameters import Kind, Parameter

Mode = Literal["none", "joint_offsets", "full", "dh", "xyzrpy"]
MODES: tuple[str, ...] = ("none", "joint_offsets", "full", "dh", "xyzrpy")
FULL_COORDINATES = ("dx", "dy", "dz", "rx", "ry", "rz")


def _coordinate_axis(axis) -> int | None:
    """0, 1 or 2 when the joint axis is (plus or minus) that coordinate axis, else None."""
    hits = [i for i in range(3) if abs(abs(axis[i]) - 1.0) < 1e-12]
    return hits[0] if hits else None


class RobotModel:
    """Forward kinematics of a tree as a function of (robot parameters, inputs): the inputs are the
    actuated joint values, or the raw sensor readings when the model has joint sensors."""

    def __init__(self, tree: KinematicTree, modes: dict[str, Mode] | None = None, fixed: Sequence[str] = (), sensors: JointSensors | None = None):
        """`fixed`: parameter-name patterns (fnmatch) held at nominal, e.g. a gauge freedom; the
        entries a DH row declares known (`Origin.fixed`) are held as if listed here.
        `sensors`: the inputs are raw readings, turned into joint values by this sensor model."""
        self.tree, self.sensors = tree, sensors
        self.modes = {name: mode for name, mode in (modes or {}).items() if mode != "none"}
        n_joints = len(tree.joints)
        params: list[Parameter] = []
        moves: list[frozenset[str]] = []  # joints whose placement each parameter changes

        def driven_by(actuated: str) -> frozenset[str]:
            """The moving joints an actuated joint drives (itself and its mimics)."""
            return frozenset(j.name for j in tree.joints if j.moves and tree.driver(j.name)[0] == actuated)

        full_idx = -np.ones((n_joints, 6), dtype=int)
        native_idx = -np.ones((n_joints, 6), dtype=int)
        offset_idx = -np.ones(len(tree.actuated), dtype=int)
        for name, mode in self.modes.items():
            if mode not in MODES:
                raise RobocalError(f"joint '{name}': unknown parameterization '{mode}' (one of {', '.join(MODES)})")
            j = tree.joint_index.get(name)
            if j is None:
                raise RobocalError(f"{tree.source or tree.name}: no joint named '{name}'")
            joint = tree.joints[j]
            if mode == "joint_offsets":
                if sensors is not None:
                    raise RobocalError(f"joint '{name}': with joint sensors the offset is the sensor model's `{name}.offset`; give it no joint_offsets")
                if not joint.actuated:
                    raise RobocalError(
                        f"joint '{name}' is not actuated ({'fixed' if not joint.moves or joint.mimic is None else 'mimics ' + joint.mimic.joint}); joint_offsets needs an actuated joint"
                    )
                offset_idx[tree.actuated.index(name)] = len(params)
                kind: Kind = "translation" if joint.type == "prismatic" else "joint_offset"
                params.append(Parameter(f"{name}.offset", kind, 0.0, unit="m" if kind == "translation" else "rad"))
                moves.append(driven_by(name))
            elif mode == "full":
                along_axis = _coordinate_axis(joint.axis) if joint.type in ("revolute", "continuous") else None
                for c, coord in enumerate(FULL_COORDINATES):
                    full_idx[j, c] = len(params)
                    kind = "translation" if c < 3 else ("joint_offset" if c - 3 == along_axis else "rotation")
                    params.append(Parameter(f"{name}.{coord}", kind, 0.0, unit="m" if c < 3 else "rad"))
                    moves.append(frozenset((name,)))
            else:
                native = "xyzrpy" if mode == "xyzrpy" else ("dh", "mdh")
                if joint.origin.kind not in native:
                    raise RobocalError(
                        f"joint '{name}': parameterization '{mode}' needs a {'URDF' if mode == 'xyzrpy' else 'DH'} origin, this one is '{joint.origin.kind}'"
                    )
                for c, coord in enumerate(joint.origin.coordinates):
                    native_idx[j, c] = len(params)
                    is_length = coord in LENGTH_COORDINATES
                    params.append(
                        Parameter(f"{name}.{coord}", "translation" if is_length else "rotation", joint.origin.values[c], unit="m" if is_length else "rad")
                    )
                    moves.append(frozenset((name,)))
        sensor_idx = -np.ones((len(tree.actuated), 1 + (len(sensors.sensors) if sensors else 0)), dtype=int)  # column 0: offset
        for parameter, row, column in sensors.parameters() if sensors else ():
            sensor_idx[row, 0 if column is None else column + 1] = len(params)
            params.append(parameter)
            moves.append(driven_by(tree.actuated[row]))
        keep = _estimated(tree, params, fixed)
        renumber = np.append(np.where(keep, np.cumsum(keep) - 1, -1), -1)  # old index -> new, -1 dropped
        full_idx, native_idx, offset_idx, sensor_idx = (renumber[a] for a in (full_idx, native_idx, offset_idx, sensor_idx))
        self.parameters = [p for p, k in zip(params, keep) if k]
        self._moves = [m for m, k in zip(moves, keep) if k]
        n = len(self.parameters)
        # Index n points at an appended zero, so unparameterized entries gather a zero correction.
        self._full_idx = np.where(full_idx < 0, n, full_idx)
        self._native_idx = np.where(native_idx < 0, n, native_idx)
        self._offset_idx = np.where(offset_idx < 0, n, offset_idx)
        self._sensor_idx = np.where(sensor_idx < 0, n, sensor_idx)
        if sensors is not None:
            self._sensor_nominal = np.concatenate([sensors.offsets[:, None], sensors.gains], axis=1)
        self._native_base = np.array([np.pad(j.origin.values, (0, 6 - len(j.origin.values))) for j in tree.joints])
        self._has_full = np.asarray((full_idx >= 0).any(axis=1))
        self._has_native = np.asarray((native_idx >= 0).any(axis=1))
        self._constant_origin = [j.origin.matrix() for j in tree.joints]  # NumPy
        self._drivers = {j.name: tree.driver(j.name) for j in tree.joints if j.moves}

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names of the input vector q: the actuated joints, or the raw sensors when there are sensors."""
        return self.sensors.sensors if self.sensors else self.tree.actuated

    def inputs_for(self, links: Sequence[str]) -> tuple[str, ...]:
        """The inputs that move any of the links (the columns a data file needs)."""
        joints = self.tree.actuated_for(links)
        return self.sensors.driven_by(joints) if self.sensors else joints

    def calibrated_sensors(self, theta) -> JointSensors | None:
        """The sensor model at theta (None without sensors)."""
        if self.sensors is None:
            return None
        table = self._sensor_table(np.concatenate([np.asarray(theta, dtype=float), [0.0]]), np)
        return self.sensors.with_values(table[:, 0], table[:, 1:])

    def _sensor_table(self, theta_ext, xp=jnp):
        """(n_actuated, 1 + n_sensors): offset then gains per joint, parameters where they are."""
        return xp.where(self._sensor_idx < len(self.parameters), theta_ext[self._sensor_idx], self._sensor_nominal)

    @property
    def nominal(self) -> np.ndarray:
        return np.array([p.nominal for p in self.parameters], dtype=float)

    def parameters_affecting(self, links: Sequence[str]) -> np.ndarray:
        """Indices of the parameters that can move any of the links (the rest have zero Jacobian)."""
        joints = {self.tree.joints[j].name for link in links for j in self.tree.chain(link)}
        return np.array([i for i, moved in enumerate(self._moves) if moved & joints], dtype=int)

    def _origin(self, j: int, theta_ext):
        """Origin (4x4) of joint j at theta_ext (theta with a zero appended): NumPy for a NumPy
        theta, JAX for a JAX one."""
        joint = self.tree.joints[j]
        if self._has_native[j]:
            k = len(joint.origin.values)
            index = self._native_idx[j, :k]
            values = tf.array_module(theta_ext).where(index < len(self.parameters), theta_ext[index], self._native_base[j, :k])
            origin = joint.origin.matrix(values)
        else:
            origin = self._constant_origin[j]
        if self._has_full[j]:
            origin = origin @ tf.perturbation(theta_ext[self._full_idx[j]])
        return origin

    def joint_values(self, theta, q) -> dict:
        """Value of every moving joint from the actuated values q (with calibrated offsets)."""
        return self._joint_values(jnp.concatenate([jnp.asarray(theta), jnp.zeros(1)]), jnp.asarray(q))

    def _joint_values(self, theta_ext, q, joints: Sequence[str] | None = None):
        """Values of the moving `joints` (default: all); a mimic's unit gain and zero offset add
        no operation to a traced graph."""
        if self.sensors is not None:
            table = self._sensor_table(theta_ext)
            q = table[:, 0] + table[:, 1:] @ q
        q = q + theta_ext[self._offset_idx]
        index = {name: i for i, name in enumerate(self.tree.actuated)}
        values = {}
        for name in self._drivers if joints is None else joints:
            driver, gain, offset = self._drivers[name]
            value = q[index[driver]]
            value = value if gain == 1.0 else gain * value
            values[name] = value if offset == 0.0 else value + offset
        return values

    def link_poses(self, theta, q, links: Sequence[str]):
        """Poses (len(links), 4, 4) of the links in the root frame for one configuration q.

        Jitted once per (model, links): called eagerly (or under an eager `vmap`) it runs one
        compiled graph instead of dispatching and compiling every small JAX op on its own."""
        return _link_poses(self, jnp.asarray(theta), jnp.asarray(q), tuple(links))

    def batch_link_poses(self, theta, q, links: Sequence[str]):
        """Poses (n, len(links), 4, 4) for each row of q (n, len(inputs)): FK vectorized over the
        rows, jitted once per (model, links, row count). Concrete inputs are padded to
        `row_bucket(n)` rows, so that data files of other lengths reuse the compiled code, and
        give a NumPy array; traced inputs (inside a jit) are used as they are."""
        links = tuple(links)
        if isinstance(theta, jax.core.Tracer) or isinstance(q, jax.core.Tracer):
            return _batch_link_poses(self, theta, q, links)
        q = np.asarray(q, dtype=float)
        n = len(q)
        padded = np.concatenate([q, np.zeros((row_bucket(n) - n, q.shape[1]))])
        return np.asarray(_batch_link_poses(self, jnp.asarray(theta, dtype=float), jnp.asarray(padded), links))[:n]

    def _link_poses(self, theta, q, links: tuple[str, ...]):
        theta_ext = jnp.concatenate([theta, jnp.zeros(1)])
        chains = dict.fromkeys(j for link in links for j in self.tree.chain(link))
        values = self._joint_values(theta_ext, q, [self.tree.joints[j].name for j in chains if self.tree.joints[j].moves])
        poses = {self.tree.root: np.eye(4)}
        for link in links:
            for j in self.tree.chain(link):
                joint = self.tree.joints[j]
                if joint.child in poses:
                    continue
                t = poses[joint.parent] @ self._origin(j, theta_ext)
                if joint.moves:
                    t = t @ joint.motion(values[joint.name])
                poses[joint.child] = t
        return jnp.stack([poses[link] for link in links])

    def calibrated_origins(self, theta) -> dict[str, np.ndarray]:
        """Origins (4x4) of every joint the calibration changed, with joint offsets folded in.

        A joint offset d on an actuated joint becomes Motion(d) appended to its origin, and
        Motion(gain * d) on each joint that mimics it, so the URDF reproduces the calibrated FK.
        """
        theta_ext = np.concatenate([np.asarray(theta, dtype=float), [0.0]])
        offsets = theta_ext[self._offset_idx]
        out = {}
        for j, joint in enumerate(self.tree.joints):
            changed = self._has_full[j] or self._has_native[j]
            origin = self._origin(j, theta_ext)
            if joint.moves:
                driver, gain, _ = self._drivers[joint.name]
                if self._offset_idx[self.tree.actuated.index(driver)] < len(self.parameters):
                    origin = origin @ joint.motion(gain * offsets[self.tree.actuated.index(driver)])
                    changed = True
            if changed:
                out[joint.name] = origin
        return out

    def urdf_origins(self, theta) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """`calibrated_origins` as URDF (xyz, rpy), each rpy the equivalent triple nearest the
        joint's own (`transforms.rpy_near`): a written-back URDF differs from its source by what
        the calibration changed, not by a jump to another triple of the same rotation."""
        out = {}
        for name, t in self.calibrated_origins(theta).items():
            origin = self.tree.joint(name).origin
            own = origin.values[3:6] if origin.kind == "xyzrpy" else tf.matrix_to_rpy(np.asarray(origin.matrix())[:3, :3])
            out[name] = (t[:3, 3], tf.rpy_near(t[:3, :3], own))
        return out


def _estimated(tree: KinematicTree, params: list[Parameter], fixed: Sequence[str]) -> np.ndarray:
    """Which parameters are estimated: those no `fixed` pattern matches (each pattern must match
    one) that are no entry a DH row declares known (`Origin.fixed`, a row's `fixed:`)."""
    known = {f"{j.name}.{coordinate}" for j in tree.joints for coordinate in j.origin.fixed}
    for pattern in fixed:
        if not any(fnmatch.fnmatchcase(p.name, pattern) for p in params):
            raise RobocalError(f"fixed: no parameter matches '{pattern}'")
    return np.array([p.name not in known and not any(fnmatch.fnmatchcase(p.name, pat) for pat in fixed) for p in params], dtype=bool)


def row_bucket(n: int) -> int:
    """Row count that n rows are padded to before a compiled batch function: the next power of two
    (at least 16) up to 4096, then the next multiple of 4096 (at most 1/16 of padding there)."""
    return max(16, 1 << max(n - 1, 0).bit_length()) if n <= 4096 else -(-n // 4096) * 4096


@partial(jax.jit, static_argnums=(0, 3))
def _link_poses(model: RobotModel, theta, q, links: tuple[str, ...]):
    """`RobotModel.link_poses` compiled per (model, links): the model is static (hashed by identity)."""
    return model._link_poses(theta, q, links)


@partial(jax.jit, static_argnums=(0, 3))
def _batch_link_poses(model: RobotModel, theta, q, links: tuple[str, ...]):
    """`RobotModel.batch_link_poses`: (n, len(links), 4, 4), compiled per (model, links, n)."""
    return jax.vmap(lambda qi: model._link_poses(theta, qi, links))(q)
