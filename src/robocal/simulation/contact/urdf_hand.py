"""A hand given as a URDF (`robocal simulate contact --robot HAND.urdf`): its fingertips and their
pairs from the collision geometry, a true hand perturbed in DH terms, and the contacts the search
of `robocal.simulation.contact.search` finds on it, written as ready-to-run problems.

Fingertips are the links whose `<collision>` elements robocal can use (`geometry.links.urdf_collisions`)
that end a finger chain: moved by at least one actuated joint, with no link below them carrying
a `<collision>` of any kind. The pairs are every two fingertips unless given.

The truth is perturbed in DH terms, the minimal parameterization of a chain: the URDF is converted
to a modified-DH table (`robocal.kinematics.convert`, every link's pose kept), every DH number of
every moving joint's row is perturbed uniformly (`perturb_parameters`), and the true hand is
written back as a URDF. Planning and touching both run on the DH table, whose forward kinematics
are the URDF's to float64 rounding; the links, the joints and so the data columns keep their names.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robocal.errors import RobocalError
from robocal.geometry.links import LinkShape, UrdfCollisions
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.simulation.contact.context import Detection
from robocal.simulation.contact.dlr_hand import SIGMA
from robocal.simulation.contact.results import ContactSimulation
from robocal.simulation.contact.search import Progress, simulate_contacts
from robocal.simulation.contact.writer import write_contact_csv

DH_FILE, TRUE_URDF, CONTACTS = "hand_dh.yaml", "true.urdf", "contacts.csv"
AGREEMENT = 1e-10  # m and rotation-matrix entries: the DH table reproduces the URDF (float64 rounding is ~1e-15)


def fingertips(tree: KinematicTree, collisions: UrdfCollisions) -> tuple[str, ...]:
    """The links with usable collision shapes that end a finger chain, in the tree's link order:
    moved by an actuated joint, and no link below them has a `<collision>` (usable or not)."""
    carrying = set(collisions.shapes) | set(collisions.refused)
    below = {link: {other for other in carrying if other != link and link in {tree.joints[i].child for i in tree.chain(other)}} for link in collisions.shapes}
    return tuple(link for link in tree.links if link in collisions.shapes and tree.actuated_for([link]) and not below[link])


def chain_end(tree: KinematicTree, link: str) -> str:
    """The link at the end of the fixed joints below `link` (a fingertip's tip frame), where that
    is one path; else `link` itself."""
    while True:
        children = [j for j in tree.joints if j.parent == link]
        if len(children) != 1 or children[0].moves:
            return link
        link = children[0].child


def parse_pairs(text: str, bodies: tuple[str, ...]) -> list[tuple[str, str]]:
    """`a:b,c:d` as body pairs; every name must be one of `bodies` (links with usable shapes)."""
    pairs = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        names = tuple(name.strip() for name in item.split(":"))
        if len(names) != 2 or not all(names) or names[0] == names[1]:
            raise RobocalError(f"--pairs: '{item}' is not two different links written a:b")
        for name in names:
            if name not in bodies:
                raise RobocalError(f"--pairs: '{name}' has no usable collision geometry (links that have: {', '.join(bodies) or 'none'})")
        pairs.append((names[0], names[1]))
    if not pairs:
        raise RobocalError("--pairs: give at least one pair a:b")
    return pairs


@dataclass(frozen=True)
class DhTruth:
    """The URDF hand as a DH table (`dh_tree`, written to `path`) with a `dh` model of its moving
    joints' rows and the perturbed parameters of the true hand."""

    urdf_tree: KinematicTree
    dh_tree: KinematicTree
    path: Path
    truth: RobotModel
    theta_true: np.ndarray


def dh_truth(urdf: Path, dh_path: Path, translation: float, rotation: float, seed: int) -> DhTruth:
    """Convert the URDF to a modified-DH table at `dh_path` (checked to AGREEMENT) and perturb
    every DH number of its moving joints' rows uniformly by up to translation (m) / rotation (rad)."""
    from robocal.kinematics.convert import dh_text, table_difference, tree_to_dh
    from robocal.kinematics.dh import load_dh
    from robocal.kinematics.urdf import load_urdf
    from robocal.simulation.perturb import perturb_parameters

    tree = load_urdf(urdf)
    dh_path.write_text(dh_text(tree_to_dh(tree).table, f"{tree.name} as a modified-DH table (robocal simulate contact, from {urdf.name})"))
    dh_tree = load_dh(dh_path)
    position, rotation_entry = table_difference(tree, dh_tree)
    if max(position, rotation_entry) > AGREEMENT:  # pragma: no cover (robocal convert checks the same)
        raise RobocalError(f"{urdf}: its DH table differs from it by {position:.3g} m / {rotation_entry:.3g}")
    truth = RobotModel(dh_tree, {j.name: "dh" for j in dh_tree.joints if j.moves})
    theta_true = perturb_parameters(truth, seed=seed, translation=translation, rotation=rotation)
    return DhTruth(tree, dh_tree, dh_path, truth, theta_true)


@dataclass
class UrdfHandContacts:
    """What `simulate_urdf_hand` simulated and wrote."""

    sim: ContactSimulation
    hand: DhTruth
    geometry: dict[str, tuple[LinkShape, ...]]
    fingertips: tuple[str, ...]
    pairs: list[tuple[str, str]]
    problem: Path  # the URDF with `full` joints
    problem_dh: Path  # the DH table with `dh` rows
    files: list[Path]
    seconds: float


def hand_bodies(urdf: Path, pairs: str | None = None) -> tuple[UrdfCollisions, tuple[str, ...], list[tuple[str, str]]]:
    """The URDF's collisions, its fingertips, and the pairs (`a:b,c:d`, default every two fingertips)."""
    from robocal.geometry.links import urdf_collisions
    from robocal.kinematics.urdf import load_urdf

    collisions = urdf_collisions(urdf)
    tips = fingertips(load_urdf(urdf), collisions)
    if pairs is not None:
        return collisions, tips, parse_pairs(pairs, tuple(collisions.shapes))
    if len(tips) < 2:
        raise RobocalError(
            f"{urdf}: {len(tips)} fingertip(s) with usable collision geometry ({', '.join(tips) or 'none'}); a fingertip is a link with a "
            "sphere, box, capsule or sphere-capped cylinder that ends a finger chain. Name the bodies with --pairs a:b,c:d"
        )
    return collisions, tips, list(itertools.combinations(tips, 2))


def simulate_urdf_hand(
    urdf: Path,
    out_dir: Path,
    *,
    pairs: str | None = None,
    n_per_pair: int = 50,
    seed: int = 0,
    translation: float = 0.005,
    rotation: float = float(np.deg2rad(5.0)),
    detection: Detection = "geometric",
    joint_noise: float = 0.0,
    sigma: float = SIGMA,
    progress: Progress | None = None,
    **options: Any,
) -> UrdfHandContacts:
    """A URDF hand perturbed in DH terms (`dh_truth`) and its contacts, written as problems.

    Writes to `out_dir`: a copy of the URDF, hand_dh.yaml (its DH table), true.urdf (the true
    hand), contacts.csv, problem.yaml (the URDF, `full` on every moving joint) and problem_dh.yaml
    (the DH table, `dh` on every row); both take the contact bodies from the URDF's collisions
    (`geometry: from_urdf`), priors of the perturbation's standard deviation, contact sigma `sigma`
    (default 0.1 mm, the DLR-Hand II's), and the task of the
    fingertips' chain ends relative to the first. Every usable collision shape is in the
    simulated scene (a designated body touching another is a failed drive); `options` go to
    `simulate_contacts`.
    """
    from robocal.kinematics.convert import urdf_tree
    from robocal.kinematics.urdf import write_urdf

    started = time.perf_counter()
    urdf, out_dir = Path(urdf), Path(out_dir)
    collisions, tips, chosen = hand_bodies(urdf, pairs)
    out_dir.mkdir(parents=True, exist_ok=True)
    robot_file = out_dir / urdf.name
    if robot_file.resolve() != urdf.resolve():
        robot_file.write_bytes(urdf.read_bytes())
    hand = dh_truth(robot_file, out_dir / DH_FILE, translation, rotation, seed)
    sim = simulate_contacts(
        hand.truth, hand.truth.nominal, hand.truth, hand.theta_true, collisions.shapes, chosen, n_per_pair, seed,
        detection=detection, joint_noise=joint_noise, progress=progress, **options,
    )  # fmt: skip
    write_contact_csv(out_dir / CONTACTS, hand.dh_tree, sim)
    write_urdf(urdf_tree(hand.dh_tree), out_dir / TRUE_URDF, hand.truth.urdf_origins(hand.theta_true))
    bodies = sorted({link for pair in chosen for link in pair}, key=hand.urdf_tree.links.index)
    problems = write_problems(out_dir, hand, robot_file.name, bodies, (translation, rotation, sigma), seed)
    files = [robot_file, hand.path, out_dir / TRUE_URDF, out_dir / CONTACTS, *problems]
    return UrdfHandContacts(sim, hand, collisions.shapes, tips, chosen, problems[0], problems[1], files, time.perf_counter() - started)


def write_problems(out_dir: Path, hand: DhTruth, robot: str, bodies: list[str], sizes: tuple[float, float, float], seed: int) -> list[Path]:
    """problem.yaml (the URDF, `full` on the moving joints) and problem_dh.yaml (the DH table,
    `dh` on its rows), the same data, bodies, priors and task; sizes: the perturbation's largest
    length and angle error and the contact sigma."""
    import yaml

    translation, rotation, sigma = sizes
    moving = [j.name for j in hand.urdf_tree.joints if j.moves]
    tips = [chain_end(hand.urdf_tree, body) for body in bodies]
    # The truth's DH numbers are uniform within +-h, whose standard deviation h / sqrt(3) is the prior sigma.
    t, r = float(translation / np.sqrt(3.0)), float(rotation / np.sqrt(3.0))
    common = {
        "priors": {"translation": t, "rotation": r, "joint_offset": r},
        "task": {"tips": tips, "reference": tips[0]},
        "measurements": [{"name": "contacts", "type": "contact", "data": CONTACTS, "sigma": float(sigma)}],
    }
    urdf_problem = {"robot": robot, "parameters": {"joints": dict.fromkeys(moving, "full")}, "geometry": {"from_urdf": True, "bodies": bodies}}
    dh_problem = {"robot": DH_FILE, "parameters": {"joints": dict.fromkeys(moving, "dh")}, "geometry": {"from_urdf": robot, "bodies": bodies}}
    header = (
        f"# Contact calibration of {hand.urdf_tree.name} perturbed in DH terms (robocal simulate contact --robot, seed {seed}); the true hand is {TRUE_URDF}.\n"
    )
    paths = [out_dir / "problem.yaml", out_dir / "problem_dh.yaml"]
    for path, problem, what in zip(paths, (urdf_problem, dh_problem), ("the URDF, 6-DOF origin errors of every moving joint", "its DH table, every DH number")):
        path.write_text(header + f"# Calibrated: {what}.\n" + yaml.safe_dump(problem | common, sort_keys=False))
    return paths
