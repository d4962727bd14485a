"""Calibrate a problem: a baseline fit with the nominal robot, the MAP fit, and their metrics.

The *baseline* estimates only what is not the robot (measurement frames, marker offsets, ...)
with every robot parameter at its nominal value: it answers "how wrong is the nominal model",
and is the `before` of every report. The MAP fit starts from it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from robocal.analysis.gauge import GaugeFix, fix_gauge, predicted_modulo
from robocal.analysis.identifiability import DEFAULT_THRESHOLD, Identifiability, identifiability, spectrum
from robocal.analysis.observability import scaled_condition_number
from robocal.analysis.selection import free_mask, selection
from robocal.analysis.task_uncertainty import Task, predicted_task_error, robot_uncertainty
from robocal.analysis.verdict import Verdict, judge
from robocal.errors import InputError
from robocal.measurements.base import ClosedForm, Measurement, on_rows, rows_shape
from robocal.problem import Problem
from robocal.problem.schema import MISFIT
from robocal.solver import Rejection, Solution, fit, solve
from robocal.solver.map import laplace, rows_and_jacobian
from robocal.solver.scaled_svd import solve_scaled_svd


@dataclass
class Calibration:
    problem: Problem
    baseline: np.ndarray
    solution: Solution
    identifiability: Identifiability
    conditioning: dict[str, float | None]  # Schroer-scaled condition number: per measurement, and "all"
    crossval: dict | None = None  # CrossValidation.report() where one was run (calibrate --crossval): feeds the verdict
    gauge: GaugeFix | None = None  # the gauge the estimate was fixed in (robocal.analysis.gauge), where the problem has one
    held: tuple[str, ...] = ()  # robot parameters held at nominal by `parameters.select: identifiable` (`selection`)

    @property
    def estimate(self) -> np.ndarray:
        """(p,) every parameter of the problem's layout, the held ones at nominal."""
        return self.solution.theta

    @property
    def free(self) -> np.ndarray:
        """(p,) bool: the parameters the fit estimated (all but the held ones); `parameters()`,
        `identifiability` and the covariance's nonzero block are over these."""
        return free_mask(self.problem, self.held)

    @cached_property
    def metrics(self) -> list[dict]:
        """Before/after per measurement over the rows the fit kept (rejected rows are listed apart);
        computed once, for report.json, the HTML report and the console alike. The whitened rows
        at the estimate come from the fit's compiled rows-and-Jacobian, not from a compilation of
        the rows alone (0.4 s of a TIAGo run on an empty cache)."""
        rows, _ = rows_and_jacobian(self.problem.map_problem, self.estimate)
        return [
            measurement_metrics(m, m.data, self.baseline, self.estimate, mask > 0, r)
            for m, mask, r in zip(self.problem.measurements, self.solution.masks, rows)
        ]

    def parameters(self) -> list[dict]:
        return [
            {
                "name": p.name,
                "unit": p.unit,
                "nominal": p.nominal,
                "baseline": float(b),
                "estimate": float(e),
                "std": float(s) if np.isfinite(s) else None,
                "prior_sigma": p.prior_sigma,
            }
            for p, b, e, s, free in zip(self.problem.layout.parameters, self.baseline, self.estimate, self.solution.std, self.free)
            if free
        ]

    def rejected(self) -> list[dict]:
        out = []
        for r in self.solution.rejections:
            m = self.problem.measurements[r.block]
            out.append(
                {
                    "measurement": m.name,
                    "file": str(m.config.data),
                    "line": int(m.lines[r.row]),
                    "normalized_error": r.normalized_error,
                    "reason": r.reason or f"whitened error {r.normalized_error:.2f} > threshold {r.threshold:g} (round {r.round})",
                }
            )
        return out

    @cached_property
    def task_prediction(self) -> dict | None:
        """The task-space error the posterior covariance predicts (problem file's `task:`), m."""
        task = problem_task(self.problem)
        if task is None:
            return None
        # Parameters held at nominal count with their prior: the data did not make them nominal.
        known = robot_uncertainty(self.problem, self.estimate, self.solution.covariance, self.solution.masks, held=self.held)
        jacobians = task.robot_jacobians(known.robot, known.theta)
        predicted = predicted_task_error(jacobians, known.covariance)
        # Mean squared whitened residual (prior terms included): about 1 when the sigmas are right
        # and the model can represent the robot; far above 1 the errors are not noise but model error.
        residuals = sum(int((mask > 0).sum()) * len(m.row_sigmas()) for m, mask in zip(self.problem.measurements, self.solution.masks))
        fit = self.solution.cost / max(residuals, 1)
        out = {
            "reference": task.reference,
            "tips": list(task.tips),
            "n": task.n,
            "seed": task.seed,
            "unit": "m",
            "predicted": predicted,
            "held_at_nominal": list(known.held),  # in the prediction with their prior sigmas
            "fit_per_residual": fit,
        }
        if self.gauge is not None:  # the error a calibration can know: the gauge's rigid motion aligned away
            out["predicted_modulo_gauge"] = predicted_modulo(self.gauge.gauge, task, known.robot, known.theta, jacobians, known.covariance)
        if fit > MISFIT:
            out["warning"] = (
                f"the residuals are {np.sqrt(fit):.1f} times the declared sigmas: the model does not fit the data, and this prediction (parameter uncertainty only) understates the task error"
            )
        return out

    @property
    def verdict(self) -> Verdict:
        """Whether to trust this calibration (robocal.analysis.verdict), with the problem's thresholds."""
        return judge(self, self.problem.config.verdict)

    def report(self) -> dict:
        s = self.solution
        return {
            "problem": str(self.problem.path),
            "parameters": self.parameters(),
            "measurements": self.metrics,
            "solver": {"iterations": s.iterations, "converged": s.converged, "seconds": s.seconds, "compile_seconds": s.compile_seconds, "cost": s.cost},
            "identifiability": {
                "n_parameters": self.identifiability.n_parameters,
                "rank": self.identifiability.rank,
                "threshold": self.identifiability.threshold,
                "kernel": self.identifiability.kernel,
                "unidentifiable_fixed": list(self.held),
                "scaled_condition_number": self.conditioning,
            },
            "rejected": self.rejected(),
            "task": self.task_prediction,
            "crossval": self.crossval,
            "gauge": None if self.gauge is None else self.gauge.report(self.problem.layout.names),
            "verdict": self.verdict.to_dict(),
        }


def measurement_metrics(
    measurement: Measurement, data, before: np.ndarray, after: np.ndarray, keep: np.ndarray | None = None, rows: np.ndarray | None = None
) -> dict:
    """Figures of one measurement on `data` for two parameter vectors (rows in `keep` only).
    `n` counts errors (a row of m marker points gives m), `rejected` counts dropped rows;
    `removed` is the share of the `headline` figure the calibration removed; `fit_per_residual`
    that of the calibrated model (see MISFIT): the mean squared whitened row over `keep`, about 1
    when the model explains the data to the declared sigmas (`rows`: the (n, k) whitened rows at
    `after` where the caller has them; else computed)."""
    shape = rows_shape(measurement, "errors", before, data)  # (rows, errors per row)
    keep = np.ones(shape[0], bool) if keep is None else np.asarray(keep, bool)
    b, a = measurement.figures(data, before, keep), measurement.figures(data, after, keep)
    rows = on_rows(measurement, "rows", after, data) if rows is None else np.asarray(rows)
    return metrics_entry(measurement, shape, keep, b, a, float(np.mean(rows[keep] ** 2)))


def metrics_entry(measurement: Measurement, shape: tuple[int, ...], keep: np.ndarray, before: dict, after: dict, fit: float) -> dict:
    """`measurement_metrics` from its parts: the errors' shape (rows, errors per row), the rows
    kept, the figures before and after, and the calibrated model's fit per residual."""
    h = measurement.headline
    source = {"input": measurement.provenance()} if measurement.provenance() else {}
    return source | {
        "name": measurement.name,
        "type": measurement.type_name,
        "n": int(keep.sum()) * int(np.prod(shape[1:])),
        "rejected": int((~keep).sum()),
        "unit": "m",
        "error": measurement.error_label,
        "headline": h,
        "before": before,
        "after": after,
        "removed": (before[h] - after[h]) / before[h] if before[h] > 0 else None,
        "fit_per_residual": fit,
    }


def conditioning(problem: Problem, jacobian: np.ndarray, masks: list[np.ndarray]) -> dict[str, float | None]:
    """Schroer-scaled condition number (robocal.analysis.observability) of the unweighted Jacobian
    over its identifiable directions: of each measurement alone (the parameters it moves) and of
    all together. None where it is infinite. A problem of one measurement computes it once: its
    rows are all the rows."""
    _, points = problem.stacked_points()
    keep = np.concatenate([np.repeat(mask > 0, len(m.row_sigmas())) for m, mask in zip(problem.measurements, masks)])
    index = np.cumsum(keep) - 1  # stacked row -> row of the kept Jacobian
    points = points if keep.all() else [index[p] for p in points if keep[p].all()]
    # a measurement's kept rows are contiguous (stacked in order): rows start:stop of the Jacobian
    bounds = np.cumsum([0] + [int((mask > 0).sum()) * len(m.row_sigmas()) for m, mask in zip(problem.measurements, masks)])

    def kappa(start: int, stop: int) -> float | None:
        sub = jacobian[start:stop]
        sub = sub[:, np.abs(sub).max(axis=0) > 0]
        groups = [p - start for p in points if start <= p[0] < stop]  # a point's rows belong to one measurement
        value = scaled_condition_number(sub, groups, int((spectrum(sub)[0] > DEFAULT_THRESHOLD).sum()))
        return value if np.isfinite(value) else None

    out = {m.name: kappa(int(bounds[i]), int(bounds[i + 1])) for i, m in enumerate(problem.measurements)}
    return out | {"all": out[problem.measurements[0].name] if len(problem.measurements) == 1 else kappa(0, len(jacobian))}


def solver_options(problem: Problem) -> dict:
    """The problem file's solver settings as keyword arguments of `solve` (outlier rejection apart)."""
    cfg = problem.config.solver
    return dict(max_iterations=cfg.max_iterations, tolerance=cfg.tolerance, huber=cfg.huber)


def closed_form_solution(problem: Problem, estimates: list[ClosedForm | None], masks: list[np.ndarray], free: np.ndarray) -> Solution:
    """`solver.method: closed_form`: the one measurement's closed-form estimate of the `free`
    parameters, with the posterior covariance of the MAP model at it (so std and identifiability
    read as after a MAP fit)."""
    offering = [(m, e) for m, e in zip(problem.measurements, estimates) if e is not None]
    if len(offering) != 1:
        have = ", ".join(m.name for m, _ in offering) or "none"
        raise InputError(
            problem.path,
            f"method closed_form needs exactly one measurement with a closed-form estimate (here: {have}); use method: map to combine several",
            field="solver.method",
        )
    theta = problem.theta0.copy()
    for index, value in offering[0][1].values.items():
        if free[index]:
            theta[index] = value
    started = time.perf_counter()
    covariance, cost = laplace(problem.map_problem, theta, masks, np.flatnonzero(free))
    return Solution(theta, covariance, np.sqrt(np.diag(covariance)), 0, True, time.perf_counter() - started, 0.0, cost, masks)


def calibrate(problem: Problem) -> Calibration:
    cfg, options = problem.config.solver, solver_options(problem)
    held = selection(problem)
    free = free_mask(problem, held)
    # Rows a measurement's own closed form left out (odometry's trimming) stay out of every fit.
    estimates = [m.closed_form(problem.theta0) for m in problem.measurements]
    masks = [np.ones(m.n) if e is None else e.keep.astype(float) for m, e in zip(problem.measurements, estimates)]
    left_out = [
        Rejection(b, row, float("nan"), None, 0, reason) for b, e in enumerate(estimates) if e is not None for row, reason in sorted(e.left_out.items())
    ]
    not_model = ~problem.model_parameters()
    baseline = problem.theta0
    if not_model.any():
        baseline = fit(problem.map_problem, baseline, free=not_model, masks=masks, **options)
    if cfg.method == "closed_form":
        solution = closed_form_solution(problem, estimates, masks, free)
    elif cfg.method == "scaled_svd":
        if cfg.huber is not None or cfg.outlier_threshold is not None:
            raise InputError(
                problem.path, "method scaled_svd is plain least squares: it takes no huber or outlier_threshold (use method: map)", field="solver.method"
            )
        solution = solve_scaled_svd(
            problem.map_problem, baseline, masks, *problem.stacked_points(), free=free, max_iterations=cfg.max_iterations, tolerance=cfg.tolerance
        )
    else:
        solution = solve(
            problem.map_problem,
            baseline,
            free=free,
            masks=masks,
            outlier_threshold=cfg.outlier_threshold,
            max_rejection_rounds=cfg.max_rejection_rounds,
            **options,
        )
    solution.rejections = left_out + solution.rejections
    gauge = None
    task = problem_task(problem)
    if task is not None and cfg.method == "map":
        gauge = fix_gauge(problem, solution.theta, task, solution.masks, free)
        if gauge is not None:  # the estimate moved along what the data do not see: the same fit, its uncertainty there
            covariance, cost = laplace(problem.map_problem, gauge.theta, solution.masks, np.flatnonzero(free))
            solution = replace(solution, theta=gauge.theta, covariance=covariance, std=np.sqrt(np.diag(covariance)), cost=cost)
    jac = problem.unweighted_jacobian(solution.theta, solution.masks)[:, free]
    names = [name for name, f in zip(problem.layout.names, free) if f]
    return Calibration(problem, baseline, solution, identifiability(jac, names), conditioning(problem, jac, solution.masks), gauge=gauge, held=held)


def problem_task(problem: Problem) -> Task | None:
    """The problem file's `task:` (None without one)."""
    cfg = problem.config.task
    return None if cfg is None else Task.default(problem, cfg.reference, cfg.tips, n=cfg.n, seed=cfg.seed)
