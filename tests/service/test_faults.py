"""The server killed with SIGKILL during uploads and during jobs, then restarted, twice: the
station agent resumes (same Idempotency-Keys), every acknowledged upload is stored exactly once and
every job finishes exactly once (one result, one 'done' in the audit), on SQLite and PostgreSQL
(where two workers take jobs side by side)."""

from __future__ import annotations

import threading
import time

import numpy as np
import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store import open_store
from robocal.fleet.store.models import AuditEntry, Job, Result, Session
from robocal.service.agent import Agent, spool_session
from robocal.service.loadgen import synthetic_files
from tests.service.conftest import add_model, make_service

SESSIONS, KILLS = 30, 2


def test_sigkill_during_uploads_and_jobs(tmp_path, db_url):
    # two workers: on PostgreSQL they claim jobs concurrently (FOR UPDATE SKIP LOCKED); SQLite runs one;
    # a killed server's jobs are taken over when their 2 s lease has expired
    service = make_service(db_url, workers=2, work="tests.service.stubs:slow_result", lease=2.0)
    service.start()
    add_model(service)
    agent = Agent(service.url, service.tokens["station-a"], "arm6", tmp_path / "spool", retries=20)
    for k in range(SESSIONS):
        spool_session(agent.spool, f"F-{k:03d}", synthetic_files(f"F-{k:03d}", 50_000))
    acknowledged: list[dict] = []
    uploader = threading.Thread(target=lambda: acknowledged.extend(agent.upload_pending()))
    uploader.start()
    rng = np.random.default_rng(0)
    interrupted_jobs = 0
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.5, 2.0))
            service.stop(kill=True)
            interrupted_jobs += count_running(service.db)
            service.start()
        uploader.join(timeout=300)
        assert not uploader.is_alive()
        assert len(acknowledged) == SESSIONS and agent.pending() == []
        wait_until_done(service.db, SESSIONS)
    finally:
        service.stop()
    assert interrupted_jobs >= 1  # a kill landed while a job was running
    engine = open_store(service.db)
    with DbSession(engine) as db:
        keys = db.execute(sa.select(Session.idempotency_key, sa.func.count()).group_by(Session.idempotency_key)).all()
        assert len(keys) == SESSIONS and {n for _, n in keys} == {1}  # no upload lost, none stored twice
        assert sorted(a["session"] for a in acknowledged) == sorted(db.scalars(sa.select(Session.id)))
        assert db.scalar(sa.select(sa.func.count()).select_from(Result)) == SESSIONS
        done = [a.detail["job"] for a in db.scalars(sa.select(AuditEntry).where(AuditEntry.action == "done"))]
        assert sorted(done) == sorted(db.scalars(sa.select(Job.id)))  # each job finished exactly once
    engine.dispose()


def count_running(db: str) -> int:
    engine = open_store(db)
    with DbSession(engine) as s:
        running = s.scalar(sa.select(sa.func.count()).select_from(Job).where(Job.status == "running"))
    engine.dispose()
    return running


def wait_until_done(db: str, count: int, limit: float = 120) -> None:
    engine = open_store(db)
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            with DbSession(engine) as s:
                if s.scalar(sa.select(sa.func.count()).select_from(Job).where(Job.status == "done")) == count:
                    return
            time.sleep(0.5)
        raise AssertionError("jobs not done in time")
    finally:
        engine.dispose()
