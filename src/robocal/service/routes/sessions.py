"""Sessions (multipart upload by a station, reading), jobs (the queue, re-runs) and the server clock."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Form, Header, HTTPException, Request, Response, UploadFile
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store.models import AuditEntry, FleetModel, Job, Result, Session, SessionFile, Station
from robocal.service.auth import Caller, require
from robocal.service.routes import SessionId, checked_name, database, visible, visible_session
from robocal.service.uploads import checked_files, checked_key, checked_offset, describe, store_upload

router = APIRouter(tags=["sessions and jobs"])


@router.get("/time")
def server_time(request: Request) -> dict:
    """The server clock at reception and at reply (s since the epoch), for the stations' NTP-style offset estimate."""
    clock = request.app.state.settings.clock
    received = clock()
    return {"received": received, "sent": clock()}


@router.post("/sessions", status_code=201)
def upload_session(
    request: Request,
    response: Response,
    serial: str = Form(max_length=200),
    model: str = Form(max_length=200),
    files: list[UploadFile] = File(),
    station: str | None = Form(None, max_length=200),
    clock_offset: float | None = Form(None),
    idempotency_key: str | None = Header(None, max_length=200),
    db: DbSession = Depends(database),
    who: Caller = Depends(require("station")),
) -> dict:
    """A session of unit SERIAL recorded by the caller's station for MODEL: problem.yaml and its data
    files; 201 with its job, or 200 with the same answer when this Idempotency-Key was already used."""
    if who.station_id is None:
        raise HTTPException(403, "only a station token uploads sessions")
    own = db.get_one(Station, who.station_id).name
    if station is not None and station != own:
        raise HTTPException(403, "a station token uploads sessions for its own station only")
    serial, key, offset = checked_name(serial, "serial"), checked_key(idempotency_key), checked_offset(clock_offset)
    row = db.scalar(select(FleetModel).where(FleetModel.name == checked_name(model, "model")))
    if row is None:
        raise HTTPException(422, f"model: no model named {model}")
    contents: dict[str, bytes] = {}
    for upload in files:
        name = upload.filename or ""
        if name in contents:
            raise HTTPException(422, f"files: {name} twice")
        contents[name] = upload.file.read()
    checked_files(contents)
    db.rollback()  # the reads above end their transaction; the upload is one transaction of its own
    with request.app.state.write_lock:
        answer = store_upload(db, who.station_id, row, serial, contents, key, offset)
    if answer["replayed"]:
        response.status_code = 200
    return answer


@router.get("/sessions")
def list_sessions(db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> list[dict]:
    return [describe(db, s) for s in db.scalars(visible(select(Session).order_by(Session.id), who))]


@router.get("/sessions/{session_id}")
def get_session(session_id: SessionId, db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> dict:
    session = visible_session(db, who, session_id)
    files = {f.path: f.sha256 for f in db.scalars(select(SessionFile).where(SessionFile.session_id == session.id))}
    result = db.scalar(select(Result).where(Result.session_id == session.id))
    station = db.get(Station, session.station_id) if session.station_id is not None else None
    return describe(db, session) | {
        "files": files,
        "station": station.name if station else None,
        "clock_offset": session.clock_offset,
        "created": session.created.isoformat(),
        "verdict": result.verdict if result else None,
    }


@router.get("/jobs")
def list_jobs(status: str | None = None, db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> list[dict]:
    """The jobs the caller may see, oldest first; `status`: queued | running | done | failed."""
    if status is not None and status not in ("queued", "running", "done", "failed"):
        raise HTTPException(422, "status: queued, running, done or failed")
    query = visible(select(Job, Session.name).join(Session, Session.id == Job.session_id).order_by(Job.id), who)
    if status is not None:
        query = query.where(Job.status == status)
    return [{"job": j.id, "session": j.session_id, "unit": name, "status": j.status, "attempts": j.attempts, "error": j.error} for j, name in db.execute(query)]


@router.post("/sessions/{session_id}/rerun")
def rerun(session_id: SessionId, request: Request, db: DbSession = Depends(database), who: Caller = Depends(require("engineer"))) -> dict:
    """Queue a finished session again: its result is removed now and written anew by the job (the audit keeps the old verdict)."""
    visible_session(db, who, session_id)
    db.rollback()
    with request.app.state.write_lock, db.begin():
        job = db.execute(select(Job).where(Job.session_id == session_id).with_for_update()).scalar_one()
        if job.status not in ("done", "failed"):
            raise HTTPException(409, f"job {job.id} is {job.status}")
        old = db.scalar(select(Result).where(Result.session_id == session_id))
        if old is not None:
            db.delete(old)
        job.status, job.error = "queued", None
        db.add(AuditEntry(action="rerun", detail={"session": session_id, "token": who.token_id, "verdict": old.verdict if old else None}))
        db.flush()
        return describe(db, db.get_one(Session, session_id))
