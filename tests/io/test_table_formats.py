"""Data tables in JSON, MATLAB .mat and Parquet read through `read_table` like CSV: the same
numbers (bit for bit) and text cells, and the same error contract (file, line or row, column
named; exit code 2 from the command line, nothing written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import yaml

from robocal.errors import InputError
from robocal.io.table import read_table
from robocal.problem import load_problem
from tests.conftest import REPO

ARM = REPO / "examples/fleet/arm_6r.urdf"
JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
COLUMNS = JOINTS + ["x", "y", "z"]
# numbers whose text matters: a third, a subnormal-free tiny value, a negative exponent, an integer
VALUES = np.random.default_rng(0).normal(size=(5, len(COLUMNS))) * np.array([1, 1, 1, 1, 1, 1, 1e-3, 1e3, 1 / 3])
BODIES = ["thumb_link4", "fore_link4", "thumb_link4", "middle_link4", "ring_link4"]


def write_csv(path: Path) -> Path:
    rows = [",".join(["body", *COLUMNS])] + [",".join([b, *(repr(float(v)) for v in row)]) for b, row in zip(BODIES, VALUES)]
    path.write_text("\n".join(rows) + "\n")
    return path


def write_json_rows(path: Path) -> Path:
    rows = [{"body": b, **dict(zip(COLUMNS, map(float, row)))} for b, row in zip(BODIES, VALUES)]
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")
    return path


def write_json_columns(path: Path) -> Path:
    rows = [[b, *map(float, row)] for b, row in zip(BODIES, VALUES)]
    path.write_text(json.dumps({"columns": ["body", *COLUMNS], "rows": rows}, indent=1))
    return path


def write_mat_struct(path: Path) -> Path:
    scipy.io.savemat(path, {"data": {"body": np.array(BODIES, dtype=object), **{c: VALUES[:, k] for k, c in enumerate(COLUMNS)}}})
    return path


def write_mat_matrix(path: Path) -> Path:
    scipy.io.savemat(path, {"samples": VALUES, "columns": np.array(COLUMNS, dtype=object)})
    return path


def write_parquet(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"body": BODIES, **{c: VALUES[:, k] for k, c in enumerate(COLUMNS)}}), path)
    return path


SUFFIX = {"json": "data.json", "mat": "data.mat", "parquet": "data.parquet"}


@pytest.mark.parametrize("writer", [write_json_rows, write_json_columns, write_mat_struct, write_mat_matrix, write_parquet])
def test_same_cells_as_csv(tmp_path, writer):
    reference = read_table(write_csv(tmp_path / "data.csv"))
    table = read_table(writer(tmp_path / next(f for k, f in SUFFIX.items() if k in writer.__name__)))
    assert np.array_equal(table.columns(COLUMNS), reference.columns(COLUMNS))  # bit for bit
    assert np.array_equal(table.columns(COLUMNS), VALUES)
    if "matrix" not in writer.__name__:
        assert list(table.strings(["body"])[:, 0]) == BODIES
    assert len(table) == 5


def test_json_rows_keep_their_editor_lines(tmp_path):
    path = write_json_columns(tmp_path / "data.json")  # indent=1: one value per line, each row opens with a lone "["
    text = path.read_text().splitlines()
    starts = [i + 1 for i, line in enumerate(text) if line.strip() == "["]
    assert len(starts) == 5 and list(read_table(path).lines) == starts
    assert list(read_table(write_json_rows(tmp_path / "rows.json")).lines) == [2, 3, 4, 5, 6]


def located(path: Path, columns=COLUMNS) -> InputError:
    with pytest.raises(InputError) as error:
        read_table(path).columns(list(columns))
    return error.value


def test_bad_json_files_are_located(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[\n {"shoulder_pan": 0.1, "x": 1},\n {"shoulder_pan": "0,2", "x": 2}\n]\n')
    error = located(bad, ["shoulder_pan", "x"])
    assert (error.line, error.field) == (3, "shoulder_pan") and "'0,2' is not a number (use a point" in str(error)
    error = located(bad, ["shoulder_pan", "y"])
    assert error.line is None and "missing column 'y' (header has: shoulder_pan, x)" in str(error)
    bad.write_text('[\n {"x": 1},\n {"y": 2}\n]\n')
    error = located(bad, ["x"])
    assert (error.line, error.field) == (3, "x") and "gives no value" in str(error)
    bad.write_text('[\n {"x": 1},\n {"x": NaN}\n]\n')
    assert (located(bad, ["x"]).line, "not a finite number") == (3, "not a finite number")
    bad.write_text('{"columns": ["x", "y"],\n "rows": [\n  [1, 2],\n  [3, [4]]\n ]}\n')
    error = located(bad, ["x"])
    assert (error.line, error.field) == (4, "y") and "not list" in str(error)
    bad.write_text('{"columns": ["x", "y"],\n "rows": [\n  [1, 2],\n  [3]\n ]}\n')
    assert located(bad, ["x"]).line == 4
    bad.write_text('[\n {"x": 1},\n {"x": 2,}\n]\n')
    error = located(bad, ["x"])
    assert error.line == 3 and "not valid JSON" in str(error)
    bad.write_text('{"rows": [[1]]}')
    assert "expected a list of row objects" in str(located(bad, ["x"]))
    bad.write_text("[]")
    assert "empty" in str(located(bad, ["x"]))


def test_bad_mat_files_are_located(tmp_path):
    bad = tmp_path / "bad.mat"
    values = VALUES.copy()
    values[3, 2] = np.nan
    scipy.io.savemat(bad, {"samples": values, "columns": np.array(COLUMNS, dtype=object)})
    error = located(bad)
    assert str(error) == f"{bad}: row 4, column 'elbow': 'nan' is not a finite number"
    assert "missing column 'q9'" in str(located(bad, ["q9"]))
    scipy.io.savemat(bad, {"data": {"x": np.arange(3.0), "y": np.arange(4.0)}})
    assert "different lengths (x: 3, y: 4)" in str(located(bad, ["x"]))
    scipy.io.savemat(bad, {"a": {"x": np.arange(3.0)}, "b": {"x": np.arange(3.0)}})
    assert "the file has a, b" in str(located(bad, ["x"]))
    scipy.io.savemat(bad, {"samples": VALUES, "columns": np.array(COLUMNS[:4], dtype=object)})
    assert "has 9 columns, `columns` names 4" in str(located(bad))
    scipy.io.savemat(bad, {"data": {"x": np.ones((3, 2))}})
    assert "'data.x' is 3 x 2" in str(located(bad, ["x"]))
    bad.write_bytes(b"MATLAB 5.0 MAT-file, but not really")
    assert "not a readable MATLAB .mat file" in str(located(bad))
    bad.write_bytes(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Wed Nov 25 2026 HDF5 schema 1.00 .".ljust(512, b" "))
    assert "a MATLAB v7.3 (HDF5) file; save it with save(..., '-v7')" in str(located(bad))


def test_bad_parquet_files_are_located(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "data.parquet"
    values = VALUES[:, 0].copy()
    pq.write_table(pa.table({"shoulder_pan": pa.array([*values[:2], None, *values[3:]]), "x": VALUES[:, 6]}), bad)
    assert "row 3" in str(located(bad, ["shoulder_pan"])) and "'shoulder_pan'" in str(located(bad, ["shoulder_pan"]))  # a null: an empty cell
    pq.write_table(pa.table({"x": pa.array([[1.0], [2.0]])}), bad)
    assert "column 'x' holds list<" in str(located(bad, ["x"]))
    bad.write_bytes(b"PAR1 but not really")
    assert "not a readable Parquet file" in str(located(bad))


def problem(folder: Path, data: str) -> Path:
    measurement = {"name": "tool", "type": "markers", "data": data, "link": "tool", "sigma": 1e-4, "points": [{"name": "p", "columns": ["x", "y", "z"]}]}
    path = folder / f"problem_{Path(data).suffix[1:]}.yaml"
    path.write_text(yaml.safe_dump({"robot": str(ARM), "parameters": {"default": "joint_offsets"}, "measurements": [measurement]}))
    return path


def test_a_problem_reads_json_and_mat_data_as_csv(tmp_path):
    write_csv(tmp_path / "data.csv")
    write_json_rows(tmp_path / "data.json")
    write_mat_struct(tmp_path / "data.mat")
    loaded = {name: load_problem(problem(tmp_path, name)).measurements[0] for name in ("data.csv", "data.json", "data.mat")}
    for name in ("data.json", "data.mat"):
        assert np.array_equal(loaded[name].data.q, loaded["data.csv"].data.q)
        assert np.array_equal(loaded[name].data.points, loaded["data.csv"].data.points)


def test_command_line_error_contract(tmp_path):
    """A bad cell in a .mat file stops `robocal calibrate` with one located line, exit code 2,
    and no result folder."""
    values = VALUES.copy()
    values[1, 0] = np.inf
    scipy.io.savemat(tmp_path / "data.mat", {"samples": values, "columns": np.array(COLUMNS, dtype=object)})
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu")
    out = tmp_path / "result"
    done = subprocess.run(
        [sys.executable, "-m", "robocal", "calibrate", str(problem(tmp_path, "data.mat")), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {tmp_path / 'data.mat'}: row 2, column 'shoulder_pan': 'inf' is not a finite number"
    assert not out.exists()
