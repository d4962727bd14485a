"""The evaluation's comparisons: interpolation over the baselines' scales, no extrapolation; a
trial's figures and their summary."""

from types import SimpleNamespace

import numpy as np
import pytest

from robocal.grasp.evaluation import _figures
from robocal.grasp.metrics import compare, method_rows, summarize


def _baseline(points):
    return [{"method": "fixed_offsets", "scale": s, "torque_sum": t, "kept": k} for s, (t, k) in zip((1, 1.5, 2, 2.5, 3), points)]


def test_comparison_interpolates_the_baseline_curve():
    baseline = _baseline([(2.0, 0.50), (3.0, 0.60), (4.0, 0.70), (5.0, 0.80), (6.0, 0.90)])
    result = compare({"torque_sum": 2.5, "kept": 0.75}, baseline)
    assert result["kept_at_our_torque"] == pytest.approx(0.55)
    assert result["torque_at_our_kept"] == pytest.approx(4.5)
    assert result["we_keep_more"] and result["we_use_less_torque"]
    worse = compare({"torque_sum": 4.5, "kept": 0.70}, baseline)  # the baseline keeps 0.75 there
    assert not worse["we_keep_more"] and not worse["we_use_less_torque"]


def test_comparison_does_not_extrapolate():
    baseline = _baseline([(2.0, 0.50), (3.0, 0.60), (4.0, 0.70), (5.0, 0.80), (6.0, 0.85)])
    result = compare({"torque_sum": 1.0, "kept": 0.95}, baseline)
    assert result["kept_at_our_torque"] == 0.50 and "smallest scale" in result["kept_at_our_torque_note"]
    assert result["torque_at_our_kept"] is None and "never reached" in result["torque_at_our_kept_note"]
    assert result["we_keep_more"] and result["we_use_less_torque"]


def test_rows_count_kept_torque_and_quantiles():
    trials = [
        {"method": "controller", "scale": 1.0, "broken": i % 4 == 0, "torque_sum": float(i), "max_translation": i / 100, "max_rotation": i / 10}
        for i in range(1, 11)
    ]
    (row,) = method_rows(trials)
    assert row["kept"] == pytest.approx(0.8) and row["torque_sum"] == pytest.approx(5.5)
    assert row["translation_q90"] == pytest.approx(0.091) and row["rotation_q90"] == pytest.approx(0.91)


def test_summary_counts_like_failures_together_and_splits_the_force_error_by_kind():
    reasons = [
        "object moved 9.9 mm / 23.7 deg while settling",
        "object moved 41.2 mm / 73.7 deg while settling",
        "power grasp touches 2 links (palm, thumb_link4), needs 3",
        "power grasp touches 0 links (none), needs 3",
    ]
    grasps = [{"object": "a", "attempt": i, "kind": "power", "status": "failed", "reason": r, "evaluated": False} for i, r in enumerate(reasons)]
    trials = [
        {
            "method": "controller",
            "scale": 1.0,
            "kind": kind,
            "force": 0,
            "broken": False,
            "torque_sum": 1.0,
            "max_translation": 0.0,
            "max_rotation": 0.0,
            "estimate_error": error,
            "estimate_error_ramp": error / 2,
        }
        for kind, error in (("power", 9.0), ("power", 10.0), ("precision", 0.1))
    ]
    broken = {**trials[2], "broken": True, "estimate_error_ramp": 0.4}  # broken while ramping: no hold figure
    del broken["estimate_error"]
    summary = summarize({"config": {"grasps": 8}, "grasps": grasps, "trials": [*trials, broken]})
    assert summary["grasps"]["failures"] == {"object moved # mm / # deg while settling": 2, "power grasp touches # links, needs #": 2}
    assert summary["wrench_estimation"]["force_error_median_by_kind"] == {"power": 9.5, "precision": 0.1}
    assert summary["wrench_estimation"]["force_error_median"] == 9.0
    assert summary["wrench_estimation"]["ramp_force_error_median_by_kind"] == {"power": {"kept": 4.75}, "precision": {"broken": 0.4, "kept": 0.05}}


def test_a_trials_estimate_errors_while_held_and_while_ramping():
    """A 4 s ramp to 5 N sampled each second, broken in the hold at 5 s: the estimate is 1 N short
    during the ramp (after the start, where it is 0 and so is the force) and 0.5 N in the hold."""
    t = np.arange(6.0)
    force = np.minimum(t / 4.0, 1.0) * 5.0
    wrench = np.zeros((6, 6))
    wrench[:, 2] = force
    estimate = wrench.copy()
    estimate[1:4, 2] -= 1.0
    estimate[4:, 0] = 0.5  # the right size along z, 0.5 N off sideways
    result = SimpleNamespace(broken=True, break_time=5.0, max_translation=0.02, max_rotation=0.1, tau=np.ones((6, 12)), t=t, wrench=wrench, estimate=estimate)
    record = _figures(result, ramp=4.0)
    assert record["estimate_error_ramp"] == pytest.approx(1.0)  # t = 1, 2, 3
    assert record["estimate_error"] == pytest.approx(0.5)  # t = 4, 5
    assert record["estimate_max"] == pytest.approx(np.hypot(5.0, 0.5))
    assert record["torque_sum"] == pytest.approx(12.0) and record["break_time"] == 5.0
