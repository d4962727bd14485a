"""Units: the list with each unit's latest verdict, and one unit's history of sessions."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store.models import FleetModel, Job, Result, Session, Station, Unit
from robocal.service.auth import Caller, require
from robocal.service.routes import database, visible, visible_unit

router = APIRouter(tags=["units"])


def history(db: DbSession, who: Caller, unit_ids: list[int] | None = None) -> list[dict]:
    """Every session the caller may see (of `unit_ids`, or all), oldest first, with its job, verdict, station and model."""
    query = (
        select(Session, Unit.serial, Job.status, Result.verdict, Station.name, FleetModel.name)
        .join(Unit, Unit.id == Session.unit_id)
        .join(Job, Job.session_id == Session.id)
        .outerjoin(Result, Result.session_id == Session.id)
        .outerjoin(Station, Station.id == Session.station_id)
        .outerjoin(FleetModel, FleetModel.id == Session.model_id)
        .order_by(Session.id)
    )
    if unit_ids is not None:
        query = query.where(Session.unit_id.in_(unit_ids))
    return [
        {
            "session": s.id,
            "unit": serial,
            "created": s.created.isoformat(),
            "status": status,
            "verdict": (verdict or {}).get("status"),
            "reasons": (verdict or {}).get("reasons", []),
            "station": station,
            "model": model,
            "clock_offset": s.clock_offset,
        }
        for s, serial, status, verdict, station, model in db.execute(visible(query, who))
    ]


@router.get("/units")
def list_units(db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> list[dict]:
    """Every unit the caller may see with its number of sessions and its latest session's verdict."""
    latest: dict[str, dict] = {}
    for entry in history(db, who):
        sessions = latest.get(entry["unit"], {}).get("sessions", 0) + 1
        latest[entry["unit"]] = {"serial": entry["unit"], "sessions": sessions, "latest": entry}
    return [latest[serial] for serial in sorted(latest)]


@router.get("/units/{serial}")
def get_unit(serial: str, db: DbSession = Depends(database), who: Caller = Depends(require("station"))) -> dict:
    unit = visible_unit(db, who, serial)
    return {"serial": unit.serial, "created": unit.created.isoformat(), "sessions": history(db, who, [unit.id])}
