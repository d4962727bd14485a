"""User-facing errors: every message names the file and, where it applies, the line and field."""

from __future__ import annotations

from pathlib import Path


class RobocalError(Exception):
    """An error in the user's input or setup; the CLI prints it and exits with code 2."""


class InputError(RobocalError):
    """Bad content in a user file, located by file, line (1-based, as an editor shows it) and field."""

    def __init__(self, path: str | Path, message: str, *, line: int | None = None, field: str | None = None):
        self.path = Path(path)
        self.line = line
        self.field = field
        self.detail = message
        where = str(self.path)
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", column '{field}'" if line is not None else f", field '{field}'"
        super().__init__(f"{where}: {message}")
