"""The `robocal` command line. User errors print one located message and exit with code 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from robocal.errors import RobocalError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Calibrate robots from the data your lab can record.")
err = Console(stderr=True)
out = Console()


@app.command()
def calibrate(
    problem: Annotated[Path, typer.Argument(help="problem YAML")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/calibration"),
) -> None:
    """Calibrate: write report.json, frames.yaml, calibrated.urdf and report.html to --out."""
    from robocal.calibration import calibrate as run
    from robocal.problem import load_problem
    from robocal.report.console import print_summary
    from robocal.results import write_results

    with err.status("loading problem"):
        loaded = load_problem(problem)
    with err.status(f"solving {len(loaded.layout)} parameters from {sum(m.n for m in loaded.measurements)} rows"):
        cal = run(loaded)
    files = write_results(cal, out_dir)
    print_summary(cal, out)
    out.print("wrote " + ", ".join(str(f) for f in files), markup=False, highlight=False)


@app.command()
def evaluate(
    problem: Annotated[Path, typer.Argument(help="problem YAML used for calibration")],
    result: Annotated[Path, typer.Option("--result", help="output folder of `robocal calibrate`")],
    data: Annotated[Path, typer.Option("--data", help="data file to evaluate on")],
    measurement: Annotated[Optional[str], typer.Option("--measurement", help="which measurement the data file is for (default: the only one)")] = None,
) -> None:
    """Before/after metrics (JSON) on another data file, with the frames estimated during calibration."""
    from robocal.evaluation import evaluate_file

    print(json.dumps(evaluate_file(problem, result, data, measurement), indent=2))


@app.command()
def demo(out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/demo")) -> None:
    """Calibrate a simulated, perturbed DLR-Hand II from fingertip markers (no files needed)."""
    from robocal.demo import run_demo

    run_demo(out_dir, out)


def main() -> None:
    from robocal.runtime import enable_compilation_cache

    enable_compilation_cache()
    try:
        app(standalone_mode=False)
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
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        raise
