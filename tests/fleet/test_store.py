"""The fleet store on SQLite and on PostgreSQL: Alembic migration from an empty database, content-
addressed ingest, idempotent and resumable job runs (the job code here is a stand-in that records
what it read; tests/fleet/test_fleet_calibration.py runs the real calibration)."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.errors import InputError, RobocalError
from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.jobs import counts
from robocal.fleet.store.models import AuditEntry, Blob, Job, Result
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
        assert c.execute(sa.text("select version_num from alembic_version")).scalar_one() == "0003"
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
