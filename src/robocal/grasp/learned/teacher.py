"""Training samples from the analytical controller, generated the paper's inverse way (seed
paper 002, Sec. IV-A2 and IV-B2), on the grasp linearized at its start (`controller.linearized`).

Per grasp, `SAMPLES` times:

1. draw the external wrench w and an estimated one w' (`sample_wrench`: a single force on the
   object's surface, the paper's object wrench space, uniform direction and norm in [0, 10] N;
   moments about the object's centre of mass, palm frame);
2. the teacher predictor (the analytical torque optimization with the grasp's preload,
   `controller.torque_command`) turns w' into the command q_d = q_init + offsets(w'), with the
   joint torques tau' it plans: (w', tau') is the predictor's sample;
3. `equilibrium` solves the contact model for the measured torques tau_m when w acts while the
   joints are commanded to q_d: (q_d, tau_m) -> w is the estimator's sample. Different w give
   the same tau_m where the grasp cannot tell them apart; the minimal-wrench loss then learns
   the smallest.

The contact model is the controller's own (seed Eqs. 2-7 without sliding): contact springs of
stiffness c, f = c (J dq - G^T dx + delta0), joint impedance tau = kp (q_d - q_init - dq) =
J^T f, object equilibrium G f + w = 0, a linear system in (dq, dx). Contacts pulled into tension
are released one at a time (the most tensile first) and the system solved again. A sample whose
object the remaining contacts cannot hold (G of rank < 6), whose contact forces leave a friction
cone, or whose torques pass the joints' limit, is a grasp that breaks under w: it is drawn
again (up to `MAX_DRAWS` per sample) and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robocal.errors import RobocalError
from robocal.grasp.controller import AnalyticalPredictor, linearized, torque_command
from robocal.grasp.objects import GraspObject
from robocal.grasp.programs import GraspModel
from robocal.grasp.simulation import GraspSituation

SAMPLES = 40  # estimator samples per grasp (the paper's 40)
MAX_FORCE = 10.0  # N: sampled force norms are uniform in [0, MAX_FORCE]
MAX_DRAWS = 10  # draws of w per sample before the sample is given up
MARGIN = 0.5  # N: the teacher's friction margin (the analytical controller's default)


@dataclass(frozen=True)
class GraspSamples:
    """One grasp's samples, S of them, L joints."""

    wrench: np.ndarray  # (S, 6) applied external wrench w (estimator target)
    wrench_cmd: np.ndarray  # (S, 6) estimated wrench w' the command was made for (predictor input)
    q_d: np.ndarray  # (S, L) commanded angles q_init + offsets(w')
    tau_m: np.ndarray  # (S, L) measured torques under w
    tau_cmd: np.ndarray  # (S, L) torques the torque optimization planned for w' (predictor target)
    rejected: int  # draws of w whose grasp would break


def sample_wrench(obj: GraspObject, pose: np.ndarray, rng: np.random.Generator, max_force: float = MAX_FORCE) -> np.ndarray:
    """One wrench (6,: N, Nm about the centre of mass, palm frame) of a single force of uniform
    direction and norm in [0, max_force] at a uniform surface point of `obj` at `pose` (4x4)."""
    points, _ = obj.sample_surface(rng, 1)
    point = pose[:3, :3] @ points[0]  # relative to the centre of mass, palm frame
    direction = rng.normal(size=3)
    force = rng.uniform(0.0, max_force) * direction / np.linalg.norm(direction)
    return np.concatenate([force, np.cross(point, force)])


def equilibrium(model: GraspModel, q_offset: np.ndarray, wrench: np.ndarray, delta0: np.ndarray) -> np.ndarray | None:
    """Measured joint torques (L,) at rest under `wrench` (6,) with the joints commanded to
    q_init + q_offset (L,), the contacts starting deflected by delta0 (3N,); None when the
    grasp does not hold (module docstring)."""
    c, kp, L = model.stiffness, model.kp, model.n_joints
    active = np.ones(model.n_contacts, dtype=bool)
    while active.any():
        rows = np.repeat(active, 3)
        J, G, d0 = model.J[rows], model.G[:, rows], delta0[rows]
        if np.linalg.matrix_rank(G) < 6:
            return None
        K = np.block([[kp * np.eye(L) + c * J.T @ J, -c * J.T @ G.T], [-c * G @ J, c * G @ G.T]])
        rhs = np.concatenate([kp * q_offset - c * J.T @ d0, wrench + c * G @ d0])
        motion = np.linalg.solve(K, rhs)
        f = (c * (J @ motion[:L] - G.T @ motion[L:] + d0)).reshape(-1, 3)
        normals = model.normals[active]
        f_n = -np.sum(f * normals, axis=1)
        if f_n.min() < 0:
            active[np.flatnonzero(active)[np.argmin(f_n)]] = False
            continue
        tau = kp * (q_offset - motion[:L])
        return tau if np.all(np.abs(tau) <= model.torque_limit) else None
    return None


def grasp_samples(situation: GraspSituation, obj: GraspObject, rng: np.random.Generator, n: int = SAMPLES) -> GraspSamples:
    """`n` teacher samples of one settled grasp (module docstring)."""
    model = linearized(situation)
    predictor = AnalyticalPredictor(MARGIN)
    predictor.start(situation)
    delta0 = predictor.delta0
    assert delta0 is not None  # set by predictor.start
    pose = np.asarray(situation.grasp.object_pose, dtype=float)
    q_init = np.asarray(situation.grasp.q_init, dtype=float)
    out: dict[str, list] = {k: [] for k in ("wrench", "wrench_cmd", "q_d", "tau_m", "tau_cmd")}
    rejected = 0
    for _ in range(n):
        w_cmd = sample_wrench(obj, pose, rng)
        command, _ = torque_command(model, w_cmd, MARGIN, delta0)
        for _ in range(MAX_DRAWS):
            w = sample_wrench(obj, pose, rng)
            tau_m = equilibrium(model, command.q_offset, w, delta0)
            if tau_m is not None:
                break
            rejected += 1
        else:
            continue
        for key, value in (("wrench", w), ("wrench_cmd", w_cmd), ("q_d", q_init + command.q_offset), ("tau_m", tau_m), ("tau_cmd", command.tau)):
            out[key].append(value)
    if not out["wrench"]:
        raise RobocalError(f"grasp {situation.grasp.object}/{situation.grasp.attempt}: no sampled wrench is held by its contact model")
    return GraspSamples(**{k: np.array(v) for k, v in out.items()}, rejected=rejected)
