"""Job workers: threads of the server process that claim queued jobs from the store (on PostgreSQL
by SELECT ... FOR UPDATE SKIP LOCKED, so several workers never take the same job; on SQLite one
worker under the service's write lock), calibrate, and store the result with the job's end in one
transaction. Jobs left running by a killed server go back to the queue when the service starts."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

from sqlalchemy import Engine

from robocal.errors import RobocalError
from robocal.fleet.store.jobs import claim, finish, requeue_interrupted

log = logging.getLogger("robocal.service")
POLL = 0.2  # s between looks at an empty queue


def work_loop(engine: Engine, lock: AbstractContextManager, stop: threading.Event, work: Callable) -> None:
    """Claim, run and finish jobs until `stop` is set; a job's error is stored with it, never fatal."""
    while not stop.is_set():
        with lock:
            claimed = claim(engine)
        if claimed is None:
            stop.wait(POLL)
            continue
        job_id, session_id = claimed
        try:
            result, error = work(engine, session_id), None
        except RobocalError as exc:
            result, error = None, str(exc)
        except Exception as exc:  # a bug in one job must not stop the service: recorded with the job, logged in full
            log.exception("job %s (session %s)", job_id, session_id)
            result, error = None, f"internal error: {type(exc).__name__}: {exc}"
        with lock:
            finish(engine, job_id, result, error)


def start_workers(engine: Engine, lock: AbstractContextManager, stop: threading.Event, count: int, work: Callable | None) -> list[threading.Thread]:
    """Requeue interrupted jobs, then start `count` worker threads (none: the queue only fills)."""
    if work is None:
        from robocal.fleet.engine import calibrate_session as work
    if count > 0:
        requeue_interrupted(engine)
    threads = [threading.Thread(target=work_loop, args=(engine, lock, stop, work), name=f"robocal-worker-{k}", daemon=True) for k in range(count)]
    for thread in threads:
        thread.start()
    return threads
