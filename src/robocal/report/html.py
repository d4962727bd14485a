"""Self-contained HTML report of a calibration: one file, inline CSS, plots as inline SVG (a
measurement's own figure too, such as the socket plot).

Lengths are shown in mm and angles in mrad. "before" is the nominal robot with the frames fitted
(the baseline of calibration.py), "after" the calibrated robot. Every piece of text taken from
the problem (names, paths, reasons) is escaped.
"""

from __future__ import annotations

import io
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from robocal import svg
from robocal.calibration import Calibration
from robocal.measurements.base import measurement_errors
from robocal.report.console import conditioning_line
from robocal.report.page import png_html, table_html, verdict_html, write_page

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# SI unit -> (factor, display unit)
DISPLAY = {"m": (1e3, "mm"), "rad": (1e3, "mrad")}


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG, rendered with the Agg canvas.

    The figure is created with matplotlib.figure.Figure, not pyplot, so no global figure
    registry holds it; clearing it here releases its artists once it is rendered.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    try:
        FigureCanvasAgg(fig)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    finally:
        fig.clear()
    return buffer.getvalue()


def figure_html(fig: Figure, alt: str) -> str:
    return png_html(png_bytes(fig), alt)


def _errors(measurement, theta) -> np.ndarray:
    """Per-sample errors in mm, (n, m)."""
    e = measurement_errors(measurement, measurement.data, theta) * 1e3
    return e.reshape(e.shape[0], -1)


def _measurement_section(cal: Calibration, index: int, figures: dict[str, str]) -> str:
    m = cal.problem.measurements[index]
    before, after = _errors(m, cal.baseline), _errors(m, cal.estimate)
    metrics = cal.metrics[index]  # the figures of report.json: rejected rows left out
    rows = []
    for stat, value in metrics["before"].items():
        after_value = metrics["after"][stat]
        removed = round(100.0 * (value - after_value) / value, 1) if value > 0 else None
        rows.append([stat, round(1e3 * value, 4), round(1e3 * after_value, 4), removed])  # micrometres: the digits a reader uses
    caption = f"{m.name} ({m.type_name}, {m.error_label}, {metrics['n']} values, {metrics['rejected']} rows rejected)"
    table = table_html(["statistic", "before (mm)", "after (mm)", "removed (%)"], rows, caption)

    per_row = "" if before.shape[1] == 1 else f" (mean of its {before.shape[1]} values)"
    samples = np.arange(before.shape[0])
    rejected = np.flatnonzero(cal.solution.masks[index] == 0)
    line = svg.lines(
        {"before": list(zip(samples, before.mean(axis=1))), "after": list(zip(samples, after.mean(axis=1)))},
        f"error per sample{per_row}",
        "sample",
        "error (mm)",
        marks={"rejected": list(zip(rejected, after.mean(axis=1)[rejected]))} if rejected.size else None,
    )
    histogram = svg.histograms({"before": before, "after": after}, "error histogram", "error (mm)")
    extra = f"<div>{figures[m.name]}</div>" if m.name in figures else ""
    return f"<h3>{escape(m.name)}</h3>{table}<div>{line}{histogram}</div>{extra}"


def _parameter_tables(cal: Calibration) -> str:
    groups: dict[str, list[list]] = {}
    for p in cal.parameters():
        factor, unit = DISPLAY.get(p["unit"], (1.0, p["unit"]))
        values = (p["nominal"], p["estimate"], p["estimate"] - p["nominal"], p["std"], p["prior_sigma"])
        groups.setdefault(unit, []).append([p["name"]] + [None if v is None else v * factor for v in values])
    return (
        "".join(
            table_html(["name", f"nominal ({u})", f"estimate ({u})", f"estimate − nominal ({u})", f"std ({u})", f"prior σ ({u})"], rows, f"parameters in {u}")
            for u, rows in groups.items()
        )
        or "<p>No parameters.</p>"
    )


def _solver_table(cal: Calibration) -> str:
    s = cal.solution
    rows = [
        ["iterations", s.iterations],
        ["converged", bool(s.converged)],
        ["seconds", s.seconds],
        ["compile seconds", s.compile_seconds],
        ["final cost", s.cost],
    ]
    return table_html(["", "value"], rows)


def _identifiability(cal: Calibration) -> str:
    ident = cal.identifiability
    css = "ok" if ident.rank == ident.n_parameters else "warn"
    text = f'<p class="{css}">Rank {ident.rank} of {ident.n_parameters} parameters (eigenvalue threshold {ident.threshold:g}, SI units).</p>'
    text += f"<p>{escape(conditioning_line(cal.conditioning))}.</p>"
    dropped = cal.held  # parameters.select: identifiable
    if dropped:
        text += f"<p>Held at nominal as not identifiable from these data: {escape(', '.join(dropped))}.</p>"
    text += _gauge(cal)
    if not ident.kernel:
        return text
    rows = [[k + 1, ", ".join(f"{name} ({weight:+.3f})" for name, weight in direction.items())] for k, direction in enumerate(ident.kernel)]
    return (
        text
        + "<p>Unidentifiable directions (the data do not change along them; only the priors fix them):</p>"
        + table_html(["direction", "parameters (weight)"], rows)
    )


def _gauge(cal: Calibration) -> str:
    """The gauge the estimate was fixed in (robocal.analysis.gauge), and the task error modulo it."""
    if cal.gauge is None:
        return ""
    angle, shift = np.linalg.norm(cal.gauge.shift[3:]), np.linalg.norm(cal.gauge.shift[:3])
    text = (
        f"<p>Gauge: the data do not see a {escape(cal.gauge.gauge.describe())}, which the task does. It was fixed by keeping the task's "
        f"reference frame at nominal, which moved the solver's estimate by {np.degrees(angle):.3g} deg"
        + (f" and {shift * 1e3:.3g} mm" if shift > 1e-9 else "")
        + "; no measurement changed.</p>"
    )
    task = cal.task_prediction or {}
    raw, modulo = task.get("predicted", {}), task.get("predicted_modulo_gauge") or {}
    if raw.get("mean") is not None and modulo.get("mean") is not None:
        text += (
            f"<p>Predicted task error: mean {raw['mean'] * 1e3:.3f} mm raw (the true robot's own, unknown, gauge component included), "
            f"{modulo['mean'] * 1e3:.3f} mm modulo the gauge.</p>"
        )
    return text


def _crossval(cal: Calibration) -> str:
    """`calibrate --crossval`'s held-out figures (report.json `crossval.held_out`): each row
    predicted by the fold calibrated without it, pooled over the folds."""
    cv = cal.crossval
    if cv is None:
        return ""
    rows = []
    for m in cv["held_out"]:
        factor, unit = DISPLAY.get(m["unit"], (1.0, m["unit"]))
        before, after = m["before"]["rms"], m["after"]["rms"]
        removed = round(100.0 * (before - after) / before, 1) if before > 0 else None
        rows.append([m["name"], m["n"], unit, round(factor * before, 4), round(factor * after, 4), removed, round(factor * m["after"]["max"], 4)])
    caption = (
        f"{cv['k']}-fold cross-validation (seed {cv['seed']}): each row predicted by the calibration without its fold; "
        f"score (mean squared residual / sigma²) {cv['score']['before']:.3g} nominal, {cv['score']['after']:.3g} calibrated"
    )
    return table_html(["measurement", "n", "unit", "before rms", "after rms", "removed (%)", "after max"], rows, caption)


def _rejected(cal: Calibration) -> str:
    rows = [[r["measurement"], r["file"], r["line"], r["reason"]] for r in cal.rejected()]
    return table_html(["measurement", "file", "line", "reason"], rows) if rows else "<p>No rows rejected.</p>"


def measurement_figures(cal: Calibration) -> dict[str, str]:
    """Each measurement's own before/after figure (Measurement.figure: an SVG), by measurement name."""
    figures = ((m.name, m.figure(cal.baseline, cal.estimate)) for m in cal.problem.measurements)
    return {name: drawing for name, drawing in figures if drawing is not None}


def write_html_report(cal: Calibration, path: Path, figures: dict[str, str]) -> None:
    """`figures`: measurement_figures(cal), shown in each measurement's section."""
    measurements = "".join(_measurement_section(cal, i, figures) for i in range(len(cal.problem.measurements)))
    sections = [
        ("Verdict", verdict_html(cal.verdict)),
        ("Errors before and after calibration", "<p>before: nominal robot, frames fitted; after: calibrated robot.</p>" + measurements),
        *([("Held-out errors (cross-validation)", _crossval(cal))] if cal.crossval is not None else []),
        ("Parameters", _parameter_tables(cal)),
        ("Solver", _solver_table(cal)),
        ("Identifiability", _identifiability(cal)),
        ("Rejected rows", _rejected(cal)),
    ]
    write_page(path, "Calibration report", f"<p>Problem: <code>{escape(str(cal.problem.path))}</code></p>", sections)
