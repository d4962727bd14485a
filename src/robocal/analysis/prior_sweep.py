"""How strong a prior the data want: k-fold cross-validation of one problem under several prior
strengths, with the held-out error of each and a recommendation.

Each setting multiplies the robot's reference prior sigmas (`crossval.reference_sigmas`: the
declared ones, else robocal's defaults per kind) by a scale: 0 is no prior on the robot, 0.1 a
prior ten times tighter, 10 one ten times looser. Every setting uses the same folds and the same
start (the baseline of the declared priors), so their held-out figures differ by the prior alone.

The score of a setting is the held-out mean squared whitened residual (`CrossValidation.
held_out_score`): one number over measurements of any kind, about 1 + leverage for a model that
predicts to the declared sigmas; the nominal robot's score is given beside it. The recommended
setting has the lowest score; a setting within `TIE` of the declared priors' score counts as a
tie, and the declared priors are then kept (no change the data cannot tell apart).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from robocal.analysis.crossval import cross_validate, reference_sigmas
from robocal.calibration import Calibration, calibrate
from robocal.errors import RobocalError
from robocal.problem import Problem

SCALES = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)  # 0: no prior on the robot
TIE = 0.02  # relative difference of held-out scores below which two settings are not told apart


def label(scale: float) -> str:
    return "no prior" if scale == 0 else f"x{scale:g}"


def prior_sweep(
    problem: Problem,
    scales: Sequence[float] = SCALES,
    k: int = 5,
    seed: int = 0,
    cal: Calibration | None = None,
    done: Callable[[], None] | None = None,
    by_file: bool = False,
) -> dict:
    """{k, seed, held_out_files, before, settings[{scale, label, score, converged, held_out[{name, rms}]}],
    recommended, recommendation}: the sweep's report (module docstring); `by_file`: leave one data
    file out instead of k folds (crossval.cross_validate); `done` is called after every fold."""
    if not scales:
        raise RobocalError("a prior sweep needs at least one prior scale")
    if not np.isfinite(reference_sigmas(problem)).any():
        raise RobocalError(f"{problem.path}: no robot parameter has a prior or a default prior to scale (parameters: and priors: in docs/formats.md)")
    cal = cal or calibrate(problem)
    settings: list[dict[str, Any]] = []
    before = float("nan")  # the nominal robot's held-out score: the same for every setting
    for scale in scales:
        cv = cross_validate(problem, k, seed, cal, prior_scale=float(scale), done=done, by_file=by_file)
        before, after = cv.held_out_score()
        report = cv.report()
        settings.append(
            {
                "scale": float(scale),
                "label": label(scale),
                "score": after,
                "converged": all(f.solution.converged for f in cv.folds),
                "held_out": [{"name": m["name"], "rms": m["after"]["rms"]} for m in report["held_out"]],
            }
        )
    best = min(settings, key=lambda s: s["score"])
    declared = next((s for s in settings if s["scale"] == 1.0), None)
    if declared is not None and best["score"] >= declared["score"] * (1 - TIE):
        best = declared
    has_priors = any(p.prior_sigma is not None for p, m in zip(problem.layout.parameters, problem.model_parameters()) if m)
    return {
        "k": cv.k,
        "seed": cv.seed,
        "held_out_files": cv.files,
        "before": before,
        "settings": settings,
        "recommended": best["scale"],
        "recommendation": recommendation(best, declared, before, has_priors),
    }


def recommendation(best: dict, declared: dict | None, before: float, has_priors: bool) -> str:
    """One sentence: which prior strength to use, and how it compares with the nominal robot.
    `has_priors`: whether the problem declares priors on the robot (else x1 is robocal's defaults)."""
    compared = f"held-out score {best['score']:.3g} against {before:.3g} for the nominal robot"
    if best["score"] > before:
        return (
            f"no prior strength tried predicts held-out rows better than the nominal robot ({compared}): these data do not support a calibration of this model"
        )
    reference = (
        "the declared robot prior sigmas"
        if has_priors
        else "robocal's default prior sigmas (priors: in docs/formats.md; this problem declares none on the robot)"
    )
    if declared is not None and best is declared:
        return f"{'keep' if has_priors else 'use'} {reference} as they are (x1; {compared})"
    change = "no prior on the robot" if best["scale"] == 0 else f"{reference} times {best['scale']:g}"
    return f"use {change} ({best['label']}; {compared})"


def plot_sweep(report: dict, path: Path, title: str) -> None:
    """Held-out score per prior setting (log scale), the nominal robot's as a dashed line; PNG."""
    from matplotlib.figure import Figure

    from robocal.report.html import png_bytes

    settings = report["settings"]
    fig = Figure(figsize=(6.5, 3.8))
    ax = fig.subplots()
    x = np.arange(len(settings))
    ax.plot(x, [s["score"] for s in settings], "o-", label="calibrated, held-out rows")
    ax.axhline(report["before"], ls="--", color="gray", label="nominal robot")
    best = next(i for i, s in enumerate(settings) if s["scale"] == report["recommended"])
    ax.plot([best], [settings[best]["score"]], "*", ms=16, color="tab:red", label="recommended")
    ax.set_xticks(x, [s["label"] for s in settings])
    ax.set(yscale="log", xlabel="robot prior sigmas (scale of the reference)", ylabel="mean squared residual / sigma² (held-out)", title=title)
    ax.legend()
    fig.tight_layout()
    Path(path).write_bytes(png_bytes(fig))
