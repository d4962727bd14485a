"""Small simulated calibration problems for the verdict's tests: the six-joint arm of
examples/fleet with three-marker bodies on its tool link, markers in the robot's root frame.

`write_problem` simulates the marker data of a true robot (nominal + `true_offsets`, rad, on the
joint offsets) and writes a problem file whose every top-level part a test can change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.simulation.fleet import BODY
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.sampling import sample_configurations

REPO = Path(__file__).resolve().parents[2]
ARM = REPO / "examples/fleet/arm_6r.urdf"
NOISE = 1e-4  # m, per marker coordinate


def write_problem(
    folder: Path,
    *,
    postures: int = 20,
    bodies: dict[str, tuple[float, float]] | None = None,
    true_offsets=None,
    spread: float = np.pi,
    seed: int = 0,
    **problem,
) -> Path:
    """problem.yaml in `folder`, one data file per marker body beside it.

    `bodies`: measurement name -> (simulated noise, declared sigma), m (default one body `tool`
    with both NOISE); `spread`: joint values drawn in +-spread rad; `problem`: top-level keys of
    the problem file (default: joint offsets with the default priors)."""
    tree = load_robot(ARM)
    model = RobotModel(tree, {name: "joint_offsets" for name in tree.actuated})
    offsets = np.zeros(len(tree.actuated)) if true_offsets is None else np.asarray(true_offsets, float)
    q = sample_configurations(tree, postures, seed=seed) * (spread / np.pi)
    measurements = []
    for k, (name, (noise, sigma)) in enumerate((bodies or {"tool": (NOISE, NOISE)}).items()):
        body = MarkerBody(name, BODY.link, BODY.offsets)
        simulate_markers(folder / f"{name}.csv", model, model.nominal + offsets, q, [body], sigma=noise, seed=seed + 1 + k)
        measurements.append({"name": name, "type": "markers", "data": f"{name}.csv", "sigma": sigma, "link": body.link, "points": body.points(True)})
    config = {"robot": str(ARM), "parameters": {"default": "joint_offsets"}} | problem | {"measurements": measurements}
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
