"""k-fold cross-validation of a calibration problem: how well a fit predicts rows it has not seen.

Rows are assigned to k folds by a seeded permutation (row i goes to fold perm[i] mod k, so fold
sizes differ by at most one); measurements that read the same data file with as many rows share
one assignment, so a held-out sample is held out with every quantity recorded in it. For fold f
the MAP problem is solved on the rows outside f (`solve(..., masks=...)`, one compiled solver for
every fold) and each measurement's errors (SI units) are taken on the rows of f. k = 5 is the
80/20 split of the seed paper's real-hand experiment; the pooled held-out errors cover every row
once. Leave-one-file-out (`by_file`) makes one fold of each data file instead: a held-out file is
a session, or a plate placement, the fit has not seen in any of its rows, which is how a
calibration is used (and the MUKCa protocol's held-out placements).

Baseline and start: `calibrate(problem)` runs once on all rows. Its baseline (the non-robot
parameters, such as frames and marker offsets, fitted with the nominal robot) is the `before` of
every summary and the starting point of every fold; a start only picks the basin, each fold's
estimate depends on its training rows alone. Rows the full fit rejected as outliers stay out of
every fold's training and of all summaries. Outlier rejection is not repeated per fold (its rounds
re-judge masked rows and could re-admit held-out ones); the problem's Huber loss applies.

What to expect (rows linear in theta with Gaussian noise, whitened, no prior): fitted on the rows
T, row i (k_i residuals, Jacobian J_i) has E|r_i|^2 = k_i - h_i if i is in T and k_i + h_i if
not, with h_i = tr(J_i (J_T^T J_T)^-1 J_i^T) its leverage. Held-out errors exceed training errors
by about twice the leverage, which is why they, not the training errors, measure the accuracy of
a calibration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from robocal.calibration import Calibration, calibrate, solver_options
from robocal.errors import RobocalError
from robocal.measurements.base import summarize
from robocal.problem import Problem
from robocal.problem.schema import PriorConfig
from robocal.solver import MapProblem, Solution, solve


def fold_assignment(problem: Problem, k: int = 5, seed: int = 0) -> list[np.ndarray]:
    """Fold (0..k-1) of every row, one integer array per measurement."""
    if k < 2:
        raise RobocalError(f"cross-validation needs k >= 2 folds, got {k}")
    rng = np.random.default_rng(seed)
    shared: dict[tuple, np.ndarray] = {}
    out = []
    for m in problem.measurements:
        data = m.ctx.resolve(m.config.data)
        if m.n < k:
            raise RobocalError(f"{data}: measurement '{m.name}' has {m.n} rows, fewer than the {k} folds")
        key = (data.resolve(), m.n)
        if key not in shared:
            shared[key] = rng.permutation(m.n) % k
        out.append(shared[key])
    return out


def file_assignment(problem: Problem) -> tuple[list[np.ndarray], list[str]]:
    """(fold of every row, one integer array per measurement; the data file of each fold, as the
    problem file names it): one fold per distinct data file, in the order the measurements name them."""
    files: dict[Path, str] = {}
    out = []
    for m in problem.measurements:
        path = m.ctx.resolve(m.config.data).resolve()
        files.setdefault(path, str(m.config.data))
        out.append(np.full(m.n, list(files).index(path)))
    if len(files) < 2:
        raise RobocalError(f"leave-one-file-out needs two or more data files; {problem.path.name} reads one ({next(iter(files.values()))}): use k folds")
    return out, list(files.values())


@dataclass
class Fold:
    index: int
    solution: Solution  # fit on the training rows
    train: list[np.ndarray]  # per measurement: boolean rows the fold was fitted on
    held_out: list[np.ndarray]  # per measurement: boolean rows it is scored on
    errors: list[np.ndarray]  # per measurement (n, m): errors at the fold's estimate, every row
    rows: list[np.ndarray]  # per measurement (n, k): whitened residual rows at the fold's estimate, every row


@dataclass
class CrossValidation:
    calibration: Calibration  # the fit on all rows (baseline, kept rows)
    k: int
    seed: int
    assignment: list[np.ndarray]  # per measurement: fold of each row
    folds: list[Fold]
    baseline_errors: list[np.ndarray]  # per measurement (n, m): errors at the baseline
    baseline_rows: list[np.ndarray]  # per measurement (n, k): whitened residual rows at the baseline
    prior_scale: float | None = None  # the robot's prior sigmas were multiplied by this (0: no prior); None: as declared
    files: list[str] | None = None  # leave-one-file-out: the data file each fold holds out; None: k seeded folds

    @property
    def held_out_errors(self) -> list[np.ndarray]:
        """Per measurement (n, m): each row's errors at the estimate of the fold that held it out."""
        return [np.stack([f.errors[b] for f in self.folds])[a, np.arange(len(a))] for b, a in enumerate(self.assignment)]

    def held_out_score(self) -> tuple[float, float]:
        """(before, after): mean squared whitened residual over the held-out rows the full fit kept,
        at the baseline and at the estimate of the fold that held each row out. One number across
        measurements of any kind: about 1 + leverage for a model that predicts to the sigmas."""
        keep = [mask > 0 for mask in self.calibration.solution.masks]
        after = [np.stack([f.rows[b] for f in self.folds])[a, np.arange(len(a))] for b, a in enumerate(self.assignment)]

        def mean(rows: list[np.ndarray]) -> float:
            return float(np.mean(np.concatenate([(r[kp] ** 2).ravel() for r, kp in zip(rows, keep)])))

        return mean(self.baseline_rows), mean(after)

    def spread(self) -> list[dict]:
        """Per robot parameter: the standard deviation of its estimate over the folds (SI units)."""
        layout, model = self.calibration.problem.layout, self.calibration.problem.model_parameters() & self.calibration.free
        std = np.std(np.stack([f.solution.theta for f in self.folds]), axis=0)
        return [{"name": p.name, "unit": p.unit, "std": float(s)} for p, s, m in zip(layout.parameters, std, model) if m]

    def report(self) -> dict:
        """Per fold: train and held-out error summaries (null where a fold has no such rows of a
        measurement, as when a file is held out whole); pooled: held-out errors before/after, the
        held-out score and the spread of the robot parameters over the folds."""
        measurements = self.calibration.problem.measurements
        keep = [mask > 0 for mask in self.calibration.solution.masks]
        folds = [
            {
                "fold": f.index,
                "converged": f.solution.converged,
                "iterations": f.solution.iterations,
                "measurements": [
                    {
                        "name": m.name,
                        "n_train": int(tr.sum()),
                        "n_held_out": int(ho.sum()),
                        "train": summarize(e[tr]) if tr.any() else None,
                        "held_out": summarize(e[ho]) if ho.any() else None,
                    }
                    for m, tr, ho, e in zip(measurements, f.train, f.held_out, f.errors)
                ],
            }
            for f in self.folds
        ]
        pooled = [
            {
                "name": m.name,
                "type": m.type_name,
                "n": int(e[kp].size),
                "unit": "m",
                "error": m.error_label,
                "before": summarize(b[kp]),
                "after": summarize(e[kp]),
            }
            for m, kp, b, e in zip(measurements, keep, self.baseline_errors, self.held_out_errors)
        ]
        before, after = self.held_out_score()
        return {
            "k": self.k,
            "seed": self.seed,
            "held_out_files": self.files,
            "prior_scale": self.prior_scale,
            "folds": folds,
            "held_out": pooled,
            "score": {"before": before, "after": after},
            "spread": self.spread(),
        }


def reference_sigmas(problem: Problem) -> np.ndarray:
    """Prior sigma of every robot parameter that a prior scale multiplies: the declared one, else
    robocal's default for its kind (priors: in docs/formats.md); NaN where neither exists (frames,
    measurement unknowns, kinds without a default)."""
    defaults = PriorConfig().model_dump()
    model = problem.model_parameters()
    sigmas = [p.prior_sigma if p.prior_sigma is not None else defaults.get(p.kind) for p in problem.layout.parameters]
    return np.array([s if m and s is not None else np.nan for s, m in zip(sigmas, model)], float)


def with_prior_scale(problem: Problem, scale: float | None) -> MapProblem:
    """The problem's MAP problem with the robot's reference prior sigmas (`reference_sigmas`)
    multiplied by `scale` (0: no prior on the robot; None: the priors as declared). Frames and
    measurement unknowns keep their priors."""
    if scale is None:
        return problem.map_problem
    sqrt_precision = np.asarray(problem.map_problem.prior_sqrt_precision, float).copy()
    reference = reference_sigmas(problem)
    scaled = np.isfinite(reference)
    sqrt_precision[scaled] = 0.0 if scale == 0 else 1.0 / (scale * reference[scaled])
    return replace(problem.map_problem, prior_sqrt_precision=sqrt_precision)


def cross_validate(
    problem: Problem,
    k: int = 5,
    seed: int = 0,
    cal: Calibration | None = None,
    prior_scale: float | None = None,
    done: Callable[[], None] | None = None,
    by_file: bool = False,
) -> CrossValidation:
    """k-fold cross-validation of `problem` (see the module docstring for baseline and masks);
    `by_file`: one fold per data file instead (k and seed are then not used). `cal`: the
    problem's calibration when it is at hand (else computed); `prior_scale`: see
    `with_prior_scale` (the baseline and start stay those of the declared priors); `done`: called
    after each fold (a progress bar)."""
    files = None
    if by_file:
        assignment, files = file_assignment(problem)
        k, seed = len(files), 0
    else:
        assignment = fold_assignment(problem, k, seed)
    cal = cal or calibrate(problem)
    options = solver_options(problem)
    keep = [mask > 0 for mask in cal.solution.masks]
    map_problem = with_prior_scale(problem, prior_scale)
    error_fns = [m.jitted("errors") for m in problem.measurements]
    row_fns = [m.jitted("rows") for m in problem.measurements]

    def evaluate(fns, theta: np.ndarray) -> list[np.ndarray]:
        return [np.asarray(fn(jnp.asarray(theta), d)) for fn, d in zip(fns, map_problem.data)]

    folds = []
    for f in range(k):
        train = [(a != f) & kp for a, kp in zip(assignment, keep)]
        solution = solve(map_problem, cal.baseline, free=cal.free, masks=train, **options)  # the calibration's held parameters stay held
        held_out = [(a == f) & kp for a, kp in zip(assignment, keep)]
        folds.append(Fold(f, solution, train, held_out, evaluate(error_fns, solution.theta), evaluate(row_fns, solution.theta)))
        if done is not None:
            done()
    return CrossValidation(cal, k, seed, assignment, folds, evaluate(error_fns, cal.baseline), evaluate(row_fns, cal.baseline), prior_scale, files)
