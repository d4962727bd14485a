"""The DLR-Hand II's fingertip contacts (`robocal simulate contact`): a perturbed hand, its six
fingertip pairs, and the simulated contacts written as a ready-to-run problem."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from robocal.geometry.links import LinkShape
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.simulation.contact.context import Detection
from robocal.simulation.contact.results import ContactSimulation
from robocal.simulation.contact.search import Progress, simulate_contacts
from robocal.simulation.contact.writer import write_contact_csv

DLR_FINGERS = ("thumb", "fore", "middle", "ring")
DLR_ROBOT, DLR_GEOMETRY = "dlr_hand_ii.yaml", "dlr_hand_ii_geometry.yaml"
DLR_PARAMETERS = {"joints": {"*_q?": "dh"}}  # the 16 finger joints <finger>_q1..q4
SIGMA = 1e-4  # m, sigma of the contact measurement in the written problem


def dlr_hand_pairs() -> list[tuple[str, str]]:
    """The six fingertip pairs of the DLR-Hand II: (<f>_link4, <g>_link4)."""
    return [(f"{f}_link4", f"{g}_link4") for f, g in itertools.combinations(DLR_FINGERS, 2)]


@dataclass
class DlrHandContacts:
    """What `simulate_dlr_hand` simulated and wrote."""

    sim: ContactSimulation
    tree: KinematicTree
    truth: RobotModel  # `dh` parameterization of every finger joint
    theta_true: np.ndarray
    geometry: dict[str, tuple[LinkShape, ...]]
    problem: Path
    files: list[Path]
    seconds: float


@lru_cache(maxsize=8)
def perturbed_dlr_hand(translation: float, rotation: float, seed: int) -> tuple[KinematicTree, dict[str, tuple[LinkShape, ...]], RobotModel, np.ndarray]:
    """(tree, geometry, truth, theta_true) of a perturbed DLR-Hand II. Cached, so that repeated
    simulations in one process (tests, demos) reuse the model object and its compiled kernels."""
    from robocal.geometry.links import GeometryConfig, load_geometry
    from robocal.kinematics.dh import load_dh
    from robocal.problem.build import joint_modes
    from robocal.problem.schema import ParametersConfig
    from robocal.simulation.perturb import perturb_parameters

    models = resources.files("robocal").joinpath("models")
    with resources.as_file(models.joinpath(DLR_ROBOT)) as robot, resources.as_file(models.joinpath(DLR_GEOMETRY)) as shapes:
        tree = load_dh(robot)
        geometry = load_geometry(GeometryConfig(files=[shapes]), shapes.parent)
        truth = RobotModel(tree, joint_modes(tree, ParametersConfig.model_validate(DLR_PARAMETERS), robot))
    theta_true = perturb_parameters(truth, seed=seed, translation=translation, rotation=rotation)
    theta_true.flags.writeable = False
    return tree, geometry, truth, theta_true


def simulate_dlr_hand(
    out_dir: Path,
    *,
    n_per_pair: int = 50,
    seed: int = 0,
    translation: float = 0.005,
    rotation: float = float(np.deg2rad(5.0)),
    detection: Detection = "geometric",
    joint_noise: float = 0.0,
    progress: Progress | None = None,
    **options: Any,
) -> DlrHandContacts:
    """A perturbed DLR-Hand II and its fingertip contacts, written as a ready-to-run problem.

    The truth is the packaged DH table with every DH parameter of the 16 finger joints perturbed
    uniformly by up to `translation` (m) / `rotation` (rad) (`perturb_parameters`, `seed`); the
    drives are planned with the nominal table (`seed` again). Writes to `out_dir`: contacts.csv,
    true.urdf (the true hand), the DH table and geometry files, and problem.yaml: a `contact`
    measurement (sigma 0.1 mm) calibrating the DH parameters of every finger joint, with priors of
    the perturbation's size. `options` go to `simulate_contacts`.
    """
    import yaml

    from robocal.kinematics.urdf import write_urdf

    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    models = resources.files("robocal").joinpath("models")
    for name in (DLR_ROBOT, DLR_GEOMETRY):
        (out_dir / name).write_text(models.joinpath(name).read_text())
    tree, geometry, truth, theta_true = perturbed_dlr_hand(float(translation), float(rotation), int(seed))
    sim = simulate_contacts(
        truth,
        truth.nominal,
        truth,
        theta_true,
        geometry,
        dlr_hand_pairs(),
        n_per_pair,
        seed,
        detection=detection,
        joint_noise=joint_noise,
        progress=progress,
        **options,
    )

    files = [out_dir / name for name in ("contacts.csv", "true.urdf", DLR_ROBOT, DLR_GEOMETRY, "problem.yaml")]
    write_contact_csv(files[0], tree, sim)
    origins = truth.urdf_origins(theta_true)
    write_urdf(tree, files[1], origins)
    problem = {
        "robot": DLR_ROBOT,
        "parameters": DLR_PARAMETERS,
        "priors": {"translation": float(translation), "rotation": float(rotation)},
        "geometry": {"files": [DLR_GEOMETRY]},
        "measurements": [{"name": "contacts", "type": "contact", "data": files[0].name, "sigma": SIGMA}],
    }
    header = f"# Contact calibration of a simulated DLR-Hand II (robocal simulate contact, seed {seed}); the true hand is true.urdf.\n"
    files[4].write_text(header + yaml.safe_dump(problem, sort_keys=False))
    return DlrHandContacts(sim, tree, truth, np.array(theta_true), geometry, files[4], files, time.perf_counter() - started)
