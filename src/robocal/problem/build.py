"""Assemble a problem file into robot model, frames, measurements and one parameter vector."""

from __future__ import annotations

import fnmatch
from functools import cached_property
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import InputError, RobocalError
from robocal.frames import Frame, placement_matrix
from robocal.geometry.links import load_geometry
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import Mode, RobotModel
from robocal.kinematics.sensors import JointSensors
from robocal.kinematics.tree import KinematicTree
from robocal.measurements.base import BuildContext, Measurement, point_groups
from robocal.measurements.registry import measurement_types
from robocal.mobile.drive import NAMES as DRIVE_NAMES
from robocal.mobile.urdf import base_urdf
from robocal.parameters import Parameter, ParameterLayout
from robocal.problem.description import extract, is_description
from robocal.problem.schema import ProblemConfig, problem_config
from robocal.solver import MapProblem
from robocal.solver.map import rows_and_jacobian
from robocal.validation import load_yaml_model, validate_mapping


def joint_modes(tree: KinematicTree, config, path: Path) -> dict[str, Mode]:
    """Parameterization per joint: the default, then each pattern in order (later wins)."""
    modes = {j.name: config.default for j in tree.joints if config.default != "joint_offsets" or j.actuated}
    for pattern, mode in config.joints.items():
        matched = [j.name for j in tree.joints if fnmatch.fnmatchcase(j.name, pattern)]
        if not matched:
            known = f"the robot's joints: {', '.join(j.name for j in tree.joints)}" if tree.joints else "the robot has no joints"
            raise InputError(path, f"no joint matches '{pattern}' ({known})", field=f"parameters.joints.{pattern}")
        for name in matched:
            modes[name] = mode
    return modes


class Problem:
    """A calibration problem: parameters, their priors, and the measurement blocks."""

    def __init__(self, config: ProblemConfig, path: Path, frame_initials: dict[str, np.ndarray] | None = None):
        self.config, self.path = config, path
        self.layout = ParameterLayout()
        self.tree, self.robot = self._load_robot()
        robot_block = self.layout.add("robot", list(self.robot.parameters) if self.robot else [])
        drive_block = self.layout.add("drive", drive_parameters(config.drive)) if config.drive else None
        self.base_urdf = base_urdf(path, config, self.tree, set(self.robot.modes) if self.robot else set())  # checked before any data are read
        self.frames: dict[str, Frame] = {}
        for name, fc in config.frames.items():
            initial = None if fc.initial == "auto" else placement_matrix(fc.initial.xyz, fc.initial.rpy)
            if frame_initials and name in frame_initials:
                initial = frame_initials[name]
            frame = Frame(name, initial, None)
            if fc.estimate:
                frame.block = self.layout.add(f"frame:{name}", frame.parameters(fc.prior.translation, fc.prior.rotation))
            self.frames[name] = frame
        if self.tree is None:
            for key in ("task", "frames", "joint_values", "sensors"):
                if getattr(config, key):
                    raise InputError(path, "needs a robot: give `robot:` (a URDF or DH table)", field=key)
        if config.task is not None:
            assert self.tree is not None  # a task without a robot was refused above
            for key, link in [("reference", config.task.reference), *((f"tips[{i}]", tip) for i, tip in enumerate(config.task.tips))]:
                if link is not None and not self.tree.has_link(link):
                    raise InputError(path, f"unknown link '{link}'", field=f"task.{key}")
        self.geometry = load_geometry(config.geometry, path.parent, None if config.robot is None else path.parent / config.robot, path)
        for link in self.geometry:
            if self.tree is None or not self.tree.has_link(link):
                raise InputError(path, f"geometry given for unknown link '{link}'", field="geometry")
        types = measurement_types()
        self.measurements: list[Measurement] = []
        for i, mc in enumerate(config.measurements):
            # robot is None without `robot:`, for the types with needs_robot = False; BuildContext.robot does not declare the None
            ctx = BuildContext(
                path,
                self.robot,
                robot_block,
                self.frames,
                config.joint_values,
                self.layout,
                self.geometry,
                config_field=f"measurements[{i}]",
                drive=drive_block,
            )
            type_name = mc.type
            kind = types[type_name]
            if kind.needs_robot and self.robot is None:
                raise ctx.error(f"a '{type_name}' measurement needs a robot: give `robot:` (a URDF or DH table)", "type")
            if kind.needs_drive and drive_block is None:
                raise ctx.error(f"a '{type_name}' measurement needs a differential drive: give `drive:` (nominal wheel radii and wheelbase)", "type")
            measurement = kind(mc, ctx)  # the configuration checked against the robot, frames and layout
            measurement.read_data()
            self.measurements.append(measurement)
        if config.solver.outlier_threshold is not None:
            for m in self.measurements:
                if not m.independent_rows:
                    raise InputError(
                        path,
                        f"measurement '{m.name}' ({m.type_name}): its rows share estimates, so no row can be rejected; remove solver.outlier_threshold",
                        field="solver.outlier_threshold",
                    )
        names = [m.name for m in self.measurements]
        if len(set(names)) != len(names):
            raise InputError(path, "measurement names must be unique", field="measurements")
        try:
            self.layout.set_priors(self.priors_by_kind(), config.priors.overrides)
        except KeyError as exc:
            raise InputError(path, f"no parameter matches {exc}", field=f"priors.overrides.{exc.args[0]}") from None
        self._guess_frames()

    def priors_by_kind(self) -> dict[str, float | None]:
        """The problem's prior sigma per parameter kind (priors: in the problem file)."""
        p = self.config.priors
        return {"translation": p.translation, "rotation": p.rotation, "joint_offset": p.joint_offset, "point": p.point, "drive": p.drive, "gain": p.gain}

    @cached_property
    def unheld(self) -> Problem:
        """The problem with every parameter of its parameterization in its layout: those
        `parameters.fixed` leaves out decide what is fitted, not what is uncertain. The problem
        itself where nothing is fixed; else built once (same data, frames as guessed here), so its
        compiled rows serve every later call."""
        if self.tree is None or self.robot is None:
            raise RobocalError(f"{self.path}: the problem has no robot")
        if not self.config.parameters.fixed:
            return self
        config = self.config.model_copy(update={"parameters": self.config.parameters.model_copy(update={"fixed": []})})
        return Problem(config, self.path, {name: frame.initial for name, frame in self.frames.items() if frame.initial is not None})

    def _load_robot(self) -> tuple[KinematicTree | None, RobotModel | None]:
        config, path = self.config, self.path
        if config.robot is None:
            return None, None
        robot_path = config.robot if config.robot.is_absolute() else path.parent / config.robot
        tree = load_robot(robot_path)
        sensors = None
        if config.sensors is not None:
            if config.task is not None:
                raise InputError(
                    path, "a task samples joint configurations, which a robot read through raw sensors does not have; remove `task:`", field="task"
                )
            sensors_path = config.sensors if config.sensors.is_absolute() else path.parent / config.sensors
            sensors = JointSensors.load(sensors_path, tree.actuated)
        inputs = sensors.sensors if sensors else tree.actuated
        for name in config.joint_values:
            if name not in inputs:
                raise InputError(
                    path,
                    f"'{name}' is not {'a sensor of ' + sensors_path.name if sensors else 'an actuated joint of ' + robot_path.name}",
                    field=f"joint_values.{name}",
                )
        modes = joint_modes(tree, config.parameters, path)  # its own errors name their field (parameters.joints.<pattern>)
        try:
            return tree, RobotModel(tree, modes, fixed=config.parameters.fixed, sensors=sensors)
        except RobocalError as exc:
            raise InputError(path, str(exc), field="parameters") from None

    def model_parameters(self) -> np.ndarray:
        """Boolean mask of the robot's own parameters (kinematics, drive), as opposed to what the
        measurements add (frames, sensor mounts, marker offsets): the baseline keeps them nominal."""
        mask = np.zeros(len(self.layout), bool)
        for block in ("robot", "drive"):
            if block in self.layout.blocks:
                mask[self.layout.blocks[block]] = True
        return mask

    def _guess_frames(self) -> None:
        theta = self.layout.nominal
        for frame in self.frames.values():
            if frame.initial is not None:
                continue
            for m in self.measurements:
                guess = m.frame_guess(frame.name, theta)
                if guess is not None:
                    frame.initial = guess
                    break
            else:
                raise InputError(self.path, "initial: auto, but no measurement observes this frame; give xyz/rpy", field=f"frames.{frame.name}.initial")

    @property
    def theta0(self) -> np.ndarray:
        return self.layout.nominal

    def rows(self, theta, data):
        return [m.rows(theta, d) for m, d in zip(self.measurements, data)]

    @cached_property
    def map_problem(self) -> MapProblem:
        return MapProblem(
            rows=self.rows,
            data=[jnp_tree(m.data) for m in self.measurements],
            prior_mean=self.layout.nominal,
            prior_sqrt_precision=self.layout.prior_precision_sqrt(),
        )

    def unweighted_jacobian(self, theta, masks: list[np.ndarray] | None = None) -> np.ndarray:
        """(rows kept, parameters) Jacobian of the residuals in SI units (whitening undone), the
        rows outside `masks` (one (n,) array per measurement; default all) dropped."""
        blocks, jac = rows_and_jacobian(self.map_problem, theta)
        scales, keeps = [], []
        for m, b, mask in zip(self.measurements, blocks, masks or [np.ones(len(b)) for b in blocks]):
            scales.append(np.tile(m.row_sigmas(), b.shape[0]))
            keeps.append(np.repeat(mask > 0, b.shape[1]))
        scale, keep = np.concatenate(scales), np.concatenate(keeps)
        return (jac * scale[:, None])[keep]

    def stacked_points(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """The sigma of every stacked residual row, and the stacked row indices of each measured point."""
        sigmas, points, start = [], [], 0
        for m in self.measurements:
            k = len(m.row_sigmas())
            sigmas.append(np.tile(m.row_sigmas(), m.n))
            points += [start + group for group in point_groups(m.n, k, m.point_columns())]
            start += m.n * k
        return np.concatenate(sigmas), points


def drive_parameters(config) -> list[Parameter]:
    return [Parameter(name, "drive", getattr(config, name)) for name in DRIVE_NAMES]


def jnp_tree(data: dict) -> dict:
    return jax.tree.map(jnp.asarray, data)


def load_problem(path: str | Path, frame_initials: dict[str, np.ndarray] | None = None) -> Problem:
    """Load and assemble a problem file (YAML, or a URDF carrying a calibration description).
    `frame_initials` restores a stored result's frames (evaluation must use the model that was
    fitted). `parameters.select` is not applied here: the fit chooses what it holds
    (robocal.analysis.selection), with the problem's compiled Jacobian."""
    path = Path(path)
    if is_description(path):
        config = validate_mapping(path, extract(path)[0], problem_config())
    else:
        config = load_yaml_model(path, problem_config())
    return Problem(config, path, frame_initials)
