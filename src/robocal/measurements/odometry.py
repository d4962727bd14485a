"""Odometry of a differential drive against the displacements of a sensor mounted on the base.

Each row is one interval: the wheels turned by (phi_L, phi_R) while the sensor (a laser by scan
matching, or a motion-capture body) moved by B in its own frame. The model predicts
B = X⁻¹ A(r_L, r_R, b; phi) X (A X = X B, the seed's Eq. 3), with A the arc of `mobile.drive`
and X = (x, y, yaw) the sensor's pose in the base frame; residual = (prediction - B) / sigma,
the yaw component wrapped. Unknowns: the problem's `drive:` parameters and the sensor pose
(parameters `<sensor>_x`, `<sensor>_y`, `<sensor>_yaw`).

The closed form of Censi et al. (`mobile.censi`, with its trimming) gives the initial sensor pose
and, with `solver.method: closed_form`, the estimate itself; the MAP fit refines it with the
declared sigmas and the core's priors, over the rows the trimming kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, NonNegativeInt

from robocal.errors import RobocalError
from robocal.io.intervals import read_intervals
from robocal.measurements.base import (
    BuildContext,
    ClosedForm,
    Measurement,
    MeasurementConfig,
    data_container,
    summarize,
)
from robocal.mobile import censi, se2
from robocal.mobile.drive import DriveParameters, increment
from robocal.parameters import Parameter
from robocal.validation import Positive, Sigma, Strict


class SensorConfig(Strict):
    name: str = Field(default="sensor", description="parameter prefix: <name>_x, <name>_y, <name>_yaw")
    initial: Literal["closed_form"] | tuple[float, float, float] = Field(default="closed_form", description="x, y (m), yaw (rad) in the base frame")
    prior_translation: Sigma | None = Field(default=None, description="prior sigma about `initial` (m); none by default")
    prior_rotation: Sigma | None = None
    joint: str | None = Field(
        None, description="fixed joint of the robot's URDF whose child is the sensor: calibrated.urdf gets the calibrated x, y, yaw (needs `drive.wheels`)"
    )


class TrimConfig(Strict):
    """Censi's trimming: drop the worst `fraction` by translation or rotation disagreement, `rounds` times."""

    rounds: NonNegativeInt = 4
    fraction: float = Field(default=0.01, gt=0.0, lt=0.5)


class TrackingConfig(Strict):
    """`data` is a motion-capture recording (C3D, OptiTrack or Vicon CSV) of a body on the base;
    the wheel rotations come from the robot's log (`mobile.tracking`)."""

    log: Path = Field(description="ROS 1 bag, ROS 2 bag folder or MCAP file with the wheels' joint states")
    body: str = Field(description="rigid body of the recording, or the name given to the body fitted to `markers`")
    markers: list[str] | None = Field(None, description="fit the body to these markers (at least 3) instead of a streamed rigid body")
    wheels: tuple[str, str] = Field(description="left and right wheel joint names")
    topic: str | None = Field(None, description="joint-state topic (default: the one with both wheels)")
    interval: Positive = Field(0.5, description="interval length (s)")
    clock_offset: float | Literal["auto"] = Field("auto", description="mocap time minus robot time (s); auto: by yaw-rate cross-correlation")


class OdometryConfig(MeasurementConfig):
    type: Literal["odometry"]
    sigma_yaw: Sigma = Field(description="standard deviation of the measured yaw change (rad); `sigma` is that of dx, dy (m)")
    sensor: SensorConfig = Field(default_factory=SensorConfig)
    trim: TrimConfig | None = Field(None, description="trim the worst intervals (closed form; the MAP fit then uses the rows kept)")
    mocap: TrackingConfig | None = Field(None, description="`data` is a motion-capture recording, paired with the robot's log")


@data_container
class OdometryData:
    """phi (n, 2): the left and right wheel rotations of each interval (rad); motion (n, 3): the
    sensor's displacement x, y (m), yaw (rad) in its own frame."""

    phi: np.ndarray
    motion: np.ndarray


class OdometryMeasurement(Measurement):
    type_name = "odometry"
    Config = OdometryConfig
    config: OdometryConfig
    error_label = "sensor displacement error per interval"
    needs_robot = False
    needs_drive = True

    def __init__(self, config: OdometryConfig, ctx: BuildContext):
        super().__init__(config, ctx)
        self._closed_form: censi.CensiResult | None = None
        chosen = config.sensor.initial
        initial = np.zeros(3) if chosen == "closed_form" else np.asarray(chosen, dtype=float)  # the closed form's once the data are read
        name, sc = config.sensor.name, config.sensor
        self.sensor_block = ctx.layout.add(
            f"sensor:{name}",
            [
                Parameter(f"{name}_x", "frame_translation", float(initial[0]), sc.prior_translation),
                Parameter(f"{name}_y", "frame_translation", float(initial[1]), sc.prior_translation),
                Parameter(f"{name}_yaw", "frame_rotation", float(initial[2]), sc.prior_rotation, unit="rad"),
            ],
        )

    def links(self) -> tuple[str, ...]:
        return ()

    def read_data(self) -> None:
        """The intervals, and with `initial: closed_form` the sensor pose of Censi's closed form
        on them as the sensor parameters' initial values."""
        super().read_data()
        if self.config.sensor.initial == "closed_form":
            self.ctx.layout.set_nominal(f"sensor:{self.config.sensor.name}", self.censi().sensor)

    def load(self, path: Path) -> tuple[OdometryData, np.ndarray]:
        self.source: dict = {}
        if self.config.mocap is None:
            intervals = read_intervals(path)
        else:
            mc = self.config.mocap
            offset = None if mc.clock_offset == "auto" else mc.clock_offset
            from robocal.mobile.tracking import (
                tracked_intervals,  # motion-capture and robot-log readers: 1.5 s to import
            )

            tracked = tracked_intervals(
                path, self.ctx.resolve(mc.log), body=mc.body, markers=mc.markers, wheels=mc.wheels, topic=mc.topic, interval=mc.interval, offset=offset
            )
            intervals, self.source = tracked.intervals, tracked.provenance()
        return OdometryData(intervals.phi, intervals.motion), intervals.lines

    def censi(self) -> censi.CensiResult:
        """Censi's closed form on this measurement's data (computed once)."""
        if self._closed_form is None:
            trim = self.config.trim or TrimConfig(rounds=0)
            self._closed_form = censi.calibrate(self.data.phi[:, 0], self.data.phi[:, 1], self.data.motion, rounds=trim.rounds, fraction=trim.fraction)
        return self._closed_form

    def closed_form(self, theta: np.ndarray) -> ClosedForm:
        result = self.censi()
        drive, sensor = self.ctx.drive, self.sensor_block
        if drive is None:
            raise RobocalError(f"measurement '{self.name}': the closed form needs the problem's drive:")
        values = dict(zip(range(drive.start, drive.stop), result.drive)) | dict(zip(range(sensor.start, sensor.stop), map(float, result.sensor)))
        fraction = self.config.trim.fraction if self.config.trim else 0.0
        left_out = {
            int(i): f"trimmed in round {r}: among the worst {fraction:.0%} by translation or rotation disagreement"
            for i, r in enumerate(result.left_in_round)
            if r
        }
        return ClosedForm(values, result.keep, left_out)

    def predicted(self, theta, data):
        drive = DriveParameters(*(theta[i] for i in range(self.ctx.drive.start, self.ctx.drive.stop)))
        base = increment(drive, data.phi[:, 0], data.phi[:, 1])
        return se2.conjugate(theta[self.sensor_block], base)

    def difference(self, theta, data):
        d = self.predicted(theta, data) - data.motion
        return d.at[:, 2].set(se2.wrap(d[:, 2]))

    def rows(self, theta, data):
        return self.difference(theta, data) / jnp.asarray(self.row_sigmas())

    def row_sigmas(self) -> np.ndarray:
        return np.array([self.config.sigma, self.config.sigma, self.config.sigma_yaw])

    def errors(self, theta, data):
        return jnp.linalg.norm(self.difference(theta, data)[:, :2], axis=-1, keepdims=True)

    def figures(self, data, theta, keep: np.ndarray | None = None) -> dict[str, float]:
        d = np.asarray(self.jitted("difference")(jnp.asarray(theta), jax.tree.map(jnp.asarray, data)))
        d = d if keep is None else d[keep]
        return summarize(np.linalg.norm(d[:, :2], axis=-1)) | {"yaw_rms": float(np.sqrt(np.mean(d[:, 2] ** 2)))}

    def provenance(self) -> dict:
        return self.source

    def point_columns(self) -> list[np.ndarray]:
        return [np.array([0, 1]), np.array([2])]
