"""Writing a command's output folder safely: checked before any long work, written aside and
moved into place, never over an input.

- `preflight(out, inputs)`: --out is not an existing file, can be created and written, does
  not hold one of the command's input files (a result folder is rewritten as a whole; an input in
  it would be overwritten or mixed up with the output) and is not inside an input folder (a
  placement folder: results written into it would change the input, and its recorded hash);
- `staged(out)`: a context that yields a hidden temporary folder beside --out; when the block ends
  without an exception its files are moved into --out (each `os.replace`, atomic per file), so a
  failed or killed run leaves no half-written folder and an earlier result as it was;
- `new_file(path, inputs)`: a single output file is new (nothing is overwritten), no input and in
  no input folder;
- `write_atomically(path, data)`: a file written aside and moved into place, so a reader or a
  killed run sees the old file or the whole new one, never half of one;
- `file_stem(name)`: a user's name (a measurement's) as a file name in the output folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from robocal.errors import RobocalError


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _holding_folders(path: Path, inputs: list[Path]) -> str:
    """The input folders `path` lies in, comma-separated ("" for none): output there would change an input."""
    return ", ".join(sorted({str(p) for p in inputs if p.is_dir() and _inside(path, p)}))


def preflight(out: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise a RobocalError naming --out if it cannot take this command's results (module doc)."""
    out, inputs = Path(out), [Path(p) for p in inputs]
    if out.exists() and not out.is_dir():
        raise RobocalError(f"{out}: --out is an existing file; give a folder")
    held = sorted({str(p) for p in inputs if _inside(p, out)})
    if held:
        raise RobocalError(f"{out}: --out holds input file(s) {', '.join(held)}; write the results to another folder")
    holding = _holding_folders(out, inputs)
    if holding:
        raise RobocalError(f"{out}: --out is inside the input folder {holding}; write the results to another folder")
    existing = next((p for p in [out, *out.parents] if p.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise RobocalError(f"{out}: cannot create or write the output folder ({existing} is not a writable folder)")


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """Yield a temporary folder; on success move its files into `out` (module doc)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        yield stage
        out.mkdir(parents=True, exist_ok=True)
        for file in sorted(p for p in stage.rglob("*") if p.is_file()):
            target = out / file.relative_to(stage)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(file, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def new_file(path: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise a RobocalError naming `path` unless it can be a new output file (module doc)."""
    path = Path(path)
    if path.exists():
        raise RobocalError(f"{path}: exists; give a new file name (robocal never overwrites a file it may have read)")
    inputs = [Path(p) for p in inputs]
    if any(p.resolve() == path.resolve() for p in inputs):
        raise RobocalError(f"{path}: is one of the command's inputs")
    holding = _holding_folders(path, inputs)
    if holding:
        raise RobocalError(f"{path}: is inside the input folder {holding}; write it elsewhere")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise RobocalError(f"{path}: cannot write there ({folder} is not a writable folder)")


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to a hidden file beside `path`, then move it onto `path` (os.replace)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def moved(files: Iterable[Path], stage: Path, out: Path) -> list[Path]:
    """The final paths in `out` of files written under `stage`."""
    return [Path(out) / Path(f).relative_to(stage) for f in files]


def file_stem(name: str) -> str:
    """`name` as a file name in an output folder: each run of characters other than letters,
    digits, '.', '-' and '_' becomes '_', so that no name (`../x`, `a/b`) leads out of the folder."""
    return re.sub(r"[^\w.-]+", "_", name)
