"""Worker processes for the long simulations (the grasp evaluation, the learned grasp dataset):
one map over items whose results come back as they finish, or in this process for one worker."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from multiprocessing import get_context
from typing import Any


class Inline:
    """The pool's interface, computing in this process (one worker: no spawn, easy to debug)."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        return (fn(item) for item in items)


class Pool:
    """Worker processes (spawned: the parent may hold JAX's threads), results as they come."""

    def __init__(self, workers: int):
        self.executor = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        return (future.result() for future in as_completed([self.executor.submit(fn, item) for item in items]))


@contextmanager
def worker_pool(workers: int) -> Iterator[Inline | Pool]:
    """`Inline` for one worker, else a `Pool` whose pending work is cancelled when the block ends."""
    if workers == 1:
        yield Inline()
        return
    pool = Pool(workers)
    try:
        yield pool
    finally:
        pool.executor.shutdown(cancel_futures=True)
