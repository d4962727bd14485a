"""Process-wide JAX settings for the command line: a persistent compilation cache, so that a
second run of the same problem loads compiled solvers from disk instead of recompiling."""

from __future__ import annotations

import os
from pathlib import Path

import jax


def enable_compilation_cache() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "robocal" / "jax"
    path = Path(os.environ.get("ROBOCAL_JAX_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Every executable, however quick to compile: a warm run then compiles nothing (the many
    # small ones together cost seconds, and reading one back takes about a millisecond).
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
