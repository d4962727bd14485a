"""Odometry intervals from a motion-capture recording and the robot's log: the marker body's own
motion against the wheel rotations over the same time.

1. The body's planar pose (x, y, yaw) per mocap frame: a streamed rigid body, or one fitted to
   named markers (`MocapRecording.body_pose`).
2. The clock offset: the yaw rate of the body against the rate of the wheel-angle difference
   phi_R - phi_L, which is the base's yaw rate times b / r whatever the wheel parameters (a scale
   the normalized correlation ignores); `timesync.estimate_offset`, or a given offset.
3. Intervals of `interval` seconds on the robot clock over the common span: wheel rotations from
   the joint states, the body's motion from its poses resampled at the (shifted) boundaries.
   An interval whose ends fall in an occlusion gap longer than `max_gap` is left out, and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from robocal.errors import InputError
from robocal.io.intervals import Intervals
from robocal.io.mocap import read_mocap
from robocal.io.mocap.recording import MocapRecording
from robocal.io.robotlog import read_robot_log
from robocal.mobile import se2
from robocal.mobile.motion_center import planar
from robocal.mobile.timesync import ClockOffset, estimate_offset, resample, yaw_rate


@dataclass(frozen=True)
class TrackedIntervals:
    intervals: Intervals
    clock: ClockOffset | None  # None when the offset was given
    offset: float  # s: mocap time = robot time + offset
    occluded: dict[str, dict]  # the recording's occlusions (per track: frames, time ranges)
    dropped: int  # intervals left out because an end fell in an occlusion gap

    def provenance(self) -> dict:
        out = {"clock_offset": self.offset, "intervals_dropped_for_occlusion": self.dropped, "occlusions": self.occluded}
        if self.clock is not None:
            out |= {"correlation_peak": self.clock.peak, "overlap_s": self.clock.overlap}
        return out


def body_track(mocap: Path, body: str, markers: list[str] | None) -> tuple[np.ndarray, np.ndarray, MocapRecording]:
    """(times, planar poses (n, 3) with NaN where invalid, the recording)."""
    rec = read_mocap(mocap)
    positions, rotations, valid = rec.body_pose(body, markers)
    quaternions = np.full((len(valid), 4), np.nan)
    quaternions[valid] = Rotation.from_matrix(rotations[valid]).as_quat()
    return rec.times, planar(positions, quaternions, valid), rec


def tracked_intervals(
    mocap: Path,
    log: Path,
    *,
    body: str,
    markers: list[str] | None,
    wheels: tuple[str, str],
    topic: str | None = None,
    interval: float = 0.5,
    offset: float | None = None,
    max_gap: float = 0.05,
) -> TrackedIntervals:
    times, poses, rec = body_track(mocap, body, markers)
    wheel_times, angles = read_robot_log(log).wheel_angles(*wheels, topic=topic)
    clock = None
    if offset is None:
        t_mocap, rate_mocap = yaw_rate(times, poses[:, 2])
        t_robot, rate_robot = yaw_rate(wheel_times, angles[:, 1] - angles[:, 0])
        clock = estimate_offset(t_mocap, rate_mocap, t_robot, rate_robot)
        offset = clock.offset
    valid_times = times[np.isfinite(poses).all(axis=1)]
    start, stop = max(wheel_times[0], valid_times[0] - offset), min(wheel_times[-1], valid_times[-1] - offset)
    if stop - start < 2 * interval:
        raise InputError(
            mocap,
            f"the recording and the robot log {log.name} overlap by {max(stop - start, 0):.2f} s (mocap = robot + {offset:.3f} s); at least two intervals of {interval:g} s are needed",
        )
    bounds = start + interval * np.arange(int((stop - start) / interval) + 1)
    # a boundary is usable when valid mocap frames lie within max_gap on both sides of it
    after = np.searchsorted(valid_times, bounds + offset)
    before_gap = bounds + offset - valid_times[np.clip(after - 1, 0, None)]
    after_gap = valid_times[np.clip(after, None, len(valid_times) - 1)] - (bounds + offset)
    usable = (before_gap <= max_gap) & (after_gap <= max_gap)
    pose_at = resample(times, poses, bounds + offset, angle_columns=[2])
    wheel_at = resample(wheel_times, angles, bounds)
    ok = usable[:-1] & usable[1:]
    motion = se2.between(pose_at[:-1], pose_at[1:])[ok]
    phi = np.diff(wheel_at, axis=0)[ok]
    lines = np.flatnonzero(ok) + 1  # interval number, 1-based, for messages
    return TrackedIntervals(Intervals(phi, motion, lines), clock, float(offset), rec.occlusions(), int((~ok).sum()))
