"""Batch statistics and the fleet report: a unit whose offset slipped is named as the outlier of
that parameter and no other; a bias shared by every unit is flagged while a symmetric spread is
not; a unit whose parameter moved 10 combined sigmas between sessions is listed with 10; yields
counted per model and station. References: NumPy on the same numbers, computed here."""

from __future__ import annotations

import json
import re

import numpy as np

from robocal.fleet.engine import run
from robocal.fleet.report import fleet_page
from robocal.fleet.statistics import UnitResult, drifts, spreads, yields
from robocal.fleet.store import open_store
from robocal.fleet.store.models import Result
from robocal.fleet.store.sessions import ingest
from tests.fleet.test_store import make_fleet

TOLERANCE = 1e-3  # rad


def batch(n: int = 30, seed: int = 0) -> list[UnitResult]:
    """n units: `elbow` within tolerance (symmetric), `wrist` biased by +0.8 mrad on every unit,
    unit 7's elbow slipped by 20 mrad."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n):
        elbow = 0.02 if k == 7 else rng.uniform(-TOLERANCE, TOLERANCE)
        wrist = 0.8e-3 + rng.uniform(-1e-4, 1e-4)
        parameters = [
            {"name": name, "unit": "rad", "nominal": 0.0, "estimate": value, "std": 1e-5} for name, value in (("elbow.offset", elbow), ("wrist.offset", wrist))
        ]
        rows.append(UnitResult(f"SN{k:03d}", k, "arm", "line-1" if k % 2 else "line-2", "rework" if k == 7 else "pass", parameters, 1e-4))
    return rows


def test_outlier_and_bias():
    rows = batch()
    found = {s.name: s for s in spreads(rows)}
    assert found["elbow.offset"].outliers == ("SN007",) and found["wrist.offset"].outliers == ()
    inliers = np.array([r.parameters[0]["estimate"] for r in rows if r.serial != "SN007"])
    assert found["elbow.offset"].mean == np.mean(inliers)
    assert np.isclose(found["elbow.offset"].standard_error, inliers.std(ddof=1) / np.sqrt(29), rtol=1e-12)
    assert found["wrist.offset"].biased and not found["elbow.offset"].biased


def test_drift_between_sessions():
    rows = batch(3)
    moved = [dict(p, estimate=p["estimate"] + (10 * np.hypot(1e-5, 1e-5) if p["name"] == "wrist.offset" else 0.0)) for p in rows[1].parameters]
    rows.append(UnitResult("SN001", 99, "arm", "line-1", "pass", moved, 1e-4))
    [drift] = drifts(rows)
    assert (drift.serial, drift.name) == ("SN001", "wrist.offset") and np.isclose(drift.sigmas, 10.0, rtol=1e-9)


def test_yields():
    counted = yields(batch())
    assert counted["arm @ line-1"] == {"pass": 14, "rework": 1, "fail": 0, "yield": 14 / 15}
    assert counted["arm @ line-2"] == {"pass": 15, "rework": 0, "fail": 0, "yield": 1.0}


def test_report_names_the_slipped_unit(tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    make_fleet(tmp_path / "sessions", 30)
    ingest(engine, tmp_path / "sessions")
    rows = iter(batch())
    report = json.dumps({"measurements": [{"name": "tool", "headline": "rms", "after": {"rms": 1e-4}}]})

    def work(_engine, session_id):
        row = next(rows)
        return Result(session_id=session_id, parameters=row.parameters, report=report, verdict={"status": row.verdict, "reasons": []})

    run(engine, work=work)
    page = fleet_page(engine)
    [elbow] = re.findall(r"<tr><td>elbow\.offset</td>.*?</tr>", page)
    assert "SN007" in elbow and "biased" not in elbow
    [wrist] = re.findall(r"<tr><td>wrist\.offset</td>.*?</tr>", page)
    assert "biased" in wrist and "SN0" not in wrist
    assert "<td>29</td><td>1</td><td>0</td><td>96.7 %</td>" in page  # all units under '- @ -' (no station given)
