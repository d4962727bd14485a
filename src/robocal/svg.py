"""Inline SVG plots for HTML pages (the calibration report, a socket measurement's figure, the
service dashboard, the fleet report): lines, points and histograms, with no robocal import, so any
layer may draw; no JavaScript, nothing fetched, and no plotting library to
import (matplotlib alone costs a command half a second). Inline in HTML, an <svg> needs no
namespace attribute: the HTML parser gives it the SVG namespace."""

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
        f'<svg width="{W}" height="{H}" role="img" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title><rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" fill="none" stroke="#999"/>'
        f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="12">{escape(title)}</text>'
        f'<text x="{W / 2}" y="{H - 6}" text-anchor="middle" font-size="10">{escape(x_label)}</text>'
        f'<text x="10" y="{H / 2}" font-size="10" transform="rotate(-90 10 {H / 2})" text-anchor="middle">{escape(y_label)}</text>'
        f"{ticks}{inner}</svg>"
    )


def _legend(k: int, name: str, color: str) -> str:
    return f'<text x="{PAD + 6}" y="{PAD + 14 + 12 * k}" font-size="10" fill="{color}">{escape(name)}</text>' if name else ""


def lines(
    series: dict[str, list[tuple[float, float]]],
    title: str,
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] | None = None,
    marks: dict[str, list[tuple[float, float]]] | None = None,
) -> str:
    """One polyline per named series of (x, y) points, and a cross at each point of each named
    `marks` series (e.g. rejected rows), with a legend."""
    marks = marks or {}
    points = [p for s in (*series.values(), *marks.values()) for p in s] or [(0.0, 0.0)]
    xs, ys = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    x_range = (float(xs.min()), float(xs.max()))
    y_range = y_range or (float(ys.min()), float(ys.max()))
    inner = ""
    for k, (name, pts) in enumerate((*series.items(), *marks.items())):
        color = COLORS[k % len(COLORS)]
        x = _scale(np.array([p[0] for p in pts]), *x_range, PAD, W - PAD)
        y = _scale(np.array([p[1] for p in pts]), *y_range, H - PAD, PAD)
        if k < len(series):
            inner += f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))}"/>'
        else:
            inner += "".join(f'<path d="M{a - 4:.1f},{b - 4:.1f}l8,8m0,-8l-8,8" stroke="{color}" stroke-width="2"/>' for a, b in zip(x, y))
        inner += _legend(k, name, color)
    return _frame(inner, title, x_label, y_label, x_range, y_range)


def histogram(values: list[float], title: str, x_label: str, bins: int = 15) -> str:
    """Counts of `values` in `bins` equal bins between their extremes."""
    return histograms({"": values}, title, x_label, bins, y_label="units")


def histograms(series: dict[str, list[float] | np.ndarray], title: str, x_label: str, bins: int = 30, y_label: str = "count") -> str:
    """Counts of each named series of values in the same `bins` equal bins between the extremes
    of all of them, overlaid (half transparent), with a legend."""
    every = np.concatenate([np.asarray(v, dtype=float).ravel() for v in series.values()])
    edges = np.histogram_bin_edges(every, bins=bins)
    counts = [np.histogram(np.asarray(v, dtype=float), bins=edges)[0] for v in series.values()]
    x = _scale(edges, edges[0], edges[-1], PAD, W - PAD)
    top = max(max(int(c.max()) for c in counts), 1)
    inner = ""
    for k, (name, c) in enumerate(zip(series, counts)):
        color = COLORS[k % len(COLORS)]
        inner += "".join(
            f'<rect x="{x[i]:.1f}" y="{_scale(np.array(n), 0, top, H - PAD, PAD):.1f}" width="{max(x[i + 1] - x[i] - 1, 1):.1f}" '
            f'height="{(H - 2 * PAD) * n / top:.1f}" fill="{color}" fill-opacity="{1.0 if len(series) == 1 else 0.55}"/>'
            for i, n in enumerate(c)
        )
        inner += _legend(k, name, color)
    return _frame(inner, title, x_label, y_label, (float(edges[0]), float(edges[-1])), (0.0, float(top)))


def scatter(points: np.ndarray, title: str, x_label: str, y_label: str, limit: float, color: int = 0, circle: float | None = None, size: int = 230) -> str:
    """Points (n, 2) in a square panel of `size` px on equal axes [-limit, limit], and a dashed
    circle of radius `circle` about the origin, if given."""
    pad = 34
    x = _scale(np.asarray(points)[:, 0], -limit, limit, pad, size - pad)
    y = _scale(np.asarray(points)[:, 1], -limit, limit, size - pad, pad)
    radius = (size - 2 * pad) / 2 * (circle or 0.0) / limit if limit > 0 else 0.0
    dots = "".join(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="2" fill="{COLORS[color % len(COLORS)]}"/>' for a, b in zip(x, y))
    ring = f'<circle cx="{size / 2}" cy="{size / 2}" r="{radius:.1f}" fill="none" stroke="#666" stroke-dasharray="4 3"/>' if circle else ""
    return (
        f'<svg width="{size}" height="{size}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'<rect x="{pad}" y="{pad}" width="{size - 2 * pad}" height="{size - 2 * pad}" fill="none" stroke="#999"/>'
        f'<text x="{size / 2}" y="14" text-anchor="middle" font-size="11">{escape(title)}</text>'
        f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle" font-size="10">{escape(x_label)} (±{limit:.3g})</text>'
        f'<text x="10" y="{size / 2}" font-size="10" transform="rotate(-90 10 {size / 2})" text-anchor="middle">{escape(y_label)}</text>'
        f"{ring}{dots}</svg>"
    )


def grid(rows: list[list[str]], title: str, size: int = 230) -> str:
    """Square panels of `size` px (each an <svg> of this module, e.g. `scatter`) in rows, under
    a title, as one <svg>."""
    width, height = size * max(len(r) for r in rows), 24 + size * len(rows)
    placed = "".join(panel.replace("<svg ", f'<svg x="{c * size}" y="{24 + r * size}" ', 1) for r, row in enumerate(rows) for c, panel in enumerate(row))
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="12">{escape(title)}</text>{placed}</svg>'
    )


def standalone(drawing: str) -> str:
    """An <svg> of this module as the content of a .svg file (which, unlike inline HTML, needs
    the SVG namespace)."""
    return '<?xml version="1.0" encoding="utf-8"?>\n' + drawing.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1) + "\n"
