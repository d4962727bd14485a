"""The `robocal` command line: one thin module per command group, each importing the heavy
machinery it needs only when its command runs, so `robocal --help` starts without JAX.

User errors (robocal.errors) print one located message and exit with code 2; an unexpected
exception prints one line and where its full traceback was written, exit code 70."""

from __future__ import annotations

import atexit
import os
import sys
import threading

import typer

from robocal.cli import analyze, calibrate, convert, demo, describe, fleet, grasp, record, service, simulate, teleop
from robocal.errors import RobocalError
from robocal.terminal import err

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Calibrate robots from the data your lab can record.")
for command in (
    calibrate.calibrate,
    calibrate.crossval,
    calibrate.evaluate,
    analyze.analyze,
    demo.demo,
    analyze.design,
    describe.describe,
    convert.convert,
    demo.study,
):
    app.command()(command)
for name, group in (("simulate", simulate), ("record", record), ("teleop", teleop), ("grasp", grasp), ("fleet", fleet)):
    app.add_typer(group.app, name=name)
app.add_typer(service.serve_app, name="serve")
app.command()(service.station)


@app.callback()
def _compilation_cache() -> None:
    """Before any command runs (not for --help): JAX's persistent compilation cache."""
    from robocal.runtime import enable_compilation_cache

    enable_compilation_cache()


INTERNAL_ERROR = 70  # EX_SOFTWARE of sysexits.h: a bug in robocal, not in the user's input


def report_bug(exc: BaseException) -> None:
    """An unexpected exception: one line saying what happened and where the full traceback was
    written (a file in the temporary folder), exit code 70; never a raw dump on the terminal."""
    import tempfile
    import traceback

    with tempfile.NamedTemporaryFile("w", prefix="robocal-traceback-", suffix=".txt", delete=False) as handle:
        handle.write(f"robocal {' '.join(sys.argv[1:])}\n\n")
        traceback.print_exception(exc, file=handle)
    err.print(f"internal error: {type(exc).__name__}: {exc}", style="bold red", markup=False, highlight=False, soft_wrap=True)
    err.print(f"this is a bug in robocal, not in your input; the full traceback is in {handle.name}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(INTERNAL_ERROR)


def main() -> None:
    try:
        code = app(standalone_mode=False)  # a command's typer.Exit, or Ctrl-C (130), comes back as a return value
    except RobocalError as exc:
        from rich.markup import escape  # file, column and field names may contain [brackets]

        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted")
        sys.exit(130)
    except Exception as exc:
        # Usage errors (click's ClickException; recent typer releases vendor click as typer._click,
        # so `import click` may fail) show themselves and carry their exit code. Anything else is a bug.
        show, exit_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            sys.exit(exit_code)
        report_bug(exc)
    if isinstance(code, int) and code != 0:
        if code == 130:
            err.print("aborted")
        sys.exit(code)


def run() -> None:
    """The `robocal` program (console script, `python -m robocal`): `main`, then the end of the
    process without Python's finalization, which spends 0.15-0.3 s of every command's wait
    tearing down JAX's and XLA's objects. What finalization is for still happens: every exit
    handler runs (temporary folders, logging, worker pools, Ray) and stdout and stderr are
    flushed. Only while no other non-daemon thread runs (Python's exit would wait for it) and
    only for `main`'s own ways out; `main` itself raises SystemExit, for callers in a process
    that goes on (tests)."""
    try:
        main()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    if any(t is not threading.current_thread() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    if isinstance(code, str):  # as sys.exit would: the message on stderr, status 1
        print(code, file=sys.stderr)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to deliver to it
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
