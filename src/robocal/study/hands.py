"""The hand-calibration paper's simulation study (its Figs. 8 and 9): task error against calibration
set size for random and task D-optimal sample selection, from contacts and from fingertip markers.

For each simulated hand (seed h):

1. the truth: every DH parameter of the 16 finger joints of the DLR-Hand II perturbed uniformly by
   up to `translation` / `rotation` (5 mm / 5 deg);
2. candidate pools measured on the true hand: `contact`: the contact search of
   `robocal.simulation.contact.search` (`pool_per_pair` contacts per finger pair, exact geometric
   detection); `cartesian`: `cartesian_pool` random configurations, each giving one sample per
   fingertip (its position in the palm frame, `marker_noise` per coordinate);
3. designs at the nominal hand (the only model known before calibrating), with the Jacobians at
   the configurations actually measured: `random` (prefixes of one permutation), `greedy`
   (prefixes of one greedy order: greedy designs are nested), `detmax` (DETMAX from the greedy
   design of each size); task: fingertips relative to the thumb on the uniform Cartesian test set;
4. one MAP calibration (all 64 DH parameters, prior of the perturbation's size) per strategy and
   set size, from the nominal hand, with one compiled solver for all of them
   (`robocal.solver.solve_many`);
5. the task error of each calibrated hand against the truth on a second uniform Cartesian test set.

Hands are spread over worker processes; every hand is deterministic in its seed, so the result does
not depend on the number of workers.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import resources
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import jax
import numpy as np
import yaml

from robocal.analysis.doptimal import TaskDOptimal
from robocal.analysis.task_error import task_errors
from robocal.analysis.task_uncertainty import Task
from robocal.design import candidates, prior_precision, sample_index
from robocal.errors import RobocalError
from robocal.geometry.links import GeometryConfig, load_geometry
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.problem import Problem, load_problem
from robocal.problem.build import jnp_tree, joint_modes
from robocal.problem.schema import ParametersConfig
from robocal.simulation.contact.dlr_hand import DLR_GEOMETRY, DLR_PARAMETERS, DLR_ROBOT, dlr_hand_pairs
from robocal.simulation.contact.search import simulate_contacts
from robocal.simulation.contact.writer import write_contact_csv
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set
from robocal.solver import solve_many
from robocal.workers import end_with_parent

MEASUREMENTS = ("contact", "cartesian")
STRATEGIES = ("random", "greedy", "detmax")
TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")  # the task: fingertips relative to the thumb
DESIGN_TEST_SEED, SCORE_TEST_SEED = 1, 10_000


@dataclass(frozen=True)
class StudyConfig:
    hands: int = 100
    sizes: tuple[int, ...] = (25, 50, 100, 150, 200, 250, 300)
    strategies: tuple[str, ...] = STRATEGIES
    measurements: tuple[str, ...] = MEASUREMENTS
    pool_per_pair: int = 100  # contact candidates per finger pair (6 pairs)
    cartesian_pool: int = 150  # configurations; one candidate per fingertip each
    marker_noise: float = 1e-4  # m, std per coordinate of the simulated tracker (contacts are exact)
    # m, sigma of a measurement in the calibration problems. The simulated contacts are exact, so
    # sigma only sets how far the data outweigh the prior: at 0.01 mm the prior acts where the data
    # are (nearly) blind; at 0.1 mm it also biases weakly observed, task-relevant directions
    # (docs/design.md measures both).
    sigma: float = 1e-5
    translation: float = 0.005  # m, perturbation of the true hands and prior sigma
    rotation: float = float(np.deg2rad(5.0))  # rad
    n_test: int = 500  # configurations of each test set (design and score)
    seed: int = 0  # hand h uses seed + h

    def __post_init__(self):
        for name, values, allowed in (("strategies", self.strategies, STRATEGIES), ("measurements", self.measurements, MEASUREMENTS)):
            unknown = sorted(set(values) - set(allowed))
            if unknown or not values:
                raise ValueError(f"{name}: {', '.join(unknown) or 'none given'} (choose from {', '.join(allowed)})")
        pools = {"contact": 6 * self.pool_per_pair, "cartesian": len(TIPS) * self.cartesian_pool}
        for m in self.measurements:
            if not self.sizes or min(self.sizes) < 1 or max(self.sizes) > pools[m]:
                raise ValueError(f"set sizes must lie in 1..{pools[m]}, the {m} candidate pool")


def _problem_files(config: StudyConfig, folder: Path) -> dict[str, Path]:
    """The two calibration problems (files): all 64 DH parameters, prior of the perturbation's size."""
    models = resources.files("robocal").joinpath("models")
    for name in (DLR_ROBOT, DLR_GEOMETRY):
        (folder / name).write_text(models.joinpath(name).read_text())
    common = {"robot": DLR_ROBOT, "parameters": DLR_PARAMETERS, "priors": {"translation": config.translation, "rotation": config.rotation}}
    bodies = [MarkerBody(tip, tip, np.zeros((1, 3))) for tip in TIPS]
    problems = {
        "contact": {
            **common,
            "geometry": {"files": [DLR_GEOMETRY]},
            "measurements": [{"name": "contacts", "type": "contact", "data": "contact.csv", "sigma": config.sigma}],
        },
        "cartesian": {
            **common,
            "measurements": [
                {
                    "name": b.name,
                    "type": "markers",
                    "data": "cartesian.csv",
                    "sigma": max(config.marker_noise, config.sigma),
                    "link": b.link,
                    "points": b.points(),
                }
                for b in bodies
            ],
        },
    }
    paths = {}
    for name in config.measurements:
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(problems[name], sort_keys=False))
    return paths


class HandStudy:
    """One process's share of the study: problems and test sets built once, then hand after hand."""

    def __init__(self, config: StudyConfig):
        self.config = config
        self._folder = tempfile.TemporaryDirectory(prefix="robocal-study-")
        self.folder = Path(self._folder.name)
        self.files = _problem_files(config, self.folder)
        self.problems: dict[str, Problem] = {}  # loaded once the first hand's data exist
        # The true hands: the same model for every hand (compiled once), their own parameters.
        tree = load_dh(self.folder / DLR_ROBOT)
        self.sim_robot = RobotModel(tree, joint_modes(tree, ParametersConfig.model_validate(DLR_PARAMETERS), self.folder / DLR_ROBOT))
        self.geometry = load_geometry(GeometryConfig(files=[self.folder / DLR_GEOMETRY]), self.folder)

    def _measure(self, seed: int, theta_true: np.ndarray) -> None:
        """Write the candidate pools of the true hand (seed) where the problems read their data."""
        cfg, robot, geometry = self.config, self.sim_robot, self.geometry
        if "contact" in cfg.measurements:
            sim = simulate_contacts(robot, robot.nominal, robot, theta_true, geometry, dlr_hand_pairs(), cfg.pool_per_pair, seed)
            write_contact_csv(self.folder / "contact.csv", robot.tree, sim)
        if "cartesian" in cfg.measurements:
            q = sample_configurations(robot.tree, cfg.cartesian_pool, seed=seed)
            bodies = [MarkerBody(tip, tip, np.zeros((1, 3))) for tip in TIPS]
            simulate_markers(self.folder / "cartesian.csv", robot, theta_true, q, bodies, sigma=cfg.marker_noise, seed=seed)

    def _setup(self) -> None:
        """Problems (on the first hand's data files), the design task and the scoring test set."""
        self.problems = {name: load_problem(path) for name, path in self.files.items()}
        task = Task(TIPS[0], TIPS[1:], n=self.config.n_test, seed=DESIGN_TEST_SEED)
        self.metric = {name: task.metric(p, p.theta0) for name, p in self.problems.items()}
        self.q_test = uniform_cartesian_test_set(self.sim_robot, self.sim_robot.nominal, TIPS, self.config.n_test, seed=SCORE_TEST_SEED)

    def run(self, h: int) -> dict:
        """Task errors (m) of hand h: nominal, and per measurement, strategy and set size."""
        cfg = self.config
        seed = cfg.seed + h
        theta_true = perturb_parameters(self.sim_robot, seed=seed, translation=cfg.translation, rotation=cfg.rotation)
        self._measure(seed, theta_true)
        if not self.problems:
            self._setup()

        def score(problem: Problem, theta: np.ndarray) -> np.ndarray:
            if problem.robot is None:
                raise RobocalError("the study's problems have a robot")
            return task_errors(problem.robot, theta[problem.layout.blocks["robot"]], self.sim_robot, theta_true, self.q_test, TIPS[0], TIPS[1:])

        first = next(iter(self.problems.values()))
        row: dict[str, Any] = {"hand": h, "seed": seed, "nominal": float(score(first, first.theta0).mean())}
        for name, problem in self.problems.items():
            data = [jnp_tree(m.load(m.ctx.resolve(m.config.data))[0]) for m in problem.measurements]
            map_problem = dataclasses.replace(problem.map_problem, data=data)
            theta0 = problem.theta0
            criterion = TaskDOptimal(candidates(map_problem, theta0), prior_precision(problem), self.metric[name])
            designs = self._designs(criterion, seed)
            index = sample_index(problem)
            masks = [np.zeros((len(designs), m.n)) for m in problem.measurements]
            for b, chosen in enumerate(designs.values()):
                for c in chosen:
                    k, i = index[c]
                    masks[k][b, i] = 1.0
            thetas, converged = solve_many(
                map_problem, theta0, masks, max_iterations=problem.config.solver.max_iterations, tolerance=problem.config.solver.tolerance
            )
            errors = [score(problem, theta) for theta in thetas]
            row[name] = {
                strategy: {
                    "mean": [float(errors[b].mean()) for b, key in enumerate(designs) if key[0] == strategy],
                    "max": [float(errors[b].max()) for b, key in enumerate(designs) if key[0] == strategy],
                    "converged": [bool(converged[b]) for b, key in enumerate(designs) if key[0] == strategy],
                }
                for strategy in cfg.strategies
            }
        return row

    def _designs(self, criterion: TaskDOptimal, seed: int) -> dict[tuple[str, int], np.ndarray]:
        """Chosen candidates per (strategy, size), strategies in config order, sizes ascending."""
        sizes = sorted(self.config.sizes)
        greedy = criterion.greedy(sizes[-1]).order if {"greedy", "detmax"} & set(self.config.strategies) else np.zeros(0, dtype=int)
        permutation = np.random.default_rng(seed).permutation(criterion.n_candidates)
        out = {}
        for strategy in self.config.strategies:
            for n in sizes:
                if strategy == "random":
                    out[strategy, n] = permutation[:n]
                elif strategy == "greedy":
                    out[strategy, n] = greedy[:n]
                else:
                    out[strategy, n] = criterion.detmax(greedy[:n]).order
        return out


_worker: HandStudy | None = None


def _init_worker(config: StudyConfig, cache: bool) -> None:
    global _worker
    end_with_parent()
    if cache:  # as the parent: compiled functions are shared through the disk cache
        from robocal.runtime import enable_compilation_cache

        enable_compilation_cache()
    _worker = HandStudy(config)


def _run_in_worker(h: int) -> dict:
    if _worker is None:
        raise RuntimeError("a study worker runs hands only after _init_worker")
    return _worker.run(h)


def run_hands(config: StudyConfig, workers: int = 1, progress: Callable[[dict], None] | None = None) -> list[dict]:
    """One row per hand (sorted by hand), computed in `workers` processes (1: in this process)."""
    rows = []
    if workers <= 1:
        study = HandStudy(config)
        for h in range(config.hands):
            rows.append(study.run(h))
            progress and progress(rows[-1])
        return rows
    # Each process computes single-threaded: the parallelism is across hands. The spawned
    # processes read XLA_FLAGS from the environment they inherit.
    cache = bool(jax.config.jax_compilation_cache_dir)  # type: ignore[attr-defined]  # jax.config sets its flags as attributes at run time
    previous = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = f"{previous or ''} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()
    try:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(config, cache)) as pool:
            for future in as_completed([pool.submit(_run_in_worker, h) for h in range(config.hands)]):
                rows.append(future.result())
                progress and progress(rows[-1])
    finally:
        if previous is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = previous
    return sorted(rows, key=lambda r: r["hand"])
