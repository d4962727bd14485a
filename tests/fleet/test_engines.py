"""The engines of `fleet run` (in this process, a process pool, Ray) and its batching give the same
results: the batched run against the one-at-a-time run (each unit compiled on its own, as
`robocal calibrate`), the pool and Ray against the in-process engine. Units: a simulated batch
of the 6-joint arm with known defects, whose verdicts are checked against the truth too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.models import Job, Result, Session
from robocal.fleet.store.sessions import add_session, ingest
from robocal.simulation.fleet import simulate_fleet

REPO = Path(__file__).resolve().parents[2]
ARM = REPO / "examples" / "fleet" / "arm_6r.urdf"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, dict]:
    """6 units, 2 of them defective."""
    folder = tmp_path_factory.mktemp("fleet")
    return folder, simulate_fleet(folder, ARM, 6, defect_share=2 / 6, seed=3)


def stored(engine) -> dict[str, tuple]:
    """serial -> (verdict, parameters, solver iterations) of every stored result."""
    with DbSession(engine) as db:
        rows = db.execute(sa.select(Session.name, Result.verdict, Result.parameters, Result.report).join(Result, Result.session_id == Session.id))
        return {name: (verdict, parameters, json.loads(report)["solver"]["iterations"]) for name, verdict, parameters, report in rows}


def fleet_run(folder: Path, db: Path, **options) -> dict[str, tuple]:
    engine = open_store(db, create=True)
    ingest(engine, folder)
    assert run(engine, **options) == {"done": 6, "failed": 0}
    return stored(engine)


def assert_same(a: dict[str, tuple], b: dict[str, tuple], rtol: float) -> None:
    assert sorted(a) == sorted(b)
    for serial, (verdict, parameters, iterations) in a.items():
        other_verdict, other_parameters, other_iterations = b[serial]
        assert verdict == other_verdict and iterations == other_iterations, serial
        assert [p["name"] for p in parameters] == [p["name"] for p in other_parameters]
        for key in ("estimate", "std", "baseline"):
            np.testing.assert_allclose([p[key] for p in other_parameters], [p[key] for p in parameters], rtol=rtol, atol=0)


@pytest.fixture(scope="module")
def in_process(fleet, tmp_path_factory) -> dict[str, tuple]:
    """The batched in-process run (all 6 units in one chunk), the reference of the other engines."""
    return fleet_run(fleet[0], tmp_path_factory.mktemp("inprocess") / "robocal.db")


def test_batched_run_equals_one_at_a_time(fleet, in_process, tmp_path):
    folder, truth = fleet
    alone = fleet_run(folder, tmp_path / "robocal.db", batch=0)  # calibrate_session: each unit compiled on its own
    assert sorted(alone) == sorted(truth["units"])
    assert_same(alone, in_process, rtol=1e-9)
    flagged = {serial for serial, (verdict, _, _) in in_process.items() if verdict["status"] != "pass"}
    assert flagged == {serial for serial, unit in truth["units"].items() if unit["defective"]}


def test_pool_engine(fleet, in_process, tmp_path):
    """Two spawned worker processes, chunks of 3 units each."""
    assert_same(fleet_run(fleet[0], tmp_path / "robocal.db", kind="pool", workers=2), in_process, rtol=1e-12)


def require_ray():
    """Ray, or a skip naming the package (a failure under ROBOCAL_REQUIRE_SYSTEM_DEPS=1, as tests/system_deps.py)."""
    try:
        import ray
    except ImportError:
        message = "ray not installed: pip install 'robocal[ray]' (or the dev extra)"
        if os.environ.get("ROBOCAL_REQUIRE_SYSTEM_DEPS") == "1":
            pytest.fail(message + " (ROBOCAL_REQUIRE_SYSTEM_DEPS=1)")
        pytest.skip(message)
    return ray


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # Ray starts its own servers by fork + exec
def test_ray_engine(fleet, in_process, tmp_path):
    """A local Ray instance of 2 CPUs started here; 3 of the units (chunks of 2 and 1)."""
    ray = require_ray()
    folder = tmp_path / "three"
    for serial in sorted(fleet[1]["units"])[:3]:
        (folder / serial).mkdir(parents=True)
        for f in (fleet[0] / serial).iterdir():
            (folder / serial / f.name).write_bytes(f.read_bytes())
    engine = open_store(tmp_path / "robocal.db", create=True)
    ingest(engine, folder)
    ray.init(num_cpus=2, include_dashboard=False, address="local", log_to_driver=False)
    try:
        assert run(engine, kind="ray", workers=2) == {"done": 3, "failed": 0}
    finally:
        ray.shutdown()
    got = stored(engine)
    assert_same(got, {serial: in_process[serial] for serial in got}, rtol=1e-12)


def test_ray_missing_is_one_line(tmp_path):
    open_store(tmp_path / "robocal.db", create=True)
    script = "import sys; sys.modules['ray'] = None; from robocal.cli import main; main()"  # import ray then raises ImportError
    done = subprocess.run(
        [sys.executable, "-c", script, "fleet", "run", "--engine", "ray", "--db", str(tmp_path / "robocal.db")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "error: --engine ray needs Ray, which is not installed: pip install 'robocal[ray]'"


def test_a_bad_session_fails_alone(fleet, tmp_path):
    """A unit whose data file has a bad value: its job fails with the located error, the batch's others are done."""
    folder = tmp_path / "sessions"
    for serial in sorted(fleet[1]["units"])[:3] + ["BROKEN"]:
        (folder / serial).mkdir(parents=True)
        for f in (fleet[0] / (serial if serial != "BROKEN" else "UNIT-00000")).iterdir():
            (folder / serial / f.name).write_bytes(f.read_bytes())
    markers = folder / "BROKEN" / "markers.csv"
    lines = markers.read_text().splitlines()
    lines[5] = "abc" + lines[5][lines[5].index(",") :]
    markers.write_text("\n".join(lines) + "\n")
    engine = open_store(tmp_path / "robocal.db", create=True)
    ingest(engine, folder)
    assert run(engine) == {"done": 3, "failed": 1}
    with DbSession(engine) as db:
        [(name, error)] = db.execute(sa.select(Session.name, Job.error).join(Job, Job.session_id == Session.id).where(Job.status == "failed")).all()
    assert name == "BROKEN" and "markers.csv, line 6" in error, error


@pytest.mark.parametrize("batch", [256, 0], ids=["batched", "one-at-a-time"])
def test_a_failed_jobs_error_names_the_users_folder(batch, db_url, tmp_path):
    """The error of a job names the folder its session was ingested from (an uploaded session, which has
    none: its session id and unit), never the temporary folder the job wrote the session's files to."""
    simulate_fleet(tmp_path / "batch", ARM, 1, postures=20, seed=5)
    folder = tmp_path / "batch" / "UNIT-00000"
    markers = folder / "markers.csv"
    lines = markers.read_text().splitlines()
    lines[5] = "abc" + lines[5][lines[5].index(",") :]
    markers.write_text("\n".join(lines) + "\n")
    engine = open_store(db_url, create=True)
    ingest(engine, tmp_path / "batch")
    with DbSession(engine) as db, db.begin():  # the same files uploaded by a station: no folder of the user's
        uploaded = add_session(db, "UPLOADED", {p.name: p.read_bytes() for p in folder.iterdir()}, context={"station": "line-1"}).id
    assert run(engine, batch=batch) == {"done": 0, "failed": 2}
    with DbSession(engine) as db:
        errors = dict(db.execute(sa.select(Job.session_id, Job.error)).all())
    assert errors[1].startswith(f"{markers}, line 6, column "), errors[1]
    assert errors[uploaded].startswith(f"session {uploaded} (UPLOADED){os.sep}markers.csv, line 6, column "), errors[uploaded]


def test_service_workers_run_the_fleet_job_code(fleet, in_process, tmp_path):
    """The service's job workers (robocal.service.worker) claim the queue in chunks and calibrate with
    `fleet run`'s batched job code: the same results as the in-process run, each job claimed once."""
    from contextlib import nullcontext
    from threading import Event

    from robocal.fleet.store.jobs import Lease, counts
    from robocal.service.worker import start_workers

    engine = open_store(tmp_path / "robocal.db", create=True)
    ingest(engine, fleet[0])
    stop, lease = Event(), Lease()
    threads = start_workers(engine, nullcontext(), stop, 1, None, lease)
    try:
        deadline = time.monotonic() + 120
        while counts(engine) != {"done": 6} and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert counts(engine) == {"done": 6}
    with DbSession(engine) as db:
        assert set(db.execute(sa.select(Job.attempts, Job.owner))) == {(1, lease.owner)}
    assert_same(stored(engine), in_process, rtol=1e-12)
