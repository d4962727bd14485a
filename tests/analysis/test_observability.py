"""Small cases with answers worked out by hand: observability indices, Schroer scaling and the
scaled condition number, the reduced kernel listing, kernel inclusion, the spectrum plot."""

from __future__ import annotations

import numpy as np
import pytest

from robocal.analysis.identifiability import SpectrumSeries, identifiability, plot_spectra, spectrum, subspace_inclusion
from robocal.analysis.observability import observability, observability_indices, scaled_condition_number, schroer_scales


def test_observability_indices_by_hand():
    # singular values 3, 2, 1 of a 4 x 3 Jacobian
    j = np.zeros((4, 3))
    j[0, 0], j[1, 1], j[2, 2] = 3.0, 2.0, 1.0
    o = observability(j, [np.array([i]) for i in range(4)], rank=3)["observability"]
    assert o["O1"] == pytest.approx(6 ** (1 / 3) / 2)  # (3 * 2 * 1)^(1/3) / sqrt(4)
    assert o["O2"] == pytest.approx(1 / 3)
    assert o["O3"] == pytest.approx(1.0)
    assert o["O4"] == pytest.approx(1 / 3)  # 1^2 / 3
    assert o["O5"] == pytest.approx(6 / 11)  # 1 / (1/3 + 1/2 + 1)
    # over the identifiable directions only: rank 2 keeps 3 and 2
    assert observability_indices(np.array([2.0, 3.0]), 4) == pytest.approx({"O1": np.sqrt(6) / 2, "O2": 2 / 3, "O3": 2.0, "O4": 4 / 3, "O5": 1.2})
    assert observability_indices(np.array([]), 4) == {f"O{k}": 0.0 for k in range(1, 6)}


def test_schroer_scaling_by_hand():
    # two measured points of 3 rows each; parameter 0 moves point A by (3, 4, 0) and point B by
    # (0, 0, 1) per unit, parameter 1 moves only B, by (0, 0.5, 0); parameter 2 moves nothing
    j = np.zeros((6, 3))
    j[0:3, 0], j[3:6, 0], j[3:6, 1] = (3, 4, 0), (0, 0, 1), (0, 0.5, 0)
    points = [np.arange(0, 3), np.arange(3, 6)]
    h = schroer_scales(j, points)
    assert h == pytest.approx([1e-3 / 5, 1e-3 / 0.5, 1.0])  # extremal: the pose where it acts most
    # scaled columns: 2e-4 * (3, 4, 0, 0, 0, 1) and 2e-3 * (0, 0, 0, 0, 0.5, 0) are orthogonal,
    # so the singular values are their norms, 2e-4 sqrt(26) and 1e-3
    assert scaled_condition_number(j, points, rank=2) == pytest.approx(np.sqrt(26) / 5)
    assert scaled_condition_number(j, points, rank=3) == np.inf  # the zero column
    assert scaled_condition_number(j * 1e3, points, rank=2) == pytest.approx(np.sqrt(26) / 5)  # invariant to units


def test_spectrum_matches_eigh_and_pads_short_jacobians():
    j = np.random.default_rng(1).normal(size=(40, 6))
    w, v = spectrum(j)
    assert w == pytest.approx(np.linalg.eigvalsh(j.T @ j)[::-1])
    assert np.allclose(np.abs(v.T @ v), np.eye(6), atol=1e-12)
    w, v = spectrum(j[:2])
    assert w.shape == (6,) and v.shape == (6, 6) and np.all(w[2:] == 0)


def test_kernel_listed_with_one_pivot_per_direction():
    # columns 1, 2 and 3 are the same vector (three parallel shifts): two kernel directions
    rng = np.random.default_rng(0)
    base = rng.normal(size=(30, 2))
    j = np.column_stack([base[:, 0], base[:, 1], base[:, 1], base[:, 1]])
    ident = identifiability(j, ["a", "b", "c", "d"])
    assert ident.rank == 2
    assert ident.kernel == [{"b": 0.7071, "d": -0.7071}, {"c": 0.7071, "d": -0.7071}]  # ties broken towards earlier names


def test_subspace_inclusion():
    e = np.eye(4)
    assert subspace_inclusion(e[:, :1], e[:, :2]).holds
    tilted = subspace_inclusion(((e[:, 0] + e[:, 2]) / np.sqrt(2))[:, None], e[:, :2])
    assert not tilted.holds and tilted.residual == pytest.approx(np.sqrt(0.5)) and tilted.largest_angle_deg == pytest.approx(45.0)
    assert subspace_inclusion(e[:, :0], e[:, :0]).holds  # an empty kernel is in anything
    larger = subspace_inclusion(e[:, :2], e[:, :1])
    assert not larger.holds and larger.residual == pytest.approx(1.0)


def test_plot_spectra_writes_a_png(tmp_path):
    series = [SpectrumSeries("contact", "pair", np.array([1.0, 1e-3, 0.0])), SpectrumSeries("task", "pair", np.array([2.0, 1e-2, 1e-8]))]
    path = plot_spectra(series, tmp_path / "spectra.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
