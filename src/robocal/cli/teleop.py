"""`robocal teleop ...`: a human hand's joint values mapped onto a robot hand."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from robocal.errors import RobocalError
from robocal.terminal import out

app = typer.Typer(no_args_is_help=True, help="Map a human hand's joint values onto a robot hand.")


class TeleopMode(StrEnum):
    joint = "joint"
    fingertip = "fingertip"


@app.command("show")
def teleop_show(
    joints: Annotated[
        Path,
        typer.Option(
            "--joints",
            help="CSV of human joint values: a column per actuated joint of the human hand (rad), a row per pose; with --sensors, raw readings: a column per sensor",
        ),
    ],
    sensors: Annotated[
        Path | None,
        typer.Option(
            "--sensors",
            help="joint sensor file (e.g. calibrated_sensors.yaml of `robocal calibrate`) turning the raw glove readings of --joints into joint values",
        ),
    ] = None,
    row: Annotated[int, typer.Option("--row", min=1, help="the pose to show: data row N (1 = the first row after the header)")] = 1,
    mode: Annotated[
        TeleopMode, typer.Option("--mode", help="joint: joint-space mapping (power grasps); fingertip: modified fingertip mapping (precision grasps)")
    ] = TeleopMode.fingertip,
    mapping_file: Annotated[Path | None, typer.Option("--mapping", help="mapping file (default: the packaged human hand -> DLR-Hand II mapping)")] = None,
    objects: Annotated[
        list[str] | None,
        typer.Option("--object", help="an object in the palm frame (m), repeatable: sphere:x,y,z,r | box:x,y,z,hx,hy,hz | capsule:x0,y0,z0,x1,y1,z1,r"),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", min=0.0, help="warn when a fingertip is closer than this to another or to an object (m; default: the mapping file's)"),
    ] = None,
    out_file: Annotated[Path, typer.Option("--out", help="picture to write")] = Path("out/teleop.png"),
    interactive: Annotated[bool, typer.Option("--interactive", help="open an interactive 3D window instead of writing --out")] = False,
) -> None:
    """Both hands side by side in one pose of a joint-value file, with contact warnings. The
    fingertip mapping replays rows 1 to N in order, each warm-started from the last, as a live
    stream would."""
    from robocal.io.table import read_table
    from robocal.teleop import HandMapping
    from robocal.teleop.contact import contact_warnings, parse_object
    from robocal.teleop.picture import check_picture_path, draw, save_picture

    if interactive:
        import matplotlib

        if not matplotlib.get_backend().lower().startswith(("qt", "tk", "gtk", "wx", "macosx")):
            raise RobocalError(
                f"--interactive needs a display and a GUI backend for matplotlib (it has '{matplotlib.get_backend()}'); write a picture with --out instead"
            )
    else:
        check_picture_path(out_file, [joints, sensors, mapping_file])  # before any work: a bad --out costs nothing
    table = read_table(joints)
    if row > len(table):
        raise RobocalError(f"{joints}: --row {row}, but the file has {len(table)} data rows")
    mapping = HandMapping.load(mapping_file)  # after the cheap checks: it builds both hands' models
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
        assert result is not None  # row >= 1: at least one pose was mapped
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
