"""Fixtures of the service tests: the service as a real uvicorn server in a subprocess on 127.0.0.1
and a free port, over SQLite and PostgreSQL (tests/databases.py's server and its fresh `db_url` per test),
with one token per scope (two stations) created in the store beforehand."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from robocal.fleet.store import open_store
from robocal.service.auth import create_token
from tests.databases import new_postgresql_database

REPO = Path(__file__).resolve().parents[2]
ARM = REPO / "examples" / "fleet" / "arm_6r.urdf"
LAUNCH = """
import importlib, json, sys
from robocal.runtime import enable_compilation_cache
from robocal.service.app import Settings
from robocal.service.server import serve
enable_compilation_cache()
options = json.loads(sys.argv[3])
if "work" in options:
    module, name = options["work"].split(":")
    options["work"] = getattr(importlib.import_module(module), name)
serve(sys.argv[1], port=int(sys.argv[2]), settings=Settings(**options))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Service:
    db: str
    url: str
    tokens: dict[str, str]  # admin, engineer, station-a, station-b, expired
    options: dict
    process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start (or restart) the server and wait until it answers."""
        port = int(self.url.rsplit(":", 1)[1])
        env = os.environ | {"JAX_PLATFORMS": "cpu"}
        self.process = subprocess.Popen([sys.executable, "-c", LAUNCH, self.db, str(port), json.dumps(self.options)], cwd=REPO, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the server exited"
            try:
                httpx.get(self.url + "/api/time", timeout=1).raise_for_status()
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the server did not answer within 60 s")

    def stop(self, kill: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            (self.process.kill if kill else self.process.terminate)()
            self.process.wait(timeout=60)

    def client(self, who: str | None) -> httpx.Client:
        headers = {} if who is None else {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def make_service(db: str, **options) -> Service:
    """A migrated store with a model (the 6R arm), two stations and a token per scope; not started."""
    engine = open_store(db, create=True)
    tokens = {
        "admin": create_token(engine, "admin"),
        "engineer": create_token(engine, "engineer"),
        "station-a": create_token(engine, "station", "station-a"),
        "station-b": create_token(engine, "station", "station-b"),
        "expired": create_token(engine, "engineer", expires_in=timedelta(seconds=-1)),
    }
    engine.dispose()
    return Service(db, f"http://127.0.0.1:{free_port()}", tokens, options)


def add_model(service: Service, name: str = "arm6", criteria: dict | None = None) -> None:
    criteria = criteria or {"tolerance": {"joint_offset": 0.001}, "max_rms": 5 * 1e-4 * 3**0.5}
    with service.client("admin") as admin:
        answer = admin.post("/api/models", json={"name": name, "urdf": ARM.read_text(), "criteria": json.dumps(criteria)})
        assert answer.status_code == 201, answer.text


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def service_store(request, tmp_path_factory):
    """The shared service's store: a SQLite file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path_factory.mktemp("service") / "robocal.db")
    return new_postgresql_database(request, "service")


@pytest.fixture(scope="session")
def service(service_store):
    """A running service without workers (the queue only fills), the arm model added; one per backend for
    every test that only counts what its own requests add (a start costs seconds of imports)."""
    svc = make_service(service_store, workers=0, max_upload=2**20)
    svc.start()
    add_model(svc)
    try:
        yield svc
    finally:
        svc.stop()
