"""Tables in other files than CSV: JSON, MATLAB .mat and Parquet, read as the same cells a CSV would give
(`robocal.io.table.read_table` chooses by suffix). Numbers become their exact text (repr), so
reading them back as floats loses nothing; where a cell is bad, the error names it as for CSV.

- JSON: a list of row objects `[{"q1": 0.1, "x": 1.2}, ...]`, or `{"columns": ["q1", "x"],
  "rows": [[0.1, 1.2], ...]}`. Each row keeps the line it starts on, as an editor shows it.
- MATLAB v5/v7 (`scipy.io.loadmat`): one struct whose fields are column vectors of equal length,
  or a numeric matrix with a `columns` cell of its column names. Rows are numbered from 1.
- Parquet (pyarrow, the optional extra `robocal[parquet]`): one column per name, numbers or text;
  a null is an empty cell. Rows are numbered from 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from robocal.errors import InputError

MISSING = None  # a cell a JSON row object does not give

LAYOUT_JSON = 'a list of row objects [{"q1": 0.1, ...}, ...], or {"columns": ["q1", ...], "rows": [[0.1, ...], ...]}'
LAYOUT_MAT = "one struct of column vectors (data.q1, data.x, ...), or a numeric matrix and a cell `columns` of its column names"


def _cell(path: Path, value, line: int, column: str) -> str:
    """The text of a JSON cell as a CSV reader would see it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value
    raise InputError(path, f"a cell holds a number or text, not {type(value).__name__} {json.dumps(value)[:40]}", line=line, field=column)


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _array_starts(text: str, i: int) -> list[int]:
    """Offsets of the elements of the JSON array whose '[' is at offset i (the text is valid JSON)."""
    decoder, starts = json.JSONDecoder(), []
    i = _skip(text, i + 1)
    while text[i] != "]":
        starts.append(i)
        i = _skip(text, decoder.raw_decode(text, i)[1])
        i = _skip(text, i + 1) if text[i] == "," else i
    return starts


def _member_starts(text: str, i: int) -> dict[str, int]:
    """Offsets of the values of the JSON object whose '{' is at offset i, by key (the last of a key)."""
    decoder, starts = json.JSONDecoder(), {}
    i = _skip(text, i + 1)
    while text[i] != "}":
        key, i = decoder.raw_decode(text, i)
        i = _skip(text, _skip(text, i) + 1)  # past ':'
        starts[key] = i
        i = _skip(text, decoder.raw_decode(text, i)[1])
        i = _skip(text, i + 1) if text[i] == "," else i
    return starts


def read_json(path: Path, text: str) -> tuple[tuple[str, ...], list[tuple[str | None, ...]], list[int], int]:
    """(header, rows of cell texts (None: not given), the line of each row, the header's line)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    start = _skip(text, 0)

    def line(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    if isinstance(document, list):
        lines = [line(s) for s in _array_starts(text, start)]
        header: list[str] = []
        for row, at in zip(document, lines):
            if not isinstance(row, dict):
                raise InputError(path, f"a row must be an object {{column: value}}; expected {LAYOUT_JSON}", line=at)
            header += [k for k in row if k not in header]
        rows = [tuple(MISSING if k not in row else _cell(path, row[k], at, k) for k in header) for row, at in zip(document, lines)]
        return tuple(h.strip() for h in header), rows, lines, lines[0] if lines else 1
    if not isinstance(document, dict) or set(document) != {"columns", "rows"}:
        raise InputError(path, f"expected {LAYOUT_JSON}", line=line(start))
    members = _member_starts(text, start)
    columns, body = document["columns"], document["rows"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise InputError(path, "`columns` must be a list of column names", line=line(members["columns"]))
    if not isinstance(body, list):
        raise InputError(path, "`rows` must be a list of rows, each a list of values", line=line(members["rows"]))
    lines = [line(s) for s in _array_starts(text, members["rows"])]
    rows = []
    for row, at in zip(body, lines):
        if not isinstance(row, list) or len(row) != len(columns):
            found = str(len(row)) if isinstance(row, list) else f"a {type(row).__name__}"
            raise InputError(path, f"expected {len(columns)} values as in `columns`, found {found}", line=at)
        rows.append(tuple(_cell(path, v, at, c) for v, c in zip(row, columns)))
    return tuple(c.strip() for c in columns), rows, lines, line(members["columns"])


def read_mat(path: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(header, rows of cell texts) of a MATLAB v5/v7 file."""
    import scipy.io

    with open(path, "rb") as handle:
        if handle.read(19) == b"MATLAB 7.3 MAT-file":  # the text header of an HDF5-based file, which scipy does not read
            raise InputError(path, "a MATLAB v7.3 (HDF5) file; save it with save(..., '-v7') to have it read")
    try:
        variables = scipy.io.loadmat(str(path), simplify_cells=True)
    except Exception as exc:  # scipy's reader fails on a damaged file with whatever its parsing met (MatReadError, ValueError, struct.error, ...)
        raise InputError(path, f"not a readable MATLAB .mat file ({type(exc).__name__}: {exc})") from None
    variables = {k: v for k, v in variables.items() if not k.startswith("__")}
    structs = {k: v for k, v in variables.items() if isinstance(v, dict)}
    if len(structs) == 1 and len(variables) == 1:
        ((name, struct),) = structs.items()
        header, columns = tuple(struct), [_mat_column(path, f"{name}.{k}", v) for k, v in struct.items()]
    elif set(variables) - {"columns"} and "columns" in variables and len(variables) == 2:
        ((name, matrix),) = ((k, v) for k, v in variables.items() if k != "columns")
        header, columns = _mat_matrix(path, name, matrix, variables["columns"])
    else:
        raise InputError(path, f"expected {LAYOUT_MAT}; the file has {', '.join(sorted(variables)) or 'no variables'}")
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        sizes = ", ".join(f"{h}: {len(c)}" for h, c in zip(header, columns))
        raise InputError(path, f"the columns have different lengths ({sizes})")
    return header, list(zip(*columns))


def _mat_column(path: Path, name: str, value) -> list[str]:
    """One column's cell texts: a numeric vector, or text (a cell of strings)."""
    if isinstance(value, str):
        return [value]
    array = np.atleast_1d(np.asarray(value, dtype=object if isinstance(value, list) else None))
    if array.ndim != 1:
        raise InputError(path, f"'{name}' is {' x '.join(map(str, array.shape))}; each column must be a vector")
    if array.dtype.kind in "biuf":
        return [repr(float(v)) for v in array]
    if array.dtype.kind in "OU" and all(isinstance(v, str) for v in array):
        return [str(v) for v in array]
    raise InputError(path, f"'{name}' holds {array.dtype} values; a column holds numbers or text")


def _mat_matrix(path: Path, name: str, matrix, names) -> tuple[tuple[str, ...], list[list[str]]]:
    header = (names,) if isinstance(names, str) else tuple(names) if isinstance(names, (list, np.ndarray)) else ()
    if not header or not all(isinstance(h, str) for h in header):
        raise InputError(path, "`columns` must be a cell of column names, one per column of the matrix")
    array = np.asarray(matrix)
    if array.ndim == 1:  # loadmat squeezes an n x 1 (or 1 x n) matrix
        array = array.reshape(-1, 1) if len(header) == 1 else array.reshape(1, -1)
    if array.ndim != 2 or array.dtype.kind not in "biuf":
        raise InputError(path, f"'{name}' must be a numeric matrix, one column per name in `columns`")
    if array.shape[1] != len(header):
        raise InputError(path, f"'{name}' has {array.shape[1]} columns, `columns` names {len(header)}")
    return tuple(h.strip() for h in header), [[repr(float(v)) for v in array[:, c]] for c in range(array.shape[1])]


def read_parquet(path: Path) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """(header, rows of cell texts) of a Parquet file: numeric columns as their exact float text,
    text columns as they are, nulls as empty cells."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(path, "reading Parquet needs pyarrow: pip install 'robocal[parquet]', or write the table as CSV, JSON or MATLAB .mat") from None
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, f"not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    columns = []
    for name, column in zip(table.column_names, table.columns):
        kind = column.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            columns.append(["" if v is None else repr(float(v)) for v in column.to_pylist()])
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            columns.append(["" if v is None else v for v in column.to_pylist()])
        else:
            raise InputError(path, f"column '{name}' holds {kind} values; a column holds numbers or text")
    return tuple(table.column_names), list(zip(*columns))
