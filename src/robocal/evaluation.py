"""Scoring a stored calibration: on other data (held-out sessions, other placements), or, in
simulation, against the true robot in task space on the uniform Cartesian test set."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robocal.analysis.gauge import modulo_errors
from robocal.analysis.task_error import task_point_pairs
from robocal.analysis.task_uncertainty import Task
from robocal.analysis.verdict import Verdict, held_out_verdict
from robocal.calibration import measurement_metrics
from robocal.errors import RobocalError
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.measurements.base import Measurement, summarize
from robocal.problem import Problem, load_problem
from robocal.problem.schema import MISFIT
from robocal.provenance import check_inputs
from robocal.results import StoredResult, read_results
from robocal.simulation.testset import uniform_cartesian_test_set


def load_stored(problem_path: Path, result: Path, force: bool = False, warn=None) -> tuple[Problem, StoredResult]:
    """The problem as it was fitted (stored frames) and the stored result (`StoredResult.vectors`
    gives its parameter vectors in the problem's order, those the fit held at nominal there). A problem, robot
    or training data file changed since the fit is refused, or with `force` passed to `warn`."""
    stored = read_results(result)
    problem = load_problem(problem_path, frame_initials=stored.frame_initials)
    check_inputs(stored.inputs, problem, result, force, warn)
    return problem, stored


def held_out_files(problem: Problem, data: Sequence[Path], measurement: str | None = None) -> list[tuple[Measurement, Path, Any]]:
    """(measurement, file, its data) for each --data file and each measurement that reads it.

    `NAME=FILE` gives the file to measurement NAME; with `measurement`, every other file goes to
    that one; else a file goes to every measurement that can read it (its columns, or a placement
    folder), which must all have been trained on one file (several marker bodies in one CSV).
    A file that none reads, or that measurements trained on different files all read, is an error."""
    by_name = {m.name: m for m in problem.measurements}
    names = ", ".join(by_name)
    if measurement is not None and measurement not in by_name:
        raise RobocalError(f"{problem.path}: no measurement named '{measurement}' (have {names})")
    found: list[tuple[Measurement, Path, Any]] = []
    for given in data:
        name, sep, rest = str(given).partition("=")
        chosen = [by_name[name]] if sep and name in by_name else [by_name[measurement]] if measurement is not None else problem.measurements
        path = Path(rest) if sep and name in by_name else Path(given)
        read, failed = [], []
        for m in chosen:
            try:
                read.append((m, path, m.load(path)[0]))
            except RobocalError as error:
                failed.append((m.name, error))
        if not read:
            if len({str(error) for _, error in failed}) == 1:
                raise failed[0][1]
            raise RobocalError(f"--data {path}: no measurement of {problem.path} reads it (" + "; ".join(f"{n}: {e}" for n, e in failed) + ")")
        trained = {str(m.ctx.resolve(m.config.data)) for m, _, _ in read}
        if len(trained) > 1:
            readers = ", ".join(m.name for m, _, _ in read)
            raise RobocalError(
                f"--data {path}: measurements {readers}, trained on different files ({', '.join(sorted(trained))}), can all read it; "
                f"say which with --data NAME={path}"
            )
        found += read
    return found


def evaluate_files(problem_path: Path, result: Path, data: Sequence[Path], measurement: str | None = None, force: bool = False, warn=None) -> dict:
    """Before/after figures of a stored calibration on other data files (or placement folders),
    for every measurement that reads one of them (`held_out_files`), beside its training data's,
    with its generalization warnings and the verdict on them all (held_out_verdict per
    measurement). `training` and `evaluations` list the files, each with the figures of every
    measurement evaluated on it. `force`, `warn`: as `load_stored`."""
    problem, stored = load_stored(problem_path, result, force, warn)
    before, after = stored.vectors(problem.layout.names, problem.theta0)
    files = held_out_files(problem, data, measurement)
    training: dict[str, list[dict]] = {}
    evaluations: dict[str, list[dict]] = {}
    warnings: list[dict] = []
    findings: list = []
    for m in [m for m in problem.measurements if any(m is found for found, _, _ in files)]:
        trained_at = location(m, m.data, after)
        own_training = held_out_entry(m, m.ctx.resolve(m.config.data), m.data, before, after, trained_at)
        held_out = [held_out_entry(m, path, values, before, after, trained_at) for found, path, values in files if found is m]
        own_warnings = [{**w, "measurement": m.name} for w in generalization_warnings(m, own_training, held_out)]
        findings += held_out_verdict(m.headline, held_out, own_warnings).findings
        warnings += own_warnings
        for target, entries in ((training, [own_training]), (evaluations, held_out)):
            for e in entries:
                target.setdefault(e["data"], []).extend(e["measurements"])
    listed = lambda by_file: [{"data": path, "measurements": metrics} for path, metrics in by_file.items()]  # noqa: E731
    verdict = Verdict(tuple(findings))
    return {"result": str(result), "training": listed(training), "evaluations": listed(evaluations), "warnings": warnings, "verdict": verdict.to_dict()}


def held_out_entry(m: Measurement, path: Path, values, before: np.ndarray, after: np.ndarray, trained_at: np.ndarray) -> dict:
    """One data file's figures for one measurement, with the distance of its mean link position from `trained_at`."""
    metrics = measurement_metrics(m, values, before, after)
    metrics["distance_from_training"] = float(np.linalg.norm(location(m, values, after) - trained_at))
    return {"data": str(path), "measurements": [metrics]}


def location(measurement: Measurement, data, theta) -> np.ndarray:
    """Mean position (root frame) of the measured links over the rows: where in the workspace the data are."""
    poses = measurement.link_poses(np.asarray(theta, dtype=float), measurement.configurations(data), measurement.links())
    return np.asarray(poses[..., :3, 3]).reshape(-1, 3).mean(axis=0)


def generalization_warnings(measurement: Measurement, training: dict, held_out: list[dict]) -> list[dict]:
    """Evidence that the calibrated model holds only near its training data.

    - joint_uncertainty: the calibrated model leaves residuals far above the declared sigma on its
      own training data, or makes held-out data worse than the nominal model. Kinematic
      calibration assumes the joint readings are exact; backlash, elasticity or encoder errors
      break that, and then no set of origin parameters fits all configurations;
    - extrapolation: the held-out error grows with the distance from the training data (rank
      correlation >= 0.8 over at least three data sets, training included) to more than twice
      the training error.
    """
    h = measurement.headline
    train = training["measurements"][0]
    rows = [(e["data"], e["measurements"][0]) for e in held_out]
    evidence = [
        {
            "data": path,
            "distance_from_training": r["distance_from_training"],
            "before": r["before"][h],
            "after": r["after"][h],
            "after_over_training": r["after"][h] / train["after"][h],
        }
        for path, r in [(training["data"], train), *rows]
    ]
    warnings = []
    worse = [(path, r) for path, r in rows if r["after"][h] > r["before"][h]]
    fit = train["fit_per_residual"]
    if fit > MISFIT or worse:
        reasons = []
        if fit > MISFIT:
            reasons.append(
                f"on its training data the calibrated model leaves residuals {np.sqrt(fit):.1f} times the declared sigma ({h} {train['after'][h] * 1e3:.3f} mm)"
            )
        reasons += [f"it makes {path} worse than the nominal model ({h} {r['before'][h] * 1e3:.3f} -> {r['after'][h] * 1e3:.3f} mm)" for path, r in worse]
        found = "; ".join(reasons)
        warnings.append(
            {
                "kind": "joint_uncertainty",
                "message": found[0].upper() + found[1:] + ". The calibration assumes exact joint readings: backlash, joint elasticity or encoder errors "
                "violate that, and no set of origin parameters can then fit every configuration. Check the joints (e.g. repeat a configuration from both sides) before trusting this model.",
                "evidence": evidence,
            }
        )
    distances = np.array([e["distance_from_training"] for e in evidence])
    ratios = np.array([e["after_over_training"] for e in evidence])
    if len(evidence) >= 3 and ratios.max() > 2.0 and _rank_correlation(distances, ratios) >= 0.8:
        far = int(np.argmax(ratios))
        warnings.append(
            {
                "kind": "extrapolation",
                "message": f"The error grows with the distance from the training data: {evidence[far]['data']}, {distances[far] * 1e3:.0f} mm away, "
                f"has {ratios[far]:.1f} times the training {h}. Calibrate with data spread over the workspace the robot will work in.",
                "evidence": evidence,
            }
        )
    return warnings


def chosen_task(problem: Problem, reference: str | None = None, tips: Sequence[str] | None = None, n: int | None = None, seed: int | None = None) -> Task:
    """The task of `evaluate --truth`, `design` and `analyze --within task`: the problem's `task:`
    with each of `reference`, `tips`, `n` and `seed` given here in place of its own (other tips
    also drop its reference); without a `task:`, `Task.default`'s (the end effectors, else the
    leaf links; 1000 configurations, seed 0)."""
    declared = problem.config.task
    if declared is not None:
        if tips is None:
            tips, reference = declared.tips, reference or declared.reference
        n, seed = declared.n if n is None else n, declared.seed if seed is None else seed
    return Task.default(problem, reference, tips, **{k: v for k, v in (("n", n), ("seed", seed)) if v is not None})


def evaluate_truth(
    problem_path: Path,
    result: Path,
    truth: Path,
    reference: str | None = None,
    tips: Sequence[str] | None = None,
    n: int | None = None,
    seed: int | None = None,
    force: bool = False,
    warn=None,
) -> dict:
    """Task errors (m) of the nominal and the calibrated robot against a true robot file, for
    `chosen_task` (the problem's `task:` and these options over it).

    The test set is `uniform_cartesian_test_set` of the nominal robot over all tips (reference
    included); each model's errors are summarized over every configuration and tip. `force`,
    `warn`: as `load_stored`.
    """
    problem, stored = load_stored(problem_path, result, force, warn)
    after = stored.vectors(problem.layout.names, problem.theta0)[1]
    robot, block = problem.robot, problem.layout.blocks["robot"]
    if robot is None:
        raise RobocalError(f"{problem_path}: --truth compares robot models; the problem has no robot")
    task = chosen_task(problem, reference, tips, n, seed)
    true_robot = RobotModel(load_robot(truth))
    q = uniform_cartesian_test_set(robot, robot.nominal, (task.reference, *task.tips), task.n, task.seed)
    pairs = {
        name: task_point_pairs(robot, theta, true_robot, true_robot.nominal, q, task.reference, task.tips)
        for name, theta in (("nominal", robot.nominal), ("calibrated", after[block]))
    }
    errors = {name: summarize(np.linalg.norm(model - true, axis=-1)) for name, (model, true) in pairs.items()}
    modulo = None
    if stored.gauge_twists is not None:  # what the data could tell: the raw error adds the truth's own motion along the gauge
        points = task.reference == robot.tree.root
        modulo = {name: summarize(modulo_errors(model, true, stored.gauge_twists, points)) for name, (model, true) in pairs.items()}
    return {
        "truth": str(truth),
        "result": str(result),
        "reference": task.reference,
        "tips": list(task.tips),
        "n": task.n,
        "seed": task.seed,
        "unit": "m",
        "task": errors,
        "task_modulo_gauge": modulo,
    }


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (scipy.stats, imported here: 0.4 s that every other `evaluate` is spared)."""
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)
