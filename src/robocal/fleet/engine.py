"""The in-process engine: calibrate every queued session with the core, one job at a time."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session as DbSession

from robocal.errors import RobocalError
from robocal.fleet.criteria import CRITERIA, judge, load_criteria
from robocal.fleet.store.jobs import claim, finish, requeue_interrupted
from robocal.fleet.store.models import Result
from robocal.fleet.store.sessions import materialize


def calibrate_session(engine: Engine, session_id: int) -> Result:
    """Calibrate one stored session exactly as `robocal calibrate` does; its result row (not yet added)."""
    from robocal.calibration import calibrate
    from robocal.problem import load_problem
    from robocal.results import write_results

    with tempfile.TemporaryDirectory(prefix="robocal-fleet-") as tmp:
        with DbSession(engine) as db:
            problem = materialize(db, session_id, Path(tmp) / "session")
        cal = calibrate(load_problem(problem))
        out = Path(tmp) / "out"
        out.mkdir()
        write_results(cal, out, figures=False)
        urdf = out / "calibrated.urdf"
        kinds = {p.name: p.kind for p in cal.problem.layout.parameters}
        verdict = judge(cal.report(), kinds, load_criteria(problem.parent / CRITERIA))
        return Result(
            session_id=session_id,
            parameters=cal.parameters(),
            report=(out / "report.json").read_text(),
            urdf=urdf.read_text() if urdf.exists() else None,
            verdict={"status": verdict.status, "reasons": verdict.reasons},
        )


def run(engine: Engine, progress: Callable[[int, str], None] | None = None, work: Callable[[Engine, int], Result] = calibrate_session) -> dict[str, int]:
    """Run every queued job (jobs a killed run left `running` first go back to the queue).

    `work(engine, session_id)`: the job's code (the core's calibration by default). Returns
    {"done": n, "failed": n} of this run; `progress(session_id, status)` after each job."""
    requeue_interrupted(engine)
    tally = {"done": 0, "failed": 0}
    while (claimed := claim(engine)) is not None:
        job_id, session_id = claimed
        try:
            result, error = work(engine, session_id), None
        except RobocalError as exc:
            result, error = None, str(exc)
        finish(engine, job_id, result, error)
        status = "done" if error is None else "failed"
        tally[status] += 1
        if progress is not None:
            progress(session_id, status)
    return tally
