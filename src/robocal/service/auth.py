"""Access tokens: `rc<id>_<secret>`, stored as the SHA-256 of the secret, compared in constant time.

Scopes are ordered station < engineer < admin; a station token is bound to one station. A request
without a token, with an unknown, wrong or expired one is answered 401; a token whose scope is too
low, 403. The dashboard reads the same token from an HttpOnly cookie set by its login form."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session as DbSession

from robocal.errors import RobocalError
from robocal.fleet.store.models import AuditEntry, Station, Token, now
from robocal.fleet.store.sessions import SERIAL

SCOPES = ("station", "engineer", "admin")
COOKIE = "robocal_token"
NAME = SERIAL  # serials, station and model names, file names: one plain-name rule (fullmatch)
_TOKEN = re.compile(r"^rc([1-9][0-9]{0,8})_([A-Za-z0-9_-]{43})$")  # ids within a 32-bit integer column
_DUMMY = hashlib.sha256(b"no such token").hexdigest()
_bearer = HTTPBearer(auto_error=False, description="a token from `robocal serve token create`")


@dataclass(frozen=True)
class Caller:
    token_id: int
    scope: str
    station_id: int | None  # the station of a station token

    def at_least(self, scope: str) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(scope)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(engine: Engine, scope: str, station: str | None = None, expires_in: timedelta | None = None) -> str:
    """A new token (shown once, stored hashed); a station token names its station (created if new)."""
    if scope not in SCOPES:
        raise RobocalError(f"scope '{scope}': expected one of {', '.join(SCOPES)}")
    if (scope == "station") != (station is not None):
        raise RobocalError("a station token needs --station, and only a station token takes one")
    if station is not None and not NAME.fullmatch(station):
        raise RobocalError(f"station name '{station}': letters, digits, '.', '_' and '-' only (at most 100)")
    secret = secrets.token_urlsafe(32)
    with DbSession(engine) as db, db.begin():
        station_id = None
        if station is not None:
            row = db.scalar(select(Station).where(Station.name == station))
            if row is None:
                row = Station(name=station)
                db.add(row)
                db.flush()
            station_id = row.id
        token = Token(digest=digest(secret), scope=scope, station_id=station_id, expires=None if expires_in is None else now() + expires_in)
        db.add(token)
        db.flush()
        db.add(AuditEntry(action="token", detail={"token": token.id, "scope": scope, "station": station}))
        return f"rc{token.id}_{secret}"


def verify(engine: Engine, presented: str | None) -> Caller:
    """The caller a presented token stands for; HTTPException 401 when it is missing, wrong or expired."""
    match = _TOKEN.match(presented or "")
    with DbSession(engine) as db:
        token = db.get(Token, int(match[1])) if match else None
    stored = token.digest if token is not None else _DUMMY
    good = hmac.compare_digest(stored, digest(match[2] if match else ""))
    if token is None or not good:
        raise HTTPException(401, "missing or invalid token", headers={"WWW-Authenticate": "Bearer"})
    if token.expires is not None and _aware(token.expires) <= datetime.now(UTC):
        raise HTTPException(401, "token expired", headers={"WWW-Authenticate": "Bearer"})
    return Caller(token.id, token.scope, token.station_id)


def _aware(moment: datetime) -> datetime:
    """SQLite returns naive datetimes (stored as UTC)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def caller(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Caller:
    """The request's caller, from the Authorization header or the dashboard's cookie."""
    presented = credentials.credentials if credentials is not None else request.cookies.get(COOKIE)
    return verify(request.app.state.engine, presented)


def require(scope: str):
    """A dependency: the caller, whose scope must be at least `scope` (else 403)."""

    def dependency(who: Caller = Depends(caller)) -> Caller:
        if not who.at_least(scope):
            raise HTTPException(403, f"this needs a token of scope '{scope}' or higher")
        return who

    return dependency
