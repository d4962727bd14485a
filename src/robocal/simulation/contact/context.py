"""What a contact search works with: its options, the models and scene of one run, and the joints
and obstacle masks of one body pair."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax
import numpy as np

from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.simulation.contact.scene import Scene

DEFAULT_CONTACT_STIFFNESS = 1.0e4  # N/m, fingertip pad in series with the drive compliance
DEFAULT_TORQUE_THRESHOLD = 0.1  # Nm, as on the DLR-Hand II
DEFAULT_COLLISION_MARGIN = -0.005  # m, nominal signed distance of a planned contact (negative: overlap)
DEFAULT_POOL_SIZE = 20000
DEFAULT_START_CLEARANCE = 0.015  # m, nominal distance of the designated bodies at a drive's start
DEFAULT_PARKING_CLEARANCE = 0.005  # m, nominal distance of the designated bodies to parked bodies
DEFAULT_MAX_DRIVE = 1.5  # drive parameter at the end of the extended drive

GRID = 76  # s samples on [0, max_drive] that bracket the first contact (spacing 0.02)
BATCH = 64  # drives simulated per batch (fixed, so every batch reuses the compiled functions)

Detection = Literal["geometric", "torque"]
Drive = tuple[np.ndarray, np.ndarray, bool]  # start, planned end (s = 1), does body a move?


@dataclass(frozen=True)
class SearchOptions:
    """The settings of a contact search (their meaning: `robocal.simulation.contact.search`)."""

    detection: Detection = "geometric"
    joint_noise: float = 0.0
    torque_threshold: float = DEFAULT_TORQUE_THRESHOLD
    contact_stiffness: float = DEFAULT_CONTACT_STIFFNESS
    collision_margin: float = DEFAULT_COLLISION_MARGIN
    pool_size: int = DEFAULT_POOL_SIZE
    start_clearance: float = DEFAULT_START_CLEARANCE
    parking_clearance: float = DEFAULT_PARKING_CLEARANCE
    max_drive: float = DEFAULT_MAX_DRIVE


def joint_limits(tree: KinematicTree, names, unlimited: float) -> np.ndarray:
    """(len(names), 2) lower and upper limits of the joints, +-unlimited where a joint has none."""
    return np.array([tree.joint(n).limits or (-unlimited, unlimited) for n in names], dtype=float).reshape(-1, 2)


@dataclass(frozen=True)
class Search:
    """One run: the planning (nominal) and touching (true) models, their scene, the actuated
    joints' limits and the grid of drive parameters that brackets a first contact."""

    nominal: RobotModel
    theta_nominal: np.ndarray
    truth: RobotModel
    theta_true: np.ndarray
    scene: Scene
    options: SearchOptions
    limits: np.ndarray  # (n_actuated, 2)
    lower: jax.Array  # limits[:, 0] and limits[:, 1], as the compiled kernels take them
    upper: jax.Array
    grid: np.ndarray  # (GRID,) drive parameters on [0, max_drive]

    @property
    def tree(self) -> KinematicTree:
        return self.nominal.tree

    @property
    def n_act(self) -> int:
        return len(self.tree.actuated)

    @property
    def n_pairs(self) -> int:
        return len(self.scene.pairs)

    def clip(self, q: np.ndarray) -> np.ndarray:
        """q held at the joint limits."""
        return np.clip(q, self.limits[:, 0], self.limits[:, 1])


@dataclass(frozen=True)
class BodyPair:
    """One body pair (a, b) of a search: the actuated columns that move each body and those of
    the parked chains, the parked values, and the scene's body pairs a drive must keep apart
    (`robocal.simulation.contact.pair.obstacles`)."""

    a: str
    b: str
    p: int  # index of (a, b) in scene.pairs
    ia: int  # indices of a and b in scene.links
    ib: int
    cols: dict[str, np.ndarray]  # body -> actuated columns that move it
    other_cols: np.ndarray  # actuated columns of the parked chains
    strict: np.ndarray  # (n_pairs,) masks: a designated body against a parked body ...
    loose: np.ndarray  # ... and against any other body
    parked: np.ndarray  # (len(other_cols),) values of the parked chains' joints
    n_act: int  # actuated joints of the tree

    @property
    def pair_cols(self) -> np.ndarray:
        return np.concatenate([self.cols[self.a], self.cols[self.b]])

    @property
    def watched(self) -> np.ndarray:
        return self.strict | self.loose

    def combine(self, q_a: np.ndarray, q_b: np.ndarray) -> np.ndarray:
        """Configurations with a's chain from q_a, b's from q_b and the other chains parked."""
        q = np.zeros((len(q_a), self.n_act))
        q[:, self.cols[self.a]], q[:, self.cols[self.b]], q[:, self.other_cols] = q_a[:, self.cols[self.a]], q_b[:, self.cols[self.b]], self.parked
        return q
