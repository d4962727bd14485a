"""Sphere-in-socket calibration of every vendored unit: train on one placement (front, or the
first in alphabetical order), evaluate on the unit's other placements; a Markdown table for
docs/validation.md.

Run from the repository root:  .venv/bin/python examples/mukca/validate.py
Each unit goes through the product's own path: `calibrate`, the result folder, `evaluate_files`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.progress import Progress

from robocal.calibration import calibrate
from robocal.evaluation import evaluate_files
from robocal.problem import load_problem
from robocal.results import write_results

HERE = Path(__file__).resolve().parent


def validate(problem_path: Path) -> dict:
    problem = load_problem(problem_path)
    cal = calibrate(problem)
    m = problem.measurements[0]
    unit = m.config.data.parent.name
    others = sorted(p for p in (HERE / "data" / unit).iterdir() if p.name != m.config.data.name)
    with tempfile.TemporaryDirectory() as folder:
        write_results(cal, Path(folder))
        report = evaluate_files(problem_path, Path(folder), others)
    return {"unit": unit, "rank": cal.identifiability.rank, "n_parameters": cal.identifiability.n_parameters, **report}


def row(result: dict) -> str:
    train = result["training"][0]["measurements"][0]
    held_out = ", ".join(f"{Path(e['data']).name} {100 * e['measurements'][0]['removed']:.1f} %" for e in result["evaluations"])
    warnings = ", ".join(w["kind"] for w in result["warnings"]) or "none"
    return (
        f"| {result['unit']} | {Path(result['training']['data']).name} | {result['rank']} / {result['n_parameters']} | "
        f"{1e3 * train['before']['mae']:.2f} -> {1e3 * train['after']['mae']:.3f} | {100 * train['removed']:.1f} % | {held_out} | {warnings} |"
    )


if __name__ == "__main__":
    problems = sorted(HERE.glob("*.yaml"))
    results = []
    with Progress(transient=True) as bar:
        task = bar.add_task("calibrating units", total=len(problems))
        for path in problems:
            results.append(validate(path))
            bar.advance(task)
    print("| unit | train on | rank | MAE nominal -> calibrated (mm) | removed | held-out placements (removed) | warnings |")
    print("|---|---|---|---|---|---|---|")
    for result in results:
        print(row(result))
