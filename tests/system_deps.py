"""System packages some tests need (PostgreSQL's server, a browser): where one is missing the test
skips, saying what to install, unless ROBOCAL_REQUIRE_SYSTEM_DEPS=1 (set by .ci/run), where it fails."""

from __future__ import annotations

import os

import pytest


def require(found, what: str, install: str):
    """`found` when it is truthy; otherwise skip (or fail under ROBOCAL_REQUIRE_SYSTEM_DEPS=1) naming the package."""
    if found:
        return found
    message = f"{what} not found: apt-get install {install}"
    if os.environ.get("ROBOCAL_REQUIRE_SYSTEM_DEPS") == "1":
        pytest.fail(message + " (ROBOCAL_REQUIRE_SYSTEM_DEPS=1)")
    pytest.skip(message)
