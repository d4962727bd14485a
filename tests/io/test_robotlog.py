"""Robot logs: joint states and odometry written as a ROS 1 bag, a ROS 2 bag folder (mcap and
sqlite3 storage) and a standalone MCAP file read back exactly (values are float64 in the
messages: 1e-9; stamps are integer nanoseconds: 1 ns), and broken logs are InputErrors naming
the file."""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robocal.errors import InputError
from robocal.io.robotlog import JointStates, Odometry, read_robot_log, write_robot_log

FORMATS = {"ros1": "log.bag", "ros2": "log", "ros2-sqlite3": "log", "mcap": "log.mcap"}
JOINTS = ["wheel_left_joint", "wheel_right_joint", "torso_lift_joint"]


def _series():
    rng = np.random.default_rng(7)
    t = 12.345678901 + 0.01 * np.arange(60)  # nanosecond digits
    positions = np.cumsum(rng.normal(0, 0.05, (60, 3)), axis=0)
    positions[[4, 30], 2] = np.nan  # messages without the torso joint
    velocities = rng.normal(0, 1, (60, 3))
    velocities[[4, 30], 2] = np.nan
    t_odom = 12.3 + 0.0333 * np.arange(25)
    poses = np.column_stack([rng.uniform(-5, 5, (25, 2)), rng.uniform(-3.1, 3.1, 25)])
    twists = rng.normal(0, 0.5, (25, 3))
    return {"/joint_states": JointStates(t, JOINTS, positions, velocities)}, {"/mobile_base_controller/odom": Odometry(t_odom, poses, twists)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(tmp_path, fmt):
    joint_states, odometry = _series()
    path = tmp_path / FORMATS[fmt]
    write_robot_log(path, joint_states, odometry, format=fmt)
    log = read_robot_log(path)

    assert log.source == path
    assert list(log.joint_states) == ["/joint_states"] and list(log.odometry) == ["/mobile_base_controller/odom"]
    got, want = log.joint_states["/joint_states"], joint_states["/joint_states"]
    assert got.names == JOINTS and got.stamps == "header"
    np.testing.assert_array_equal(np.rint(got.times * 1e9), np.rint(want.times * 1e9))
    np.testing.assert_allclose(got.times, want.times, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(np.isnan(got.positions), np.isnan(want.positions))
    np.testing.assert_allclose(got.positions, want.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.velocities, want.velocities, rtol=0, atol=1e-9)

    got, want = log.odometry["/mobile_base_controller/odom"], odometry["/mobile_base_controller/odom"]
    np.testing.assert_allclose(got.times, want.times, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.poses, want.poses, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.twists, want.twists, rtol=0, atol=1e-9)

    times, angles = log.wheel_angles("wheel_left_joint", "wheel_right_joint")
    np.testing.assert_allclose(times, joint_states["/joint_states"].times, rtol=0, atol=1e-9)
    np.testing.assert_allclose(angles, joint_states["/joint_states"].positions[:, :2], rtol=0, atol=1e-9)


def test_unstamped_messages_take_the_receive_time(tmp_path):
    """A publisher that leaves header stamps at zero is timed by the bag's receive time."""
    store = get_typestore(Stores.ROS2_HUMBLE)
    t = store.types
    path = tmp_path / "log"
    received = [5_000_000_123, 5_010_000_456, 5_020_000_789]
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=store)
        other = writer.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
        for k, ns in enumerate(received):
            header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id="")
            message = t["sensor_msgs/msg/JointState"](
                header=header, name=["a", "b"], position=np.array([k, -k], float), velocity=np.empty(0), effort=np.empty(0)
            )
            writer.write(conn, ns, store.serialize_cdr(message, "sensor_msgs/msg/JointState"))
            writer.write(other, ns, store.serialize_cdr(t["std_msgs/msg/String"](data="hi"), "std_msgs/msg/String"))
    log = read_robot_log(path)
    states = log.joint_states["/joint_states"]
    assert states.stamps == "receive" and states.velocities is None and log.odometry == {}
    np.testing.assert_array_equal(np.rint(states.times * 1e9), received)
    np.testing.assert_array_equal(states.positions, [[0, 0], [1, -1], [2, -2]])


def test_wheel_joints_that_are_absent(tmp_path):
    joint_states, odometry = _series()
    path = tmp_path / "log.mcap"
    write_robot_log(path, joint_states, odometry, format="mcap")
    log = read_robot_log(path)
    with pytest.raises(InputError, match="wheel joints 'left' and 'right'.*/joint_states: wheel_left_joint, wheel_right_joint, torso_lift_joint") as err:
        log.wheel_angles("left", "right")
    assert str(path) in str(err.value)
    with pytest.raises(InputError, match="no joint-state topic '/odom'"):
        log.wheel_angles("wheel_left_joint", "wheel_right_joint", topic="/odom")


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_log(tmp_path, fmt):
    joint_states, odometry = _series()
    path = tmp_path / FORMATS[fmt]
    write_robot_log(path, joint_states, odometry, format=fmt)
    data_file = next(f for f in path.iterdir() if f.name != "metadata.yaml") if path.is_dir() else path
    data = data_file.read_bytes()
    data_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        read_robot_log(path)
    assert str(path) in str(err.value)
    assert "truncated" in str(err.value) or "not a readable" in str(err.value)


def test_not_a_robot_log(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("hello\n")
    with pytest.raises(InputError, match="not a supported robot log .*ROS 1 .bag.*ROS 2 bag folder.*mcap") as err:
        read_robot_log(path)
    assert str(path) in str(err.value)
    with pytest.raises(InputError, match="no metadata.yaml"):
        read_robot_log(tmp_path)
    with pytest.raises(InputError, match="cannot read"):
        read_robot_log(tmp_path / "missing.bag")


def test_writer_refuses_to_overwrite(tmp_path):
    joint_states, odometry = _series()
    (tmp_path / "log.mcap").write_bytes(b"")
    with pytest.raises(FileExistsError):
        write_robot_log(tmp_path / "log.mcap", joint_states, odometry, format="mcap")
    with pytest.raises(ValueError, match="unknown robot-log format"):
        write_robot_log(tmp_path / "x", joint_states, odometry, format="ros3")
