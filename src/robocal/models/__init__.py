"""The model files that ship with robocal (DH tables, contact shapes, glove layouts, mappings)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def packaged(name: str) -> Path:
    """Path of the packaged model file `name`, e.g. `packaged("human_hand.yaml")`."""
    return Path(str(resources.files(__name__).joinpath(name)))
