"""What every measurement model provides, and the context it is built in."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, dataclass_transform

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from robocal.errors import InputError
from robocal.frames import Frame
from robocal.io.table import Table, read_table
from robocal.kinematics.model import RobotModel, row_bucket
from robocal.parameters import ParameterLayout
from robocal.validation import Sigma, Strict


class MeasurementConfig(Strict):
    """Fields shared by every measurement entry of a problem file."""

    name: str
    type: str = Field(description="the measurement type; each type's Config narrows it to its own name")
    data: Path
    sigma: Sigma = Field(description="standard deviation of one measured coordinate (SI)")
    joints: dict[str, str] = Field(default_factory=dict, description="joint name -> data column, where they differ")


@dataclass
class BuildContext:
    """What a measurement needs from its problem: files, the robot, frames, the parameter layout."""

    problem_path: Path
    robot: RobotModel | None  # None only for types with needs_robot = False, in a problem without `robot:`
    robot_block: slice
    frames: dict[str, Frame]
    joint_values: dict[str, float]
    layout: ParameterLayout
    geometry: dict = field(default_factory=dict)  # link -> tuple of LinkShape (robocal.geometry.links)
    config_field: str = ""  # e.g. "measurements[0]", for error messages
    drive: slice | None = None  # the problem's differential-drive parameters, if it has a `drive:`

    @property
    def model(self) -> RobotModel:
        """The robot, for the measurement types that need one (`needs_robot`, the default): the
        problem refuses them before they are built when it has no `robot:`."""
        if self.robot is None:
            raise self.error("this measurement needs a robot: give `robot:` (a URDF or DH table)", "type")
        return self.robot

    def resolve(self, path: Path) -> Path:
        return path if path.is_absolute() else self.problem_path.parent / path

    def error(self, message: str, field: str) -> InputError:
        return InputError(self.problem_path, message, field=f"{self.config_field}.{field}")


@dataclass_transform(frozen_default=True)
def data_container(cls):
    """Class decorator: a measurement's data as a frozen dataclass registered as a JAX pytree
    (jit, vmap and the row padding see its arrays as leaves). Each class states its fields'
    shapes in its docstring; n is the number of data rows."""
    return jax.tree_util.register_dataclass(dataclass(frozen=True)(cls))


@data_container
class JointRows:
    """q (n, n_inputs): the robot's input values (actuated joints or raw sensors) of each row."""

    q: np.ndarray


def summarize(errors: np.ndarray) -> dict[str, float]:
    e = np.asarray(errors, dtype=float).ravel()
    return {"rms": float(np.sqrt(np.mean(e**2))), "mean": float(e.mean()), "max": float(e.max())}


def point_groups(n: int, k: int, columns: list[np.ndarray]) -> list[np.ndarray]:
    """Row indices of each measured point in n blocks of k Jacobian rows, one group per entry of
    `columns` (the columns of a data row that measure one point) in each block."""
    return [i * k + c for i in range(n) for c in columns]


def measurement_errors(measurement: Measurement, data, theta) -> np.ndarray:
    """Unwhitened errors (n, m) in SI units of one measurement on `data` at `theta` (jitted)."""
    return on_rows(measurement, "errors", theta, data)


def on_rows(measurement: Measurement, method: str, theta, data) -> np.ndarray:
    """`measurement.<method>(theta, data)`, jitted, as NumPy with one entry per row first, on
    the data padded by `padded_rows` (the padding cut off the result again)."""
    padded, n = padded_rows(measurement, data)
    out = np.asarray(measurement.jitted(method)(jnp.asarray(theta), padded))
    return out[:n] if n is not None else out


def rows_shape(measurement: Measurement, method: str, theta, data) -> tuple[int, ...]:
    """Shape of `on_rows(measurement, method, theta, data)`, traced but not computed (the trace
    is the one `on_rows` then reuses)."""
    padded, n = padded_rows(measurement, data)
    shape = measurement.jitted(method).eval_shape(jnp.asarray(theta), padded).shape
    return (shape[0] if n is None else n, *shape[1:])


def padded_rows(measurement: Measurement, data) -> tuple[dict, int | None]:
    """(the data as JAX arrays, their row count n). Where the rows are independent and every leaf
    has one entry per row, padded to `row_bucket(n)` rows by repeating the last row, so that
    data files of other lengths reuse the compiled code. n is None where the leaves do not hold
    one entry per row (`rows_first` False: contacts are held per body pair), which are not padded."""
    if not measurement.rows_first:
        return jax.tree.map(jnp.asarray, data), None
    leaves = jax.tree.leaves(data)
    n = len(leaves[0]) if leaves else 0
    pad = row_bucket(n) - n if n and measurement.independent_rows and measurement.rows_first else 0
    if pad:
        data = jax.tree.map(lambda leaf: np.concatenate([leaf, np.repeat(np.asarray(leaf)[-1:], pad, axis=0)]), data)
    return jax.tree.map(jnp.asarray, data), n


@dataclass
class ClosedForm:
    """A closed-form estimate: parameter values by index into theta, the rows it used, and why
    each of the others was left out (row index -> reason)."""

    values: dict[int, float]
    keep: np.ndarray
    left_out: dict[int, str] = field(default_factory=dict)


class Measurement(ABC):
    """A block of residual rows; `rows` and `errors` are pure JAX functions of (theta, data)."""

    type_name: ClassVar[str]
    Config: ClassVar[type[MeasurementConfig]]
    data: Any  # the calibration data (the type's data container), set by `read_data`
    lines: np.ndarray  # (n,) source line of each row
    error_label: ClassVar[str] = "error"
    headline: ClassVar[str] = "rms"  # the figure that before/after and `removed` are judged by
    independent_rows: ClassVar[bool] = True  # False: rows share estimates (e.g. a mean), so none may be dropped
    rows_first: ClassVar[bool] = True  # every leaf of the data has one entry per row along axis 0
    needs_robot: ClassVar[bool] = True  # False: the measurement works without `robot:` (e.g. a mobile base alone)
    needs_drive: ClassVar[bool] = False  # True: it needs the problem's `drive:`

    def __init__(self, config: MeasurementConfig, ctx: BuildContext):
        """Checks the configuration against the problem (robot, frames) and adds the parameters
        the type owns to `ctx.layout`; reads no file. `read_data` then loads the data."""
        for joint in config.joints:
            if ctx.robot is None:
                raise ctx.error("joint columns are given, but the problem has no `robot:`", f"joints.{joint}")
            if joint not in ctx.robot.inputs:
                raise ctx.error(f"'{joint}' is not an {'input sensor' if ctx.robot.sensors else 'actuated joint'} of the robot", f"joints.{joint}")
        self.config, self.ctx, self.name = config, ctx, config.name

    def read_data(self) -> None:
        """Load the configuration's data file into `data` and `lines` (the calibration data)."""
        self.data, self.lines = self.load(self.ctx.resolve(self.config.data))

    @property
    def n(self) -> int:
        return len(self.lines)

    @abstractmethod
    def links(self) -> tuple[str, ...]:
        """Links whose poses the model uses (decides which joint columns the data must have)."""

    @abstractmethod
    def load(self, path: Path) -> tuple[Any, np.ndarray]:
        """The data of a file (the type's data container; with `rows_first`, arrays with one
        leading row axis) and the source line of each row. Used for the calibration data and for
        held-out files alike."""

    @abstractmethod
    def rows(self, theta, data) -> jnp.ndarray:
        """Whitened residuals (n, k): (prediction - measurement) / sigma."""

    @abstractmethod
    def row_sigmas(self) -> np.ndarray:
        """Sigma (SI) of each residual column, to undo the whitening: unweighted = rows * sigmas."""

    @abstractmethod
    def errors(self, theta, data) -> jnp.ndarray:
        """Unwhitened errors in SI units, (n, m): the figures reported before/after calibration."""

    def jitted(self, method: str, **options):
        """`jax.jit` of a method, kept for the measurement's lifetime: a fresh jit of a bound
        method would compile again on every call."""
        cache = self.__dict__.setdefault("_jitted", {})
        if method not in cache:
            cache[method] = jax.jit(getattr(self, method), **options)
        return cache[method]

    def figures(self, data, theta, keep: np.ndarray | None = None) -> dict[str, float]:
        """The figures of merit (SI) of the errors at theta, over the rows in `keep`."""
        errors = measurement_errors(self, data, theta)
        return summarize(errors if keep is None else errors[keep])

    def figure(self, before: np.ndarray, after: np.ndarray) -> str | None:
        """An SVG (robocal.svg) of this measurement's data before/after calibration, if it has one
        beyond the generic error plots (e.g. the predicted ball centers of a socket): shown in
        report.html and written beside it as <name>.svg."""
        return None

    def point_columns(self) -> list[np.ndarray]:
        """The columns of a row that together measure one point (the Schroer scaling of
        `robocal analyze`); by default each column alone."""
        return [np.array([c]) for c in range(len(self.row_sigmas()))]

    def rows_in_mode(self, blocks: np.ndarray, belongs) -> tuple[np.ndarray, list[np.ndarray]]:
        """This measurement's unweighted Jacobian (n, k, P) in a mode of `robocal analyze`
        (`belongs(link)` tells the mode's links): the kept rows (r, P) and the row indices of each
        measured point in them. By default the measurement is kept whole when all its links
        belong to the mode, else dropped."""
        n, k, p = blocks.shape
        if not all(belongs(link) for link in self.links()):
            return np.zeros((0, p)), []
        return blocks.reshape(-1, p), point_groups(n, k, self.point_columns())

    def own_jacobian(self, theta, data):
        """For measurements whose `rows` are `rows_on_own_parameters`: (own_rows, their Jacobian
        (n, k, len(own_parameters())) with respect to theta[own_parameters()]). Forward mode here,
        one tangent per own parameter; a measurement overrides it where its structure gives a
        cheaper one."""
        idx = jnp.asarray(self.own_parameters())
        rows = self.own_rows(theta, data)
        return rows, jax.jacfwd(lambda sub: self.own_rows(theta.at[idx].set(sub), data))(theta[idx])

    def frame_guess(self, frame: str, theta: np.ndarray) -> np.ndarray | None:
        """An initial pose for an `initial: auto` frame this measurement observes, if it can give one."""
        return None

    def provenance(self) -> dict:
        """How the data were derived from the files, where that took estimation (e.g. a clock
        offset); reported beside the measurement's figures."""
        return {}

    def closed_form(self, theta: np.ndarray) -> ClosedForm | None:
        """This measurement's own closed-form estimate (`solver.method: closed_form`), if it has one."""
        return None

    # ---- shared helpers -------------------------------------------------------------------

    @staticmethod
    def configurations(data) -> np.ndarray:
        """(n, n_actuated) joint values of each row of a data container."""
        return np.asarray(data.q)

    def chain_joints(self) -> tuple[str, ...]:
        """The inputs (actuated joints, or raw sensors) that move `links()`: what each data row must give."""
        return self.ctx.model.inputs_for(self.links())

    def joint_matrix(self, table: Table) -> np.ndarray:
        """(n, n_inputs) input values from the table's columns of `chain_joints()`."""
        columns = [self.config.joints.get(name, name) for name in self.chain_joints()]
        return self.with_other_joints(table.columns(columns, what="joint column"))

    def with_other_joints(self, values: np.ndarray) -> np.ndarray:
        """(n, n_inputs) input values: `values` (n, len(chain_joints())) for the inputs that move
        `links()`, the problem's `joint_values` (default 0) for the others."""
        inputs = self.ctx.model.inputs
        q = np.array([self.ctx.joint_values.get(name, 0.0) for name in inputs], dtype=float)
        q = np.tile(q, (len(values), 1))
        q[:, [inputs.index(name) for name in self.chain_joints()]] = values
        return q

    def link_poses(self, theta, q, links: tuple[str, ...]):
        """Poses (n, len(links), 4, 4) of links in the robot root frame for each configuration."""
        return self.ctx.model.batch_link_poses(theta[self.ctx.robot_block], q, links)

    @staticmethod
    def read(path: Path) -> Table:
        return read_table(path)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def rows_on_own_parameters(measurement, theta, data):
    """`measurement.own_rows(theta, data)`, differentiated only with respect to
    `measurement.own_parameters()`: the entries of theta its rows can depend on (e.g. the 16 of a
    hand's 64 DH parameters that move one finger). The solver's `jacfwd` then gets the rows'
    Jacobian from `measurement.own_jacobian`, over those parameters only, instead of pushing one
    tangent per parameter of the whole problem through the rows."""
    return measurement.own_rows(theta, data)


@rows_on_own_parameters.defjvp
def _rows_on_own_parameters_jvp(measurement, primals, tangents):
    theta, data = primals
    rows, jac = measurement.own_jacobian(theta, data)
    return rows, jac @ tangents[0][jnp.asarray(measurement.own_parameters())]
