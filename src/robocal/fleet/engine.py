"""The engine: claim queued jobs from the store, calibrate their sessions with the core, store
each result with its job's end.

Jobs are claimed in chunks (queued -> running under this run's lease, in one transaction) and
finished in one transaction per chunk (result rows and done / failed marks together), always by
this process, whose heartbeat keeps the lease while it works: workers, where there are any, only
read sessions and compute. A run killed at any point leaves each job either finished with exactly
one result or `running` without one under a lease that runs out, after which any run (this
one's successor, or another on the same store) puts it back in the queue; the jobs of another live
run are left to it (robocal.fleet.store.jobs). So nothing is lost or done twice, whatever the
executor (robocal.fleet.executors: in this process, a process pool, Ray) and however many runs
share the store. The job code is the same for all of them (robocal.fleet.work). A run that stops
on an exception (a bug, a dead worker, Ctrl-C) puts the jobs it still holds back in the queue on
its way out, so the next run takes them at once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from sqlalchemy import Engine

from robocal.fleet.executors import executor
from robocal.fleet.store.jobs import Lease, claim_many, counts, finish_many, release
from robocal.fleet.store.models import Result
from robocal.fleet.work import Outcome, Work, calibrate_session

__all__ = ["BATCH", "calibrate_session", "chunk_size", "finish_chunk", "run"]
BATCH = 256  # sessions per chunk, the most solved in one vectorized call
log = logging.getLogger("robocal.fleet")


def run(
    engine: Engine,
    progress: Callable[[int, str], None] | None = None,
    work: Work | None = None,
    *,
    kind: str = "inprocess",
    workers: int = 1,
    batch: int = BATCH,
    lease: Lease | None = None,
) -> dict[str, int]:
    """Run every queued job, and every job whose runner's lease expired (a killed run's).

    `work(engine, session_id)`: the job's code, one session at a time; None: the core's
    calibration, `batch` sessions per chunk grouped by structure (0: one at a time, each
    compiled on its own). `kind`: inprocess | pool | ray, with `workers` processes (the chunks
    are then sized so that every worker gets one). `lease`: this run's (default: a new one of
    store.jobs.LEASE seconds). Returns {"done": n, "failed": n} of this run;
    `progress(session_id, status)` after each job."""
    lease = lease or Lease()
    if work is None and batch == 0:
        work = calibrate_session
    size = 1 if work is not None else batch if kind == "inprocess" else chunk_size(engine, batch, workers)
    tally = {"done": 0, "failed": 0}
    try:
        with executor(kind, engine, workers) as ex, lease.kept(engine):
            pending: dict[int, list[tuple[int, int]]] = {}
            while True:
                while len(pending) < ex.depth and (claimed := claim_many(engine, size, lease)):
                    pending[ex.submit([session for _, session in claimed], work)] = claimed
                if not pending:
                    return tally
                for key, outcomes in ex.wait():
                    for session, status in finish_chunk(engine, lease, pending.pop(key), outcomes):
                        tally[status] += 1
                        if progress is not None:
                            progress(session, status)
    except BaseException:
        try:
            release(engine, lease)
        except Exception as exc:  # the store itself failed: the jobs wait for their lease to run out
            log.warning("could not put the jobs of %s back in the queue: %s", lease.owner, exc)
        raise


def chunk_size(engine: Engine, batch: int, workers: int) -> int:
    """Sessions per claim for `workers` working side by side: the queue shared out, at most `batch`."""
    return max(1, min(batch, math.ceil(counts(engine).get("queued", 0) / workers)))


def finish_chunk(engine: Engine, lease: Lease, claimed: list[tuple[int, int]], outcomes: list[Outcome]) -> list[tuple[int, str]]:
    """Store the outcomes of a chunk's claimed (job id, session id) jobs in one transaction;
    [(session id, done | failed)] of those finished (not of those whose lease was lost)."""
    jobs = {session: job for job, session in claimed}
    finished = set(finish_many(engine, lease, [(jobs[s], None if cols is None else Result(**cols), error) for s, cols, error in outcomes]))
    return [(session, "done" if error is None else "failed") for session, _, error in outcomes if jobs[session] in finished]
