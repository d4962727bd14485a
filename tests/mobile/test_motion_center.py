"""The motion center (base frame in the marker-body frame) from a spin in place and a straight
drive, against the marker-body pose that generated the data.

The base spins 1.5 turns about a fixed point, then drives 1 m straight along its x axis; the
marker body rides on it at MARKERS (its pose in the base frame, the simulator's true value).
Noise as a tracking system gives it for a body of four markers ~0.1 m apart with 0.2 mm on each:
0.2 mm on the body position, 1.5 mrad on its yaw.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robocal.errors import RobocalError
from robocal.mobile.motion_center import MotionCenter, motion_center, planar
from robocal.mobile.se2 import compose, inverse, wrap

MARKERS = np.array([-0.0612, 0.0437, np.deg2rad(21.3)])  # marker body in the base frame
POSITION_NOISE, YAW_NOISE = 2e-4, 1.5e-3
N_SPIN, N_STRAIGHT = 1500, 500


def base_spin(turns: float = 1.5, n: int = N_SPIN, center=(1.2, -0.4)) -> np.ndarray:
    yaw = 0.3 + np.linspace(0.0, turns * 2 * np.pi, n)
    return np.column_stack([np.full(n, center[0]), np.full(n, center[1]), yaw])


def base_straight(length: float = 1.0, n: int = N_STRAIGHT, heading: float = 2.0) -> np.ndarray:
    s = np.linspace(0.0, length, n)
    return np.column_stack([1.5 + s * np.cos(heading), 0.2 + s * np.sin(heading), np.full(n, heading)])


def tracked(base: np.ndarray, rng=None) -> np.ndarray:
    """Marker-body poses of a base trajectory, noisy when given a generator."""
    poses = compose(base, MARKERS)
    if rng is not None:
        poses = poses + rng.normal(0.0, 1.0, poses.shape) * [POSITION_NOISE, POSITION_NOISE, YAW_NOISE]
    return poses


def test_noise_free_is_exact():
    result = motion_center(tracked(base_spin()), tracked(base_straight()))
    assert isinstance(result, MotionCenter)
    expected = inverse(MARKERS)
    np.testing.assert_allclose([result.x, result.y, result.yaw], expected, atol=1e-9)
    np.testing.assert_allclose(result.marker_in_base(), MARKERS, atol=1e-9)
    assert result.radius == pytest.approx(np.hypot(*MARKERS[:2]), abs=1e-9)
    assert result.rms < 1e-9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_averages_out(seed):
    """Standard errors: the center from ~N_SPIN samples of ~0.2 mm, a few um; the yaw from
    N_STRAIGHT yaws of 1.5 mrad, ~0.07 mrad. Five of them bound the error; the acceptance is
    1 mm and 0.1 deg."""
    rng = np.random.default_rng(seed)
    result = motion_center(tracked(base_spin(), rng), tracked(base_straight(), rng))
    expected = inverse(MARKERS)
    position_error = np.hypot(result.x - expected[0], result.y - expected[1])
    yaw_error = abs(wrap(result.yaw - expected[2]))
    assert position_error < 5 * np.hypot(POSITION_NOISE, YAW_NOISE * np.hypot(*MARKERS[:2])) / np.sqrt(N_SPIN / 2) < 1e-3
    assert yaw_error < 5 * YAW_NOISE / np.sqrt(N_STRAIGHT) < np.deg2rad(0.1)
    # every sample strays by the position noise, plus the yaw noise over the radius
    per_axis = np.hypot(POSITION_NOISE, YAW_NOISE * result.radius)
    assert 0.8 * per_axis < result.rms < 1.5 * np.sqrt(2) * per_axis


def test_planar_poses_of_a_rigid_body():
    """Level body: its yaw. Tilted body: yaw + a constant, from whichever axis lies flatter;
    invalid rows NaN."""
    yaw = np.linspace(-3.0, 3.0, 7)
    positions = np.column_stack([yaw, -yaw, np.full(7, 0.6)])
    level = Rotation.from_euler("z", yaw[:, None]).as_quat()  # (x, y, z, w)
    np.testing.assert_allclose(planar(positions, level), np.column_stack([yaw, -yaw, yaw]), atol=1e-12)
    tilted = (Rotation.from_euler("z", yaw[:, None]) * Rotation.from_euler("y", -80, degrees=True)).as_quat()  # body x nearly vertical
    poses = planar(positions, tilted, valid=np.arange(7) != 3)
    assert np.isnan(poses[3]).all()
    constant = wrap(np.delete(poses[:, 2] - yaw, 3))
    np.testing.assert_allclose(constant, constant[0], atol=1e-12)


def test_planar_poses_feed_the_motion_center():
    """3-D body poses of the marker body at a height, through `planar`, give the same answer."""
    spin, straight = tracked(base_spin()), tracked(base_straight())
    to_3d = lambda p: (np.column_stack([p[:, :2], np.full(len(p), 0.62)]), Rotation.from_euler("z", p[:, 2:]).as_quat())  # noqa: E731
    result = motion_center(planar(*to_3d(spin)), planar(*to_3d(straight)))
    np.testing.assert_allclose([result.x, result.y, result.yaw], inverse(MARKERS), atol=1e-9)


def test_occluded_samples_are_dropped():
    spin, straight = tracked(base_spin()), tracked(base_straight())
    spin[::7], straight[::5] = np.nan, np.nan
    result = motion_center(spin, straight)
    np.testing.assert_allclose([result.x, result.y, result.yaw], inverse(MARKERS), atol=1e-9)


def test_short_spin_is_refused():
    with pytest.raises(RobocalError, match=r"spin covers 60\.0 deg of yaw; at least 90 deg"):
        motion_center(tracked(base_spin(turns=60 / 360)), tracked(base_straight()))


def test_short_straight_drive_is_refused():
    with pytest.raises(RobocalError, match=r"straight drive covers 0\.100 m; at least 0\.2 m"):
        motion_center(tracked(base_spin()), tracked(base_straight(length=0.1)))


def test_too_few_valid_poses_are_refused():
    spin = tracked(base_spin())
    spin[2:] = np.nan
    with pytest.raises(RobocalError, match=r"spin: 2 valid pose\(s\).*cannot be told"):
        motion_center(spin, tracked(base_straight()))


def test_a_spin_not_in_place_is_refused():
    """Turning while sliding sideways at 0.3 m per rad: no point of the base stays put. (A circle
    would pass: driving on a circle is a rotation about its center, and the radius gives it away.)"""
    yaw = np.linspace(0.0, 2 * np.pi, 400)
    drift = np.column_stack([0.3 * yaw, np.zeros_like(yaw), yaw])
    with pytest.raises(RobocalError, match=r"moved by \d+\.\d mm rms during the spin .*did not spin in place"):
        motion_center(tracked(drift), tracked(base_straight()))


def test_bad_shape_is_refused():
    with pytest.raises(RobocalError, match=r"\(n, 3\) array"):
        motion_center(np.zeros((10, 2)), tracked(base_straight()))
