"""Regenerate the data of the identifiability examples (deterministic).

identifiability.yaml: the nominal DLR-Hand II (packaged DH table), with
  - identifiability_contacts.csv: 100 fingertip contacts per finger pair found by the contact
    search (`simulate_contacts`) on the nominal hand (truth = nominal, geometric detection);
  - identifiability_task.csv: 100 configurations per finger from the uniform Cartesian test set,
    with the fingertip positions relative to the thumb tip of the nominal hand.
identifiability_generic.yaml: the same for a generic hand without parallel axes: the DLR-Hand II
  table with every DH parameter of the finger joints perturbed (up to 5 mm / 5 deg, seed 1), so
  no two joint axes are exactly parallel but the 64-parameter structure is the paper's. Its table
  is generic_hand_ii.yaml; its data are generic_contacts.csv and generic_task.csv.

Run from the repository root:
    .venv/bin/python examples/dlr_hand_ii/make_identifiability_data.py
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from robocal.kinematics.model import RobotModel
from robocal.simulation.contact import (
    DLR_ROBOT,
    dlr_hand_pairs,
    perturbed_dlr_hand,
    simulate_contacts,
    write_contact_csv,
)
from robocal.simulation.sampling import batch_link_poses
from robocal.simulation.testset import uniform_cartesian_test_set

HERE = Path(__file__).resolve().parent
N_PER_PAIR, N_TASK = 100, 100
TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")  # the task reference is the thumb tip
CONTACT_SEED, TASK_SEED, GENERIC_SEED = 1, 2, 1
TRANSLATION, ROTATION = 0.005, float(np.deg2rad(5.0))  # perturbation that makes the generic hand


def write_task_csv(path: Path, robot: RobotModel, theta: np.ndarray, q: np.ndarray) -> None:
    """Joint columns, then <tip>_x, _y, _z of each non-reference tip relative to the thumb tip."""
    positions = batch_link_poses(robot, theta, q, TIPS)[..., :3, 3]
    relative = positions[:, 1:] - positions[:, :1]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*robot.tree.actuated, *(f"{tip}_{c}" for tip in TIPS[1:] for c in "xyz")])
        for qi, ri in zip(q, relative.reshape(len(q), -1)):
            writer.writerow([repr(float(v)) for v in (*qi, *ri)])


def write_generic_table(path: Path, robot: RobotModel, theta: np.ndarray) -> None:
    """The packaged DH table with the finger joints' (d, theta, a, alpha) replaced by `theta`."""
    table = yaml.safe_load(resources.files("robocal").joinpath(f"models/{DLR_ROBOT}").read_text())
    values = dict(zip((p.name for p in robot.parameters), theta))
    table["name"] = "generic_hand_ii"
    for chain in table["chains"]:
        for row in chain["joints"]:
            for coordinate in ("d", "theta", "a", "alpha"):
                row[coordinate] = float(values[f"{row['name']}.{coordinate}"])
    header = (
        f"# A generic hand without parallel axes: the DLR-Hand II table (src/robocal/models/{DLR_ROBOT}) with every DH\n"
        f"# parameter of the finger joints perturbed by up to 5 mm / 5 deg (seed {GENERIC_SEED}). Written by make_identifiability_data.py.\n"
    )
    path.write_text(header + yaml.safe_dump(table, sort_keys=False, default_flow_style=None, width=200))


def make(robot: RobotModel, theta: np.ndarray, geometry, contacts: Path, task: Path) -> None:
    tree = robot.tree
    sim = simulate_contacts(robot, theta, robot, theta, geometry, dlr_hand_pairs(), N_PER_PAIR, CONTACT_SEED)
    write_contact_csv(contacts, tree, sim)
    write_task_csv(task, robot, theta, uniform_cartesian_test_set(robot, theta, TIPS, N_TASK, seed=TASK_SEED))
    print(f"wrote {contacts} ({len(sim)} contacts) and {task} ({N_TASK} configurations)")


def main() -> None:
    _, geometry, robot, theta_generic = perturbed_dlr_hand(TRANSLATION, ROTATION, GENERIC_SEED)
    make(robot, robot.nominal, geometry, HERE / "identifiability_contacts.csv", HERE / "identifiability_task.csv")
    write_generic_table(HERE / "generic_hand_ii.yaml", robot, theta_generic)
    make(robot, np.asarray(theta_generic), geometry, HERE / "generic_contacts.csv", HERE / "generic_task.csv")


if __name__ == "__main__":
    main()
