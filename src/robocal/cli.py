"""The `robocal` command line. User errors print one located message and exit with code 2."""

from __future__ import annotations

import json
import os
import sys
import time
from enum import Enum
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
    from robocal.outputs import moved, preflight, staged
    from robocal.problem import load_problem
    from robocal.provenance import input_files
    from robocal.report.console import print_summary
    from robocal.results import write_results

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


@app.command()
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
        tip_list = [t.strip() for value in tips or () for t in value.split(",") if t.strip()] or None
        options = {k: v for k, v in (("n", n), ("seed", seed)) if v is not None}
        report = evaluate_truth(problem, result, truth, reference, tip_list, **options, force=force, warn=warn)
    print(json.dumps(report, indent=2))


@app.command()
def analyze(
    problem: Annotated[Path, typer.Argument(help="problem YAML")],
    as_json: Annotated[bool, typer.Option("--json", help="print the analysis as JSON")] = False,
    result: Annotated[Optional[Path], typer.Option("--result", help="output folder of `robocal calibrate`: analyze at its calibrated parameters (default: nominal)")] = None,
    measurement: Annotated[Optional[list[str]], typer.Option("--measurement", help="use only these measurements (repeatable; default: all)")] = None,
    links: Annotated[Optional[list[str]], typer.Option("--links", help="a mode: comma-separated links (e.g. two fingertips); only their rows and the parameters that move them. Repeat for several modes")] = None,
    kernel_of: Annotated[Optional[str], typer.Option("--kernel-of", help="with --within: test kernel(this measurement) in kernel(that one)")] = None,
    within: Annotated[Optional[str], typer.Option("--within", help="see --kernel-of")] = None,
    threshold: Annotated[float, typer.Option("--threshold", min=0.0, help="identifiable: eigenvalue of the unweighted J^T J (SI units) above this")] = 1e-6,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="write the ordered eigenvalue spectra (every measurement and mode) to this image file")] = None,
) -> None:
    """Identifiability: rank and kernel of J^T J by parameter name, kernel inclusion between two
    measurements, Schroer-scaled condition number and observability indices O1-O5. With one mode
    --json prints {n_parameters, rank, threshold, eigenvalues, kernel, ...}; with several,
    {"modes": [...]}."""
    from robocal.analysis.identifiability import SpectrumSeries, plot_spectra
    from robocal.analysis.sensitivity import analyze as run, print_modes

    modes = [[link.strip() for link in value.split(",") if link.strip()] for value in links or ()] or [None]
    if any(mode == [] for mode in modes):
        raise RobocalError("--links: give at least one link name")
    with err.status("computing the Jacobian"):
        if result is not None:
            from robocal.evaluation import load_stored

            loaded, _, theta = load_stored(problem, result)
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


class DemoKind(str, Enum):
    contact = "contact"
    markers = "markers"


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/demo"),
    kind: Annotated[DemoKind, typer.Option("--kind", help="contact: pairwise fingertip contacts; markers: fingertip markers")] = DemoKind.contact,
) -> None:
    """Calibrate a simulated, perturbed DLR-Hand II end to end (no files needed)."""
    from importlib import import_module

    import_module(f"robocal.demos.{kind.value}").run_demo(out_dir, out)


class Strategy(str, Enum):
    greedy = "greedy"
    detmax = "detmax"
    random = "random"


@app.command()
def design(
    problem: Annotated[Path, typer.Argument(help="problem YAML whose measurement rows are the candidate samples")],
    n: Annotated[int, typer.Option("--n", min=1, help="samples to choose")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/design"),
    strategy: Annotated[Strategy, typer.Option("--strategy", help="greedy; detmax: DETMAX exchanges from the greedy design; random: the baseline")] = Strategy.detmax,
    result: Annotated[Optional[Path], typer.Option("--result", help="output folder of `robocal calibrate`: evaluate the Jacobians at its estimate (default: nominal)")] = None,
    reference: Annotated[Optional[str], typer.Option("--reference", help="reference link of the task (default: the first tip; the root link with one tip)")] = None,
    tips: Annotated[Optional[list[str]], typer.Option("--tips", help="tip links of the task, repeated or comma-separated (default: the end effectors, else the leaf links)")] = None,
    n_test: Annotated[int, typer.Option("--n-test", min=1, help="configurations of the task's uniform Cartesian test set")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="seed of the test set and of the random strategy")] = 0,
) -> None:
    """Task D-optimal choice of calibration samples: writes selection.json and, per measurement,
    its data file reduced to the chosen rows."""
    import numpy as np

    from robocal.analysis.task_uncertainty import Task
    from robocal.design import choose, design_criterion, write_selection
    from robocal.evaluation import load_stored
    from robocal.outputs import moved, preflight, staged
    from robocal.problem import load_problem
    from robocal.provenance import input_files

    preflight(out_dir, [problem])
    with err.status("loading problem"):
        if result is None:
            loaded = load_problem(problem)
            theta = loaded.theta0
        else:
            loaded, _, theta = load_stored(problem, result)
    preflight(out_dir, input_files(loaded).values())
    tip_list = [t.strip() for value in tips or () for t in value.split(",") if t.strip()] or None
    task = Task.default(loaded, reference, tip_list, n=n_test, seed=seed)
    with err.status(f"Jacobians of {sum(m.n for m in loaded.measurements)} candidate samples and of the task ({n_test} test configurations)"):
        criterion = design_criterion(loaded, np.asarray(theta), task)
    if n > criterion.n_candidates:
        raise RobocalError(f"--n {n}: the problem has only {criterion.n_candidates} candidate samples")
    with err.status(f"{strategy.value}: choosing {n} of {criterion.n_candidates}"):
        chosen = choose(criterion, n, strategy.value, seed)
        baseline = criterion.random(n, seed)
    with staged(out_dir) as stage:
        files = moved(write_selection(loaded, chosen, stage), stage, out_dir)
    out.print(f"task: {', '.join(task.tips)} relative to {task.reference}, {n_test} test configurations")
    out.print(f"{strategy.value}: log det of the task covariance {chosen.criterion:.3f} (random: {baseline.criterion:.3f}); predicted task RMS {chosen.predicted_rms * 1e3:.4f} mm (random: {baseline.predicted_rms * 1e3:.4f} mm)")
    out.print("wrote " + ", ".join(str(f) for f in files), markup=False, highlight=False)


def progress_bar(remaining: bool = False):
    """The commands' progress bar on stderr (description, bar, done of total, elapsed and, for
    long runs, remaining time); it disappears when done. Where stderr is not a terminal (a log
    file, CI), a line per task at most every LOG_EVERY seconds and when it completes instead."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if not err.is_terminal:
        return _LoggedProgress()
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()] + ([TimeRemainingColumn()] if remaining else [])
    return Progress(*columns, console=err, transient=True)


class _LoggedProgress:
    """The part of rich's Progress the commands use, as plain lines for a log."""

    LOG_EVERY = 30.0  # s

    def __init__(self) -> None:
        self._tasks: list[dict] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def add_task(self, description: str, total: float | None = None) -> int:
        self._tasks.append({"description": description, "total": total, "completed": 0, "start": time.monotonic(), "logged": time.monotonic(), "finished": False})
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


def _csv_list(value: str, option: str, cast=str, positive: bool = False) -> tuple:
    """The items of a comma-separated option; a given option must name at least one, and with
    `positive` every item must be a finite number above 0."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    what = f"{option} '{value}'"
    if not items:
        raise RobocalError(f"{what}: expected a comma-separated list of at least one item")
    try:
        values = tuple(cast(v) for v in items)
    except ValueError:
        raise RobocalError(f"{what}: expected a comma-separated list of {cast.__name__} values") from None
    if positive and not all(0 < v < float("inf") for v in values):
        raise RobocalError(f"{what}: every value must be a positive, finite number")
    return values


@app.command()
def study(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/study"),
    hands: Annotated[int, typer.Option("--hands", min=1, help="simulated hands (perturbed DLR-Hand II)")] = 100,
    sizes: Annotated[str, typer.Option("--sizes", help="calibration set sizes, comma-separated")] = "25,50,100,150,200,250,300",
    strategies: Annotated[str, typer.Option("--strategies", help="comma-separated: random, greedy, detmax")] = "random,greedy,detmax",
    measurements: Annotated[str, typer.Option("--measurements", help="comma-separated: contact, cartesian")] = "contact,cartesian",
    pool_per_pair: Annotated[int, typer.Option("--pool-per-pair", min=1, help="contact candidates per finger pair (6 pairs)")] = 100,
    cartesian_pool: Annotated[int, typer.Option("--cartesian-pool", min=1, help="cartesian candidate configurations (one sample per fingertip each)")] = 150,
    seed: Annotated[int, typer.Option("--seed", help="hand h is perturbed and measured with seed + h")] = 0,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="processes (default: one per CPU core)")] = None,
) -> None:
    """The hand-calibration paper's simulation study (Figs. 8, 9): task error against calibration
    set size for random and task D-optimal selections of contacts and fingertip markers.
    Writes study.json (curves, checks, every hand) and study.png."""
    import time

    from robocal.study.hands import StudyConfig, run_hands
    from robocal.study.plot import plot_study
    from robocal.study.summary import summarize

    try:
        config = StudyConfig(
            hands=hands, sizes=_csv_list(sizes, "--sizes", int, positive=True), strategies=_csv_list(strategies, "--strategies"), measurements=_csv_list(measurements, "--measurements"),
            pool_per_pair=pool_per_pair, cartesian_pool=cartesian_pool, seed=seed,
        )
    except ValueError as exc:
        raise RobocalError(str(exc)) from None
    workers = min(workers or os.cpu_count() or 1, hands)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with progress_bar(remaining=True) as bar:
        task = bar.add_task(f"hands ({workers} processes; the first hand compiles)", total=hands)
        rows = run_hands(config, workers=workers, progress=lambda _row: bar.advance(task))
    summary = summarize(config, rows, time.perf_counter() - started)
    (out_dir / "study.json").write_text(json.dumps(summary, indent=1))
    plot_study(summary, out_dir / "study.png")
    for name, curves in summary["curves"].items():
        out.print(f"{name}: mean task error (mm) over {hands} hands; set sizes {', '.join(map(str, summary['sizes']))}")
        for strategy, curve in curves.items():
            out.print(f"  {strategy:7s} " + "  ".join(f"{v * 1e3:8.4f}" for v in curve["mean"]["mean"]))
    out.print("checks: " + json.dumps(summary["checks"]), markup=False, highlight=False)
    out.print(f"{summary['seconds']:.0f} s; wrote {out_dir / 'study.json'}, {out_dir / 'study.png'}", markup=False, highlight=False)


simulate_app = typer.Typer(no_args_is_help=True, help="Simulate calibration data of a perturbed robot.")
app.add_typer(simulate_app, name="simulate")


class Detection(str, Enum):
    geometric = "geometric"
    torque = "torque"


@simulate_app.command("contact")
def simulate_contact(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    n_per_pair: Annotated[int, typer.Option("--n-per-pair", min=1, help="contacts per fingertip pair (6 pairs)")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="seed of the true hand and of the contact search")] = 0,
    translation: Annotated[float, typer.Option("--translation", min=0.0, help="largest error of a DH length (d, a) of the true hand, m")] = 0.005,
    rotation_deg: Annotated[float, typer.Option("--rotation-deg", min=0.0, help="largest error of a DH angle (theta, alpha) of the true hand, deg")] = 5.0,
    detection: Annotated[Detection, typer.Option("--detection", help="geometric: exact first touch; torque: joint-torque threshold on a compliant contact")] = Detection.geometric,
    joint_noise: Annotated[float, typer.Option("--joint-noise", min=0.0, help="std of the encoder noise added to the recorded joint values, rad")] = 0.0,
) -> None:
    """Fingertip contacts of a perturbed DLR-Hand II (the paper's contact search), as a problem to calibrate.

    Writes contacts.csv, true.urdf (the true hand), the DH table and geometry, and problem.yaml."""
    import numpy as np
    from rich.table import Table

    from robocal.simulation.contact import FAILURES, REJECTIONS, dlr_hand_pairs, simulate_dlr_hand

    pairs = dlr_hand_pairs()
    done: dict = {}
    with progress_bar() as bar:
        task = bar.add_task("contact search", total=len(pairs) * n_per_pair)

        def progress(pair, count, _n):
            done[pair] = count
            bar.update(task, completed=sum(done.values()), description=f"contact search {pair[0]} / {pair[1]}")

        result = simulate_dlr_hand(
            out_dir, n_per_pair=n_per_pair, seed=seed, translation=translation, rotation=float(np.deg2rad(rotation_deg)), detection=detection.value, joint_noise=joint_noise, progress=progress
        )
    sim = result.sim
    out.print(f"true hand: the {len(result.theta_true)} DH parameters of the finger joints perturbed by up to {translation * 1e3:g} mm / {rotation_deg:g} deg (seed {seed})")
    table = Table(title=f"simulated contacts ({detection.value} detection, joint noise {joint_noise:g} rad)", caption="failed drives (retried): " + " / ".join(FAILURES) + "; planned drives the nominal model rejected: " + " / ".join(REJECTIONS))
    for column in ("pair", "contacts", "failed", "rejected", "mean |d| (m)"):
        table.add_column(column, justify="left" if column == "pair" else "right")
    for row in sim.summary():
        failed, rejected = (" / ".join(str(row[kind].get(r, 0)) for r in reasons) for kind, reasons in (("failures", FAILURES), ("rejections", REJECTIONS)))
        table.add_row(" / ".join(row["pair"]), str(row["contacts"]), failed, rejected, f"{row['mean_abs_distance']:.2e}")
    out.print(table)
    failed = sum(sum(f.values()) for f in sim.failures.values())
    rejected = sum(sum(r.values()) for r in sim.rejections.values())
    out.print(f"{len(sim)} contacts from {len(sim) + failed} executed drives ({failed} failed and retried); the nominal model rejected {rejected} planned drives")
    out.print(f"mean |true signed distance| at the recorded joint values: {np.abs(sim.true_distance).mean():.3e} m (max {np.abs(sim.true_distance).max():.3e} m)")
    if detection is Detection.torque:
        depth = -sim.true_distance * 1e3
        out.print(f"penetration at torque detection (mm): mean {depth.mean():.4f}, median {np.median(depth):.4f}, min {depth.min():.4f}, max {depth.max():.4f}")
    out.print(f"wrote {', '.join(str(f) for f in result.files)} in {result.seconds:.1f} s", markup=False, highlight=False)
    out.print(f"calibrate: robocal calibrate {result.problem} --out {Path(out_dir) / 'result'}", markup=False, highlight=False)


@simulate_app.command("sockets")
def simulate_sockets(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of the robot, with the ball link")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    link: Annotated[str, typer.Option("--link", help="the link whose origin is the ball center")] = "ball_link",
    n_per_socket: Annotated[int, typer.Option("--n-per-socket", min=1, help="configurations per socket (2 sockets per placement, 4 placements)")] = 30,
    translation: Annotated[float, typer.Option("--translation", min=0.0, help="largest error of an origin's x, y, z in the true robot, m (also the prior sigma)")] = 0.001,
    rotation_deg: Annotated[float, typer.Option("--rotation-deg", min=0.0, help="largest error of an origin's roll, pitch, yaw in the true robot, deg (also the prior sigma)")] = 0.5,
    joint_noise: Annotated[float, typer.Option("--joint-noise", min=0.0, help="std of the encoder noise added to the recorded joint values, rad")] = 1e-4,
    seed: Annotated[int, typer.Option("--seed", help="seed of the true robot, the configurations and the noise")] = 0,
) -> None:
    """Sphere-in-socket (MUKCa) recordings of a perturbed robot with a ball on its flange, as problems to calibrate.

    Writes nominal.urdf, true.urdf, data/<placement>/hole_0.csv and hole_1.csv, one <placement>.yaml
    per plate placement, and truth.json (socket centers, nominal MAE and joint-noise floor)."""
    import numpy as np
    from rich.table import Table

    from robocal.simulation.sockets import simulate_sockets as run

    with progress_bar() as bar:
        task = bar.add_task("sampling configurations (the first socket compiles)", total=None)

        def progress(done, total, label):
            bar.update(task, completed=done, total=total, description=f"sampled {label}")

        result = run(
            robot, out_dir, link=link, n_per_socket=n_per_socket, translation=translation, rotation=float(np.deg2rad(rotation_deg)), joint_noise=joint_noise, seed=seed, progress=progress
        )
    truth = result.truth_json
    out.print(f"true robot: the origins of {', '.join(truth['perturbed_joints'])} perturbed by up to {translation * 1e3:g} mm / {rotation_deg:g} deg (seed {seed})")
    table = Table(title=f"simulated sphere-in-socket recordings of '{link}' (joint noise {joint_noise:g} rad)")
    for column in ("placement", "socket 0 (m)", "rows", "nominal MAE (mm)", "noise floor (mm)"):
        table.add_column(column, justify="left" if column == "placement" else "right")
    for name, entry in truth["placements"].items():
        table.add_row(name, " ".join(f"{v:.3f}" for v in entry["sockets"][0]), str(sum(entry["rows"])), f"{entry['nominal_mae'] * 1e3:.3f}", f"{entry['noise_floor_mae'] * 1e3:.4f}")
    out.print(table)
    out.print(f"wrote {len(result.files)} files to {out_dir} in {result.seconds:.1f} s (truth: {out_dir / 'truth.json'})", markup=False, highlight=False)
    for name, problem in result.problems.items():
        out.print(f"calibrate: robocal calibrate {problem} --out {Path(out_dir) / 'result' / name}", markup=False, highlight=False)


@simulate_app.command("base")
def simulate_base(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    seed: Annotated[int, typer.Option("--seed", help="seed of the sensor noise and the tracking losses")] = 0,
) -> None:
    """A differential-drive base (the KeJia of the platform paper) driven through spins, straight
    lines, circles, S-shapes and one-wheel turns, recorded as a mobile-base calibration records it.

    Writes the motion capture (mocap.c3d, mocap_optitrack.csv, mocap_vicon.csv, on the mocap
    clock), the robot log (robot.mcap, robot_bag/, robot.bag: wheel joint states and the nominal
    odometry, on the robot clock), laser_intervals.csv (scan matching), segments.json and truth.json."""
    import numpy as np
    from rich.table import Table

    from robocal.simulation.base import simulate_base as run

    result = run(out_dir, seed=seed)
    truth = result["truth"]
    table = Table(title=f"simulated mobile base (seed {seed})")
    for column in ("parameter", "unit", "true", "nominal"):
        table.add_column(column, justify="left" if column in ("parameter", "unit") else "right")
    for name, value in truth["true"].items():
        unit = "rad" if name.endswith("yaw") else "s" if name == "clock_offset" else "m"
        table.add_row(name, unit, f"{value:.6g}", f"{truth['nominal'][name]:.6g}")
    out.print(table)
    noise = truth["noise"]
    out.print(
        f"clocks: {truth['clock']}; noise: markers {noise['marker'] * 1e3:g} mm, encoders {noise['ticks_per_rev']} ticks/rev, "
        f"laser {noise['laser_xy'] * 1e3:g} mm / {np.rad2deg(noise['laser_yaw']):g} deg",
        markup=False,
        highlight=False,
    )
    spans = ", ".join(f"{s['name']} {s['start']:.1f}-{s['end']:.1f} s" for s in result["segments"])
    out.print(f"segments (robot clock): {spans}", markup=False, highlight=False)
    out.print(f"wrote {len(result['files'])} files to {out_dir} in {result['seconds']:.1f} s ({truth['laser_intervals']} laser intervals)", markup=False, highlight=False)


@simulate_app.command("glove")
def simulate_glove(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")],
    seed: Annotated[int, typer.Option("--seed", help="seed of the operator's hand and glove, the poses and the vision noise")] = 0,
    poses: Annotated[int, typer.Option("--poses", min=1, help="calibration poses (each shows every fingertip)")] = 60,
    test_poses: Annotated[int, typer.Option("--test-poses", min=1, help="held-out test poses")] = 200,
    noise: Annotated[float, typer.Option("--noise", min=0.0, help="vision noise, std per fingertip coordinate (m)")] = 0.0005,
) -> None:
    """A synthetic operator wearing a 22-sensor data glove (the glove seed's protocol): perturbed
    link lengths, offsets, gains and cross-couplings; raw readings and stereo-camera fingertip
    positions in the hand base frame. Writes calibration.csv, test.csv, truth.json, the nominal
    hand and glove files and problem.yaml (solver: the seed's scaled-SVD least squares)."""
    from robocal.simulation.glove import simulate_glove as run

    result = run(out_dir, seed=seed, n_calibration=poses, n_test=test_poses, noise=noise)
    out.print(f"wrote {result.folder}: {poses} calibration and {test_poses} test poses, {len(result.truth)} true parameters (truth.json)", markup=False, highlight=False)
    out.print(f"calibrate: robocal calibrate {result.problem} --out {result.folder / 'result'}", markup=False, highlight=False)


@simulate_app.command("fleet")
def simulate_fleet(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of the arm (it needs a link named 'tool'), e.g. examples/fleet/arm_6r.urdf")],
    units: Annotated[int, typer.Option("--units", min=1, help="units in the batch")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder (new or empty)")] = Path("fleet"),
    postures: Annotated[int, typer.Option("--postures", min=1, help="marker postures per unit")] = 40,
    tolerance: Annotated[float, typer.Option("--tolerance", min=0.0, help="manufacturing tolerance of a joint offset, rad (uniform +-)")] = 0.001,
    defect: Annotated[float, typer.Option("--defect", min=0.0, help="a defective unit's slipped joint offset, rad")] = 0.02,
    defect_share: Annotated[float, typer.Option("--defect-share", min=0.0, max=1.0, help="share of defective units")] = 0.03,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """A batch of units of one arm, a session folder each (problem.yaml, robot.urdf, markers.csv), and truth.json."""
    from robocal.simulation.fleet import simulate_fleet as run

    if out_dir.exists() and any(out_dir.iterdir()):
        raise RobocalError(f"{out_dir}: exists and is not empty; give a new folder")
    with err.status(f"simulating {units} units"):
        truth = run(out_dir, robot, units, postures=postures, tolerance=tolerance, defect=defect, defect_share=defect_share, seed=seed)
    bad = sum(u["defective"] for u in truth["units"].values())
    out.print(f"wrote {out_dir}: {units} units ({bad} defective), truth.json", markup=False, highlight=False)
    out.print(f"next: robocal fleet init && robocal fleet ingest {out_dir} && robocal fleet run", markup=False, highlight=False)


record_app = typer.Typer(no_args_is_help=True, help="Record calibration data at the robot, in the terminal.")
app.add_typer(record_app, name="record")


class JointSourceKind(str, Enum):
    ros2 = "ros2"
    sim = "sim"
    replay = "replay"


@record_app.command("sockets")
def record_sockets(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of the robot, with the ball link")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder: hole_0.csv, hole_1.csv, ... (one configuration per row, rad)")],
    link: Annotated[str, typer.Option("--link", help="the link whose origin is the ball center")] = "ball_link",
    source: Annotated[JointSourceKind, typer.Option("--source", help="ros2: the robot's JointState topic; sim: a simulated robot and operator; replay: the configurations of a recorded folder, again")] = JointSourceKind.ros2,
    replay: Annotated[Optional[Path], typer.Option("--replay", help="with --source replay: a recorded folder (hole_<k>.csv)")] = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="with --source ros2: the sensor_msgs/msg/JointState topic (default: /joint_states)")] = None,
    sockets: Annotated[int, typer.Option("--sockets", min=1, max=10, help="sockets on the plate: keys 0 to N-1")] = 2,
    distance: Annotated[Optional[float], typer.Option("--distance", help="known distance between sockets 0 and 1 (m), to show the distortion")] = None,
    force: Annotated[bool, typer.Option("--force", help="replace the socket files of a non-empty --out folder")] = False,
) -> None:
    """Record sphere-in-socket configurations (MUKCa) while you guide the arm by hand: keys 0-9
    store the current configuration for that socket, u undoes the last store, w writes --out and
    quits, q quits without writing. Shows the stored count, the spread of the nominal model's ball
    centers per socket and, with --distance, the distortion."""
    from functools import partial

    from robocal.record.recorder import record_sockets as run
    from robocal.record.sources import open_source

    if (replay is not None) != (source is JointSourceKind.replay):
        raise RobocalError("--replay FOLDER goes with --source replay, and only with it")
    if topic is not None and source is not JointSourceKind.ros2:
        raise RobocalError("--topic: only with --source ros2")
    if distance is not None and (distance <= 0 or sockets < 2):
        raise RobocalError(f"--distance {distance:g}: must be positive (m), between sockets 0 and 1 of a plate with --sockets 2 or more")
    opener = partial(open_source, source.value, replay=replay, topic=topic or "/joint_states", distance=distance)
    try:
        files = run(robot, out_dir, link, opener, sockets, distance, force, out)
    except KeyboardInterrupt:  # say what became of the recording
        err.print("interrupted: nothing written")
        sys.exit(130)
    out.print(f"wrote {', '.join(str(f) for f in files)}" if files else "quit: nothing written", markup=False, highlight=False)


teleop_app = typer.Typer(no_args_is_help=True, help="Map a human hand's joint values onto a robot hand.")
app.add_typer(teleop_app, name="teleop")


class TeleopMode(str, Enum):
    joint = "joint"
    fingertip = "fingertip"


@teleop_app.command("show")
def teleop_show(
    joints: Annotated[Path, typer.Option("--joints", help="CSV of human joint values: a column per actuated joint of the human hand (rad), a row per pose; with --sensors, raw readings: a column per sensor")],
    sensors: Annotated[Optional[Path], typer.Option("--sensors", help="joint sensor file (e.g. calibrated_sensors.yaml of `robocal calibrate`) turning the raw glove readings of --joints into joint values")] = None,
    row: Annotated[int, typer.Option("--row", min=1, help="the pose to show: data row N (1 = the first row after the header)")] = 1,
    mode: Annotated[TeleopMode, typer.Option("--mode", help="joint: joint-space mapping (power grasps); fingertip: modified fingertip mapping (precision grasps)")] = TeleopMode.fingertip,
    mapping_file: Annotated[Optional[Path], typer.Option("--mapping", help="mapping file (default: the packaged human hand -> DLR-Hand II mapping)")] = None,
    objects: Annotated[Optional[list[str]], typer.Option("--object", help="an object in the palm frame (m), repeatable: sphere:x,y,z,r | box:x,y,z,hx,hy,hz | capsule:x0,y0,z0,x1,y1,z1,r")] = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold", min=0.0, help="warn when a fingertip is closer than this to another or to an object (m; default: the mapping file's)")] = None,
    out_file: Annotated[Path, typer.Option("--out", help="picture to write")] = Path("out/teleop.png"),
    interactive: Annotated[bool, typer.Option("--interactive", help="open an interactive 3D window instead of writing --out")] = False,
) -> None:
    """Both hands side by side in one pose of a joint-value file, with contact warnings. The
    fingertip mapping replays rows 1 to N in order, each warm-started from the last, as a live
    stream would."""
    from robocal.io.table import read_table
    from robocal.teleop import HandMapping
    from robocal.teleop.contact import contact_warnings, parse_object
    from robocal.teleop.picture import draw, save_picture

    mapping = HandMapping.load(mapping_file)
    if interactive:
        import matplotlib

        if not matplotlib.get_backend().lower().startswith(("qt", "tk", "gtk", "wx", "macosx")):
            raise RobocalError(f"--interactive needs a display and a GUI backend for matplotlib (it has '{matplotlib.get_backend()}'); "
                               "write a picture with --out instead")
    table = read_table(joints)
    if row > len(table):
        raise RobocalError(f"{joints}: --row {row}, but the file has {len(table)} data rows")
    if sensors is None:
        poses = table.columns(list(mapping.config.human.actuated), what="human joint column")
    else:
        from robocal.kinematics.sensors import JointSensors

        glove = JointSensors.load(sensors, mapping.config.human.actuated)
        poses = glove.joint_values(table.columns(list(glove.sensors), what="sensor column"))
    obstacles = [parse_object(text, f"object {i + 1}") for i, text in enumerate(objects or ())]
    human = poses[row - 1]
    targets = None
    if mode is TeleopMode.joint:
        q = mapping.joint_map(human)
    else:
        result = None
        for pose in poses[:row]:
            result = mapping.fingertip_map(pose, None if result is None else result.q)
        q, targets = result.q, result.targets
        for name, distance, reached in zip(mapping.fingers, result.distance, result.reached):
            out.print(f"{name}: target {'reached' if reached else f'out of reach, closest point {distance * 1e3:.1f} mm away'}", markup=False, highlight=False)
    out.print("robot joints (rad): " + ", ".join(f"{n}={v:.4f}" for n, v in zip(mapping.config.robot.actuated, q)), markup=False, highlight=False)
    warnings = contact_warnings(mapping, q, obstacles, threshold)
    for i, o in enumerate(objects or ()):
        out.print(f"object {i + 1}: {o}", markup=False, highlight=False)
    for w in warnings:
        out.print(f"warning: {w}", markup=False, highlight=False)
    title = f"{joints.name}, row {row}, {mode.value} mapping"
    if interactive:
        import matplotlib.pyplot as plt

        draw(mapping, human, q, warnings, obstacles, targets, figure=plt.figure(figsize=(12, 6)), title=title)
        plt.show()
    else:
        save_picture(draw(mapping, human, q, warnings, obstacles, targets, title=title), out_file)
        out.print(f"wrote {out_file}", markup=False, highlight=False)


grasp_app = typer.Typer(no_args_is_help=True, help="Grasp control of the DLR-Hand II in simulation.")
app.add_typer(grasp_app, name="grasp")

from robocal.fleet.cli import app as fleet_app  # noqa: E402

app.add_typer(fleet_app, name="fleet")


@grasp_app.command("evaluate")
def grasp_evaluate(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/grasp"),
    objects: Annotated[Optional[str], typer.Option("--objects", help="comma-separated object names (default: the whole catalog)")] = None,
    grasps: Annotated[int, typer.Option("--grasps", min=1, help="successful grasps evaluated per object")] = 8,
    forces: Annotated[int, typer.Option("--forces", min=1, help="external forces per grasp")] = 10,
    methods: Annotated[str, typer.Option("--methods", help="comma-separated: controller, fixed_offsets, without_wrench_estimate")] = "controller,fixed_offsets,without_wrench_estimate",
    scales: Annotated[str, typer.Option("--scales", help="baseline scales, comma-separated")] = "1,1.5,2,2.5,3",
    margin: Annotated[float, typer.Option("--margin", min=0.0, help="friction margin of our controller per fingertip (N)")] = 0.5,
    filter_time: Annotated[float, typer.Option("--filter-time", min=0.0, help="time constant of our controller's low-pass on the wrench estimate (s; 0: none)")] = 0.1,
    gravity: Annotated[bool, typer.Option("--gravity/--no-gravity", help="gravity on the object")] = False,
    ramp: Annotated[float, typer.Option("--ramp", min=0.0, help="seconds over which the force rises to its full size")] = 4.0,
    hold: Annotated[float, typer.Option("--hold", min=0.0, help="seconds the full force is held")] = 4.0,
    seed: Annotated[int, typer.Option("--seed", help="seeds the grasps and the forces")] = 0,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="processes (default: one per CPU core)")] = None,
) -> None:
    """The grasp-controller paper's simulated evaluation: per grasp, forces pushing on random
    surface points (10 N, 5 N for precision grasps) ramped over 4 s and held 4 s; a grasp breaks
    when the object moves over 3 cm or 20 deg. Writes results.json (every grasp attempt and
    trial, and the summary), breaks_vs_torque.png (Fig. 7) and deviations.png (Fig. 8)."""
    import time

    import numpy as np

    from robocal.grasp.controller import METHODS
    from robocal.grasp.evaluation import EvaluationConfig, object_names, run_evaluation
    from robocal.grasp.figures import plot_breaks_vs_torque, plot_deviation_densities
    from robocal.grasp.metrics import summarize

    chosen = _csv_list(methods, "--methods")
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        raise RobocalError(f"--methods: unknown {', '.join(unknown)} (one of {', '.join(METHODS)})")
    config = EvaluationConfig(objects=() if objects is None else _csv_list(objects, "--objects"), grasps=grasps, forces=forces, methods=chosen, scales=_csv_list(scales, "--scales", float, positive=True), seed=seed, gravity=gravity, margin=margin, filter_time=filter_time, ramp=ramp, hold=hold)
    object_names(config)  # unknown names are an error before anything runs
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with progress_bar(remaining=True) as bar:
        tasks = {}

        def progress(phase, done, total):
            if phase not in tasks:
                tasks[phase] = bar.add_task("grasp attempts per object" if phase == "grasps" else "trials per grasp", total=total)
            bar.update(tasks[phase], completed=done)

        results = run_evaluation(config, workers, progress)
    summary = summarize(results)
    results["summary"] = summary
    results["seconds"] = time.perf_counter() - started
    (out_dir / "results.json").write_text(json.dumps(results, indent=1))
    files = [out_dir / "results.json"]
    rows = summary["methods"]
    g = summary["grasps"]
    out.print(f"{g['objects']} objects, {g['attempts']} grasp attempts, {g['succeeded']} succeeded, {g['evaluated']} evaluated; failures: {json.dumps(g['failures'])}", markup=False, highlight=False)
    out.print(f"{'method':26s} {'scale':>5s} {'trials':>6s} {'kept %':>7s} {'torque Nm':>9s} {'q90 cm':>7s} {'q90 deg':>7s}", markup=False, highlight=False)
    for r in rows:
        out.print(f"{r['method']:26s} {r['scale']:5g} {r['trials']:6d} {100 * r['kept']:7.1f} {r['torque_sum']:9.3f} {100 * r['translation_q90']:7.2f} {np.rad2deg(r['rotation_q90']):7.2f}", markup=False, highlight=False)
    if "wrench_estimation" in summary:
        out.print("wrench estimation: " + json.dumps(summary["wrench_estimation"]), markup=False, highlight=False)
        out.print("comparison: " + json.dumps(summary["comparison"]), markup=False, highlight=False)
        files.append(plot_breaks_vs_torque(rows, out_dir / "breaks_vs_torque.png"))
        files.append(plot_deviation_densities([t for t in results["trials"] if t["force"] >= 0 and "error" not in t], rows, out_dir / "deviations.png"))
    out.print(f"{results['seconds']:.0f} s; wrote {', '.join(str(f) for f in files)}", markup=False, highlight=False)


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
    from robocal.runtime import enable_compilation_cache

    enable_compilation_cache()
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
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        report_bug(exc)
    if isinstance(code, int) and code != 0:
        if code == 130:
            err.print("aborted")
        sys.exit(code)
