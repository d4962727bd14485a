"""Real-time check of the analytical grasp controller: time of one controller cycle = wrench
estimation from the measured torques + torque optimization against that wrench (both convex
programs of `robocal.grasp.programs`, clarabel; joints within the hand's 2 Nm, the friction
margin halved where it cannot be held) + the desired joint angles q_d, through the functions
the controller calls (`estimate_wrench`, `torque_command`; the programs are assembled once per
grasp, on its first cycle, which is timed separately). Target: 5 ms per cycle.

Grasps: a 4-finger x 3-joint hand (L = 12) on a sphere of radius 3-5 cm, 4 fingertip contacts
(a thumb opposing three fingers), then contacts on the fingers' proximal links and on the palm,
N = 4, 8, 12, 20 in all. Each cycle's measured torques are those of forces inside the friction
cones that drift from cycle to cycle, plus 5 mNm of sensor noise. Also printed: the share of
cycles whose estimated wrench the contacts cannot hold (all contacts sticking, from zero
deflection: link and palm contacts may not unload, which over-constrains these random power
grasps), of cycles with a reduced margin, and the solves that needed clarabel's careful retry.

Usage: .venv/bin/python benchmarks/grasp_cycle.py [--grasps 10] [--cycles 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import platform
import time

import clarabel
import numpy as np

from robocal.grasp.controller import torque_command
from robocal.grasp.hand import EFFORT
from robocal.grasp.programs import GraspModel, estimate_wrench, programs_for
from timing import cpu_name

TARGET = 5e-3  # s per cycle
MARGIN = 0.5  # N per fingertip
SIZES = {4: (0, 0), 8: (4, 0), 12: (4, 4), 20: (8, 8)}  # N: (link contacts, palm contacts)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def skew(r):
    return np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])


def random_grasp(rng, n_link: int, n_palm: int) -> GraspModel:
    """Fingers leave the surface at their tip along a random tangent e: distal joint 2.5-3.5 cm
    back, base (abduction about the normal, flexion) 4-5 cm further; flexion axes e x n. A link
    contact sits where a line from the finger's base touches the sphere (a proximal link laid
    against the object; jittered by 0.15 rad) and moves with the two base joints; palm
    contacts move with none."""
    radius = rng.uniform(0.03, 0.05)
    tips = unit(np.array([[-1.0, 0, 0], [1, -0.6, 0], [1, 0, 0], [1, 0.6, 0]]) + 0.3 * rng.normal(size=(4, 3)))
    palm = unit(np.array([0, 0, -1.0]) + 0.5 * rng.normal(size=(n_palm, 3)))
    fingers, links = [], []
    for n in tips:
        e = unit(np.cross(n, rng.normal(size=3)))
        rise = np.deg2rad(rng.uniform(5, 15))
        distal = radius * n + rng.uniform(0.025, 0.035) * (np.cos(rise) * e + np.sin(rise) * n)
        rise += np.deg2rad(rng.uniform(20, 40))
        base = distal + rng.uniform(0.04, 0.05) * (np.cos(rise) * e + np.sin(rise) * n)
        axes = unit(np.array([n, np.cross(e, n), np.cross(e, n)]) + 0.1 * rng.normal(size=(3, 3)))
        fingers.append((np.array([base, base, distal]), axes))
        # in the finger's plane, the tangent point p from the base (p . (p - base) = 0) on the tip's side
        along, side = base / np.linalg.norm(base), unit(n - (n @ base) * base / (base @ base))
        cos = radius / np.linalg.norm(base)
        links.append(cos * along + np.sqrt(1 - cos**2) * side)
    links = [unit(links[m % 4] + 0.15 * rng.normal(size=3)) for m in range(n_link)]
    normals = np.vstack([tips, np.reshape(links, (-1, 3)), palm])
    points = radius * normals
    J = np.zeros((3 * len(normals), 12))
    for k, (joints, axes) in enumerate(fingers):
        for i in [k] + [4 + m for m in range(n_link) if m % 4 == k]:
            for j in range(3 if i == k else 2):
                J[3 * i : 3 * i + 3, 3 * k + j] = np.cross(axes[j], points[i] - joints[j])
    G = np.hstack([np.vstack([np.eye(3), skew(p)]) for p in points])
    tip_finger = np.r_[np.arange(4), np.full(n_link + n_palm, -1)]
    return GraspModel(G=G, J=J, normals=normals, tip_finger=tip_finger, torque_limit=EFFORT)


def torque_stream(rng, model: GraspModel, cycles: int) -> np.ndarray:
    """Measured torques: forces inside the cones (normal 1-4 N, tangential up to 0.8 mu of it)
    drifting by a random walk, plus 5 mNm of noise."""
    n = model.n_contacts
    tangent = unit(np.cross(model.normals, rng.normal(size=(n, 3))))
    walk = np.cumsum(rng.normal(0, 0.05, (cycles, n, 2)), axis=0)
    fn = np.clip(2.5 + walk[..., 0], 1.0, 4.0)
    ft = np.clip(0.4 + walk[..., 1], -0.8, 0.8) * model.mu * fn
    forces = -fn[..., None] * model.normals + ft[..., None] * tangent
    return forces.reshape(cycles, -1) @ model.J + rng.normal(0, 0.005, (cycles, model.n_joints))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grasps", type=int, default=10)
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {cpu_name()}, clarabel {clarabel.__version__}, numpy {np.__version__}")
    rng = np.random.default_rng(args.seed)
    for n, (n_link, n_palm) in SIZES.items():
        seconds, first, residual, reduced, retries = [], [], [], [], 0
        for _ in range(args.grasps):
            model = random_grasp(rng, n_link, n_palm)
            q_init = rng.uniform(0, 1, model.n_joints)
            for c, tau_m in enumerate(torque_stream(rng, model, args.cycles + 1)):
                started = time.perf_counter()
                estimate = estimate_wrench(model, tau_m)
                command, margin = torque_command(model, estimate.wrench, MARGIN)
                q_d = q_init + command.q_offset
                (first if c == 0 else seconds).append(time.perf_counter() - started)
                residual.append(np.linalg.norm(command.equilibrium_residual[:3]))
                reduced.append(margin < MARGIN)
            assert np.all(np.isfinite(q_d))
            retries += programs_for(model).retries
        seconds = np.array(seconds)
        median = float(np.median(seconds))
        print(
            f"N={n:2d} contacts ({n_link} link, {n_palm} palm), {len(seconds)} warm cycles over {args.grasps} grasps: "
            f"median {median * 1e3:.2f} ms, 90 % {np.percentile(seconds, 90) * 1e3:.2f} ms, max {seconds.max() * 1e3:.2f} ms; "
            f"target {TARGET * 1e3:.0f} ms -> ratio {median / TARGET:.2f}  (first cycle, assembling the programs: median {np.median(first) * 1e3:.1f} ms; "
            f"unheld force in {np.mean(np.array(residual) > 1e-6) * 100:.0f} % of cycles, reduced margin in {np.mean(reduced) * 100:.0f} %, {retries} careful retries)"
        )


if __name__ == "__main__":
    main()
