"""Files of equinox leaves (a network's weights, a checkpoint's network and optimizer state):
read with an error that names the file, written aside and renamed into place so that a process
killed while writing leaves the earlier file whole."""

from __future__ import annotations

import os
from pathlib import Path

import equinox as eqx

from robocal.errors import InputError


def read_leaves(path: Path, like):
    """`eqx.tree_deserialise_leaves(path, like)`; a file that does not hold leaves of `like`'s
    shapes (cut short, or written for other options) is an InputError naming it."""
    try:
        return eqx.tree_deserialise_leaves(path, like)
    except OSError as exc:
        raise InputError(path, f"cannot read file ({exc.strerror})") from None
    except (ValueError, RuntimeError, EOFError) as exc:  # equinox wraps numpy's reading error in RuntimeErrors naming the leaf
        cause: BaseException = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        raise InputError(path, f"does not hold this network's weights, cut short or written for other options ({cause})") from None


def write_leaves(out: Path, name: str, tree) -> None:
    """`eqx.tree_serialise_leaves` to out / name, written aside and renamed into place."""
    out.mkdir(parents=True, exist_ok=True)
    eqx.tree_serialise_leaves(out / f".{name}.partial", tree)
    os.replace(out / f".{name}.partial", out / name)
