"""The fleet store on SQLite and on PostgreSQL: Alembic migration from an empty database and from
revision 0003, content-addressed ingest, idempotent and resumable job runs, two runners side by side
and a dead runner's jobs taken over once its lease expires (the job code here is a stand-in that
records what it read; tests/fleet/test_fleet_calibration.py runs the real calibration)."""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import UTC

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.errors import InputError, RobocalError
from robocal.fleet.engine import run
from robocal.fleet.store import database_url, migrate, open_store
from robocal.fleet.store.jobs import Lease, claim_many, counts, finish_many
from robocal.fleet.store.models import AuditEntry, Blob, Job, Result, Session, now
from robocal.fleet.store.sessions import ingest, materialize

ROBOT = b"<robot name='same in every unit'/>\n"


def make_fleet(folder, units: int, first: int = 0):
    """Session folders SN{first:03d}... with a shared robot file and per-unit data; {serial: {path: bytes}}."""
    files = {}
    for k in range(first, first + units):
        unit = {"problem.yaml": f"robot: robot.urdf  # unit {k}\n".encode(), "robot.urdf": ROBOT, "data/markers.csv": f"q,x\n{k},{k * 0.5}\n".encode()}
        for path, content in unit.items():
            (folder / f"SN{k:03d}" / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / f"SN{k:03d}" / path).write_bytes(content)
        files[f"SN{k:03d}"] = unit
    return files


def digest_work(engine, session_id, tmp_path):
    """Stand-in job: the SHA-256 of every file the session materializes, as its 'parameters'."""
    with DbSession(engine) as db:
        problem = materialize(db, session_id, tmp_path / f"s{session_id}")
    folder = problem.parent
    parameters = [
        {"name": str(p.relative_to(folder)), "estimate": hashlib.sha256(p.read_bytes()).hexdigest()} for p in sorted(folder.rglob("*")) if p.is_file()
    ]
    return Result(session_id=session_id, parameters=parameters, report="{}", urdf=None)


def test_migration_from_empty(db_url):
    engine = open_store(db_url, create=True)
    tables = set(sa.inspect(engine).get_table_names())
    assert {"alembic_version", "blobs", "units", "sessions", "session_files", "jobs", "results", "audit", "stations", "tokens", "models"} <= tables
    with engine.connect() as c:
        assert c.execute(sa.text("select version_num from alembic_version")).scalar_one() == "0004"
    open_store(db_url, create=True)  # upgrading a database at head changes nothing
    open_store(db_url)


def test_missing_database_is_a_located_error(tmp_path):
    with pytest.raises(InputError, match="fleet init"):
        open_store(tmp_path / "robocal.db")


def test_ingest_run_idempotent(db_url, tmp_path):
    engine = open_store(db_url, create=True)
    files = make_fleet(tmp_path / "batch", 3)
    assert ingest(engine, tmp_path / "batch") == (3, 0)
    assert ingest(engine, tmp_path / "batch") == (0, 3)
    with DbSession(engine) as db:
        # 3 problem files + 3 data files + one robot file stored once
        assert db.scalar(sa.select(sa.func.count()).select_from(Blob)) == 7
    tally = run(engine, work=lambda e, s: digest_work(e, s, tmp_path / "work"))
    assert tally == {"done": 3, "failed": 0}
    assert run(engine, work=lambda e, s: pytest.fail("a rerun must not calibrate again")) == {"done": 0, "failed": 0}
    with DbSession(engine) as db:
        results = db.scalars(sa.select(Result).order_by(Result.session_id)).all()
        assert len(results) == 3
        for result, unit in zip(results, files.values()):  # the files come back byte for byte
            assert {p["name"]: p["estimate"] for p in result.parameters} == {path: hashlib.sha256(content).hexdigest() for path, content in unit.items()}
        assert [a.action for a in db.scalars(sa.select(AuditEntry).order_by(AuditEntry.id))].count("done") == 3


def test_interrupted_job_is_requeued_and_failure_recorded(db_url, tmp_path):
    engine = open_store(db_url, create=True)
    make_fleet(tmp_path / "batch", 2)
    ingest(engine, tmp_path / "batch")
    with DbSession(engine) as db, db.begin():  # a run died after claiming the first job
        job = db.scalar(sa.select(Job).order_by(Job.id))
        job.status, job.attempts = "running", 1
        interrupted = job.session_id

    def work(e, session_id):
        if session_id == interrupted:
            return digest_work(e, session_id, tmp_path / "work")
        raise RobocalError("markers.csv, line 2: bad value")

    assert run(engine, work=work) == {"done": 1, "failed": 1}
    assert counts(engine) == {"done": 1, "failed": 1}
    with DbSession(engine) as db:
        jobs = db.scalars(sa.select(Job).order_by(Job.id)).all()
        assert [(j.status, j.attempts) for j in jobs] == [("done", 2), ("failed", 1)]
        assert jobs[1].error == "markers.csv, line 2: bad value"


def assert_each_session_once(engine, sessions: int) -> None:
    assert counts(engine) == {"done": sessions}
    with DbSession(engine) as db_session:
        per_session = db_session.execute(sa.select(Result.session_id, sa.func.count()).group_by(Result.session_id)).all()
        assert len(per_session) == db_session.scalar(sa.select(sa.func.count()).select_from(Session)) == sessions
        assert {n for _, n in per_session} == {1}
        done = [a.detail["session"] for a in db_session.scalars(sa.select(AuditEntry).where(AuditEntry.action == "done"))]
        assert sorted(done) == sorted(s for s, _ in per_session)  # each job finished once


def wait_for_leases(engine) -> None:
    """Sleep until every running job's lease has expired (a dead runner's jobs are free again)."""
    with DbSession(engine) as db:
        until = db.scalar(sa.select(sa.func.max(Job.lease_until)).where(Job.status == "running"))
    if until is not None:  # SQLite gives the stored UTC time back without its zone
        time.sleep(max(0.0, (until.replace(tzinfo=UTC) - now()).total_seconds()) + 0.05)


def quick(engine, session_id):
    return Result(session_id=session_id, parameters=[], report="{}", urdf=None)


def test_migration_from_0003(db_url):
    """A store at 0003 with a job a run left running (no lease) and a queued one: upgraded, the
    running job counts as expired and a claim takes both."""
    engine = sa.create_engine(database_url(db_url))
    migrate(engine, "0003")
    with engine.begin() as c:
        stamp = {"t": now()}
        c.execute(sa.text("insert into units (id, serial, created) values (1, 'SN1', :t)"), stamp)
        c.execute(
            sa.text("insert into sessions (id, unit_id, name, problem, fingerprint, created) values (1, 1, 'a', 'p', 'f1', :t), (2, 1, 'b', 'p', 'f2', :t)"),
            stamp,
        )
        c.execute(sa.text("insert into jobs (id, session_id, status, attempts, updated) values (1, 1, 'running', 1, :t), (2, 2, 'queued', 0, :t)"), stamp)
    engine = open_store(db_url, create=True)
    with engine.connect() as c:
        assert c.execute(sa.text("select version_num from alembic_version")).scalar_one() == "0004"
    assert {"owner", "lease_until"} <= {c["name"] for c in sa.inspect(engine).get_columns("jobs")}
    assert "ix_jobs_status" in {i["name"] for i in sa.inspect(engine).get_indexes("jobs")}
    lease = Lease()
    assert claim_many(engine, 10, lease) == [(1, 1), (2, 2)]
    with DbSession(engine) as db:
        assert [(j.attempts, j.owner) for j in db.scalars(sa.select(Job).order_by(Job.id))] == [(2, lease.owner), (1, lease.owner)]
        assert db.scalar(sa.select(AuditEntry.detail).where(AuditEntry.action == "requeue"))["jobs"] == [1]


def test_two_runners_side_by_side(db_url, tmp_path):
    """Two runners (each its own engine and lease) run one queue at once: every session once, none
    requeued, though one job outlasts the lease twice over (the heartbeat keeps it)."""
    engine = open_store(db_url, create=True)
    make_fleet(tmp_path / "batch", 24)
    ingest(engine, tmp_path / "batch")
    ran: list[int] = []

    def work(e, session_id):
        ran.append(session_id)
        time.sleep(1.2 if session_id == 5 else 0.02)
        return quick(e, session_id)

    tallies: list[dict] = []
    runners = [threading.Thread(target=lambda: tallies.append(run(open_store(db_url), work=work, lease=Lease(0.5)))) for _ in range(2)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join(timeout=60)
    assert not any(r.is_alive() for r in runners)
    assert sorted(ran) == list(range(1, 25))  # each session computed once
    assert sum(t["done"] for t in tallies) == 24 and all(t["done"] > 0 for t in tallies), tallies
    assert_each_session_once(engine, 24)
    with DbSession(engine) as db:
        assert db.scalars(sa.select(AuditEntry).where(AuditEntry.action.in_(["requeue", "lease-lost"]))).all() == []
        assert set(db.scalars(sa.select(Job.attempts))) == {1}
        assert len(set(db.scalars(sa.select(Job.owner)))) == 2


def test_dead_runners_jobs_taken_over_after_its_lease(db_url, tmp_path):
    """A runner that claimed 3 jobs and died (no heartbeat): a run leaves them alone while its lease
    lasts, takes them over once it expired; the dead runner's late finish stores nothing."""
    engine = open_store(db_url, create=True)
    make_fleet(tmp_path / "batch", 6)
    ingest(engine, tmp_path / "batch")
    dead = Lease(1.0)
    taken = claim_many(engine, 3, dead)
    assert [s for _, s in taken] == [1, 2, 3]
    assert run(engine, work=quick) == {"done": 3, "failed": 0}
    with DbSession(engine) as db:
        assert {(j.status, j.owner) for j in db.scalars(sa.select(Job).where(Job.session_id <= 3))} == {("running", dead.owner)}
    wait_for_leases(engine)
    assert run(engine, work=quick) == {"done": 3, "failed": 0}
    assert finish_many(engine, dead, [(job, quick(engine, session), None) for job, session in taken]) == []
    assert_each_session_once(engine, 6)
    with DbSession(engine) as db:
        assert [j.attempts for j in db.scalars(sa.select(Job).order_by(Job.id))] == [2, 2, 2, 1, 1, 1]
        assert db.scalar(sa.select(AuditEntry.detail).where(AuditEntry.action == "requeue"))["jobs"] == [job for job, _ in taken]
        assert db.scalar(sa.select(AuditEntry.detail).where(AuditEntry.action == "lease-lost"))["jobs"] == [job for job, _ in taken]
