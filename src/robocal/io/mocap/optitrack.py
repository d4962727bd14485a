"""OptiTrack Motive CSV exports ("Format Version" 1.2x).

Layout: a metadata line of key,value pairs ("Format Version,1.23,...,Export Frame Rate,120,...,
Rotation Type,Quaternion,Length Units,Meters,..."), then header rows ",Type,...", ",Name,...",
",ID,...", ",,Rotation|Position|...,..." and "Frame,Time (Seconds),X,Y,Z,W,...", then one row per
frame; an occluded sample leaves its cells empty.

Read: "Rigid Body" columns become bodies (Rotation X, Y, Z, W = quaternion in Motive's x, y, z, w
order; Position X, Y, Z), "Marker" columns become markers (Position X, Y, Z). Other asset types
("Rigid Body Marker": expected, not measured, marker positions; skeleton "Bone"s, ...) and other
fields ("Mean Marker Error", "Marker Quality", ...) are not read. Lengths are scaled from the
declared "Length Units" (Meters when the line has none, Motive's default); the frame rate is the
"Export Frame Rate" (else "Capture Frame Rate"); times are the "Time (Seconds)" column. Only the
quaternion rotation type is supported: an export with Euler angles is an InputError.

Written: the same layout with "Length Units,Meters", 9 decimals (1 nm, and 1e-9 per quaternion
component), frame numbers t * rate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robocal.errors import InputError
from robocal.io.mocap.formats import (
    CsvBlock,
    check_unique,
    format_cells,
    frame_numbers,
    length_scale,
    read_csv_rows,
    unit_quaternions,
    write_csv_rows,
)
from robocal.io.mocap.recording import BodyTrack, MarkerTrack, MocapRecording

DECIMALS = 9
BODY_COLUMNS = [("Rotation", "X"), ("Rotation", "Y"), ("Rotation", "Z"), ("Rotation", "W"), ("Position", "X"), ("Position", "Y"), ("Position", "Z")]
MARKER_COLUMNS = [("Position", "X"), ("Position", "Y"), ("Position", "Z")]


def is_optitrack(first_line: str) -> bool:
    return first_line.split(",", 1)[0].strip().strip('"') == "Format Version"


def read_optitrack_csv(path: str | Path) -> MocapRecording:
    """Rigid bodies and markers of a Motive CSV export, in metres and seconds."""
    path = Path(path)
    rows = read_csv_rows(path, "OptiTrack CSV file")
    if not rows or rows[0][0] != 1 or rows[0][1][0] != "Format Version":
        raise InputError(path, "not an OptiTrack Motive CSV export (the first line must start with 'Format Version')", line=1)
    meta = dict(zip(rows[0][1][::2], rows[0][1][1::2]))
    rate = _rate(path, meta)
    if meta.get("Rotation Type", "Quaternion") != "Quaternion":
        raise InputError(path, f"rotation type '{meta['Rotation Type']}' is not supported: export with Rotation Type Quaternion", line=1)
    scale = length_scale(path, meta.get("Length Units", "Meters"), line=1, field="Length Units")

    axis_at, columns, labels = _header(path, rows)
    block = CsvBlock.from_rows(path, rows[axis_at + 1 :], labels)
    block.numbers(0, required=True)  # a frame number that is not a number is a broken row
    times = block.numbers(1, required=True)
    if np.any(np.diff(times) <= 0):
        row = int(np.argmax(np.diff(times) <= 0)) + 1
        raise InputError(path, "time does not increase from the previous row", line=int(block.lines[row]), field=labels[1])

    bodies, markers = {}, {}
    for (kind, name), slot in columns.items():
        wanted = BODY_COLUMNS if kind == "Rigid Body" else MARKER_COLUMNS
        missing = [f"{f} {a}" for f, a in wanted if (f, a) not in slot]
        if missing:
            raise InputError(path, f"{kind} '{name}' lacks columns {', '.join(missing)}", line=rows[axis_at][0])
        values = block.group([slot[key] for key in wanted])
        valid = ~np.isnan(values[:, 0])
        if kind == "Rigid Body":
            quaternions = unit_quaternions(path, values[:, :4], block.lines, f"rigid body '{name}'")
            bodies[name] = BodyTrack(values[:, 4:] * scale, quaternions, valid)
        else:
            markers[name] = MarkerTrack(values * scale, valid)
    return MocapRecording(path, rate, times, bodies, markers)


def _header(path: Path, rows: list[tuple[int, list[str]]]) -> tuple[int, dict, list[str]]:
    """(index of the "Frame,Time (Seconds),..." row, {(type, name): {(field, axis): column}} of the
    rigid bodies and markers, a label per column for messages) from the header rows."""
    axis_at = next((i for i, (_, row) in enumerate(rows) if row[:1] == ["Frame"]), None)
    if axis_at is None:
        raise InputError(path, "no 'Frame,Time (Seconds),...' header row")
    header = {row[1]: (line, row) for line, row in rows[1:axis_at] if len(row) > 1 and row[0] == "" and row[1]}
    fields = [(line, row) for line, row in rows[1:axis_at] if len(row) > 2 and row[0] == row[1] == ""]
    for needed in ("Type", "Name"):
        if needed not in header:
            raise InputError(path, f"no ',{needed},...' header row before line {rows[axis_at][0]}")
    if not fields:
        raise InputError(path, f"no ',,Rotation/Position,...' header row before line {rows[axis_at][0]}")
    axis_line, axes = rows[axis_at]
    types, names, field = (_padded(header["Type"][1], len(axes)), _padded(header["Name"][1], len(axes)), _padded(fields[0][1], len(axes)))
    columns: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    for c in range(2, len(axes)):
        if types[c] in ("Rigid Body", "Marker"):
            slot = columns.setdefault((types[c], names[c]), {})
            if (field[c], axes[c]) in slot:
                raise InputError(path, f"{types[c]} '{names[c]}' has two '{field[c]} {axes[c]}' columns (column {c + 1})", line=axis_line)
            slot[(field[c], axes[c])] = c
    check_unique(path, [name for _, name in columns], line=header["Name"][0])
    labels = axes[:2] + [f"{n} {f} {a}".strip() for n, f, a in zip(names[2:], field[2:], axes[2:])]
    return axis_at, columns, labels


def _rate(path: Path, meta: dict[str, str]) -> float:
    key = "Export Frame Rate" if "Export Frame Rate" in meta else "Capture Frame Rate"
    try:
        rate = float(meta[key])
    except KeyError:
        raise InputError(path, "the metadata line gives no frame rate ('Export Frame Rate')", line=1) from None
    except ValueError:
        raise InputError(path, f"'{meta[key]}' is not a frame rate", line=1, field=key) from None
    if not (np.isfinite(rate) and rate > 0):
        raise InputError(path, f"'{meta[key]}' is not a positive frame rate", line=1, field=key)
    return rate


def _padded(row: list[str], width: int) -> list[str]:
    return row + [""] * (width - len(row))


def write_optitrack_csv(rec: MocapRecording, path: str | Path) -> None:
    """Write `rec` as a Motive "Format Version 1.23" CSV export (metres, quaternion rotations)."""
    path = Path(path)
    n = len(rec)
    meta = [
        "Format Version",
        "1.23",
        "Take Name",
        path.stem,
        "Capture Frame Rate",
        repr(float(rec.rate)),
        "Export Frame Rate",
        repr(float(rec.rate)),
        "Total Frames in Take",
        n,
        "Total Exported Frames",
        n,
        "Rotation Type",
        "Quaternion",
        "Length Units",
        "Meters",
        "Coordinate Space",
        "Global",
    ]
    types, names, ids, fields, axes = ["", "Type"], ["", "Name"], ["", "ID"], ["", ""], ["Frame", "Time (Seconds)"]
    blocks = []
    tracks = [("Rigid Body", name, BODY_COLUMNS, np.hstack([b.quaternions, b.positions])) for name, b in rec.bodies.items()]
    tracks += [("Marker", name, MARKER_COLUMNS, m.positions) for name, m in rec.markers.items()]
    for number, (kind, name, wanted, values) in enumerate(tracks, start=1):
        types += [kind] * len(wanted)
        names += [name] * len(wanted)
        ids += [str(number)] * len(wanted)
        fields += [f for f, _ in wanted]
        axes += [a for _, a in wanted]
        blocks.append(format_cells(values, DECIMALS))
    frames = frame_numbers(rec)
    data = np.hstack([frames[:, None].astype(str).astype(object), np.char.mod(f"%.{DECIMALS}f", rec.times)[:, None].astype(object), *blocks])
    write_csv_rows(path, [meta, [], types, names, ids, fields, axes, *data.tolist()])
