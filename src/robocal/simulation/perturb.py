"""A seeded "true robot": the nominal parameters plus bounded random errors."""

from __future__ import annotations

import numpy as np

from robocal.kinematics.model import RobotModel

DEFAULT_TRANSLATION = 0.005  # m
DEFAULT_ROTATION = np.deg2rad(5.0)  # rad
DEFAULT_JOINT_OFFSET = np.deg2rad(5.0)  # rad
DEFAULT_GAIN = 0.001  # joint units per raw sensor unit (rad/count): 10 % of a data glove's gain


def perturb_parameters(
    robot: RobotModel,
    seed: int = 0,
    *,
    translation: float = DEFAULT_TRANSLATION,
    rotation: float = DEFAULT_ROTATION,
    joint_offset: float = DEFAULT_JOINT_OFFSET,
    gain: float = DEFAULT_GAIN,
) -> np.ndarray:
    """theta_true = nominal + u, u_j ~ U(-h_k, h_k) with the half-width h_k of parameter j's kind.

    Kinds (see `robocal.parameters`): translation (m), rotation (rad), joint_offset (rad), gain
    (joint units per raw unit, of joint sensors).
    """
    half = {"translation": translation, "rotation": rotation, "joint_offset": joint_offset, "gain": gain}
    widths = np.array([half[p.kind] for p in robot.parameters], dtype=float)
    return robot.nominal + np.random.default_rng(seed).uniform(-widths, widths)
