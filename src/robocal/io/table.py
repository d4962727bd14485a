"""Data tables with a header row (CSV; JSON and MATLAB .mat through `table_formats`): every
problem is reported with file, line (or row) and column.

A bad cell or row is never dropped silently: reading stops at the first problem with a message
that says where it is (line numbers are 1-based and count the header, as an editor shows them).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robocal.errors import InputError
from robocal.io import table_formats


@dataclass(frozen=True)
class Table:
    path: Path
    header: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]  # None: a cell the file does not give (a JSON row object without the key)
    lines: np.ndarray  # source line of each row (the row number, from 1, in a file without lines: .mat)
    header_line: int | None = 1
    position: str = "line"  # what `lines` count: "line" (CSV, JSON) or "row" (.mat)

    def __len__(self) -> int:
        return len(self.rows)

    def error(self, line: int, message: str, column: str) -> InputError:
        """A bad cell, located as the file allows: line and column, or row and column."""
        if self.position == "line":
            return InputError(self.path, message, line=line, field=column)
        return InputError(self.path, f"row {line}, column '{column}': {message}")

    def _text(self, row: tuple[str | None, ...], line: int, c: int, name: str) -> str:
        cell = row[c]
        if cell is None:
            raise self.error(line, "this row gives no value for the column", name)
        return cell.strip()

    def _index(self, names: list[str], what: str) -> dict[str, int]:
        """Column positions; a missing or duplicated column is an InputError."""
        index = {name: i for i, name in enumerate(self.header)}
        missing = [n for n in names if n not in index]
        if missing:
            raise InputError(self.path, f"missing {what} {', '.join(repr(m) for m in missing)} (header has: {', '.join(self.header)})")
        for name in names:
            if self.header.count(name) > 1:
                raise InputError(self.path, f"the header names this column {self.header.count(name)} times", line=self.header_line, field=name)
        return index

    def strings(self, names: list[str], *, what: str = "column") -> np.ndarray:
        """Stripped text cells (rows, len(names)); an empty cell is an InputError."""
        index = self._index(names, what)
        out = np.empty((len(self.rows), len(names)), dtype=object)
        for r, (row, line) in enumerate(zip(self.rows, self.lines)):
            for c, name in enumerate(names):
                out[r, c] = self._text(row, int(line), index[name], name)
                if not out[r, c]:
                    raise self.error(int(line), "empty cell", name)
        return out

    def columns(self, names: list[str], *, what: str = "column") -> np.ndarray:
        """Float array (rows, len(names)); a missing column or a non-finite cell is an InputError."""
        index = self._index(names, what)
        out = np.empty((len(self.rows), len(names)))
        for r, (row, line) in enumerate(zip(self.rows, self.lines)):
            for c, name in enumerate(names):
                text = self._text(row, int(line), index[name], name)
                try:
                    value = float(text)
                except ValueError:
                    hint = " (use a point as the decimal separator)" if "," in text else ""
                    raise self.error(int(line), f"'{text}' is not a number{hint}", name) from None
                if not math.isfinite(value):
                    raise self.error(int(line), f"'{text}' is not a finite number", name)
                out[r, c] = value
        return out


def read_text(path: Path, what: str) -> str:
    """The text of a user's file; unreadable or not UTF-8 is an InputError naming it. A byte-order
    mark is dropped (it is not part of the first column name)."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(path, f"cannot read {what} ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None


# A calibration data file holds thousands of rows, not millions: parsing one of this size as text
# cells would take gigabytes, so a larger file is refused before it is read.
MAX_TABLE_BYTES = 100 * 2**20


def read_table(path: str | Path) -> Table:
    """Read a data table: CSV (any suffix but those below), JSON (.json), MATLAB (.mat) or Parquet
    (.parquet, .pq); the same cells and the same located errors from each (`robocal.io.table_formats`)."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_TABLE_BYTES:
        raise InputError(
            path,
            f"{path.stat().st_size / 2**20:.0f} MiB is more than the {MAX_TABLE_BYTES // 2**20} MiB a data file may have "
            "(split the recording, or choose samples with `robocal design`)",
        )
    suffix = path.suffix.lower()
    if suffix in (".mat", ".parquet", ".pq"):
        if not path.is_file():
            raise InputError(path, "cannot read data file (No such file or directory)")
        header, cells = (table_formats.read_mat if suffix == ".mat" else table_formats.read_parquet)(path)
        return _table(path, header, cells, list(range(1, len(cells) + 1)), None, "row")
    if suffix == ".json":
        names, rows, lines, header_line = table_formats.read_json(path, read_text(path, "data file"))
        return _table(path, names, rows, lines, header_line, "line")
    return read_csv(path)


def _table(path: Path, header: tuple[str, ...], rows: list, lines: list[int], header_line: int | None, position: str) -> Table:
    if not rows:
        raise InputError(path, "no data rows" if header else "the file is empty (expected a header and at least one row)")
    return Table(path, header, tuple(rows), np.array(lines), header_line, position)


def read_csv(path: Path) -> Table:
    """Read a CSV file with a header; blank lines are skipped, every other row must be complete."""
    text = read_text(path, "data file")
    reader = csv.reader(text.splitlines())
    records = []
    try:
        for row in reader:
            records.append((reader.line_num, row))  # line_num: the line a record ends on (quoted newlines)
    except csv.Error as exc:
        raise InputError(path, f"not a valid CSV row ({exc})", line=reader.line_num) from None
    records = [(line, row) for line, row in records if any(cell.strip() for cell in row)]
    if not records:
        raise InputError(path, "the file is empty (expected a header and at least one row)")
    (header_line, raw_header), body = records[0], records[1:]
    header = tuple(h.strip() for h in raw_header)
    if not body:
        raise InputError(path, "no data rows after the header")
    for line, row in body:
        if len(row) != len(header):
            raise InputError(path, f"expected {len(header)} fields as in the header, found {len(row)}", line=line)
    return Table(path, header, tuple(tuple(row) for _, row in body), np.array([line for line, _ in body]), header_line)
