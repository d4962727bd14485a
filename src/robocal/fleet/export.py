"""Export each unit's latest calibrated URDF from the fleet store."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store.models import Result, Session, Unit


def export_urdfs(engine: Engine, folder: Path) -> list[Path]:
    """OUT/SERIAL.urdf for every unit with a calibrated URDF (its newest session's); the paths written."""
    latest: dict[str, str] = {}
    with DbSession(engine) as db:
        rows = db.execute(
            select(Unit.serial, Result.urdf).join(Session, Session.unit_id == Unit.id).join(Result, Result.session_id == Session.id).order_by(Session.id)
        )
        for serial, urdf in rows:
            if urdf is not None:
                latest[serial] = urdf
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for serial, urdf in sorted(latest.items()):
        written.append(folder / f"{serial}.urdf")
        written[-1].write_text(urdf)
    return written
