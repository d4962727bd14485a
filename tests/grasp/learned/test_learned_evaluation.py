"""The shipped networks in the evaluation: the baselines and our controller command what the
learned predictor says, one network at a time leaves the other step analytical, and `grasp
evaluate --controller learned` records every trial of the kinds asked for."""

import numpy as np

from robocal.grasp import objects
from robocal.grasp.controller import AnalyticalEstimator, AnalyticalPredictor, make_controller
from robocal.grasp.evaluation import EvaluationConfig, run_evaluation
from robocal.grasp.grasps import generate_grasps
from robocal.grasp.hand import Hand
from robocal.grasp.learned.controller import CONTROLLERS, LearnedEstimator, LearnedPredictor, learned_controller, load, object_voxels
from robocal.grasp.simulation import ExternalForce, run_trial, situation


def test_learned_commands_follow_the_predictor_and_the_evaluation_runs():
    hand, obj = Hand.load(), objects.get("sphere_35")
    grasp = next(g for g in generate_grasps(hand, obj, seed=0, n_power=1, n_precision=0, until_ok=True) if g.ok)
    models = load()
    voxels = object_voxels(models, hand, obj, grasp)
    # the object is seen: about its volume in voxels (completion and voxel rounding within a factor 2)
    volume = voxels.sum() * models.observation.voxel() ** 3
    assert 0.5 * obj.volume < volume < 2.0 * obj.volume
    predictor = LearnedPredictor(models.predictor, voxels, models.predictor_shift)
    predictor.start(situation(hand, obj, grasp))
    zero = predictor.offsets(np.zeros(6))
    for method, scale in (("without_wrench_estimate", 2.0), ("controller", 1.0)):
        controller = learned_controller(method, scale, 0.1, 0.5, models, voxels)
        result = run_trial(hand, obj, grasp, controller, ExternalForce.none(), duration_ramp=0.05, duration_hold=0.05)
        # the first command: q_init + scale x the predictor's offsets for zero wrench
        np.testing.assert_allclose(result.q_d[0], grasp.q_init + scale * zero, atol=1e-12)
    # one network at a time: the other step is the analytical one, so the baseline on the
    # analytical predictor commands what the analytical baseline does
    for name, learned_estimator, learned_predictor in (("learned_estimator", True, False), ("learned_predictor", False, True)):
        ours = learned_controller("controller", 1.0, 0.1, 0.5, models, voxels, CONTROLLERS[name])
        assert isinstance(ours.estimator, LearnedEstimator if learned_estimator else AnalyticalEstimator)
        assert isinstance(ours.predictor, LearnedPredictor if learned_predictor else AnalyticalPredictor)
    first = [
        run_trial(hand, obj, grasp, controller, ExternalForce.none(), duration_ramp=0.05, duration_hold=0.05).q_d[0]
        for controller in (
            learned_controller("without_wrench_estimate", 2.0, 0.1, 0.5, models, voxels, CONTROLLERS["learned_estimator"]),
            make_controller("without_wrench_estimate", 2.0),
        )
    ]
    np.testing.assert_array_equal(first[0], first[1])
    config = EvaluationConfig(objects=("sphere_35",), grasps=1, forces=1, methods=("controller",), scales=(1.0,), ramp=0.2, hold=0.2, controller="learned")
    trials = run_evaluation(config, workers=1)["trials"]
    assert [t["force"] for t in trials] == [-1, 0] and not any("error" in t for t in trials)
    assert all(np.isfinite(t["estimate_max"]) and t["margin_dropped_cycles"] == 0 for t in trials)


def test_kinds_evaluate_the_same_grasps_of_one_kind():
    config = EvaluationConfig(
        objects=("box_60x40x100",), grasps=3, forces=1, methods=("fixed_offsets",), scales=(1.0,), ramp=0.1, hold=0.1, kinds=("precision",)
    )
    result = run_evaluation(config, workers=1)
    first = [g for g in result["grasps"] if g["status"] == "ok"][: config.grasps]  # the grasps evaluated with both kinds
    assert {g["kind"] for g in first} == {"power", "precision"}
    assert [g["attempt"] for g in result["grasps"] if g["evaluated"]] == [g["attempt"] for g in first if g["kind"] == "precision"]
    assert sorted({t["attempt"] for t in result["trials"]}) == [g["attempt"] for g in first if g["kind"] == "precision"]
