"""Odometry intervals: wheel rotations and the sensor's own displacement over the same time.

Two formats, told apart by the suffix:
- CSV (our format) with a header and the columns phi_left, phi_right (wheel rotation over the
  interval, rad), dx, dy, dyaw (the sensor's displacement in its own frame at the interval start,
  m and rad); other columns are ignored.
- Censi's `.tuple` logs: a stream of JSON objects {"T": s, "phi_l": rad/s, "phi_r": rad/s,
  "sm": [dx, dy, dtheta]}. phi_l and phi_r are the wheels' mean angular *rates* over the interval
  (the reference solver multiplies them by T), so the rotation is T * phi.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robocal.errors import InputError
from robocal.io.table import read_table, read_text

COLUMNS = ("phi_left", "phi_right", "dx", "dy", "dyaw")


@dataclass(frozen=True)
class Intervals:
    phi: np.ndarray  # (n, 2) wheel rotations left, right (rad)
    motion: np.ndarray  # (n, 3) sensor displacement dx, dy (m), dyaw (rad)
    lines: np.ndarray  # (n,) source line of each interval


def read_intervals(path: str | Path) -> Intervals:
    path = Path(path)
    if path.suffix == ".tuple":
        return _read_tuple(path)
    values = read_table(path)
    table = values.columns(list(COLUMNS), what="interval column")
    return Intervals(table[:, :2], table[:, 2:], values.lines)


def write_intervals(path: str | Path, phi: np.ndarray, motion: np.ndarray) -> None:
    rows = np.column_stack([phi, motion])
    body = "\n".join(",".join(f"{v:.12g}" for v in row) for row in rows)
    Path(path).write_text(",".join(COLUMNS) + "\n" + body + "\n")


def _read_tuple(path: Path) -> Intervals:
    text = read_text(path, "odometry log")
    decoder, i, phi, motion, lines = json.JSONDecoder(), 0, [], [], []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            break
        line = text.count("\n", 0, i) + 1
        try:
            record, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not a JSON record ({exc.msg})", line=line) from None
        try:
            t, rates, sm = float(record["T"]), (float(record["phi_l"]), float(record["phi_r"])), [float(v) for v in record["sm"]]
        except KeyError as exc:
            raise InputError(path, "missing in this record", line=line, field=exc.args[0]) from None
        except (TypeError, ValueError) as exc:
            raise InputError(path, f"a field is not a number ({exc})", line=line) from None
        if len(sm) != 3 or not all(math.isfinite(v) for v in (t, *rates, *sm)):
            raise InputError(path, "expected finite T, phi_l, phi_r and three sm values", line=line)
        phi.append((t * rates[0], t * rates[1]))
        motion.append(sm)
        lines.append(line)
    if not lines:
        raise InputError(path, "no records")
    return Intervals(np.array(phi), np.array(motion), np.array(lines))
