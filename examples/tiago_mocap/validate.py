"""TIAGo held-out validation: our RMSE beside FIGAROH's published table (protocol v1).

Run from the repository root:  .venv/bin/python examples/tiago_mocap/validate.py
Each model is fitted on the training session only, then scored on the validation and the two
confirmation sessions with the frames and marker point estimated during calibration.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.calibration import calibrate
from robocal.measurements.base import measurement_errors, summarize
from robocal.measurements.markers import MarkerData
from robocal.problem import load_problem

HERE = Path(__file__).resolve().parent
SESSIONS = {
    "training": "qualisys_2021-11-30_static_postures.csv",
    "validation 11-26": "qualisys_2021-11-26_static_postures.csv",
    "confirmation 14:03": "qualisys_2021-11-30-1403_static_postures.csv",
    "confirmation 15:04": "qualisys_2021-11-30-1504_static_postures.csv",
}
# FIGAROH protocol v1, norm RMSE in mm (shared/data/tiago_mocap/README.md).
REFERENCE = {
    "registration": (3.37, 4.87, 4.58, 4.22),
    "joint_offsets": (2.88, 4.23, 4.09, 3.83),
    "full": (1.64, 3.07, 2.83, 2.44),
    "full_prior": (1.64, 3.07, 2.83, 2.44),
}


def rmse_table(models=tuple(REFERENCE), floors=("full",)) -> dict[str, dict]:
    """{model: {"n_parameters", "rmse_mm": [train, validation, confirmation 1, confirmation 2]}},
    and for the models in `floors` "floor_mm": :func:`session_floor` for each held-out session.

    The RMSE is the calibrated model's (the `after` of a report) on every row of a session; the
    sessions are evaluated together, so the errors compile once per model, not once per session."""
    out = {}
    for model in models:
        problem = load_problem(HERE / f"{model}.yaml")
        cal = calibrate(problem)
        measurement = problem.measurements[0]
        sessions = [measurement.load(HERE / "data" / file)[0] for file in SESSIONS.values()]
        errors = measurement_errors(measurement, jax.tree.map(lambda *parts: np.concatenate(parts), *sessions), cal.estimate)
        ends = np.cumsum([len(s.q) for s in sessions])
        rmse = [summarize(e)["rms"] * 1e3 for e in np.split(errors, ends[:-1])]
        out[model] = {"n_parameters": int(cal.free.sum()), "rmse_mm": rmse}  # fitted: parameters.select applied
        if model in floors:
            out[model]["floor_mm"] = [session_floor(measurement, cal.estimate, data) for data in sessions[1:]]
    return out


def session_floor(measurement, theta, held_out: MarkerData, tolerance: float = 0.01) -> tuple[int, float]:
    """Non-repeatability between sessions, which no single geometric model can remove.

    For each held-out posture that repeats a training posture (every joint within `tolerance`
    rad), the measured marker displacement between the sessions minus the displacement the
    calibrated model predicts for the small joint difference. Returns (count, RMS in mm).
    """
    train = measurement.data

    def predict(d: MarkerData) -> np.ndarray:
        return np.asarray(measurement.predict(jnp.asarray(theta), jax.tree.map(jnp.asarray, d))[0])[:, 0]

    gap = np.abs(held_out.q[:, None, :] - train.q[None, :, :]).max(axis=-1)
    match, repeated = gap.argmin(axis=1), gap.min(axis=1) < tolerance
    measured = held_out.points[repeated, 0] - train.points[match[repeated], 0]
    modelled = predict(held_out)[repeated] - predict(train)[match[repeated]]
    residual = np.linalg.norm(measured - modelled, axis=1)
    return int(repeated.sum()), float(np.sqrt(np.mean(residual**2)) * 1e3)


def markdown(table: dict[str, dict]) -> str:
    lines = [
        "| model | parameters | " + " | ".join(SESSIONS) + " |",
        "|---|---|" + "---|" * len(SESSIONS),
    ]
    for model, row in table.items():
        cells = [f"{ours:.2f} ({ref:.2f})" for ours, ref in zip(row["rmse_mm"], REFERENCE[model])]
        lines.append(f"| {model} | {row['n_parameters']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    table = rmse_table()
    print("RMSE of marker point BL in mm, ours (FIGAROH):")
    print(markdown(table))
    print("\nSession-to-session non-repeatability on repeated postures (full model), count / RMS mm:")
    print(", ".join(f"{name}: {n} / {rms:.2f}" for name, (n, rms) in zip(list(SESSIONS)[1:], table["full"]["floor_mm"])))
