"""Marker calibration end to end on simulated data, scored against the known true robot.

Accuracy is judged in task space on held-out configurations (|p_estimated - p_true| of the
fingertip), which is invariant to the parameter combinations fingertip data cannot separate.
The fingers of the DLR-Hand II are independent chains in the palm frame, so the fore finger (its
16 DH parameters) poses the same identification problem as the whole hand (the demo runs all
four). Every problem is compiled once (module fixtures); variants that change only the data, the
prior or the outlier options reuse the compiled solver through `robocal.solver.solve`.
"""

from dataclasses import replace
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from robocal.calibration import calibrate
from robocal.frames import placement_matrix
from robocal.kinematics import transforms as tf
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.problem.build import jnp_tree
from robocal.simulation.markers import MarkerBody, simulate_markers, write_csv
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import position_errors, sample_configurations
from robocal.solver import solve

SIGMA = 1e-4  # m, marker noise of the noisy data sets (0.1 mm)
PRIOR = {"translation": 0.005, "rotation": float(np.deg2rad(5.0))}  # the perturbation scale
NO_PRIOR = {"translation": None, "rotation": None}


@pytest.fixture(scope="module")
def hand_file():
    with resources.as_file(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml")) as path:
        yield Path(path)


def write_problem(path: Path, **config) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def markers(body: MarkerBody, data: str, *, known: bool = True, **extra) -> dict:
    return {"type": "markers", "name": body.name, "data": data, "sigma": SIGMA, "link": body.link, "points": body.points(known), **extra}


def robot_estimate(cal) -> np.ndarray:
    return cal.estimate[cal.problem.layout.blocks["robot"]]


def solve_with_data(problem, csv: Path, prior_sqrt_precision: np.ndarray | None = None, **options):
    """The problem's compiled MAP solver on another data file with as many rows (and another prior)."""
    data = [jnp_tree(m.load(csv)[0]) for m in problem.measurements]
    precision = problem.map_problem.prior_sqrt_precision if prior_sqrt_precision is None else prior_sqrt_precision
    return solve(replace(problem.map_problem, data=data, prior_sqrt_precision=precision), problem.theta0, **options)


def pose_error(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(translation error in m, rotation error in rad) between two 4x4 poses."""
    angle = np.linalg.norm(np.asarray(tf.matrix_to_rotvec(jnp.asarray(truth[:3, :3].T @ estimate[:3, :3]))))
    return float(np.linalg.norm(estimate[:3, 3] - truth[:3, 3])), float(angle)


# ---- (a), (b), (e): the 16 DH parameters of the fore finger from fingertip positions --------

OUTLIER_ROWS = np.array([5, 23, 51])


@pytest.fixture(scope="module")
def fore(hand_file, tmp_path_factory):
    """Perturbed fore finger, 60 configurations: exact data, 0.1 mm noise, and the noisy data with
    3 rows moved by 5 cm. Problem `exact`: exact data, no prior (least squares fits the data
    exactly, whatever the gauge). Problem `robust`: corrupted data, prior, Huber and rejection."""
    folder = tmp_path_factory.mktemp("fore")
    tree = load_dh(hand_file)
    truth = RobotModel(tree, {f"fore_q{i}": "dh" for i in range(1, 5)})
    theta_true = perturb_parameters(truth, seed=0)
    tip = MarkerBody("tip", "fore_tip", np.zeros((1, 3)))
    q = sample_configurations(tree, 60, seed=1)
    simulate_markers(folder / "exact.csv", truth, theta_true, q, [tip])
    noisy = simulate_markers(folder / "noisy.csv", truth, theta_true, q, [tip], sigma=SIGMA, seed=2)
    directions = np.random.default_rng(3).normal(size=(len(OUTLIER_ROWS), 3))
    values = noisy.values.copy()
    values[np.ix_(OUTLIER_ROWS, [noisy.header.index(c) for c in tip.point_columns(0)])] += 0.05 * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    write_csv(folder / "corrupted.csv", noisy.header, values)

    def problem(name: str, data: str, priors: dict, solver: dict):
        path = write_problem(
            folder / f"{name}.yaml",
            robot=str(hand_file),
            parameters={"joints": {"fore_q?": "dh"}},
            priors=priors,
            solver=solver,
            measurements=[markers(tip, data)],
        )
        return load_problem(path)

    exact = problem("exact", "exact.csv", NO_PRIOR, {})
    robust = problem("robust", "corrupted.csv", PRIOR, {"huber": 2, "outlier_threshold": 5})
    assert [p.name for p in exact.robot.parameters] == [p.name for p in truth.parameters]
    heldout = sample_configurations(tree, 100, seed=4)
    prior = np.array([1.0 / PRIOR[p.kind] for p in exact.layout.parameters])
    return SimpleNamespace(
        folder=folder,
        exact=exact,
        robust=robust,
        exact_cal=calibrate(exact),
        robust_cal=calibrate(robust),
        prior=prior,
        clean=solve_with_data(exact, folder / "noisy.csv", prior),  # least squares on the uncorrupted data
        # Held-out fingertip errors of robot parameters theta against the truth (or another theta).
        errors=lambda theta, reference=theta_true: position_errors(exact.robot, theta, exact.robot, reference, heldout, ("fore_tip",)),
    )


def test_noise_free_data_are_fitted_exactly(fore):
    assert len(fore.exact.layout) == 16
    assert fore.errors(fore.exact.robot.nominal).mean() > 5e-3  # the perturbation matters
    assert fore.exact_cal.identifiability.rank < 16  # fingertips cannot separate every DH parameter
    assert fore.errors(robot_estimate(fore.exact_cal)).max() < 1e-6


def test_noisy_data_reach_noise_level(fore):
    """0.1 mm noise, prior at the perturbation scale (5 mm, 5 deg)."""
    errors = fore.errors(fore.clean.theta)
    # A fit of 16 parameters to 180 coordinates predicts to ~ SIGMA sqrt(16 / 180) per coordinate,
    # far below the 3D error of a single measurement (~1.6 SIGMA); 3 SIGMA leaves a margin.
    assert errors.mean() < 3 * SIGMA
    assert errors.max() < 10 * SIGMA


def test_outlier_rows_are_rejected_and_the_fit_is_clean(fore):
    """Rejection after a Huber fit: exactly the 3 corrupted rows go, by line in the file."""
    assert [r["line"] for r in fore.robust_cal.rejected()] == list(OUTLIER_ROWS + 2)  # header: line 1
    # The clean fit keeps the 3 rows (uncorrupted) and has no Huber weights: the two fits differ
    # by noise only, a fraction of SIGMA (a fit keeping the outliers is off by ~30 SIGMA).
    assert fore.errors(robot_estimate(fore.robust_cal), fore.clean.theta).max() < SIGMA
    assert fore.errors(robot_estimate(fore.robust_cal)).mean() < 3 * SIGMA


def test_outlier_rows_are_rejected_by_threshold_alone(fore):
    """Without Huber the first fit is dragged by the outliers; the progressive rejection with
    re-admission must still end with exactly the corrupted rows out."""
    solution = solve_with_data(fore.exact, fore.folder / "corrupted.csv", fore.prior, outlier_threshold=5)
    assert sorted(r.row for r in solution.rejections) == list(OUTLIER_ROWS)


def test_huber_reduces_outlier_influence(fore):
    plain = solve_with_data(fore.exact, fore.folder / "corrupted.csv", prior_sqrt_precision=fore.prior)
    huber = solve(fore.robust.map_problem, fore.robust.theta0, huber=2.0)
    plain_error, huber_error = fore.errors(plain.theta).mean(), fore.errors(huber.theta).mean()
    assert plain_error > 10 * SIGMA  # the 5 cm rows do spoil a least-squares fit
    assert huber_error < 3 * SIGMA  # bounded influence: each outlier acts like a 2-sigma row


# ---- (c), (d): unknown measurement frame (auto), unknown tip offset, masked orientation -----

TRACKER = np.asarray(tf.homogeneous(tf.axis_angle_to_matrix(np.array([1.0, -2.0, 0.5]) / np.sqrt(5.25), np.deg2rad(120.0)), jnp.array([0.8, -0.4, 0.45])))
BODY = placement_matrix((0.01, 0.0, 0.005), (0.3, -0.2, 0.4))
YAW_BIAS = np.deg2rad(10.0)  # error of the measured orientation about the body z axis (masked out)


@pytest.fixture(scope="module")
def tracker(hand_file, tmp_path_factory):
    """Nominal hand (no robot parameters) seen by a tracker 1 m away, rotated by 120 deg.

    `tip`: one marker at an unknown offset on the fore fingertip. `body`: a marker body at an
    unknown pose on the middle fingertip with two known points, which fix it up to a rotation about
    their line, and an orientation: its x, y components supply that rotation, its z component
    carries a 10 deg bias that the mask [true, true, false] must keep out of the estimate.
    """
    folder = tmp_path_factory.mktemp("tracker")
    tree = load_dh(hand_file)
    robot = RobotModel(tree)
    tip = MarkerBody("tip", "fore_tip", np.array([[0.004, -0.003, 0.006]]))
    body = MarkerBody("body", "middle_tip", np.array([[0.02, 0.0, 0.0], [0.0, 0.015, 0.0]]), body=BODY, orientation=True)
    table = simulate_markers(folder / "tracker.csv", robot, robot.nominal, sample_configurations(tree, 40, seed=4), [tip, body], frame=TRACKER)
    columns = [table.header.index(c) for c in body.quaternion_columns()]
    bias = Rotation.from_euler("z", YAW_BIAS).as_matrix()
    values = table.values.copy()
    values[:, columns] = [tf.matrix_to_quaternion(np.asarray(tf.quaternion_to_matrix(jnp.asarray(qt))) @ bias) for qt in values[:, columns]]
    write_csv(folder / "tracker.csv", table.header, values)
    orientation = {"columns": list(body.quaternion_columns()), "body": "body", "mask": [True, True, False], "sigma": 1e-3}
    path = write_problem(
        folder / "problem.yaml",
        robot=str(hand_file),
        frames={"tracker": {"initial": "auto"}, "body": {"initial": {"xyz": [0.0, 0.0, 0.0], "rpy": [0.0, 0.0, 0.0]}}},
        measurements=[markers(tip, "tracker.csv", known=False, frame="tracker"), markers(body, "tracker.csv", frame="tracker", orientation=orientation)],
    )
    problem = load_problem(path)
    return SimpleNamespace(problem=problem, tip=tip, cal=calibrate(problem))


def test_measurement_frame_is_recovered_from_auto_initial(tracker):
    problem, theta = tracker.problem, tracker.cal.estimate
    translation, rotation = pose_error(problem.frames["tracker"].estimate(theta), TRACKER)
    assert translation < 1e-6 and rotation < 1e-6
    offset = [theta[problem.layout.index(f"tip.p0.{c}")] for c in "xyz"]
    np.testing.assert_allclose(offset, tracker.tip.offsets[0], rtol=0, atol=1e-6)


def test_masked_orientation_recovers_marker_body(tracker):
    problem, theta = tracker.problem, tracker.cal.estimate
    translation, rotation = pose_error(problem.frames["body"].estimate(theta), BODY)
    assert translation < 1e-6 and rotation < 1e-6
    assert tracker.cal.identifiability.rank == len(problem.layout)
