"""Export each unit's latest calibrated URDF from the fleet store."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session as DbSession

from robocal.errors import RobocalError
from robocal.fleet.store import store_name
from robocal.fleet.store.models import Result, Session, Unit
from robocal.fleet.store.sessions import bad_serial


def export_urdfs(engine: Engine, folder: Path) -> list[Path]:
    """OUT/SERIAL.urdf for every unit with a calibrated URDF (its newest session's); the paths written.
    A stored serial that is no plain name (one that would name a file elsewhere, `../x`) is refused,
    naming it, before anything is written: nothing is ever written outside `folder`."""
    latest: dict[str, str] = {}
    with DbSession(engine) as db:
        rows = db.execute(
            select(Unit.serial, Result.urdf).join(Session, Session.unit_id == Unit.id).join(Result, Result.session_id == Session.id).order_by(Session.id)
        )
        for serial, urdf in rows:
            if urdf is not None:
                latest[serial] = urdf
    targets = {}
    for serial in sorted(latest):
        problem = bad_serial(serial)
        target = folder.resolve() / f"{serial}.urdf"
        if problem is not None or target.parent != folder.resolve():
            raise RobocalError(f"{store_name(engine)}: table units: {problem or f'unit serial {serial!r} names a file outside {folder}'}; nothing exported")
        targets[serial] = folder / target.name
    folder.mkdir(parents=True, exist_ok=True)
    for serial, target in targets.items():
        target.write_text(latest[serial])
    return list(targets.values())
