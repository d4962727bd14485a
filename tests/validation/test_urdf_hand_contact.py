"""Issue 18's first acceptance on our own three-finger URDF hand (examples/three_finger/hand.urdf).

The hand perturbed in DH terms (converted to DH by robocal.kinematics.convert, every DH number of
its 12 joint rows moved uniformly by up to 2 mm / 2 deg, written back as true.urdf), 300 contacts
found by the contact search (`robocal simulate contact --robot`, 100 per fingertip pair) with
0.1 mrad encoder noise, and the contact sigma declared at the size that noise gives (10 um; the
recorded contacts are |d| = 6.6 um on average on the true hand), so that every reported uncertainty
is the data's. The same contacts are calibrated two ways: (a) the DH table, every DH number;
(b) the URDF with `full` on every moving joint. The acceptance's third part, `select:
identifiable` predicting its own task error within a factor of 2, is measured by
examples/three_finger/study.py (docs/trust.md, "Gauges": 4 of 5 hands and the 5-hand means
within 2x, realized over predicted 0.43-0.81, every hand inside its 95 % interval).

Contacts see the fingers relative to each other, never how the three stand together on the palm:
a common rotation of the fingers is unseen by the data and seen by the task (fingertips relative
to the thumb, in the palm frame). `full` can make that rotation, so (b) has a gauge
(robocal.analysis.gauge), fixed by keeping the task's frame at nominal; the true hand's own
rotation relative to the nominal one (about a degree here) cannot be known from contacts, so the
raw task error of (b) is that rotation's, and the comparison with DH is made modulo the gauge
(after the best common rotation, fitted here by a Kabsch SVD written out independently of robocal).
The DH table can rotate the fingers together only approximately, weakly seen by the data, so (a)
has no gauge and its raw error carries that weak direction's prior.

Measured over 5 hands (examples/three_finger/study.py, figures in docs/trust.md) the modulo-gauge
errors are 0.008-0.030 mm; URDF `full` over DH is 1.47 on the 5-hand means and 1.4-1.6 between
their predicted errors, but 0.95-3.75 hand by hand (one draw each of a noise-driven error). This
test runs one hand (seed 0), where the ratio is 1.496: it checks the issue's 1.5 there, with
almost no margin, which says no more than the 5-hand figures do.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from robocal.analysis.gauge import task_points
from robocal.analysis.task_error import joint_columns
from robocal.analysis.task_uncertainty import Task
from robocal.calibration import calibrate
from robocal.problem import load_problem
from robocal.simulation.contact.urdf_hand import simulate_urdf_hand
from robocal.simulation.testset import uniform_cartesian_test_set
from tests.conftest import REPO

HAND = REPO / "examples" / "three_finger" / "hand.urdf"
TRANSLATION, ROTATION = 0.002, float(np.deg2rad(2.0))
JOINT_NOISE, SIGMA = 1e-4, 1e-5  # rad, m
MM = 1e-3


def rotation_onto(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rotation R minimizing sum |R a_i - b_i|^2 over vectors (..., 3) (Kabsch, SVD)."""
    u, _, vt = np.linalg.svd(a.reshape(-1, 3).T @ b.reshape(-1, 3))
    return vt.T @ np.diag([1.0, 1.0, np.sign(np.linalg.det(vt.T @ u.T))]) @ u.T


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    folder = tmp_path_factory.mktemp("three_finger")
    sim = simulate_urdf_hand(HAND, folder, n_per_pair=100, seed=0, translation=TRANSLATION, rotation=ROTATION, joint_noise=JOINT_NOISE, sigma=SIGMA)
    return sim, {"dh": sim.problem_dh, "full": sim.problem}


@pytest.fixture(scope="module")
def scored(hand):
    """Per model: the calibration, and the task vectors of the calibrated, nominal and true hands
    on 1000 configurations of the uniform Cartesian test set."""
    sim, paths = hand
    out = {}
    for model, path in paths.items():
        problem = load_problem(path)
        cal = calibrate(problem)
        robot, block = problem.robot, problem.layout.blocks["robot"]
        task = Task("thumb_tip", ("index_tip", "middle_tip"), n=1000, seed=10_000)
        q = uniform_cartesian_test_set(robot, robot.nominal, ("thumb_tip", "index_tip", "middle_tip"), task.n, task.seed)
        true_q = joint_columns(q, robot.tree, sim.hand.truth.tree, ("thumb_tip", "index_tip", "middle_tip"))
        vectors = {
            "calibrated": task_points(robot, cal.estimate[block], q, task),
            "nominal": task_points(robot, robot.nominal, q, task),
            "true": task_points(sim.hand.truth, sim.hand.theta_true, true_q, task),
        }
        raw = np.linalg.norm(vectors["calibrated"] - vectors["true"], axis=-1)
        aligned = vectors["calibrated"] @ rotation_onto(vectors["calibrated"], vectors["true"]).T
        out[model] = {"problem": problem, "cal": cal, "vectors": vectors, "raw": raw, "modulo": np.linalg.norm(aligned - vectors["true"], axis=-1)}
    return out


def test_every_calibration_fits_the_contacts(scored):
    """Converged, and the residuals are the noise's (mean squared whitened residual near 1: the
    declared sigma is right), the verdict without a warning about them."""
    for model, s in scored.items():
        assert s["cal"].solution.converged, model
        fit = s["cal"].metrics[0]["fit_per_residual"]
        assert 0.3 < fit < 1.5, (model, fit)
        assert {"misfit", "small_residuals"}.isdisjoint(s["cal"].verdict.codes())


def test_the_urdf_hand_has_the_common_rotation_as_its_gauge(scored):
    """(b): the gauge is the rotation about the palm's three axes (no parameter of a non-robot kind
    follows it); fixing it moved no contact (whitened rows unchanged to 1e-7, i.e. 1e-12 m); and
    the calibrated fingertip vectors are best aligned with the nominal ones (Kabsch: identity to
    1e-9) on the task's test set. The DH table has no gauge."""
    cal = scored["full"]["cal"]
    gauge = cal.gauge
    assert gauge is not None and gauge.gauge.components == ("rx", "ry", "rz") and gauge.gauge.compensated == ()
    assert gauge.data_change * SIGMA < 1e-12
    problem, block = scored["full"]["problem"], scored["full"]["problem"].layout.blocks["robot"]
    task = Task("thumb_tip", ("index_tip", "middle_tip"), n=1000, seed=0)  # the problem's task: n and seed as written
    q = uniform_cartesian_test_set(problem.robot, problem.robot.nominal, ("thumb_tip", "index_tip", "middle_tip"), task.n, task.seed)
    estimated = task_points(problem.robot, cal.estimate[block], q, task)
    assert np.abs(rotation_onto(estimated, task_points(problem.robot, problem.robot.nominal, q, task)) - np.eye(3)).max() < 1e-9
    assert "gauge" in cal.verdict.codes() and cal.report()["gauge"]["components"] == ["rx", "ry", "rz"]
    assert scored["dh"]["cal"].gauge is None


def test_full_reaches_the_dh_task_error_modulo_the_gauge(scored):
    """Both below 0.15 mm mean modulo the gauge (what any calibration from contacts can know), and
    URDF `full` within 1.5x of DH; the raw errors are more than ten times larger, the true hand's
    own common rotation (unseen) and, for DH, the prior of its weakly seen near-rotation."""
    dh, full = scored["dh"], scored["full"]
    assert full["modulo"].mean() < 0.15 * MM and dh["modulo"].mean() < 0.15 * MM
    assert full["modulo"].mean() <= 1.5 * dh["modulo"].mean()
    assert full["raw"].mean() > 10 * full["modulo"].mean() and dh["raw"].mean() > 5 * dh["modulo"].mean()


def test_the_gauge_fixed_estimate_is_the_truth_rotated_to_the_nominal_frame(scored):
    """(b) knows the hand up to the gauge, and the gauge was set by the nominal frame: its raw error
    is the true hand's own rotation relative to the nominal one (Kabsch), up to the modulo error."""
    full = scored["full"]
    v = full["vectors"]
    to_nominal = rotation_onto(v["true"], v["nominal"])
    assert np.degrees(np.arccos((np.trace(to_nominal) - 1) / 2)) > 0.2  # the truth's rotation is real
    predicted_raw = np.linalg.norm(v["true"] @ to_nominal.T - v["true"], axis=-1).mean()
    assert abs(full["raw"].mean() - predicted_raw) < 2 * full["modulo"].mean() + 0.02 * predicted_raw


def test_the_prediction_modulo_the_gauge_agrees_with_the_realized_error(scored):
    """report.json task.predicted_modulo_gauge against the realized modulo-gauge error, within a
    factor of 2 (one hand: one draw from the predicted distribution, whose 95 % interval spans
    about 2x either side of its mean here)."""
    full = scored["full"]
    predicted = full["cal"].report()["task"]["predicted_modulo_gauge"]["mean"]
    assert 0.5 < full["modulo"].mean() / predicted < 2.0


def test_the_predicted_interval_holds_the_realized_error_over_seeded_hands(scored):
    """The contacts half of issue 18's coverage acceptance, in small: 10 hands whose truths are
    drawn from the DH problem's prior, their contacts moved onto each true hand to a signed distance
    of the declared sigma's noise (examples/three_finger/coverage.py, which runs 50 per model:
    docs/trust.md), fitted with the fixture's compiled DH problem. The DH table has no gauge, so the
    raw error is checked against task.predicted's 95 % interval: at least 8 of 10 inside (a
    calibrated interval fails this with probability 1 %; one at the acceptance's 85 %, 18 %)."""
    spec = importlib.util.spec_from_file_location("three_finger_coverage", REPO / "examples" / "three_finger" / "coverage.py")
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    problem = scored["dh"]["problem"]
    measurement = problem.measurements[0]
    offsets = np.random.default_rng(5).normal(0.0, SIGMA, len(measurement.data.pair))
    moved = coverage.touching(measurement)(problem.theta0, measurement.data, offsets)
    assert np.abs(np.asarray(measurement.signed_distances(problem.theta0, moved)) - offsets).max() < 1e-12
    units = coverage.coverage(problem, 10)
    assert units[:, 1].sum() >= 8, units
