"""k-fold cross-validation on a problem whose answer is known in closed form.

Markers on the fore fingertip of the (nominal) DLR-Hand II: 20 points with unknown offsets o_k,
split over two measurements that read the same file, 10 configurations, noise sigma per
coordinate, no robot parameters. A point's prediction R_i o_k + t_i is linear in its offset, so

- the least-squares offset from the training rows T is o_k = mean_{i in T} R_i^T (y_ik - t_i);
- with u_i = R_i^T (noise of row i), R_i^T e_i = u_i - mean_T u: a held-out error has
  E|e|^2 = 3 sigma^2 (1 + 1/|T|), a training error 3 sigma^2 (1 - 1/|T|), |T| = 8 for k = 5
  folds of 2 rows. The sampling spread of the mean of those |e|^2 (and of their ratio, in which
  the realized noise level cancels) is that of the same statistic on standard normal u for this
  very design, which the test draws (Monte Carlo, 2000 repetitions); it allows 4 standard
  deviations. Fitting on held-out rows would give the ratio 1 instead of 9/7.
"""

from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from robocal.analysis.crossval import cross_validate, fold_assignment
from robocal.errors import RobocalError
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.sampling import batch_link_poses, sample_configurations

SIGMA = 1e-4
ROWS, POINTS, K = 10, 10, 5
TRAIN_ROWS = ROWS - ROWS // K


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crossval")
    with resources.as_file(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml")) as path:
        robot_file = Path(path)
    rng = np.random.default_rng(0)
    bodies = [MarkerBody(name, "fore_tip", rng.uniform(-0.02, 0.02, (POINTS, 3))) for name in ("a", "b")]
    measurements = [{"type": "markers", "name": b.name, "data": "data.csv", "sigma": SIGMA, "link": b.link, "points": b.points(known=False)} for b in bodies]
    (folder / "problem.yaml").write_text(yaml.safe_dump({"robot": str(robot_file), "measurements": measurements}, sort_keys=False))
    robot = RobotModel(load_dh(robot_file))
    q = sample_configurations(robot.tree, ROWS, seed=1)
    table = simulate_markers(folder / "data.csv", robot, robot.nominal, q, bodies, sigma=SIGMA, seed=2)
    problem = load_problem(folder / "problem.yaml")
    poses = batch_link_poses(robot, robot.nominal, q, ["fore_tip"])[:, 0]
    measured = table.values[:, len(robot.tree.actuated) :].reshape(ROWS, 2 * POINTS, 3)
    local = np.einsum("nji,nkj->nki", poses[:, :3, :3], measured - poses[:, None, :3, 3])  # R_i^T (y_ik - t_i)
    return SimpleNamespace(problem=problem, local=local, cv=cross_validate(problem, k=K, seed=0))


def test_folds_partition_the_rows(setup):
    cv = setup.cv
    a, b = cv.assignment
    np.testing.assert_array_equal(a, b)  # one data file: one assignment
    assert sorted(np.bincount(a, minlength=K)) == [ROWS // K] * K
    for fold in cv.folds:
        for train, held_out, assignment in zip(fold.train, fold.held_out, cv.assignment):
            np.testing.assert_array_equal(held_out, assignment == fold.index)
            np.testing.assert_array_equal(train, ~held_out)
    again = fold_assignment(setup.problem, K, seed=0)
    assert all(np.array_equal(x, y) for x, y in zip(again, cv.assignment))
    assert not np.array_equal(fold_assignment(setup.problem, K, seed=1)[0], a)
    with pytest.raises(RobocalError, match="fewer than the 11 folds"):
        fold_assignment(setup.problem, ROWS + 1)


def test_each_fold_is_fitted_on_its_training_rows_only(setup):
    for fold in setup.cv.folds:
        train = fold.train[0]
        expected = setup.local[train].mean(axis=0)  # (2 * POINTS, 3) least-squares offsets
        np.testing.assert_allclose(fold.solution.theta.reshape(-1, 3), expected, atol=1e-10)


def mean_squares(u: np.ndarray, assignment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean |e|^2 over the held-out and over the training errors of the design, for u (..., ROWS, 3)."""
    held_out, train = 0.0, 0.0
    for f in range(K):
        fitted = u[..., assignment != f, :].mean(axis=-2, keepdims=True)
        held_out = held_out + ((u[..., assignment == f, :] - fitted) ** 2).sum(axis=(-1, -2))
        train = train + ((u[..., assignment != f, :] - fitted) ** 2).sum(axis=(-1, -2))
    return held_out / ROWS, train / (ROWS * (K - 1))


def test_held_out_and_training_errors_match_their_expectation(setup):
    cv = setup.cv
    held_out = np.mean(np.concatenate([e.ravel() for e in cv.held_out_errors]) ** 2)
    train = np.mean(np.concatenate([e[tr].ravel() for f in cv.folds for e, tr in zip(f.errors, f.train)]) ** 2)
    expected_held_out, expected_train = 3 * SIGMA**2 * (1 + 1 / TRAIN_ROWS), 3 * SIGMA**2 * (1 - 1 / TRAIN_ROWS)
    u = np.random.default_rng(5).normal(size=(2000, 2 * POINTS, ROWS, 3))
    mc_held_out, mc_train = (m.mean(axis=-1) for m in mean_squares(u, cv.assignment[0]))
    np.testing.assert_allclose([mc_held_out.mean(), mc_train.mean()], [expected_held_out / SIGMA**2, expected_train / SIGMA**2], rtol=0.01)
    assert abs(held_out / expected_held_out - 1) < 4 * mc_held_out.std() / mc_held_out.mean()
    ratio, mc_ratio = held_out / train, mc_held_out / mc_train
    assert abs(ratio / (expected_held_out / expected_train) - 1) < 4 * mc_ratio.std() / mc_ratio.mean()
    report = cv.report()
    pooled = report["held_out"][0]
    assert (pooled["name"], pooled["n"]) == ("a", ROWS * POINTS)
    assert pooled["after"]["rms"] == pytest.approx(np.sqrt(np.mean(cv.held_out_errors[0] ** 2)))
    assert [m["n_held_out"] for f in report["folds"] for m in f["measurements"]] == [ROWS // K] * (2 * K)
