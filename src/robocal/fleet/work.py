"""The job code of `fleet run`, the same for every executor (robocal.fleet.executors): a chunk
of stored sessions in, their results out (`run_chunk`). Batched, the sessions are grouped by
structure and each group calibrated together (robocal.fleet.batch); one at a time,
`calibrate_session` calibrates a session exactly as `robocal calibrate` does, compiling its own
problem."""

from __future__ import annotations

import json
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session as DbSession

from robocal.errors import RobocalError
from robocal.fleet.criteria import CRITERIA, Criteria, judge, load_criteria
from robocal.fleet.store.models import Result
from robocal.fleet.store.sessions import materialize, materialize_many, session_source

COLUMNS = ("session_id", "parameters", "report", "urdf", "verdict")
Work = Callable[[Engine, int], Result]
Outcome = tuple[int, dict | None, str | None]  # session id, the result's columns (COLUMNS), error


def result_row(session_id: int, cal, folder: Path, criteria: Criteria | None = None) -> Result:
    """The result row (not yet added) of a calibration of the session materialized in `folder`
    (its problem file and criteria.yaml there): report.json and the calibrated URDF as
    `write_results` writes them (the other result files are not kept, so not written), and the
    verdict against the session's `criteria` (default: its criteria.yaml)."""
    from robocal.results import report_json, write_calibrated_robot

    report = report_json(cal)
    urdf = write_calibrated_robot(cal, folder.parent / f"{folder.name}-calibrated.urdf")
    kinds = {p.name: p.kind for p in cal.problem.layout.parameters}
    verdict = judge(json.loads(report), kinds, criteria or load_criteria(folder / CRITERIA))  # the report as written, not computed twice
    return Result(
        session_id=session_id,
        parameters=cal.parameters(),
        report=report,
        urdf=urdf.read_text() if urdf is not None else None,
        verdict={"status": verdict.status, "reasons": verdict.reasons},
    )


def located(engine: Engine, session_id: int, folder: Path, exc: RobocalError) -> str:
    """The message of a session's error, naming the session's folder as its user knows it (the folder
    it was ingested from: store.sessions.session_source), not the temporary `folder` it was materialized in."""
    message = str(exc)
    temporary = [str(p) for p in dict.fromkeys((folder.resolve(), folder)) if str(p) in message]
    if temporary:
        with DbSession(engine) as db:
            source = session_source(db, session_id)
        for path in temporary:
            message = message.replace(path, source)
    return message


def calibrate_session(engine: Engine, session_id: int) -> Result:
    """Calibrate one stored session exactly as `robocal calibrate` does; its result row (not yet added).
    An error names the session's own folder (`located`)."""
    from robocal.calibration import calibrate
    from robocal.problem import load_problem

    with tempfile.TemporaryDirectory(prefix="robocal-fleet-") as tmp:
        folder = Path(tmp) / "session"
        try:
            with DbSession(engine) as db:
                problem = materialize(db, session_id, folder)
            return result_row(session_id, calibrate(load_problem(problem)), problem.parent)
        except RobocalError as exc:
            raise RobocalError(located(engine, session_id, folder, exc)) from None


def columns(result: Result) -> dict:
    return {name: getattr(result, name) for name in COLUMNS}


def run_chunk(engine: Engine, session_ids: list[int], work: Work | None) -> list[Outcome]:
    """The job code of every executor: the outcome of each session, in order. `work` None: the
    sessions calibrated in groups of one structure (robocal.fleet.batch); else `work(engine, id)`
    one session at a time. A RobocalError is the session's error; anything else propagates."""
    if work is None:
        return calibrate_sessions(engine, session_ids)
    outcomes: list[Outcome] = []
    for session_id in session_ids:
        try:
            outcomes.append((session_id, columns(work(engine, session_id)), None))
        except RobocalError as exc:
            outcomes.append((session_id, None, str(exc)))
    return outcomes


_templates: OrderedDict[str, object] = OrderedDict()  # structure key -> template Problem, most recent last
_criteria: OrderedDict[str, Criteria] = OrderedDict()  # SHA-256 of a criteria file -> its criteria


def _template(key: str, problem):
    """The process's template of `key`'s structure (`problem` becomes it where there is none)."""
    from robocal.fleet.loading import keep

    return keep(_templates, key, _templates.get(key, problem))


def session_criteria(folder: Path, files: dict[str, str]) -> Criteria:
    """The criteria of the session materialized in `folder` (`files`: its files' SHA-256), each
    criteria file read once per process."""
    from robocal.fleet.loading import keep

    digest = files.get(CRITERIA)
    if digest is None:
        return load_criteria(folder / CRITERIA)
    known = _criteria.get(digest)
    return keep(_criteria, digest, known if known is not None else load_criteria(folder / CRITERIA))


def _calibrations(problems: list, key: str | None) -> list:
    """The calibration (or the RobocalError) of each problem of one structure: together where the
    structure batches, else (or where the batch raised) one at a time, each error on its own problem."""
    from robocal.calibration import calibrate
    from robocal.fleet.batch import calibrate_group, share_compiled

    template = None if key is None else _template(key, problems[0])
    if template is not None:
        try:
            return calibrate_group(problems, template)
        except RobocalError:
            pass
    out: list = []
    for problem in problems:
        try:
            if template is not None:
                share_compiled(problem, template)
            out.append(calibrate(problem))
        except RobocalError as exc:
            out.append(exc)
    return out


def calibrate_sessions(engine: Engine, session_ids: list[int]) -> list[Outcome]:
    """The outcome of each session, its problems calibrated in groups of one structure; an error
    names the session's own folder (`located`)."""
    from robocal.fleet.batch import group, structure_key
    from robocal.fleet.loading import load_session

    outcomes: dict[int, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="robocal-fleet-") as tmp:

        def failed(session_id: int, exc: RobocalError) -> Outcome:
            return session_id, None, located(engine, session_id, Path(tmp) / str(session_id), exc)

        problems, keys = {}, []
        with DbSession(engine) as db:
            files = materialize_many(db, session_ids, Path(tmp))
        for session_id in session_ids:
            try:
                problem = load_session(*files[session_id])
                keys.append(structure_key(problem))
                problems[session_id] = problem
            except RobocalError as exc:
                outcomes[session_id] = failed(session_id, exc)
        loaded = list(problems)
        for members in group(keys):
            ids = [loaded[i] for i in members]
            for session_id, cal in zip(ids, _calibrations([problems[i] for i in ids], keys[members[0]])):
                try:
                    if isinstance(cal, RobocalError):
                        raise cal
                    folder = problems[session_id].path.parent
                    row = result_row(session_id, cal, folder, session_criteria(folder, files[session_id][1]))
                    outcomes[session_id] = (session_id, columns(row), None)
                except RobocalError as exc:
                    outcomes[session_id] = failed(session_id, exc)
    return [outcomes[i] for i in session_ids]
