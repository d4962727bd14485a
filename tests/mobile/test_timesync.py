"""Clock offset from yaw rates, on a synthetic turning motion seen by two clocks.

The motion: a yaw rate made of Gaussian bumps (turns of 0.5 to 1.5 s, up to 0.8 rad/s, left and
right), whose yaw is closed-form (erf). The "mocap" sees it at 100 Hz with 1 mrad of yaw noise
(what 0.2 mm on markers ~0.1 m apart gives) and a few occluded frames; the "robot" at 50 Hz with
0.5 mrad. The offset is not a multiple of either period, so only the sub-sample refinement can
bring the error below a few ms (measured: within 0.6 ms over seeds 0-5; 11 to 19 ms for most of
them without the smoothing of the rates).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf

from robocal.errors import RobocalError
from robocal.mobile.timesync import ClockOffset, estimate_offset, resample, yaw_rate

OFFSET = 0.2373  # s: mocap_time = robot_time + OFFSET; 2.3 ms from the nearest candidate on the 10 ms grid
FRAME = 0.01  # s, one mocap frame


def motion(seed: int = 0, span: float = 60.0):
    """yaw(t) of turns: Gaussian bumps of the yaw rate, integrated in closed form."""
    rng = np.random.default_rng(seed)
    centers = np.arange(1.0, span, 3.0) + rng.uniform(-0.5, 0.5, int(np.ceil((span - 1.0) / 3.0)))
    widths = rng.uniform(0.5, 1.5, len(centers))
    heights = rng.uniform(0.3, 0.8, len(centers)) * rng.choice([-1.0, 1.0], len(centers))

    def yaw(t):
        t = np.asarray(t, dtype=float)[..., None]
        return np.sum(heights * widths * np.sqrt(np.pi / 2) * (1 + erf((t - centers) / (widths * np.sqrt(2)))), axis=-1)

    return yaw


def recordings(seed: int = 0, offset: float = OFFSET, mocap_span=(0.0, 60.0), robot_span=(0.5, 58.0)):
    """(mocap times, yaw with NaN at occlusions), (robot times, yaw), yaw wrapped as sensors give it."""
    rng = np.random.default_rng(seed + 100)
    yaw = motion(seed)
    wrapped = lambda a: np.arctan2(np.sin(a), np.cos(a))  # noqa: E731
    t_mocap = np.arange(*mocap_span, FRAME)
    t_robot = np.arange(*robot_span, 0.02)
    mocap = wrapped(yaw(t_mocap - offset) + rng.normal(0.0, 1e-3, len(t_mocap)))
    mocap[rng.choice(len(t_mocap), 30, replace=False)] = np.nan
    robot = wrapped(yaw(t_robot) + rng.normal(0.0, 5e-4, len(t_robot)))
    return (t_mocap, mocap), (t_robot, robot)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_offset_recovered_to_a_tenth_of_a_frame(seed):
    (t_m, yaw_m), (t_r, yaw_r) = recordings(seed)
    result = estimate_offset(*yaw_rate(t_m, yaw_m), *yaw_rate(t_r, yaw_r))
    assert isinstance(result, ClockOffset)
    assert abs(result.offset - OFFSET) < 0.1 * FRAME, result
    assert result.dt == pytest.approx(FRAME)
    assert 0.95 < result.peak <= 1.0
    # the robot log (0.5 to 58 s robot time) lies inside the mocap span once shifted
    assert result.overlap == pytest.approx(57.5 - 0.02, abs=0.03)


def test_offset_sign_flips_with_the_reference():
    (t_m, yaw_m), (t_r, yaw_r) = recordings()
    forward = estimate_offset(*yaw_rate(t_m, yaw_m), *yaw_rate(t_r, yaw_r))
    backward = estimate_offset(*yaw_rate(t_r, yaw_r), *yaw_rate(t_m, yaw_m))
    assert abs(backward.offset + OFFSET) < 0.1 * FRAME
    assert backward.offset == pytest.approx(-forward.offset, abs=1e-3)


def test_clocks_of_different_epochs_need_a_guess():
    """A robot clock counting from 1000 s: outside the default search, found around a guess."""
    (t_m, yaw_m), (t_r, yaw_r) = recordings()
    mocap, robot = yaw_rate(t_m, yaw_m), yaw_rate(t_r + 1000.0, yaw_r)
    result = estimate_offset(*mocap, *robot, guess=-1000.0, max_offset=5.0)
    assert abs(result.offset - (OFFSET - 1000.0)) < 0.1 * FRAME
    with pytest.raises(RobocalError, match="overlap by at most 0.00 s"):
        estimate_offset(*mocap, *robot)


def test_short_overlap_is_refused():
    (t_m, yaw_m), (t_r, yaw_r) = recordings(mocap_span=(0.0, 8.0), robot_span=(0.0, 8.0))
    with pytest.raises(RobocalError, match=r"overlap by at most 7\.\d\d s .*at least 10 s of common motion"):
        estimate_offset(*yaw_rate(t_m, yaw_m), *yaw_rate(t_r, yaw_r))


def test_no_turn_is_refused():
    """Driving straight: both yaws are noise only, nothing to align."""
    rng = np.random.default_rng(5)
    t_m, t_r = np.arange(0, 60, 0.01), np.arange(0, 60, 0.02)
    with pytest.raises(RobocalError, match="do not match.*the robot must turn during the recording"):
        estimate_offset(*yaw_rate(t_m, rng.normal(0, 1e-3, len(t_m))), *yaw_rate(t_r, rng.normal(0, 5e-4, len(t_r))))


def test_yaw_rate_unwraps_and_skips_invalid_samples():
    t = np.arange(0.0, 20.0, 0.01)
    yaw = np.arctan2(np.sin(0.7 * t), np.cos(0.7 * t))  # crosses +-pi twice
    valid = np.ones(len(t), dtype=bool)
    valid[100:110] = False
    yaw[500] = np.nan
    mid, rate = yaw_rate(t, yaw, valid)
    assert len(rate) == len(t) - 1 - 11
    np.testing.assert_allclose(rate, 0.7, atol=1e-9)
    gap = np.argmax(np.diff(mid) > 0.015)
    assert mid[gap + 1] == pytest.approx(0.5 * (t[99] + t[110]))  # the step across the gap, at its middle


def test_yaw_rate_needs_two_valid_samples():
    with pytest.raises(RobocalError, match="1 valid sample"):
        yaw_rate([0.0, 0.1, 0.2], [0.0, np.nan, np.nan])


def test_resample_interpolates_angles_through_pi():
    t = np.array([0.0, 1.0, 2.0])
    values = np.array([[0.0, 3.0], [1.0, -3.0], [2.0, -2.9]])  # column 1 turns through pi
    out = resample(t, values, [0.5, 1.5], angle_columns=[1])
    np.testing.assert_allclose(out[:, 0], [0.5, 1.5])
    assert abs(abs(out[0, 1]) - np.pi) < 1e-12  # halfway from 3.0 to -3.0 + 2 pi: pi, not 0
    assert out[1, 1] == pytest.approx(-2.95)
    np.testing.assert_allclose(resample(t, values[:, 0], [0.25]), [0.25])


def test_resample_refuses_times_outside_the_valid_span():
    t = np.arange(5.0)
    values = np.array([np.nan, 1.0, 2.0, 3.0, 4.0])
    with pytest.raises(RobocalError, match=r"outside the valid samples' \[1\.000000, 4\.000000\]"):
        resample(t, values, [0.5, 2.0])
