"""Teleoperation: a human hand's joint values mapped onto a robot hand (joint space, or the
modified fingertip mapping), with contact warnings and a side-by-side picture."""

from robocal.teleop.config import MappingConfig, default_mapping_path, load_mapping
from robocal.teleop.mapping import FingertipResult, HandMapping

__all__ = ["FingertipResult", "HandMapping", "MappingConfig", "default_mapping_path", "load_mapping"]
