"""The task's default tips: a hand's fingertips, a serial arm's flange or tool (not its fingers)."""

from __future__ import annotations

import numpy as np
import pytest

from robocal.analysis.task_uncertainty import default_tips
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.simulation.testset import uniform_cartesian_test_set
from tests.conftest import REPO

URDF = REPO / "examples" / "mukca" / "data" / "urdf"


@pytest.mark.parametrize(
    ("robot", "tips"),
    [
        (URDF / "panda.urdf", ("ball_link",)),  # leaves: two fingers (8 joints each) and the ball (7)
        (URDF / "gen3lite.urdf", ("tool_frame",)),  # tool, ball and two finger links, all on the 6 arm joints
        (URDF / "iiwa14.urdf", ("base", "ball_link")),  # a leaf on no joint and the flange: independent
        (REPO / "src" / "robocal" / "models" / "dlr_hand_ii.yaml", ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")),
    ],
)
def test_default_tips(robot, tips) -> None:
    assert default_tips(load_robot(robot)) == tips


def test_a_serial_arm_gets_a_test_set_over_its_arm_joints() -> None:
    """The Panda's default task (ball_link relative to the root) has a test set: its fingers'
    shared joints no longer refuse it, and it moves the 7 arm joints only."""
    tree = load_robot(URDF / "panda.urdf")
    robot = RobotModel(tree, {})
    q = uniform_cartesian_test_set(robot, robot.nominal, (tree.root, *default_tips(tree)), 50, seed=0, pool=2000)
    assert q.shape == (50, 8)
    assert np.all(q[:, 7] == 0.0) and np.all(q[:, :7].std(axis=0) > 0.1)
