"""A motion-capture recording in SI units, whichever measuring system wrote it.

The three file formats (C3D, OptiTrack Motive CSV, Vicon Nexus CSV) are read into one
`MocapRecording`: frame times in seconds, positions in metres, orientations as unit quaternions
(x, y, z, w). Coordinates stay in the measuring system's own world frame (no axis change: Motive's
default is Y up, Vicon's Z up); the calibration estimates that frame anyway.

Occlusion is never silent: an occluded frame is NaN in the arrays *and* False in the track's
`valid` mask, and `MocapRecording.occlusions()` lists every gap. This module also holds what the
format modules share: the length units they may declare, the frame numbering of the writers, and
the located parsing and formatting of CSV cells.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from robocal.errors import InputError
from robocal.frames import rigid_fits
from robocal.io.table import read_text

# Length units a file may declare, as written by the measuring systems (case-insensitive).
LENGTH_UNITS = {"m": 1.0, "meters": 1.0, "metres": 1.0, "cm": 1e-2, "centimeters": 1e-2, "mm": 1e-3, "millimeters": 1e-3}

SUPPORTED_FORMATS = "C3D (.c3d), OptiTrack Motive CSV export, Vicon Nexus CSV export"


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
        for name, track in [*self.bodies.items(), *self.markers.items()]:
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
            raise self._error(f"'{name}' is not a rigid body of the recording; pass the markers to fit it from "
                              f"(bodies: {_names(self.bodies)}; markers: {_names(self.markers)})")
        unknown = [m for m in markers if m not in self.markers]
        if unknown:
            raise self._error(f"unknown marker(s) {', '.join(repr(m) for m in unknown)} for body '{name}' "
                              f"(markers: {_names(self.markers)})")
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


def read_mocap(path: str | Path) -> MocapRecording:
    """Read a motion-capture file, its format told by content, not by name: the C3D signature
    (byte 2 is 0x50) -> C3D; a CSV whose first line starts with "Format Version" -> OptiTrack
    Motive export; a CSV whose first line is a Nexus section name ("Trajectories", "Segments",
    "Devices", ...) -> Vicon Nexus export. Anything else is an InputError naming the file and the
    supported formats."""
    # The format modules build on this one, so they are imported when a file is read.
    from robocal.io.mocap import c3d, optitrack, vicon

    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError as exc:
        raise InputError(path, f"cannot read motion-capture file ({exc.strerror})") from None
    if c3d.is_c3d(head):
        return c3d.read_c3d(path)
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
    if optitrack.is_optitrack(first):
        return optitrack.read_optitrack_csv(path)
    if vicon.is_vicon(first):
        return vicon.read_vicon_csv(path)
    raise InputError(path, f"not a supported motion-capture file (supported: {SUPPORTED_FORMATS})")


# ---- shared by the format modules -------------------------------------------------------------


def length_scale(path: Path, unit: str, *, line: int | None = None, field: str | None = None) -> float:
    """Metres per unit of a length unit declared in a file; an unknown unit is an InputError."""
    try:
        return LENGTH_UNITS[unit.strip().lower()]
    except KeyError:
        raise InputError(path, f"unknown length unit '{unit.strip()}' (known: {', '.join(LENGTH_UNITS)})",
                         line=line, field=field) from None


def frame_numbers(rec: MocapRecording) -> np.ndarray:
    """Frame index k >= 0 of every frame, t = k / rate: the writers store frame numbers, so the
    recording's times must lie on the grid of its rate (to 1e-6 of a frame). Also checks that
    there is something to write."""
    if not (rec.bodies or rec.markers) or len(rec) == 0:
        raise ValueError("the recording has no tracks or no frames: there is nothing to write")
    k = np.rint(rec.times * rec.rate)
    if np.any(np.abs(k - rec.times * rec.rate) > 1e-6) or k[0] < 0:
        raise ValueError(f"times must be non-negative multiples of 1/rate (rate {rec.rate} Hz) to be written as frame numbers")
    return k.astype(np.int64)


def check_unique(path: Path, names: list[str], *, line: int | None = None) -> None:
    """A file must not name two tracks alike (bodies and markers share one name space)."""
    seen = set()
    for name in names:
        if name in seen:
            raise InputError(path, f"the name '{name}' is used for two tracks", line=line)
        seen.add(name)


def read_csv_rows(path: Path, what: str) -> list[tuple[int, list[str]]]:
    """Every non-blank record of a CSV file with the (1-based) line it ends on, cells stripped."""
    text = read_text(path, what)
    reader = csv.reader(text.splitlines())
    rows = []
    try:
        for row in reader:
            cells = [cell.strip() for cell in row]
            if any(cells):
                rows.append((reader.line_num, cells))
    except csv.Error as exc:
        raise InputError(path, f"not a valid CSV row ({exc})", line=reader.line_num) from None
    return rows


@dataclass(frozen=True)
class CsvBlock:
    """The data rows of a CSV export under its header: cells (rows, columns) as stripped text, the
    line of each row, and a label per column for messages ("base Position X")."""

    path: Path
    lines: np.ndarray
    cells: np.ndarray
    labels: list[str]

    @classmethod
    def from_rows(cls, path: Path, rows: list[tuple[int, list[str]]], labels: list[str]) -> CsvBlock:
        """Rows must have one cell per column (trailing empty cells beyond are tolerated)."""
        width = len(labels)
        table = []
        for line, row in rows:
            if len(row) < width or any(row[width:]):
                raise InputError(path, f"expected {width} fields as in the header, found {len(row)}", line=line)
            table.append(row[:width])
        if not table:
            raise InputError(path, "no data rows after the header")
        return cls(path, np.array([line for line, _ in rows]), np.array(table, dtype=str).reshape(len(table), width), labels)

    def numbers(self, column: int, *, required: bool) -> np.ndarray:
        """Float values of a column, NaN for empty cells (an InputError when `required`); text
        that is not a finite number is an InputError at its line and column."""
        text = self.cells[:, column]
        empty = text == ""
        if required and empty.any():
            raise self._error("empty cell", int(np.argmax(empty)), column)
        values = np.full(len(text), np.nan)
        try:
            values[~empty] = text[~empty].astype(float)
        except ValueError:
            bad = next(i for i in np.flatnonzero(~empty) if not _is_float(text[i]))
            raise self._error(f"'{text[bad]}' is not a number", bad, column) from None
        if not np.isfinite(values[~empty]).all():
            bad = int(np.flatnonzero(~empty & ~np.isfinite(values))[0])
            raise self._error(f"'{text[bad]}' is not a finite number", bad, column)
        return values

    def group(self, columns: list[int]) -> np.ndarray:
        """Values (rows, len(columns)) of the columns of one track: a row is either complete or
        entirely empty (occluded: NaN); a partly empty row is an InputError."""
        values = np.stack([self.numbers(c, required=False) for c in columns], axis=1)
        missing = np.isnan(values)
        partial = missing.any(axis=1) & ~missing.all(axis=1)
        if partial.any():
            row = int(np.argmax(partial))
            column = columns[int(np.argmax(missing[row]))]
            raise self._error("empty cell in a partly filled sample (an occluded sample leaves all its cells empty)", row, column)
        return values

    def _error(self, message: str, row: int, column: int) -> InputError:
        return InputError(self.path, f"{message} (column {column + 1})", line=int(self.lines[row]), field=self.labels[column])


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def format_cells(values: np.ndarray, decimals: int) -> np.ndarray:
    """Text cells (n, k) of values (n, k) with fixed decimals; rows with NaN (occluded) are empty."""
    cells = np.char.mod(f"%.{decimals}f", np.nan_to_num(values)).astype(object)
    cells[np.isnan(values).any(axis=1)] = ""
    return cells


def write_csv_rows(path: Path, rows: list[list]) -> None:
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


def unit_quaternions(path: Path, quaternions: np.ndarray, lines: np.ndarray, what: str) -> np.ndarray:
    """Quaternions normalized; one whose norm is off by more than 1e-3 (more than rounding to the
    file's decimals explains) is an InputError at its line."""
    norms = np.linalg.norm(quaternions, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1) > 1e-3)  # NaN rows (occluded) compare False
    if len(bad):
        raise InputError(path, f"{what}: the quaternion has norm {norms[bad[0]]:.6g}, not 1", line=int(lines[bad[0]]))
    return quaternions / norms[:, None]
