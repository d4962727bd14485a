"""A robot model file, told by its extension: a URDF or a DH table."""

from __future__ import annotations

from pathlib import Path

from robocal.kinematics.dh import load_dh
from robocal.kinematics.tree import KinematicTree
from robocal.kinematics.urdf import load_urdf


def load_robot(path: Path) -> KinematicTree:
    """A URDF (.urdf, .xml) or a DH table (.yaml, .yml)."""
    path = Path(path)
    if path.suffix in (".yaml", ".yml"):
        return load_dh(path)
    return load_urdf(path)
