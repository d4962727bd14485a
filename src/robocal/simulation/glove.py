"""A synthetic data-glove operator: the calibration data of the glove seed's protocol.

The operator's hand is the packaged human-hand model with perturbed link lengths, worn in a glove
whose true offsets, gains and cross-couplings differ from the nominal ones the glove software
would give. The operator moves the fingers freely; each pose gives the 22 raw readings and the
five fingertip positions a stereo camera measures in the hand base frame, with Gaussian noise per
coordinate. The calibration poses and the held-out test poses are drawn alike, from independent
streams of the seed.

Each sensor's reading spans the range that maps the joint it mainly drives (its largest nominal
gain) onto that joint's limits; a sensor that drives no joint (palm arch, wrist) spans the widest
of those ranges. The operator sweeps every joint back and forth through its range, and a sweep
sampled at random times is arcsine distributed (Beta(1/2, 1/2) over the span): poses near the
ends of the range are common, as when a hand opens flat and closes to a fist. Over 60 poses this
keeps the Schroer-scaled condition number of every finger below 100 (uniform sampling gave
92 to 116 for the fingers in one check). Readings are not quantized.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from robocal.errors import RobocalError
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import Mode, RobotModel
from robocal.kinematics.sensors import JointSensors
from robocal.models import packaged
from robocal.problem.build import joint_modes
from robocal.problem.schema import ParametersConfig
from robocal.simulation.markers import MarkerBody, MarkerTable, simulate_markers
from robocal.simulation.perturb import perturb_parameters

LENGTH_ERROR = 0.003  # m, half-width of the operator's link-length deviation from nominal
OFFSET_ERROR = 0.1  # rad, half-width of the true sensor offsets' deviation
GAIN_ERROR = 0.001  # rad/count, half-width of the true gains' (and couplings') deviation
VISION_NOISE = 0.0005  # m, std of one fingertip coordinate measured by the stereo camera

# Which DH numbers are the hand's link lengths (the seed's a_i): in the standard convention a
# row's constants belong to the next joint, so the finger's abduction-to-flexion offset is
# `<f>_mcp.a`, its phalanges `<f>_pip.a`, `<f>_dip.a`, `<f>_tip_joint.a`; the thumb's are
# `thumb_T1.a`, the metacarpal `thumb_T2.d`, `thumb_T3.a`, `thumb_tip_joint.a`.
LENGTH_JOINTS: dict[str, Mode] = {"*_mcp": "dh", "*_pip": "dh", "*_dip": "dh", "*_tip_joint": "dh", "thumb_T[123]": "dh"}
NOT_LENGTHS = ["*.theta", "*.alpha", "*_mcp.d", "*_pip.d", "*_dip.d", "*_tip_joint.d", "thumb_T1.d", "thumb_T3.d", "thumb_T2.a"]
HAND, GLOVE = "human_hand.yaml", "cyberglove_22.yaml"


def glove_model(hand: Path, glove: Path) -> RobotModel:
    """The hand read through the glove, its link lengths and all sensor parameters free."""
    tree = load_dh(hand)
    modes = joint_modes(tree, ParametersConfig.model_validate({"joints": LENGTH_JOINTS}), hand)
    return RobotModel(tree, modes, fixed=NOT_LENGTHS, sensors=JointSensors.load(glove, tree.actuated))


def raw_spans(model: RobotModel) -> np.ndarray:
    """(n_sensors, 2): per sensor, the raw span its main joint's limits map onto (nominal model)."""
    sensors, tree = model.sensors, model.tree
    if sensors is None:
        raise RobocalError(f"{tree.name}: the glove model has no joint sensors")
    spans: list[np.ndarray | None] = []
    for s in range(len(sensors.sensors)):
        k = int(np.argmax(np.abs(sensors.gains[:, s])))
        if sensors.gains[k, s] == 0:
            spans.append(None)
            continue
        limits = np.asarray(tree.joint(sensors.joints[k]).limits, dtype=float)
        spans.append(np.sort((limits - sensors.offsets[k]) / sensors.gains[k, s]))
    known = np.array([s for s in spans if s is not None])
    fallback = np.array([known[:, 0].min(), known[:, 1].max()])
    return np.array([fallback if s is None else s for s in spans])


@dataclass(frozen=True)
class GloveSimulation:
    folder: Path
    problem: Path
    truth: dict[str, float]  # parameter name -> true value
    calibration: MarkerTable
    test: MarkerTable


def simulate_glove(folder: str | Path, *, seed: int = 0, n_calibration: int = 60, n_test: int = 200, noise: float = VISION_NOISE) -> GloveSimulation:
    """Write a complete glove-calibration folder: the nominal hand and glove files, calibration.csv
    and test.csv (raw readings + fingertip positions), truth.json (the operator's parameters) and
    problem.yaml (one `markers` measurement per finger, no priors: the seed's least squares)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in (HAND, GLOVE):
        shutil.copyfile(packaged(name), folder / name)
    model = glove_model(folder / HAND, folder / GLOVE)
    truth = perturb_parameters(model, seed, translation=LENGTH_ERROR, joint_offset=OFFSET_ERROR, gain=GAIN_ERROR)
    rng = np.random.default_rng([seed, 1])
    spans = raw_spans(model)
    bodies = [MarkerBody(tip.removesuffix("_tip"), tip, np.zeros((1, 3))) for tip in model.tree.end_effectors]
    tables = []
    for name, n, stream in (("calibration", n_calibration, 2), ("test", n_test, 3)):
        raw = spans[:, 0] + (spans[:, 1] - spans[:, 0]) * rng.beta(0.5, 0.5, size=(n, len(spans)))
        tables.append(simulate_markers(folder / f"{name}.csv", model, truth, raw, bodies, sigma=noise, seed=seed * 1000 + stream))
    names = [p.name for p in model.parameters]
    (folder / "truth.json").write_text(json.dumps(dict(zip(names, truth.tolist())), indent=1) + "\n")
    problem = {
        "robot": HAND,
        "sensors": GLOVE,
        "parameters": {"joints": LENGTH_JOINTS, "fixed": NOT_LENGTHS},
        "priors": {"translation": None, "rotation": None, "joint_offset": None, "gain": None},
        "solver": {"method": "scaled_svd"},
        "measurements": [
            {"name": b.name, "type": "markers", "data": "calibration.csv", "sigma": noise, "link": b.link, "points": b.points(known=True)} for b in bodies
        ],
    }
    header = f"# Glove calibration of a simulated operator (robocal simulate glove, seed {seed}): fingertips seen by a stereo camera in the hand base frame.\n"
    (folder / "problem.yaml").write_text(header + yaml.safe_dump(problem, sort_keys=False))
    return GloveSimulation(folder, folder / "problem.yaml", dict(zip(names, truth.tolist())), *tables)
