"""A reduced simulation study (`robocal study`): two hands, small pools, two set sizes.

The full study (100 hands, sizes 25-300, docs/design.md) takes about 20 minutes; this one keeps
what can fail at small scale: every calibration converges, calibrating removes most of the
nominal task error, fingertip markers (3 coordinates per sample, absolute) beat contacts (1 signed
distance) at the smallest size, the D-optimal designs are no worse than random, and the summary
and figure are written from the hands' numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robocal.study.hands import StudyConfig, run_hands
from robocal.study.plot import plot_study
from robocal.study.summary import summarize

CONFIG = StudyConfig(hands=2, sizes=(24, 72), pool_per_pair=20, cartesian_pool=30, n_test=200)


@pytest.fixture(scope="module")
def study():
    rows = run_hands(CONFIG, workers=1)
    return rows, summarize(CONFIG, rows, seconds=0.0)


def test_every_calibration_converges_and_improves_the_task(study):
    rows, _ = study
    for row in rows:
        for m in CONFIG.measurements:
            for s in CONFIG.strategies:
                assert all(row[m][s]["converged"]), (row["hand"], m, s)
                # 72 samples: at least 20 times below the nominal error (about 15 mm).
                assert row[m][s]["mean"][-1] < row["nominal"] / 20, (row["hand"], m, s)


def test_markers_beat_contacts_at_the_smallest_size(study):
    _, summary = study
    assert all(summary["checks"]["cartesian_below_contact_at_smallest_size"].values())


def test_d_optimal_designs_are_no_worse_than_random_on_contacts(study):
    _, summary = study

    def mean(s):
        return np.array(summary["curves"]["contact"][s]["mean"]["mean"])

    for s in ("greedy", "detmax"):
        assert mean(s)[-1] <= mean("random")[-1]


def test_summary_and_figure(study, tmp_path):
    rows, summary = study
    assert summary["sizes"] == [24, 72]
    band = summary["curves"]["contact"]["detmax"]["mean"]
    per_hand = [row["contact"]["detmax"]["mean"] for row in rows]
    np.testing.assert_allclose(band["mean"], np.mean(per_hand, axis=0), rtol=1e-12)
    np.testing.assert_allclose(band["max"], np.max(per_hand, axis=0), rtol=1e-12)
    json.dumps(summary)  # JSON-ready
    path = plot_study(summary, tmp_path / "study.png")
    assert path.stat().st_size > 10_000


def test_sizes_beyond_the_pool_are_refused():
    with pytest.raises(ValueError, match="1..120, the contact candidate pool"):
        StudyConfig(sizes=(25, 200), pool_per_pair=20)
