"""The problem YAML, validated with pydantic (documented in docs/formats.md).

Measurement entries are a discriminated union over the registered measurement types, so a new
measurement type adds its own config class and nothing here changes: `problem_config()` is the
problem schema of the types registered now (robocal.measurements.registry).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import Field, create_model, model_validator

from robocal.geometry.links import GeometryConfig
from robocal.kinematics.model import Mode
from robocal.measurements.base import MeasurementConfig
from robocal.measurements.registry import config_classes
from robocal.validation import Count, Positive, Seed, Sigma, Strict, Vec3


class Placement(Strict):
    """A rigid transform: translation (m) and URDF roll-pitch-yaw (rad)."""

    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)


class FramePrior(Strict):
    translation: Positive | None = None
    rotation: Positive | None = None


class FrameConfig(Strict):
    """An unknown (or known) rigid transform, e.g. the robot root in the measuring system's frame."""

    initial: Literal["auto"] | Placement = "auto"
    estimate: bool = True
    prior: FramePrior = Field(default_factory=FramePrior)


class ParametersConfig(Strict):
    default: Mode = "none"
    joints: dict[str, Mode] = Field(default_factory=dict, description="joint name or glob pattern -> parameterization")
    fixed: list[str] = Field(default_factory=list, description="parameter-name patterns held at their nominal value")
    select: Literal["all", "identifiable"] = Field(
        "all", description="identifiable: keep a base set of robot parameters (pivoted QR on the data's Jacobian), fix the rest"
    )


class PriorConfig(Strict):
    """Gaussian prior sigma per parameter kind (SI units); null means no prior."""

    translation: Sigma | None = 0.001
    rotation: Sigma | None = 0.001
    joint_offset: Sigma | None = 0.01
    point: Sigma | None = None
    gain: Sigma | None = Field(None, description="gains of joint sensors (joint units per raw unit)")
    drive: Sigma | None = Field(None, description="wheel radii and wheelbase of a differential drive (m)")
    overrides: dict[str, Sigma | None] = Field(default_factory=dict)


class SolverConfig(Strict):
    method: Literal["map", "closed_form", "scaled_svd"] = Field(
        "map",
        description="closed_form: the measurement's own closed-form estimate (e.g. Censi's for odometry), with the MAP covariance at it; "
        "scaled_svd: iterated least squares through the SVD with Schroer scaling (the data-glove seed's procedure) on the same objective",
    )
    max_iterations: Count = 1000
    tolerance: Positive = 1e-10
    huber: Positive | None = Field(None, description="Huber threshold on a row's whitened error (in sigmas)")
    outlier_threshold: Positive | None = Field(None, description="reject rows whose whitened error exceeds this")
    max_rejection_rounds: Count = 5


class TaskConfig(Strict):
    """The task the calibration is for: its predicted error goes into report.json."""

    tips: list[str] = Field(min_length=1, description="tip links whose positions matter")
    reference: str | None = Field(None, description="positions relative to this link (default: the first tip; the root link with one tip)")
    n: Count = Field(1000, description="configurations of the uniform Cartesian test set")
    seed: Seed = 0


MISFIT = 4.0  # mean squared whitened residual above which a model does not explain its data


class VerdictConfig(Strict):
    """Thresholds of the verdict (problem file key `verdict:`); SI units."""

    prior_sigmas: Positive = Field(
        5.0,
        description="a parameter more than this many prior sigmas from nominal: the data contradict the prior "
        "(a Gaussian deviation beyond 5 sigma has odds below 1 in 3 million)",
    )
    max_translation: Positive = Field(0.05, description="m; a robot length error above 50 mm is a wrong model or a fit gone astray, not a manufacturing error")
    max_rotation: Positive = Field(float(np.radians(10.0)), description="rad; an angle error above 10 deg likewise")
    weak_translation: Positive = Field(
        0.005,
        description="m; a parameter without a prior whose posterior std exceeds 5 mm is not determined "
        "by the data at the size of real kinematic errors (millimetres)",
    )
    weak_rotation: Positive = Field(float(np.radians(1.0)), description="rad; likewise 1 deg")
    misfit: Positive = Field(
        MISFIT, description="mean squared whitened residual above 4 (residuals twice the declared sigma): the model does not explain the data"
    )
    small_residuals: Positive = Field(
        0.25,
        description="mean squared whitened residual below 0.25 (half the declared sigma): the sigma is "
        "set too large and every reported uncertainty is overstated",
    )
    crossval_ratio: Positive = Field(
        2.0,
        description="held-out rms over training rms; about sqrt((1 + p/N) / (1 - p/N)) for p parameters and "
        "N residuals, so 2 means the parameters absorb well over half the data",
    )


class DriveConfig(Strict):
    """A differential-drive base: nominal wheel radii and axle length (m), calibrated as parameters
    wheel_radius_left, wheel_radius_right, wheelbase (prior: `priors.drive`)."""

    wheel_radius_left: Positive
    wheel_radius_right: Positive
    wheelbase: Positive
    wheels: tuple[str, str] | None = Field(
        None, description="left and right wheel joints of the robot's URDF (`robot:`): calibrated.urdf gets the radii and the wheelbase (robocal.mobile.urdf)"
    )


class ProblemConfig(Strict):
    robot: Path | None = Field(None, description="URDF or DH table; may be omitted when only a mobile base (drive:) is calibrated")
    sensors: Path | None = Field(None, description="joint sensor model (YAML): the data give raw sensor readings, joint = offset + gains @ raw")
    drive: DriveConfig | None = None
    joint_values: dict[str, float] = Field(
        default_factory=dict, description="values of actuated joints (raw sensors, with `sensors:`) absent from the data (default 0)"
    )
    parameters: ParametersConfig = Field(default_factory=ParametersConfig)
    priors: PriorConfig = Field(default_factory=PriorConfig)
    frames: dict[str, FrameConfig] = Field(default_factory=dict)
    geometry: GeometryConfig = Field(default_factory=GeometryConfig)
    solver: SolverConfig = Field(default_factory=SolverConfig)
    task: TaskConfig | None = None
    verdict: VerdictConfig = Field(default_factory=VerdictConfig, description="thresholds of the verdict (robocal.analysis.verdict, docs/trust.md)")
    measurements: list[MeasurementConfig] = Field(min_length=1, description="each entry validated by its type's Config (see problem_config)")

    @model_validator(mode="after")
    def _unique_measurement_names(self):
        names = [m.name for m in self.measurements]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"measurement names must be unique; given twice: {', '.join(twice)}")
        return self


def problem_config() -> type[ProblemConfig]:
    """The schema of a problem file: `ProblemConfig` whose measurement entries are told apart by
    their `type` among the measurement types registered now."""
    return _with_measurement_types(config_classes())


@cache
def _with_measurement_types(configs: tuple[type, ...]) -> type[ProblemConfig]:
    entry: Any = Annotated[Union[configs], Field(discriminator="type")]  # noqa: UP007 (a union built at run time: a value, no static type)
    return create_model("ProblemConfig", __base__=ProblemConfig, measurements=(list[entry], Field(min_length=1)))  # type: ignore[call-overload]
