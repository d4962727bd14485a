"""`robocal fleet`: init, add-model, ingest, run, status, report, export, over the fleet store (a SQLite file by default)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robocal.errors import RobocalError
from robocal.fleet import DEFAULT_DB
from robocal.terminal import out, progress_bar

app = typer.Typer(no_args_is_help=True, help="Calibrate fleets: a store of units, sessions, jobs and results.")
Db = Annotated[str, typer.Option("--db", help="SQLite file, or a URL such as postgresql+psycopg://user@host/db")]


@app.command()
def init(db: Db = DEFAULT_DB) -> None:
    """Create the fleet database, or upgrade one of an older robocal to the newest schema (an older SQLite file is copied first)."""
    from robocal.fleet.store import open_store

    open_store(db, create=True, notice=lambda line: out.print(line, markup=False, highlight=False))
    out.print(f"fleet database ready: {db}", markup=False, highlight=False)


@app.command("add-model")
def add_model(
    name: Annotated[str, typer.Argument(help="the model's name, e.g. arm-6r (a changed model is a new name: arm-6r-2)")],
    description: Annotated[Path, typer.Option("--description", help="the model's URDF, with or without a calibration description")],
    criteria: Annotated[Path | None, typer.Option("--criteria", help="criteria.yaml [default: the description's <robocal:criteria>, else none]")] = None,
    db: Db = DEFAULT_DB,
) -> None:
    """Store a robot model: its URDF and criteria (sessions are filed under it by `ingest --model`)."""
    from robocal.fleet.catalog import add_model as add
    from robocal.fleet.store import open_store

    joints, source = add(open_store(db), name, description, criteria)
    out.print(f"model {name} added: {joints} actuated joints, criteria from {source}", markup=False, highlight=False)


@app.command()
def ingest(
    folder: Annotated[Path, typer.Argument(help="a folder of session folders (each holds problem.yaml and its data)")],
    db: Db = DEFAULT_DB,
    model: Annotated[str | None, typer.Option("--model", help="file the new sessions under this stored model (fleet add-model)")] = None,
) -> None:
    """Store every session under FOLDER (files by SHA-256) and queue one job per new session."""
    from robocal.fleet.store import open_store
    from robocal.fleet.store.sessions import ingest as run

    new, old = run(open_store(db), folder, model)
    out.print(f"{new} new sessions queued, {old} already stored", markup=False, highlight=False)


@app.command()
def run(
    db: Db = DEFAULT_DB,
    engine_kind: Annotated[str, typer.Option("--engine", help="inprocess | pool (worker processes) | ray (pip install 'robocal[ray]')")] = "inprocess",
    workers: Annotated[int | None, typer.Option("--workers", help="worker processes of the pool or Ray engine [default: the CPUs]")] = None,
    batch: Annotated[
        int, typer.Option("--batch", help="sessions claimed at once; those of one structure are solved in one vectorized call (0: one at a time)")
    ] = 256,
    lease: Annotated[
        float,
        typer.Option("--lease", min=1.0, help="seconds a claimed job stays this run's without its heartbeat; a killed run's jobs are taken over after it"),
    ] = 60.0,
) -> None:
    """Calibrate every queued session; a rerun does nothing new, a killed run's jobs are taken over once its lease expired,
    and several runs (and the service's workers) may share one store."""
    import os

    from robocal.fleet.engine import run as run_jobs
    from robocal.fleet.store import open_store
    from robocal.fleet.store.jobs import Lease, counts

    if batch < 0:
        raise RobocalError(f"--batch {batch}: 0 (one at a time) or more")
    if engine_kind == "inprocess" and workers not in (None, 1):
        raise RobocalError("--workers is for --engine pool or ray; the in-process engine has one")
    engine = open_store(db)
    pending = counts(engine)
    with progress_bar() as bar:
        task = bar.add_task("calibrating sessions", total=pending.get("queued", 0) + pending.get("running", 0))
        tally = run_jobs(
            engine, lambda session, status: bar.advance(task), kind=engine_kind, workers=workers or os.cpu_count() or 1, batch=batch, lease=Lease(lease)
        )
    out.print(f"{tally['done']} done, {tally['failed']} failed", markup=False, highlight=False)


@app.command()
def status(db: Db = DEFAULT_DB) -> None:
    """Jobs per status, and results per verdict."""
    from robocal.fleet.store import open_store
    from robocal.fleet.store.jobs import counts, verdicts

    engine = open_store(db)
    tally, judged = counts(engine), verdicts(engine)
    out.print("jobs: " + ", ".join(f"{s}: {tally.get(s, 0)}" for s in ("queued", "running", "done", "failed")), markup=False, highlight=False)
    out.print("verdicts: " + ", ".join(f"{s}: {judged.get(s, 0)}" for s in ("pass", "rework", "fail")), markup=False, highlight=False)


@app.command()
def export(out_dir: Annotated[Path, typer.Option("--out", help="output folder")], db: Db = DEFAULT_DB) -> None:
    """Write each unit's latest calibrated URDF as OUT/SERIAL.urdf."""
    from robocal.fleet.export import export_urdfs
    from robocal.fleet.store import open_store

    if out_dir.exists() and not out_dir.is_dir():
        raise RobocalError(f"{out_dir}: not a folder")
    files = export_urdfs(open_store(db), out_dir)
    out.print(f"wrote {len(files)} calibrated URDFs to {out_dir}", markup=False, highlight=False)


@app.command()
def report(out_dir: Annotated[Path, typer.Option("--out", help="output folder")], db: Db = DEFAULT_DB) -> None:
    """Write OUT/fleet.html: yield per model and station, errors across units, every parameter's
    spread with outlying units and a batch-wide bias flagged, drift between a unit's sessions."""
    from robocal.fleet.report import write_fleet_report
    from robocal.fleet.store import open_store

    if out_dir.exists() and not out_dir.is_dir():
        raise RobocalError(f"{out_dir}: not a folder")
    out.print(f"wrote {write_fleet_report(open_store(db), out_dir)}", markup=False, highlight=False)
