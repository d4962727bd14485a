"""Speed of task D-optimal design: greedy 300 of 10,000 candidates (64 parameters), then DETMAX.

Candidates are contact-like samples of the nominal DLR-Hand II: at a random configuration, the
Jacobian row of the distance between the tips of a random finger pair (whitened by 0.1 mm), i.e.
the structure of a contact row (two fingers' 32 DH parameters). The task is the relative
fingertip positions on the uniform Cartesian test set (1000 configurations), the prior 5 mm / 5 deg.

Run from the repository root:  .venv/bin/python benchmarks/design.py
"""

from __future__ import annotations

import time

import numpy as np

from robocal.analysis.doptimal import TaskDOptimal, TaskMetric
from robocal.analysis.task_error import task_jacobians
from robocal.simulation.contact import perturbed_dlr_hand
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set

TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")
N_CANDIDATES, N_CHOSEN, SIGMA = 10_000, 300, 1e-4


def contact_like_candidates(robot, theta, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = sample_configurations(robot.tree, n, seed)
    jac = task_jacobians(robot, theta, q, TIPS[0], TIPS[1:])  # (n, 3, 3, p): tip f - thumb
    tips = batch_link_poses(robot, theta, q, TIPS)[..., :3, 3]
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    rows = np.empty((n, 1, jac.shape[-1]))
    for i, (a, b) in enumerate(pairs[k] for k in rng.integers(len(pairs), size=n)):
        ja = jac[i, a - 1] if a else 0.0  # d(p_a - p_thumb)
        u = tips[i, b] - tips[i, a]
        rows[i, 0] = (u / np.linalg.norm(u)) @ (jac[i, b - 1] - ja) / SIGMA
    return rows


def main() -> None:
    _, _, robot, _ = perturbed_dlr_hand(0.005, float(np.deg2rad(5.0)), 0)
    theta = robot.nominal
    blocks = contact_like_candidates(robot, theta, N_CANDIDATES, seed=0)
    q_test = uniform_cartesian_test_set(robot, theta, TIPS, 1000, seed=1)
    task = TaskMetric.from_jacobians(task_jacobians(robot, theta, q_test, TIPS[0], TIPS[1:]))
    prior = np.array([1.0 / 0.005**2 if p.kind == "translation" else 1.0 / np.deg2rad(5.0) ** 2 for p in robot.parameters])
    criterion = TaskDOptimal(blocks, prior, task)
    print(f"{N_CANDIDATES} candidates, {blocks.shape[-1]} parameters, task rank {task.transform.shape[0]}")
    random = criterion.random(N_CHOSEN, seed=0)
    t = time.perf_counter()
    greedy = criterion.greedy(N_CHOSEN)
    t_greedy = time.perf_counter() - t
    t = time.perf_counter()
    detmax = criterion.detmax(greedy.order)
    t_detmax = time.perf_counter() - t
    for d in (random, greedy, detmax):
        print(f"{d.strategy:7s} log det {d.criterion:9.3f}   predicted task RMS {d.predicted_rms * 1e3:.4f} mm   exchanges {d.exchanges}")
    print(f"greedy {N_CHOSEN} of {N_CANDIDATES}: {t_greedy:.2f} s (target 5 s, ratio {t_greedy / 5:.2f})")
    print(f"DETMAX refinement: {t_detmax:.2f} s (target 30 s, ratio {t_detmax / 30:.2f})")


if __name__ == "__main__":
    main()
