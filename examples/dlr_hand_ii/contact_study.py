"""Contact self-calibration over many simulated DLR-Hand II units (issue 3 acceptance).

For each seed: a true hand (every DH parameter perturbed uniformly by up to 5 mm / 5 deg), 300
simulated contacts (50 per finger pair, geometric detection, optional encoder noise), a full-DH
calibration with the 5 mm / 5 deg prior, and the task-space error of the calibrated hand against
the truth on a uniform Cartesian test set. The problem is compiled once per process (for each
model and test-set size, kept for later calls); each seed swaps the data.

Run from the repository root:
    .venv/bin/python examples/dlr_hand_ii/contact_study.py [--seeds 20] [--joint-noise 0.0005]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import tempfile
from importlib import resources
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.analysis.task_error import task_errors
from robocal.demos.contact import ROTATION, TIPS, TRANSLATION, _write_problem
from robocal.problem import load_problem
from robocal.simulation.contact import (
    DLR_GEOMETRY,
    DLR_ROBOT,
    dlr_hand_pairs,
    perturbed_dlr_hand,
    simulate_contacts,
    write_contact_csv,
)
from robocal.simulation.testset import uniform_cartesian_test_set
from robocal.solver import solve_many

# (model, n_test) -> (loaded problem, its test set). Tracing and compiling the solver of a loaded
# problem costs tens of seconds, running it a fraction of one: a later call (more seeds, encoder
# noise) swaps the data of the problem an earlier call loaded.
_PROBLEMS: dict[tuple[str, int], tuple] = {}


@functools.cache
def simulated(seed: int, n_per_pair: int, joint_noise: float) -> tuple:
    """(tree, truth, theta_true, contacts) of the hand of `seed`. The contact search is seconds of
    compute per hand; a later call with another model (joint offsets) fits the same contacts."""
    tree, geometry, truth, theta_true = perturbed_dlr_hand(TRANSLATION, ROTATION, seed)
    contacts = simulate_contacts(truth, truth.nominal, truth, theta_true, geometry, dlr_hand_pairs(), n_per_pair, seed, joint_noise=joint_noise)
    return tree, truth, theta_true, contacts


def study(seeds, n_per_pair: int = 50, joint_noise: float = 0.0, n_test: int = 500, model: str = "full_dh") -> list[dict]:
    """One row per seed: mean task error (m) of the nominal hand, mean and max of the calibrated one.
    `model`: a model of the demo's MODELS (full_dh, joint_offsets)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        for name in (DLR_ROBOT, DLR_GEOMETRY):
            (out / name).write_text(resources.files("robocal").joinpath(f"models/{name}").read_text())
        for seed in seeds:
            tree, truth, theta_true, sim = simulated(seed, n_per_pair, joint_noise)
            write_contact_csv(out / "contacts.csv", tree, sim)
            if (model, n_test) not in _PROBLEMS:  # same nominal hand and parameterization for every seed: compile once
                problem = load_problem(_write_problem(out, model))
                _PROBLEMS[model, n_test] = problem, uniform_cartesian_test_set(problem.robot, problem.theta0, list(TIPS), n_test, seed=10_000)
            problem, q_test = _PROBLEMS[model, n_test]
            data, _ = problem.measurements[0].load(out / "contacts.csv")
            # The MAP estimate only (solve_many: the solver `solve` runs, without the posterior
            # covariance, which would compile the problem's Jacobian a second time for nothing here).
            (theta,), (converged,) = solve_many(
                dataclasses.replace(problem.map_problem, data=[jax.tree.map(jnp.asarray, data)]), problem.theta0, [np.ones((1, len(sim)))]
            )
            robot = problem.layout.blocks["robot"]
            after, before = (task_errors(problem.robot, t[robot], truth, theta_true, q_test, TIPS[0], list(TIPS[1:])) for t in (theta, problem.theta0))
            rows.append(
                {"seed": seed, "nominal_mean": float(before.mean()), "mean": float(after.mean()), "max": float(after.max()), "converged": bool(converged)}
            )
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--joint-noise", type=float, default=0.0, help="rad, std of the encoder noise")
    args = parser.parse_args()
    rows = study(range(args.seeds), joint_noise=args.joint_noise)
    for r in rows:
        print(f"seed {r['seed']:3d}: nominal {r['nominal_mean'] * 1e3:6.2f} mm -> calibrated mean {r['mean'] * 1e3:.3f} mm, max {r['max'] * 1e3:.3f} mm")
    means, maxes = np.array([r["mean"] for r in rows]), np.array([r["max"] for r in rows])
    print(
        f"{len(rows)} hands, joint noise {args.joint_noise * 1e3:g} mrad: calibrated task error mean {means.mean() * 1e3:.3f} mm "
        f"(per hand {means.min() * 1e3:.3f}-{means.max() * 1e3:.3f}), max {maxes.max() * 1e3:.3f} mm"
    )
