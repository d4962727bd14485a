"""Run the service: open (or create) the fleet store, build the application, serve it with uvicorn."""

from __future__ import annotations

from pathlib import Path

from robocal.service.app import Settings, create_app


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 8000, settings: Settings | None = None) -> None:
    """Serve the store `db` (a SQLite file, created and migrated when new, or a URL) until interrupted."""
    import uvicorn

    from robocal.fleet.store import open_store

    engine = open_store(db, create=True)
    uvicorn.run(create_app(engine, settings), host=host, port=port, log_level="warning")
