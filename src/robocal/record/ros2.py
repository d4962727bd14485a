"""Joint configurations from ROS 2: the latest sensor_msgs/msg/JointState positions on a topic.

Drivers often publish several JointState streams on one topic (the arm and the gripper
separately, in their own joint order), so the source keeps the latest position of every joint
named in any message, with its arrival time, and assembles the chain's configuration by name.
A chain joint whose latest value is older than MAX_AGE is an error, never a stale value stored
as if the arm were still there. The name mapping is plain Python (`positions_by_name`,
`chain_configuration`) so that it is tested without ROS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

import numpy as np

from robocal.errors import RobocalError

MAX_AGE = 0.5  # s: a joint value older than this is stale (drivers publish at 50 Hz and more)
STARTUP_WAIT = 5.0  # s: DDS discovery of the publisher can take a few seconds
READ_WAIT = 1.0  # s: at a key press, how long to wait for fresh values before refusing the store

ROS_HELP = (
    "--source ros2 needs rclpy and sensor_msgs, the Python packages of ROS 2, and they are not importable: "
    "source your ROS 2 installation first (e.g. `source /opt/ros/jazzy/setup.bash`) and run robocal from "
    "the Python that ROS 2 uses (`python3 -m pip install robocal` there); or rehearse with --source sim or --source replay"
)


def positions_by_name(names: Sequence[str], positions: Sequence[float]) -> dict[str, float]:
    """The positions of one JointState message by joint name. Empty when the message carries no
    positions (only velocities or efforts), or, against the message definition, a different
    number of positions than names: such a message cannot be mapped."""
    if len(positions) != len(names):
        return {}
    return {name: float(value) for name, value in zip(names, positions)}


def chain_configuration(latest: Mapping[str, tuple[float, float]], joints: Sequence[str], topic: str, now: float, max_age: float = MAX_AGE) -> np.ndarray:
    """(len(joints),) configuration in the chain's order from `latest`: joint name -> (position,
    arrival time, s). RobocalError when nothing has arrived, when a chain joint is in none of the
    messages, or when its latest value is older than max_age."""
    if not latest:
        raise RobocalError(
            f"no sensor_msgs/msg/JointState message on {topic}: is the robot's driver running, with the same ROS_DOMAIN_ID? (check with `ros2 topic echo {topic}`)"
        )
    missing = [name for name in joints if name not in latest]
    if missing:
        raise RobocalError(
            f"{topic}: no position of {', '.join(missing)} in the JointState messages, which name {', '.join(sorted(latest))}; is --robot the URDF of this robot?"
        )
    stale = [name for name in joints if now - latest[name][1] > max_age]
    if stale:
        age = max(now - latest[name][1] for name in stale)
        raise RobocalError(f"{topic}: no new position of {', '.join(stale)} for {age:.1f} s (more than {max_age:g} s)")
    return np.array([latest[name][0] for name in joints], dtype=float)


class Ros2Source:
    """Subscribes to `topic` on its own ROS context and spins it in a background thread; waits
    up to STARTUP_WAIT for a complete configuration, so a wrong topic or robot fails at once."""

    def __init__(self, joints: Sequence[str], topic: str = "/joint_states"):
        try:
            import rclpy
            from rclpy.context import Context
            from rclpy.executors import SingleThreadedExecutor
            from rclpy.qos import qos_profile_sensor_data
            from rclpy.signals import SignalHandlerOptions
            from sensor_msgs.msg import JointState
        except ImportError as exc:
            raise RobocalError(f"{ROS_HELP} ({exc})") from None
        self.joints = tuple(joints)
        self.topic = topic
        self._latest: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self._context = Context()
        # Ctrl-C stays the recorder's (the terminal is restored), not a ROS shutdown.
        rclpy.init(context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        self._node = rclpy.create_node("robocal_recorder", context=self._context)
        # Best effort accepts both reliable and best-effort publishers.
        self._node.create_subscription(JointState, topic, self._receive, qos_profile_sensor_data)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self._node)
        self._thread = threading.Thread(target=self._executor.spin, name="robocal-ros2", daemon=True)
        self._thread.start()
        try:
            self._wait_for_configuration(STARTUP_WAIT)
        except BaseException:
            self.close()
            raise

    def _receive(self, message) -> None:
        fresh = positions_by_name(message.name, message.position)
        now = time.monotonic()
        with self._lock:
            self._latest.update((name, (value, now)) for name, value in fresh.items())

    def _wait_for_configuration(self, wait: float) -> np.ndarray:
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                latest = dict(self._latest)
            now = time.monotonic()
            try:
                return chain_configuration(latest, self.joints, self.topic, now)
            except RobocalError as exc:
                if now >= deadline:
                    raise RobocalError(f"{exc} (waited {wait:g} s)") from None
            time.sleep(0.01)

    def read(self) -> np.ndarray:
        return self._wait_for_configuration(READ_WAIT)

    def status(self) -> str:
        with self._lock:
            times = [self._latest[name][1] for name in self.joints if name in self._latest]
        if len(times) < len(self.joints):
            return f"ROS 2 {self.topic}: waiting for the positions of all {len(self.joints)} joints"
        return f"ROS 2 {self.topic}: joint values {time.monotonic() - min(times):.2f} s old"

    def close(self) -> None:
        self._executor.shutdown()
        self._thread.join(timeout=2.0)
        self._node.destroy_node()
        self._context.try_shutdown()
