"""Figures of merit of a grasp evaluation (seed Sec. V-C to V-E) and the comparisons the
acceptance asks for.

Per method and scale: the share of grasps kept, the mean over trials of the time-averaged sum
of absolute joint torques, and the 90 % quantiles of the largest translational and rotational
deviation of the object (a broken trial stops when it breaks, so its deviation is the threshold
it crossed). For our controller also the error of the estimated force while the full force is
held (trials that kept the object) and the largest force it estimated when none was applied.

Comparisons with a baseline interpolate its (mean torque, share kept) curve over the scales
linearly: its share kept at our mean torque, and the mean torque it needs for our share kept.
Outside the range of scales nothing is extrapolated; the nearest end is reported and flagged.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

NO_FORCE_LIMIT = 0.3  # N: largest estimated force allowed when no force is applied (acceptance)


def method_rows(trials: list[dict]) -> list[dict]:
    rows = []
    keys = sorted({(t["method"], t["scale"]) for t in trials}, key=lambda k: (k[0] != "controller", k))
    for method, scale in keys:
        mine = [t for t in trials if (t["method"], t["scale"]) == (method, scale)]
        rows.append(
            {
                "method": method,
                "scale": scale,
                "trials": len(mine),
                "kept": float(np.mean([not t["broken"] for t in mine])),
                "torque_sum": float(np.mean([t["torque_sum"] for t in mine])),
                "translation_q90": float(np.quantile([t["max_translation"] for t in mine], 0.9)),
                "rotation_q90": float(np.quantile([t["max_rotation"] for t in mine], 0.9)),
            }
        )
    return rows


def _interp(x: float, xs: np.ndarray, ys: np.ndarray) -> tuple[float, str]:
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    if x < xs[0]:
        return float(ys[0]), "below the baseline's range: its smallest scale"
    if x > xs[-1]:
        return float(ys[-1]), "above the baseline's range: its largest scale"
    return float(np.interp(x, xs, ys)), "interpolated"


def compare(ours: dict, baseline: list[dict]) -> dict:
    """Our controller against one baseline's rows (one per scale)."""
    torque = np.array([r["torque_sum"] for r in baseline])
    kept = np.array([r["kept"] for r in baseline])
    kept_at_ours, how_kept = _interp(ours["torque_sum"], torque, kept)
    reaches = kept.max() >= ours["kept"]
    if reaches:  # the least torque at which the baseline keeps as many grasps as ours
        torque_needed, how_torque = _interp(ours["kept"], kept, torque)
    else:
        torque_needed, how_torque = (
            None,
            f"never reached: at most {kept.max():.3f} kept (scale {baseline[int(kept.argmax())]['scale']:g}, {torque[kept.argmax()]:.3f} Nm)",
        )
    return {
        "kept_at_our_torque": kept_at_ours,
        "kept_at_our_torque_note": how_kept,
        "torque_at_our_kept": torque_needed,
        "torque_at_our_kept_note": how_torque,
        "we_keep_more": bool(ours["kept"] > kept_at_ours),
        "we_use_less_torque": bool(torque_needed is None or ours["torque_sum"] < torque_needed),
    }


def summarize(results: dict) -> dict:
    failed = [t for t in results["trials"] if "error" in t]
    finished = [t for t in results["trials"] if "error" not in t]
    trials = [t for t in finished if t["force"] >= 0]
    rows = method_rows(trials)
    summary: dict = {"methods": rows, "trials_failed": len(failed), "trial_errors": dict(Counter(t["error"] for t in failed))}
    ours = next((r for r in rows if r["method"] == "controller"), None)
    if ours is not None:
        summary["comparison"] = {m: compare(ours, [r for r in rows if r["method"] == m]) for m in sorted({r["method"] for r in rows} - {"controller"})}
        held_trials = [t for t in trials if t["method"] == "controller" and not t["broken"] and "estimate_error" in t]
        held = [t["estimate_error"] for t in held_trials]
        by_kind: dict[str, list[float]] = {}
        for t in held_trials:  # power grasps: the estimate's ambiguity (docs/grasp.md)
            by_kind.setdefault(t["kind"], []).append(t["estimate_error"])
        ramping: dict[str, dict[str, list[float]]] = {}
        for t in trials:  # broken trials too: the hold's error sees only the grasps that survived the ramp
            if t["method"] == "controller" and "estimate_error_ramp" in t:
                ramping.setdefault(t["kind"], {}).setdefault("broken" if t["broken"] else "kept", []).append(t["estimate_error_ramp"])
        quiet = [t["estimate_max"] for t in finished if t["force"] < 0]
        summary["wrench_estimation"] = {
            "held_trials": len(held),
            "force_error_mean": float(np.mean(held)) if held else None,
            "force_error_median": float(np.median(held)) if held else None,
            "force_error_q90": float(np.quantile(held, 0.9)) if held else None,
            "force_error_median_by_kind": {kind: float(np.median(errors)) for kind, errors in sorted(by_kind.items())},
            "ramp_force_error_median_by_kind": {kind: {end: float(np.median(e)) for end, e in sorted(ends.items())} for kind, ends in sorted(ramping.items())},
            "no_force_grasps": len(quiet),
            "no_force_estimate_max": float(np.max(quiet)) if quiet else None,
            "no_force_estimate_median": float(np.median(quiet)) if quiet else None,
            "no_force_below_limit": int(np.sum(np.array(quiet) < NO_FORCE_LIMIT)),
            "cycles_without_margin": int(sum(t.get("margin_dropped_cycles", 0) for t in finished if t["method"] == "controller")),
        }
    attempts = results["grasps"]
    summary["grasps"] = {
        "objects": len({a["object"] for a in attempts}),
        "attempts": len(attempts),
        "succeeded": sum(a["status"] == "ok" for a in attempts),
        "evaluated": sum(a["evaluated"] for a in attempts),
        "evaluated_by_kind": dict(Counter(a["kind"] for a in attempts if a["evaluated"])),
        "failures": dict(Counter(_reason_kind(a["reason"]) for a in attempts if a["status"] != "ok")),
        "objects_short_of_grasps": sorted(
            {a["object"] for a in attempts}
            - {o for o, n in Counter(a["object"] for a in attempts if a["evaluated"]).items() if n >= results["config"]["grasps"]}
        ),
    }
    return summary


def _reason_kind(reason: str) -> str:
    """A failure reason without its figures and details, to count like reasons together
    ("object moved 9.9 mm / 23.7 deg while settling" -> "object moved # mm / # deg while
    settling"); every attempt keeps its full reason in the results."""
    return re.sub(r"\d+(\.\d+)?", "#", re.sub(r"\s*\([^)]*\)", "", reason))
