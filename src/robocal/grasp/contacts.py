"""Hand-object contacts and the linear maps of a grasp built from them.

A contact is a point on the object surface touched by one hand link, with the object's outward
surface normal there, both in the palm frame. From a set of contacts at joint configuration q:

- the grasp matrix G (6 x 3N) maps the stacked contact forces f (hand on object) to the wrench
  they exert on the object, force and moment about the object reference point c:
  G_i = [I; [p_i - c]x];
- the hand Jacobian J (3N x L) maps actuated joint velocities to the contact point velocities on
  the hand links (mimic joints folded into their drivers); palm contacts have zero rows.

Then tau = J^T f are the joint torques that hold the forces, and G^T dx the contact point
displacements of a small object twist dx (translation, rotation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robocal.grasp.hand import Hand
from robocal.grasp.programs import GraspModel


@dataclass(frozen=True)
class Contact:
    """One hand-object contact, in the palm frame."""

    point: np.ndarray  # (3,) on the object surface, m
    normal: np.ndarray  # (3,) unit outward object normal
    link: str  # the hand link touching it (the palm's root link for palm contacts)


def skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def grasp_matrix(points: np.ndarray, center: np.ndarray) -> np.ndarray:
    """(6, 3N) wrench on the object (moment about `center`) per stacked contact force."""
    blocks = [np.vstack([np.eye(3), skew(p - center)]) for p in np.asarray(points, dtype=float)]
    return np.hstack(blocks) if blocks else np.zeros((6, 0))


def hand_jacobian(hand: Hand, q: np.ndarray, contacts: Sequence[Contact]) -> np.ndarray:
    """(3N, L) velocity of each contact point, taken as fixed to its link, per joint velocity."""
    poses = hand.link_poses(q)
    rows = [hand.point_jacobian(q, c.link, c.point, poses) for c in contacts]
    return np.vstack(rows) if rows else np.zeros((0, len(hand.joints)))


def grasp_model(hand: Hand, q: np.ndarray, contacts: Sequence[Contact], center: np.ndarray, **constants) -> GraspModel:
    """The linearized grasp at configuration q for an object whose reference point is `center`;
    `constants` are GraspModel's mu, stiffness and kp."""
    tips = {link: k for k, link in enumerate(hand.tips)}
    return GraspModel(
        G=grasp_matrix(np.array([c.point for c in contacts]).reshape(-1, 3), np.asarray(center, dtype=float)),
        J=hand_jacobian(hand, q, contacts),
        normals=np.array([c.normal for c in contacts], dtype=float).reshape(-1, 3),
        tip_finger=np.array([tips.get(c.link, -1) for c in contacts], dtype=int),
        **constants,
    )
