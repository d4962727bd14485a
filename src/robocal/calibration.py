"""Calibrate a problem: a baseline fit with the nominal robot, the MAP fit, and their metrics.

The *baseline* estimates only what is not the robot (measurement frames, marker offsets, ...)
with every robot parameter at its nominal value: it answers "how wrong is the nominal model",
and is the `before` of every report. The MAP fit starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.analysis.identifiability import Identifiability, identifiability
from robocal.analysis.task_uncertainty import Task, predicted_task_error
from robocal.problem import Problem
from robocal.solver import Solution, solve
from robocal.solver.map import rows_and_jacobian


def summarize(errors: np.ndarray) -> dict[str, float]:
    e = np.asarray(errors, dtype=float).ravel()
    return {"rms": float(np.sqrt(np.mean(e**2))), "mean": float(e.mean()), "max": float(e.max())}


@dataclass
class Calibration:
    problem: Problem
    baseline: np.ndarray
    solution: Solution
    identifiability: Identifiability

    @property
    def estimate(self) -> np.ndarray:
        return self.solution.theta

    def metrics(self) -> list[dict]:
        """Before/after per measurement over the rows the fit kept (rejected rows are listed apart)."""
        return [measurement_metrics(m, m.data, self.baseline, self.estimate, mask > 0) for m, mask in zip(self.problem.measurements, self.solution.masks)]

    def parameters(self) -> list[dict]:
        return [
            {"name": p.name, "unit": p.unit, "nominal": p.nominal, "baseline": float(b), "estimate": float(e), "std": float(s) if np.isfinite(s) else None, "prior_sigma": p.prior_sigma}
            for p, b, e, s in zip(self.problem.layout.parameters, self.baseline, self.estimate, self.solution.std)
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
                    "reason": f"whitened error {r.normalized_error:.2f} > threshold {r.threshold:g} (round {r.round})",
                }
            )
        return out

    @cached_property
    def task_prediction(self) -> dict | None:
        """The task-space error the posterior covariance predicts (problem file's `task:`), m."""
        cfg = self.problem.config.task
        if cfg is None:
            return None
        task = Task.default(self.problem, cfg.reference, cfg.tips, n=cfg.n, seed=cfg.seed)
        predicted = predicted_task_error(task.jacobians(self.problem, self.estimate), self.solution.covariance)
        # Mean squared whitened residual (prior terms included): about 1 when the sigmas are right
        # and the model can represent the robot; far above 1 the errors are not noise but model error.
        residuals = sum(int((mask > 0).sum()) * len(m.row_sigmas()) for m, mask in zip(self.problem.measurements, self.solution.masks))
        fit = self.solution.cost / max(residuals, 1)
        out = {"reference": task.reference, "tips": list(task.tips), "n": task.n, "seed": task.seed, "unit": "m", "predicted": predicted, "fit_per_residual": fit}
        if fit > 4.0:
            out["warning"] = f"the residuals are {np.sqrt(fit):.1f} times the declared sigmas: the model does not fit the data, and this prediction (parameter uncertainty only) understates the task error"
        return out

    def report(self) -> dict:
        s = self.solution
        return {
            "problem": str(self.problem.path),
            "parameters": self.parameters(),
            "measurements": self.metrics(),
            "solver": {"iterations": s.iterations, "converged": s.converged, "seconds": s.seconds, "compile_seconds": s.compile_seconds, "cost": s.cost},
            "identifiability": {
                "n_parameters": self.identifiability.n_parameters,
                "rank": self.identifiability.rank,
                "threshold": self.identifiability.threshold,
                "kernel": self.identifiability.kernel,
                "unidentifiable_fixed": list(self.problem.unidentifiable),
            },
            "rejected": self.rejected(),
            "task": self.task_prediction,
        }


def measurement_errors(measurement, data, theta) -> np.ndarray:
    """Unwhitened errors (n, m) in SI units of one measurement on `data` at `theta` (jitted)."""
    return np.asarray(jax.jit(measurement.errors)(jnp.asarray(theta), jax.tree.map(jnp.asarray, data)))


def measurement_metrics(measurement, data, before: np.ndarray, after: np.ndarray, keep: np.ndarray | None = None) -> dict:
    """Error summary of one measurement on `data` for two parameter vectors (rows in `keep` only).
    `n` counts errors (a row of m marker points gives m), `rejected` counts dropped rows."""
    e_before, e_after = measurement_errors(measurement, data, before), measurement_errors(measurement, data, after)
    keep = np.ones(len(e_before), bool) if keep is None else keep
    e_before, e_after = e_before[keep], e_after[keep]
    return {
        "name": measurement.name,
        "type": measurement.type_name,
        "n": int(e_before.size),
        "rejected": int((~keep).sum()),
        "unit": "m",
        "error": measurement.error_label,
        "before": summarize(e_before),
        "after": summarize(e_after),
    }


def unweighted_jacobian(problem: Problem, theta, masks=None) -> np.ndarray:
    """Jacobian of the residuals in SI units (whitening undone), rows outside `masks` dropped."""
    blocks, jac = rows_and_jacobian(problem.map_problem, theta)
    scale, keep = [], []
    for m, b, mask in zip(problem.measurements, blocks, masks or [np.ones(len(b)) for b in blocks]):
        scale.append(np.tile(m.row_sigmas(), b.shape[0]))
        keep.append(np.repeat(mask > 0, b.shape[1]))
    scale, keep = np.concatenate(scale), np.concatenate(keep)
    return (jac * scale[:, None])[keep]


def solver_options(problem: Problem) -> dict:
    """The problem file's solver settings as keyword arguments of `solve` (outlier rejection apart)."""
    cfg = problem.config.solver
    return dict(max_iterations=cfg.max_iterations, tolerance=cfg.tolerance, huber=cfg.huber)


def calibrate(problem: Problem) -> Calibration:
    cfg, options = problem.config.solver, solver_options(problem)
    not_robot = np.ones(len(problem.layout), bool)
    not_robot[problem.layout.blocks["robot"]] = False
    baseline = problem.theta0
    if not_robot.any():
        baseline = solve(problem.map_problem, baseline, free=not_robot, **options).theta
    solution = solve(problem.map_problem, baseline, outlier_threshold=cfg.outlier_threshold, max_rejection_rounds=cfg.max_rejection_rounds, **options)
    jac = unweighted_jacobian(problem, solution.theta, solution.masks)
    return Calibration(problem, baseline, solution, identifiability(jac, problem.layout.names))
