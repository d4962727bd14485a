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
- the group's Levenberg-Marquardt fits run as one vectorized call (`robocal.solver.map.solve_batch`),
  and so do its before/after metrics (`group_metrics`; the errors to rounding, 1e-15 relative).

`calibrate_group` is `robocal.calibration.calibrate` for such a group (method `map`, no
measurement with a closed form, all parameters fitted; any other problem is calibrated on its own): the same baseline
fit, MAP fit with rejection rounds, Laplace covariance, identifiability and conditioning, so each
unit's report, verdict and criteria read as `robocal calibrate` writes them (to rounding: the
tests hold the estimates to 1e-9 relative).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.analysis.identifiability import identifiability
from robocal.calibration import Calibration, calibrate, conditioning, measurement_metrics, metrics_entry, solver_options
from robocal.measurements.base import Measurement, summarize
from robocal.problem import Problem
from robocal.solver.map import MapProblem, solve_batch


def _data_paths(problem: Problem) -> list[Path]:
    return [m.ctx.resolve(m.config.data).resolve() for m in problem.measurements]


def structure_key(problem: Problem) -> str | None:
    """A digest of everything in `problem` but its measurement data (module doc); None where the
    problem is not solved in batches (a method other than `map`, a measurement with a closed
    form, or `parameters.select: identifiable`, whose held parameters each unit's data choose:
    `calibrate` handles these on its own). All but the data's shapes is digested once per
    problem object and kept with it, so the problems derived from one template
    (robocal.fleet.loading, which copies it) share that part."""
    if (
        problem.config.solver.method != "map"
        or problem.config.parameters.select == "identifiable"
        or any(m.closed_form(problem.theta0) is not None for m in problem.measurements)
    ):
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
    group_metrics(out)
    return out


def group_metrics(calibrations: list[Calibration]) -> None:
    """Set the before/after `metrics` of calibrations of one structure (their problems share the
    template's compiled functions) together: for a measurement whose figures are the generic
    summaries of its errors (`Measurement.figures`), every unit's errors before and after and its
    whitened rows after, each in one vectorized call (`on_units`); any other unit by unit."""
    entries: list[list[dict]] = [[] for _ in calibrations]
    for k, template in enumerate(calibrations[0].problem.measurements):
        units = [c.problem.measurements[k] for c in calibrations]
        keeps = [c.solution.masks[k] > 0 for c in calibrations]
        if type(template).figures is not Measurement.figures:
            done = [measurement_metrics(m, m.data, c.baseline, c.estimate, keep) for m, c, keep in zip(units, calibrations, keeps)]
        else:
            datas = [m.data for m in units]
            before = on_units(template, "errors", np.stack([c.baseline for c in calibrations]), datas)
            after = on_units(template, "errors", np.stack([c.estimate for c in calibrations]), datas)
            rows = on_units(template, "rows", np.stack([c.estimate for c in calibrations]), datas)
            done = [
                metrics_entry(m, b.shape, keep, summarize(b[keep]), summarize(a[keep]), float(np.mean(r[keep] ** 2)))
                for m, keep, b, a, r in zip(units, keeps, before, after, rows)
            ]
        for out, entry in zip(entries, done):
            out.append(entry)
    for cal, metrics in zip(calibrations, entries):
        cal.__dict__["metrics"] = metrics  # Calibration.metrics is a cached property


def on_units(measurement: Measurement, method: str, thetas: np.ndarray, datas: list) -> np.ndarray:
    """`on_rows(measurement, method, thetas[b], datas[b])` of every unit b, as one array (B, rows,
    ...): one jitted `jax.vmap` of the method, kept with the measurement's jitted methods (shared
    by a structure's units, whose data have one shape, so the rows are not padded), the batch
    padded to a power of two (repeating its last unit) so that other batch sizes reuse the
    compiled code."""
    size = len(datas)
    pick = np.concatenate([np.arange(size), np.full((1 << max(size - 1, 0).bit_length()) - size, size - 1)])
    data = jax.tree.map(lambda *leaves: jnp.asarray(np.stack([np.asarray(leaf) for leaf in leaves])[pick]), *datas)
    jitted = measurement.__dict__.setdefault("_jitted", {})
    if f"vmap:{method}" not in jitted:
        jitted[f"vmap:{method}"] = jax.jit(jax.vmap(getattr(measurement, method)))
    return np.asarray(jitted[f"vmap:{method}"](jnp.asarray(thetas[pick]), data))[:size]


def group(keys: Iterable[str | None]) -> list[list[int]]:
    """Indices grouped by equal key, in order of first appearance; a None key stands alone."""
    groups: dict[object, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key if key is not None else ("alone", index), []).append(index)
    return list(groups.values())
