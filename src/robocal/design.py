"""Choosing calibration samples for a problem: its measurement rows are the candidates.

Every row of every measurement of a problem (a recorded contact, a marker configuration) is a
candidate sample; its Jacobian is evaluated at the configuration that was actually measured and at
the nominal (or a calibrated) parameter vector. The task is the relative position of tip links on
a test set uniform in their Cartesian workspace (`robocal.simulation.testset`); with a single tip
the reference is the robot's root link, i.e. the tip's absolute position. The criterion and the
strategies: `robocal.analysis.doptimal`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import numpy as np

from robocal.analysis.doptimal import Design, TaskDOptimal, TaskMetric
from robocal.analysis.task_error import task_jacobians
from robocal.errors import RobocalError
from robocal.evaluation import default_tips
from robocal.io.table import read_table
from robocal.problem import Problem
from robocal.simulation.testset import uniform_cartesian_test_set
from robocal.solver.map import rows_and_jacobian

Strategy = Literal["greedy", "detmax", "random"]
WEAK_PRIOR = 1.0  # precision (1 / (1 m or 1 rad)^2) of parameters without a prior, so A is invertible


@dataclass(frozen=True)
class Task:
    """Relative positions of `tips` with respect to `reference` on `n` test configurations."""

    reference: str
    tips: tuple[str, ...]
    n: int = 1000
    seed: int = 0

    @classmethod
    def default(cls, problem: Problem, reference: str | None = None, tips: Sequence[str] | None = None, **options) -> "Task":
        tips = tuple(tips or default_tips(problem.tree))
        reference = reference or (tips[0] if len(tips) > 1 else problem.tree.root)
        for link in (reference, *tips):
            if not problem.tree.has_link(link):
                raise RobocalError(f"{problem.tree.source or problem.tree.name}: no link named '{link}'")
        others = tuple(tip for tip in dict.fromkeys(tips) if tip != reference)
        if not others:
            raise RobocalError(f"the task needs a tip other than the reference '{reference}'")
        return cls(reference, others, **options)

    def metric(self, problem: Problem, theta: np.ndarray) -> TaskMetric:
        """The task's sensitivity to every parameter of the problem (zero outside the robot)."""
        block = problem.layout.blocks["robot"]
        q = uniform_cartesian_test_set(problem.robot, theta[block], (self.reference, *self.tips), self.n, self.seed)
        robot_jac = task_jacobians(problem.robot, theta[block], q, self.reference, self.tips)
        jac = np.zeros((*robot_jac.shape[:-1], len(theta)))
        jac[..., block] = robot_jac
        return TaskMetric.from_jacobians(jac)


def sample_index(problem: Problem) -> list[tuple[int, int]]:
    """(measurement index, row index) of each candidate, in the order of `candidates`."""
    return [(k, i) for k, m in enumerate(problem.measurements) for i in range(m.n)]


def candidates(problem: Problem, theta: np.ndarray) -> np.ndarray:
    """Whitened Jacobian blocks (N, d, p) of every measurement row, zero-padded to the largest d."""
    blocks, jac = rows_and_jacobian(problem.map_problem, theta)
    d = max(b.shape[1] for b in blocks)
    out, start = [], 0
    for b in blocks:
        n, width = b.shape
        part = np.zeros((n, d, jac.shape[1]))
        part[:, :width] = jac[start : start + n * width].reshape(n, width, -1)
        out.append(part)
        start += n * width
    return np.concatenate(out)


def design_criterion(problem: Problem, theta: np.ndarray, task: Task) -> TaskDOptimal:
    blocks = candidates(problem, theta)
    precision = np.asarray(problem.layout.prior_precision_sqrt(), dtype=float) ** 2
    return TaskDOptimal(blocks, np.where(precision > 0, precision, WEAK_PRIOR), task.metric(problem, theta))


def choose(criterion: TaskDOptimal, n: int, strategy: Strategy, seed: int = 0) -> Design:
    """`n` samples by one strategy; DETMAX starts from the greedy design."""
    if strategy == "greedy":
        return criterion.greedy(n)
    if strategy == "detmax":
        return criterion.detmax(criterion.greedy(n).order)
    if strategy == "random":
        return criterion.random(n, seed)
    raise RobocalError(f"unknown strategy '{strategy}' (greedy, detmax, random)")


def write_selection(problem: Problem, design: Design, out_dir: Path) -> list[Path]:
    """selection.json (criterion, chosen samples by file and line) and, per measurement, a copy of
    its data file with only the chosen rows (header kept, file order kept)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    index = sample_index(problem)
    chosen = [index[c] for c in design.order]
    files, samples = [], []
    for k, m in enumerate(problem.measurements):
        lines = {int(m.lines[i]) for kk, i in chosen if kk == k}
        if not lines:
            continue
        source = m.ctx.resolve(m.config.data)
        table = read_table(source)
        target = out_dir / f"{m.name}.csv"
        with target.open("w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(table.header)
            writer.writerows(row for row, line in zip(table.rows, table.lines) if int(line) in lines)
        files.append(target)
        samples.append({"measurement": m.name, "data": str(source), "lines": sorted(lines), "written": str(target)})
    report = {
        "strategy": design.strategy,
        "n": len(design.order),
        "candidates": len(index),
        "criterion_logdet": design.criterion,
        "predicted_task_rms": design.predicted_rms,
        "unit": "m",
        "exchanges": design.exchanges,
        "order": [{"measurement": problem.measurements[k].name, "line": int(problem.measurements[k].lines[i])} for k, i in chosen],
        "samples": samples,
    }
    path = out_dir / "selection.json"
    path.write_text(json.dumps(report, indent=2))
    return [path, *files]
