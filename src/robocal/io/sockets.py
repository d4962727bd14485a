"""The sphere-in-socket recording layout: a folder per placement of the socket plate, with one
headerless CSV per socket (`hole_0.csv`, `hole_1.csv`, ...), one joint configuration per row in
the URDF's actuated-joint order (radians)."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robocal.errors import InputError
from robocal.io.table import read_text

SOCKET_FILE = re.compile(r"hole_(\d+)\.csv")


def socket_file(folder: Path, socket: int) -> Path:
    return Path(folder) / f"hole_{socket}.csv"


@dataclass(frozen=True)
class SocketRecording:
    """Configurations (n, n_joints), the socket of each row, and each row's line in its socket file."""

    q: np.ndarray
    socket: np.ndarray
    lines: np.ndarray  # 1-based

    def __len__(self) -> int:
        return len(self.q)


def _read_headerless(path: Path, joints: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    text = read_text(path, "socket file")
    rows, lines = [], []
    for line, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(joints):
            raise InputError(path, f"expected {len(joints)} joint values ({', '.join(joints)}), found {len(row)}", line=line)
        values = []
        for name, cell in zip(joints, row):
            try:
                value = float(cell)
            except ValueError:
                raise InputError(path, f"'{cell.strip()}' is not a number", line=line, field=name) from None
            if not math.isfinite(value):
                raise InputError(path, f"'{cell.strip()}' is not a finite number", line=line, field=name)
            values.append(value)
        rows.append(values)
        lines.append(line)
    if not rows:
        raise InputError(path, "no configurations in this socket file")
    return np.array(rows, dtype=float), np.array(lines, dtype=int)


def read_socket_folder(folder: str | Path, joints: tuple[str, ...]) -> SocketRecording:
    """Read every `hole_<k>.csv` of a placement folder; sockets must be numbered 0, 1, ... without gaps."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "not a folder of socket files (hole_0.csv, hole_1.csv, ...)")
    numbers = sorted(int(m.group(1)) for p in folder.iterdir() if (m := SOCKET_FILE.fullmatch(p.name)))
    if not numbers:
        raise InputError(folder, "no socket files (expected hole_0.csv, hole_1.csv, ...)")
    if numbers != list(range(len(numbers))):
        missing = sorted(set(range(max(numbers) + 1)) - set(numbers))
        raise InputError(folder, f"socket files must be numbered from 0 without gaps; missing {', '.join(socket_file(folder, k).name for k in missing)}")
    q, socket, lines = [], [], []
    for k in numbers:
        values, file_lines = _read_headerless(socket_file(folder, k), joints)
        q.append(values)
        socket.append(np.full(len(values), k))
        lines.append(file_lines)
    return SocketRecording(np.concatenate(q), np.concatenate(socket), np.concatenate(lines))


def write_socket_folder(folder: str | Path, configurations: list[np.ndarray]) -> list[Path]:
    """Write one `hole_<k>.csv` per socket (configurations[k]: (n_k, n_joints)); returns the files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for k, q in enumerate(configurations):
        path = socket_file(folder, k)
        np.savetxt(path, np.atleast_2d(np.asarray(q, dtype=float)), delimiter=",", fmt="%.18e")
        written.append(path)
    return written
