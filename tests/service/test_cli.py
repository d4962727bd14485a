"""The command line: `robocal serve token create`, `robocal serve` on loopback (a subprocess) and
`robocal station` with simulated sources against it (recorded, uploaded with the clock offset, a rerun
uploads nothing); bad options and an unreachable server are one error line with exit code 2, the
recorded sessions kept in the spool. The commands other than serve run in-process (robocal.cli.main)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

from robocal import cli
from robocal.fleet.store import open_store
from robocal.service.auth import verify
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
