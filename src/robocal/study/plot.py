"""The study's figure: mean and maximal task error against calibration set size (the paper's
Figs. 8 and 9), one row per measurement, a line per strategy with its 10-90 % band over hands."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

COLORS = {"random": "tab:red", "greedy": "tab:green", "detmax": "tab:blue"}  # as in the paper


def plot_study(summary: dict, path: Path) -> Path:
    curves, sizes = summary["curves"], summary["sizes"]
    fig = Figure(figsize=(10, 3.6 * len(curves)), layout="constrained")
    axes = fig.subplots(len(curves), 2, squeeze=False)
    hands = summary["config"]["hands"]
    for row, (measurement, strategies) in zip(axes, curves.items()):
        for ax, stat in zip(row, ("mean", "max")):
            for strategy, curve in strategies.items():
                band = curve[stat]

                def mm(key: str, band: dict = band) -> list[float]:
                    return [v * 1e3 for v in band[key]]

                ax.plot(sizes, mm("mean"), "o-", color=COLORS[strategy], label=strategy)
                ax.fill_between(sizes, mm("p10"), mm("p90"), color=COLORS[strategy], alpha=0.15, linewidth=0)
            ax.set_yscale("log")
            ax.set_xlabel("calibration set size (samples)")
            ax.set_ylabel(f"{stat} task error (mm)")
            ax.set_title(f"{measurement}: {stat} task error over the test set")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    fig.suptitle(f"mean over {hands} simulated hands; bands: 10-90 % of the hands")
    fig.savefig(path, dpi=120)
    return path
