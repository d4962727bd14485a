"""Inline SVG plots for HTML pages (the service dashboard, the fleet report): lines and histograms,
no JavaScript, nothing fetched."""

from __future__ import annotations

from html import escape

import numpy as np

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
W, H, PAD = 520, 220, 40  # px


def _scale(values: np.ndarray, low: float, high: float, a: float, b: float) -> np.ndarray:
    span = high - low if high > low else 1.0
    return a + (values - low) / span * (b - a)


def _frame(inner: str, title: str, x_label: str, y_label: str, x_range: tuple[float, float], y_range: tuple[float, float]) -> str:
    ticks = "".join(f'<text x="{PAD - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{v:.3g}</text>' for v, y in zip(y_range, (H - PAD, PAD))) + "".join(
        f'<text x="{x:.1f}" y="{H - PAD + 14}" text-anchor="middle" font-size="10">{v:.3g}</text>' for v, x in zip(x_range, (PAD, W - PAD))
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title><rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" fill="none" stroke="#999"/>'
        f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="12">{escape(title)}</text>'
        f'<text x="{W / 2}" y="{H - 6}" text-anchor="middle" font-size="10">{escape(x_label)}</text>'
        f'<text x="10" y="{H / 2}" font-size="10" transform="rotate(-90 10 {H / 2})" text-anchor="middle">{escape(y_label)}</text>'
        f"{ticks}{inner}</svg>"
    )


def lines(series: dict[str, list[tuple[float, float]]], title: str, x_label: str, y_label: str, y_range: tuple[float, float] | None = None) -> str:
    """One polyline per named series of (x, y) points, with a legend."""
    points = [p for s in series.values() for p in s] or [(0.0, 0.0)]
    xs, ys = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    x_range = (float(xs.min()), float(xs.max()))
    y_range = y_range or (float(ys.min()), float(ys.max()))
    inner = ""
    for k, (name, pts) in enumerate(series.items()):
        color = COLORS[k % len(COLORS)]
        x = _scale(np.array([p[0] for p in pts]), *x_range, PAD, W - PAD)
        y = _scale(np.array([p[1] for p in pts]), *y_range, H - PAD, PAD)
        inner += f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))}"/>'
        inner += f'<text x="{PAD + 6}" y="{PAD + 14 + 12 * k}" font-size="10" fill="{color}">{escape(name)}</text>'
    return _frame(inner, title, x_label, y_label, x_range, y_range)


def histogram(values: list[float], title: str, x_label: str, bins: int = 15) -> str:
    """Counts of `values` in `bins` equal bins between their extremes."""
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=bins)
    x = _scale(edges, edges[0], edges[-1], PAD, W - PAD)
    top = max(int(counts.max()), 1)
    inner = "".join(
        f'<rect x="{x[i]:.1f}" y="{_scale(np.array(c), 0, top, H - PAD, PAD):.1f}" width="{max(x[i + 1] - x[i] - 1, 1):.1f}" '
        f'height="{(H - 2 * PAD) * c / top:.1f}" fill="{COLORS[0]}"/>'
        for i, c in enumerate(counts)
    )
    return _frame(inner, title, x_label, "units", (float(edges[0]), float(edges[-1])), (0.0, float(top)))
