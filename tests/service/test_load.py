"""Load: 50 stations upload concurrently on loopback (2 sessions each, bounded): no error, every
session stored once under its station, none lost or duplicated. The p95 latency is the benchmark's
(benchmarks/service_load.py), not asserted here."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store import open_store
from robocal.fleet.store.models import Session, Station
from robocal.service.loadgen import run_load

STATIONS, UPLOADS = 50, 2


def test_fifty_stations_upload_concurrently(service):
    with service.client("admin") as admin:
        tokens = [admin.post("/api/tokens", json={"scope": "station", "station": f"line-{k:02d}"}).json()["token"] for k in range(STATIONS)]
    load = run_load(service.url, tokens, UPLOADS)
    assert load.errors == []
    assert len(load.answers) == STATIONS * UPLOADS and len({a["session"] for a in load.answers}) == STATIONS * UPLOADS
    engine = open_store(service.db)
    with DbSession(engine) as db:
        stored = db.execute(sa.select(Session.name, Station.name).join(Station, Station.id == Session.station_id).where(Session.name.like("LOAD-%"))).all()
    engine.dispose()
    assert sorted(stored) == sorted((f"LOAD-{s:03d}-{k:03d}", f"line-{s:02d}") for s in range(STATIONS) for k in range(UPLOADS))
