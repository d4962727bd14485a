"""A motion-capture recording in SI units, whichever measuring system wrote it.

The three file formats (C3D, OptiTrack Motive CSV, Vicon Nexus CSV) are read into one
`MocapRecording`: frame times in seconds, positions in metres, orientations as unit quaternions
(x, y, z, w). Coordinates stay in the measuring system's own world frame (no axis change: Motive's
default is Y up, Vicon's Z up); the calibration estimates that frame anyway.

Occlusion is never silent: an occluded frame is NaN in the arrays *and* False in the track's
`valid` mask, and `MocapRecording.occlusions()` lists every gap. The format modules read and write
this data model; `robocal.io.mocap.read` tells a file's format by its content.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from robocal.errors import InputError
from robocal.frames import rigid_fits


@dataclass
class BodyTrack:
    """A rigid body (6-DoF) streamed by the measuring system: position of its origin (m) and its
    orientation as a unit quaternion (x, y, z, w), both NaN where `valid` is False."""

    positions: np.ndarray
    quaternions: np.ndarray
    valid: np.ndarray

    def __post_init__(self):
        self.positions, self.valid = _checked(self.positions, self.valid, 3)
        self.quaternions, _ = _checked(self.quaternions, self.valid, 4)


@dataclass
class MarkerTrack:
    """A single marker: position (m), NaN where `valid` is False."""

    positions: np.ndarray
    valid: np.ndarray

    def __post_init__(self):
        self.positions, self.valid = _checked(self.positions, self.valid, 3)


def _checked(values, valid, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(values as float (n, width) with NaN in every invalid frame, valid as bool (n,)); a valid
    frame with a non-finite value is a programming error of the caller."""
    values = np.array(values, dtype=float)
    valid = np.asarray(valid, dtype=bool)
    if values.ndim != 2 or values.shape[1] != width or valid.shape != (len(values),):
        raise ValueError(f"expected values (n, {width}) and valid (n,), got {values.shape} and {valid.shape}")
    if not np.isfinite(values[valid]).all():
        raise ValueError("a frame marked valid has non-finite values")
    values[~valid] = np.nan
    return values, valid


@dataclass
class MocapRecording:
    """Frames of a motion-capture system: `times` (n,) in seconds on the system's clock (the first
    frame's time may be nonzero), `rate` in Hz, streamed rigid bodies and single markers by name.
    A name is either a body or a marker, never both."""

    source: Path | None
    rate: float
    times: np.ndarray
    bodies: dict[str, BodyTrack]
    markers: dict[str, MarkerTrack]

    def __post_init__(self):
        self.times = np.asarray(self.times, dtype=float)
        if not (np.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"the frame rate must be positive, got {self.rate}")
        if self.times.ndim != 1 or not np.isfinite(self.times).all() or np.any(np.diff(self.times) <= 0):
            raise ValueError("times must be a finite, strictly increasing (n,) array")
        for name, track in [*self.bodies.items(), *self.markers.items()]:
            if len(track.valid) != len(self.times):
                raise ValueError(f"track '{name}' has {len(track.valid)} frames, the recording {len(self.times)}")
        if both := sorted(set(self.bodies) & set(self.markers)):
            raise ValueError(f"names used for both a body and a marker: {', '.join(both)}")

    def __len__(self) -> int:
        return len(self.times)

    def occlusions(self) -> dict[str, dict]:
        """For every body or marker with invalid frames: {"frames": their count, "ranges": [(first
        time, last time) of each run of consecutive invalid frames]}, times in seconds."""
        report = {}
        tracks: list[tuple[str, BodyTrack | MarkerTrack]] = [*self.bodies.items(), *self.markers.items()]
        for name, track in tracks:
            if track.valid.all():
                continue
            invalid = np.concatenate([[False], ~track.valid, [False]]).astype(int)
            starts = np.flatnonzero(np.diff(invalid) == 1)
            ends = np.flatnonzero(np.diff(invalid) == -1) - 1
            report[name] = {
                "frames": int((~track.valid).sum()),
                "ranges": [(float(self.times[a]), float(self.times[b])) for a, b in zip(starts, ends)],
            }
        return report

    def body_pose(self, name: str, markers: list[str] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions (n, 3), rotation matrices (n, 3, 3), valid (n,)) of a rigid body, NaN where invalid.

        The streamed body if `name` is in `bodies` (then `markers` is not used). Otherwise the body
        is fitted to the named markers (at least 3): their layout is taken from the first frame in
        which all are visible, the body frame has its origin at their centroid and the world axes
        of that frame; every frame is a least-squares rigid fit (Kabsch) of the visible markers to
        that layout. A frame with fewer than 3 visible markers, or whose visible markers are
        collinear, is invalid.
        """
        if name in self.bodies:
            body = self.bodies[name]
            rotations = np.full((len(self), 3, 3), np.nan)
            if body.valid.any():
                rotations[body.valid] = Rotation.from_quat(body.quaternions[body.valid]).as_matrix()
            return body.positions.copy(), rotations, body.valid.copy()
        if markers is None:
            raise self._error(
                f"'{name}' is not a rigid body of the recording; pass the markers to fit it from "
                f"(bodies: {_names(self.bodies)}; markers: {_names(self.markers)})"
            )
        unknown = [m for m in markers if m not in self.markers]
        if unknown:
            raise self._error(f"unknown marker(s) {', '.join(repr(m) for m in unknown)} for body '{name}' (markers: {_names(self.markers)})")
        if len(set(markers)) < 3:
            raise self._error(f"body '{name}' needs at least 3 distinct markers, got {len(set(markers))}")
        return _fit_body(self, name, list(dict.fromkeys(markers)))

    def _error(self, message: str) -> InputError:
        return InputError(self.source or "<in-memory recording>", message)


def _names(tracks: dict) -> str:
    return ", ".join(tracks) or "none"


def _fit_body(rec: MocapRecording, name: str, markers: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kabsch fit of each frame's visible markers to their layout in the first all-visible frame."""
    points = np.stack([rec.markers[m].positions for m in markers], axis=1)  # (n, k, 3)
    visible = np.stack([rec.markers[m].valid for m in markers], axis=1)  # (n, k)
    complete = np.flatnonzero(visible.all(axis=1))
    if len(complete) == 0:
        raise rec._error(f"markers {', '.join(markers)} of body '{name}' are never all visible in the same frame")
    layout = points[complete[0]] - points[complete[0]].mean(axis=0)
    if _collinear(layout):
        raise rec._error(f"markers {', '.join(markers)} of body '{name}' are collinear: they do not define an orientation")
    positions = np.full((len(rec), 3), np.nan)
    rotations = np.full((len(rec), 3, 3), np.nan)
    valid = np.zeros(len(rec), dtype=bool)
    patterns, which = np.unique(visible, axis=0, return_inverse=True)
    for p, pattern in enumerate(patterns):  # a frame is fitted when its visible markers span a plane
        valid[which.ravel() == p] = pattern.sum() >= 3 and not _collinear(layout[pattern])
    positions[valid], rotations[valid] = rigid_fits(layout, points[valid], visible[valid])
    return positions, rotations, valid


def _collinear(points: np.ndarray) -> bool:
    """Whether centred points span less than a plane (relative tolerance 1e-6)."""
    if len(points) < 3:
        return True
    s = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    return s[1] <= 1e-6 * s[0]
