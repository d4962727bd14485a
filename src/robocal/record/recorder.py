"""The terminal recorder of `robocal record sockets`: the user guides the arm by hand, seats the
ball and presses the socket's key, so the keys must work without Enter (cbreak mode) while the
screen shows, after every store, how consistent the recording is.

Keys: 0-9 store the current configuration for that socket, u undoes the last store, w writes
the folder and quits, q quits without writing (asking first when something was stored).
"""

from __future__ import annotations

import os
import select
import sys
import termios
import tty
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from robocal.errors import RobocalError
from robocal.kinematics.urdf import load_urdf
from robocal.record.recording import BallCenter, Recording, check_output_folder
from robocal.record.sources import JointSource

TITLE = "robocal record sockets"
REFRESH = 0.25  # s between redraws without a key press (the source's status changes)


@contextmanager
def key_presses(fd: int) -> Iterator[Callable[[float], str]]:
    """Single key presses, without Enter or echo, while the context lasts: yields read(timeout)
    -> the keys pressed ('' after timeout seconds without one). Cbreak rather than raw mode keeps
    Ctrl-C a signal, so a hung source can still be interrupted; the terminal's settings come back
    on every way out, Ctrl-C included. When the terminal goes away while the recorder outlives
    the hang-up (SIGHUP ignored, as under nohup), read raises `TerminalClosed` instead of
    reporting an endless stream of empty reads."""
    if not os.isatty(fd):
        raise RobocalError(f"{TITLE} reads single key presses: run it in a terminal (its standard input is not one)")
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def read(timeout: float) -> str:
        if not select.select([fd], [], [], timeout)[0]:
            return ""
        try:
            keys = os.read(fd, 64)
        except OSError:  # EIO: the terminal hung up
            keys = b""
        if not keys:
            raise TerminalClosed
        return keys.decode(errors="replace")

    try:
        yield read
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        except termios.error:  # the terminal is gone: there is nothing left to restore
            pass


class TerminalClosed(Exception):
    """The recorder's terminal delivers no more keys (end of input)."""


def _mm(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.3f}"


class Session:
    """The keys' meaning: a small state machine (recording, or asking whether to quit without
    writing) that turns each key into an action on the recording and a line for the screen.
    `written` is set once the folder is written; `done` once the session is over."""

    def __init__(self, recording: Recording, source: JointSource, out: Path):
        self.recording = recording
        self.source = source
        self.out = out
        self.message = f"seat the ball in a socket and press its key (0-{recording.n_sockets - 1})"
        self.confirming = False
        self.done = False
        self.written: list[Path] = []

    def press(self, key: str) -> None:
        if self.confirming:
            self.confirming = False
            self.done = key == "y"
            self.message = "quit without writing" if self.done else "kept recording"
        elif key in "0123456789":
            self._store(int(key))
        elif key == "u":
            undone = self.recording.undo()
            self.message = "nothing to undo" if undone is None else f"undid the last store (socket {undone.socket})"
        elif key == "w":
            self._write()
        elif key == "q" and len(self.recording):
            self.confirming = True
            self.message = f"quit without writing the {len(self.recording)} stored configurations? y: quit; any other key: keep recording"
        elif key == "q":
            self.done = True
            self.message = "quit: nothing was stored"
        elif key.isprintable():
            self.message = f"'{key}' is not a key of the recorder"

    def _store(self, socket: int) -> None:
        if socket >= self.recording.n_sockets:
            self.message = f"no socket {socket}: the plate has {self.recording.n_sockets} (--sockets)"
            return
        try:
            q = self.source.read()
        except RobocalError as exc:
            self.message = f"not stored: {exc}"
            return
        stored = self.recording.store(socket, q)
        self.message = f"stored socket {socket} #{self.recording.count(socket)}"
        if stored.offset is not None:
            self.message += f": ball center {_mm(stored.offset)} mm from the socket's mean"
        if stored.nearer is not None:
            other, distance = stored.nearer
            self.message += f", but {_mm(distance)} mm from socket {other}'s: wrong key? (u undoes)"

    def terminal_closed(self) -> None:
        """No more keys will come: what was stored is written (as w would, also sockets with
        too few rows), never dropped; a write that fails is an error naming the folder."""
        if not len(self.recording):
            self.done = True
            return
        try:
            self.written = self.recording.write(self.out, partial=True)
        except (RobocalError, OSError) as exc:
            raise RobocalError(f"the terminal closed and the {len(self.recording)} stored configurations could not be written to {self.out}: {exc}") from exc
        self.done = True

    def _write(self) -> None:
        try:
            self.written = self.recording.write(self.out)
        except RobocalError as exc:
            self.message = f"not written: {exc}"
        except OSError as exc:  # the recording stays, so the user can fix the folder and press w again
            self.message = f"not written: {exc}"
        else:
            self.done = True
            self.message = f"wrote {self.out}"

    def render(self, header: str) -> Group:
        figures = self.recording.figures()
        table = Table(box=None, padding=(0, 2))
        for column in ("socket", "stored", "spread (mm)"):
            table.add_column(column, justify="right")
        for k, (count, spread) in enumerate(zip(figures.counts, figures.spreads)):
            table.add_row(str(k), str(count), _mm(spread))
        table.add_row("all", str(len(self.recording)), _mm(figures.mae), end_section=True)
        lines: list[RenderableType] = [Text(f"{TITLE}: {header}", style="bold"), Text(self.source.status()), table]
        if self.recording.distance is not None:
            lines.append(Text(f"distortion (mm): {_mm(figures.distortion)}   (| distance of the socket means - {self.recording.distance * 1e3:g} mm |)"))
        lines.append(Text.from_markup(f"[bold]last:[/] {escape(self.message)}"))
        keys = (
            "y: quit without writing; any other key: keep recording"
            if self.confirming
            else f"0-{self.recording.n_sockets - 1}: store   u: undo   w: write and quit   q: quit"
        )
        lines.append(Text(f"keys: {keys}", style="dim"))
        return Group(*lines)


def record_sockets(
    robot: Path,
    out: Path,
    link: str,
    open_source: Callable[[Path, str, tuple[str, ...]], JointSource],
    n_sockets: int,
    distance: float | None,
    force: bool,
    console: Console,
) -> list[Path]:
    """Run the recorder until the user writes (returns the files) or quits (returns [])."""
    check_output_folder(out, force)
    with key_presses(sys.stdin.fileno()) as read_keys:
        tree = load_urdf(robot)
        ball = BallCenter(tree, link)
        recording = Recording(n_sockets, ball, distance)
        header = f"{robot.name}, ball center at {link} ({len(ball.joints)} joints), output {out}"
        with console.status("opening the joint source"):
            source = open_source(robot, link, ball.joints)
        try:
            session = Session(recording, source, out)
            with Live(session.render(header), console=console, auto_refresh=False) as live:
                while not session.done:
                    try:
                        keys = read_keys(REFRESH)
                    except TerminalClosed:
                        session.terminal_closed()
                        break
                    for key in keys:
                        session.press(key)
                        if session.done:
                            break
                    live.update(session.render(header), refresh=True)
        finally:
            source.close()
    return session.written
