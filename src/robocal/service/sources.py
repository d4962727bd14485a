"""Where a station's sessions come from: a source yields (unit serial, {file name: bytes}) per
recorded session, each holding problem.yaml (robot: robot.urdf, the model's) and its data files.

- SimulatedSource: a simulated robot measured by a simulated motion capture system (three markers on
  the tool, robocal.simulation.fleet), with the production spread of joint offsets and slipped ones;
- FileSource: session folders already recorded (CSV, C3D, MCAP... as the problem file names them)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

from robocal.errors import InputError
from robocal.fleet.criteria import CRITERIA
from robocal.fleet.store.sessions import session_folders

FROM_MODEL = ("robot.urdf", CRITERIA, "truth.json")  # supplied by the server's model, or simulation truth


def folder_files(folder: Path) -> dict[str, bytes]:
    """The files of one session folder to upload (flat: the service takes plain file names)."""
    nested = [p for p in folder.iterdir() if p.is_dir()]
    if nested:
        raise InputError(nested[0], "a session folder to upload holds files only, no subfolders")
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name not in FROM_MODEL}


class FileSource:
    """Every session folder (holding problem.yaml) under `folder`; the unit serial is the folder's name."""

    def __init__(self, folder: Path):
        self.folder = folder

    def sessions(self) -> Iterator[tuple[str, dict[str, bytes]]]:
        for folder in session_folders(self.folder):
            yield folder.name, folder_files(folder)


class SimulatedSource:
    """`units` simulated units of the robot in `robot_file` (seeded), `postures` marker postures each."""

    def __init__(self, robot_file: Path, units: int, *, postures: int = 20, seed: int = 0, defect_share: float = 0.1, prefix: str = ""):
        self.robot_file, self.units, self.postures, self.seed, self.defect_share, self.prefix = robot_file, units, postures, seed, defect_share, prefix
        self.truth: dict | None = None  # the simulation's truth (robocal.simulation.fleet), once recorded

    def sessions(self) -> Iterator[tuple[str, dict[str, bytes]]]:
        from robocal.simulation.fleet import simulate_fleet

        with tempfile.TemporaryDirectory(prefix="robocal-station-") as tmp:
            self.truth = simulate_fleet(Path(tmp), self.robot_file, self.units, postures=self.postures, seed=self.seed, defect_share=self.defect_share)
            for folder in session_folders(Path(tmp)):
                yield self.prefix + folder.name, folder_files(folder)
