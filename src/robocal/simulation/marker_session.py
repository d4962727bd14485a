"""Your own robot before you record anything: a seeded "true" version of any URDF arm, seen by a
motion-capture system through a three-marker body on one link, written as the files a lab would
have (`robocal simulate markers --robot URDF`), so analyze -> design -> calibrate -> evaluate can be
tried on it, and `evaluate --truth true.urdf` scores the result against what was simulated.

Written to `out`: robot.urdf (the nominal robot, copied), true.urdf (its origins and joint zeros
perturbed), train.csv and test.csv (postures drawn within the joint limits; marker positions in the
tracker's frame with Gaussian noise), problem.yaml (calibrate `mode` on every actuated joint, the
tracker frame estimated from the data) and truth.json.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from robocal.errors import InputError
from robocal.frames import placement_matrix
from robocal.kinematics.model import Mode, RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.kinematics.urdf import load_urdf, write_calibrated_urdf
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import sample_configurations

MARKERS = np.array([[0.05, 0.0, 0.0], [0.0, 0.05, 0.0], [0.0, 0.0, 0.05]])  # m, a marker body's three points
TRACKER = placement_matrix((1.5, -0.4, 0.2), (0.0, 0.0, 0.6))  # the robot root in the tracker frame (m, rad)


@dataclass(frozen=True)
class MarkerSession:
    folder: Path
    problem: Path
    files: list[Path]
    truth: dict


def deepest_link(tree: KinematicTree) -> str:
    """The link moved by the most actuated joints (the end of the longest chain; first in file order on ties)."""
    return max(tree.links, key=lambda link: len(tree.actuated_for([link])))


def simulate_marker_session(
    out: Path,
    robot_file: Path,
    *,
    link: str | None = None,
    mode: Mode = "full",
    n_train: int = 60,
    n_test: int = 30,
    translation: float = 0.001,
    rotation: float = 0.001,
    joint_offset: float = 0.005,
    sigma: float = 1e-4,
    seed: int = 0,
) -> MarkerSession:
    """Write a simulated marker session of a perturbed `robot_file` to `out` (module doc)."""
    tree = load_urdf(robot_file)
    link = link or deepest_link(tree)
    if link not in tree.links:
        raise InputError(robot_file, f"no link '{link}' to put the marker body on (links: {', '.join(tree.links)})")
    if not tree.actuated_for([link]):
        raise InputError(robot_file, f"link '{link}' is moved by no joint: markers on it see nothing to calibrate")
    model = RobotModel(tree, {name: mode for name in tree.actuated})
    theta = perturb_parameters(model, seed, translation=translation, rotation=rotation, joint_offset=joint_offset)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(robot_file, out / "robot.urdf")
    origins = model.urdf_origins(theta)
    write_calibrated_urdf(robot_file, out / "true.urdf", origins)
    body = MarkerBody("tool", link, MARKERS)
    rng = np.random.default_rng(seed)
    tables = {}
    for name, n in (("train.csv", n_train), ("test.csv", n_test)):
        q = sample_configurations(tree, n, seed=int(rng.integers(2**31)))
        tables[name] = simulate_markers(out / name, model, theta, q, [body], frame=TRACKER, sigma=sigma, seed=int(rng.integers(2**31)))
    problem = {
        "robot": "robot.urdf",
        "parameters": {"joints": {name: mode for name in tree.actuated}},
        "frames": {"tracker": {"initial": "auto"}},
        "measurements": [
            {"name": "markers", "type": "markers", "data": "train.csv", "link": link, "frame": "tracker", "sigma": sigma, "points": body.points(True)}
        ],
    }
    (out / "problem.yaml").write_text(
        f"# A simulated motion-capture session of {tree.name} (robocal simulate markers, seed {seed}); the true robot is true.urdf.\n"
        + yaml.safe_dump(problem, sort_keys=False)
    )
    truth = {
        "robot": robot_file.name,
        "link": link,
        "mode": mode,
        "seed": seed,
        "sigma": sigma,
        "half_widths": {"translation": translation, "rotation": rotation, "joint_offset": joint_offset},
        "parameters": {p.name: float(v - p0) for p, v, p0 in zip(model.parameters, theta, model.nominal)},
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    files = [out / f for f in ("robot.urdf", "true.urdf", "train.csv", "test.csv", "problem.yaml", "truth.json")]
    return MarkerSession(out, out / "problem.yaml", files, truth)
