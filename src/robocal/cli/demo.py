"""`robocal demo` and `robocal study`: the simulated hand end to end, and the hand paper's simulation study."""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from robocal.cli.options import csv_list
from robocal.errors import RobocalError
from robocal.terminal import out, progress_bar


class DemoKind(StrEnum):
    contact = "contact"
    markers = "markers"


def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/demo"),
    kind: Annotated[DemoKind, typer.Option("--kind", help="contact: pairwise fingertip contacts; markers: fingertip markers")] = DemoKind.contact,
) -> None:
    """Calibrate a simulated, perturbed DLR-Hand II end to end (no files needed)."""
    from importlib import import_module

    import_module(f"robocal.demos.{kind.value}").run_demo(out_dir, out)


def study(
    out_dir: Annotated[Path, typer.Option("--out", help="output folder")] = Path("out/study"),
    hands: Annotated[int, typer.Option("--hands", min=1, help="simulated hands (perturbed DLR-Hand II)")] = 100,
    sizes: Annotated[str, typer.Option("--sizes", help="calibration set sizes, comma-separated")] = "25,50,100,150,200,250,300",
    strategies: Annotated[str, typer.Option("--strategies", help="comma-separated: random, greedy, detmax")] = "random,greedy,detmax",
    measurements: Annotated[str, typer.Option("--measurements", help="comma-separated: contact, cartesian")] = "contact,cartesian",
    pool_per_pair: Annotated[int, typer.Option("--pool-per-pair", min=1, help="contact candidates per finger pair (6 pairs)")] = 100,
    cartesian_pool: Annotated[int, typer.Option("--cartesian-pool", min=1, help="cartesian candidate configurations (one sample per fingertip each)")] = 150,
    seed: Annotated[int, typer.Option("--seed", min=0, help="hand h is perturbed and measured with seed + h")] = 0,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="processes (default: one per CPU core)")] = None,
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
            hands=hands,
            sizes=csv_list(sizes, "--sizes", int, positive=True),
            strategies=csv_list(strategies, "--strategies"),
            measurements=csv_list(measurements, "--measurements"),
            pool_per_pair=pool_per_pair,
            cartesian_pool=cartesian_pool,
            seed=seed,
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
