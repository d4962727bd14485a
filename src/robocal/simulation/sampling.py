"""Random joint configurations and batched forward kinematics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree


def sample_configurations(tree: KinematicTree, n: int, seed: int) -> np.ndarray:
    """(n, n_actuated) joint values drawn uniformly within the joint limits (tree.actuated order).

    Revolute and continuous joints without limits are drawn from [-pi, pi].
    """
    bounds = []
    for name in tree.actuated:
        joint = tree.joint(name)
        if joint.limits is None and joint.type == "prismatic":
            raise RobocalError(f"prismatic joint '{name}' has no limits to sample within")
        bounds.append(joint.limits or (-np.pi, np.pi))
    lower, upper = np.array(bounds, dtype=float).reshape(-1, 2).T
    return np.random.default_rng(seed).uniform(lower, upper, size=(n, len(lower)))


def batch_link_poses(robot: RobotModel, theta: np.ndarray, q: np.ndarray, links: Sequence[str]) -> np.ndarray:
    """Poses (n, len(links), 4, 4) of the links in the root frame (`RobotModel.batch_link_poses`:
    jitted once per (robot, links, row bucket) and vectorized over the n rows of q)."""
    return np.asarray(robot.batch_link_poses(np.asarray(theta, dtype=float), np.asarray(q, dtype=float), links))


def position_errors(model: RobotModel, theta: np.ndarray, reference: RobotModel, theta_ref: np.ndarray, q: np.ndarray, links: Sequence[str]) -> np.ndarray:
    """|p_model(q) - p_reference(q)| (n, len(links)) for the origins of the links, in m.

    Comparing predicted positions rather than parameters is invariant to the parameter
    combinations the data cannot tell apart (any two models with the same FK score the same).
    """
    predicted = batch_link_poses(model, theta, q, links)[..., :3, 3]
    return np.linalg.norm(predicted - batch_link_poses(reference, theta_ref, q, links)[..., :3, 3], axis=-1)
