"""`robocal record ...`: recording calibration data at the robot, in the terminal."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from robocal.errors import RobocalError
from robocal.terminal import err, out

app = typer.Typer(no_args_is_help=True, help="Record calibration data at the robot, in the terminal.")


class JointSourceKind(StrEnum):
    ros2 = "ros2"
    sim = "sim"
    replay = "replay"


@app.command("sockets")
def record_sockets(
    robot: Annotated[Path, typer.Option("--robot", help="URDF of the robot, with the ball link")],
    out_dir: Annotated[Path, typer.Option("--out", help="output folder: hole_0.csv, hole_1.csv, ... (one configuration per row, rad)")],
    link: Annotated[str, typer.Option("--link", help="the link whose origin is the ball center")] = "ball_link",
    source: Annotated[
        JointSourceKind,
        typer.Option(
            "--source", help="ros2: the robot's JointState topic; sim: a simulated robot and operator; replay: the configurations of a recorded folder, again"
        ),
    ] = JointSourceKind.ros2,
    replay: Annotated[Path | None, typer.Option("--replay", help="with --source replay: a recorded folder (hole_<k>.csv)")] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="with --source ros2: the sensor_msgs/msg/JointState topic (default: /joint_states)")] = None,
    sockets: Annotated[int, typer.Option("--sockets", min=1, max=10, help="sockets on the plate: keys 0 to N-1")] = 2,
    distance: Annotated[float | None, typer.Option("--distance", help="known distance between sockets 0 and 1 (m), to show the distortion")] = None,
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
    if replay is not None:
        from robocal.outputs import preflight

        preflight(out_dir, [replay])  # written there, even with --force, the recording would replace the one it replays
    opener = partial(open_source, source.value, replay=replay, topic=topic or "/joint_states", distance=distance)
    try:
        files = run(robot, out_dir, link, opener, sockets, distance, force, out)
    except KeyboardInterrupt:  # say what became of the recording
        err.print("interrupted: nothing written")
        sys.exit(130)
    out.print(f"wrote {', '.join(str(f) for f in files)}" if files else "quit: nothing written", markup=False, highlight=False)
