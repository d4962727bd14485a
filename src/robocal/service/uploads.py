"""A station's session upload, checked before anything is stored: plain file names (no folders, so
no path traversal), at most MAX_FILES, problem.yaml a mapping whose data files are all uploaded and
whose robot is the model's. Stored with the model's robot.urdf and criteria.yaml in one transaction,
once per (station, Idempotency-Key): a retried upload answers the session it already created."""

from __future__ import annotations

import hashlib
import math
import re

import yaml
from fastapi import HTTPException
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.criteria import CRITERIA
from robocal.fleet.store.models import FleetModel, Job, Session, SessionFile, Station
from robocal.fleet.store.sessions import PROBLEM, add_session
from robocal.service.auth import NAME

MAX_FILES = 32
ROBOT = "robot.urdf"  # the model's URDF, as a session's problem.yaml names it
KEY = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
ATTEMPTS = 3  # tries of an upload that concurrent ones keep beating to a unique row


def checked_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """The uploaded files when they make a session; 422 naming the first problem otherwise."""
    if not files or len(files) > MAX_FILES:
        raise HTTPException(422, f"files: between 1 and {MAX_FILES} files")
    for name in files:
        if not NAME.fullmatch(name):
            raise HTTPException(422, "files: a file name is letters, digits, '.', '_' and '-' only (no folders), at most 100")
        if name in (ROBOT, CRITERIA):
            raise HTTPException(422, f"files: {name} comes from the model, not from the station")
    if PROBLEM not in files:
        raise HTTPException(422, f"files: no {PROBLEM}")
    try:
        problem = yaml.safe_load(files[PROBLEM].decode())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise HTTPException(422, f"{PROBLEM}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(problem, dict):
        raise HTTPException(422, f"{PROBLEM}: not a mapping")
    if problem.get("robot") != ROBOT:
        raise HTTPException(422, f"{PROBLEM}, field 'robot': must be {ROBOT} (the model's URDF)")
    measurements = problem.get("measurements")
    if not isinstance(measurements, list) or not all(isinstance(m, dict) for m in measurements):
        raise HTTPException(422, f"{PROBLEM}, field 'measurements': a list of mappings")
    for m in measurements:
        if not isinstance(m.get("data"), str) or m["data"] not in files:
            raise HTTPException(422, f"{PROBLEM}, field 'data': {m.get('data')!r} is not among the uploaded files")
    return files


def checked_offset(clock_offset: float | None) -> float | None:
    if clock_offset is not None and not (math.isfinite(clock_offset) and abs(clock_offset) < 1e6):
        raise HTTPException(422, "clock_offset: a finite number of seconds, |offset| < 1e6")
    return clock_offset


def describe(db: DbSession, session: Session, replayed: bool = False) -> dict:
    job = db.execute(select(Job).where(Job.session_id == session.id)).scalar_one()
    return {"session": session.id, "unit": session.name, "job": job.id, "status": job.status, "replayed": replayed}


def store_upload(db: DbSession, station_id: int, model: FleetModel, serial: str, files: dict[str, bytes], key: str | None, clock_offset: float | None) -> dict:
    """Store one upload (a transaction of its own) or answer the session the same key created; 409 when
    the key was used for other files, or these files are already stored under another key; 503 with
    Retry-After when concurrent uploads of the same blobs or key still win the race after ATTEMPTS
    tries (the station agent retries a 5xx)."""
    hashes = {name: hashlib.sha256(content).hexdigest() for name, content in files.items()}
    for _ in range(ATTEMPTS):  # a concurrent upload of the same blob or key won the race: look again
        try:
            with db.begin():
                return _store_once(db, station_id, model, serial, files, hashes, key, clock_offset)
        except IntegrityError:
            continue
    raise HTTPException(503, f"busy: concurrent uploads of these files won {ATTEMPTS} times; try again", headers={"Retry-After": "1"})


def _store_once(
    db: DbSession, station_id: int, model: FleetModel, serial: str, files: dict[str, bytes], hashes: dict[str, str], key: str | None, clock_offset: float | None
) -> dict:
    if key is not None:
        found = db.scalar(select(Session).where(Session.station_id == station_id, Session.idempotency_key == key))
        if found is not None:
            stored = {f.path: f.sha256 for f in db.scalars(select(SessionFile).where(SessionFile.session_id == found.id))}
            if {p: h for p, h in stored.items() if p in hashes} != hashes or found.name != serial:
                raise HTTPException(409, "Idempotency-Key: already used for another upload")
            return describe(db, found, replayed=True)
    station = db.get_one(Station, station_id)
    context = {"serial": serial, "station": station.name, "model": model.name}
    everything = files | {ROBOT: model.urdf.encode(), CRITERIA: model.criteria.encode()}
    session = add_session(db, serial, everything, context, station_id=station_id, model_id=model.id, clock_offset=clock_offset, idempotency_key=key)
    if session is None:
        raise HTTPException(409, "these files are already stored for this unit, station and model")
    return describe(db, session)


def checked_key(key: str | None) -> str | None:
    if key is not None and not KEY.match(key):
        raise HTTPException(422, "Idempotency-Key: letters, digits, '.', '_', ':' and '-' only, at most 100")
    return key
