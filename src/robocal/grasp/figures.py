"""The seed's Fig. 7 (grasps broken against torque), Fig. 8 (deviation densities) and Fig. 9
(the learned estimator's reported force over a sphere of pushes)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.stats import gaussian_kde  # noqa: E402

LABELS = {"controller": "our controller", "fixed_offsets": "fixed offsets", "without_wrench_estimate": "w/o wrench estimate"}


STARS = {"controller": "C3"}  # controllers (one point each, no scale) and their colours


def plot_breaks_vs_torque(rows: list[dict], path: Path, labels: dict[str, str] = LABELS, stars: dict[str, str] = STARS) -> Path:
    """Fig. 7: share of broken grasps against mean torque sum, baselines over their scales;
    `labels` names the methods to plot (in order), `stars` those drawn as one point."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for method in labels:
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["scale"])
        if not mine:
            continue
        x = [r["torque_sum"] for r in mine]
        y = [100 * (1 - r["kept"]) for r in mine]
        if method in stars:
            ax.plot(x, y, "*", markersize=14, label=labels[method], color=stars[method])
        else:
            ax.plot(x, y, "o-", label=labels[method])
            for r, xi, yi in zip(mine, x, y):
                ax.annotate(f"{r['scale']:g}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("mean sum of absolute joint torques (Nm)")
    ax.set_ylabel("grasps broken (%)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_deviation_densities(trials: list[dict], rows: list[dict], path: Path, labels: dict[str, str] = LABELS, stars: dict[str, str] = STARS) -> Path:
    """Fig. 8: densities of the largest object deviation per trial, each controller (`stars`;
    the first is ours) and each baseline at the scale whose mean torque is closest to ours;
    dashed: 90 % quantiles."""
    ours = next(r for r in rows if r["method"] == next(iter(stars)))
    chosen = {method: 1.0 for method in stars}
    for method in {r["method"] for r in rows} - set(stars):
        chosen[method] = min((r for r in rows if r["method"] == method), key=lambda r: abs(r["torque_sum"] - ours["torque_sum"]))["scale"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, unit, factor in ((axes[0], "max_translation", "cm", 100.0), (axes[1], "max_rotation", "deg", 180.0 / np.pi)):
        for i, method in enumerate(m for m in labels if m in chosen):
            values = factor * np.array([t[key] for t in trials if t["method"] == method and t["scale"] == chosen[method]])
            label = labels[method] + ("" if method in stars else f" (scale {chosen[method]:g})")
            grid = np.linspace(0, values.max() * 1.05 + 1e-9, 300)
            spread = np.ptp(values) > 0  # a density needs spread; without, the quantile line carries the label
            if spread:
                ax.plot(grid, gaussian_kde(values)(grid), color=f"C{i}", label=label)
            ax.axvline(np.quantile(values, 0.9), color=f"C{i}", linestyle="--", label=None if spread else label)
        ax.set_xlabel(f"largest {key.split('_')[1]}al deviation ({unit})")
        ax.set_ylabel("density")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sphere_maps(directions: np.ndarray, maps: dict[str, np.ndarray], path: Path, force: float) -> Path:
    """Fig. 9: per estimator (label -> reported force norms (n_lat, n_lon), NaN where the grasp
    breaks) the unit sphere of push directions `directions` (n_lat, n_lon, 3, palm frame)
    coloured by the force reported for a push of `force` N; one colour scale for all."""
    top = max(float(np.nanmax(m)) for m in maps.values())
    colours = plt.get_cmap("viridis")
    fig = plt.figure(figsize=(4.2 * len(maps), 4.2))
    for k, (label, values) in enumerate(maps.items(), 1):
        ax = fig.add_subplot(1, len(maps), k, projection="3d")
        faces = colours(np.nan_to_num(values, nan=0.0) / top)
        faces[np.isnan(values)] = (0.8, 0.8, 0.8, 1.0)  # grey: the grasp breaks
        ax.plot_surface(*np.moveaxis(directions, -1, 0), facecolors=faces, rstride=1, cstride=1, shade=False)
        ax.set(xlabel="x", ylabel="y", zlabel="z", title=label, box_aspect=(1, 1, 1))
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=plt.Normalize(0.0, top), cmap=colours), ax=fig.axes, shrink=0.7, pad=0.08)
    bar.set_label(f"reported force (N) for {force:g} N pushes; grey: grasp breaks")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
