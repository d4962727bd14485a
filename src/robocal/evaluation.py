"""Scoring a stored calibration on other data (held-out sessions, other placements)."""

from __future__ import annotations

from pathlib import Path

from robocal.calibration import measurement_metrics
from robocal.errors import RobocalError
from robocal.problem import load_problem
from robocal.results import read_results


def evaluate_file(problem_path: Path, result: Path, data: Path, measurement: str | None = None) -> dict:
    stored = read_results(result)
    problem = load_problem(problem_path, frame_initials=stored.frame_initials, unidentifiable=stored.unidentifiable)
    names = [m.name for m in problem.measurements]
    if measurement is None:
        if len(names) != 1:
            raise RobocalError(f"{problem_path}: several measurements ({', '.join(names)}); choose one with --measurement")
        measurement = names[0]
    if measurement not in names:
        raise RobocalError(f"{problem_path}: no measurement named '{measurement}' (have {', '.join(names)})")
    m = problem.measurements[names.index(measurement)]
    values, _ = m.load(data)
    before, after = stored.vectors(problem.layout.names, problem.theta0)
    metrics = measurement_metrics(m, values, before, after)
    return {"data": str(data), "result": str(result), "measurements": [metrics]}
