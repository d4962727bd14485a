"""`robocal grasp ...`: grasp control of the DLR-Hand II in simulation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from robocal.cli.options import csv_list
from robocal.errors import RobocalError
from robocal.terminal import out, progress_bar, warn

app = typer.Typer(no_args_is_help=True, help="Grasp control of the DLR-Hand II in simulation.")


@app.command("evaluate")
def grasp_evaluate(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/grasp"),
    objects: Annotated[str | None, typer.Option("--objects", help="comma-separated object names (default: the whole catalog)")] = None,
    grasps: Annotated[int, typer.Option("--grasps", min=1, help="successful grasps evaluated per object")] = 8,
    forces: Annotated[int, typer.Option("--forces", min=1, help="external forces per grasp")] = 10,
    methods: Annotated[
        str, typer.Option("--methods", help="comma-separated: controller, fixed_offsets, without_wrench_estimate")
    ] = "controller,fixed_offsets,without_wrench_estimate",
    scales: Annotated[str, typer.Option("--scales", help="baseline scales, comma-separated")] = "1,1.5,2,2.5,3",
    margin: Annotated[float, typer.Option("--margin", min=0.0, help="friction margin of our controller per fingertip (N)")] = 0.5,
    filter_time: Annotated[
        float, typer.Option("--filter-time", min=0.0, help="time constant of our controller's low-pass on the wrench estimate (s; 0: none)")
    ] = 0.1,
    gravity: Annotated[bool, typer.Option("--gravity/--no-gravity", help="gravity on the object")] = False,
    ramp: Annotated[float, typer.Option("--ramp", min=0.0, help="seconds over which the force rises to its full size")] = 4.0,
    hold: Annotated[float, typer.Option("--hold", min=0.0, help="seconds the full force is held")] = 4.0,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seeds the grasps and the forces")] = 0,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="processes (default: one per CPU core)")] = None,
    controller: Annotated[
        str,
        typer.Option(
            "--controller",
            help="whose wrench estimator and torque predictor: analytical (convex programs on the known contacts), learned (networks on a depth image's voxels), or one network with the other step analytical: learned_estimator, learned_predictor",
        ),
    ] = "analytical",
    weights: Annotated[
        Path | None, typer.Option("--weights", help="learned networks: a `grasp train` output or weights folder (default: the shipped weights)")
    ] = None,
    kinds: Annotated[
        str, typer.Option("--kinds", help="comma-separated kinds of grasp evaluated: power, precision (the same grasps as with both)")
    ] = "power,precision",
    predictor_shift: Annotated[
        int | None,
        typer.Option(
            "--predictor-shift",
            min=0,
            help="the learned predictor's torques averaged over the object's grid shifted this many voxels along x, y or z, either way, edge-padded (0: the grid as seen; default: the weights' own)",
        ),
    ] = None,
) -> None:
    """The grasp-controller paper's simulated evaluation: per grasp, forces pushing on random
    surface points (10 N, 5 N for precision grasps) ramped over 4 s and held 4 s; a grasp breaks
    when the object moves over 3 cm or 20 deg. Writes results.json (every grasp attempt and
    trial, and the summary), breaks_vs_torque.png (Fig. 7) and deviations.png (Fig. 8)."""
    import time

    import numpy as np

    from robocal.grasp.controller import METHODS
    from robocal.grasp.evaluation import FORCE, EvaluationConfig, object_names, run_evaluation
    from robocal.grasp.figures import plot_breaks_vs_torque, plot_deviation_densities
    from robocal.grasp.metrics import summarize

    chosen = csv_list(methods, "--methods")
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        raise RobocalError(f"--methods: unknown {', '.join(unknown)} (one of {', '.join(METHODS)})")
    chosen_kinds = csv_list(kinds, "--kinds")
    unknown = [k for k in chosen_kinds if k not in FORCE]
    if unknown:
        raise RobocalError(f"--kinds: unknown {', '.join(unknown)} (one of {', '.join(FORCE)})")
    if controller != "analytical":  # an unknown name and unreadable weights are errors before anything runs
        from robocal.grasp.learned.controller import CONTROLLERS, load

        if controller not in CONTROLLERS:
            raise RobocalError(f"--controller: unknown '{controller}' (analytical, {', '.join(CONTROLLERS)})")
        models = load(weights) if weights else load()
        predictor_shift = models.predictor_shift if predictor_shift is None else predictor_shift  # recorded in results.json
    config = EvaluationConfig(
        objects=() if objects is None else csv_list(objects, "--objects"),
        grasps=grasps,
        forces=forces,
        methods=chosen,
        scales=csv_list(scales, "--scales", float, positive=True),
        seed=seed,
        gravity=gravity,
        margin=margin,
        filter_time=filter_time,
        ramp=ramp,
        hold=hold,
        controller=controller,
        weights=str(weights or ""),
        predictor_shift=predictor_shift,
        kinds=chosen_kinds,
    )
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
    out.print(
        f"{g['objects']} objects, {g['attempts']} grasp attempts, {g['succeeded']} succeeded, {g['evaluated']} evaluated; failures: {json.dumps(g['failures'])}",
        markup=False,
        highlight=False,
    )
    out.print(f"{'method':26s} {'scale':>5s} {'trials':>6s} {'kept %':>7s} {'torque Nm':>9s} {'q90 cm':>7s} {'q90 deg':>7s}", markup=False, highlight=False)
    for r in rows:
        out.print(
            f"{r['method']:26s} {r['scale']:5g} {r['trials']:6d} {100 * r['kept']:7.1f} {r['torque_sum']:9.3f} {100 * r['translation_q90']:7.2f} {np.rad2deg(r['rotation_q90']):7.2f}",
            markup=False,
            highlight=False,
        )
    if "wrench_estimation" in summary:
        out.print("wrench estimation: " + json.dumps(summary["wrench_estimation"]), markup=False, highlight=False)
        out.print("comparison: " + json.dumps(summary["comparison"]), markup=False, highlight=False)
        files.append(plot_breaks_vs_torque(rows, out_dir / "breaks_vs_torque.png"))
        files.append(plot_deviation_densities([t for t in results["trials"] if t["force"] >= 0 and "error" not in t], rows, out_dir / "deviations.png"))
    out.print(f"{results['seconds']:.0f} s; wrote {', '.join(str(f) for f in files)}", markup=False, highlight=False)


@app.command("dataset")
def grasp_dataset(
    out_dir: Annotated[Path, typer.Option("--out", help="dataset folder (run again to resume)")] = Path("out/grasp_data"),
    objects: Annotated[int, typer.Option("--objects", min=3, help="procedural objects, split 80/10/10 by object into train/val/test")] = 1000,
    power: Annotated[int, typer.Option("--power", min=0, help="successful power grasps per object at most")] = 2,
    precision: Annotated[int, typer.Option("--precision", min=0, help="successful precision grasps per object at most")] = 2,
    samples: Annotated[int, typer.Option("--samples", min=1, help="teacher samples per grasp")] = 40,
    grid: Annotated[int, typer.Option("--grid", min=8, max=128, help="voxels per side of the object grid")] = 48,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seeds the objects, grasps and wrenches")] = 0,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="processes (default: one per CPU core)")] = None,
) -> None:
    """Training data of the learned grasp controller: procedural objects, grasps, voxel grids
    from a depth image, and the analytical controller's samples (docs/grasp.md), one npz shard
    per object; resumable."""
    import os

    from robocal.grasp.learned.dataset import DatasetConfig, generate
    from robocal.outputs import preflight

    preflight(out_dir)
    config = DatasetConfig(seed=seed, objects=objects, power=power, precision=precision, samples=samples, grid=grid)
    with progress_bar(remaining=True) as bar:
        task = bar.add_task("objects", total=None)
        counts = generate(config, out_dir, workers or os.cpu_count() or 1, lambda done, total: bar.update(task, completed=done, total=total))
    out.print(f"{counts['made']} of {counts['shards']} shards made ({counts['samples_made']} samples) in {out_dir}", markup=False, highlight=False)


@app.command("train")
def grasp_train(
    data: Annotated[
        list[Path], typer.Option("--data", help="a `grasp dataset` folder; repeated, several (one grid and side, other seeds), trained on together")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="training folder: estimator/ and predictor/ runs (run again to resume)")] = Path("out/grasp_train"),
    networks: Annotated[str, typer.Option("--networks", help="comma-separated: estimator, predictor")] = "estimator,predictor",
    loss: Annotated[str, typer.Option("--loss", help="estimator loss: minimal_wrench or l2 (the ablation)")] = "minimal_wrench",
    steps: Annotated[int, typer.Option("--steps", min=1, help="optimizer steps per network")] = 20000,
    batch: Annotated[int, typer.Option("--batch", min=1, help="samples per step")] = 64,
    per_grid: Annotated[int, typer.Option("--per-grid", min=1, help="samples of one grasp per step, its object encoded once (divides --batch)")] = 1,
    learning_rate: Annotated[float, typer.Option("--learning-rate", min=0.0, help="Adam's step size")] = 3e-4,
    width: Annotated[int, typer.Option("--width", min=4, help="width of the four dense layers")] = 256,
    channels: Annotated[str, typer.Option("--channels", help="output channels of the four 3D convolutions, comma-separated")] = "8,16,32,32",
    seed: Annotated[int, typer.Option("--seed", min=0, help="seeds the weights and the minibatches")] = 0,
    precision: Annotated[str, typer.Option("--precision", help="float64, or float32 (faster on a GPU)")] = "float64",
    eval_every: Annotated[int, typer.Option("--eval-every", min=1, help="steps between validation losses")] = 200,
    checkpoint_every: Annotated[int, typer.Option("--checkpoint-every", min=1, help="steps between checkpoints")] = 1000,
    weights: Annotated[
        Path | None, typer.Option("--weights", help="also write a weights folder of both networks here (for --controller learned --weights)")
    ] = None,
    init: Annotated[
        Path | None,
        typer.Option(
            "--init",
            help="start from the networks of this weights folder, or of this `grasp train` folder's runs of the networks trained (fine-tuning; same shapes), "
            "not from random weights",
        ),
    ] = None,
    layers: Annotated[
        str,
        typer.Option(
            "--layers", help="all, or dense: only the dense layers train, the convolutions kept from --init (each object encoded once; fast on a CPU)"
        ),
    ] = "all",
    quantile: Annotated[float, typer.Option("--quantile", help="t of the estimator's scale loss, in (0, 1) (paper: 0.05)")] = 0.05,
    shift_augment: Annotated[
        int,
        typer.Option("--shift-augment", min=0, max=8, help="move each training grid by a random offset of up to this many voxels along each axis (0: none)"),
    ] = 0,
) -> None:
    """Train the learned controller's networks with checkpoints and learning curves
    (curves.html per network); resumable."""
    from robocal.grasp.learned.controller import NETWORKS, load, load_networks, save, with_runs
    from robocal.grasp.learned.quiet import QUIET, quiet_at
    from robocal.grasp.learned.training import STATE, TrainConfig, criterion, kept, train, warnings
    from robocal.outputs import preflight

    chosen = csv_list(networks, "--networks")
    unknown = [n for n in chosen if n not in ("estimator", "predictor")]
    if unknown:
        raise RobocalError(f"--networks: unknown {', '.join(unknown)} (estimator, predictor)")
    for option, value, allowed in (
        ("--loss", loss, ("minimal_wrench", "l2")),
        ("--precision", precision, ("float64", "float32")),
        ("--layers", layers, ("all", "dense")),
    ):
        if value not in allowed:
            raise RobocalError(f"{option}: unknown '{value}' ({' or '.join(allowed)})")
    conv = csv_list(channels, "--channels", int, positive=True)
    if len(conv) != 4:
        raise RobocalError(f"--channels: four numbers, one per convolution (got {len(conv)})")
    if not 0 < quantile < 1:
        raise RobocalError(f"--quantile {quantile:g}: must lie strictly between 0 and 1")
    if layers == "dense" and init is None:
        raise RobocalError("--layers dense: give --init, the trained networks whose convolutions the run keeps")
    if layers == "dense" and shift_augment:
        raise RobocalError("--shift-augment with --layers dense: the dense layers train on every grid encoded once, as seen")
    other_runs = all((out_dir / name / STATE).exists() for name in NETWORKS)  # the other network trained by an earlier call
    if weights is not None and init is None and set(chosen) != set(NETWORKS) and not other_runs:
        raise RobocalError(f"--weights with --networks {networks}: give --init, whose other network goes into the weights folder")
    # unreadable weights are an error before anything is written; --weights takes the network not trained from --init
    start = load_networks(init, tuple(chosen)) if init is not None else None
    base = load(init) if init is not None and weights is not None else None
    if batch % per_grid:
        raise RobocalError(f"--per-grid: {per_grid} does not divide --batch {batch}")
    preflight(out_dir, [folder / "manifest.json" for folder in data])
    for name in chosen:
        config = TrainConfig(
            network=name,
            loss=loss,
            steps=steps,
            batch=batch,
            per_grid=per_grid,
            learning_rate=learning_rate,
            width=width,
            channels=conv,
            seed=seed,
            precision=precision,
            eval_every=eval_every,
            checkpoint_every=checkpoint_every,
            init=str(init) if init is not None else None,
            layers=layers,
            quantile=quantile,
            shift_augment=shift_augment,
        )
        with progress_bar(remaining=True) as bar:
            task = bar.add_task(f"{name} steps", total=steps)

            def on_step(done: int, total: int, bar=bar, task=task) -> None:  # bound now (B023); bar: rich's Progress or LoggedProgress
                bar.update(task, completed=done)

            state = train(config, data, out_dir / name, on_step, start[name] if start is not None else None)
        last, kinds = state["curves"][-1], state["val_by_kind"][-1][1] if state["val_by_kind"] else {}
        parts = "".join(f"{kind} grasps {value:.4g}, " for kind, value in kinds.items())
        best_step = kept(state)[1]
        best = f"; the run's result is step {best_step}'s network, {criterion(config)} {state['best'][1]:.4g}" if state.get("best") else ""
        quiet = quiet_at(state, best_step)
        best += f", {quiet:.3g} N reported where less than {QUIET} N acts" if quiet is not None else ""
        out.print(
            f"{name}: step {state['step']}, validation loss {last[2]:.4g} ({parts}best constant {state['constant_val_loss']:.4g}){best}; {out_dir / name / 'curves.html'}",
            markup=False,
            highlight=False,
        )
        for warning in warnings(state):
            warn(f"warning: {name}: {warning}")
    if weights is not None:
        save(with_runs(out_dir, base) if base is not None else load(out_dir), weights)
        out.print(f"weights of both networks in {weights}", markup=False, highlight=False)
