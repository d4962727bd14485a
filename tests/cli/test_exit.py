"""How the `robocal` program ends (robocal.cli.run): without Python's finalization, but with
everything finalization is for: exit handlers run, output flushed, `main`'s exit status kept, and
a running non-daemon thread waited for as Python's exit would. Each case is a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = """
import atexit, sys, threading, time
from pathlib import Path
from robocal.cli import run
marks = Path(sys.argv[1])
atexit.register(lambda: (marks / "atexit").write_text("ran"))
if sys.argv[2] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.5), (marks / "thread").write_text("done"))).start()
sys.stdout.write("unflushed line")  # no newline, a pipe: buffered until the end
sys.argv = ["robocal", *sys.argv[3:]]
run()
"""


def robocal(marks: Path, mode: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), str(marks), mode, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "code"), [(("--help",), 0), (("calibrate", "no_such_problem.yaml", "--out", "out"), 2), (("calibrate",), 2)])
def test_exit_status_handlers_and_output_survive(tmp_path, args, code):
    """--help (0), a missing problem file (2, the error naming it), a missing argument (2)."""
    done = robocal(tmp_path, "plain", *args)
    assert done.returncode == code
    assert done.stdout.startswith("unflushed line") and (tmp_path / "atexit").read_text() == "ran"
    if code == 2 and "no_such_problem.yaml" in args:
        assert "no_such_problem.yaml" in done.stderr


def test_a_running_thread_is_waited_for(tmp_path):
    """A non-daemon thread still running when `main` returns finishes its work before the exit."""
    done = robocal(tmp_path, "thread", "--help")
    assert done.returncode == 0 and (tmp_path / "thread").read_text() == "done" and (tmp_path / "atexit").read_text() == "ran"
