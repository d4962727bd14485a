"""`robocal grasp ...`: grasp control of the DLR-Hand II in simulation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from robocal.cli.options import csv_list
from robocal.errors import RobocalError
from robocal.terminal import out, progress_bar


app = typer.Typer(no_args_is_help=True, help="Grasp control of the DLR-Hand II in simulation.")



@app.command("evaluate")
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

    chosen = csv_list(methods, "--methods")
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        raise RobocalError(f"--methods: unknown {', '.join(unknown)} (one of {', '.join(METHODS)})")
    config = EvaluationConfig(objects=() if objects is None else csv_list(objects, "--objects"), grasps=grasps, forces=forces, methods=chosen, scales=csv_list(scales, "--scales", float, positive=True), seed=seed, gravity=gravity, margin=margin, filter_time=filter_time, ramp=ramp, hold=hold)
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
