"""Task-space error: how wrong a model's relative fingertip positions are, against a true model.

The task function of a hand with reference tip r and other tips f is t_f(q) = p_f(q) - p_r(q)
(root frame; `robocal.measurements.task.task_vectors`). The error of a model (theta) against the
truth (theta_true) at configuration q is, per tip f != r,

    e_f(q) = | t_f(model, theta, q) - t_f(truth, theta_true, q) |   (m).

A translation shared by every tip changes no t_f, so the error measures only what in-hand
manipulation depends on. Only the FK of the tip links enters: the two models
may come from different files and parameterizations (a calibrated URDF against a true DH table),
as long as the joints that move the tips have the same names.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.measurements.task import task_vectors
from robocal.simulation.sampling import batch_link_poses


def joint_columns(q: np.ndarray, source: KinematicTree, target: KinematicTree, links: Sequence[str]) -> np.ndarray:
    """q (n, len(source.actuated)) as target's configuration vectors, matched by joint name.

    Target joints that move none of `links` and are absent from source are 0."""
    for name in target.actuated_for(links):
        if name not in source.actuated:
            raise RobocalError(
                f"joint '{name}' of {target.source or target.name} moves {', '.join(links)} but is not an actuated joint of {source.source or source.name}"
            )
    out = np.zeros((len(q), len(target.actuated)))
    for j, name in enumerate(target.actuated):
        if name in source.actuated:
            out[:, j] = q[:, source.actuated.index(name)]
    return out


def task_errors(
    model: RobotModel,
    theta: np.ndarray,
    truth: RobotModel,
    theta_true: np.ndarray,
    q: np.ndarray,
    reference: str,
    tips: Sequence[str],
) -> np.ndarray:
    """(n, F) task errors e_f(q_i) in m for the F tips other than `reference`.

    q: (n, len(model.tree.actuated)) in the model's joint order (mapped onto the truth by name)."""
    predicted, true = task_point_pairs(model, theta, truth, theta_true, q, reference, tips)
    return np.linalg.norm(predicted - true, axis=-1)


def task_point_pairs(
    model: RobotModel,
    theta: np.ndarray,
    truth: RobotModel,
    theta_true: np.ndarray,
    q: np.ndarray,
    reference: str,
    tips: Sequence[str],
) -> tuple[np.ndarray, np.ndarray]:
    """(the model's, the truth's) task points (n, F, 3): the F tips other than `reference`
    relative to it, in the root frame, at the configurations q (as in `task_errors`)."""
    others = tuple(tip for tip in dict.fromkeys(tips) if tip != reference)
    if not others:
        raise RobocalError(f"the task needs a tip other than the reference '{reference}'")
    links = (reference, *others)
    for m in (model, truth):
        missing = [link for link in links if not m.tree.has_link(link)]
        if missing:
            raise RobocalError(f"{m.tree.source or m.tree.name}: no link named {', '.join(missing)}")
    q = np.asarray(q, dtype=float)
    predicted = task_vectors(batch_link_poses(model, theta, q, links), len(others))
    true = task_vectors(batch_link_poses(truth, theta_true, joint_columns(q, model.tree, truth.tree, links), links), len(others))
    return predicted, true


@partial(jax.jit, static_argnames=("robot", "links"))
def _task_jacobians(theta, q, robot: RobotModel, links: tuple[str, ...]):
    def task(th, qi):
        return task_vectors(robot.link_poses(th, qi, links)[None], len(links) - 1)[0]

    return jax.vmap(jax.jacfwd(task), in_axes=(None, 0))(theta, q)


def task_jacobians(model: RobotModel, theta: np.ndarray, q: np.ndarray, reference: str, tips: Sequence[str]) -> np.ndarray:
    """(n, F, 3, len(theta)): derivative of each task vector t_f(q_i) (tips f != reference) with
    respect to the model's parameters, in m per parameter unit."""
    links = (reference, *(tip for tip in dict.fromkeys(tips) if tip != reference))
    return np.asarray(_task_jacobians(jnp.asarray(theta, dtype=float), jnp.asarray(q, dtype=float), model, links))
