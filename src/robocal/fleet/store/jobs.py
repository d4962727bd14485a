"""Job states: queued -> running -> done | failed, under leases.

A runner (a `fleet run` process, the service's workers) claims jobs with its `Lease`: running,
attempts + 1, its owner name and a lease expiry, in one statement, so two runners never take the
same job (SQLite: one writer at a time; PostgreSQL: FOR UPDATE SKIP LOCKED). While it works its
heartbeat renews the expiry of the jobs it holds (`Lease.kept`). It finishes a job with its result
in one transaction, and only a job it still holds. A runner killed at any point leaves its jobs
running without a result, their lease running out; each claim first puts the jobs whose lease
expired back in the queue, so another runner (or the next run) takes them over, and the jobs of a
live runner are left alone: nothing is lost or done twice however many runners share the store.
Leases compare the runners' clocks (keep the hosts on NTP; the lease is far longer than their skew).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine, Text, cast, func, or_, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store import stored_json
from robocal.fleet.store.models import AuditEntry, Job, Result, now

LEASE = 60.0  # s a claimed job stays its runner's without a heartbeat
QUIET = {"synchronize_session": False}  # bulk updates: no ORM objects of these rows are loaded
log = logging.getLogger("robocal.fleet")


def _owner() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Lease:
    """A runner's hold on the jobs it claims: its owner name (unique per runner) and how long a claim
    lasts without renewal."""

    seconds: float = LEASE
    owner: str = field(default_factory=_owner)

    def until(self) -> datetime:
        return now() + timedelta(seconds=self.seconds)

    def renew(self, engine: Engine) -> int:
        """Extend the lease of every job this runner holds; returns how many."""
        with DbSession(engine) as db, db.begin():
            held = (Job.owner == self.owner) & (Job.status == "running")
            return len(db.execute(update(Job).where(held).values(lease_until=self.until()).returning(Job.id), execution_options=QUIET).all())

    def heartbeat(self, engine: Engine, stop: threading.Event) -> threading.Thread:
        """A started thread that calls `renew` every third of the lease until `stop` is set (a beat
        the database refuses, busy or unreachable, is retried at the next one)."""

        def beat() -> None:
            while not stop.wait(self.seconds / 3):
                try:
                    self.renew(engine)
                except OperationalError as exc:
                    log.warning("lease renewal of %s failed, retrying: %s", self.owner, exc)

        thread = threading.Thread(target=beat, name="robocal-lease", daemon=True)
        thread.start()
        return thread

    @contextmanager
    def kept(self, engine: Engine) -> Iterator[Lease]:
        """The lease kept by its `heartbeat` while the block runs."""
        stop = threading.Event()
        thread = self.heartbeat(engine, stop)
        try:
            yield self
        finally:
            stop.set()
            thread.join()


def claim_many(engine: Engine, limit: int, lease: Lease) -> list[tuple[int, int]]:
    """Put the jobs whose lease expired back in the queue, then claim up to `limit` of the oldest
    queued jobs for `lease`, in one transaction whose first statement writes (SQLite then holds its
    write lock throughout): [(job id, session id)] by job id, empty when nothing is queued."""
    with DbSession(engine) as db, db.begin():
        moment = now()
        expired = (Job.status == "running") & or_(Job.lease_until.is_(None), Job.lease_until < moment)
        requeued = db.scalars(
            update(Job).where(expired).values(status="queued", lease_until=None, updated=moment).returning(Job.id), execution_options=QUIET
        ).all()
        if requeued:
            db.add(AuditEntry(action="requeue", detail={"jobs": sorted(requeued), "by": lease.owner}))
        oldest = select(Job.id).where(Job.status == "queued").order_by(Job.id).limit(limit).with_for_update(skip_locked=True)
        values = {"status": "running", "attempts": Job.attempts + 1, "owner": lease.owner, "lease_until": lease.until(), "updated": moment}
        claimed = db.execute(
            update(Job).where(Job.id.in_(oldest.scalar_subquery())).values(**values).returning(Job.id, Job.session_id), execution_options=QUIET
        )
        return sorted((job_id, session_id) for job_id, session_id in claimed)


def release(engine: Engine, lease: Lease) -> list[int]:
    """Put the jobs `lease` still holds back in the queue, at once (a run that stops on an error or
    an interrupt: the next run takes them over without waiting for the lease); the jobs released."""
    with DbSession(engine) as db, db.begin():
        held = (Job.owner == lease.owner) & (Job.status == "running")
        released = db.scalars(update(Job).where(held).values(status="queued", lease_until=None, updated=now()).returning(Job.id), execution_options=QUIET).all()
        if released:
            db.add(AuditEntry(action="release", detail={"jobs": sorted(released), "owner": lease.owner}))
        return sorted(released)


def finish_many(engine: Engine, lease: Lease, outcomes: list[tuple[int, Result | None, str | None]]) -> list[int]:
    """Store each job's result and mark it done (or failed with its error), (job id, result, error)
    each, all in one transaction; a job this runner no longer holds (its lease expired and another
    runner took it over) is left to that runner, its result dropped. Returns the jobs finished."""
    with DbSession(engine) as db, db.begin():
        moment, held = now(), (Job.owner == lease.owner) & (Job.status == "running")
        done = [job_id for job_id, _, error in outcomes if error is None]
        ended = update(Job).values(status="done", error=None, lease_until=None, updated=moment).where(held & Job.id.in_(done)).returning(Job.id, Job.session_id)
        sessions = dict(db.execute(ended, execution_options=QUIET).all()) if done else {}
        for job_id, _, error in outcomes:
            if error is not None:
                failed = update(Job).values(status="failed", error=error, lease_until=None, updated=moment).where(held & (Job.id == job_id))
                sessions.update(db.execute(failed.returning(Job.id, Job.session_id), execution_options=QUIET).all())
        for job_id, result, error in outcomes:
            if job_id in sessions:
                if result is not None:
                    db.add(result)
                db.add(AuditEntry(action="done" if error is None else "failed", detail={"job": job_id, "session": sessions[job_id], "error": error}))
        lost = [job_id for job_id, _, _ in outcomes if job_id not in sessions]
        if lost:
            db.add(AuditEntry(action="lease-lost", detail={"jobs": lost, "owner": lease.owner}))
    return [job_id for job_id, _, _ in outcomes if job_id in sessions]


def counts(engine: Engine) -> dict[str, int]:
    """Jobs per status."""
    with DbSession(engine) as db:
        return {status: n for status, n in db.execute(select(Job.status, func.count()).group_by(Job.status))}


def verdict_status(verdict: object) -> str:
    """The status of a result's stored verdict ("none" without one); ValueError where it is not a verdict."""
    if verdict is None:
        return "none"
    if not isinstance(verdict, dict) or not isinstance(verdict.get("status", "none"), str):
        raise ValueError('not a verdict {"status": ..., "reasons": [...]}')
    return verdict.get("status", "none")


def verdicts(engine: Engine) -> dict[str, int]:
    """Results per verdict status (pass / rework / fail); a damaged verdict is a RobocalError naming its row."""
    with DbSession(engine) as db:
        tally: dict[str, int] = {}
        for row_id, raw in db.execute(select(Result.id, cast(Result.verdict, Text))):
            status = stored_json(engine, "results", row_id, "verdict", raw, verdict_status)
            tally[status] = tally.get(status, 0) + 1
        return tally
