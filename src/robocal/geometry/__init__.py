"""Exact, differentiable signed distances between convex shapes attached to links.

Closed forms (JAX, float64) for spheres, capsules and boxes; convex meshes through coal, which
is imported only when a mesh name is first used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from robocal.geometry.distance import Primitive, signed_distance
from robocal.geometry.primitives import Box, Capsule, Sphere, apply_pose

_MESH_NAMES = ("ConvexMesh", "Contact", "mesh_closest_points", "mesh_signed_distance")

__all__ = ["Box", "Capsule", "Primitive", "Sphere", "apply_pose", "signed_distance", *_MESH_NAMES]


def __getattr__(name: str) -> Any:
    if name in _MESH_NAMES:
        return getattr(import_module("robocal.geometry.mesh"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
