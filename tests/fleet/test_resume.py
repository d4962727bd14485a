"""`fleet run` killed with SIGKILL at random points, then restarted: every session ends with exactly
one result, none lost, none stored twice (the job code is a slow stand-in, so a kill lands mid-run).
In this process (10 trials) and with the process pool (5 trials, the whole process group killed:
the run and its workers, as a power cut would). A run killed alone takes its pool's workers with
it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.jobs import counts
from robocal.fleet.store.models import Result
from robocal.fleet.store.sessions import ingest
from tests.fleet.test_store import assert_each_session_once, make_fleet, wait_for_leases
from tests.processes import gone, spawned_workers

REPO = Path(__file__).resolve().parents[2]

LEASE = 1.0  # s: the killed runs' jobs are free again a second after the kill
RUNNER = f"""
import sys, time
from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.jobs import Lease
from robocal.fleet.store.models import Result
def work(engine, session_id):
    time.sleep(0.1)  # 10 jobs outlast the latest kill (1 s)
    return Result(session_id=session_id, parameters=[], report="{{}}", urdf=None)
run(open_store(sys.argv[1]), work=work, lease=Lease({LEASE}))
"""


def slow_work(engine, session_id):
    """The pool's stand-in job (importable by the spawned workers)."""
    time.sleep(0.1)
    return Result(session_id=session_id, parameters=[], report="{}", urdf=None)


POOL_RUNNER = f"""
import sys
from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.jobs import Lease
from tests.fleet.test_resume import slow_work
run(open_store(sys.argv[1]), work=slow_work, kind="pool", workers=2, lease=Lease({LEASE}))
"""


def test_sigkill_at_random_points(tmp_path):
    db = tmp_path / "robocal.db"
    engine = open_store(db, create=True)
    rng = np.random.default_rng(0)
    interrupted = 0
    for trial in range(10):  # each trial adds 10 sessions, so every kill has work to interrupt
        make_fleet(tmp_path / f"batch{trial}", 10, first=10 * trial)
        ingest(engine, tmp_path / f"batch{trial}")
        child = subprocess.Popen([sys.executable, "-c", RUNNER, str(db)], env=os.environ | {"JAX_PLATFORMS": "cpu"})
        time.sleep(rng.uniform(0.2, 1.0))
        child.send_signal(signal.SIGKILL)
        child.wait()
        left = counts(engine)
        interrupted += left.get("queued", 0) + left.get("running", 0) > 0
    assert interrupted >= 8  # the kills landed before the queue was empty
    wait_for_leases(engine)
    run(engine, work=lambda e, s: Result(session_id=s, parameters=[], report="{}", urdf=None))
    assert_each_session_once(engine, 100)


def test_pool_sigkill_at_random_points(tmp_path):
    db = tmp_path / "robocal.db"
    engine = open_store(db, create=True)
    rng = np.random.default_rng(1)
    interrupted = finished = 0
    for trial in range(5):
        make_fleet(tmp_path / f"batch{trial}", 10, first=10 * trial)
        ingest(engine, tmp_path / f"batch{trial}")
        before = counts(engine).get("done", 0)
        child = subprocess.Popen([sys.executable, "-c", POOL_RUNNER, str(db)], cwd=REPO, env=os.environ | {"JAX_PLATFORMS": "cpu"}, start_new_session=True)
        if trial % 2:  # after the first results are stored, however long the workers took to start
            deadline = time.monotonic() + 120.0
            while counts(engine).get("done", 0) == before and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3) if trial % 2 else rng.uniform(0.2, 1.0))  # the workers take about a second to start
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        left = counts(engine)
        interrupted += left.get("queued", 0) + left.get("running", 0) > 0
        finished += left.get("done", 0) > before
    assert interrupted >= 2 and finished >= 2  # some kills landed mid-run, after some jobs were stored
    wait_for_leases(engine)
    run(engine, work=slow_work)
    assert_each_session_once(engine, 50)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc (Linux)")
def test_pool_workers_end_with_a_run_killed_alone(tmp_path):
    db = tmp_path / "robocal.db"
    engine = open_store(db, create=True)
    make_fleet(tmp_path / "batch", 100)  # 5 s of work for two workers: the kill lands mid-run
    ingest(engine, tmp_path / "batch")
    child = subprocess.Popen([sys.executable, "-c", POOL_RUNNER, str(db)], cwd=REPO, env=os.environ | {"JAX_PLATFORMS": "cpu"}, start_new_session=True)
    try:
        deadline = time.monotonic() + 60.0
        while len(workers := spawned_workers(child.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)  # the run alone, not its process group
        child.wait()
        assert child.returncode == -signal.SIGKILL and len(workers) == 2 and gone(workers, within=10.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # whatever is left of the group, if the test failed
