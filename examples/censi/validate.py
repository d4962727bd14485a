"""Censi et al.'s three real logs: our estimates beside the published ones, as a Markdown table
for docs/validation.md. The logs are read from ../shared/data/censi_odometry (not shipped).

Run from the repository root:  .venv/bin/python examples/censi/validate.py

For each log: the problem file as shipped (the reference's method: closed form with trimming),
and the same problem refined by the MAP solver (method: map) over the intervals the trimming kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from robocal.calibration import calibrate
from robocal.problem import Problem, load_problem
from robocal.problem.schema import SolverConfig

HERE = Path(__file__).resolve().parent
LOGS = ("lstraight", "l90", "lmov")
# published key -> (our parameter, factor from our value to theirs)
PUBLISHED = {
    "axle": ("wheelbase", 1.0),
    "l_diam": ("wheel_radius_left", 2.0),
    "r_diam": ("wheel_radius_right", 2.0),
    "l_x": ("sensor_x", 1.0),
    "l_y": ("sensor_y", 1.0),
    "l_theta": ("sensor_yaw", 1.0),
}


def estimates(problem: Problem) -> tuple[dict[str, float], dict[str, float]]:
    cal = calibrate(problem)
    by_name = {p["name"]: p for p in cal.parameters()}
    return (
        {key: factor * by_name[ours]["estimate"] for key, (ours, factor) in PUBLISHED.items()},
        {key: factor * by_name[ours]["std"] for key, (ours, factor) in PUBLISHED.items()},
    )


def compare(log: str) -> list[dict]:
    path = HERE / f"{log}.yaml"
    problem = load_problem(path)
    reference = json.loads((path.parent / problem.config.measurements[0].data).with_name(f"{log}_results.json").read_text())
    published_std = np.sqrt(np.diag(reference["covariance"]))
    closed, std = estimates(problem)
    refined_config = problem.config.model_copy(update={"solver": SolverConfig(method="map")})
    refined, refined_std = estimates(Problem(refined_config, path))
    rows = []
    for k, key in enumerate(("l_diam", "r_diam", "axle", "l_x", "l_y", "l_theta")):
        ours, theirs = closed[key], reference[key]
        diff = abs(ours - theirs) if key == "l_theta" else abs(ours - theirs) / abs(theirs)
        rows.append(
            {
                "log": log,
                "key": key,
                "published": theirs,
                "ours": ours,
                "difference": diff,
                "published_std": published_std[k],
                "std": std[key],
                "map": refined[key],
                "map_std": refined_std[key],
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| log | quantity | published | ours (closed form) | difference | published std | our std | MAP refinement | MAP std |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        unit = "rad" if r["key"] == "l_theta" else "m"
        kind = "abs" if r["key"] == "l_theta" else "rel"
        lines.append(
            f"| {r['log']} | {r['key']} ({unit}) | {r['published']:.6g} | {r['ours']:.6g} | {r['difference']:.1e} {kind} | {r['published_std']:.2g} | {r['std']:.2g} | {r['map']:.6g} | {r['map_std']:.2g} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([row for log in LOGS for row in compare(log)]))
