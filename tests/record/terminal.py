"""A command run on a pseudo-terminal, as a user at a keyboard runs it: keys in, screen text out.

The pty is the child's controlling terminal, so Ctrl-C typed into it is a SIGINT from the line
discipline, as in a real terminal. A reader thread drains the screen so the child never blocks
on a full pty buffer; every wait has a deadline that fails the test instead of hanging it.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
# Make the pty on fd 0 the controlling terminal of the (new-session) child, then run robocal.
# Ctrl-C raises KeyboardInterrupt as in a shell's foreground job, also when the tests themselves
# run where SIGINT is ignored (a background job, nohup): a child inherits the ignored signal.
CONTROLLING = (
    "import fcntl, runpy, signal, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'robocal'; runpy.run_module('robocal', run_name='__main__')"
)


class Terminal:
    def __init__(self, args: list[str], cwd: Path, columns: int = 200, rows: int = 50):
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.initial = termios.tcgetattr(self.slave)
        # the screen's size is the pty's, as in a shell that does not export COLUMNS / LINES
        # (pytest-xdist's workers inherit COLUMNS=80 and LINES=24, which rich would take over the pty's size)
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm-256color", "JAX_PLATFORMS": "cpu"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", CONTROLLING, *args], stdin=self.slave, stdout=self.slave, stderr=self.slave, cwd=cwd, env=env, start_new_session=True
        )
        self._raw = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        self.seen = 0  # position in text() up to which expect() has matched

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._raw += chunk

    def text(self) -> str:
        with self._lock:
            return ANSI.sub("", self._raw.decode(errors="replace"))

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def _until(self, find, what: str, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            exited = self.process.poll() is not None
            found = find(self.text())
            if found is not None:
                return found
            if time.monotonic() > deadline or exited:  # `exited`: the text was read after the exit
                raise AssertionError(f"no {what} on the screen within {timeout} s; the screen ends with:\n{self.text()[-3000:]}")
            time.sleep(0.02)

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match:
        """The first match of the regex after the previous match; fails after timeout seconds."""
        match = self._until(lambda text: re.compile(pattern).search(text, self.seen), repr(pattern), timeout)
        self.seen = match.end()
        return match

    def press(self, key: str, then: str) -> re.Match:
        self.send(key)
        return self.expect(then)

    def frame(self, title: str, last_line: str, timeout: float = 10.0) -> str:
        """The newest complete redraw: from the last `title` to the `last_line` after it."""

        def find(text):
            start = text.rfind(title, 0, self.seen)
            end = text.find(last_line, start)
            return text[start:end] if start >= 0 and end >= 0 else None

        return self._until(find, f"frame ending with {last_line!r}", timeout)

    def wait(self, timeout: float = 30.0) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the recorder did not exit within {timeout} s; the screen ends with:\n{self.text()[-3000:]}") from None

    def modes_restored(self) -> bool:
        """The terminal's line settings are back as they were before the child started."""
        return termios.tcgetattr(self.slave) == self.initial

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.slave)  # the reader's read on the master now fails: it ends
        self._reader.join(timeout=5)
        os.close(self.master)
