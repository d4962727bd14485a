"""Choosing calibration samples for a problem: its measurement rows are the candidates.

Every row of every measurement of a problem (a recorded contact, a marker configuration) is a
candidate sample; its Jacobian is evaluated at the configuration that was actually measured and at
the nominal (or a calibrated) parameter vector. The task: `robocal.analysis.task_uncertainty.Task`;
the criterion and the strategies: `robocal.analysis.doptimal`.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Literal

import numpy as np

from robocal.analysis.doptimal import Design, TaskDOptimal, TaskMetric
from robocal.analysis.selection import free_mask, selection
from robocal.analysis.task_uncertainty import Task
from robocal.errors import RobocalError
from robocal.io.table import Table, read_table
from robocal.outputs import file_stem
from robocal.problem import Problem
from robocal.solver.map import MapProblem, rows_and_jacobian

Strategy = Literal["greedy", "detmax", "random"]
WEAK_PRIOR = 1.0  # precision (1 / (1 m or 1 rad)^2) of parameters without a prior, so A is invertible


def sample_index(problem: Problem) -> list[tuple[int, int]]:
    """(measurement index, row index) of each candidate, in the order of `candidates`."""
    return [(k, i) for k, m in enumerate(problem.measurements) for i in range(m.n)]


def candidates(problem: MapProblem, theta: np.ndarray) -> np.ndarray:
    """Whitened Jacobian blocks (N, d, p) of every measurement row, zero-padded to the largest d."""
    blocks, jac = rows_and_jacobian(problem, theta)
    d = max(b.shape[1] for b in blocks)
    out, start = [], 0
    for b in blocks:
        n, width = b.shape
        part = np.zeros((n, d, jac.shape[1]))
        part[:, :width] = jac[start : start + n * width].reshape(n, width, -1)
        out.append(part)
        start += n * width
    return np.concatenate(out)


def prior_precision(problem: Problem) -> np.ndarray:
    """Diagonal prior precision of the problem's parameters, WEAK_PRIOR where it has none."""
    precision = np.asarray(problem.layout.prior_precision_sqrt(), dtype=float) ** 2
    return np.where(precision > 0, precision, WEAK_PRIOR)


def design_criterion(problem: Problem, theta: np.ndarray, task: Task) -> TaskDOptimal:
    """The task D-optimal criterion over the parameters a fit estimates: those
    `parameters.select: identifiable` holds at nominal (`robocal.analysis.selection`) are left out."""
    free = free_mask(problem, selection(problem))
    jacobians = task.jacobians(problem, theta)[..., free]
    return TaskDOptimal(candidates(problem.map_problem, theta)[..., free], prior_precision(problem)[free], TaskMetric.from_jacobians(jacobians))


def choose(criterion: TaskDOptimal, n: int, strategy: Strategy, seed: int = 0) -> Design:
    """`n` samples by one strategy; DETMAX starts from the greedy design."""
    if strategy == "greedy":
        return criterion.greedy(n)
    if strategy == "detmax":
        return criterion.detmax(criterion.greedy(n).order)
    if strategy == "random":
        return criterion.random(n, seed)
    raise RobocalError(f"unknown strategy '{strategy}' (greedy, detmax, random)")


def data_tables(problem: Problem) -> list[Table]:
    """Each measurement's data table, whose chosen rows `write_selection` copies: read before the
    long work, so that data it cannot copy (a placement folder of socket files) are refused first."""
    tables = []
    for m in problem.measurements:
        source = m.ctx.resolve(m.config.data)
        if source.is_dir():
            raise RobocalError(
                f"{source}: measurement '{m.name}' reads a placement folder; `robocal design` copies the chosen rows of a data table "
                "(CSV, JSON, .mat, Parquet): give the recording as one CSV with the joint columns and a `socket` column"
            )
        tables.append(read_table(source))
    return tables


def write_selection(problem: Problem, design: Design, tables: list[Table], out_dir: Path) -> list[Path]:
    """selection.json (criterion, chosen samples by file and line) and, per measurement, a copy of
    its data table (`data_tables`) with only the chosen rows (header kept, file order kept), named
    after the measurement (`file_stem`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    index = sample_index(problem)
    chosen = [index[c] for c in design.order]
    files, samples = [], []
    for k, (m, table) in enumerate(zip(problem.measurements, tables)):
        lines = {int(m.lines[i]) for kk, i in chosen if kk == k}
        if not lines:
            continue
        source = m.ctx.resolve(m.config.data)
        target = out_dir / f"{file_stem(m.name)}.csv"
        if target in files:  # two names with the same stem (`a b`, `a_b`)
            target = out_dir / f"{file_stem(m.name)}_{k}.csv"
        with target.open("w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(table.header)
            writer.writerows(row for row, line in zip(table.rows, table.lines) if int(line) in lines)
        files.append(target)
        samples.append({"measurement": m.name, "data": str(source), "lines": sorted(lines), "written": target.name})  # beside selection.json
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
