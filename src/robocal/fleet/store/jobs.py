"""Job states: queued -> running -> done | failed. A job is claimed (running, attempts + 1) in one
transaction and finished with its result in another, so a run killed at any point leaves either no
result (the job is requeued by the next run) or exactly one (the job is done)."""

from __future__ import annotations

from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store.models import AuditEntry, Job, Result, now


def requeue_interrupted(engine: Engine) -> int:
    """Jobs left `running` by a run that died go back to the queue; returns how many."""
    with DbSession(engine) as db, db.begin():
        ids = list(db.scalars(select(Job.id).where(Job.status == "running")))
        if ids:
            db.execute(update(Job).where(Job.id.in_(ids)).values(status="queued", updated=now()))
            db.add(AuditEntry(action="requeue", detail={"jobs": ids}))
        return len(ids)


def claim(engine: Engine) -> tuple[int, int] | None:
    """The oldest queued job, marked running: (job id, session id), or None when the queue is empty."""
    with DbSession(engine) as db, db.begin():
        job = db.scalar(select(Job).where(Job.status == "queued").order_by(Job.id).limit(1).with_for_update(skip_locked=True))
        if job is None:
            return None
        job.status, job.attempts, job.updated = "running", job.attempts + 1, now()
        return job.id, job.session_id


def claim_many(engine: Engine, limit: int) -> list[tuple[int, int]]:
    """Up to `limit` of the oldest queued jobs, marked running in one transaction as `claim` marks one:
    [(job id, session id)], empty when the queue is."""
    with DbSession(engine) as db, db.begin():
        jobs = list(db.scalars(select(Job).where(Job.status == "queued").order_by(Job.id).limit(limit).with_for_update(skip_locked=True)))
        for job in jobs:
            job.status, job.attempts, job.updated = "running", job.attempts + 1, now()
        return [(job.id, job.session_id) for job in jobs]


def finish(engine: Engine, job_id: int, result: Result | None, error: str | None = None) -> None:
    """Store the job's result and mark it done (or failed with `error`), in one transaction."""
    finish_many(engine, [(job_id, result, error)])


def finish_many(engine: Engine, outcomes: list[tuple[int, Result | None, str | None]]) -> None:
    """`finish` for several jobs, (job id, result, error) each, all in one transaction."""
    with DbSession(engine) as db, db.begin():
        for job_id, result, error in outcomes:
            job = db.get_one(Job, job_id)
            if result is not None:
                db.add(result)
            job.status, job.error, job.updated = ("done" if error is None else "failed"), error, now()
            db.add(AuditEntry(action=job.status, detail={"job": job_id, "session": job.session_id, "error": error}))


def counts(engine: Engine) -> dict[str, int]:
    """Jobs per status."""
    with DbSession(engine) as db:
        return {status: n for status, n in db.execute(select(Job.status, func.count()).group_by(Job.status))}


def verdicts(engine: Engine) -> dict[str, int]:
    """Results per verdict status (pass / rework / fail)."""
    with DbSession(engine) as db:
        tally: dict[str, int] = {}
        for verdict in db.scalars(select(Result.verdict)):
            status = (verdict or {}).get("status", "none")
            tally[status] = tally.get(status, 0) + 1
        return tally
