"""`--source sim`: the scripted operator at a simulated Panda seats the ball in socket 0, then in
socket 1 of a plate, and the nominal model sees the two groups `distance` apart, each spread by
millimetres (the difference between the true robot and the URDF), not metres (a wrong column
order or socket would)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robocal.errors import RobocalError
from robocal.kinematics.urdf import load_urdf
from robocal.record.recording import BallCenter
from robocal.record.sources import simulated_operator

URDF = Path(__file__).resolve().parents[2] / "examples" / "mukca" / "data" / "urdf" / "panda.urdf"


def test_the_simulated_operator_seats_the_ball_socket_by_socket():
    ball = BallCenter(load_urdf(URDF), "ball_link")
    operator = simulated_operator(URDF, "ball_link", 0.08, n=3)
    assert operator.joints == ball.joints
    assert operator.status().endswith("ball in socket 0, pose 1 of 6")
    centers = np.array([ball(operator.read()) for _ in range(6)])
    assert operator.status().endswith("all 6 poses shown")
    with pytest.raises(RobocalError, match="all 6 poses have been shown"):
        operator.read()
    means = centers[:3].mean(axis=0), centers[3:].mean(axis=0)
    spreads = [np.linalg.norm(group - mean, axis=1).max() for group, mean in zip((centers[:3], centers[3:]), means)]
    assert 1e-4 < max(spreads) < 0.02
    assert np.linalg.norm(means[1] - means[0]) == pytest.approx(0.08, abs=0.01)
