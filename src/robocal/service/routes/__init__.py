"""The REST API, one module per resource group; every route takes its caller from robocal.service.auth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import HTTPException, Path, Request
from sqlalchemy import Select, select
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store.models import Session, Unit
from robocal.service.auth import NAME, Caller

SessionId = Annotated[int, Path(ge=1, le=2**31 - 1)]  # an id the store's 32-bit integer columns can hold (else 422)


def database(request: Request) -> Iterator[DbSession]:
    """A store session for one request (reads; writes open their own transaction under the write lock)."""
    with DbSession(request.app.state.engine) as db:
        yield db


def checked_name(value: str, field: str) -> str:
    """`value` when it is a plain name (letters, digits, '.', '_', '-'); else 422 naming the field."""
    if not NAME.fullmatch(value):
        raise HTTPException(422, f"{field}: letters, digits, '.', '_' and '-' only, at most 100, not starting with a symbol")
    return value


def visible(query: Select, who: Caller) -> Select:
    """Restrict a query over Session to what the caller may read: a station sees its own sessions."""
    return query if who.at_least("engineer") else query.where(Session.station_id == who.station_id)


def visible_session(db: DbSession, who: Caller, session_id: int) -> Session:
    """The session, or 404 when it does not exist or belongs to another station (its existence is not told)."""
    session = db.scalar(visible(select(Session).where(Session.id == session_id), who))
    if session is None:
        raise HTTPException(404, f"no session {session_id}")
    return session


def visible_unit(db: DbSession, who: Caller, serial: str) -> Unit:
    """The unit, or 404 when it does not exist or the caller's station never calibrated it."""
    unit = db.scalar(select(Unit).where(Unit.serial == checked_name(serial, "serial")))
    if unit is None or db.scalar(visible(select(Session.id).where(Session.unit_id == unit.id), who).limit(1)) is None:
        raise HTTPException(404, f"no unit {serial}")
    return unit
