"""`robocal describe`: a problem file into its robot's URDF as a calibration description, and back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robocal.errors import InputError, RobocalError
from robocal.outputs import new_file, write_atomically
from robocal.terminal import out


def _new_file_beside(source: Path, target: Path) -> None:
    """--out must be a new file in the source's folder: relative paths inside stay valid, nothing is overwritten."""
    new_file(target, [source])
    if target.resolve().parent != source.resolve().parent:
        raise RobocalError(f"{target}: write it in the folder of {source} (the data paths inside are relative to that folder)")


def describe(
    source: Annotated[Path, typer.Argument(help="a problem YAML (its robot a URDF), or a URDF with a calibration description")],
    out_file: Annotated[Path, typer.Option("--out", help="the URDF (from a problem) or the problem YAML (from a URDF) to write, a new file beside SOURCE")],
    criteria: Annotated[Path | None, typer.Option("--criteria", help="from a problem: the fleet's acceptance criteria (YAML) to carry as well")] = None,
) -> None:
    """Problem file <-> URDF with a calibration description (docs/description.md): PROBLEM.yaml --out
    ROBOT.urdf writes the problem's robot with the problem (and --criteria) inside, which ROS and
    Pinocchio still load and `robocal calibrate ROBOT.urdf` calibrates; ROBOT.urdf --out
    PROBLEM.yaml writes it back (and criteria.yaml beside it when the description has criteria)."""
    import yaml

    from robocal.fleet.criteria import Criteria, load_criteria
    from robocal.problem.description import embed, extract, is_description
    from robocal.problem.schema import problem_config
    from robocal.validation import load_yaml_model, validate_mapping

    _new_file_beside(source, out_file)
    if is_description(source):
        problem, carried = extract(source)
        validate_mapping(source, problem, problem_config())
        if carried is not None:
            validate_mapping(source, carried, Criteria)
        files = [(out_file, problem)] + ([(out_file.with_name("criteria.yaml"), carried)] if carried is not None else [])
        for path, _ in files[1:]:
            _new_file_beside(source, path)
        for path, mapping in files:
            write_atomically(path, yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True).encode())
        out.print("wrote " + ", ".join(str(p) for p, _ in files), markup=False, highlight=False)
        return
    config = load_yaml_model(source, problem_config())  # validated before anything is written
    if config.robot is None or not is_description(config.robot):
        raise RobocalError(f"{source}: robot '{config.robot}' is not a URDF; a calibration description lives in a URDF")
    robot = source.parent / config.robot
    carried = None
    if criteria is not None:
        if not criteria.is_file():
            raise InputError(criteria, "--criteria: no such file")
        carried = load_criteria(criteria).model_dump(mode="json", exclude_unset=True)  # what the file sets, checked
    write_atomically(out_file, embed(robot, yaml.safe_load(source.read_text(encoding="utf-8-sig")), carried))
    out.print(f"wrote {out_file}: {robot.name} with the calibration description of {source.name}", markup=False, highlight=False)
