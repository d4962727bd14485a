"""Worker processes for the long simulations (the grasp evaluation, the learned grasp dataset):
one map over items whose results come back as they finish, or in this process for one worker.

Stopping is part of the design. The workers ignore Ctrl-C; the parent takes it only between
waits (a Ctrl-C that lands inside the executor's own locks can leave them half released and the
pool deadlocked: the process then never exits), and ending the block with an error terminates
the workers, so an interrupted run stops at once and leaves none behind. A parent that ends
without a shutdown (`kill`, SIGKILL, the OOM killer) takes its workers with it: each watches its
parent (`end_with_parent`). A worker that dies (killed from outside, out of memory) is an error
naming that, not a bug.

The workers' BLAS libraries run one thread each (unless the environment already says how many):
the workers fill the cores, and the small matrices of a simulation gain nothing from threads
that only contend for them.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context, parent_process
from multiprocessing.process import BaseProcess
from typing import Any

from robocal.errors import RobocalError

POLL = 0.2  # s: how often the parent looks for a Ctrl-C while it waits for results
THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # set to 1 for the workers


class Inline:
    """The pool's interface, computing in this process (one worker: no spawn, easy to debug)."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        return (fn(item) for item in items)


def end_with_parent() -> None:
    """In a process started by multiprocessing (a pool's initializer): exit as soon as the parent
    process has ended, however it ended. A daemon thread waits on the parent's sentinel, which
    the operating system readies when the parent goes."""
    parent = parent_process()
    if parent is not None:
        threading.Thread(target=_exit_after, args=(parent,), name="end-with-parent", daemon=True).start()


def _exit_after(process: BaseProcess) -> None:
    process.join()
    os._exit(1)


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent()


@contextmanager
def _interrupt_between_waits() -> Iterator[Callable[[], bool]]:
    """Ctrl-C only noted while the block runs (in the main thread); the callable says whether one came."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield lambda: bool(caught)
    finally:
        signal.signal(signal.SIGINT, previous)


class Pool:
    """Worker processes (spawned: the parent may hold JAX's threads), results as they come."""

    def __init__(self, workers: int):
        self.executor = ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_start_worker)

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        pending = {self.executor.submit(fn, item) for item in items}
        with _interrupt_between_waits() as interrupted:
            while pending:
                done, pending = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        yield future.result()
                    except BrokenProcessPool as exc:
                        raise RobocalError("a worker process ended abruptly (killed from outside, or out of memory); its work is lost") from exc
                if interrupted():
                    raise KeyboardInterrupt

    def terminate(self) -> None:
        """End the workers now (`ProcessPoolExecutor.terminate_workers` from Python 3.14 on)."""
        for process in list(getattr(self.executor, "_processes", {}).values()):
            process.terminate()


@contextmanager
def worker_pool(workers: int) -> Iterator[Inline | Pool]:
    """`Inline` for one worker, else a `Pool` whose pending work is cancelled when the block
    ends, and whose workers are terminated when it ends with an error or a Ctrl-C."""
    if workers == 1:
        yield Inline()
        return
    added = [name for name in THREADS if name not in os.environ]  # the workers start within the block and inherit them
    os.environ.update(dict.fromkeys(added, "1"))
    pool = Pool(workers)
    try:
        yield pool
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.executor.shutdown(cancel_futures=True)
        for name in added:
            os.environ.pop(name, None)
