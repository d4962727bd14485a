"""Results: verdict and parameters of a session, its calibrated URDF and report.json as downloads,
and fleet statistics (yield per model and station, the queue, parameter deviations across the fleet)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store.models import Job, Result, Session
from robocal.service.auth import Caller, require
from robocal.service.routes import SessionId, database, visible, visible_session
from robocal.service.routes.units import history

router = APIRouter(tags=["results"])


def result_of(db: DbSession, who: Caller, session_id: int) -> Result:
    session = visible_session(db, who, session_id)
    result = db.scalar(select(Result).where(Result.session_id == session.id))
    if result is None:
        raise HTTPException(404, f"session {session_id} has no result yet")
    return result


@router.get("/results/{session_id}")
def get_result(session_id: SessionId, db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> dict:
    result = result_of(db, who, session_id)
    return {"session": session_id, "verdict": result.verdict, "parameters": result.parameters, "created": result.created.isoformat()}


@router.get("/results/{session_id}/urdf")
def download_urdf(session_id: SessionId, db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> Response:
    result = result_of(db, who, session_id)
    if result.urdf is None:
        raise HTTPException(404, f"session {session_id}: the calibration wrote no URDF")
    name = f"{db.get_one(Session, session_id).name}-session{session_id}.urdf"
    return Response(result.urdf, media_type="application/xml", headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/results/{session_id}/report")
def download_report(session_id: SessionId, db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> Response:
    result = result_of(db, who, session_id)
    return Response(result.report, media_type="application/json", headers={"Content-Disposition": f'attachment; filename="report-session{session_id}.json"'})


def statistics(db: DbSession, who: Caller) -> dict:
    """Yield (share of judged sessions that pass) per model and station, jobs per status, and per
    parameter the deviations from nominal (estimate - nominal) of every result the caller may see."""
    groups: dict[str, dict[str, int]] = {}
    for entry in history(db, who):
        if entry["verdict"] is None:
            continue
        group = groups.setdefault(f"{entry['model']} @ {entry['station']}", {"pass": 0, "rework": 0, "fail": 0})
        group[entry["verdict"]] += 1
    yields = {k: {**v, "yield": v["pass"] / max(sum(v.values()), 1)} for k, v in sorted(groups.items())}
    jobs = dict(db.execute(visible(select(Job.status, func.count()).join(Session, Session.id == Job.session_id).group_by(Job.status), who)).all())
    deviations: dict[str, list[float]] = {}
    for (parameters,) in db.execute(visible(select(Result.parameters).join(Session, Session.id == Result.session_id), who)):
        for p in parameters:
            deviations.setdefault(f"{p['name']} [{p['unit']}]", []).append(p["estimate"] - p["nominal"])
    return {"yield": yields, "jobs": jobs, "deviations": deviations}


@router.get("/stats")
def fleet_statistics(db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> dict:
    return statistics(db, who)
