"""The socket measurement's input paths and residuals, on the vendored panda_1/front recording
(no solve: every figure is checked against a plain numpy computation)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from robocal.errors import InputError
from robocal.io.sockets import read_socket_folder
from robocal.problem import load_problem
from tests.conftest import REPO

EXAMPLES = REPO / "examples" / "mukca"
FRONT = EXAMPLES / "data" / "panda_1" / "front"
JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))


def problem_with(tmp_path, **measurement):
    """examples/mukca/panda_1_front.yaml with absolute paths and some measurement fields replaced."""
    config = yaml.safe_load((EXAMPLES / "panda_1_front.yaml").read_text())
    config["robot"] = str(EXAMPLES / config["robot"])
    config["measurements"][0] |= {"data": str(FRONT)} | measurement
    config["measurements"][0] = {k: v for k, v in config["measurements"][0].items() if v is not None}
    path = tmp_path / "problem.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_rows_are_the_spread_about_each_socket_mean_plus_the_distance_error(tmp_path) -> None:
    problem = load_problem(problem_with(tmp_path))
    m = problem.measurements[0]
    theta = problem.theta0
    p = m.predicted_points(m.data, theta)
    recording = read_socket_folder(FRONT, JOINTS)
    means = np.array([p[recording.socket == k].mean(axis=0) for k in (0, 1)])
    rows = np.asarray(m.rows(theta, problem.map_problem.data[0]))
    assert np.abs(rows[:, :3] - (p - means[recording.socket]) / 1e-4).max() < 1e-9
    n = len(p)
    distance_error = np.linalg.norm(means[1] - means[0]) - 0.05
    assert np.allclose(rows[:, 3], distance_error / (2e-5 * np.sqrt(n)))
    # the rows' squares add up to the scatter and the distance error counted once
    assert np.sum(rows**2) == pytest.approx(np.sum((p - means[recording.socket]) ** 2) / 1e-8 + distance_error**2 / 4e-10, rel=1e-12)
    figures = m.figures(m.data, theta)
    spread = np.linalg.norm(p - means[recording.socket], axis=1)
    assert figures["mae"] == pytest.approx(spread.mean(), rel=1e-12)
    assert figures["distortion"] == pytest.approx(abs(distance_error), rel=1e-12)


def test_known_socket_positions_replace_the_means(tmp_path) -> None:
    positions = [[0.38, 0.0, -0.001], [0.38, -0.05, -0.001]]
    problem = load_problem(problem_with(tmp_path, positions=positions, distance=None, distance_sigma=None))
    m = problem.measurements[0]
    p = m.predicted_points(m.data, problem.theta0)
    socket = read_socket_folder(FRONT, JOINTS).socket
    rows = np.asarray(m.rows(problem.theta0, problem.map_problem.data[0]))
    assert rows.shape == (len(p), 3)
    assert np.abs(rows - (p - np.asarray(positions)[socket]) / 1e-4).max() < 1e-9


def test_the_core_csv_format_gives_the_same_rows(tmp_path) -> None:
    recording = read_socket_folder(FRONT, JOINTS)
    header = ",".join((*JOINTS, "socket"))
    body = "\n".join(",".join([*(repr(float(v)) for v in q), str(s)]) for q, s in zip(recording.q, recording.socket))
    (tmp_path / "front.csv").write_text(header + "\n" + body + "\n")
    from_csv = load_problem(problem_with(tmp_path, data=str(tmp_path / "front.csv")))
    from_folder = load_problem(problem_with(tmp_path))
    theta = from_folder.theta0
    a = np.asarray(from_csv.measurements[0].rows(theta, from_csv.map_problem.data[0]))
    b = np.asarray(from_folder.measurements[0].rows(theta, from_folder.map_problem.data[0]))
    assert np.array_equal(a, b)
    assert list(from_csv.measurements[0].lines[:2]) == [2, 3]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0.1,0.2,0.3\n", "hole_1.csv, line 1: expected 7 joint values"),
        ("0,0,0,0,0,0,0\n0,0,0,nan,0,0,0\n", "hole_1.csv, line 2, column 'panda_joint4': 'nan' is not a finite number"),
        ("0,0,0,0,0,0,0\n0,0,x,0,0,0,0\n", "hole_1.csv, line 2, column 'panda_joint3': 'x' is not a number"),
        ("0,0,0,0,0,0,0\n", "socket 1 has 1 configuration; a socket needs at least 2"),
    ],
)
def test_a_bad_socket_file_is_named_with_line_and_joint(tmp_path, content, expected) -> None:
    folder = tmp_path / "placement"
    folder.mkdir()
    (folder / "hole_0.csv").write_text((FRONT / "hole_0.csv").read_text())
    (folder / "hole_1.csv").write_text(content)
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_problem(problem_with(tmp_path, data=str(folder)))


def test_socket_files_must_be_numbered_without_gaps(tmp_path) -> None:
    folder = tmp_path / "placement"
    folder.mkdir()
    (folder / "hole_0.csv").write_text((FRONT / "hole_0.csv").read_text())
    (folder / "hole_2.csv").write_text((FRONT / "hole_1.csv").read_text())
    with pytest.raises(InputError, match="missing hole_1.csv"):
        load_problem(problem_with(tmp_path, data=str(folder)))


def test_outlier_rejection_is_refused(tmp_path) -> None:
    path = problem_with(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["solver"] = {"outlier_threshold": 5.0}
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match="solver.outlier_threshold.*rows share estimates"):
        load_problem(path)
