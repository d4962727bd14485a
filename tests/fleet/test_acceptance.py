"""Issue 20's acceptance in small (benchmarks/fleet_acceptance.py runs it on 1,000 units): 40
simulated arm units, 4 of them with a slipped joint offset, through ingest and the batched run:
every defect caught (rework or fail, the slipped joint named), no good unit flagged, and a second
run into a new store gives exactly the same verdicts, reasons and parameters."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.engine import run
from robocal.fleet.store import open_store
from robocal.fleet.store.models import Result, Session
from robocal.fleet.store.sessions import ingest
from robocal.simulation.fleet import simulate_fleet

ARM = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "arm_6r.urdf"


def fleet_run(sessions: Path, db: Path) -> dict[str, tuple[dict, list]]:
    engine = open_store(db, create=True)
    assert ingest(engine, sessions) == (40, 0)
    assert run(engine, batch=16) == {"done": 40, "failed": 0}  # chunks of 16, 16 and 8
    with DbSession(engine) as session:
        rows = session.execute(sa.select(Session.name, Result.verdict, Result.parameters).join(Result, Result.session_id == Session.id))
        return {name: (verdict, parameters) for name, verdict, parameters in rows}


def test_forty_units_twice(tmp_path):
    truth = simulate_fleet(tmp_path / "sessions", ARM, 40, defect_share=0.1, seed=7)["units"]
    first = fleet_run(tmp_path / "sessions", tmp_path / "first.db")
    defective = {serial for serial, unit in truth.items() if unit["defective"]}
    assert len(defective) == 4 and sorted(first) == sorted(truth)
    assert {serial for serial, (verdict, _) in first.items() if verdict["status"] != "pass"} == defective
    for serial in defective:
        assert any(reason.startswith(truth[serial]["slipped_joint"] + ".offset") for reason in first[serial][0]["reasons"]), first[serial][0]
    assert fleet_run(tmp_path / "sessions", tmp_path / "second.db") == first
