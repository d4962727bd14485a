"""Job workers: threads of the server process that claim queued jobs from the store in chunks and
run them with the job code of `robocal fleet run` (robocal.fleet.work.run_chunk: the sessions of
one structure calibrated together, with shared compiled code), then store the results with the
jobs' ends in one transaction (robocal.fleet.engine.finish_chunk). Claims are under the service's
lease, which a heartbeat thread renews (robocal.fleet.store.jobs): on PostgreSQL several workers,
services and `fleet run` processes share a store without taking a job twice (SELECT ... FOR UPDATE
SKIP LOCKED); on SQLite one worker under the service's write lock. Jobs a killed server (or run)
left running go back to the queue when their lease expires, and a worker takes them over."""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager

from sqlalchemy import Engine

from robocal.fleet.engine import BATCH, chunk_size, finish_chunk
from robocal.fleet.store.jobs import Lease, claim_many
from robocal.fleet.work import Outcome, Work, run_chunk

log = logging.getLogger("robocal.service")
POLL = 0.2  # s between looks at an empty queue


def outcomes(engine: Engine, session_ids: list[int], work: Work | None) -> list[Outcome]:
    """`run_chunk`, where a bug (an exception other than a RobocalError) must not stop the service:
    the chunk's sessions are then run one by one, and the bug is recorded with each session that
    raises it and logged in full."""
    try:
        return run_chunk(engine, session_ids, work)
    except Exception as exc:
        if len(session_ids) > 1:
            return [outcome for session_id in session_ids for outcome in outcomes(engine, [session_id], work)]
        log.exception("session %s", session_ids[0])
        return [(session_ids[0], None, f"internal error: {type(exc).__name__}: {exc}")]


def work_loop(engine: Engine, lock: AbstractContextManager, stop: threading.Event, work: Work | None, lease: Lease, workers: int) -> None:
    """Claim, run and finish chunks of jobs until `stop` is set; a job's error is stored with it, never fatal."""
    while not stop.is_set():
        with lock:
            claimed = claim_many(engine, 1 if work is not None else chunk_size(engine, BATCH, workers), lease)
        if not claimed:
            stop.wait(POLL)
            continue
        done = outcomes(engine, [session for _, session in claimed], work)
        with lock:
            finish_chunk(engine, lease, claimed, done)


def start_workers(engine: Engine, lock: AbstractContextManager, stop: threading.Event, count: int, work: Work | None, lease: Lease) -> list[threading.Thread]:
    """Start `count` worker threads and, with any, the lease's heartbeat (none: the queue only fills).
    `work(engine, session_id)`: the job code one session at a time; None: the core's calibration, batched."""
    if count == 0:
        return []
    threads = [threading.Thread(target=work_loop, args=(engine, lock, stop, work, lease, count), name=f"robocal-worker-{k}", daemon=True) for k in range(count)]
    for thread in threads:
        thread.start()
    return threads + [lease.heartbeat(engine, stop)]
