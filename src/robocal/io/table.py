"""CSV tables with a header row: every problem is reported with file, line and column.

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


@dataclass(frozen=True)
class Table:
    path: Path
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    lines: np.ndarray  # source line of each row
    header_line: int = 1

    def __len__(self) -> int:
        return len(self.rows)

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
                out[r, c] = row[index[name]].strip()
                if not out[r, c]:
                    raise InputError(self.path, "empty cell", line=int(line), field=name)
        return out

    def columns(self, names: list[str], *, what: str = "column") -> np.ndarray:
        """Float array (rows, len(names)); a missing column or a non-finite cell is an InputError."""
        index = self._index(names, what)
        out = np.empty((len(self.rows), len(names)))
        for r, (row, line) in enumerate(zip(self.rows, self.lines)):
            for c, name in enumerate(names):
                text = row[index[name]].strip()
                try:
                    value = float(text)
                except ValueError:
                    hint = " (use a point as the decimal separator)" if "," in text else ""
                    raise InputError(self.path, f"'{text}' is not a number{hint}", line=int(line), field=name) from None
                if not math.isfinite(value):
                    raise InputError(self.path, f"'{text}' is not a finite number", line=int(line), field=name)
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
    """Read a CSV file with a header; blank lines are skipped, every other row must be complete."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_TABLE_BYTES:
        raise InputError(
            path,
            f"{path.stat().st_size / 2**20:.0f} MiB is more than the {MAX_TABLE_BYTES // 2**20} MiB a data file may have "
            "(split the recording, or choose samples with `robocal design`)",
        )
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
