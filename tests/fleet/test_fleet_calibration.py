"""A simulated unit (defective: a slipped joint offset) through the store and the real job code: the stored results are the core's
`calibrate` on the same files, and the estimated joint offsets are the simulated truth."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.calibration import calibrate
from robocal.fleet.engine import run
from robocal.fleet.export import export_urdfs
from robocal.fleet.store import open_store
from robocal.fleet.store.models import Result, Session
from robocal.fleet.store.sessions import ingest
from robocal.problem import load_problem
from robocal.simulation.fleet import simulate_fleet

ARM = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "arm_6r.urdf"


def test_simulated_batch_through_the_fleet(tmp_path):
    truth = simulate_fleet(tmp_path / "batch", ARM, 1, defect_share=1.0, seed=1)
    engine = open_store(tmp_path / "robocal.db", create=True)
    assert ingest(engine, tmp_path / "batch") == (1, 0)
    assert run(engine) == {"done": 1, "failed": 0}
    with DbSession(engine) as db:
        stored = {name: result for name, result in db.execute(sa.select(Session.name, Result).join(Result, Result.session_id == Session.id))}
    assert sorted(stored) == sorted(truth["units"])
    for serial, unit in truth["units"].items():
        direct = calibrate(load_problem(tmp_path / "batch" / serial / "problem.yaml"))
        estimate = np.array([p["estimate"] for p in stored[serial].parameters])
        std = np.array([p["std"] for p in stored[serial].parameters])
        np.testing.assert_allclose(estimate, direct.estimate, rtol=0, atol=1e-12)  # same as `robocal calibrate`
        solver, reference = json.loads(stored[serial].report)["solver"], direct.report()["solver"]
        assert (solver["iterations"], solver["converged"]) == (reference["iterations"], reference["converged"])
        assert solver["cost"] == pytest.approx(reference["cost"], rel=1e-12)  # the fit is vectorized (robocal.fleet.batch): equal to rounding
        true = np.array([unit["offsets"][p["name"].removesuffix(".offset")] for p in stored[serial].parameters])
        # 120 marker coordinates at 0.1 mm: each offset within 5 posterior std of the truth
        assert np.all(np.abs(estimate - true) < 5 * std), (serial, estimate - true, std)
    [unit] = truth["units"].values()
    assert unit["defective"]  # one offset slipped by 20 mrad: rework, naming that joint alone
    verdict = stored[serial].verdict  # the tolerance criterion and the calibration's own verdict (far beyond the prior) say so
    assert verdict["status"] == "rework" and any(r.startswith(unit["slipped_joint"] + ".offset") for r in verdict["reasons"]), verdict
    others = [joint for joint in unit["offsets"] if joint != unit["slipped_joint"]]
    assert all(unit["slipped_joint"] in r and not any(f"{o}.offset" in r for o in others) for r in verdict["reasons"]), verdict
    written = export_urdfs(engine, tmp_path / "urdfs")
    assert [p.name for p in written] == [f"{s}.urdf" for s in sorted(truth["units"])]
    assert written[0].read_text() == stored[written[0].stem].urdf
