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


@pytest.fixture(autouse=True, scope="session")
def _compilation_cache(tmp_path_factory):
    """One persistent compilation cache for the run, empty at its start (as on a clean CI
    machine) and shared with the `robocal` subprocesses: problems of the same structure (the
    hands of a study, the folds of a cross-validation) compile once, not once per Problem."""
    import os

    from robocal.runtime import enable_compilation_cache

    os.environ["ROBOCAL_JAX_CACHE"] = str(tmp_path_factory.mktemp("jax_cache"))
    enable_compilation_cache()


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
