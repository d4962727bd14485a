"""Gauge handling (robocal.analysis.gauge) on a marker problem whose tracker-to-base registration
is the gauge, and its pieces against hand-computed values.

A six-joint arm (examples/fleet/arm_6r.urdf) with every joint origin in the model (`full`, the
first one included) seen by three markers on its tool in an estimated tracker frame: moving the
whole arm relative to its base and the tracker frame the opposite way changes no marker, and moves
the task (the tool in the base frame) in all six directions. Noise-free data, so the calibration
knows the arm exactly up to that motion. Independent references: a Kabsch/Umeyama fit written out
here (NumPy SVD) for the rigid motions, and the true arm. The declared sigma (1 um) weighs the
exact data far above the 1 mm / 1 mrad prior, so the fit reproduces them rather than trading them
against the prior.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from rich.console import Console

from robocal.analysis.gauge import TWISTS, align, apply, find_gauge, modulo_jacobians, motion, task_points
from robocal.analysis.task_uncertainty import Task
from robocal.calibration import calibrate
from robocal.kinematics import transforms as tf
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.report.console import print_summary
from robocal.report.html import write_html_report
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set
from tests.conftest import REPO

ARM = REPO / "examples" / "fleet" / "arm_6r.urdf"
BODY = MarkerBody("tool", "tool", np.array([[0.05, 0.0, 0.0], [0.0, 0.05, 0.0], [0.0, 0.0, 0.05]]))
TRACKER = tf.homogeneous(tf.rpy_to_matrix(np.array([0.1, -0.2, 0.3])), np.array([1.2, 0.4, 0.3]))  # root in the tracker frame
PRIOR = 0.001  # m and rad: every origin's prior sigma; the true arm is drawn from it
SIGMA = 1e-6  # m, the markers' declared sigma


def kabsch(a: np.ndarray, b: np.ndarray, translate: bool) -> np.ndarray:
    """The rigid motion g (4x4) minimizing sum |g a_i - b_i|^2 over points (..., 3), written out
    (Umeyama without scale): centroids (with `translate`), SVD of the cross-covariance."""
    a, b = a.reshape(-1, 3), b.reshape(-1, 3)
    ca, cb = (a.mean(axis=0), b.mean(axis=0)) if translate else (np.zeros(3), np.zeros(3))
    u, _, vt = np.linalg.svd((a - ca).T @ (b - cb))
    r = vt.T @ np.diag([1.0, 1.0, np.sign(np.linalg.det(vt.T @ u.T))]) @ u.T
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = r, cb - r @ ca
    return g


def test_align_recovers_a_rigid_motion():
    """Points moved by a known motion are moved back by `align` (all six twists); with rotations
    only and vectors, the rotation Kabsch gives."""
    points = np.random.default_rng(0).normal(size=(50, 2, 3)) * 0.1
    g = motion(np.array([0.01, -0.02, 0.005, 0.03, -0.2, 0.1]))
    found = align(points, apply(g, points, True), np.eye(6), True)
    assert np.abs(found - g).max() < 1e-12
    target = apply(g, points, False) + np.random.default_rng(1).normal(size=points.shape) * 1e-3
    found = align(points, target, np.eye(6)[3:], False)
    assert np.abs(found - kabsch(points, target, translate=False)).max() < 1e-10


def test_modulo_jacobians_is_the_least_error_over_the_gauge():
    """|(I - U U^T) Jt delta| equals min over twists c of |Jt delta + motion(c) of the points|,
    the least-squares problem solved here directly, for random Jacobians and errors."""
    rng = np.random.default_rng(2)
    points, jac, delta = rng.normal(size=(40, 2, 3)), rng.normal(size=(40, 2, 3, 7)), rng.normal(size=7)
    rotations = np.eye(6)[3:]
    projected = modulo_jacobians(jac, points, rotations, False) @ delta
    change = (jac @ delta).ravel()
    motions = np.stack([np.cross(x[3:], points).ravel() for x in rotations], axis=1)
    best = change - motions @ np.linalg.lstsq(motions, change, rcond=None)[0]
    assert np.abs(projected.ravel() - best).max() < 1e-12
    assert np.linalg.norm(best) < np.linalg.norm(change)


def write_problem(folder, frame: str | None) -> RobotModel:
    """problem.yaml for markers on the tool, in a tracker frame (estimated) or in the root frame;
    returns the true arm (every origin drawn from the prior, seeded) whose data it reads."""
    measurement = {"name": "tool", "type": "markers", "data": "markers.csv", "sigma": SIGMA, "link": "tool", "points": BODY.points()}
    config = {
        "robot": str(ARM),
        "parameters": {"default": "full"},
        "priors": {"translation": PRIOR, "rotation": PRIOR, "joint_offset": PRIOR},
        "task": {"tips": ["tool"], "n": 200, "seed": 1},
        "measurements": [measurement | ({"frame": frame} if frame else {})],
    }
    if frame:
        config["frames"] = {frame: {"initial": "auto"}}
    (folder / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    tree = load_robot(ARM)
    truth = RobotModel(tree, {j.name: "full" for j in tree.joints})
    theta_true = truth.nominal + np.random.default_rng(7).normal(0.0, PRIOR, len(truth.nominal))
    simulate_markers(folder / "markers.csv", truth, theta_true, sample_configurations(tree, 40, seed=3), [BODY], frame=TRACKER if frame else None)
    return truth, theta_true


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gauge_markers")
    truth, theta_true = write_problem(folder, "tracker")
    problem = load_problem(folder / "problem.yaml")
    return problem, calibrate(problem), truth, theta_true


def tool_positions(robot: RobotModel, theta: np.ndarray, q: np.ndarray) -> np.ndarray:
    return batch_link_poses(robot, theta, q, ("tool",))[:, 0, :3, 3]


def test_the_tracker_registration_is_the_gauge(tracked):
    """All six twists, carried by the tracker frame; the fix leaves every marker where it was."""
    problem, cal, _, _ = tracked
    gauge = cal.gauge
    assert gauge is not None and gauge.gauge.components == TWISTS and gauge.gauge.points
    assert gauge.gauge.compensated == tuple(f"frame.tracker.{c}" for c in TWISTS)
    assert gauge.gauge.describe() == "translation along x, y, z and rotation about x, y, z of every link below base (its frame's axes)"
    assert gauge.data_change * SIGMA < 1e-12  # m: no marker moved
    assert np.linalg.norm(gauge.shift[3:]) > 1e-4  # the solver's prior minimum was elsewhere
    report = cal.report()
    assert report["gauge"]["components"] == list(TWISTS)
    assert [f["code"] for f in report["verdict"]["findings"] if f["code"] == "gauge"] == ["gauge"]
    assert report["task"]["predicted_modulo_gauge"]["mean"] < 0.5 * report["task"]["predicted"]["mean"]


def test_the_console_and_the_page_name_the_gauge(tracked, tmp_path):
    _, cal, _, _ = tracked
    console = Console(record=True, width=300)
    print_summary(cal, console)
    text = console.export_text()
    assert "modulo the gauge (translation along x, y, z and rotation about x, y, z of every link below base" in text
    assert "(gauge)" in text  # the verdict's finding
    write_html_report(cal, tmp_path / "report.html", {})
    page = (tmp_path / "report.html").read_text()
    assert "Gauge: the data do not see a translation along x, y, z and rotation about x, y, z of every link below base" in page
    assert "mm modulo the gauge" in page


def test_the_fix_keeps_the_task_frame_at_nominal(tracked):
    """On the task's test set, the best rigid motion from the calibrated tool positions to the
    nominal ones (Kabsch, independent of `align`) is the identity; for the solver's own estimate
    it is the shift the fix applied."""
    problem, cal, _, _ = tracked
    robot, block = problem.robot, problem.layout.blocks["robot"]
    q = uniform_cartesian_test_set(robot, robot.nominal, ("base", "tool"), 200, 1)
    nominal = tool_positions(robot, robot.nominal, q)
    g = kabsch(tool_positions(robot, cal.estimate[block], q), nominal, translate=True)
    assert np.abs(g - np.eye(4)).max() < 1e-9
    g_map = kabsch(tool_positions(robot, cal.gauge.map_theta[block], q), nominal, translate=True)
    assert np.abs(g_map - motion(cal.gauge.shift)).max() < 1e-9


def test_the_arm_is_known_up_to_the_gauge(tracked):
    """Noise-free markers: the calibrated tool positions are the true ones moved by the rigid
    motion that best takes the truth to the nominal robot on the task's test set (Kabsch there),
    to 1 um on another test set; the task error modulo the gauge vanishes, the raw error is that
    motion's."""
    problem, cal, truth, theta_true = tracked
    robot, block = problem.robot, problem.layout.blocks["robot"]
    q_task = uniform_cartesian_test_set(robot, robot.nominal, ("base", "tool"), 200, 1)
    to_nominal = kabsch(tool_positions(truth, theta_true, q_task), tool_positions(robot, robot.nominal, q_task), translate=True)
    q = uniform_cartesian_test_set(robot, robot.nominal, ("base", "tool"), 500, 4)
    true, estimated = tool_positions(truth, theta_true, q), tool_positions(robot, cal.estimate[block], q)
    assert np.abs(apply(to_nominal, true, True) - estimated).max() < 1e-6
    raw = np.linalg.norm(estimated - true, axis=1).mean()
    modulo = np.linalg.norm(apply(kabsch(estimated, true, translate=True), estimated, True) - true, axis=1).mean()
    assert raw > 1e-3 and modulo < 1e-6


def test_markers_in_the_root_frame_have_no_gauge(tmp_path):
    """Without a tracker frame the markers see where the arm stands on its base: no gauge."""
    write_problem(tmp_path, None)
    problem = load_problem(tmp_path / "problem.yaml")
    task = Task("base", ("tool",), n=200, seed=1)
    assert find_gauge(problem, problem.theta0, task) is None
    assert task_points(problem.robot, problem.robot.nominal, np.zeros((1, 6)), task).shape == (1, 1, 3)


def test_evaluate_truth_reports_the_error_modulo_the_gauge(tracked, tmp_path):
    """`evaluate --truth` on the stored calibration against the true arm written as a URDF: the
    raw task error is the truth's own registration (the figure of the true and calibrated tool
    positions, computed here), modulo the stored gauge it vanishes (noise-free data); the table
    shows both."""
    from robocal.evaluation import evaluate_truth
    from robocal.kinematics.urdf import write_urdf
    from robocal.report.evaluation import print_task
    from robocal.results import write_results

    problem, cal, truth, theta_true = tracked
    write_results(cal, tmp_path / "result", figures=False)
    write_urdf(truth.tree, tmp_path / "true.urdf", truth.urdf_origins(theta_true))
    report = evaluate_truth(problem.path, tmp_path / "result", tmp_path / "true.urdf")
    robot, block = problem.robot, problem.layout.blocks["robot"]
    q = uniform_cartesian_test_set(robot, robot.nominal, ("base", "tool"), 200, 1)  # the problem's task: n 200, seed 1
    raw = np.linalg.norm(tool_positions(robot, cal.estimate[block], q) - tool_positions(truth, theta_true, q), axis=1).mean()
    assert report["task"]["calibrated"]["mean"] == pytest.approx(raw, rel=1e-9) and raw > 1e-3
    modulo = report["task_modulo_gauge"]
    assert modulo["calibrated"]["max"] < 1e-6  # m: the data knew the arm up to the gauge
    assert modulo["nominal"]["mean"] < report["task"]["nominal"]["mean"]  # the nominal arm's registration is taken out too
    console = Console(record=True, width=300)
    print_task(report, console)
    assert "calibrated, modulo the gauge" in console.export_text()
