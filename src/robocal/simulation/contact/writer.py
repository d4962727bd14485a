"""The data file of simulated contacts: the `contact` measurement's CSV."""

from __future__ import annotations

import csv
from pathlib import Path

from robocal.kinematics.tree import KinematicTree
from robocal.simulation.contact.results import ContactSimulation


def write_contact_csv(path: Path, tree: KinematicTree, sim: ContactSimulation) -> None:
    """The `contact` measurement's data file: body_a (the moving body), body_b (the static one),
    then one column per actuated joint of the tree, at full float64 precision."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["body_a", "body_b", *tree.actuated])
        for (moving, static), q in zip(sim.pairs, sim.q):
            writer.writerow([moving, static, *(repr(float(v)) for v in q)])
