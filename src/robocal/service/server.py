"""Run the service: bind its address, open (or create) the fleet store, build the application, serve
it with uvicorn. An address that cannot be bound (in use, not this machine's, no such host) is a
RobocalError before the store is touched."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from robocal.errors import RobocalError
from robocal.service.app import Settings, create_app


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port as uvicorn binds one (SO_REUSEADDR; IPv6 for an address with ':')."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:  # socket.gaierror (no such host) included
        sock.close()
        raise RobocalError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})") from None
    return sock


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 8000, settings: Settings | None = None, ready: Callable[[], None] | None = None) -> None:
    """Serve the store `db` (a SQLite file, created and migrated when new, or a URL) until interrupted;
    `ready()` once the address is bound and the store open."""
    import uvicorn

    from robocal.fleet.store import open_store

    with listening_socket(host, port) as sock:
        engine = open_store(db, create=True)
        if ready is not None:
            ready()
        server = uvicorn.Server(uvicorn.Config(create_app(engine, settings), log_level="warning"))
        server.run(sockets=[sock])
    if not server.started:
        raise RobocalError(f"{host}:{port}: the service did not start (the reason is above)")
