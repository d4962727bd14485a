"""The fleet store against what users and time do to it: unit serials that would name files elsewhere
(refused at ingest, never written outside `fleet export`'s folder), a session file that is not
UTF-8 (its job fails with the message, none is left running), a `--db` that is not a fleet
database, one of an older robocal (upgraded by `fleet init` only, a copy kept) or a newer one
(refused), and damaged result rows: each a one-line error naming what is wrong, never a crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.errors import InputError, RobocalError
from robocal.fleet.criteria import load_criteria
from robocal.fleet.engine import run
from robocal.fleet.export import export_urdfs
from robocal.fleet.statistics import results
from robocal.fleet.store import database_url, migrate, open_store, revisions
from robocal.fleet.store.jobs import counts, verdicts
from robocal.fleet.store.models import AuditEntry, Job, Result, Unit
from robocal.fleet.store.sessions import add_session, bad_serial, ingest
from robocal.simulation.fleet import simulate_fleet
from tests.fleet.test_store import make_fleet, quick

REPO = Path(__file__).resolve().parents[2]
ARM = REPO / "examples" / "fleet" / "arm_6r.urdf"


def robocal(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`robocal ARGS` as a user runs it (its error handling included)."""
    script = "from robocal.cli import main; main()"
    env = os.environ | {"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def with_urdf(engine, session_id):
    return Result(session_id=session_id, parameters=[], report="{}", urdf=f"<robot name='unit {session_id}'/>\n", verdict={"status": "pass", "reasons": []})


@pytest.mark.parametrize("serial", ["UNIT-00001", "SN001", "LOAD-001-002", "a.b_c-1", "x" * 100])
def test_plain_serials_are_serials(serial):
    assert bad_serial(serial) is None


@pytest.mark.parametrize("serial", ["../../evil", "..", ".hidden", "a/b", "a\\b", "", "-x", "_x", "SN 1", "SN1\n", "x" * 101, "/etc/x", "ü1"])
def test_other_serials_are_refused(serial, tmp_path):
    assert bad_serial(serial) is not None
    engine = open_store(tmp_path / "robocal.db", create=True)
    with DbSession(engine) as db, pytest.raises(RobocalError, match="unit serial"):
        add_session(db, serial, {"problem.yaml": b"robot: robot.urdf\n"})


def test_ingest_refuses_a_folder_whose_name_is_no_serial(tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    make_fleet(tmp_path / "batch", 3)
    (tmp_path / "batch" / "SN001").rename(tmp_path / "batch" / "SN 001")
    with pytest.raises(InputError, match=r"SN 001: unit serial 'SN 001'"):
        ingest(engine, tmp_path / "batch")
    assert counts(engine) == {}  # checked before any session was stored
    (tmp_path / "batch" / "SN 001").rename(tmp_path / "batch" / "SN001")
    assert ingest(engine, tmp_path / "batch") == (3, 0)


def test_export_never_writes_outside_its_folder(tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    make_fleet(tmp_path / "batch", 2)
    ingest(engine, tmp_path / "batch")
    assert run(engine, work=with_urdf) == {"done": 2, "failed": 0}
    out = tmp_path / "deep" / "er" / "out"
    assert sorted(p.name for p in export_urdfs(engine, out)) == ["SN000.urdf", "SN001.urdf"]
    with engine.begin() as c:  # a store written by some other tool, or tampered with
        c.execute(sa.update(Unit).where(Unit.id == 1).values(serial="../../evil"))
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(RobocalError, match=r"unit serial '\.\./\.\./evil'"):
        export_urdfs(engine, tmp_path / "deep" / "er" / "again")
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing written at all
    done = robocal("fleet", "export", "--out", "again", cwd=tmp_path)
    assert done.returncode == 2 and "'../../evil'" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "evil.urdf").exists() and not (tmp_path.parent / "evil.urdf").exists()


def test_unreadable_criteria_are_located(tmp_path):
    (tmp_path / "criteria.yaml").write_bytes(b"max_rms: 0.001\n\xff\xfe\n")
    with pytest.raises(InputError, match="criteria.yaml: not UTF-8"):
        load_criteria(tmp_path / "criteria.yaml")
    (tmp_path / "folder" / "criteria.yaml").mkdir(parents=True)
    with pytest.raises(InputError, match="cannot read the criteria file"):
        load_criteria(tmp_path / "folder" / "criteria.yaml")
    (tmp_path / "empty.yaml").write_text("# defaults\n")
    assert load_criteria(tmp_path / "empty.yaml") == load_criteria(tmp_path / "none.yaml")


@pytest.mark.parametrize("batch", [256, 0], ids=["batched", "one-at-a-time"])
def test_criteria_not_utf8_fails_its_job_alone(batch, tmp_path):
    simulate_fleet(tmp_path / "batch", ARM, 2, postures=20, seed=5)
    (tmp_path / "batch" / "UNIT-00000" / "criteria.yaml").write_bytes(b"max_rms: 0.001\n\xff\xfe bad\n")
    engine = open_store(tmp_path / "robocal.db", create=True)
    ingest(engine, tmp_path / "batch")
    assert run(engine, batch=batch) == {"done": 1, "failed": 1}
    assert counts(engine) == {"done": 1, "failed": 1}
    with DbSession(engine) as db:
        error = db.scalar(sa.select(Job.error).where(Job.status == "failed"))
    assert "criteria.yaml: not UTF-8 text" in error, error


def test_a_run_stopped_by_a_bug_leaves_no_job_running(tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    make_fleet(tmp_path / "batch", 3)
    ingest(engine, tmp_path / "batch")

    def buggy(e, session_id):
        raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError):
        run(engine, work=buggy)
    assert counts(engine) == {"queued": 3}  # back in the queue at once, not after the lease
    assert run(engine, work=quick) == {"done": 3, "failed": 0}
    with DbSession(engine) as db:
        assert db.scalar(sa.select(AuditEntry.detail).where(AuditEntry.action == "release"))["jobs"] == [1]


def not_databases(tmp_path: Path) -> dict[str, Path]:
    real = tmp_path / "real.db"
    open_store(real, create=True)
    content = real.read_bytes()
    cases = {"csv": b"q1,x,y,z\n0,1,2,3\n", "random": os.urandom(5000), "truncated": content[: len(content) // 2], "header-only": content[:100]}
    for name, data in cases.items():
        (tmp_path / f"{name}.db").write_bytes(data)
    (tmp_path / "folder.db").mkdir()
    return {name: tmp_path / f"{name}.db" for name in [*cases, "folder"]}


def test_a_file_that_is_no_fleet_database_is_refused(tmp_path):
    for path in not_databases(tmp_path).values():
        for create in (False, True):
            with pytest.raises(RobocalError, match=r"\.db: not a robocal fleet database \(.+\)$"):
                open_store(path, create=create)
    done = robocal("fleet", "status", "--db", "folder.db", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (2, "error: folder.db: not a robocal fleet database (a folder)")
    done = robocal("fleet", "status", "--db", "csv.db", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (2, "error: csv.db: not a robocal fleet database (file is not a database)")


def test_another_applications_database_is_refused_untouched(tmp_path):
    import sqlite3
    from contextlib import closing

    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as db, db:
        db.execute("create table people (name text)")
    content = other.read_bytes()
    for create in (False, True):
        with pytest.raises(RobocalError, match=r"other\.db: not a robocal fleet database \((no schema revision|it holds other tables: people)\)"):
            open_store(other, create=create)
    assert other.read_bytes() == content


@pytest.mark.parametrize(
    "url, reason",
    [
        ("foo://x", "Can't load plugin"),
        ("postgresql+nodriver://user:secret@host/db", "Can't load plugin"),
        ("mysql://host/db", "No module named"),
        ("postgresql+psycopg://host:port/db", "invalid literal"),
    ],
)
def test_a_url_robocal_cannot_open_is_refused(url, reason, tmp_path):
    with pytest.raises(RobocalError, match=f"cannot open the fleet database \\({reason}") as error:
        open_store(url, create=True)
    assert "secret" not in str(error.value)


@pytest.mark.parametrize("revision", ["0001", "0002", "0003"])
def test_an_older_database_is_upgraded_by_init_only(revision, db_url, tmp_path):
    engine = sa.create_engine(database_url(db_url))
    migrate(engine, revision)
    with engine.begin() as c:
        c.execute(sa.text("insert into units (id, serial, created) values (1, 'SN1', '2024-01-01 00:00:00')"))
    engine.dispose()
    with pytest.raises(
        RobocalError, match=f"schema revision {revision}, older than this robocal's {revisions()[-1]}; upgrade it with `robocal fleet init --db "
    ):
        open_store(db_url)
    said: list[str] = []
    engine = open_store(db_url, create=True, notice=said.append)
    assert said and f"from schema revision {revision} to {revisions()[-1]}" in said[0]
    with DbSession(engine) as db:
        assert db.scalars(sa.select(Unit.serial)).all() == ["SN1"]  # the data kept
    open_store(db_url)
    if "://" not in db_url:  # a SQLite file: a copy of it at its old revision kept beside it
        [backup] = Path(db_url).parent.glob(f"robocal.db.{revision}-*.bak")
        with pytest.raises(RobocalError, match=f"schema revision {revision}, older"):
            open_store(backup)


def test_a_newer_database_is_refused(db_url):
    engine = open_store(db_url, create=True)
    with engine.begin() as c:
        c.execute(sa.text("update alembic_version set version_num = '0099'"))
    for create in (False, True):
        with pytest.raises(RobocalError, match=f"schema revision 0099, newer than this robocal knows \\(its newest is {revisions()[-1]}\\)"):
            open_store(db_url, create=create)


def test_cli_names_both_revisions(tmp_path):
    migrate(sa.create_engine(database_url(tmp_path / "v1.db")), "0001")
    done = robocal("fleet", "status", "--db", "v1.db", cwd=tmp_path)
    head = revisions()[-1]
    assert done.returncode == 2 and done.stderr.strip() == (
        f"error: v1.db: the fleet database is at schema revision 0001, older than this robocal's {head}; upgrade it with `robocal fleet init --db v1.db`"
    )
    done = robocal("fleet", "init", "--db", "v1.db", cwd=tmp_path)
    assert done.returncode == 0 and f"upgraded the fleet database from schema revision 0001 to {head}" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(
    "column, value",
    [("verdict", '"pass"'), ("verdict", "{bad"), ("verdict", "[1]"), ("parameters", "{}"), ("parameters", '[{"name": 1}]'), ("report", ""), ("report", "[]")],
)
def test_damaged_result_rows_are_named(column, value, tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    make_fleet(tmp_path / "batch", 2)
    ingest(engine, tmp_path / "batch")
    report = '{"measurements": [{"name": "markers", "headline": "rms", "after": {"rms": 0.001}}]}'
    parameters = [{"name": "j1.offset", "unit": "rad", "nominal": 0.0, "estimate": 0.001, "std": None}]
    run(engine, work=lambda e, s: Result(session_id=s, parameters=parameters, report=report, verdict={"status": "pass", "reasons": []}))
    assert verdicts(engine) == {"pass": 2} and [r.rms for r in results(engine)] == [0.001, 0.001]
    with engine.begin() as c:
        c.execute(sa.text(f"update results set {column} = :value where id = 2"), {"value": value})
    where = f"robocal.db: table results, row 2, column {column}: damaged"
    with pytest.raises(RobocalError, match=where):
        results(engine)
    if column == "verdict":
        with pytest.raises(RobocalError, match=where):
            verdicts(engine)
