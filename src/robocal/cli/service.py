"""`robocal serve` (the calibration service, `serve token create`) and `robocal station` (the agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robocal.errors import RobocalError
from robocal.fleet import DEFAULT_DB
from robocal.terminal import out, progress_bar

serve_app = typer.Typer(invoke_without_command=True, no_args_is_help=False, help="Run the calibration service (REST API under /api/, dashboard at /).")
token_app = typer.Typer(no_args_is_help=True, help="Access tokens of the service.")
serve_app.add_typer(token_app, name="token")
Db = Annotated[str, typer.Option("--db", help="SQLite file (created when new), or a URL such as postgresql+psycopg://user@host/db")]


@serve_app.callback()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="address to listen on (loopback by default)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    db: Db = DEFAULT_DB,
    workers: Annotated[int, typer.Option(min=0, max=64, help="job workers (one on SQLite; 0: only queue)")] = 1,
    max_upload: Annotated[int, typer.Option(min=1, help="bytes of one session upload")] = 64 * 2**20,
) -> None:
    """Serve the fleet store DB until interrupted: stations upload sessions, workers calibrate them."""
    if ctx.invoked_subcommand is not None:
        return
    from robocal.service.app import Settings
    from robocal.service.server import serve as run

    def ready() -> None:
        out.print(f"robocal service on http://{host}:{port}/ (store: {db}); Ctrl-C stops it", markup=False, highlight=False)

    run(db, host, port, Settings(max_upload=max_upload, workers=workers), ready)


@token_app.command("create")
def token_create(
    scope: Annotated[str, typer.Option(help="station, engineer or admin")],
    station: Annotated[str | None, typer.Option(help="the station of a station token (created when new)")] = None,
    expires_days: Annotated[float | None, typer.Option(min=1e-6, help="days until the token expires (never by default)")] = None,
    db: Db = DEFAULT_DB,
) -> None:
    """Create a token and print it (only its hash is stored: it cannot be shown again)."""
    from datetime import timedelta

    from robocal.fleet.store import open_store
    from robocal.service.auth import create_token

    expires = None if expires_days is None else timedelta(days=expires_days)
    out.print(create_token(open_store(db, create=True), scope, station, expires), markup=False, highlight=False)


def station(
    server: Annotated[str, typer.Option(help="the service's URL, e.g. http://127.0.0.1:8000")],
    token: Annotated[str, typer.Option(envvar="ROBOCAL_TOKEN", help="a station token (or ROBOCAL_TOKEN)")],
    model: Annotated[str, typer.Option(help="the robot model the sessions are for")],
    spool: Annotated[Path, typer.Option(help="folder of recorded sessions not yet uploaded (resume state)")] = Path("station-spool"),
    simulate: Annotated[int, typer.Option(min=0, help="record N simulated units (a simulated robot and motion capture system)")] = 0,
    robot: Annotated[Path | None, typer.Option(help="URDF of the simulated robot (with --simulate)")] = None,
    files: Annotated[Path | None, typer.Option(help="record the session folders under this folder (problem.yaml and its data files)")] = None,
    seed: Annotated[int, typer.Option(min=0, help="seed of the simulated units (with --simulate)")] = 0,
) -> None:
    """Record sessions from a source into the spool, then upload every pending one (a rerun resumes)."""
    from robocal.service.agent import Agent
    from robocal.service.sources import FileSource, SimulatedSource

    if not server.startswith(("http://", "https://")):
        raise RobocalError(f"--server '{server}': expected a URL starting with http:// or https://")
    source: SimulatedSource | FileSource | None = None
    if simulate:
        if robot is None or files is not None:
            raise RobocalError("--simulate needs --robot (the URDF of the simulated robot) and no --files")
        source = SimulatedSource(robot, simulate, seed=seed)
    elif files is not None:
        source = FileSource(files)
    agent = Agent(server.rstrip("/"), token, model, spool)
    if source is not None:
        out.print(f"recorded {len(agent.record(source))} sessions into {spool}", markup=False, highlight=False)
    with progress_bar() as bar:
        task = bar.add_task("uploading sessions", total=len(agent.pending()))
        answers = agent.upload_pending(lambda answer: bar.advance(task))
    offset, delay = agent.offset
    out.print(
        f"uploaded {len(answers)} sessions; clock offset to the server {1e3 * offset:+.1f} ms (within {1e3 * delay / 2:.1f} ms)", markup=False, highlight=False
    )
