"""Shared fixtures: the ../shared folder (tests that need it are skipped when it is absent)."""

from pathlib import Path

import pytest

import robocal  # noqa: F401  (switches JAX to float64 before any test creates arrays)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
pytest_plugins = ["tests.databases"]  # the store's SQLite / PostgreSQL fixtures, for every folder


def shared_path(relative: str) -> Path:
    """Path into ../shared; skips the calling test when the file is not there."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """tests/validation first: its files (published figures reproduced on real data, whole
    studies) are the suite's slowest, and `-n 2 --dist loadfile` hands out files in collection
    order, so behind them the two workers finish on small files together instead of one waiting
    for the other's last long file. The order within the folders is kept."""
    items.sort(key=lambda item: item.path.parent.name != "validation")


@pytest.fixture(autouse=True, scope="session")
def _compilation_cache(tmp_path_factory):
    """One persistent compilation cache for the run, empty at its start (as on a clean CI
    machine) and shared by the run's pytest-xdist workers and the `robocal` subprocesses: problems
    of the same structure (the hands of a study, the folds of a cross-validation, the same robot
    in two test files) compile once, not once per Problem or worker. The workers' temporary
    folders lie in the run's own; a worker that reads an entry while another still writes it gets
    JAX's warning and compiles that one itself."""
    import os

    from robocal.runtime import enable_compilation_cache

    run = tmp_path_factory.getbasetemp()
    folder = (run.parent if "PYTEST_XDIST_WORKER" in os.environ else run) / "jax_cache"
    folder.mkdir(exist_ok=True)
    os.environ["ROBOCAL_JAX_CACHE"] = str(folder)
    enable_compilation_cache()


def _mappings() -> tuple[int, int] | None:
    """(memory mappings of this process, the kernel's limit), or None where /proc cannot tell."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            count = sum(1 for _ in maps)
        return count, int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return None


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    """Drop JAX's compiled executables after a test module once the process holds half the
    memory mappings the kernel allows. Every executable holds mappings; over the whole suite one
    process would pass the limit (vm.max_map_count, 65530 by default) and XLA aborts in the
    middle of a compilation. Below half of it they are kept: the next modules reuse what they
    share (the primitives of eager code, models cached across modules) instead of compiling it
    again. Where the count is unknown, every module clears."""
    yield
    import gc

    import jax

    mappings = _mappings()
    if mappings is None or mappings[0] > mappings[1] // 2:
        jax.clear_caches()
        gc.collect()
