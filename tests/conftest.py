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


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    """Drop JAX's compiled executables after each test module. Every executable holds memory
    mappings; over the whole suite one process would pass the kernel's limit (vm.max_map_count,
    65530 by default) and XLA aborts in the middle of a compilation."""
    yield
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
