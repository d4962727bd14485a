"""Shared fixtures: the ../shared folder (tests that need it are skipped when it is absent)."""

from pathlib import Path

import pytest

import robocal  # noqa: F401  (switches JAX to float64 before any test creates arrays)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(relative: str) -> Path:
    """Path into ../shared; skips the calling test when the file is not there."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path
