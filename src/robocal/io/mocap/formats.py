"""What the motion-capture format modules share: the length units a file may declare, the frame
numbering of the writers, unique track names, unit quaternions, and the located parsing and
formatting of CSV cells."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robocal.errors import InputError
from robocal.io.mocap.recording import MocapRecording
from robocal.io.table import read_text

# Length units a file may declare, as written by the measuring systems (case-insensitive).
LENGTH_UNITS = {"m": 1.0, "meters": 1.0, "metres": 1.0, "cm": 1e-2, "centimeters": 1e-2, "mm": 1e-3, "millimeters": 1e-3}


def length_scale(path: Path, unit: str, *, line: int | None = None, field: str | None = None) -> float:
    """Metres per unit of a length unit declared in a file; an unknown unit is an InputError."""
    try:
        return LENGTH_UNITS[unit.strip().lower()]
    except KeyError:
        raise InputError(path, f"unknown length unit '{unit.strip()}' (known: {', '.join(LENGTH_UNITS)})", line=line, field=field) from None


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
            bad = int(next(i for i in np.flatnonzero(~empty) if not _is_float(text[i])))
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
