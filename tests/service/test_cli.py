"""The command line: `robocal serve token create`, `robocal serve` on loopback (a subprocess) and
`robocal station` with simulated sources against it (recorded, uploaded with the clock offset, a rerun
uploads nothing); bad options, an unreachable server and a damaged spool are one error line with exit
code 2, the recorded sessions kept in the spool. The commands other than a serving `serve` run
in-process (robocal.cli.main)."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing

import httpx

from robocal import cli
from robocal.fleet.store import open_store
from robocal.service.agent import META, spool_session
from robocal.service.auth import verify
from robocal.service.loadgen import synthetic_files
from tests.service.conftest import ARM, REPO, free_port


def run(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["robocal", *map(str, args)])
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def test_token_create(tmp_path, monkeypatch, capsys):
    db = tmp_path / "robocal.db"
    code, out, _ = run(monkeypatch, capsys, "serve", "token", "create", "--scope", "station", "--station", "line-1", "--db", db)
    assert code == 0
    caller = verify(open_store(db), out.strip())
    assert caller.scope == "station" and caller.station_id is not None
    for bad in (["--scope", "root"], ["--scope", "engineer", "--station", "line-1"], ["--scope", "station", "--station", "../x"]):
        code, _, err = run(monkeypatch, capsys, "serve", "token", "create", *bad, "--db", db)
        assert code == 2 and err.count("\n") == 1 and err.startswith("error:"), err


def test_serve_and_station(tmp_path, monkeypatch, capsys):
    db, port = tmp_path / "robocal.db", free_port()
    admin = run(monkeypatch, capsys, "serve", "token", "create", "--scope", "admin", "--db", db)[1].strip()
    station = run(monkeypatch, capsys, "serve", "token", "create", "--scope", "station", "--station", "line-1", "--db", db)[1].strip()
    url, spool = f"http://127.0.0.1:{port}", tmp_path / "spool"
    code, _, err = run(
        monkeypatch, capsys, "station", "--server", url, "--token", station, "--model", "arm6", "--spool", spool, "--simulate", 2, "--robot", ARM
    )
    assert code == 2 and "cannot reach the service" in err and err.count("\n") == 1, err
    assert len(list(spool.glob("*/session.json"))) == 2  # recorded, kept for the next run
    code, _, err = run(monkeypatch, capsys, "station", "--server", "ftp://x", "--token", station, "--model", "arm6")
    assert code == 2 and err.startswith("error: --server"), err
    env = os.environ | {"JAX_PLATFORMS": "cpu"}
    server = subprocess.Popen([sys.executable, "-m", "robocal", "serve", "--port", str(port), "--db", str(db), "--workers", "0"], cwd=REPO, env=env)
    try:
        for _ in range(900):
            try:
                httpx.get(url + "/openapi.json", timeout=1).raise_for_status()
                break
            except httpx.TransportError:
                time.sleep(0.1)
        model = {"name": "arm6", "urdf": ARM.read_text(), "criteria": ""}
        assert httpx.post(url + "/api/models", json=model, headers={"Authorization": f"Bearer {admin}"}).status_code == 201
        monkeypatch.setenv("ROBOCAL_TOKEN", station)
        code, out, err = run(monkeypatch, capsys, "station", "--server", url, "--model", "arm6", "--spool", spool)
        assert code == 0 and "uploaded 2 sessions" in out, err
        code, out, err = run(monkeypatch, capsys, "station", "--server", url, "--model", "arm6", "--spool", spool)
        assert code == 0 and "uploaded 0 sessions" in out, err
        sessions = httpx.get(url + "/api/sessions", headers={"Authorization": f"Bearer {station}"}).json()
        assert sorted(s["unit"] for s in sessions) == ["UNIT-00000", "UNIT-00001"]
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_serve_refuses_bad_options(tmp_path, monkeypatch, capsys):
    """A port in use, a host that is not this machine's, a URL of no database robocal opens: one error
    line, exit code 2, and the store is not touched before the address is bound."""
    other = tmp_path / "other.db"  # another application's SQLite database
    with closing(sqlite3.connect(other)) as db, db:
        db.execute("create table people (name text)")
    content = other.read_bytes()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code, out, err = run(monkeypatch, capsys, "serve", "--port", port, "--db", other)
    assert (code, out) == (2, "") and err.startswith(f"error: --host 127.0.0.1 --port {port}: cannot listen there (") and err.count("\n") == 1, err
    assert other.read_bytes() == content
    code, out, err = run(monkeypatch, capsys, "serve", "--host", "no-such-host.invalid", "--port", free_port(), "--db", tmp_path / "new.db")
    assert (code, out) == (2, "") and "cannot listen there" in err and err.count("\n") == 1, err
    assert not (tmp_path / "new.db").exists()
    code, out, err = run(monkeypatch, capsys, "serve", "--port", free_port(), "--db", "foo://host/db")
    assert (code, out) == (2, "") and err.startswith("error: foo://host/db: cannot open the fleet database (") and err.count("\n") == 1, err


def test_station_refuses_a_damaged_spool(service, tmp_path, monkeypatch, capsys):
    """A spooled session damaged (a file cut short or missing, session.json unreadable, no files folder)
    or a folder that is no session is one error line naming it, and nothing is uploaded; recording
    the session again repairs it, and the run after that uploads each session once. A file or a
    session-less folder beside the sessions, and a session half written by a killed recording, are
    left alone; a spool that is a file is an error."""
    spool, prefix = tmp_path / "spool", f"D{uuid.uuid4().hex[:8]}"
    recorded = {f"{prefix}-{k}": synthetic_files(f"{prefix}-{k}", 1000) for k in range(3)}
    folders = [spool_session(spool, serial, files) for serial, files in recorded.items()]
    (spool / "notes.txt").write_text("not a session")
    (spool / "empty").mkdir()
    (spool / ".partial-x" / "files").mkdir(parents=True)  # a recording killed before its rename
    (spool / ".partial-x" / META).write_text("{}")

    def station(folder=spool):
        return run(monkeypatch, capsys, "station", "--server", service.url, "--token", service.tokens["station-a"], "--model", "arm6", "--spool", folder)

    def uploaded() -> list[str]:
        with service.client("station-a") as client:
            return sorted(s["unit"] for s in client.get("/api/sessions").json() if s["unit"].startswith(prefix))

    damaged, markers = folders[1], folders[1] / "files" / "markers.csv"
    damages = {
        "a file cut short": (lambda: markers.write_bytes(markers.read_bytes()[:100]), f"{damaged}: damaged"),
        "a file missing": (markers.unlink, f"{damaged}: damaged"),
        "no files folder": (lambda: shutil.rmtree(damaged / "files"), f"{damaged / 'files'}: cannot read"),
        "a folder among the files": (lambda: (damaged / "files" / "sub").mkdir(), f"{damaged / 'files' / 'sub'}: cannot read"),
        "session.json not UTF-8": (lambda: (damaged / META).write_bytes(b'\xff{"serial": 1}'), f"{damaged / META}: not UTF-8 text"),
        "session.json cut short": (lambda: (damaged / META).write_text('{"serial": "x", "ke'), f"{damaged / META}, line 1: not valid JSON"),
        "session.json a list": (lambda: (damaged / META).write_text("[]"), f"{damaged / META}: expected a mapping"),
    }
    for case, (damage, message) in damages.items():
        damage()
        code, _, err = station()
        assert code == 2 and err.startswith(f"error: {message}") and err.count("\n") == 1, (case, err)
        assert uploaded() == [], case  # every pending session is checked before any is uploaded
        spool_session(spool, prefix + "-1", recorded[prefix + "-1"])  # recorded again: repaired
    (spool / "junk").mkdir()
    (spool / "junk" / META).write_text("{}")
    code, _, err = station()
    assert code == 2 and err.startswith(f"error: {spool / 'junk' / META}, field 'serial'") and err.count("\n") == 1, err
    (spool / "junk" / META).unlink()
    code, out, err = station()
    assert code == 0 and "uploaded 3 sessions" in out, err
    code, out, err = station()
    assert code == 0 and "uploaded 0 sessions" in out, err
    assert uploaded() == sorted(recorded)
    code, _, err = station(spool / "notes.txt")
    assert code == 2 and err == f"error: {spool / 'notes.txt'}: not a folder (the spool is the folder of recorded sessions)\n", err
