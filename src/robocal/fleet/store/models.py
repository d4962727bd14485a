"""The fleet store's tables (SQLAlchemy 2). The schema itself is created by the Alembic migrations in
`migrations/versions`, never by `create_all`, so a database always carries its revision.

Raw files are content addressed: a `Blob` is keyed by the SHA-256 of its bytes and never modified; a
session lists its files (relative path -> blob). A `Job` calibrates one session; `Result` is unique
per session, written in the same transaction that marks its job done. `AuditEntry` is append-only.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Blob(Base):
    __tablename__ = "blobs"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    content: Mapped[bytes] = mapped_column(LargeBinary)


class Unit(Base):
    __tablename__ = "units"
    id: Mapped[int] = mapped_column(primary_key=True)
    serial: Mapped[str] = mapped_column(String(200), unique=True)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Station(Base):
    """A calibration station on the line (service): it uploads sessions with its own tokens."""

    __tablename__ = "stations"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Token(Base):
    """An access token of the service, stored as the SHA-256 of its secret; scope station | engineer | admin."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    digest: Mapped[str] = mapped_column(String(64))
    scope: Mapped[str] = mapped_column(String(16))
    station_id: Mapped[int | None] = mapped_column(ForeignKey("stations.id"), nullable=True)  # station scope only
    expires: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class FleetModel(Base):
    """A robot model of the fleet (service): its nominal URDF and criteria, added to each session that names it."""

    __tablename__ = "models"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    urdf: Mapped[str] = mapped_column(Text)
    criteria: Mapped[str] = mapped_column(Text)  # criteria.yaml (robocal.fleet.criteria)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Session(Base):
    """One recording of one unit: its problem file and data files, as found in the ingested folder
    or uploaded by a station (with the station, model, clock offset and idempotency key)."""

    __tablename__ = "sessions"
    __table_args__ = (UniqueConstraint("station_id", "idempotency_key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    unit_id: Mapped[int] = mapped_column(ForeignKey("units.id"))
    name: Mapped[str] = mapped_column(String(200))
    problem: Mapped[str] = mapped_column(String(500))  # relative path of the problem YAML among the files
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 over the (path, sha256) list
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    station_id: Mapped[int | None] = mapped_column(ForeignKey("stations.id"), nullable=True)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id"), nullable=True)
    clock_offset: Mapped[float | None] = mapped_column(Float, nullable=True)  # s, station clock minus server clock
    idempotency_key: Mapped[str | None] = mapped_column(String(100), nullable=True)


class SessionFile(Base):
    __tablename__ = "session_files"
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), primary_key=True)
    path: Mapped[str] = mapped_column(String(500), primary_key=True)
    sha256: Mapped[str] = mapped_column(ForeignKey("blobs.sha256"))


class Job(Base):
    """One session's calibration. A runner that claims it (running) records itself as `owner` and holds
    it until `lease_until`, renewed by its heartbeat; a running job whose lease expired (or has none:
    claimed before leases existed) is its dead runner's and goes back to the queue (store.jobs)."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status", "status"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"), unique=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued | running | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    updated: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    owner: Mapped[str | None] = mapped_column(String(100), nullable=True)  # the runner that claimed it last (host:pid:random)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # while running


class Result(Base):
    __tablename__ = "results"
    __table_args__ = (UniqueConstraint("session_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"))
    parameters: Mapped[list] = mapped_column(JSON)  # Calibration.parameters(): name, unit, nominal, estimate, std, ...
    report: Mapped[str] = mapped_column(Text)  # report.json of the core's write_results
    urdf: Mapped[str | None] = mapped_column(Text, nullable=True)  # calibrated.urdf
    verdict: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # {"status": pass|rework|fail, "reasons": [...]}
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class AuditEntry(Base):
    __tablename__ = "audit"
    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    action: Mapped[str] = mapped_column(String(40))
    detail: Mapped[dict] = mapped_column(JSON)
