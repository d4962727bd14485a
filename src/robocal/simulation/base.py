"""A simulated differential-drive base, recorded as a mobile-base calibration would record it:
the robot's log (wheel encoders and its own odometry), motion capture of a marker body on the
base, and laser scan-matching intervals.

The TRUE robot has wheel radii, a wheelbase, a laser pose and a marker-body pose that differ from
its NOMINAL (datasheet, tape-measure) values by realistic amounts; everything the robot computes
itself (its odometry) uses the nominal values, everything measured from outside (motion capture,
the laser's scan matching) follows the true ones.

**Motion.** A plan of segments (straight, circle, S-shape, spin in place, one wheel still), each
followed by a stop. Within a segment the speed rises and falls with raised-cosine ramps while the
path curvature (yaw rate over speed) stays constant, so every piece of the path is one circular
arc, whatever the speed profile: the wheel angles accumulated over any part of it determine the
base motion exactly through `drive.increment` (the S-shape is two such pieces, left then right,
at full speed across the switch). Poses and wheel angles are closed-form functions of time, so
every sensor samples them exactly, at its own instants.

**Clocks.** The robot log is stamped by the robot's clock, from 0 at 50 Hz; the motion capture by
its own, frames k / 100 s from 0, with mocap_time = robot_time + clock_offset (default 0.237 s,
not a whole frame). Before the first and after the last segment the robot stands still.

**Sensors.**
- Wheel encoders: the true cumulative wheel angles (plus optional Gaussian noise), quantized to
  ticks; their velocities are the true wheel rates. Odometry: the nominal model integrated over
  the quantized angles, starting at the origin of its odom frame.
- Motion capture: four markers on a rigid body "base" at a height; each coordinate gets Gaussian
  noise; a few bursts of frames lose every marker (NaN, invalid), and single markers drop out of
  a few more frames. The body pose, as a tracking system streams it, is the least-squares rigid
  fit of the visible markers (at least 3) to the body's marker layout.
- Laser scan matching: over intervals of ~0.8 s within each arc piece, the encoder increments
  and the laser's own displacement in its frame at the interval start,
  B = conjugate(laser pose, true base motion), plus Gaussian noise on dx, dy, dyaw.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from robocal.errors import RobocalError
from robocal.frames import rigid_fits
from robocal.io.intervals import write_intervals
from robocal.mobile.drive import DriveParameters, arc, integrate
from robocal.mobile.se2 import between, compose, conjugate, wrap

JOINT_NAMES = ("wheel_left_joint", "wheel_right_joint")
JOINT_TOPIC, ODOMETRY_TOPIC = "/joint_states", "/odom"
LOGS = {"robot.mcap": "mcap", "robot_bag": "ros2", "robot.bag": "ros1"}  # file name -> write_robot_log format
BODY = "base"
JOINT_RATE = 50.0  # Hz, wheel joint states and odometry
MOCAP_RATE = 100.0  # Hz
CLOCK_OFFSET = 0.237  # s, mocap_time - robot_time
LASER_INTERVAL = 0.8  # s, nominal length of a scan-matching interval
RAMP = 1.0  # s, raised-cosine speed ramp at the start and end of a segment
START_REST = 2.0  # s still before the first segment (the motion capture already runs)
END_REST = 1.0  # s still after the last segment's stop, both recordings still running
START_POSE = (0.8, -0.5, 0.3)  # true base pose in the motion-capture world at the start
# Marker positions in the body frame (m): asymmetric, so that no relabelling fits them.
MARKER_LAYOUT = {
    "base_1": (0.10, 0.0, 0.015),
    "base_2": (-0.04, 0.08, 0.0),
    "base_3": (-0.06, -0.05, 0.03),
    "base_4": (0.03, -0.09, 0.01),
}


@dataclass(frozen=True)
class BaseParameters:
    """What a mobile-base calibration estimates: the drive (m), the laser pose in the base frame
    (sensor_*, m and rad), the marker body's planar pose in the base frame (markers_*)."""

    wheel_radius_left: float
    wheel_radius_right: float
    wheelbase: float
    sensor_x: float
    sensor_y: float
    sensor_yaw: float
    markers_x: float
    markers_y: float
    markers_yaw: float

    def drive(self) -> DriveParameters:
        return DriveParameters(self.wheel_radius_left, self.wheel_radius_right, self.wheelbase)

    def sensor(self) -> np.ndarray:
        return np.array([self.sensor_x, self.sensor_y, self.sensor_yaw])

    def markers(self) -> np.ndarray:
        return np.array([self.markers_x, self.markers_y, self.markers_yaw])


# The KeJia base of the platform paper: 0.0975 m wheels on a 0.43 m axle. True values 0.6 % and
# 0.8 % off in the radii, 1 % in the wheelbase, a few mm and about 1 deg in the laser pose.
NOMINAL = BaseParameters(0.0975, 0.0975, 0.43, 0.20, 0.0, 0.0, -0.06, 0.04, np.deg2rad(20.0))
TRUE = BaseParameters(0.0975 * 1.006, 0.0975 * 0.992, 0.43 * 1.01, 0.2035, 0.0118, np.deg2rad(1.2), -0.0612, 0.0437, np.deg2rad(21.3))
MARKER_HEIGHT = 0.62  # m, body origin above the floor


@dataclass(frozen=True)
class Noise:
    """Sensor noise (standard deviations) and tracking losses. The laser figures are those of a
    good scan matcher over 0.8 s in a static, structured room (0.3 mm, 0.03 deg): with the
    simulated plan's 188 intervals they put the calibrated wheelbase within 0.2 mm and the radii
    within 0.05 mm at about 3 standard deviations. The encoder noise is added before the
    quantization."""

    marker: float = 2e-4  # m, per marker coordinate
    ticks_per_rev: int = 4096  # encoder resolution
    encoder: float = 0.0  # rad
    laser_xy: float = 3e-4  # m, on dx and dy
    laser_yaw: float = float(np.deg2rad(0.03))  # rad, on dyaw
    occlusion_bursts: int = 4  # runs of 5 to 20 frames without any marker
    dropout: float = 0.01  # fraction of frames in which one marker is lost


@dataclass(frozen=True)
class Segment:
    """One motion of the plan. speed: peak forward speed (m/s, negative backwards); yaw_rate: peak
    yaw rate (rad/s, positive to the left). straight: yaw_rate 0; spin: speed 0; circle: both;
    s_shape: turns at +yaw_rate for the first half, at -yaw_rate for the second; one_wheel: only
    the sign of yaw_rate counts, the size is 2 |speed| / wheelbase so that the inner wheel stands
    still. duration (s) includes the ramps; pause (s): standing still afterwards."""

    name: str
    kind: str
    duration: float
    speed: float = 0.0
    yaw_rate: float = 0.0
    pause: float = 1.0


# About 2.7 minutes: the spin and the straight drive for the motion center first, then every
# kind of motion, both turning directions and backwards, for the odometry and the laser.
PLAN = (
    Segment("spin_left", "spin", 16.0, yaw_rate=0.6, pause=1.5),
    Segment("straight_forward", "straight", 8.0, speed=0.3, pause=1.5),
    Segment("circle_left", "circle", 24.0, speed=0.3, yaw_rate=0.3),
    Segment("s_shape", "s_shape", 16.0, speed=0.3, yaw_rate=0.4),
    Segment("spin_right", "spin", 12.0, yaw_rate=-0.8),
    Segment("left_wheel_still", "one_wheel", 12.0, speed=0.15, yaw_rate=1.0),
    Segment("right_wheel_still", "one_wheel", 12.0, speed=0.15, yaw_rate=-1.0),
    Segment("straight_backward", "straight", 6.0, speed=-0.25),
    Segment("circle_right", "circle", 20.0, speed=0.25, yaw_rate=-0.4),
    Segment("spin_slow", "spin", 16.0, yaw_rate=0.3),
    Segment("straight_fast", "straight", 8.0, speed=0.4),
)


@dataclass(frozen=True)
class _Piece:
    """A stretch of constant path curvature: from `start` (robot clock) for `duration`, peak speed
    v and yaw rate w, with or without a ramp at each end; the state at its start."""

    start: float
    duration: float
    v: float
    w: float
    ramp_in: bool
    ramp_out: bool
    pose: np.ndarray  # (3,) true base pose at the start, yaw unwrapped
    wheels: np.ndarray  # (2,) true wheel angles at the start


def _ramp(u, on: bool):
    """Speed fraction u seconds into a raised-cosine ramp (1 without one)."""
    return 0.5 * (1.0 - np.cos(np.pi * np.minimum(u, RAMP) / RAMP)) if on else np.ones_like(u)


def _deficit(u, on: bool):
    """Distance lost to a ramp over its first u seconds, in units of the peak speed: the integral
    of 1 - _ramp."""
    if not on:
        return np.zeros_like(u)
    u = np.minimum(u, RAMP)
    return 0.5 * (u + RAMP / np.pi * np.sin(np.pi * u / RAMP))


def _envelope(u, piece: _Piece):
    """(speed fraction, its integral) at times u into the piece: the ramps do not overlap (a
    piece lasts at least one ramp per end), so each takes its own deficit."""
    fraction = _ramp(u, piece.ramp_in) + _ramp(piece.duration - u, piece.ramp_out) - 1.0
    lost_out = _deficit(np.full_like(u, piece.duration), piece.ramp_out) - _deficit(piece.duration - u, piece.ramp_out)
    return fraction, u - _deficit(u, piece.ramp_in) - lost_out


def _wheel_rates(p: DriveParameters, v, w):
    """Wheel angular rates (left, right) of the base moving at v, w: the inverse of the seed's Eq. 1."""
    return np.stack([(v - 0.5 * w * p.wheelbase) / p.wheel_radius_left, (v + 0.5 * w * p.wheelbase) / p.wheel_radius_right], axis=-1)


# What each kind needs of (speed, yaw_rate).
_NEEDS = {
    "straight": ("a speed and no yaw rate", lambda v, w: v != 0 and w == 0),
    "spin": ("a yaw rate and no speed", lambda v, w: v == 0 and w != 0),
    "circle": ("a speed and a yaw rate", lambda v, w: v != 0 and w != 0),
    "s_shape": ("a speed and a yaw rate", lambda v, w: v != 0 and w != 0),
    "one_wheel": ("a speed and the sign of a yaw rate", lambda v, w: v != 0 and w != 0),
}


def _motions(segment: Segment, wheelbase: float) -> list[tuple[float, float, float, bool, bool]]:
    """The segment's pieces as (duration, v, w, ramp_in, ramp_out), checked."""
    kind, v, w, d = segment.kind, segment.speed, segment.yaw_rate, segment.duration
    if kind not in _NEEDS:
        raise RobocalError(f"segment '{segment.name}': unknown kind '{kind}' (known: {', '.join(_NEEDS)})")
    needs, fits = _NEEDS[kind]
    if not fits(v, w):
        raise RobocalError(f"segment '{segment.name}': a {kind} needs {needs}; got speed {v} m/s, yaw_rate {w} rad/s")
    if d < 2 * RAMP:
        raise RobocalError(f"segment '{segment.name}': duration {d} s is shorter than its two {RAMP} s speed ramps")
    if segment.pause < 0:
        raise RobocalError(f"segment '{segment.name}': pause {segment.pause} s must not be negative")
    if kind == "one_wheel":
        w = np.sign(w) * 2 * abs(v) / wheelbase
    if kind == "s_shape":
        return [(d / 2, v, w, True, False), (d / 2, v, -w, False, True)]
    return [(d, v, w, True, True)]


class Trajectory:
    """The true motion of the base: poses and wheel angles as closed-form functions of time on the
    robot clock, at rest before the first and after the last piece."""

    def __init__(self, plan: Sequence[Segment], drive: DriveParameters, period: float):
        """Durations are rounded to whole `period`s (the joint-state period), so that every piece
        starts and ends on a joint-state sample."""
        snap = lambda t: round(t / period) * period  # noqa: E731
        self.drive = drive
        self.pieces: list[_Piece] = []
        self.segments: list[dict] = []
        t, pose, wheels = snap(START_REST), np.array(START_POSE, dtype=float), np.zeros(2)
        for segment in plan:
            begin = t
            for duration, v, w, ramp_in, ramp_out in _motions(segment, drive.wheelbase):
                piece = _Piece(t, snap(duration), v, w, ramp_in, ramp_out, pose, wheels)
                self.pieces.append(piece)
                t += piece.duration
                pose, wheels = self._state(piece, np.array([piece.duration]))
                pose, wheels = pose[0], wheels[0]
            span = {"start": round(begin, 9), "end": round(t, 9)}  # sums of whole periods, without their rounding
            self.segments.append({"name": segment.name, "kind": segment.kind, **span, "speed": segment.speed, "yaw_rate": segment.yaw_rate})
            self.pieces.append(_Piece(t, snap(segment.pause), 0.0, 0.0, False, False, pose, wheels))
            t += self.pieces[-1].duration
        self.end = t + snap(END_REST)

    def _state(self, piece: _Piece, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(poses (n, 3), wheel angles (n, 2)) at times u into the piece."""
        _, progress = _envelope(u, piece)
        s, dtheta = piece.v * progress, piece.w * progress
        return compose(piece.pose, np.asarray(arc(s, dtheta))), piece.wheels + progress[:, None] * _wheel_rates(self.drive, piece.v, piece.w)

    def _split(self, times) -> tuple[np.ndarray, np.ndarray]:
        """(piece index, time into the piece clipped to it) of each time."""
        times = np.asarray(times, dtype=float)
        starts = np.array([p.start for p in self.pieces])
        index = np.clip(np.searchsorted(starts, times, side="right") - 1, 0, len(self.pieces) - 1)
        durations = np.array([p.duration for p in self.pieces])
        return index, np.clip(times - starts[index], 0.0, durations[index])

    def sample(self, times) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(true base poses (n, 3) with unwrapped yaw, wheel angles (n, 2), wheel rates (n, 2)) at
        robot-clock times."""
        index, u = self._split(times)
        poses, wheels, rates = np.empty((len(u), 3)), np.empty((len(u), 2)), np.empty((len(u), 2))
        for i in np.unique(index):
            rows = index == i
            piece = self.pieces[i]
            poses[rows], wheels[rows] = self._state(piece, u[rows])
            rates[rows] = _envelope(u[rows], piece)[0][:, None] * _wheel_rates(self.drive, piece.v, piece.w)
        return poses, wheels, rates

    def moving_pieces(self, period: float) -> list[tuple[int, int]]:
        """(first, last) joint-state sample index of each piece in which the base moves."""
        return [(round(p.start / period), round((p.start + p.duration) / period)) for p in self.pieces if p.v or p.w]


def _encoders(wheels: np.ndarray, noise: Noise, rng: np.random.Generator) -> np.ndarray:
    """Wheel angles as the encoders report them: plus noise, to whole ticks."""
    tick = 2 * np.pi / noise.ticks_per_rev
    return np.round((wheels + rng.normal(0.0, noise.encoder, wheels.shape)) / tick) * tick


def _robot_log(trajectory: Trajectory, nominal: DriveParameters, noise: Noise, rng):
    """(JointStates, Odometry, quantized wheel angles) on the robot clock at JOINT_RATE."""
    from robocal.io.robotlog import JointStates, Odometry

    times = np.arange(round(trajectory.end * JOINT_RATE) + 1) / JOINT_RATE
    _, wheels, rates = trajectory.sample(times)
    encoders = _encoders(wheels, noise, rng)
    steps = np.diff(encoders, axis=0)
    poses = integrate(nominal, np.zeros(3), steps[:, 0], steps[:, 1])
    twists = np.zeros((len(times), 3))  # base frame: forward speed, 0, yaw rate over the last step
    twists[1:, 0] = 0.5 * (nominal.wheel_radius_left * steps[:, 0] + nominal.wheel_radius_right * steps[:, 1]) * JOINT_RATE
    twists[1:, 2] = np.diff(poses[:, 2]) * JOINT_RATE
    odometry = Odometry(times, np.column_stack([poses[:, :2], wrap(poses[:, 2])]), twists)
    return JointStates(times, list(JOINT_NAMES), encoders, rates), odometry, encoders


def _occlusions(n: int, markers: int, noise: Noise, rng) -> np.ndarray:
    """(n, markers) visibility: bursts of frames with no marker, single markers lost at random."""
    visible = np.ones((n, markers), dtype=bool)
    for start, length in zip(rng.integers(0, n - 20, noise.occlusion_bursts), rng.integers(5, 21, noise.occlusion_bursts)):
        visible[start : start + length] = False
    lost = rng.random(n) < noise.dropout
    visible[np.flatnonzero(lost), rng.integers(0, markers, lost.sum())] = False
    return visible


def _mocap(trajectory: Trajectory, markers_in_base: np.ndarray, clock_offset: float, noise: Noise, rng):
    """The motion-capture recording: body "base" and its markers, on the mocap clock."""
    from robocal.io.mocap import BodyTrack, MarkerTrack, MocapRecording

    times = np.arange(round((trajectory.end + max(clock_offset, 0.0)) * MOCAP_RATE) + 1) / MOCAP_RATE
    base, _, _ = trajectory.sample(times - clock_offset)
    body = compose(base, markers_in_base)
    c, s = np.cos(body[:, 2]), np.sin(body[:, 2])
    rotations = np.zeros((len(times), 3, 3))
    rotations[:, 0, 0], rotations[:, 0, 1], rotations[:, 1, 0], rotations[:, 1, 1], rotations[:, 2, 2] = c, -s, s, c, 1.0
    origin = np.column_stack([body[:, :2], np.full(len(times), MARKER_HEIGHT)])
    layout = np.array(list(MARKER_LAYOUT.values()))
    points = origin[:, None] + np.einsum("nij,kj->nki", rotations, layout) + rng.normal(0.0, noise.marker, (len(times), len(layout), 3))
    visible = _occlusions(len(times), len(layout), noise, rng)
    valid = visible.sum(axis=1) >= 3
    positions, fitted = rigid_fits(layout, points, visible)
    quaternions = np.full((len(times), 4), np.nan)
    quaternions[valid] = Rotation.from_matrix(fitted[valid]).as_quat()
    positions[~valid] = np.nan
    tracks = {name: MarkerTrack(np.where(visible[:, k, None], points[:, k], np.nan), visible[:, k]) for k, name in enumerate(MARKER_LAYOUT)}
    return MocapRecording(None, MOCAP_RATE, times, {BODY: BodyTrack(positions, quaternions, valid)}, tracks)


def _laser_intervals(trajectory: Trajectory, encoders: np.ndarray, sensor: np.ndarray, noise: Noise, rng) -> tuple[np.ndarray, np.ndarray]:
    """(phi (n, 2), laser displacements (n, 3)) over ~LASER_INTERVAL stretches of each moving piece."""
    period = 1.0 / JOINT_RATE
    bounds = []
    for first, last in trajectory.moving_pieces(period):
        count = max(1, round((last - first) * period / LASER_INTERVAL))
        edges = np.rint(np.linspace(first, last, count + 1)).astype(int)
        bounds += list(zip(edges[:-1], edges[1:]))
    start, stop = np.array(bounds).T
    poses, _, _ = trajectory.sample(np.concatenate([start, stop]) * period)
    motion = conjugate(sensor, between(poses[: len(start)], poses[len(start) :]))
    sigma = np.array([noise.laser_xy, noise.laser_xy, noise.laser_yaw])
    return encoders[stop] - encoders[start], motion + rng.normal(0.0, 1.0, motion.shape) * sigma


def _remove(path: Path) -> None:
    """Remove an earlier run's robot log (a file, or a ROS 2 bag folder)."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def simulate_base(
    out_dir: str | Path,
    *,
    seed: int = 0,
    true: BaseParameters = TRUE,
    nominal: BaseParameters = NOMINAL,
    plan: Sequence[Segment] = PLAN,
    noise: Noise = Noise(),
    clock_offset: float = CLOCK_OFFSET,
) -> dict:
    """Simulate the base and write its recordings to `out_dir` (see the module docstring):
    mocap.c3d (markers), mocap_optitrack.csv and mocap_vicon.csv (body and markers), robot.mcap,
    robot_bag/ (ROS 2) and robot.bag (ROS 1) with topics /joint_states and /odom,
    laser_intervals.csv, segments.json (robot clock) and truth.json, replacing those of an earlier
    run. Deterministic given `seed` (it draws the noise; the plan is fixed).

    Returns {"files": the paths written, "truth": truth.json's content, "segments":
    segments.json's content, "seconds": the time it took}."""
    from robocal.io.mocap import write_c3d, write_optitrack_csv, write_vicon_csv
    from robocal.io.robotlog import write_robot_log

    began = time.perf_counter()
    rng = np.random.default_rng(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trajectory = Trajectory(plan, true.drive(), 1.0 / JOINT_RATE)
    joints, odometry, encoders = _robot_log(trajectory, nominal.drive(), noise, rng)
    mocap = _mocap(trajectory, true.markers(), clock_offset, noise, rng)
    phi, motion = _laser_intervals(trajectory, encoders, true.sensor(), noise, rng)
    files = {
        "mocap.c3d": write_c3d,
        "mocap_optitrack.csv": write_optitrack_csv,
        "mocap_vicon.csv": write_vicon_csv,
    }
    for name, write in files.items():
        write(mocap, out / name)
    for name, fmt in LOGS.items():
        _remove(out / name)  # the log writers do not overwrite
        write_robot_log(out / name, {JOINT_TOPIC: joints}, {ODOMETRY_TOPIC: odometry}, format=fmt)
    write_intervals(out / "laser_intervals.csv", phi, motion)
    (out / "segments.json").write_text(json.dumps(trajectory.segments, indent=1) + "\n")
    truth = {
        "true": {**asdict(true), "clock_offset": clock_offset},
        "nominal": {**asdict(nominal), "clock_offset": 0.0},
        "clock": "mocap_time = robot_time + clock_offset",
        "noise": asdict(noise),
        "rates": {"joint_states": JOINT_RATE, "odometry": JOINT_RATE, "mocap": MOCAP_RATE},
        "laser_interval": LASER_INTERVAL,
        "laser_intervals": len(phi),
        "marker_height": MARKER_HEIGHT,
        "marker_layout": {name: list(p) for name, p in MARKER_LAYOUT.items()},
        "start_pose": list(START_POSE),
        "joint_names": list(JOINT_NAMES),
        "topics": {"joint_states": JOINT_TOPIC, "odometry": ODOMETRY_TOPIC},
        "body": BODY,
        "seed": seed,
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    written = [out / name for name in (*files, *LOGS, "laser_intervals.csv", "segments.json", "truth.json")]
    return {"files": written, "truth": truth, "segments": trajectory.segments, "seconds": time.perf_counter() - began}
