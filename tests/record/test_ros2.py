"""The ROS 2 source without ROS: mapping JointState messages to the chain's joint order, and the
error a user without rclpy gets."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from robocal.errors import RobocalError
from robocal.record.ros2 import MAX_AGE, Ros2Source, chain_configuration, positions_by_name

CHAIN = ("joint_1", "joint_2", "joint_3")
TOPIC = "/joint_states"


def latest(*messages: tuple[list[str], list[float], float]) -> dict[str, tuple[float, float]]:
    """What the subscription keeps after these (names, positions, arrival time) messages."""
    out: dict[str, tuple[float, float]] = {}
    for names, positions, received in messages:
        out.update((name, (value, received)) for name, value in positions_by_name(names, positions).items())
    return out


def test_positions_are_mapped_by_name_into_the_chain_order():
    # The driver's own order, a gripper joint the chain does not use, and a second stream.
    arm = (["joint_3", "finger", "joint_1"], [0.3, 0.04, 0.1], 10.0)
    wrist = (["joint_2"], [0.2], 10.1)
    q = chain_configuration(latest(arm, wrist), CHAIN, TOPIC, now=10.2)
    np.testing.assert_array_equal(q, [0.1, 0.2, 0.3])


def test_a_newer_message_replaces_the_older_values():
    old = (list(CHAIN), [0.1, 0.2, 0.3], 10.0)
    new = (["joint_2"], [-0.2], 10.3)
    np.testing.assert_array_equal(chain_configuration(latest(old, new), CHAIN, TOPIC, now=10.4), [0.1, -0.2, 0.3])


@pytest.mark.parametrize("positions", [[], [0.1, 0.2]], ids=["no positions", "fewer positions than names"])
def test_messages_that_cannot_be_mapped_carry_no_positions(positions):
    assert positions_by_name(list(CHAIN), positions) == {}


def test_a_joint_missing_from_the_messages_is_named():
    gripper = (["finger", "joint_1"], [0.04, 0.1], 10.0)
    with pytest.raises(RobocalError, match=r"/joint_states: no position of joint_2, joint_3 in the JointState messages, which name finger, joint_1"):
        chain_configuration(latest(gripper), CHAIN, TOPIC, now=10.0)


def test_no_message_at_all():
    with pytest.raises(RobocalError, match=r"no sensor_msgs/msg/JointState message on /joint_states"):
        chain_configuration({}, CHAIN, TOPIC, now=0.0)


def test_a_stale_joint_is_refused_rather_than_stored():
    arm = (list(CHAIN), [0.1, 0.2, 0.3], 10.0)
    fresh = (["joint_1", "joint_3"], [0.1, 0.3], 10.0 + 2 * MAX_AGE)
    with pytest.raises(RobocalError, match=r"/joint_states: no new position of joint_2 for 1\.0 s"):
        chain_configuration(latest(arm, fresh), CHAIN, TOPIC, now=10.0 + 2 * MAX_AGE)


def test_without_rclpy_the_error_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "rclpy", None)  # `import rclpy` now fails, as where ROS 2 is not sourced
    with pytest.raises(RobocalError) as error:
        Ros2Source(CHAIN)
    message = str(error.value)
    assert "--source ros2 needs rclpy" in message
    assert "source /opt/ros/" in message
    assert "--source sim or --source replay" in message
