"""The learning curves page of a `robocal grasp train` run (`curves.html`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from robocal.grasp.learned.quiet import QUIET, QUIET_LIMIT, quiet_at


def write_curves(path: Path, state: dict, result_step: int, criterion: str) -> None:
    """The learning curves of a run's state (`training.train`'s) as a self-contained HTML page:
    training and validation losses, the validation loss per grasp kind, the best constant, and
    the step whose network is the run's result (best by `criterion`; for the minimal-wrench
    estimator with the force it reports where none acts, `quiet_at`, which `training.rank`
    orders first)."""
    from matplotlib.figure import Figure

    from robocal.report.html import figure_html
    from robocal.report.page import table_html, write_page

    curves = np.array(state["curves"], dtype=float).reshape(-1, 3)  # the training loss of step 0 is None: nan
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    ax.plot(curves[:, 0], curves[:, 1], label="training (mean since the last point)")
    ax.plot(curves[:, 0], curves[:, 2], label="validation")
    for kind in sorted({kind for _, means in state.get("val_by_kind", []) for kind in means}):
        points = np.array([[step, means[kind]] for step, means in state["val_by_kind"] if kind in means])
        ax.plot(points[:, 0], points[:, 1], linestyle=":", label=f"validation, {kind} grasps")
    ax.axhline(state["constant_val_loss"], color="grey", linestyle="--", label="best constant, validation")
    ax.axvline(result_step, color="black", linestyle="-.", label=f"the run's result (step {result_step})")
    ax.set(xlabel="step", ylabel="loss", yscale="log")
    ax.legend()
    config = state["config"]
    reported = quiet_at(state, result_step)
    quiet = f" (it reports {reported:.3g} N on average where less than {QUIET} N acts; at most {QUIET_LIMIT} N counts first)" if reported is not None else ""
    rows = [[k, json.dumps(v)] for k, v in config.items()]
    write_page(
        path,
        f"learning curves: {config['network']}",
        f"<p>step {state['step']} of {config['steps']}; the run's result is the network of step {result_step}, the best by {criterion}{quiet}</p>",
        [("losses", figure_html(fig, "learning curves")), ("configuration", table_html(["setting", "value"], rows))],
    )
