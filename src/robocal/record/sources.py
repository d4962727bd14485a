"""Where the recorder gets the robot's current joint configuration.

A source gives the configuration of `joints`, the URDF's actuated joints of the chain to the
ball link in tree order (the column order of the hole_<k>.csv files), and a one-line status the
recorder shows, so the user sees whether the robot is alive before pressing a key. The recorder
reads once per stored configuration, at the key press.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from robocal.errors import RobocalError
from robocal.io.sockets import read_socket_folder


class JointSource(Protocol):
    joints: tuple[str, ...]

    def read(self) -> np.ndarray:
        """(len(joints),) the current configuration (rad, m); RobocalError when there is none."""

    def status(self) -> str:
        """One line on the state of the source, e.g. the age of the last joint-state message."""

    def close(self) -> None:
        """Release what the source holds (ROS node, threads)."""


class ScriptedOperator:
    """A simulated robot and the person guiding it, for demos and tests: the ball is seated in
    socket 0 for each pose of script[0], then in socket 1 for each pose of script[1], and so on.
    Each read (one per stored configuration) returns the pose held and moves the arm on to the
    next one, so a test knows exactly which configuration each key press stored.

    The operator follows the script whatever key is pressed: pressing 1 while the ball sits in
    socket 0 stores a mislabeled configuration, as it would at a real robot.
    """

    def __init__(self, joints: Sequence[str], script: Sequence[np.ndarray], name: str):
        self.joints = tuple(joints)
        self.name = name
        self._poses = [(k, q) for k, rows in enumerate(script) for q in np.asarray(rows, dtype=float)]
        self._next = 0

    def read(self) -> np.ndarray:
        if self._next == len(self._poses):
            raise RobocalError(f"{self.name}: all {len(self._poses)} poses have been shown")
        q = self._poses[self._next][1].copy()
        self._next += 1
        return q

    def status(self) -> str:
        if self._next == len(self._poses):
            return f"{self.name}: all {len(self._poses)} poses shown"
        return f"{self.name}: ball in socket {self._poses[self._next][0]}, pose {self._next + 1} of {len(self._poses)}"

    def close(self) -> None:
        pass


def replay_operator(folder: Path, joints: Sequence[str]) -> ScriptedOperator:
    """An operator who shows the configurations of a recorded placement folder again, socket by
    socket in file order: a rehearsal of the recorder on real data, without the robot."""
    recording = read_socket_folder(folder, tuple(joints))
    script = [recording.q[recording.socket == k] for k in range(int(recording.socket.max()) + 1)]
    return ScriptedOperator(joints, script, f"replay of {folder}")


SIM_POSES = 20  # per socket
SIM_TRANSLATION = 1e-3  # m, largest error of a joint origin of the simulated robot
SIM_ROTATION = float(np.deg2rad(0.5))  # rad, likewise


def simulated_operator(robot: Path, link: str, distance: float | None, *, n: int = SIM_POSES, seed: int = 0) -> ScriptedOperator:
    """An operator at a simulated robot whose joint origins differ from the URDF's (up to
    SIM_TRANSLATION / SIM_ROTATION, like a real arm's), seating the ball n times in each of the
    two sockets, `distance` apart (default: the MUKCa plate's), of the first default plate
    placement. The configurations hold the true ball center in its socket exactly, so the spread
    the recorder shows is the nominal model's error alone, as in `robocal simulate sockets`."""
    from robocal.simulation.perturb import perturb_parameters
    from robocal.simulation.socket_sampling import ball_chain, sample_socket_configurations
    from robocal.simulation.sockets import SOCKET_DISTANCE, default_placements, socket_model

    distance = distance or SOCKET_DISTANCE
    truth = socket_model(robot, link)
    chain = ball_chain(truth, link)
    theta = perturb_parameters(truth, seed=seed, translation=SIM_TRANSLATION, rotation=SIM_ROTATION)
    placement = default_placements(chain, truth.nominal, distance=distance, seed=seed)[0]
    rng = np.random.default_rng(seed)
    script = [sample_socket_configurations(truth, theta, link, center, n, rng) for center in placement.sockets(distance)]
    return ScriptedOperator(chain.joints, script, f"simulated operator (plate '{placement.name}', seed {seed})")


def open_source(kind: str, robot: Path, link: str, joints: tuple[str, ...], *, replay: Path | None, topic: str, distance: float | None) -> JointSource:
    """The source `--source` names, for `joints`, the chain of `link`; the ROS and simulation
    modules load only when chosen."""
    if kind == "replay":
        if replay is None:
            raise RobocalError("the replay source needs a socket folder to replay (--replay)")
        return replay_operator(replay, joints)
    if kind == "sim":
        return simulated_operator(robot, link, distance)
    from robocal.record.ros2 import Ros2Source

    return Ros2Source(joints, topic)
