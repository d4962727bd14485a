"""Our grasp controller in simulation: it finds the push on a fingertip grasp, holds the object
where it was, and estimates nothing when nothing pushes; the baselines' offsets as in the seed."""

import numpy as np
import pytest

from robocal.grasp import objects
from robocal.grasp.controller import (
    AnalyticalEstimator,
    AnalyticalPredictor,
    GraspController,
    fixed_offsets,
    make_controller,
)
from robocal.grasp.grasps import generate_grasps
from robocal.grasp.hand import Hand
from robocal.grasp.metrics import NO_FORCE_LIMIT
from robocal.grasp.simulation import ExternalForce, GraspSituation, run_trial

PUSH = 5.0  # N, the seed's force on precision grasps


@pytest.fixture(scope="module")
def hand():
    return Hand.load()


@pytest.fixture(scope="module")
def tripod(hand):
    """A precision grasp of a 35 mm sphere by the thumb, fore and middle fingertips."""
    grasps = generate_grasps(hand, objects.get("sphere_35"), seed=3, n_power=0, n_precision=2)
    ok = [g for g in grasps if g.ok and len(g.fingers) >= 3]
    assert ok, [(g.fingers, g.reason) for g in grasps]
    return ok[0]


def test_fixed_offsets_are_the_seeds(hand, tripod):
    offsets = fixed_offsets(GraspSituation(hand, tripod, (), np.zeros(3)))
    expected = {"q1": 0.0, "q2": 0.2, "q3": 0.1}
    assert offsets == pytest.approx([expected[name[-2:]] for name in hand.joints], abs=0)


def test_controller_holds_a_push_where_the_object_was(hand, tripod):
    obj = objects.get("sphere_35")
    force = ExternalForce.sample(obj, np.random.default_rng(1), PUSH)
    ours = run_trial(hand, obj, tripod, make_controller("controller"), force, duration_ramp=2.0, duration_hold=1.0)
    assert not ours.broken
    # Held against its initial pose: what remains is the contact springs' give, PUSH / c = 0.5 mm
    # if one contact took it all.
    assert ours.max_translation < PUSH / 1.0e4 * 2
    held = ours.t >= 2.0
    error = np.linalg.norm(ours.estimate[held, :3] - ours.wrench[held, :3], axis=1)
    assert error.max() < 0.1 * PUSH  # fingertips only: the torques determine the contact forces
    # The same push on the same grasp with the offsets for no wrench, kept constant, moves the
    # object much further (the impedance has to be deflected to build up the force).
    constant = run_trial(hand, obj, tripod, make_controller("without_wrench_estimate"), force, duration_ramp=2.0, duration_hold=1.0)
    assert constant.max_translation > 5 * ours.max_translation


def test_no_wrench_is_estimated_when_none_is_applied(hand, tripod):
    obj = objects.get("sphere_35")
    quiet = run_trial(hand, obj, tripod, make_controller("controller"), ExternalForce.none(), duration_ramp=0.5, duration_hold=0.5)
    assert not quiet.broken
    assert np.linalg.norm(quiet.estimate[:, :3], axis=1).max() < NO_FORCE_LIMIT


def test_the_filtered_loop_does_not_ring_up_on_a_tripod(hand):
    """The estimate -> command -> object motion loop, unfiltered, rings up on this tripod of a
    30 mm cylinder: with no force at all the object drifts millimetres and the controller
    'estimates' newtons. The estimate's low-pass (GraspController.filter_time) keeps it still."""
    obj = objects.get("cylinder_30x100")
    grasp = generate_grasps(hand, obj, seed=1, n_power=0, n_precision=1)[0]
    assert grasp.ok and len(grasp.fingers) == 3, grasp.reason

    def quiet(filter_time):
        controller = GraspController(AnalyticalEstimator(), AnalyticalPredictor(), filter_time=filter_time)
        trial = run_trial(hand, obj, grasp, controller, ExternalForce.none(), duration_ramp=1.0, duration_hold=1.0)
        return trial.max_translation, np.linalg.norm(trial.estimate[:, :3], axis=1).max()

    drift, estimate = quiet(0.0)
    assert drift > 3e-3 and estimate > 1.0
    drift, estimate = quiet(GraspController.filter_time)
    assert drift < 0.5e-3 and estimate < NO_FORCE_LIMIT
