"""Upload latency of the calibration service under concurrent stations.

    python benchmarks/service_load.py [--stations 50] [--uploads 10] [--size 20000] [--db URL]

Starts `robocal.service` on 127.0.0.1 (a fresh SQLite store in a temporary folder, or --db, which
must be an empty database), no job workers (the upload path alone), creates one station token per
station and lets every station upload its sessions concurrently. Prints the count, errors and
p50 / p95 / max upload latency.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from robocal.fleet.store import open_store
from robocal.service.auth import create_token
from robocal.service.loadgen import run_load

ARM = Path(__file__).resolve().parents[1] / "examples" / "fleet" / "arm_6r.urdf"
SERVER = "import sys; from robocal.service.app import Settings; from robocal.service.server import serve; serve(sys.argv[1], port=int(sys.argv[2]), settings=Settings(workers=0))"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stations", type=int, default=50)
    parser.add_argument("--uploads", type=int, default=10)
    parser.add_argument("--size", type=int, default=20_000, help="bytes of marker data per session")
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp(prefix="robocal-load-")) / "robocal.db")
    engine = open_store(db, create=True)
    admin = create_token(engine, "admin")
    tokens = [create_token(engine, "station", f"line-{k:02d}") for k in range(args.stations)]
    engine.dispose()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-c", SERVER, db, str(port)])
    try:
        for _ in range(600):
            try:
                httpx.get(url + "/api/time", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        model = {"name": "arm6", "urdf": ARM.read_text(), "criteria": ""}
        httpx.post(url + "/api/models", json=model, headers={"Authorization": f"Bearer {admin}"}).raise_for_status()
        start = time.perf_counter()
        load = run_load(url, tokens, args.uploads, args.size)
        wall = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait()
    print(f"{args.stations} stations x {args.uploads} uploads of {args.size} B: {len(load.answers)} stored, {len(load.errors)} errors, {wall:.1f} s")
    print(
        f"upload latency: p50 {1e3 * load.percentile(50):.0f} ms, p95 {1e3 * load.percentile(95):.0f} ms, max {1e3 * max(load.latencies, default=float('nan')):.0f} ms"
    )
    for error in load.errors[:5]:
        print("error:", error)


if __name__ == "__main__":
    main()
