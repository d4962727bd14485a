"""On a fingertip grasp the external wrench is linear in the measured torques.

In the teacher's contact model (`teacher.equilibrium`), while every contact stays pressed,
tau_m = J^T f and G f + w = 0 with J and G fixed per grasp, so w = M tau_m with one matrix M per
grasp (M = -G J^+T for a tripod, whose nine contact forces the nine joints of its three fingers
determine). An estimator has to learn M from the grasp alone (q_grasp, q_init, the grid), that
is, where on each fingertip the object touches. This script measures, on a `grasp dataset`
folder:

1. how linear: per grasp, w fitted by least squares to [tau_m, q_d - q_init, 1] over its other
   samples and predicted for the one left out;
2. how much M depends on where the fingertips touch: each finger's force taken from its three
   torques, f_i = J_i^+T tau_i, with J_i the Jacobian at q_init of a point on the axis of its
   fingertip capsule (the axis' end, points further in and one beyond it), and -sum f_i against
   the applied force;
3. what the structure is worth to a network: two dense estimators trained alike (plain L2 on the
   training split's precision samples, Adam, the same steps and seed), their force error on the
   validation split's precision samples:
   - `dense`: one network (q_grasp, q_init, q_d - q_init, tau_m) -> w, the paper's head without
     the grid;
   - `per-grasp linear`: a network (q_grasp, q_init) -> (M, N, b), and w = M tau_m + N (q_d -
     q_init) + b;
   and the shipped estimator on the same samples (force capped at its scale, as the controller
   uses it; trained with the grid and the minimal-wrench loss, on more objects, these training
   objects among them).

Run from the repository root (figures in docs/grasp.md, "Learned controller"):
    .venv/bin/python examples/learned_grasp/linear_in_torques.py --data out/cpu/data1 [--steps 20000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from robocal.grasp.hand import default_hand
from robocal.grasp.learned import controller, networks
from robocal.grasp.learned.dataset import load
from robocal.grasp.learned.training import arrays, outputs

WIDTH, HIDDEN = 256, 3  # the paper's four dense layers: three hidden of 256 and the output layer


def samples(data: dict) -> dict[str, np.ndarray]:
    """Per sample (S rows): context (q_grasp, q_init), tau_m, dq = q_d - q_init, w, precision."""
    g = data["grasp"]
    return {
        "context": np.c_[data["q_grasp"][g], data["q_init"][g]],
        "tau": data["tau_m"],
        "dq": data["q_d"] - data["q_init"][g],
        "w": data["wrench"],
        "precision": data["kind"][g] == "precision",
    }


def leave_one_out(data: dict) -> dict[str, np.ndarray]:
    """Per grasp kind, the force error (N) of each sample predicted from its grasp's others."""
    out: dict[str, list[float]] = {}
    for k, kind in enumerate(data["kind"]):
        rows = np.flatnonzero(data["grasp"] == k)
        x = np.c_[data["tau_m"][rows], data["q_d"][rows] - data["q_init"][k], np.ones(len(rows))]
        for i in range(len(rows)):
            others = np.arange(len(rows)) != i
            coefficients = np.linalg.lstsq(x[others], data["wrench"][rows][others], rcond=None)[0]
            out.setdefault(str(kind), []).append(float(np.linalg.norm((x[i] @ coefficients - data["wrench"][rows[i]])[:3])))
    return {kind: np.array(errors) for kind, errors in out.items()}


def fingertip_force_errors(data: dict, inward: float) -> np.ndarray:
    """Force error (N) on every precision sample of -sum_i f_i, f_i = J_i^+T tau_i, each
    finger's contact taken on its fingertip capsule's axis `inward` m in from the axis' end."""
    hand = default_hand()
    errors = []
    for k in np.flatnonzero(data["kind"] == "precision"):
        poses = hand.link_poses(data["q_init"][k])
        rows = data["grasp"] == k
        force = np.zeros((rows.sum(), 3))
        for tip in hand.tips:
            core = hand.capsules[tip][-1]
            end, start = np.asarray(core.p1), np.asarray(core.p0)
            local = end + inward * (start - end) / np.linalg.norm(start - end)
            point = poses[tip][:3, :3] @ local + poses[tip][:3, 3]
            jacobian = hand.point_jacobian(data["q_init"][k], tip, point, poses)
            joints = np.flatnonzero(np.any(jacobian != 0, axis=0))
            force -= data["tau_m"][rows][:, joints] @ np.linalg.pinv(jacobian[:, joints])
        errors.append(np.linalg.norm(force - data["wrench"][rows][:, :3], axis=1))
    return np.concatenate(errors)


def train(kind: str, train_set: dict, steps: int, seed: int = 0):
    """A `kind` estimator ("dense" or "per-grasp linear") fitted to `train_set`; returns w(samples) (S, 6)."""
    mean = {k: train_set[k].mean(0) for k in ("context", "tau", "dq")}
    std = {k: train_set[k].std(0) + 1e-9 for k in ("context", "tau", "dq")}
    w_std = train_set["w"].std(0)
    n_joints = train_set["tau"].shape[1]
    key = jax.random.PRNGKey(seed)
    if kind == "dense":
        net = eqx.nn.MLP(4 * n_joints, 6, WIDTH, HIDDEN, key=key)
    else:
        net = eqx.nn.MLP(2 * n_joints, 6 * (2 * n_joints + 1), WIDTH, HIDDEN, key=key)

    def predict(net, batch):
        context, tau, dq = ((batch[k] - mean[k]) / std[k] for k in ("context", "tau", "dq"))
        if kind == "dense":
            return jax.vmap(net)(jnp.concatenate([context, tau, dq], axis=1)) * w_std
        maps = jax.vmap(net)(context).reshape(-1, 6, 2 * n_joints + 1)
        return jnp.einsum("sij,sj->si", maps, jnp.concatenate([tau, dq, jnp.ones((len(tau), 1))], axis=1)) * w_std

    def loss(net, batch):
        return jnp.mean(((predict(net, batch) - batch["w"]) / w_std) ** 2)

    optimizer = optax.adam(optax.cosine_decay_schedule(1e-3, steps))
    state = optimizer.init(eqx.filter(net, eqx.is_array))

    @eqx.filter_jit
    def step(net, state, batch):
        grads = eqx.filter_grad(loss)(net, batch)
        updates, state = optimizer.update(grads, state, net)
        return eqx.apply_updates(net, updates), state

    rng = np.random.default_rng(seed)
    fields = ("context", "tau", "dq", "w")
    for _ in range(steps):
        rows = rng.integers(0, len(train_set["w"]), 256)
        net, state = step(net, state, {k: jnp.asarray(train_set[k][rows]) for k in fields})
    return lambda batch: np.asarray(predict(net, {k: jnp.asarray(batch[k]) for k in fields}))


def shipped_forces(data: dict) -> np.ndarray:
    """The shipped estimator's wrench on every sample of a loaded split, capped at its scale (S, 6)."""
    net = controller.load(controller.WEIGHTS).estimator
    voxels, rows, inputs, _ = arrays(data, "estimator")
    wrench, scale = networks.split_estimate(outputs(net, voxels, rows, inputs))
    return networks.capped(np.asarray(wrench, dtype=float), np.asarray(scale, dtype=float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a `grasp dataset` folder (its train and val splits)")
    parser.add_argument("--steps", type=int, default=20000, help="training steps of 256 samples per estimator")
    args = parser.parse_args()
    train_data, val_data = load(args.data, "train"), load(args.data, "val")
    for kind, errors in sorted(leave_one_out(val_data).items()):
        print(
            f"validation {kind} grasps, w fitted per grasp, left out: force error median {np.median(errors):.3f} N, 90 % below {np.quantile(errors, 0.9):.3f} N ({len(errors)} samples)"
        )
    for inward in (-0.004, 0.0, 0.002, 0.004, 0.008):
        errors = fingertip_force_errors(val_data, inward)
        print(
            f"validation precision grasps, contact on the fingertip axis {1000 * inward:+.0f} mm from its end (+ inward): force error median {np.median(errors):.3f} N, 90 % below {np.quantile(errors, 0.9):.3f} N"
        )
    train_set, val_set = samples(train_data), samples(val_data)
    precise = {k: v[train_set["precision"]] for k, v in train_set.items()}
    print(
        f"training on {len(precise['w'])} precision samples of {len(train_data['q_init'])} grasps; validation {int(val_set['precision'].sum())} precision samples"
    )
    estimates = {kind: train(kind, precise, args.steps)(val_set) for kind in ("dense", "per-grasp linear")}
    estimates["shipped (capped)"] = shipped_forces(val_data)
    for kind, w in estimates.items():
        errors = np.linalg.norm(w[:, :3] - val_set["w"][:, :3], axis=1)[val_set["precision"]]
        print(f"{kind:>18}: precision force error median {np.median(errors):.3f} N, 90 % below {np.quantile(errors, 0.9):.3f} N")


if __name__ == "__main__":
    main()
