"""Fixtures of the store's tests (fleet, service): a store URL on SQLite and on a real PostgreSQL
server, loaded once for the whole run (tests/conftest.py's pytest_plugins), so one server serves
every test folder.

The PostgreSQL server is Debian's (initdb / pg_ctl under /usr/lib/postgresql/*/bin), started once
per test session in a temporary folder, listening on 127.0.0.1 only. PostgreSQL refuses to run as
root, so as root it runs as the `postgres` user the Debian package creates (pytest-postgresql's
postgresql_proc calls pg_ctl as the current user, hence this fixture).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.system_deps import require


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgresql_server():
    """(URL prefix postgresql+psycopg://postgres@127.0.0.1:PORT/, run) of a running server."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    pg_ctl = Path(require(bins, "PostgreSQL server binaries (pg_ctl)", "postgresql")[-1])
    prefix = []
    folder = Path(tempfile.mkdtemp(prefix="robocal-pg-"))
    if os.geteuid() == 0:
        prefix = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()
    subprocess.run(prefix + [str(pg_ctl.parent / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres"], check=True, capture_output=True)
    options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off"
    subprocess.run(prefix + [str(pg_ctl), "-D", str(data), "-o", options, "-w", "-l", str(folder / "log"), "start"], check=True, capture_output=True)
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/", port
    finally:
        subprocess.run(prefix + [str(pg_ctl), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database: a SQLite file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "robocal.db")
    return new_postgresql_database(request, "fleet")


def new_postgresql_database(request, prefix: str) -> str:
    """The URL of a new, empty database named after `prefix`, this process and the requesting test."""
    base, _ = request.getfixturevalue("postgresql_server")
    import sqlalchemy as sa

    name = f"{prefix}_{os.getpid()}_{abs(hash(request.node.nodeid)) % 10**8}"
    admin = sa.create_engine(base + "postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return base + name
