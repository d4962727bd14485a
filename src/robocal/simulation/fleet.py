"""A simulated production batch: N units of one arm, each a session folder ready for `robocal fleet ingest`.

Every unit's joint offsets (encoder zeros) deviate from nominal within a manufacturing tolerance
(uniform, +-`tolerance` rad); a known share of units is defective, with one joint offset slipped by
`defect` rad (well beyond the tolerance). Each session folder holds the nominal robot (robot.urdf),
the marker data of `postures` postures (markers.csv, a three-marker body on the tool link, noise
`sigma` m), problem.yaml and criteria.yaml (robocal.fleet.criteria); truth.json beside the folders lists every unit's true offsets and defect.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from robocal.errors import InputError
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.sampling import sample_configurations

BODY = MarkerBody("tool", "tool", np.array([[0.05, 0.0, 0.0], [0.0, 0.05, 0.0], [0.0, 0.0, 0.05]]))


def session_problem(robot: str, joints: list[str], sigma: float, tolerance: float) -> dict:
    """The problem file of one unit: joint offsets with the tolerance as prior sigma, markers in the root frame."""
    return {
        "robot": robot,
        "parameters": {"joints": {name: "joint_offsets" for name in joints}},
        "priors": {"joint_offset": tolerance},
        "measurements": [{"name": BODY.name, "type": "markers", "data": "markers.csv", "sigma": sigma, "link": BODY.link, "points": BODY.points(True)}],
    }


def simulate_fleet(
    out: Path,
    robot_file: Path,
    units: int,
    *,
    postures: int = 40,
    tolerance: float = 0.001,
    defect: float = 0.02,
    defect_share: float = 0.03,
    sigma: float = 1e-4,
    seed: int = 0,
) -> dict:
    """Write `units` session folders UNIT-00000 ... under `out`, and out/truth.json; returns the truth."""
    tree = load_robot(robot_file)
    if BODY.link not in tree.links:
        raise InputError(robot_file, f"the simulated marker body needs a link named '{BODY.link}'")
    joints = list(tree.actuated)
    model = RobotModel(tree, {name: "joint_offsets" for name in joints})
    rng = np.random.default_rng(seed)
    defective = set(rng.choice(units, size=int(round(defect_share * units)), replace=False).tolist())
    text = robot_file.read_text()
    problem = yaml.safe_dump(session_problem("robot.urdf", joints, sigma, tolerance), sort_keys=False)
    # a slipped offset is rework; an arm whose calibrated markers miss by 5 noise stds fails
    criteria = yaml.safe_dump({"tolerance": {"joint_offset": tolerance}, "max_rms": float(5 * sigma * np.sqrt(3))}, sort_keys=False)
    unit_truth: dict[str, dict] = {}
    truth = {"robot": robot_file.name, "tolerance": tolerance, "defect": defect, "units": unit_truth}
    for k in range(units):
        serial = f"UNIT-{k:05d}"
        offsets = rng.uniform(-tolerance, tolerance, len(joints))
        slipped = None
        if k in defective:
            slipped = int(rng.integers(len(joints)))
            offsets[slipped] = rng.choice([-1.0, 1.0]) * defect
        folder = out / serial
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "robot.urdf").write_text(text)
        (folder / "problem.yaml").write_text(problem)
        (folder / "criteria.yaml").write_text(criteria)
        q = sample_configurations(tree, postures, seed=int(rng.integers(2**31)))
        simulate_markers(folder / "markers.csv", model, model.nominal + offsets, q, [BODY], sigma=sigma, seed=int(rng.integers(2**31)))
        unit_truth[serial] = {
            "offsets": dict(zip(joints, offsets.tolist())),
            "defective": slipped is not None,
            "slipped_joint": None if slipped is None else joints[slipped],
        }
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth
