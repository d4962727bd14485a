"""Batched calibration: sessions whose problems share one structure are solved together.

Two problems share a structure when everything but their measurement data is the same: the
session files other than the data (problem file, robot, criteria, ...) byte for byte, the
parameter layout (names, nominal values, priors), the frames' initial poses and the shapes of
the data. Their residual functions then differ in the data alone, so

- one problem of each structure, the template, lends its compiled functions to the others
  (`share_compiled`): JAX compiles per function object (a problem's `rows`, a measurement's
  jitted methods, a robot model are static arguments hashed by identity), and a unit loaded on
  its own would trace and compile its solver, Jacobian and metrics again (about 0.3 s per unit
  of the 6-joint arm, against a few ms for the work itself);
- the group's Levenberg-Marquardt fits run as one vectorized call (`robocal.solver.map.solve_batch`).

`calibrate_group` is `robocal.calibration.calibrate` for such a group (method `map`, no
measurement with a closed form; any other problem is calibrated on its own): the same baseline
fit, MAP fit with rejection rounds, Laplace covariance, identifiability and conditioning, so each
unit's report, verdict and criteria read as `robocal calibrate` writes them (to rounding: the
tests hold the estimates to 1e-9 relative).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import jax
import numpy as np

from robocal.analysis.identifiability import identifiability
from robocal.calibration import Calibration, calibrate, conditioning, solver_options
from robocal.problem import Problem
from robocal.solver.map import MapProblem, solve_batch


def _data_paths(problem: Problem) -> list[Path]:
    return [m.ctx.resolve(m.config.data).resolve() for m in problem.measurements]


def structure_key(problem: Problem) -> str | None:
    """A digest of everything in `problem` but its measurement data (module doc); None where the
    problem is not solved in batches (a method other than `map`, or a measurement with a closed
    form, which `calibrate` handles on its own). All but the data's shapes is digested once per
    problem object and kept with it, so the problems derived from one template
    (robocal.fleet.loading, which copies it) share that part."""
    if problem.config.solver.method != "map" or any(m.closed_form(problem.theta0) is not None for m in problem.measurements):
        return None
    if "_static_key" not in problem.__dict__:
        problem.__dict__["_static_key"] = _static_key(problem)
    digest = hashlib.sha256(problem.__dict__["_static_key"].encode())
    leaves, tree = jax.tree.flatten([m.data for m in problem.measurements])
    digest.update(str(tree).encode() + str([(np.shape(x), np.asarray(x).dtype.str) for x in leaves]).encode())
    return digest.hexdigest()


def _static_key(problem: Problem) -> str:
    """`structure_key` but for the data's shapes."""
    digest = hashlib.sha256()
    folder, data = problem.path.parent.resolve(), _data_paths(problem)
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and not any(p.resolve() == d or d in p.resolve().parents for d in data)]
    for path in files:
        digest.update(f"{path.relative_to(folder)}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    digest.update(problem.config.model_dump_json().encode())
    layout = problem.layout
    digest.update("\0".join(layout.names).encode() + np.asarray(layout.nominal, float).tobytes() + np.asarray(layout.prior_precision_sqrt(), float).tobytes())
    digest.update("\0".join(problem.unidentifiable).encode())
    for name, frame in sorted(problem.frames.items()):
        digest.update(name.encode() + np.asarray(frame.initial, float).tobytes())
    return digest.hexdigest()


def share_compiled(unit: Problem, template: Problem) -> None:
    """Let `unit` use the compiled functions of `template` (same structure_key): its MAP problem
    evaluates the template's `rows` on the unit's data, and its measurements use the template's
    jitted methods (which read nothing of the measurement but the data they are given)."""
    if unit is template:
        return
    own = unit.map_problem
    unit.__dict__["map_problem"] = MapProblem(template.rows, own.data, own.prior_mean, own.prior_sqrt_precision)
    for mine, theirs in zip(unit.measurements, template.measurements, strict=True):
        mine.__dict__["_jitted"] = theirs.__dict__.setdefault("_jitted", {})


def calibrate_group(problems: list[Problem], template: Problem | None = None) -> list[Calibration]:
    """`calibrate` of every problem in a group of one structure, the fits vectorized; `template`
    (default problems[0]), of the same structure, lends its compiled functions to all of them
    (keep one per structure across groups: a new template compiles again). A group of one is
    `calibrate` itself (with the template's compiled code)."""
    template = problems[0] if template is None else template
    for unit in problems:
        share_compiled(unit, template)
    if len(problems) == 1:  # nothing to vectorize: `calibrate` itself, to the last bit
        return [calibrate(problems[0])]
    cfg, options = template.config.solver, solver_options(template)
    datas = [p.map_problem.data for p in problems]
    masks = [[np.ones(m.n) for m in p.measurements] for p in problems]
    baselines = np.stack([p.theta0 for p in problems])
    not_model = ~template.model_parameters()
    if not_model.any():
        fits = solve_batch(template.map_problem, datas, baselines, free=not_model, masks=masks, **options)
        baselines = np.stack([s.theta for s in fits])
    solutions = solve_batch(
        template.map_problem, datas, baselines, masks=masks, outlier_threshold=cfg.outlier_threshold, max_rejection_rounds=cfg.max_rejection_rounds, **options
    )
    out = []
    for problem, baseline, solution in zip(problems, baselines, solutions):
        jac = problem.unweighted_jacobian(solution.theta, solution.masks)
        out.append(Calibration(problem, baseline, solution, identifiability(jac, problem.layout.names), conditioning(problem, jac, solution.masks)))
    return out


def group(keys: Iterable[str | None]) -> list[list[int]]:
    """Indices grouped by equal key, in order of first appearance; a None key stands alone."""
    groups: dict[object, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key if key is not None else ("alone", index), []).append(index)
    return list(groups.values())
