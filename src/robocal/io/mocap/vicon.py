"""Vicon Nexus CSV exports.

A Nexus export is a sequence of sections separated by a blank line. Each section is: its name
("Devices", "Joints", "Model Outputs", "Segments", "Trajectories"), the rate in Hz, a row of names
(each in the first column of its group: "Subject:Marker"), the row of column names ("Frame,Sub
Frame,X,Y,Z,..."), a row of units ("mm", "deg", ...), and one row per frame; an occluded sample
leaves its cells empty.

Read: "Trajectories" become markers (X, Y, Z) and "Segments" become bodies (RX, RY, RZ = rotation
vector, i.e. helical axis times angle, in the units of the units row, "deg" or "rad"; TX, TY, TZ =
origin). Lengths are scaled from the units row ("mm", "cm" or "m"). Other sections (devices such
as force plates, joints, model outputs) and other columns (velocities "X'", ...) are not read.
Names are kept as written ("Subject:Marker"). The time of frame f is (f - 1) / rate, so frame 1
is t = 0 as in the C3D file of the same trial; both sections must hold the same frames.

Written: a "Segments" section when the recording has bodies, then "Trajectories"; rotation
vectors in degrees with 9 decimals, lengths in mm with 6 decimals (1 nm); frame numbers
t * rate + 1, sub frame 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from robocal.errors import InputError
from robocal.io.mocap.formats import (
    CsvBlock,
    check_unique,
    format_cells,
    frame_numbers,
    length_scale,
    read_csv_rows,
    write_csv_rows,
)
from robocal.io.mocap.recording import BodyTrack, MarkerTrack, MocapRecording

SECTIONS = ("Devices", "Joints", "Model Outputs", "Segments", "Trajectories")
ANGLE_UNITS = {"deg": True, "rad": False}  # unit -> degrees?
SEGMENT_AXES = ["RX", "RY", "RZ", "TX", "TY", "TZ"]
TRAJECTORY_AXES = ["X", "Y", "Z"]
LENGTH_DECIMALS, ANGLE_DECIMALS = 6, 9


def is_vicon(first_line: str) -> bool:
    return first_line.split(",", 1)[0].strip() in SECTIONS


class _Section:
    """One section of the export: its rate, frame numbers and the columns of each named track."""

    def __init__(self, path: Path, name: str, rows: list[tuple[int, list[str]]]):
        self.path, self.name, self.line = path, name, rows[0][0]
        if len(rows) < 5:
            raise InputError(path, f"section '{name}' ends inside its header (name, rate, names, columns, units)", line=rows[-1][0])
        (_, _), (rate_line, rate), (self.names_line, names), (self.axes_line, axes), (units_line, units) = rows[:5]
        try:
            self.rate = float(rate[0])
        except (IndexError, ValueError):
            raise InputError(path, f"section '{name}': expected the frame rate, found '{','.join(rate)}'", line=rate_line) from None
        if not (np.isfinite(self.rate) and self.rate > 0):
            raise InputError(path, f"section '{name}': the frame rate must be positive", line=rate_line)
        if axes[:2] != ["Frame", "Sub Frame"]:
            raise InputError(path, f"section '{name}': expected columns 'Frame,Sub Frame,...'", line=self.axes_line)
        names = names + [""] * (len(axes) - len(names))
        self.units = units + [""] * (len(axes) - len(units))
        self.units_line = units_line
        check_unique(path, [n for n in names[2:] if n], line=self.names_line)
        owner = ["", ""]  # the track of each column: a name is written in the first column of its group
        self.tracks: dict[str, dict[str, int]] = {}  # name -> axis -> column
        for c in range(2, len(axes)):
            owner.append(names[c] or owner[-1])
            if not owner[-1]:
                raise InputError(path, f"section '{name}': the first data column has no name", line=self.names_line)
            track = self.tracks.setdefault(owner[-1], {})
            if axes[c] in track:
                raise InputError(path, f"section '{name}': '{owner[-1]}' has two '{axes[c]}' columns (column {c + 1})", line=self.axes_line)
            track[axes[c]] = c
        labels = [f"{o} {a}".strip() for o, a in zip(owner, axes)]
        self.block = CsvBlock.from_rows(path, rows[5:], labels)
        self.frames = self.block.numbers(0, required=True)
        sub = self.block.numbers(1, required=True)
        bad = (sub != 0) | (self.frames != np.round(self.frames))
        bad[1:] |= np.diff(self.frames) <= 0
        if bad.any():
            raise InputError(path, f"section '{name}': frames must be increasing integers with sub frame 0", line=int(self.block.lines[np.argmax(bad)]))

    def values(self, track: str, axes: list[str]) -> tuple[np.ndarray, list[int]]:
        """(values (frames, len(axes)), their columns) of a track; missing axes are an InputError."""
        missing = [a for a in axes if a not in self.tracks[track]]
        if missing:
            raise InputError(self.path, f"section '{self.name}': '{track}' lacks columns {', '.join(missing)}", line=self.axes_line)
        columns = [self.tracks[track][a] for a in axes]
        return self.block.group(columns), columns

    def unit(self, column: int, known) -> str:
        unit = self.units[column]
        if unit.lower() not in known:
            raise InputError(
                self.path, f"section '{self.name}': unknown unit '{unit}' (known: {', '.join(known)})", line=self.units_line, field=self.block.labels[column]
            )
        return unit.lower()


def _sections(path: Path) -> dict[str, _Section]:
    """The Segments and Trajectories sections of the file (others are skipped). A section runs
    from its name row to the next section's name row (Nexus also leaves a blank line between)."""
    rows = read_csv_rows(path, "Vicon CSV file")
    starts = [i for i, (_, row) in enumerate(rows) if row[0] in SECTIONS and not any(row[1:])]
    if not starts or starts[0] != 0:
        line = rows[0][0] if rows else 1
        raise InputError(path, f"expected a section name ({', '.join(SECTIONS)}) on the first line", line=line)
    sections = {}
    for start, end in zip(starts, starts[1:] + [len(rows)]):
        line, (name, *_) = rows[start]
        if name in sections:
            raise InputError(path, f"a second '{name}' section", line=line)
        if name in ("Segments", "Trajectories"):
            sections[name] = _Section(path, name, rows[start:end])
    if not sections:
        raise InputError(path, "the export has neither a 'Trajectories' nor a 'Segments' section")
    return sections


def read_vicon_csv(path: str | Path) -> MocapRecording:
    """Segments (bodies) and trajectories (markers) of a Nexus CSV export, in metres and seconds."""
    path = Path(path)
    sections = _sections(path)
    first = next(iter(sections.values()))
    for other in sections.values():
        if other.rate != first.rate or not np.array_equal(other.frames, first.frames):
            raise InputError(path, f"sections '{first.name}' and '{other.name}' do not hold the same frames at the same rate", line=other.line)
    bodies, markers = {}, {}
    if "Segments" in sections:
        section = sections["Segments"]
        for name in section.tracks:
            values, columns = section.values(name, SEGMENT_AXES)
            valid = ~np.isnan(values[:, 0])
            angle_units = {section.unit(c, ANGLE_UNITS) for c in columns[:3]}
            if len(angle_units) > 1:
                raise InputError(path, f"segment '{name}': RX, RY, RZ in different units", line=section.units_line)
            degrees = ANGLE_UNITS[angle_units.pop()]
            scales = [length_scale(path, section.units[c], line=section.units_line, field=section.block.labels[c]) for c in columns[3:]]
            quaternions = np.full((len(values), 4), np.nan)
            if valid.any():
                quaternions[valid] = Rotation.from_rotvec(values[valid, :3], degrees=degrees).as_quat()
            bodies[name] = BodyTrack(values[:, 3:] * scales, quaternions, valid)
    if "Trajectories" in sections:
        section = sections["Trajectories"]
        for name in section.tracks:
            values, columns = section.values(name, TRAJECTORY_AXES)
            scales = [length_scale(path, section.units[c], line=section.units_line, field=section.block.labels[c]) for c in columns]
            markers[name] = MarkerTrack(values * scales, ~np.isnan(values[:, 0]))
    check_unique(path, [*bodies, *markers])
    return MocapRecording(path, first.rate, (first.frames - 1) / first.rate, bodies, markers)


def write_vicon_csv(rec: MocapRecording, path: str | Path) -> None:
    """Write `rec` as a Nexus CSV export: "Segments" (bodies) then "Trajectories" (markers)."""
    frames = (frame_numbers(rec) + 1).astype(str).astype(object)
    index = np.stack([frames, np.full(len(rec), "0", dtype=object)], axis=1)
    rows: list[list] = []
    if rec.bodies:
        blocks = []
        for body in rec.bodies.values():
            rotvec = np.full((len(rec), 3), np.nan)
            if body.valid.any():
                rotvec[body.valid] = Rotation.from_quat(body.quaternions[body.valid]).as_rotvec(degrees=True)
            blocks += [format_cells(rotvec, ANGLE_DECIMALS), format_cells(body.positions * 1e3, LENGTH_DECIMALS)]
        rows += _section("Segments", rec, list(rec.bodies), SEGMENT_AXES, ["deg"] * 3 + ["mm"] * 3, np.hstack([index, *blocks]))
    if rec.markers:
        blocks = [format_cells(m.positions * 1e3, LENGTH_DECIMALS) for m in rec.markers.values()]
        rows += _section("Trajectories", rec, list(rec.markers), TRAJECTORY_AXES, ["mm"] * 3, np.hstack([index, *blocks]))
    write_csv_rows(Path(path), rows[:-1])  # no blank line after the last section


def _section(name: str, rec: MocapRecording, tracks: list[str], axes: list[str], units: list[str], data: np.ndarray) -> list[list]:
    names = ["", ""] + [cell for track in tracks for cell in [track] + [""] * (len(axes) - 1)]
    return [[name], [repr(float(rec.rate))], names, ["Frame", "Sub Frame"] + axes * len(tracks), ["", ""] + units * len(tracks), *data.tolist(), []]
