"""`robocal analyze` and `robocal design`: what a problem's measurements can identify, and which samples to record."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from robocal.cli.options import names
from robocal.errors import RobocalError
from robocal.terminal import err, out


def analyze(
    problem: Annotated[Path, typer.Argument(help="problem YAML")],
    as_json: Annotated[bool, typer.Option("--json", help="print the analysis as JSON")] = False,
    result: Annotated[
        Path | None, typer.Option("--result", help="output folder of `robocal calibrate`: analyze at its calibrated parameters (default: nominal)")
    ] = None,
    measurement: Annotated[list[str] | None, typer.Option("--measurement", help="use only these measurements (repeatable; default: all)")] = None,
    links: Annotated[
        list[str] | None,
        typer.Option(
            "--links", help="a mode: comma-separated links (e.g. two fingertips); only their rows and the parameters that move them. Repeat for several modes"
        ),
    ] = None,
    kernel_of: Annotated[
        str | None,
        typer.Option(
            "--kernel-of",
            help="with --within: test kernel(this measurement) in kernel(that one); 'task' (where no measurement has that name): the problem's task: its tips over its sampled test set, no data",
        ),
    ] = None,
    within: Annotated[str | None, typer.Option("--within", help="see --kernel-of")] = None,
    threshold: Annotated[float, typer.Option("--threshold", min=0.0, help="identifiable: eigenvalue of the unweighted J^T J (SI units) above this")] = 1e-6,
    plot: Annotated[Path | None, typer.Option("--plot", help="write the ordered eigenvalue spectra (every measurement and mode) to this image file")] = None,
) -> None:
    """Identifiability: rank and kernel of J^T J by parameter name, kernel inclusion between two
    measurements, Schroer-scaled condition number and observability indices O1-O5. With one mode
    --json prints {n_parameters, rank, threshold, eigenvalues, kernel, ...}; with several,
    {"modes": [...]}."""
    from robocal.analysis.identifiability import SpectrumSeries, plot_spectra
    from robocal.analysis.sensitivity import analyze as run
    from robocal.analysis.sensitivity import print_modes

    modes: list[list[str] | None] = [[link.strip() for link in value.split(",") if link.strip()] for value in links or ()] or [None]
    if any(mode == [] for mode in modes):
        raise RobocalError("--links: give at least one link name")
    with err.status("computing the Jacobian"):
        if result is not None:
            from robocal.evaluation import load_stored

            loaded, stored = load_stored(problem, result)
            theta = stored.vectors(loaded.layout.names, loaded.theta0)[1]
        else:
            from robocal.problem import load_problem

            loaded, theta = load_problem(problem), None
        analyses = run(loaded, theta, modes, measurements=measurement, kernel_of=kernel_of, within=within, threshold=threshold)
    if plot is not None:
        series = [SpectrumSeries(r.name, mode.label, r.identifiability.eigenvalues) for mode in analyses for r in mode.measurements]
        plot_spectra(series, plot, threshold, title=f"{problem.name}: ordered eigenvalues of $J^T J$")
    if as_json:
        dicts = [a.to_dict() for a in analyses]
        print(json.dumps(dicts[0] if len(dicts) == 1 else {"modes": dicts}, indent=2))
        return
    print_modes(analyses, out, f"the parameters of {result}" if result is not None else "nominal parameters")
    if plot is not None:
        out.print(f"wrote {plot}", markup=False, highlight=False)


class Strategy(StrEnum):
    greedy = "greedy"
    detmax = "detmax"
    random = "random"


def design(
    problem: Annotated[Path, typer.Argument(help="problem YAML whose measurement rows are the candidate samples")],
    n: Annotated[int, typer.Option("--n", min=1, help="samples to choose")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/design"),
    strategy: Annotated[
        Strategy, typer.Option("--strategy", help="greedy; detmax: DETMAX exchanges from the greedy design; random: the baseline")
    ] = Strategy.detmax,
    result: Annotated[
        Path | None, typer.Option("--result", help="output folder of `robocal calibrate`: evaluate the Jacobians at its estimate (default: nominal)")
    ] = None,
    reference: Annotated[
        str | None, typer.Option("--reference", help="reference link of the task (default: the task's; else the first tip, the root link with one tip)")
    ] = None,
    tips: Annotated[
        list[str] | None,
        typer.Option("--tips", help="tip links of the task, repeated or comma-separated (default: the task's, else the end effectors, else the leaf links)"),
    ] = None,
    n_test: Annotated[
        int | None, typer.Option("--n-test", min=1, help="configurations of the task's uniform Cartesian test set (default: the task's n, else 1000)")
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, help="seed of the test set and of the random strategy (default: the task's seed, else 0)")
    ] = None,
) -> None:
    """Task D-optimal choice of calibration samples: writes selection.json and, per measurement,
    its data file reduced to the chosen rows. The task: the problem's `task:` (its tips,
    reference, n and seed), each option given here in its place."""
    import numpy as np

    from robocal.design import choose, data_tables, design_criterion, sample_index, write_selection
    from robocal.evaluation import chosen_task, load_stored
    from robocal.outputs import moved, preflight, staged
    from robocal.problem import load_problem
    from robocal.provenance import input_files

    preflight(out_dir, [problem] if result is None else [problem, result])  # the result folder is read: never written into
    with err.status("loading problem"):
        if result is None:
            loaded = load_problem(problem)
            theta = loaded.theta0
        else:
            loaded, stored = load_stored(problem, result)
            theta = stored.vectors(loaded.layout.names, loaded.theta0)[1]
    preflight(out_dir, input_files(loaded).values())
    tables = data_tables(loaded)
    n_candidates = len(sample_index(loaded))
    if n > n_candidates:  # before the Jacobians: a bad --n costs nothing
        raise RobocalError(f"--n {n}: the problem has only {n_candidates} candidate samples")
    task = chosen_task(loaded, reference, names(tips), n_test, seed)
    with err.status(f"Jacobians of {n_candidates} candidate samples and of the task ({task.n} test configurations)"):
        criterion = design_criterion(loaded, np.asarray(theta), task)
    with err.status(f"{strategy.value}: choosing {n} of {criterion.n_candidates}"):
        chosen = choose(criterion, n, strategy.value, task.seed)
        baseline = criterion.random(n, task.seed)
    with staged(out_dir) as stage:
        files = moved(write_selection(loaded, chosen, tables, stage), stage, out_dir)
    out.print(f"task: {', '.join(task.tips)} relative to {task.reference}, {task.n} test configurations (seed {task.seed})")
    out.print(
        f"{strategy.value}: log det of the task covariance {chosen.criterion:.3f} (random: {baseline.criterion:.3f}); predicted task RMS {chosen.predicted_rms * 1e3:.4f} mm (random: {baseline.predicted_rms * 1e3:.4f} mm)"
    )
    out.print("wrote " + ", ".join(str(f) for f in files), markup=False, highlight=False)
