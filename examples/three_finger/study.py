"""Contact self-calibration of a three-finger URDF hand perturbed in DH terms (issue 18's acceptance).

For each seed: `robocal simulate contact --robot examples/three_finger/hand.urdf` in code (the
hand converted to DH, every DH number of every joint row perturbed uniformly by up to
--translation / --rotation-deg, 100 contacts per fingertip pair), then three calibrations of the
same contacts: the DH table with every DH number (`dh`), the URDF with 6-DOF origin errors of every
moving joint (`full`), and the same with `select: identifiable`. Each is scored against the true
hand on a uniform Cartesian test set (index and middle fingertips relative to the thumb tip, palm
frame): the raw task error, and the task error modulo the gauge (after the best common rotation of
the task vectors, the motion contact data cannot see), beside what report.json predicted.

Run from the repository root (figures in docs/trust.md, "Gauges"):
    .venv/bin/python examples/three_finger/study.py --seeds 5 --joint-noise 1e-4 --sigma 1e-5
    .venv/bin/python examples/three_finger/study.py --seeds 5 --models dh,full     # noise-free, sigma 0.1 mm
Options: --translation (m) / --rotation-deg (deg) of the perturbation (2 mm / 2 deg), --n-per-pair
(100), --joint-noise (rad, encoder noise of the simulated contacts), --sigma (m, the problems'
contact sigma), --models (dh,full,identifiable), --robot (another URDF hand).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import yaml

from robocal.analysis.gauge import align, apply, modulo_jacobians, task_points
from robocal.analysis.task_error import joint_columns
from robocal.analysis.task_uncertainty import Task, predicted_task_error, robot_uncertainty
from robocal.calibration import calibrate, problem_task
from robocal.problem import load_problem
from robocal.simulation.contact.urdf_hand import simulate_urdf_hand
from robocal.simulation.testset import uniform_cartesian_test_set

HAND = Path(__file__).resolve().parent / "hand.urdf"
ROTATIONS = np.eye(6)[3:]  # the gauge of contacts on a hand: a common rotation of the fingers about the palm
MODELS = ("dh", "full", "identifiable")


def identifiable(problem: Path) -> Path:
    """The URDF problem with `select: identifiable`, beside it."""
    config = yaml.safe_load(problem.read_text())
    config["parameters"]["select"] = "identifiable"
    out = problem.with_name("problem_identifiable.yaml")
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def score(problem_path: Path, hand, n_test: int = 1000) -> dict:
    """Calibrate one problem; its raw and modulo-gauge task errors against the truth, and its prediction (m)."""
    problem = load_problem(problem_path)
    cal = calibrate(problem)
    task_cfg = problem.config.task
    task = Task(task_cfg.reference, tuple(t for t in task_cfg.tips if t != task_cfg.reference), n=n_test, seed=10_000)
    robot, block = problem.robot, problem.layout.blocks["robot"]
    links = (task.reference, *task.tips)
    q = uniform_cartesian_test_set(robot, robot.nominal, links, task.n, task.seed)
    estimated = task_points(robot, cal.estimate[block], q, task)
    true = task_points(hand.truth, hand.theta_true, joint_columns(q, robot.tree, hand.truth.tree, links), task)
    modulo = apply(align(estimated, true, ROTATIONS, False), estimated, False)
    report = cal.report()
    predicted = report["task"]["predicted"]
    # modulo the hand's gauge (a common rotation) for every model, also those whose parameters cannot rotate the fingers together
    known, own = robot_uncertainty(problem, cal.estimate, cal.solution.covariance, cal.solution.masks, held=cal.held), problem_task(problem)
    q_own = uniform_cartesian_test_set(known.robot, known.theta, (own.reference, *own.tips), own.n, own.seed)
    projected = modulo_jacobians(own.robot_jacobians(known.robot, known.theta), task_points(known.robot, known.theta, q_own, own), ROTATIONS, False)
    predicted_modulo = predicted_task_error(projected, known.covariance)
    return {
        "converged": bool(cal.solution.converged),
        "raw": float(np.linalg.norm(estimated - true, axis=-1).mean()),
        "modulo": float(np.linalg.norm(modulo - true, axis=-1).mean()),
        "predicted": predicted["mean"],
        "interval95": predicted["interval95"],
        "predicted_modulo": predicted_modulo["mean"],
        "gauge": None if report["gauge"] is None else report["gauge"]["components"],
        "held": len(cal.held),
    }


def study(
    seeds,
    translation: float = 0.002,
    rotation: float = float(np.deg2rad(2.0)),
    n_per_pair: int = 100,
    joint_noise: float = 0.0,
    models=MODELS,
    sigma: float = 1e-4,
    robot: Path = HAND,
) -> list[dict]:
    """One row per seed and model."""
    rows = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as folder:
            sim = simulate_urdf_hand(
                robot, Path(folder), n_per_pair=n_per_pair, seed=seed, translation=translation, rotation=rotation, joint_noise=joint_noise, sigma=sigma
            )
            paths = {"dh": sim.problem_dh, "full": sim.problem, "identifiable": identifiable(sim.problem)}
            for model in models:
                rows.append({"seed": seed, "model": model} | score(paths[model], sim.hand))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--translation", type=float, default=0.002, help="m, largest error of a DH length")
    parser.add_argument("--rotation-deg", type=float, default=2.0, help="deg, largest error of a DH angle")
    parser.add_argument("--joint-noise", type=float, default=0.0, help="rad, std of the encoder noise")
    parser.add_argument("--n-per-pair", type=int, default=100, help="contacts per fingertip pair")
    parser.add_argument("--models", default=",".join(MODELS), help="of dh, full, identifiable")
    parser.add_argument("--robot", type=Path, default=HAND)
    parser.add_argument("--sigma", type=float, default=1e-4, help="m, the contact sigma of the problems")
    args = parser.parse_args()
    rows = study(
        range(args.seeds),
        args.translation,
        float(np.deg2rad(args.rotation_deg)),
        args.n_per_pair,
        args.joint_noise,
        tuple(args.models.split(",")),
        args.sigma,
        args.robot,
    )
    mm = 1e3
    print("seed model         raw mm  modulo mm  predicted mm [95 %]          predicted modulo mm  gauge        held")
    for r in rows:
        pm = "-" if r["predicted_modulo"] is None else f"{r['predicted_modulo'] * mm:.3f}"
        print(
            f"{r['seed']:4d} {r['model']:12s} {r['raw'] * mm:7.3f} {r['modulo'] * mm:9.3f}  {r['predicted'] * mm:7.3f} "
            f"[{r['interval95'][0] * mm:.3f}, {r['interval95'][1] * mm:.3f}]   {pm:>10s}  {','.join(r['gauge'] or []) or '-':12s} {r['held']}"
        )
    for model in args.models.split(","):
        sel = [r for r in rows if r["model"] == model]
        print(
            f"{model:12s}: mean over {len(sel)} hands: raw {np.mean([r['raw'] for r in sel]) * mm:.3f} mm, modulo the gauge {np.mean([r['modulo'] for r in sel]) * mm:.3f} mm, "
            f"predicted {np.mean([r['predicted'] for r in sel]) * mm:.3f} mm; realized / predicted {np.min([r['raw'] / r['predicted'] for r in sel]):.2f}-{np.max([r['raw'] / r['predicted'] for r in sel]):.2f}"
        )
