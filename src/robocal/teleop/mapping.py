"""Human hand joint values -> robot hand joint values, two ways (as in the data-glove seed).

- **Joint mapping** (power grasps): each robot joint is an affine function of one human joint,
  clamped to the robot's limits.
- **Modified fingertip mapping** (precision grasps): each human fingertip, relative to its
  finger's human reference frame and scaled by one constant factor, is placed in the robot
  finger's reference frame; the robot finger goes to the closest point it can reach to that
  target (exact inverse kinematics when reachable), starting from its previous posture.

Input: human actuated joint values, in the human tree's `actuated` order or as a dict (what the
glove calibration's `model.joint_values` gives). Output: the robot's actuated joint values in
its tree's `actuated` order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.teleop.chains import TipChains
from robocal.teleop.config import MappingConfig, load_mapping
from robocal.teleop.reach import ClosestReach

REACHED = 1e-4  # m: a target closer than this to the fingertip counts as reached


@dataclass(frozen=True)
class FingertipResult:
    """One frame of the fingertip mapping, per robot finger in mapping order (palm frame, m)."""

    q: np.ndarray  # robot actuated joint values (tree order)
    targets: np.ndarray  # (F, 3) scaled human fingertips
    tips: np.ndarray  # (F, 3) robot fingertips reached
    distance: np.ndarray  # (F,) |tip - target|: 0 where the target is reachable

    @property
    def reached(self) -> np.ndarray:
        return self.distance < REACHED


def _root_pose(model: RobotModel, link: str) -> np.ndarray:
    """Pose of a link fixed to the root (as the mapping file's references are)."""
    return np.asarray(model.link_poses(model.nominal, np.zeros(len(model.tree.actuated)), [link])[0])


class HandMapping:
    """A loaded mapping file with its compiled joint and fingertip mappings.

    `reach_options` go to the fingertip inverse kinematics (`reach.ClosestReach`: seed grid
    spacing, Gauss-Newton steps).
    """

    def __init__(self, config: MappingConfig, **reach_options):
        self.config = config
        human, robot = config.human, config.robot
        self.human_model, self.robot_model = RobotModel(human), RobotModel(robot)
        fingers = config.fingers
        self.fingers = tuple(f.name for f in fingers)
        self.human_tips = TipChains(human, [f.human_tip for f in fingers])
        self.reach = ClosestReach(robot, [f.robot_tip for f in fingers], **reach_options)
        # Fingertip mapping as one affine map per finger of the human tip (root frame):
        # target = R_r (xyz_r + s R (R_h^T (p - t_h) - xyz_h)) + t_r = M p + c.
        linear, constant = [], []
        for f in fingers:
            h, r = _root_pose(self.human_model, f.human_reference), _root_pose(self.robot_model, f.robot_reference)
            m = config.scale * r[:3, :3] @ f.rotation @ h[:3, :3].T
            linear.append(m)
            constant.append(-m @ h[:3, 3] - config.scale * r[:3, :3] @ f.rotation @ f.human_xyz + r[:3, :3] @ f.robot_xyz + r[:3, 3])
        self._linear, self._constant = jnp.asarray(np.array(linear)), jnp.asarray(np.array(constant))
        # Joint mapping: robot joint j = scale_j * human[source_j] + offset_j.
        human_index = {name: i for i, name in enumerate(human.actuated)}
        robot_index = {name: i for i, name in enumerate(robot.actuated)}
        self._source = np.zeros(len(robot.actuated), dtype=int)
        self._scale, self._offset = np.zeros(len(robot.actuated)), np.zeros(len(robot.actuated))
        for f in fingers:
            for joint, source, scale, offset in zip(f.joints, f.sources, f.scales, f.offsets):
                j = robot_index[joint]
                self._source[j], self._scale[j], self._offset[j] = human_index[source], scale, offset
        limits = [robot.joint(name).limits for name in robot.actuated]
        bounds = [limit for limit in limits if limit is not None]
        if len(bounds) != len(limits):  # ClosestReach has checked those of the fingers' joints
            raise RobocalError(f"{robot.name}: the fingertip mapping needs limits on every actuated joint")
        self.lower, self.upper = (np.array([limit[i] for limit in bounds]) for i in (0, 1))
        self._fingertip = jax.jit(self._fingertip_frame)

    @classmethod
    def load(cls, path: str | Path | None = None, **reach_options) -> HandMapping:
        """From a mapping file (default: the packaged human hand -> DLR-Hand II mapping)."""
        return cls(load_mapping(path), **reach_options)

    def human_vector(self, values) -> np.ndarray:
        """Human actuated joint values as a finite vector in tree order, from a vector or a dict."""
        names = self.config.human.actuated
        if isinstance(values, Mapping):
            problems = [
                f"{what} {', '.join(found)}"
                for what, found in (("missing", [n for n in names if n not in values]), ("unknown", [n for n in values if n not in names]))
                if found
            ]
            if problems:
                raise RobocalError("human joint values: " + "; ".join(problems))
            values = [values[n] for n in names]
        q = np.asarray(values, dtype=float)
        if q.shape != (len(names),):
            raise RobocalError(f"human joint values: expected {len(names)} values ({', '.join(names)}), got shape {q.shape}")
        if not np.isfinite(q).all():
            raise RobocalError(f"human joint values: not finite at {', '.join(n for n, v in zip(names, q) if not np.isfinite(v))}")
        return q

    def joint_map(self, human) -> np.ndarray:
        """Joint mapping: robot actuated joint values, clamped to the robot's limits."""
        q = self.human_vector(human)
        return np.clip(self._scale * q[self._source] + self._offset, self.lower, self.upper)

    def targets(self, human_q):
        """Fingertip targets (F, 3) in the robot root frame: the scaled human fingertips."""
        tips = self.human_tips.points(self.human_tips.gather(human_q))
        return jnp.einsum("fij,fj->fi", self._linear, tips) + self._constant

    def _fingertip_frame(self, human_q, previous_q):
        targets = self.targets(human_q)
        chains = self.reach.chains
        x, tips = self.reach.solve(targets, chains.gather(previous_q))
        return chains.scatter(x, previous_q), targets, tips

    def fingertip_map(self, human, previous=None) -> FingertipResult:
        """Modified fingertip mapping of one frame. `previous`: the robot joint values of the
        last frame (the warm start that keeps the motion continuous); the first frame of a
        stream starts from the joint mapping of the same human pose."""
        q_human = self.human_vector(human)
        q_prev = self.joint_map(q_human) if previous is None else np.asarray(previous, dtype=float)
        if q_prev.shape != self.lower.shape or not np.isfinite(q_prev).all():
            raise RobocalError(f"previous robot joint values: expected {len(self.lower)} finite values, got {q_prev}")
        q, targets, tips = (np.asarray(a) for a in self._fingertip(q_human, q_prev))
        return FingertipResult(q, targets, tips, np.linalg.norm(tips - targets, axis=1))
