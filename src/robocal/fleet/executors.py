"""Where `fleet run` computes its chunks of sessions: in this process, in a pool of worker
processes (concurrent.futures, spawned), or on Ray. Each runs the same job code
(`robocal.fleet.engine.run_chunk`); workers read their sessions from the store by its URL and
hand the results back, and only the engine's process writes to the store.

A worker process keeps what it compiled (one template problem per structure,
robocal.fleet.batch) from one chunk to the next, and uses the JAX compilation cache folder of
the process that started it. Ray is imported only for `--engine ray`; without a running Ray
(RAY_ADDRESS unset and none initialized) a local instance with `workers` CPUs is started and
stopped again. A worker that dies (killed, out of memory) ends the run with an error; its jobs
stay `running` and go back to the queue on the next run.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context
from typing import Any

from sqlalchemy import Engine

from robocal.errors import RobocalError
from robocal.fleet.work import Outcome, Work, run_chunk
from robocal.workers import end_with_parent

KINDS = ("inprocess", "pool", "ray")
RAY_MISSING = "--engine ray needs Ray, which is not installed: pip install 'robocal[ray]'"
_stores: dict[str, Engine] = {}  # in a worker: the store's engine per URL, opened once


def _compilation_cache() -> str | None:
    """This process's persistent compilation cache folder, if JAX is loaded and one is set."""
    jax = sys.modules.get("jax")
    return jax.config.jax_compilation_cache_dir if jax is not None else None


def remote_chunk(url: str, session_ids: list[int], work: Work | None, cache: str | None) -> list[Outcome]:
    """`run_chunk` in a worker process, on the store at `url` (opened on the first chunk)."""
    if url not in _stores:
        from robocal.fleet.store import open_store

        if cache is not None:
            os.environ["ROBOCAL_JAX_CACHE"] = cache
            from robocal.runtime import enable_compilation_cache

            enable_compilation_cache()
        _stores[url] = open_store(url)
    return run_chunk(_stores[url], session_ids, work)


class InProcess:
    """Each chunk computed when it is submitted, in this process."""

    depth = 1  # chunks in flight

    def __init__(self, engine: Engine):
        self.engine, self.keys = engine, itertools.count()
        self.done: list[tuple[int, list[Outcome]]] = []

    def submit(self, session_ids: list[int], work: Work | None) -> int:
        key = next(self.keys)
        self.done.append((key, run_chunk(self.engine, session_ids, work)))
        return key

    def wait(self) -> list[tuple[int, list[Outcome]]]:
        done, self.done = self.done, []
        return done

    def close(self) -> None:
        pass


class Pool:
    """`workers` spawned processes (the parent may hold JAX's threads), two chunks in flight per
    worker; they end with the run, however it ends (`end_with_parent`)."""

    def __init__(self, engine: Engine, workers: int):
        self.url, self.cache, self.depth = engine.url.render_as_string(hide_password=False), _compilation_cache(), 2 * workers
        self.executor = ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=end_with_parent)
        self.futures: dict[int, Future] = {}
        self.keys = itertools.count()

    def submit(self, session_ids: list[int], work: Work | None) -> int:
        key = next(self.keys)
        self.futures[key] = self.executor.submit(remote_chunk, self.url, session_ids, work, self.cache)
        return key

    def wait(self) -> list[tuple[int, list[Outcome]]]:
        done, _ = wait_futures(list(self.futures.values()), return_when=FIRST_COMPLETED)
        finished = [key for key, future in self.futures.items() if future in done]
        try:
            return [(key, self.futures.pop(key).result()) for key in finished]
        except BrokenProcessPool:
            raise RobocalError("a worker process died; its jobs go back to the queue when `robocal fleet run` runs again") from None

    def close(self) -> None:
        self.executor.shutdown(cancel_futures=True)


class Ray:
    """Ray tasks of one CPU each, two in flight per worker; a local Ray started here is stopped in `close`."""

    def __init__(self, engine: Engine, workers: int):
        try:
            import ray
        except ImportError:
            raise RobocalError(RAY_MISSING) from None
        self.ray, self.started = ray, not ray.is_initialized()
        if self.started:
            if os.environ.get("RAY_ADDRESS"):
                ray.init(log_to_driver=False, logging_level=logging.ERROR)
            else:
                ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        self.task = ray.remote(num_cpus=1, max_retries=0)(remote_chunk)
        self.url, self.cache, self.depth = engine.url.render_as_string(hide_password=False), _compilation_cache(), 2 * workers
        self.refs: dict[int, Any] = {}  # ray.ObjectRef
        self.keys = itertools.count()

    def submit(self, session_ids: list[int], work: Work | None) -> int:
        key = next(self.keys)
        self.refs[key] = self.task.remote(self.url, session_ids, work, self.cache)
        return key

    def wait(self) -> list[tuple[int, list[Outcome]]]:
        ready, _ = self.ray.wait(list(self.refs.values()), num_returns=1)
        finished = [key for key, ref in self.refs.items() if ref in ready]
        try:
            return [(key, self.ray.get(self.refs.pop(key))) for key in finished]
        except self.ray.exceptions.WorkerCrashedError:
            raise RobocalError("a Ray worker died; its jobs go back to the queue when `robocal fleet run` runs again") from None

    def close(self) -> None:
        for ref in self.refs.values():
            self.ray.cancel(ref, force=True)
        if self.started:
            self.ray.shutdown()


@contextmanager
def executor(kind: str, engine: Engine, workers: int) -> Iterator[InProcess | Pool | Ray]:
    """The executor of `kind` (KINDS), closed when the block ends."""
    if kind not in KINDS:
        raise RobocalError(f"unknown engine '{kind}': one of {', '.join(KINDS)}")
    if workers < 1:
        raise RobocalError(f"--workers {workers}: at least 1")
    ex: InProcess | Pool | Ray = InProcess(engine) if kind == "inprocess" else Pool(engine, workers) if kind == "pool" else Ray(engine, workers)
    try:
        yield ex
    finally:
        ex.close()
