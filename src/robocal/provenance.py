"""What a result was computed from: the SHA-256 of every input file, recorded with the result and
compared when the result is read back, so that a result is never applied to a model or data that
were edited after the fit."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

from robocal.errors import RobocalError

CHUNK = 2**20


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file; of a folder (a placement folder of socket recordings): of the names and
    hashes of the files in it, in sorted order."""
    digest = hashlib.sha256()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f"{file.relative_to(path).as_posix()}\0{sha256(file)}\n".encode())
        return digest.hexdigest()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def input_files(problem) -> dict[str, Path]:
    """Every file a problem reads, by role: problem, robot, sensors, data:<measurement>."""
    config, base = problem.config, problem.path.parent
    resolve = lambda p: p if p.is_absolute() else base / p  # noqa: E731
    files = {"problem": problem.path}
    if config.robot is not None:
        files["robot"] = resolve(config.robot)
    if config.sensors is not None:
        files["sensors"] = resolve(config.sensors)
    for m in config.measurements:
        files[f"data:{m.name}"] = resolve(m.data)
    return files


def fingerprints(problem) -> dict[str, dict[str, str]]:
    """{role: {"path", "sha256"}} of every input file of a problem (report.json `inputs`)."""
    return {role: {"path": str(path), "sha256": sha256(path)} for role, path in input_files(problem).items()}


def changed_inputs(recorded: dict[str, dict[str, str]], problem) -> list[str]:
    """Human-readable lines for every input whose content differs from what a result recorded."""
    changed = []
    for role, path in input_files(problem).items():
        if role not in recorded:
            changed.append(f"{role} ({path}) was not an input of the calibration")
        elif not path.exists():
            changed.append(f"{role} ({path}) no longer exists")
        elif sha256(path) != recorded[role]["sha256"]:
            changed.append(f"{role} ({path}) changed after the calibration")
    changed += [
        f"{role} ({entry['path']}) was an input of the calibration and is not one of this problem"
        for role, entry in recorded.items()
        if role not in input_files(problem)
    ]
    return changed


def check_inputs(recorded: dict[str, dict[str, str]] | None, problem, result: Path, force: bool, warn: Callable[[str], None] | None) -> None:
    """Refuse (RobocalError) a result whose inputs no longer match the problem's files; with
    `force`, pass every mismatch to `warn` (default: print to stderr) instead. A result without
    recorded inputs (written by an older robocal) cannot be checked, which is said too."""
    warn = warn or (lambda text: print(text, file=sys.stderr))
    if recorded is None:
        warn(f"{result}: the result records no input hashes (written by an older robocal); its inputs cannot be checked")
        return
    changed = changed_inputs(recorded, problem)
    if not changed:
        return
    message = f"{result}: the result does not match the files it is applied to: " + "; ".join(changed)
    if not force:
        raise RobocalError(message + " (calibrate again; `robocal evaluate --force` evaluates anyway)")
    warn("WARNING " + message)
