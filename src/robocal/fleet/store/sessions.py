"""Ingest session folders: raw files stored by SHA-256 (never modified), one queued job per session.

A session folder is a folder holding `problem.yaml` and the files it names; the unit's serial number
is the folder's name, a plain name (`SERIAL`: letters, digits, '.', '_' and '-', starting with a
letter or digit, at most 100 characters, as the service takes them), since it names files
(`fleet export` writes SERIAL.urdf). Ingesting the same files again adds nothing (the session's fingerprint is the
SHA-256 over its sorted (path, file hash) list).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session as DbSession

from robocal.errors import InputError, RobocalError
from robocal.fleet.store.models import AuditEntry, Blob, FleetModel, Job, Session, SessionFile, Unit

PROBLEM = "problem.yaml"
SERIAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # a plain name (fullmatch); the service takes station and model names by it too
SERIAL_RULE = "letters, digits, '.', '_' and '-' only, starting with a letter or digit, at most 100"


def bad_serial(serial: str) -> str | None:
    """Why `serial` is not a unit serial (module doc); None where it is one."""
    return None if SERIAL.fullmatch(serial) else f"unit serial {serial!r}: {SERIAL_RULE}"


def folder_serial(folder: Path) -> str:
    """The unit serial of a session folder: its name (of the absolute path, so `.` is named too); a
    name that is no serial is an InputError naming the folder."""
    serial = Path(os.path.abspath(folder)).name
    problem = bad_serial(serial)
    if problem is not None:
        raise InputError(folder, f"{problem} (a session folder's name is its unit's serial)")
    return serial


def session_folders(folder: Path) -> list[Path]:
    """Every folder under `folder` (itself included) that holds a problem.yaml, sorted."""
    if not folder.is_dir():
        raise InputError(folder, "not a folder")
    found = sorted(p.parent for p in folder.rglob(PROBLEM))
    if not found:
        raise InputError(folder, f"no session folder (a folder holding {PROBLEM}) under it")
    return found


def ingest_session(db: DbSession, folder: Path, **columns) -> Session | None:
    """Store one session folder; None when the same files are already stored. `columns`: further Session columns (model_id)."""
    serial = folder_serial(folder)
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return add_session(db, serial, files, source=os.path.abspath(folder), **columns)


def add_session(db: DbSession, serial: str, files: dict[str, bytes], context: dict | None = None, source: str | None = None, **columns) -> Session | None:
    """Store one session of unit `serial` (relative path -> bytes) and queue its job; None when the same
    fingerprint is already stored. The fingerprint covers the (path, sha256) list and `context` (the
    service's serial, station and model); `source`: the folder it was ingested from (kept in the audit
    for messages, `session_source`); `columns`: further Session columns (station_id, clock_offset...).
    A `serial` that is no unit serial (module doc) is a RobocalError."""
    problem = bad_serial(serial)
    if problem is not None:
        raise RobocalError(problem)
    hashes = {path: hashlib.sha256(content).hexdigest() for path, content in files.items()}
    identity = sorted(hashes.items()) if context is None else [sorted(hashes.items()), context]
    fingerprint = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    if db.scalar(select(Session.id).where(Session.fingerprint == fingerprint)) is not None:
        return None
    unit = db.scalar(select(Unit).where(Unit.serial == serial))
    if unit is None:
        unit = Unit(serial=serial)
        db.add(unit)
    for path, digest in hashes.items():
        if db.get(Blob, digest) is None:
            db.add(Blob(sha256=digest, size=len(files[path]), content=files[path]))
    db.flush()
    session = Session(unit_id=unit.id, name=serial, problem=PROBLEM, fingerprint=fingerprint, **columns)
    db.add(session)
    db.flush()
    db.add_all(SessionFile(session_id=session.id, path=path, sha256=digest) for path, digest in hashes.items())
    db.add(Job(session_id=session.id, status="queued", attempts=0))
    detail = {"session": session.id, "unit": serial, "fingerprint": fingerprint, "files": hashes}
    db.add(AuditEntry(action="ingest", detail=detail if source is None else detail | {"folder": source}))
    return session


def session_source(db: DbSession, session_id: int) -> str:
    """How messages name a stored session's folder: the folder it was ingested from, else (uploaded by
    a station, or ingested by an older robocal) `session ID (SERIAL)`."""
    query = select(AuditEntry.detail).where(AuditEntry.action == "ingest", AuditEntry.detail["session"].as_integer() == session_id)
    detail = db.scalar(query.limit(1))
    folder = detail.get("folder") if isinstance(detail, dict) else None
    return folder if isinstance(folder, str) else f"session {session_id} ({db.get_one(Session, session_id).name})"


def ingest(engine: Engine, folder: Path, model: str | None = None) -> tuple[int, int]:
    """Ingest every session folder under `folder`, each in its own transaction: (new, already stored).
    `model`: the name of a stored robot model (robocal.fleet.catalog) the new sessions are filed under."""
    columns = {}
    if model is not None:
        with DbSession(engine) as db:
            model_id = db.scalar(select(FleetModel.id).where(FleetModel.name == model))
        if model_id is None:
            raise RobocalError(f"no model '{model}' in the store; add it with `robocal fleet add-model {model} --description URDF`")
        columns["model_id"] = model_id
    new = old = 0
    folders = session_folders(folder)
    for session_folder in folders:  # every serial checked before any session is stored
        folder_serial(session_folder)
    for session_folder in folders:
        with DbSession(engine) as db, db.begin():
            if ingest_session(db, session_folder, **columns) is None:
                old += 1
            else:
                new += 1
    return new, old


def materialize(db: DbSession, session_id: int, folder: Path) -> Path:
    """Write a stored session's files under `folder`; returns the problem file's path."""
    for row in db.scalars(select(SessionFile).where(SessionFile.session_id == session_id)):
        target = folder / row.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(db.get_one(Blob, row.sha256).content)
    return folder / db.get_one(Session, session_id).problem


def materialize_many(db: DbSession, session_ids: list[int], folder: Path) -> dict[int, tuple[Path, dict[str, str]]]:
    """`materialize` of several sessions in one query, each under folder/ID; session id -> (problem
    file, {relative path: SHA-256} of every file of the session)."""
    query = select(SessionFile.session_id, SessionFile.path, SessionFile.sha256, Blob.content).join(Blob, Blob.sha256 == SessionFile.sha256)
    hashes: dict[int, dict[str, str]] = {session_id: {} for session_id in session_ids}
    for session_id, path, digest, content in db.execute(query.where(SessionFile.session_id.in_(session_ids))):
        target = folder / str(session_id) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        hashes[session_id][path] = digest
    problems = {i: problem for i, problem in db.execute(select(Session.id, Session.problem).where(Session.id.in_(session_ids)))}
    return {session_id: (folder / str(session_id) / problems[session_id], hashes[session_id]) for session_id in session_ids}
