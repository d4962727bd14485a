"""Curves of the simulation study over hands, and the checks the paper's Figs. 8 and 9 make."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from robocal.study.hands import StudyConfig


def _band(values: np.ndarray) -> dict[str, list[float]]:
    """Over hands (axis 0), per set size: mean, median, 10 % and 90 % quantiles, maximum."""
    return {
        "mean": values.mean(axis=0).tolist(),
        "median": np.median(values, axis=0).tolist(),
        "p10": np.quantile(values, 0.1, axis=0).tolist(),
        "p90": np.quantile(values, 0.9, axis=0).tolist(),
        "max": values.max(axis=0).tolist(),
    }


def summarize(config: StudyConfig, rows: list[dict], seconds: float) -> dict:
    """JSON-ready study result: per measurement and strategy, bands over hands of each hand's mean
    and maximal task error (m) per set size, the checks, and every hand's numbers."""
    sizes = sorted(config.sizes)
    curves: dict[str, dict[str, dict[str, Any]]] = {
        m: {
            s: {stat: _band(np.array([row[m][s][stat] for row in rows])) for stat in ("mean", "max")}
            | {"not_converged": int(sum(not c for row in rows for c in row[m][s]["converged"]))}
            for s in config.strategies
        }
        for m in config.measurements
    }

    def mean(m: str, s: str) -> np.ndarray:
        """Per set size, the mean over hands of each hand's mean task error."""
        return np.array(curves[m][s]["mean"]["mean"])

    checks: dict[str, dict] = {}
    optimal = [s for s in ("greedy", "detmax") if s in config.strategies]
    if "random" in config.strategies and optimal:
        checks["d_optimal_beats_random"] = {m: {s: bool((mean(m, s) < mean(m, "random")).all()) for s in optimal} for m in config.measurements}
    if "contact" in config.measurements and optimal:
        checks["contact_largest_set_mean_error"] = {s: float(mean("contact", s)[-1]) for s in optimal}
    if set(config.measurements) == {"contact", "cartesian"}:
        checks["cartesian_below_contact_at_smallest_size"] = {s: bool(mean("cartesian", s)[0] < mean("contact", s)[0]) for s in config.strategies}
    return {
        "config": asdict(config),
        "unit": "m",
        "sizes": sizes,
        "nominal": _band(np.array([[row["nominal"]] for row in rows])),
        "curves": curves,
        "checks": checks,
        "seconds": seconds,
        "hands": rows,
    }
