"""Scoring a stored calibration: on other data (held-out sessions, other placements), or, in
simulation, against the true robot in task space on the uniform Cartesian test set."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from robocal.analysis.task_error import task_errors
from robocal.calibration import measurement_metrics, summarize
from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.problem import Problem, load_problem
from robocal.problem.build import load_robot
from robocal.results import read_results
from robocal.simulation.testset import uniform_cartesian_test_set


def load_stored(problem_path: Path, result: Path) -> tuple[Problem, np.ndarray, np.ndarray]:
    """The problem as it was fitted (stored frames and parameter selection), with the stored
    (baseline, estimate) parameter vectors in its order."""
    stored = read_results(result)
    problem = load_problem(problem_path, frame_initials=stored.frame_initials, unidentifiable=stored.unidentifiable)
    before, after = stored.vectors(problem.layout.names, problem.theta0)
    return problem, before, after


def evaluate_file(problem_path: Path, result: Path, data: Path, measurement: str | None = None) -> dict:
    problem, before, after = load_stored(problem_path, result)
    names = [m.name for m in problem.measurements]
    if measurement is None:
        if len(names) != 1:
            raise RobocalError(f"{problem_path}: several measurements ({', '.join(names)}); choose one with --measurement")
        measurement = names[0]
    if measurement not in names:
        raise RobocalError(f"{problem_path}: no measurement named '{measurement}' (have {', '.join(names)})")
    m = problem.measurements[names.index(measurement)]
    values, _ = m.load(data)
    metrics = measurement_metrics(m, values, before, after)
    return {"data": str(data), "result": str(result), "measurements": [metrics]}


def default_tips(tree: KinematicTree) -> tuple[str, ...]:
    """The tree's end effectors (DH tables name them), else its leaf links."""
    parents = {j.parent for j in tree.joints}
    return tree.end_effectors or tuple(link for link in tree.links if link not in parents)


def evaluate_truth(
    problem_path: Path,
    result: Path,
    truth: Path,
    reference: str | None = None,
    tips: Sequence[str] | None = None,
    n: int = 1000,
    seed: int = 0,
) -> dict:
    """Task errors (m) of the nominal and the calibrated robot against a true robot file.

    The test set is `uniform_cartesian_test_set` of the nominal robot over all tips (reference
    included); each model's errors are summarized over every configuration and tip f != reference.
    """
    problem, _, after = load_stored(problem_path, result)
    robot, block = problem.robot, problem.layout.blocks["robot"]
    tips = tuple(tips or default_tips(problem.tree))
    reference = reference or tips[0]
    true_robot = RobotModel(load_robot(truth))
    q = uniform_cartesian_test_set(robot, robot.nominal, (reference, *tips), n, seed)
    task = {name: summarize(task_errors(robot, theta, true_robot, true_robot.nominal, q, reference, tips)) for name, theta in (("nominal", robot.nominal), ("calibrated", after[block]))}
    return {
        "truth": str(truth),
        "result": str(result),
        "reference": reference,
        "tips": [tip for tip in dict.fromkeys(tips) if tip != reference],
        "n": n,
        "seed": seed,
        "unit": "m",
        "task": task,
    }
