"""The seed's evaluation protocol (Sec. V-B) over objects x grasps x external forces.

For every object of the catalog the grasp generator proposes grasps; those that fail before any
external force are kept in the results with their reason and take no further part. On each of
the first `grasps` successful ones (those of the kinds asked for), `forces` external forces are
drawn: a point on the object surface, pushed along the inward normal with 10 N (5 N for
precision grasps), ramped up over 4 s and held for 4 s. Every method (our controller, and each baseline at each scale) meets the same
forces. Our controller also runs once per grasp with no force at all, to measure the wrench it
estimates when there is none.

Work is split per object (grasp generation) and per grasp (its trials) over worker processes;
every random draw comes from a seed sequence keyed by (seed, object, grasp, force), so results
do not depend on the number of workers or their scheduling.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from functools import cache, partial
from pathlib import Path

import numpy as np

from robocal.errors import RobocalError
from robocal.grasp.controller import FILTER_TIME, METHODS, make_controller
from robocal.workers import worker_pool

FORCE = {"power": 10.0, "precision": 5.0}  # N, seed Sec. V-B
NO_FORCE_SECONDS = 2.0  # length of the no-force trial


@dataclass(frozen=True)
class EvaluationConfig:
    objects: tuple[str, ...] = ()  # names; empty: the whole catalog
    grasps: int = 8  # successful grasps evaluated per object
    forces: int = 10  # external forces per grasp
    methods: tuple[str, ...] = METHODS
    scales: tuple[float, ...] = (1.0, 1.5, 2.0, 2.5, 3.0)  # of the baselines
    seed: int = 0
    gravity: bool = False  # gravity on the object
    margin: float = 0.5  # N, friction margin of our controller
    filter_time: float = FILTER_TIME  # s, our controller's low-pass on the wrench estimate
    ramp: float = 4.0  # s
    hold: float = 4.0  # s
    control_period: float = 0.025  # s, our controller's cycle (40 Hz, as on the real hand)
    controller: str = "analytical"  # whose estimator and predictor: "analytical", or learned (robocal.grasp.learned.controller.CONTROLLERS)
    weights: str = ""  # the learned networks' folder; empty: the shipped weights
    predictor_shift: int | None = None  # voxels, the learned predictor's averaging over shifted grids; None: the weights' own
    kinds: tuple[str, ...] = ("power", "precision")  # the kinds of grasp evaluated (the grasps chosen are the same)

    def runs(self) -> Iterator[tuple[str, float]]:
        """(method, scale) pairs: ours once, each baseline at every scale."""
        for method in self.methods:
            for scale in (1.0,) if method == "controller" else self.scales:
                yield method, scale


@cache
def _objects() -> dict:
    from robocal.grasp.objects import catalog

    return {obj.name: obj for obj in catalog()}


def object_names(config: EvaluationConfig) -> tuple[str, ...]:
    known = _objects()
    unknown = [name for name in config.objects if name not in known]
    if unknown:
        raise RobocalError(f"unknown object(s) {', '.join(unknown)}; the catalog has: {', '.join(known)}")
    return config.objects or tuple(known)


def _rng(config: EvaluationConfig, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([config.seed, *key]))


def grasps_for(config: EvaluationConfig, numbered: tuple[int, str]) -> list[dict]:
    """Grasp attempts on the k-th object of the evaluation, `numbered` = (k, name): successes
    and failures."""
    k, name = numbered
    from robocal.grasp.grasps import generate_grasps
    from robocal.grasp.hand import default_hand

    half = -(-config.grasps // 2)  # as many power as precision grasps, until that many succeeded
    seed = int(np.random.SeedSequence([config.seed, k]).generate_state(1)[0])
    attempts = generate_grasps(default_hand(), _objects()[name], seed=seed, n_power=half, n_precision=half, gravity=config.gravity, until_ok=True)
    return [{"object": name, "object_index": k, "attempt": i, "grasp": g} for i, g in enumerate(attempts)]


def trials_for(config: EvaluationConfig, entry: dict) -> list[dict]:
    """Every method's trials on one grasp, plus our controller's no-force trial."""
    from robocal.grasp.hand import default_hand
    from robocal.grasp.simulation import ExternalForce, run_trial

    hand, obj, grasp = default_hand(), _objects()[entry["object"]], entry["grasp"]
    key = (entry["object_index"], entry["attempt"])
    rng = _rng(config, *key)
    points, normals = obj.sample_surface(rng, config.forces)
    magnitude = FORCE[grasp.kind]
    forces = [ExternalForce(point=p, direction=-n, magnitude=magnitude) for p, n in zip(points, normals)]
    make = partial(make_controller, margin=config.margin, filter_time=config.filter_time)
    if config.controller != "analytical":  # the networks see the object's voxel grid, made once per grasp
        from robocal.grasp.learned.controller import CONTROLLERS, learned_controller, load, object_voxels

        models = load(Path(config.weights)) if config.weights else load()
        if config.predictor_shift is not None:
            models = replace(models, predictor_shift=config.predictor_shift)
        voxels = object_voxels(models, hand, obj, grasp)
        make = partial(
            learned_controller, filter_time=config.filter_time, margin=config.margin, models=models, voxels=voxels, steps=CONTROLLERS[config.controller]
        )
    records = []

    def trial(method: str, scale: float, f: int, force: ExternalForce, ramp: float, hold: float) -> dict:
        """One trial's record; a trial the controller or simulator could not finish is recorded
        with its error (and left out of the figures), never dropped and never fatal."""
        keys = _keys(entry, method, scale, f, force.magnitude)
        controller = make(method, scale)
        try:
            result = run_trial(
                hand, obj, grasp, controller, force, duration_ramp=ramp, duration_hold=hold, gravity=config.gravity, control_period=config.control_period
            )
        except RobocalError as exc:
            return {**keys, "error": str(exc)}
        record = {**keys, **_figures(result, ramp)}
        if method == "controller":
            record["margin_dropped_cycles"] = getattr(controller.predictor, "margin_dropped", 0)
        return record

    for method, scale in config.runs():
        for f, force in enumerate(forces):
            records.append(trial(method, scale, f, force, config.ramp, config.hold))
    if "controller" in config.methods:
        quiet = ExternalForce(point=points[0], direction=-normals[0], magnitude=0.0)
        records.append(trial("controller", 1.0, -1, quiet, NO_FORCE_SECONDS / 2, NO_FORCE_SECONDS / 2))
    return records


def _keys(entry: dict, method: str, scale: float, force: int, magnitude: float) -> dict:
    grasp = entry["grasp"]
    return {
        "object": entry["object"],
        "attempt": entry["attempt"],
        "kind": grasp.kind,
        "method": method,
        "scale": scale,
        "force": force,
        "magnitude": magnitude,
    }


def _figures(result, ramp: float) -> dict:
    """One trial's figures: kept or broken, largest deviations, mean torque sum, and for ours
    the largest force it estimated and the mean error of the estimated force while the full
    force is held (`estimate_error`, kept grasps and those broken in the hold) and while it
    ramps up (`estimate_error_ramp`, every trial: most grasps that break, break there)."""
    record = {
        "broken": bool(result.broken),
        "break_time": float(result.break_time) if result.broken else None,
        "max_translation": float(result.max_translation),
        "max_rotation": float(result.max_rotation),
        "torque_sum": float(np.mean(np.abs(result.tau).sum(axis=1))),
    }
    if len(result.estimate):
        record["estimate_max"] = float(np.linalg.norm(result.estimate[:, :3], axis=1).max())
        error = np.linalg.norm(result.estimate[:, :3] - result.wrench[:, :3], axis=1)
        for key, during in (("estimate_error", result.t >= ramp), ("estimate_error_ramp", (result.t > 0) & (result.t < ramp))):
            if during.any():
                record[key] = float(error[during].mean())
    return record


def run_evaluation(config: EvaluationConfig, workers: int | None = None, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """All grasp attempts and trial records. `progress(phase, done, total)` after each unit.
    The records are the same whatever the number of workers."""
    names = object_names(config)
    workers = max(1, min(workers or os.cpu_count() or 1, 64))
    report = progress or (lambda phase, done, total: None)
    with worker_pool(workers) as pool:
        attempts: list[dict] = []
        for done, result in enumerate(pool.map(partial(grasps_for, config), enumerate(names)), 1):
            attempts += result
            report("grasps", done, len(names))
        attempts.sort(key=lambda a: (a["object_index"], a["attempt"]))
        chosen = [a for a in _chosen(attempts, config.grasps) if a["grasp"].kind in config.kinds]
        records: list[dict] = []
        for done, result in enumerate(pool.map(partial(trials_for, config), chosen), 1):
            records += result
            report("trials", done, len(chosen))
    records.sort(key=lambda r: (r["object"], r["attempt"], r["method"], r["scale"], r["force"]))
    evaluated = {id(a) for a in chosen}
    return {"config": asdict(config), "grasps": [_grasp_row(a, id(a) in evaluated) for a in attempts], "trials": records}


def _chosen(attempts: list[dict], per_object: int) -> list[dict]:
    """The first `per_object` successful attempts of every object."""
    out: list[dict] = []
    count: dict[str, int] = {}
    for a in attempts:
        if a["grasp"].status == "ok" and count.get(a["object"], 0) < per_object:
            count[a["object"]] = count.get(a["object"], 0) + 1
            out.append(a)
    return out


def _grasp_row(attempt: dict, evaluated: bool) -> dict:
    g = attempt["grasp"]
    return {"object": attempt["object"], "attempt": attempt["attempt"], "kind": g.kind, "status": g.status, "reason": g.reason, "evaluated": evaluated}
