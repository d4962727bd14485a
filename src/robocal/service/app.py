"""The application factory: the fleet store, the REST API under /api/ (OpenAPI at /openapi.json),
the dashboard at /, an upload size limit enforced before any body is read, and the job workers."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import Engine, event

from robocal.fleet.store.jobs import LEASE, Lease
from robocal.service import dashboard
from robocal.service.routes import admin, results, sessions, units

UPLOAD_PATH = "/api/sessions"
OTHER_LIMIT = 8 * 2**20  # bytes of any other request body (a model's URDF is at most 4 MiB)
DRAIN = 2 * OTHER_LIMIT  # bytes of a refused body read and dropped before the 411 or 413 (UploadLimit); a longer one is cut off


@dataclass
class Settings:
    max_upload: int = 64 * 2**20  # bytes of one session upload (all its files, multipart framing included)
    workers: int = 1  # job workers in this process (one on SQLite: a single writer)
    clock: Callable[[], float] = time.time  # the server clock of /api/time (s since the epoch)
    work: Callable | None = None  # the job code, (engine, session id) -> Result; None: the core's calibration, batched
    lease: float = LEASE  # s the workers hold a claimed job without a heartbeat (robocal.fleet.store.jobs)


async def _discard(receive) -> None:
    """Read a request's body and drop it, chunk by chunk, up to DRAIN bytes (a chunked body declares
    no length; what is left past DRAIN stays unread and the connection is cut)."""
    read = 0
    while read <= DRAIN:
        message = await receive()
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body"):
            return


class UploadLimit:
    """ASGI middleware: a request body (POST, PUT, PATCH) must declare its Content-Length (411, not chunked),
    at most max_upload bytes for a session upload and OTHER_LIMIT for anything else (413), so that no
    body, the unauthenticated login form's included, is kept past its limit. A refused body (411, or 413
    of at most DRAIN bytes) is read and dropped, up to DRAIN bytes, before the answer: closed with
    unread data, the socket resets the connection, and the client may lose the answer in transit (it
    then sees a broken connection)."""

    def __init__(self, app, max_upload: int):
        self.app, self.max_upload = app, max_upload

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            limit = self.max_upload if scope["path"] == UPLOAD_PATH else OTHER_LIMIT
            headers = dict(scope["headers"])
            length = headers.get(b"content-length")
            problem = None
            if length is None and b"transfer-encoding" in headers:  # chunked (with neither header there is no body)
                problem = 411, "a request body must declare its Content-Length"
            elif length is not None and not length.isdigit():
                problem = 400, "malformed Content-Length"
            elif length is not None and int(length) > limit:
                problem = 413, f"a body of {int(length)} bytes exceeds the limit of {limit} bytes"
            if problem is not None:
                if problem[0] == 411 or (problem[0] == 413 and int(length) <= DRAIN):
                    await _discard(receive)
                await JSONResponse({"detail": problem[1]}, status_code=problem[0], headers={"Connection": "close"})(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _sqlite_pragmas(engine: Engine) -> None:
    """Writers wait for the lock instead of failing (every connection); readers beside the one writer
    (WAL, a setting the database file keeps)."""

    @event.listens_for(engine, "connect")
    def _connect(connection, _record):
        cursor = connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA journal_mode=WAL")


async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 answer, whose errors echo the input: a non-finite number in it (NaN, Infinity,
    1e400, which Python's JSON parser takes) echoed as text, as JSON cannot carry it (not a 500)."""
    finite = {float: lambda x: x if math.isfinite(x) else str(x)}
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    return JSONResponse({"detail": jsonable_encoder(errors, custom_encoder=finite)}, status_code=422)


def create_app(engine: Engine, settings: Settings | None = None) -> FastAPI:
    """The service over a migrated fleet store; its workers start and stop with the application."""
    from robocal.service.worker import start_workers

    settings = settings or Settings()
    if engine.dialect.name == "sqlite":
        _sqlite_pragmas(engine)
        settings.workers = min(settings.workers, 1)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        stop = threading.Event()
        threads = start_workers(engine, app.state.write_lock, stop, settings.workers, settings.work, Lease(settings.lease))
        yield
        stop.set()
        for thread in threads:
            thread.join(timeout=60)

    app = FastAPI(title="robocal calibration service", lifespan=lifespan, docs_url="/api/docs", redoc_url=None)
    app.state.engine, app.state.settings = engine, settings
    # SQLite has one writer: the service's writes take this lock; PostgreSQL locks rows instead
    app.state.write_lock = threading.Lock() if engine.dialect.name == "sqlite" else nullcontext()
    for module in (admin, sessions, units, results):
        app.include_router(module.router, prefix="/api")
    app.include_router(dashboard.router)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_middleware(UploadLimit, max_upload=settings.max_upload)
    return app
