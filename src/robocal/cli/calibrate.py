"""`robocal calibrate` and `robocal evaluate`: a calibration, and its result scored on other data or a true robot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from robocal.cli.options import names
from robocal.errors import RobocalError
from robocal.terminal import err, out


def calibrate(
    problem: Annotated[Path, typer.Argument(help="problem YAML")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/calibration"),
    fail_on: Annotated[Optional[str], typer.Option("--fail-on", help="exit with code 1 when the verdict is this level or worse: warning or fail (docs/trust.md)")] = None,
) -> None:
    """Calibrate: write report.json, frames.yaml, calibrated.urdf and report.html to --out."""
    from robocal.calibration import calibrate as run
    from robocal.outputs import moved, preflight, staged
    from robocal.problem import load_problem
    from robocal.provenance import input_files
    from robocal.report.console import print_summary
    from robocal.results import write_results

    if fail_on not in (None, "warning", "fail"):
        raise RobocalError(f"--fail-on: 'warning' or 'fail', got '{fail_on}'")
    preflight(out_dir, [problem])
    with err.status("loading problem"):
        loaded = load_problem(problem)
    preflight(out_dir, input_files(loaded).values())
    with err.status(f"solving {len(loaded.layout)} parameters from {sum(m.n for m in loaded.measurements)} rows"):
        cal = run(loaded)
    with staged(out_dir) as stage:
        files = moved(write_results(cal, stage), stage, out_dir)
    print_summary(cal, out)
    out.print("wrote " + ", ".join(str(f) for f in files), markup=False, highlight=False)
    if fail_on is not None and cal.verdict.at_least(fail_on):
        err.print(f"verdict {cal.verdict.level} (--fail-on {fail_on}): exit code 1", markup=False, highlight=False)
        raise typer.Exit(1)


def evaluate(
    problem: Annotated[Path, typer.Argument(help="problem YAML used for calibration")],
    result: Annotated[Path, typer.Option("--result", help="output folder of `robocal calibrate`")],
    data: Annotated[Optional[list[Path]], typer.Option("--data", help="data file or placement folder to evaluate on; repeat for several")] = None,
    measurement: Annotated[Optional[str], typer.Option("--measurement", help="with --data: which measurement the data file is for (default: the only one)")] = None,
    truth: Annotated[Optional[Path], typer.Option("--truth", help="true robot (URDF or DH table) to score the task error against")] = None,
    reference: Annotated[Optional[str], typer.Option("--reference", help="with --truth: reference tip of the task vectors (default: the first tip)")] = None,
    tips: Annotated[Optional[list[str]], typer.Option("--tips", help="with --truth: tip links, repeated or comma-separated (default: the end effectors, else the leaf links)")] = None,
    n: Annotated[Optional[int], typer.Option("--n", min=1, help="with --truth: configurations in the test set (default: 1000)")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="with --truth: seed of the test set (default: 0)")] = None,
    force: Annotated[bool, typer.Option("--force", help="evaluate even if the problem, robot or training data changed after the calibration (warns)")] = False,
) -> None:
    """Before/after metrics (JSON): on other data files or placement folders (--data, repeated),
    with the frames estimated during calibration, beside the training data, and warnings when the
    model holds only near its training data; or (--truth) the task error of the nominal and the
    calibrated robot against the true one, on a test set uniform in each fingertip's Cartesian
    workspace."""
    from robocal.evaluation import evaluate_files, evaluate_truth

    def warn(text: str) -> None:
        err.print(text, style="bold yellow", markup=False, highlight=False, soft_wrap=True)

    if (data is None) == (truth is None):
        raise RobocalError("give exactly one of --data (a data file) and --truth (the true robot)")
    if data is not None:
        extra = [f"--{name}" for name, value in (("reference", reference), ("tips", tips), ("n", n), ("seed", seed)) if value is not None]
        if extra:
            raise RobocalError(f"{', '.join(extra)}: only with --truth")
        report = evaluate_files(problem, result, data, measurement, force=force, warn=warn)
    else:
        if measurement is not None:
            raise RobocalError("--measurement: only with --data")
        options = {k: v for k, v in (("n", n), ("seed", seed)) if v is not None}
        report = evaluate_truth(problem, result, truth, reference, names(tips), **options, force=force, warn=warn)
    print(json.dumps(report, indent=2))
