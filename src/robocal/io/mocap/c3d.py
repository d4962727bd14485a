"""C3D files (the biomechanics standard written by Vicon, Qualisys, OptiTrack, ...) through py-c3d.

C3D stores points (markers) only, so a C3D recording has markers and no bodies; fit a body with
`MocapRecording.body_pose(name, markers=[...])`.

Conventions read: POINT:LABELS (and LABELS2, LABELS3, ... beyond 255 points) name the points, a
blank label becomes "#<index>" (1-based); POINT:UNITS ("mm", "cm" or "m"; absent means mm, the
standard's default) scales to metres; POINT:RATE is the frame rate; a negative residual (or a
non-finite coordinate) marks an occluded sample. Frame numbers start at the file's first frame
(1 for a full trial) and the time of frame f is (f - 1) / rate, so frame 1 is t = 0 as in the
Nexus CSV export of the same trial.

Written: float32 coordinates in mm, POINT:RATE = the recording's rate, the first frame from the
first time (t = (first - 1) / rate), residual 0 for a visible sample (C3D's "no residual
estimate") and -1 for an occluded one.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import c3d
import numpy as np

from robocal.errors import InputError
from robocal.io.mocap.formats import check_unique, frame_numbers, length_scale
from robocal.io.mocap.recording import MarkerTrack, MocapRecording


def is_c3d(head: bytes) -> bool:
    """The C3D signature: byte 2 of the header is 0x50 (and byte 1 points to the parameters)."""
    return len(head) >= 2 and head[1] == 0x50 and head[0] >= 2


def read_c3d(path: str | Path) -> MocapRecording:
    """Markers of a C3D file in metres; a truncated or corrupt file is an InputError naming it."""
    path = Path(path)
    try:
        with path.open("rb") as handle, warnings.catch_warnings():
            # py-c3d warns (rather than fails) on metadata it finds odd and on a short data
            # section; the frame count is checked below instead.
            warnings.simplefilter("ignore")
            reader = c3d.Reader(handle)
            rate = float(reader.point_rate)
            first = int(reader.first_frame)
            expected = int(reader.frame_count)
            labels = _labels(reader)
            units = reader.get("POINT:UNITS")
            units = units.string_value if units is not None else "mm"
            frames = [points for _, points, _ in reader.read_frames(copy=True)]
    except OSError as exc:
        raise InputError(path, f"cannot read C3D file ({exc.strerror})") from None
    except Exception as exc:  # py-c3d fails on corrupt files with whatever its parsing hits
        raise InputError(path, f"not a readable C3D file ({type(exc).__name__}: {exc})") from None
    if len(frames) != expected:
        raise InputError(path, f"truncated C3D file: the header announces {expected} frames, the data section holds {len(frames)}")
    if not (np.isfinite(rate) and rate > 0):
        raise InputError(path, f"invalid frame rate {rate}", field="POINT:RATE")
    data = np.stack(frames) if frames else np.zeros((0, len(labels), 5))
    if data.shape[1] != len(labels):
        raise InputError(path, f"POINT:USED is {data.shape[1]} but {len(labels)} labels are given", field="POINT:LABELS")
    check_unique(path, labels)
    scale = length_scale(path, units or "mm", field="POINT:UNITS")
    valid = data[:, :, 3] >= 0
    markers = {label: MarkerTrack(np.where(valid[:, i, None], data[:, i, :3] * scale, np.nan), valid[:, i]) for i, label in enumerate(labels)}
    times = (first - 1 + np.arange(len(data))) / rate
    return MocapRecording(path, rate, times, {}, markers)


def _labels(reader: c3d.Reader) -> list[str]:
    """POINT:LABELS, LABELS2, ... concatenated, cut to POINT:USED; blank ones become "#<index>"."""
    labels, group = [], 1
    while (param := reader.get(f"POINT:LABELS{group if group > 1 else ''}")) is not None:
        labels += [str(label).strip() for label in param.string_array.ravel()]
        group += 1
    labels = labels[: reader.point_used] + [""] * max(0, reader.point_used - len(labels))
    return [label or f"#{i + 1}" for i, label in enumerate(labels)]


def write_c3d(rec: MocapRecording, path: str | Path) -> None:
    """Write the markers of `rec` as C3D points (bodies are not written: C3D has points only, so
    put a body's markers in `rec.markers`). Times must lie on the grid of the rate, without gaps."""
    if not rec.markers:
        raise ValueError("C3D stores points only and the recording has no markers")
    numbers = frame_numbers(rec)
    if np.any(np.diff(numbers) != 1):
        raise ValueError("C3D frames are contiguous: the recording skips frames")
    names = list(rec.markers)
    points = np.zeros((len(rec), len(names), 5), dtype=np.float32)
    for i, name in enumerate(names):
        track = rec.markers[name]
        points[:, i, :3] = np.nan_to_num(track.positions * 1e3)
        points[:, i, 3] = np.where(track.valid, 0.0, -1.0)
    writer = c3d.Writer(point_rate=float(rec.rate), point_units="mm  ")
    writer.set_point_labels(names)
    writer.set_start_frame(int(numbers[0]) + 1)
    no_analog = np.zeros((0, 0))
    writer.add_frames([(frame, no_analog) for frame in points])
    with Path(path).open("wb") as handle, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # py-c3d warns that a file without analog channels has none
        writer.write(handle)
