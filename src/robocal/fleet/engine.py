"""The engine: claim queued jobs from the store, calibrate their sessions with the core, store
each result with its job's end.

Jobs are claimed in chunks (queued -> running, in one transaction) and finished in one
transaction per chunk (result rows and done / failed marks together), always by this process:
workers, where there are any, only read sessions and compute. A run killed at any point leaves
each job either finished with exactly one result or `running` without one, and the next run
puts those back in the queue, so nothing is lost or done twice, whatever the executor
(robocal.fleet.executors: in this process, a process pool, Ray). The job code is the same for
all of them (robocal.fleet.work).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sqlalchemy import Engine

from robocal.fleet.executors import executor
from robocal.fleet.store.jobs import claim_many, counts, finish_many, requeue_interrupted
from robocal.fleet.store.models import Result
from robocal.fleet.work import Work, calibrate_session

__all__ = ["BATCH", "calibrate_session", "run"]
BATCH = 256  # sessions per chunk, the most solved in one vectorized call


def run(
    engine: Engine,
    progress: Callable[[int, str], None] | None = None,
    work: Work | None = None,
    *,
    kind: str = "inprocess",
    workers: int = 1,
    batch: int = BATCH,
) -> dict[str, int]:
    """Run every queued job (jobs a killed run left `running` first go back to the queue).

    `work(engine, session_id)`: the job's code, one session at a time; None: the core's
    calibration, `batch` sessions per chunk grouped by structure (0: one at a time, each
    compiled on its own). `kind`: inprocess | pool | ray, with `workers` processes (the chunks
    are then sized so that every worker gets one). Returns {"done": n, "failed": n} of this run;
    `progress(session_id, status)` after each job."""
    requeue_interrupted(engine)
    if work is None and batch == 0:
        work = calibrate_session
    size = 1 if work is not None else batch
    if kind != "inprocess":
        size = max(1, min(size, math.ceil(counts(engine).get("queued", 0) / workers)))
    tally = {"done": 0, "failed": 0}
    with executor(kind, engine, workers) as ex:
        pending: dict[int, list[tuple[int, int]]] = {}
        while True:
            while len(pending) < ex.depth and (claimed := claim_many(engine, size)):
                pending[ex.submit([session for _, session in claimed], work)] = claimed
            if not pending:
                return tally
            for key, outcomes in ex.wait():
                jobs = dict((session, job) for job, session in pending.pop(key))
                finish_many(engine, [(jobs[s], None if cols is None else Result(**cols), error) for s, cols, error in outcomes])
                for session, _, error in outcomes:
                    status = "done" if error is None else "failed"
                    tally[status] += 1
                    if progress is not None:
                        progress(session, status)
