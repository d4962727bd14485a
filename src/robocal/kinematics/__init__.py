"""Kinematic trees (from URDF or DH tables) and their differentiable forward kinematics."""

from robocal.kinematics.tree import Joint, KinematicTree, Origin

__all__ = ["Joint", "KinematicTree", "Origin"]
