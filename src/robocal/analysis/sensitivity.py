"""Sensitivity analysis of a calibration problem (`robocal analyze`): what its measurements can
identify, mode by mode, at the nominal (or given) parameters.

The unweighted Jacobian of every residual row (SI units, `Problem.unweighted_jacobian`)
is split by measurement. A *mode* is a set of links, e.g. two fingertips (a single pair), three,
or all of them; without links the mode is the whole problem. In a mode:

- rows: only those of measurements on the mode's links. A link belongs to the mode when every
  joint between it and the root also lies between the root and one of the mode's links (so the
  phalanges of a finger belong with its tip). Each measurement decides which of its rows a mode
  keeps (`Measurement.rows_in_mode`): a `contact` row when both its bodies belong; a `task`
  measurement the vectors between the tips that belong, re-referenced to one of them; any other
  measurement is kept whole when all its links belong, else dropped;
- parameters (columns): the robot parameters that move the mode's links
  (`RobotModel.parameters_affecting`), and the non-robot parameters (frames, marker offsets) that
  change some kept row. Without links every robot parameter is kept. Those that
  `parameters.select: identifiable` holds at nominal (`robocal.analysis.selection`) are not
  fitted, and not analyzed either.

For the kept measurements together, and for each alone, the rank and kernel of J^T J
(`robocal.analysis.identifiability`), the Schroer-scaled condition number and the observability
indices O1-O5 (`robocal.analysis.observability`) over the identifiable directions; optionally the
inclusion kernel(A) in kernel(B) of two measurements (e.g. contact in task: the contact data can
then identify everything that matters for the task). Where no measurement is named `task`, that
name in the inclusion test is the problem's task, which needs no data: its `task:` (else the
default task; `robocal.evaluation.chosen_task`), the vectors between its tips over its uniform
Cartesian test set, kept in a mode as a `task` measurement's are, analyzed beside the
measurements (and not part of their combined result).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from robocal.analysis.identifiability import (
    DEFAULT_INCLUSION_TOLERANCE,
    DEFAULT_THRESHOLD,
    Identifiability,
    Inclusion,
    identifiability,
    kernel_inclusion,
)
from robocal.analysis.observability import observability
from robocal.analysis.selection import free_mask, selection
from robocal.analysis.task_uncertainty import Task
from robocal.errors import RobocalError
from robocal.evaluation import chosen_task
from robocal.measurements.base import Measurement
from robocal.measurements.task import relative_rows_in_mode
from robocal.problem import Problem

TASK = "task"  # --kernel-of / --within: the problem's task, where no measurement has this name


@dataclass(frozen=True)
class MeasurementRows:
    """A measurement's Jacobian rows in a mode, over all of the problem's parameters."""

    measurement: Measurement
    jacobian: np.ndarray  # (rows, n_parameters of the problem)
    points: list[np.ndarray]  # row indices of each measured point (Schroer scaling)


def measurement_jacobians(problem: Problem, theta: np.ndarray | None = None) -> list[np.ndarray]:
    """Unweighted Jacobian (n_m * k_m, P) of each measurement's rows at theta (default nominal);
    row i * k_m + c is column c of data row i."""
    theta = problem.theta0 if theta is None else np.asarray(theta, dtype=float)
    jac = problem.unweighted_jacobian(theta)
    sizes = [m.n * len(m.row_sigmas()) for m in problem.measurements]
    return np.split(jac, np.cumsum(sizes)[:-1])


@dataclass(frozen=True)
class TaskRows:
    """The problem's task as rows: its Jacobian (configurations, 3 * tips, all parameters) on its
    test set, each configuration's rows the vectors from the reference to each tip."""

    task: Task
    blocks: np.ndarray

    @property
    def description(self) -> str:
        return f"{', '.join(self.task.tips)} relative to {self.task.reference}, {self.task.n} configurations (seed {self.task.seed})"


def task_rows(problem: Problem, theta: np.ndarray | None = None) -> TaskRows:
    """The problem's task (`chosen_task`) at theta (default nominal)."""
    if problem.tree is None:
        raise RobocalError(f"{problem.path}: the task ('{TASK}' in --kernel-of / --within) needs a robot")
    task = chosen_task(problem)
    jac = task.jacobians(problem, problem.theta0 if theta is None else np.asarray(theta, dtype=float))
    return TaskRows(task, jac.reshape(jac.shape[0], -1, jac.shape[-1]))


def uses_task(problem: Problem, kernel_of: str | None, within: str | None) -> bool:
    """Whether the inclusion test names the problem's task rather than a measurement."""
    return TASK in (kernel_of, within) and TASK not in [m.name for m in problem.measurements]


def mode_rows(measurement: Measurement, jacobian: np.ndarray, belongs) -> MeasurementRows:
    """The rows of one measurement in a mode (module docstring); `belongs(link)` tells the mode's
    links. What a measurement keeps is its own business (`Measurement.rows_in_mode`)."""
    m = measurement
    rows, points = m.rows_in_mode(jacobian.reshape(m.n, len(m.row_sigmas()), jacobian.shape[1]), belongs)
    return MeasurementRows(m, rows, points)


@dataclass(frozen=True)
class Result:
    """Identifiability and quality of one set of rows."""

    name: str
    type: str
    rows: int
    identifiability: Identifiability
    quality: dict  # scaled_condition_number, observability (O1..O5)

    def to_dict(self) -> dict:
        kappa = self.quality["scaled_condition_number"]
        quality = {**self.quality, "scaled_condition_number": kappa if np.isfinite(kappa) else None}  # JSON has no inf
        return {"name": self.name, "type": self.type, "rows": self.rows, **self.identifiability.to_dict(), **quality}


def _result(name: str, kind: str, jacobian: np.ndarray, points: list[np.ndarray], names: list[str], threshold: float) -> Result:
    ident = identifiability(jacobian, names, threshold)
    return Result(name, kind, len(jacobian), ident, observability(jacobian, points, ident.rank))


@dataclass(frozen=True)
class ModeAnalysis:
    links: tuple[str, ...] | None  # None: the whole problem
    parameters: list[str]
    combined: Result  # all kept measurements together
    measurements: list[Result]
    inclusion: dict | None = field(default=None)
    task: Result | None = None  # the problem's task, where the inclusion test names it (TASK)
    task_description: str | None = None

    @property
    def label(self) -> str:
        return "+".join(self.links) if self.links else "all"

    def to_dict(self) -> dict:
        """The combined result's fields at the top (n_parameters, rank, threshold, eigenvalues,
        kernel, scaled_condition_number, observability), then the mode, parameter names, each
        measurement's result and the inclusion test."""
        top = self.combined.to_dict()
        for key in ("name", "type"):
            top.pop(key)
        return {
            **top,
            "links": list(self.links) if self.links else None,
            "parameters": self.parameters,
            "measurements": [r.to_dict() for r in self.measurements],
            "inclusion": self.inclusion,
            "task": None if self.task is None else {**self.task.to_dict(), "description": self.task_description},
        }


def check_options(problem: Problem, links, measurements, kernel_of, within) -> list[str]:
    """The measurement names to analyze; RobocalError on unknown names or links."""
    names = [m.name for m in problem.measurements]
    chosen = list(measurements) if measurements else names
    task = [TASK] if uses_task(problem, kernel_of, within) else []
    for name in [*chosen, *(n for n in (kernel_of, within) if n is not None and n not in task)]:
        if name not in names:
            raise RobocalError(
                f"{problem.path}: no measurement named '{name}' (have {', '.join(names)}; '{TASK}' in --kernel-of / --within: the problem's task)"
            )
    if (kernel_of is None) != (within is None):
        raise RobocalError("the kernel inclusion test needs both --kernel-of and --within")
    for name in (kernel_of, within):
        if name is not None and name not in chosen + task:
            raise RobocalError(f"--kernel-of / --within: '{name}' is not among the analyzed measurements ({', '.join(chosen)})")
    tree = problem.tree
    for link in links or ():
        if tree is None:
            raise RobocalError(f"--links: {problem.path} has no robot")
        if not tree.has_link(link):
            raise RobocalError(f"--links: '{link}' is not a link of {tree.source or tree.name}")
    return chosen


def analyze_mode(
    problem: Problem,
    jacobians: Sequence[np.ndarray],
    links: Sequence[str] | None = None,
    measurements: Sequence[str] | None = None,
    kernel_of: str | None = None,
    within: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    tolerance: float = DEFAULT_INCLUSION_TOLERANCE,
    task: TaskRows | None = None,
    free: np.ndarray | None = None,
) -> ModeAnalysis:
    """One mode of `robocal analyze` (module docstring). `jacobians`: `measurement_jacobians(problem)`;
    `measurements`: names to use (default all); `kernel_of`/`within`: the inclusion test
    kernel(kernel_of) in kernel(within), measurement names or TASK; `task`: `task_rows(problem)`
    at the jacobians' parameters (computed at nominal if the test names the task and none is given);
    `free` (p,) bool: the parameters a fit estimates (default all; the others are left out)."""
    names = [m.name for m in problem.measurements]
    chosen = check_options(problem, links, measurements, kernel_of, within)
    task = (task or task_rows(problem)) if uses_task(problem, kernel_of, within) else None
    tree, robot, robot_block = problem.tree, problem.robot, problem.layout.blocks["robot"]
    if links:
        if tree is None or robot is None:
            raise RobocalError(f"--links: {problem.path} has no robot")
        joints = {j for link in links for j in tree.chain(link)}
        belongs = lambda link: set(tree.chain(link)) <= joints  # noqa: E731
        robot_columns = robot_block.start + robot.parameters_affecting(links)
    else:
        belongs = lambda link: True  # noqa: E731
        robot_columns = np.arange(robot_block.start, robot_block.stop)
    if free is not None:
        robot_columns = robot_columns[free[robot_columns]]
    kept = [mode_rows(m, jacobians[names.index(m.name)], belongs) for m in problem.measurements if m.name in chosen]
    kept = [r for r in kept if len(r.jacobian)]
    where = f"links {', '.join(links)}" if links else "the problem"
    if not kept:
        raise RobocalError(f"{problem.path}: no rows of {', '.join(chosen)} on {where}")
    for name in (kernel_of, within):
        if name is not None and name not in [r.measurement.name for r in kept] + ([TASK] if task else []):
            raise RobocalError(f"{problem.path}: measurement '{name}' has no rows on {where}")
    stacked = np.concatenate([r.jacobian for r in kept])
    others = np.setdiff1d(np.flatnonzero(np.any(stacked != 0, axis=0)), np.arange(robot_block.start, robot_block.stop))
    columns = np.union1d(robot_columns, others).astype(int)
    parameters = [problem.layout.names[i] for i in columns]

    offsets = np.cumsum([0] + [len(r.jacobian) for r in kept])
    points = [g + offset for r, offset in zip(kept, offsets) for g in r.points]
    combined = _result("all", "combined", stacked[:, columns], points, parameters, threshold)
    results = [_result(r.measurement.name, r.measurement.type_name, r.jacobian[:, columns], r.points, parameters, threshold) for r in kept]
    task_result = None
    if task is not None:
        rows, task_points = relative_rows_in_mode(task.blocks, (task.task.reference, *task.task.tips), belongs)
        if not len(rows):
            raise RobocalError(f"{problem.path}: the task ({task.description}) has fewer than two of its links on {where}")
        task_result = _result(TASK, "task", rows[:, columns], task_points, parameters, threshold)
    inclusion = None
    if kernel_of is not None and within is not None:  # both or neither (check_options)
        by_name = {r.name: r for r in results} | ({TASK: task_result} if task_result else {})
        test: Inclusion = kernel_inclusion(by_name[kernel_of].identifiability, by_name[within].identifiability, tolerance)
        inclusion = {"kernel_of": kernel_of, "within": within, **test.to_dict()}
    description = None if task is None else task.description
    return ModeAnalysis(tuple(links) if links else None, parameters, combined, results, inclusion, task_result, description)


def analyze(
    problem: Problem,
    theta: np.ndarray | None = None,
    modes: Sequence[Sequence[str] | None] = (None,),
    measurements: Sequence[str] | None = None,
    kernel_of: str | None = None,
    within: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    tolerance: float = DEFAULT_INCLUSION_TOLERANCE,
) -> list[ModeAnalysis]:
    """`analyze_mode` for each mode (a list of links, or None for the whole problem) on one
    Jacobian at theta (default nominal), over the parameters a fit estimates; the options are
    checked before it is computed."""
    for links in modes:
        check_options(problem, links, measurements, kernel_of, within)
    jacobians = measurement_jacobians(problem, theta)
    task = task_rows(problem, theta) if uses_task(problem, kernel_of, within) else None
    free = free_mask(problem, selection(problem))
    return [analyze_mode(problem, jacobians, links, measurements, kernel_of, within, threshold, tolerance, task, free) for links in modes]


def print_modes(modes: Sequence[ModeAnalysis], console, where: str = "nominal parameters") -> None:
    """Human summary: per mode a table (rank, kernel size, eigenvalues about the threshold,
    scaled condition number, O1..O5), the kernel directions and the inclusion verdict."""
    from rich.markup import escape
    from rich.table import Table

    for mode in modes:
        threshold = mode.combined.identifiability.threshold
        results = mode.measurements + ([mode.combined] if len(mode.measurements) > 1 else []) + ([mode.task] if mode.task else [])
        ranks = Table(title=f"{escape(mode.label)}: {len(mode.parameters)} parameters at {where}; identifiable: eigenvalue of J^T J (SI) > {threshold:g}")
        for column in ("measurement", "rows", "identifiable", "kernel", "smallest kept", "largest dropped"):
            ranks.add_column(column, justify="left" if column == "measurement" else "right")
        quality = Table(title="Schroer-scaled condition number and observability indices over the identifiable directions")
        for column in ("measurement", "kappa", "O1", "O2", "O3", "O4", "O5"):
            quality.add_column(column, justify="left" if column == "measurement" else "right")
        for r in results:
            ident, q = r.identifiability, r.quality
            w = ident.eigenvalues
            kept = f"{w[ident.rank - 1]:.2e}" if ident.rank else "-"
            dropped = f"{w[ident.rank]:.2e}" if ident.rank < len(w) else "-"
            ranks.add_row(escape(r.name), str(r.rows), f"{ident.rank} of {ident.n_parameters}", str(ident.n_parameters - ident.rank), kept, dropped)
            quality.add_row(escape(r.name), f"{q['scaled_condition_number']:.4g}", *(f"{q['observability'][f'O{k}']:.3g}" for k in range(1, 6)))
        console.print(ranks)
        console.print(quality)
        if mode.task_description:
            console.print(f"task: the problem's task, no data: {escape(mode.task_description)}", highlight=False)
        for r in results:
            if r.identifiability.kernel:
                console.print(f"kernel of {escape(r.name)} ({len(r.identifiability.kernel)} directions):", highlight=False)
                for k, direction in enumerate(r.identifiability.kernel, 1):
                    console.print(f"  {k}: " + ", ".join(f"{escape(name)} {weight:+.3f}" for name, weight in direction.items()), highlight=False)
        if mode.inclusion:
            inc = mode.inclusion
            verdict = "holds" if inc["holds"] else "does not hold"
            meaning = (
                f"every direction {inc['kernel_of']} cannot identify leaves {inc['within']} unchanged"
                if inc["holds"]
                else f"{inc['kernel_of']} leaves directions unidentified that change {inc['within']}"
            )
            console.print(
                f"kernel({escape(inc['kernel_of'])}) in kernel({escape(inc['within'])}): {verdict} ({escape(meaning)}); dimensions {inc['dim_a']} and {inc['dim_b']}, "
                f"largest principal angle {inc['largest_angle_deg']:.3g} deg (residual {inc['residual']:.2e}, tolerance {inc['tolerance']:g})",
                highlight=False,
            )
