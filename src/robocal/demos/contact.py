"""`robocal demo`: contact self-calibration of a simulated DLR-Hand II, end to end.

A "true" hand (every DH parameter of the 16 finger joints perturbed by up to 5 mm / 5 deg) is
driven pairwise into fingertip contact as the contact-search simulator does; the recorded joint
values are the only data. Two calibrations run through the public pipeline, joint offsets only
and all DH parameters, and are scored as in Table I of the hand-calibration paper: contact error
(|signed distance| at held-out contacts) and task-space error (fingertip positions relative to
the thumb on a uniform Cartesian test set) against the truth.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

from robocal.analysis.task_error import task_errors
from robocal.calibration import calibrate
from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.measurements.contact import ContactData
from robocal.problem import Problem, load_problem
from robocal.report.console import step
from robocal.report.html import figure_html
from robocal.report.page import table_html, write_page
from robocal.results import write_results
from robocal.simulation.contact.dlr_hand import (
    DLR_GEOMETRY,
    DLR_PARAMETERS,
    DLR_ROBOT,
    SIGMA,
    dlr_hand_pairs,
    perturbed_dlr_hand,
)
from robocal.simulation.contact.search import simulate_contacts
from robocal.simulation.contact.writer import write_contact_csv
from robocal.simulation.testset import uniform_cartesian_test_set

SEED = 0
N_PER_PAIR, N_HELDOUT_PER_PAIR, N_TEST = 50, 20, 1000
TRANSLATION, ROTATION = 0.005, float(np.deg2rad(5.0))  # perturbation of the true hand, and the prior
# model -> (parameterization, prior sigmas at the scale of the perturbation)
MODELS = {
    "joint_offsets": ({"joints": {"*_q[123]": "joint_offsets"}}, {"joint_offset": ROTATION}),
    "full_dh": (DLR_PARAMETERS, {"translation": TRANSLATION, "rotation": ROTATION}),
}
TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")


def _write_problem(out_dir: Path, model: str) -> Path:
    parameters, priors = MODELS[model]
    problem = {
        "robot": DLR_ROBOT,
        "geometry": {"files": [DLR_GEOMETRY]},
        "parameters": parameters,
        "priors": priors,
        "measurements": [{"name": "contacts", "type": "contact", "data": "contacts.csv", "sigma": SIGMA}],
        "task": {"tips": list(TIPS), "reference": TIPS[0], "n": N_TEST, "seed": SEED + 3},
    }
    path = out_dir / f"{model}.yaml"
    path.write_text(yaml.safe_dump(problem, sort_keys=False))
    return path


def _signed(problem: Problem, theta: np.ndarray, data: ContactData) -> np.ndarray:
    m = problem.measurements[0]
    return np.asarray(m.jitted("signed_distances")(jnp.asarray(theta), jax.tree.map(jnp.asarray, data)))


def _stats(signed: np.ndarray, task: np.ndarray) -> dict:
    c = np.abs(signed)
    return {"contact": {"mean": float(c.mean()), "std": float(c.std()), "max": float(c.max())}, "task": {"mean": float(task.mean()), "max": float(task.max())}}


def run_demo(out_dir: Path, console: Console) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in (DLR_ROBOT, DLR_GEOMETRY):
        (out_dir / name).write_text(resources.files("robocal").joinpath(f"models/{name}").read_text())
    tree, geometry, truth, theta_true = perturbed_dlr_hand(TRANSLATION, ROTATION, SEED)
    console.print(f"DLR-Hand II, true hand: {len(theta_true)} DH parameters perturbed by up to 5 mm / 5 deg (seed {SEED})")

    with step(console, f"simulating contact search: {N_PER_PAIR} training + {N_HELDOUT_PER_PAIR} held-out contacts per finger pair"):
        for file, n, seed in (("contacts.csv", N_PER_PAIR, SEED + 1), ("heldout.csv", N_HELDOUT_PER_PAIR, SEED + 2)):
            sim = simulate_contacts(truth, truth.nominal, truth, theta_true, geometry, dlr_hand_pairs(), n, seed)
            write_contact_csv(out_dir / file, tree, sim)
    with step(console, f"sampling the uniform Cartesian test set ({N_TEST} configurations)"):
        q_test = uniform_cartesian_test_set(truth, truth.nominal, list(TIPS), N_TEST, seed=SEED + 3)

    fits: dict[str, tuple[Problem, np.ndarray]] = {}
    predicted: dict[str, float | None] = {"nominal": None}  # task mean error the posterior predicts
    for model in MODELS:
        with step(console, f"calibrating {model}"):
            problem = load_problem(_write_problem(out_dir, model))
            cal = calibrate(problem)
            write_results(cal, out_dir / model)
        fits[model] = (problem, cal.estimate)
        prediction = cal.task_prediction
        if prediction is None:
            raise RobocalError(f"the {model} problem has no task to predict")
        predicted[model] = prediction["predicted"]["mean"]
        if "warning" in prediction:
            console.print(f"  {model}: {prediction['warning']}")
    fits = {"nominal": (fits["full_dh"][0], fits["full_dh"][0].theta0), **fits}

    with step(console, "scoring against the true hand"):
        held_out, _ = fits["nominal"][0].measurements[0].load(out_dir / "heldout.csv")
        signed, table = {}, []
        for model, (problem, theta) in fits.items():
            signed[model] = _signed(problem, theta, held_out)
            if problem.robot is None:
                raise RobocalError(f"the {model} problem has no robot")
            task = task_errors(problem.robot, theta[problem.layout.blocks["robot"]], truth, theta_true, q_test, TIPS[0], list(TIPS[1:]))
            table.append({"model": model, **_stats(signed[model], task), "task_predicted_mean": predicted[model]})

    _print_table(console, table)
    report = {"seed": SEED, "contacts": {"training": 6 * N_PER_PAIR, "held_out": 6 * N_HELDOUT_PER_PAIR}, "test_set": N_TEST, "unit": "m", "table": table}
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    with step(console, "writing report.html"):
        _write_html(out_dir / "report.html", table, signed, held_out, fits, truth, theta_true)
    console.print(f"wrote {out_dir / 'report.json'}, {out_dir / 'report.html'}; calibration results in {out_dir}/joint_offsets and {out_dir}/full_dh")
    return report


def _print_table(console: Console, table: list[dict]) -> None:
    t = Table(title="contact self-calibration (mm): |contact error| at held-out contacts, task error on the uniform test set")
    for col in ("model", "contact mean", "contact std", "contact max", "task mean", "task max", "task mean predicted"):
        t.add_column(col, justify="left" if col == "model" else "right")
    for row in table:
        c, k, p = row["contact"], row["task"], row["task_predicted_mean"]
        t.add_row(row["model"], *(f"{v * 1e3:.3f}" for v in (c["mean"], c["std"], c["max"], k["mean"], k["max"])), "-" if p is None else f"{p * 1e3:.3f}")
    console.print(t)
    console.print(
        "task mean predicted: from the posterior covariance (parameter uncertainty only; the contacts' sigma is 0.1 mm while the simulated contacts are exact)"
    )


# ---- report.html ----------------------------------------------------------------------------


def _write_html(path: Path, table: list[dict], signed: dict, held_out: ContactData, fits: dict, truth: RobotModel, theta_true: np.ndarray) -> None:
    rows = [
        [r["model"], *(1e3 * r[k][s] for k, s in (("contact", "mean"), ("contact", "std"), ("contact", "max"), ("task", "mean"), ("task", "max")))]
        for r in table
    ]
    summary = table_html(["model", "contact mean", "contact std", "contact max", "task mean", "task max"], rows, "errors in mm (as in Table I of the paper)")
    measurement = fits["nominal"][0].measurements[0]
    pairs = [measurement.pairs[i] for i in held_out.pair]
    worst = int(np.argmax(np.abs(signed["nominal"])))
    sections = [
        ("Summary", summary),
        ("Contact error distribution", figure_html(_histogram(signed), "histogram of signed contact errors")),
        ("Per finger pair", figure_html(_pair_scatter(signed, pairs), "signed error before vs after, per pair")),
        (
            "One contact pose",
            figure_html(
                _pose_figure(measurement.configurations(held_out)[worst], pairs[worst], fits, truth, theta_true, signed, worst),
                "contact pose, nominal vs calibrated",
            ),
        ),
    ]
    intro = "<p>Simulated DLR-Hand II: the data are the joint values at which finger pairs touched. Contact error: signed distance of the two fingertip capsules at held-out contacts (0 is exact). Task error: fingertip positions relative to the thumb, against the true hand.</p>"
    write_page(path, "Contact self-calibration demo", intro, sections)


def _histogram(signed: dict) -> Figure:
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    edges = np.linspace(min(v.min() for v in signed.values()) * 1e3, max(v.max() for v in signed.values()) * 1e3, 50)
    for model, values in signed.items():
        ax.hist(values * 1e3, bins=edges.tolist(), histtype="step", linewidth=1.6, label=model)
    ax.set_xlabel("signed contact error (mm): > 0 apart, < 0 penetrating")
    ax.set_ylabel("held-out contacts")
    ax.legend()
    return fig


def _pair_scatter(signed: dict, pairs: list[tuple[str, str]]) -> Figure:
    fig = Figure(figsize=(5.5, 4.5))
    ax = fig.add_subplot()
    for pair in sorted(set(pairs)):
        sel = np.array([p == pair for p in pairs])
        ax.scatter(signed["nominal"][sel] * 1e3, signed["full_dh"][sel] * 1e3, s=14, label=" - ".join(link.split("_")[0] for link in pair))
    ax.axhline(0, color="0.6", linewidth=0.8)
    ax.set_xlabel("signed error, nominal model (mm)")
    ax.set_ylabel("signed error, full DH calibration (mm)")
    ax.legend(fontsize=8)
    return fig


def _pose_figure(q: np.ndarray, pair: tuple[str, str], fits: dict, truth: RobotModel, theta_true: np.ndarray, signed: dict, index: int) -> Figure:
    """The two touching fingers at one recorded configuration, drawn with each model (the paper's Fig. 12)."""
    fig = Figure(figsize=(6.5, 5.5))
    ax = fig.add_subplot(projection="3d")
    tree = truth.tree
    styles = {"true": ("0.55", "--"), "nominal": ("tab:red", "-"), "full_dh": ("tab:blue", "-")}
    models = {"true": (truth, theta_true), "nominal": fits["nominal"], "full_dh": fits["full_dh"]}
    for name, (model, theta) in models.items():
        robot, robot_theta = (model, theta) if name == "true" else (model.robot, theta[model.layout.blocks["robot"]])
        for link in pair:
            chain = [tree.joints[j].child for j in tree.chain(link)]
            poses = np.asarray(robot.link_poses(jnp.asarray(robot_theta), jnp.asarray(q), tuple(chain)))
            color, style = styles[name]
            ax.plot(*(poses[:, :3, 3] * 1e3).T, style, color=color, linewidth=1.2)
            capsule = fits["nominal"][0].geometry[link][0]
            ends = np.array([capsule.primitive.p0, capsule.primitive.p1])
            world = (poses[-1][:3, :3] @ ends.T).T + poses[-1][:3, 3]
            ax.plot(*(world * 1e3).T, style, color=color, linewidth=9, alpha=0.45, solid_capstyle="round")
        ax.plot([], [], style, color=styles[name][0], label=name if name == "true" else f"{name}: {signed[name][index] * 1e3:+.2f} mm")
    ax.set_xlabel("x (mm)")
    ax.set_ylabel("y (mm)")
    ax.set_zlabel("z (mm)")
    ax.set_title(f"{pair[0]} touching {pair[1]}: signed distance per model")
    ax.legend(fontsize=8)
    return fig
