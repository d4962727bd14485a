"""`robocal calibrate`, `robocal crossval` and `robocal evaluate`: a calibration, its cross-validation
under several prior strengths, and its result scored on other data or a true robot."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from robocal.cli.options import csv_list, names
from robocal.errors import RobocalError
from robocal.terminal import err, out, progress_bar, warn

if TYPE_CHECKING:
    from robocal.analysis.verdict import Level
    from robocal.problem import Problem

FOLDS = 5  # k of calibrate --crossval and the default of crossval: the seed paper's 80/20 split


def _load_and_solve(problem: Path, out_dir: Path, check: Callable[[Problem], object] | None = None):
    """The loaded problem and its calibration, --out checked before and after loading (it must
    hold none of the inputs the problem names) and `check(loaded)` before solving, so a bad --out
    or a problem the command cannot use fails before the long work."""
    from robocal.calibration import calibrate as run
    from robocal.outputs import preflight
    from robocal.problem import load_problem
    from robocal.provenance import input_files

    preflight(out_dir, [problem])
    with err.status("loading problem"):
        loaded = load_problem(problem)
    preflight(out_dir, input_files(loaded).values())
    if check is not None:
        check(loaded)
    with err.status(f"solving {len(loaded.layout)} parameters from {sum(m.n for m in loaded.measurements)} rows"):
        return loaded, run(loaded)


def calibrate(
    problem: Annotated[Path, typer.Argument(help="problem YAML")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/calibration"),
    fail_on: Annotated[
        str | None, typer.Option("--fail-on", help="exit with code 1 when the verdict is this level or worse: warning or fail (docs/trust.md)")
    ] = None,
    crossval: Annotated[
        bool, typer.Option("--crossval", help="also cross-validate (5 folds, seed 0): held-out errors in report.json `crossval`, findings in the verdict")
    ] = False,
) -> None:
    """Calibrate: write report.json, frames.yaml, calibrated.urdf and report.html to --out."""
    from robocal.outputs import moved, staged
    from robocal.report.console import print_summary
    from robocal.results import write_results

    levels: tuple[Level, ...] = ("warning", "fail")
    threshold = next((level for level in levels if level == fail_on), None)
    if fail_on is not None and threshold is None:
        raise RobocalError(f"--fail-on: 'warning' or 'fail', got '{fail_on}'")
    check = None
    if crossval:  # too few rows for the folds: refused before the solve
        from robocal.analysis.crossval import fold_assignment

        check = partial(fold_assignment, k=FOLDS)
    loaded, cal = _load_and_solve(problem, out_dir, check=check)
    if crossval:
        from robocal.analysis.crossval import cross_validate

        with progress_bar() as bar:
            task = bar.add_task("cross-validation folds", total=FOLDS)
            cal.crossval = cross_validate(loaded, FOLDS, 0, cal, done=lambda: bar.advance(task)).report()
    with staged(out_dir) as stage:
        files = moved(write_results(cal, stage), stage, out_dir)
    print_summary(cal, out)
    out.print("wrote " + ", ".join(str(f) for f in files), markup=False, highlight=False)
    if threshold is not None and cal.verdict.at_least(threshold):
        err.print(f"verdict {cal.verdict.level} (--fail-on {fail_on}): exit code 1", markup=False, highlight=False)
        raise typer.Exit(1)


def crossval(
    problem: Annotated[Path, typer.Argument(help="problem YAML")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/crossval"),
    k: Annotated[int | None, typer.Option("--k", min=2, help=f"folds (default {FOLDS})")] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="seed of the fold assignment (default 0)")] = None,
    by_file: Annotated[
        bool, typer.Option("--by-file", help="leave one data file out: one fold per data file (session, plate placement), instead of k seeded folds")
    ] = False,
    scales: Annotated[
        str | None,
        typer.Option("--scales", help="prior strengths, comma-separated multiples of the robot's prior sigmas; 0: no prior (default 0,0.1,0.3,1,3,10)"),
    ] = None,
) -> None:
    """k-fold (or leave-one-file-out) cross-validation under several prior strengths: held-out
    error per setting, a recommendation, crossval.json and crossval.png in --out (docs/trust.md)."""
    from robocal.analysis.prior_sweep import SCALES, label, plot_sweep, prior_sweep
    from robocal.outputs import moved, staged

    if by_file and (k is not None or seed is not None):
        raise RobocalError("--by-file makes one fold per data file: it takes no --k or --seed")
    chosen = SCALES if scales is None else csv_list(scales, "--scales", float)
    if not all(0 <= v < float("inf") for v in chosen):
        raise RobocalError(f"--scales '{scales}': every value must be a finite number >= 0")
    from robocal.analysis.crossval import file_assignment, fold_assignment

    k, seed = FOLDS if k is None else k, 0 if seed is None else seed
    check = file_assignment if by_file else partial(fold_assignment, k=k, seed=seed)  # one data file, or fewer rows than folds: refused before the solve
    loaded, cal = _load_and_solve(problem, out_dir, check=check)
    k = len(file_assignment(loaded)[1]) if by_file else k
    with progress_bar() as bar:
        task = bar.add_task(f"{len(chosen)} prior settings x {k} folds", total=len(chosen) * k)
        report = prior_sweep(loaded, chosen, k, seed, cal, done=lambda: bar.advance(task), by_file=by_file)
    scheme = "leave one file out" if by_file else f"{k}-fold cross-validation"
    with staged(out_dir) as stage:
        (stage / "crossval.json").write_text(json.dumps(report, indent=2) + "\n")
        plot_sweep(report, stage / "crossval.png", f"{problem.name}: {scheme}")
        files = moved([stage / "crossval.json", stage / "crossval.png"], stage, out_dir)
    table = Table(title=f"held-out errors ({scheme}): score = mean squared residual / sigma²; nominal robot {report['before']:.3g}")
    names_ = [m["name"] for m in report["settings"][0]["held_out"]]
    for column in ("robot priors", "score", *(f"{n} rms (mm)" for n in names_), "converged"):
        table.add_column(column, justify="left" if column == "robot priors" else "right")
    for s in report["settings"]:
        mark = " (recommended)" if s["scale"] == report["recommended"] else ""
        table.add_row(label(s["scale"]) + mark, f"{s['score']:.3g}", *(f"{m['rms'] * 1e3:.3f}" for m in s["held_out"]), "yes" if s["converged"] else "no")
    out.print(table)
    out.print(f"recommendation: {report['recommendation']}", markup=False, highlight=False)
    out.print("wrote " + ", ".join(str(f) for f in files), markup=False, highlight=False)


def evaluate(
    problem: Annotated[Path, typer.Argument(help="problem YAML used for calibration")],
    result: Annotated[Path, typer.Option("--result", help="output folder of `robocal calibrate`")],
    data: Annotated[
        list[Path] | None,
        typer.Option(
            "--data",
            help="data file or placement folder to evaluate on, for every measurement that reads it; NAME=FILE: for measurement NAME; repeat for several",
        ),
    ] = None,
    measurement: Annotated[
        str | None, typer.Option("--measurement", help="with --data: the measurement the data files are for (default: every one that reads a file)")
    ] = None,
    truth: Annotated[Path | None, typer.Option("--truth", help="true robot (URDF or DH table) to score the task error against")] = None,
    reference: Annotated[
        str | None, typer.Option("--reference", help="with --truth: reference tip of the task vectors (default: the task's, else the first tip)")
    ] = None,
    tips: Annotated[
        list[str] | None,
        typer.Option("--tips", help="with --truth: tip links, repeated or comma-separated (default: the task's, else the end effectors, else the leaf links)"),
    ] = None,
    n: Annotated[int | None, typer.Option("--n", min=1, help="with --truth: configurations in the test set (default: the task's n, else 1000)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", min=0, help="with --truth: seed of the test set (default: the task's seed, else 0)")] = None,
    force: Annotated[bool, typer.Option("--force", help="evaluate even if the problem, robot or training data changed after the calibration (warns)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON (SI units) for scripts, instead of tables in mm")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="with --data: also write the held-out page (verdict, table, warnings) to this new file")] = None,
) -> None:
    """Before/after errors (tables in mm; --json for scripts): on other data files or placement folders (--data, repeated),
    with the frames estimated during calibration, beside the training data, and warnings when the
    model holds only near its training data; or (--truth) the task error of the nominal and the
    calibrated robot against the true one, on a test set uniform in each fingertip's Cartesian
    workspace."""
    from robocal.evaluation import evaluate_files, evaluate_truth

    if (data is None) == (truth is None):
        raise RobocalError("give exactly one of --data (a data file) and --truth (the true robot)")
    if data is not None:
        extra = [f"--{name}" for name, value in (("reference", reference), ("tips", tips), ("n", n), ("seed", seed)) if value is not None]
        if extra:
            raise RobocalError(f"{', '.join(extra)}: only with --truth")
        if html is not None:
            from robocal.outputs import new_file

            new_file(html, [problem, *data])  # before the evaluation: a bad --html costs nothing
        report = evaluate_files(problem, result, data, measurement, force=force, warn=warn)
    else:
        if measurement is not None or html is not None:
            raise RobocalError(f"{'--measurement' if measurement is not None else '--html'}: only with --data")
        assert truth is not None  # exactly one of --data and --truth (checked above)
        report = evaluate_truth(problem, result, truth, reference, names(tips), n, seed, force=force, warn=warn)
    if html is not None:
        from robocal.report.evaluation import write_held_out_page

        write_held_out_page(report, html)
        err.print(f"wrote {html}", markup=False, highlight=False)
    if as_json:
        print(json.dumps(report, indent=2))
        return
    from robocal.report.evaluation import print_held_out, print_task

    (print_held_out if data is not None else print_task)(report, out)
