"""The terminal every command writes to: the results console (stdout), the messages console
(stderr) and the progress bar, shared by the command line and the platform's commands."""

from __future__ import annotations

import os
import time

from rich.console import Console

LOG_WIDTH = 160  # columns where the output is a file or a pipe (rich would take 80 and cut tables)


def _console(stderr: bool = False) -> Console:
    """A console at the terminal's width; writing to a file or a pipe (a log, CI, a script), at
    LOG_WIDTH unless COLUMNS says otherwise, so no table cell is cut to an ellipsis."""
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=LOG_WIDTH)
    return console


err = _console(stderr=True)
out = _console()


def warn(text: str) -> None:
    """A warning on the messages console: a result that holds but may not be what it seems."""
    err.print(text, style="bold yellow", markup=False, highlight=False, soft_wrap=True)


def progress_bar(remaining: bool = False):
    """The commands' progress bar on stderr (description, bar, done of total, elapsed and, for
    long runs, remaining time); it disappears when done. Where stderr is not a terminal (a log
    file, CI), a line per task at most every LOG_EVERY seconds and when it completes instead."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if not err.is_terminal:
        return LoggedProgress()
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()] + ([TimeRemainingColumn()] if remaining else [])
    return Progress(*columns, console=err, transient=True)


class LoggedProgress:
    """The part of rich's Progress the commands use, as plain lines for a log."""

    LOG_EVERY = 30.0  # s

    def __init__(self) -> None:
        self._tasks: list[dict] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def add_task(self, description: str, total: float | None = None) -> int:
        self._tasks.append(
            {"description": description, "total": total, "completed": 0, "start": time.monotonic(), "logged": time.monotonic(), "finished": False}
        )
        return len(self._tasks) - 1

    def advance(self, task: int, advance: float = 1) -> None:
        self.update(task, completed=self._tasks[task]["completed"] + advance)

    def update(self, task: int, *, completed: float | None = None, total: float | None = None, description: str | None = None) -> None:
        state = self._tasks[task]
        for key, value in (("completed", completed), ("total", total), ("description", description)):
            if value is not None:
                state[key] = value
        now = time.monotonic()
        finished = state["total"] is not None and state["completed"] >= state["total"] and not state["finished"]
        if finished or (not state["finished"] and now - state["logged"] >= self.LOG_EVERY):
            state["finished"] = state["finished"] or finished
            state["logged"] = now
            of = f"/{state['total']:g}" if state["total"] is not None else ""
            err.print(f"{state['description']}: {state['completed']:g}{of} after {now - state['start']:.0f} s", markup=False, highlight=False)
