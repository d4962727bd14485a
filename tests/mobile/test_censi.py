"""Censi's closed form and the planar AX = XB solver on synthetic intervals, against the truth
that generated them; the MAP rows of the `odometry` measurement against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from robocal.errors import RobocalError
from robocal.mobile import censi, se2
from robocal.mobile.drive import DriveParameters, increment
from robocal.mobile.handeye import sensor_pose

TRUE = DriveParameters(0.0975, 0.0981, 0.4312)
SENSOR = np.array([0.21, -0.035, -0.97])


def intervals(n: int, seed: int = 0, noise: tuple[float, float] = (0.0, 0.0)):
    """Random wheel rotations (straight, turning, spinning) and the sensor's motion they cause."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(-4.0, 4.0, (n, 2))
    phi[: n // 3, 1] = phi[: n // 3, 0] * rng.uniform(0.9, 1.1, n // 3)  # near-straight stretches
    motion = np.asarray(se2.conjugate(SENSOR, np.asarray(increment(TRUE, phi[:, 0], phi[:, 1]))))
    motion = motion + rng.normal(0, 1, motion.shape) * np.array([noise[0], noise[0], noise[1]])
    return phi, motion


def test_noise_free_intervals_give_the_true_parameters_exactly() -> None:
    phi, motion = intervals(60)
    result = censi.calibrate(phi[:, 0], phi[:, 1], motion, rounds=0)
    np.testing.assert_allclose(result.drive, TRUE, rtol=1e-10)
    np.testing.assert_allclose(result.sensor, SENSOR, atol=1e-10)


def test_the_sign_ambiguity_is_resolved_by_a_positive_wheelbase() -> None:
    """z and -z fit alike; -z is (-b, -l_x, -l_y, l_theta + pi): a negative axle is never returned."""
    phi, motion = intervals(40, seed=3)
    result = censi.calibrate(phi[:, 0], phi[:, 1], motion, rounds=0)
    assert result.drive.wheelbase > 0 and abs(result.sensor[2] - SENSOR[2]) < 1e-9


def test_trimming_drops_gross_outliers_and_recovers_the_truth_within_noise() -> None:
    phi, motion = intervals(2000, seed=1, noise=(0.001, 0.001))
    bad = np.arange(0, 2000, 101)  # 20 scan-matching failures, 0.2 m and 0.3 rad off
    motion[bad] += np.array([0.2, -0.2, 0.3])
    result = censi.calibrate(phi[:, 0], phi[:, 1], motion, rounds=4, fraction=0.01)
    assert not result.keep[bad].any()
    # 2000 intervals of 1 mm / 1 mrad noise: the radii are known to ~2e-5 relative (1 sigma)
    np.testing.assert_allclose(result.drive, TRUE, rtol=2e-4)
    np.testing.assert_allclose(result.sensor, SENSOR, atol=2e-4)


def test_planar_hand_eye_recovers_the_sensor_pose_from_base_motions() -> None:
    phi, motion = intervals(50, seed=2)
    base = np.asarray(increment(TRUE, phi[:, 0], phi[:, 1]))
    np.testing.assert_allclose(sensor_pose(base, motion), SENSOR, atol=1e-10)


def test_straight_driving_alone_cannot_reveal_the_sensor_position() -> None:
    """Without turning, (R(A_theta) - I) = 0 and l_x, l_y drop out of A X = X B: refused, with why."""
    phi = np.column_stack([np.linspace(1, 3, 30), np.linspace(1, 3, 30)])
    base = np.asarray(increment(DriveParameters(0.1, 0.1, 0.4), phi[:, 0], phi[:, 1]))
    with pytest.raises(RobocalError, match="do not determine"):
        sensor_pose(base, np.asarray(se2.conjugate(SENSOR, base)))


def test_antonelli_recovers_the_drive_from_ground_truth_poses() -> None:
    """Noise-free poses along straight, turning-left, turning-right and spinning stretches."""
    from robocal.mobile import antonelli
    from robocal.mobile.drive import integrate

    rng = np.random.default_rng(4)
    kinds = [(1.0, 1.0), (0.6, 1.0), (1.0, 0.5), (-1.0, 1.0), (1.0, 0.0)]
    phi = np.concatenate([np.tile(k, (40, 1)) * rng.uniform(0.05, 0.15, (40, 1)) for k in kinds])
    poses = integrate(TRUE, (0.3, -0.2, 0.4), phi[:, 0], phi[:, 1])
    estimate = antonelli.calibrate(poses, phi)
    np.testing.assert_allclose(estimate, TRUE, rtol=1e-9)
    # with 0.2 mm / 0.5 mrad pose noise the radii stay within 0.05 mm
    noisy = poses + rng.normal(0, 1, poses.shape) * np.array([2e-4, 2e-4, 5e-4])
    estimate = antonelli.calibrate(noisy, phi)
    assert abs(estimate.wheel_radius_left - TRUE.wheel_radius_left) < 5e-5 and abs(estimate.wheel_radius_right - TRUE.wheel_radius_right) < 5e-5
