"""The worker pool stops cleanly: a Ctrl-C (to the whole process group, as a terminal sends it,
or to the parent alone, as `timeout -s INT` does) ends the run within seconds with no worker
left, whenever it lands; a parent killed from outside takes its workers with it; a worker killed
from outside is an error naming that. Each trial runs a pool of two workers sleeping 0.3 s per
item in a child process (bounded: 20 s per trial)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.processes import gone, spawned_workers

CHILD = """
import sys, time
from robocal.errors import RobocalError
from robocal.workers import worker_pool
try:
    with worker_pool(2) as pool:
        for _ in pool.map(time.sleep, [0.3] * 200):
            print("result", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
except RobocalError as exc:
    print(f"error: {exc}", flush=True)
    sys.exit(2)
"""


def _start() -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "result"  # the workers run
    return child


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc (Linux)")
@pytest.mark.parametrize("trial", range(4))
def test_ctrl_c_ends_the_run_at_once_and_leaves_no_worker(trial):
    rng = np.random.default_rng(trial)
    child = _start()
    workers = spawned_workers(child.pid)
    time.sleep(rng.uniform(0.0, 0.6))  # anywhere in the wait for results
    if trial % 2:
        os.killpg(child.pid, signal.SIGINT)  # a terminal's Ctrl-C: the workers get it too
    else:
        os.kill(child.pid, signal.SIGINT)  # the parent alone
    try:
        out, _ = child.communicate(timeout=20)
    finally:
        child.kill()
    assert child.returncode == 130 and out.strip().endswith("interrupted"), out
    assert len(workers) == 2 and gone(workers)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc (Linux)")
def test_a_killed_worker_is_an_error_not_a_hang():
    child = _start()
    os.kill(spawned_workers(child.pid)[0], signal.SIGKILL)
    try:
        out, _ = child.communicate(timeout=20)
    finally:
        child.kill()
    assert child.returncode == 2 and "a worker process ended abruptly" in out, out


def _environment(name: str) -> tuple[str, str | None]:
    return name, os.environ.get(name)


def test_workers_run_their_blas_on_one_thread_unless_told_otherwise(monkeypatch):
    """In worker processes each BLAS library gets one thread (`workers.THREADS`), except where the
    user's environment set a number, which stands; the parent's environment is as before after
    the pool (docs/benchmarks.md: the dataset is a third faster so)."""
    from robocal.workers import THREADS, worker_pool

    for name in THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    with worker_pool(2) as pool:
        seen = dict(pool.map(_environment, THREADS))
    assert seen == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"}
    assert [os.environ.get(name) for name in THREADS] == [None, "3", None]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc (Linux)")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_workers_end_with_their_parent(signum):
    """A parent ended from outside (`kill`, a scheduler, the OOM killer) takes no part in the
    shutdown; its workers must not go on without it (they did: after a `kill` of `robocal grasp
    dataset`, its two workers went on for 50 minutes at a quarter of a core each)."""
    child = _start()
    workers = spawned_workers(child.pid)
    os.kill(child.pid, signum)
    child.wait(timeout=20)
    assert len(workers) == 2 and gone(workers)
