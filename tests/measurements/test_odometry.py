"""The `odometry` measurement through the core: MAP estimate and its std against the truth of
simulated intervals, the closed form as a problem's method, and located input errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.io.intervals import write_intervals
from robocal.mobile import se2
from robocal.mobile.drive import DriveParameters, increment
from robocal.problem import load_problem

TRUE = DriveParameters(0.0968, 0.0979, 0.4351)
SENSOR = np.array([0.182, 0.041, 0.35])
SIGMA, SIGMA_YAW = 0.001, 0.002


def problem_file(folder: Path, method: str = "map", n: int = 400, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    phi = rng.uniform(-3.0, 3.0, (n, 2))
    phi[: n // 2, 1] = phi[: n // 2, 0] + rng.normal(0, 0.3, n // 2)  # gentle turns as well as sharp ones
    motion = np.asarray(se2.conjugate(SENSOR, np.asarray(increment(TRUE, phi[:, 0], phi[:, 1]))))
    motion += rng.normal(0, 1, motion.shape) * np.array([SIGMA, SIGMA, SIGMA_YAW])
    write_intervals(folder / "laser.csv", phi, motion)
    path = folder / "base.yaml"
    path.write_text(
        f"""drive: {{wheel_radius_left: 0.0975, wheel_radius_right: 0.0975, wheelbase: 0.43}}
solver: {{method: {method}}}
measurements:
  - {{type: odometry, name: laser, data: laser.csv, sigma: {SIGMA}, sigma_yaw: {SIGMA_YAW}}}
"""
    )
    return path


def test_map_estimate_lies_within_its_reported_uncertainty(tmp_path: Path) -> None:
    cal = calibrate(load_problem(problem_file(tmp_path)))
    truth = dict(zip(("wheel_radius_left", "wheel_radius_right", "wheelbase", "sensor_x", "sensor_y", "sensor_yaw"), (*TRUE, *SENSOR)))
    for p in cal.parameters():
        assert p["std"] is not None and abs(p["estimate"] - truth[p["name"]]) < 4 * p["std"], p
    # the sigmas are right, so the whitened residuals are about 1 per component
    assert 0.8 < cal.metrics[0]["fit_per_residual"] < 1.2


def test_closed_form_and_map_agree_within_the_uncertainty(tmp_path: Path) -> None:
    closed = calibrate(load_problem(problem_file(tmp_path, "closed_form")))
    refined = calibrate(load_problem(problem_file(tmp_path, "map")))
    for c, r in zip(closed.parameters(), refined.parameters()):
        assert abs(c["estimate"] - r["estimate"]) < 3 * r["std"], (c, r)


def test_a_bad_interval_is_reported_with_its_line_and_column(tmp_path: Path) -> None:
    path = problem_file(tmp_path)
    lines = (tmp_path / "laser.csv").read_text().splitlines()
    lines[7] = lines[7].replace(lines[7].split(",")[3], "n/a", 1)
    (tmp_path / "laser.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"laser\.csv, line 8, column 'dy'"):
        load_problem(path)


def test_odometry_without_a_drive_is_refused(tmp_path: Path) -> None:
    path = problem_file(tmp_path)
    path.write_text("\n".join(path.read_text().splitlines()[1:]) + "\n")
    with pytest.raises(InputError, match="needs a differential drive"):
        load_problem(path)


def test_joint_columns_without_a_robot_are_a_located_error(tmp_path: Path) -> None:
    """`joints:` maps robot joints to data columns: a base-only problem has none (this was an
    AttributeError on the missing robot)."""
    path = problem_file(tmp_path)
    path.write_text(path.read_text().replace("sigma_yaw: 0.002}", "sigma_yaw: 0.002, joints: {wheel: phi_left}}"))
    with pytest.raises(InputError, match=r"field 'measurements\[0\]\.joints\.wheel': joint columns are given, but the problem has no `robot:`"):
        load_problem(path)
