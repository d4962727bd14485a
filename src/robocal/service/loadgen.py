"""Concurrent station uploads against a running service, for the load test and benchmarks/service_load.py:
every station (its own token, thread and connection) uploads `uploads` synthetic sessions, each with
its own Idempotency-Key; the latency of every upload (request sent to answer read) is recorded."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import numpy as np
import yaml

PROBLEM = yaml.safe_dump({"robot": "robot.urdf", "measurements": [{"name": "tool", "type": "markers", "data": "markers.csv", "link": "tool"}]}).encode()


def synthetic_files(serial: str, size: int) -> dict[str, bytes]:
    """A session's files as a station uploads them: problem.yaml and `size` bytes of marker data unique to `serial`."""
    header = f"q1,x,y,z\n# {serial}\n".encode()
    return {"problem.yaml": PROBLEM, "markers.csv": header + b"0" * max(size - len(header), 0)}


@dataclass
class Load:
    latencies: list[float] = field(default_factory=list)  # s, per acknowledged upload
    answers: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.latencies, q)) if self.latencies else float("nan")


def _station(url: str, token: str, station: int, uploads: int, size: int, model: str) -> Load:
    load = Load()
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
        for k in range(uploads):
            serial = f"LOAD-{station:03d}-{k:03d}"
            parts = [("files", (name, content, "application/octet-stream")) for name, content in synthetic_files(serial, size).items()]
            start = time.perf_counter()
            try:
                answer = client.post("/api/sessions", data={"serial": serial, "model": model}, files=parts, headers={"Idempotency-Key": serial})
            except httpx.TransportError as exc:
                load.errors.append(f"{serial}: {type(exc).__name__}: {exc}")
                continue
            if answer.status_code == 201:
                load.latencies.append(time.perf_counter() - start)
                load.answers.append(answer.json())
            else:
                load.errors.append(f"{serial}: HTTP {answer.status_code} {answer.text[:200]}")
    return load


def run_load(url: str, tokens: list[str], uploads: int, size: int = 20_000, model: str = "arm6") -> Load:
    """All stations (one per token) upload concurrently; their results merged."""
    with ThreadPoolExecutor(max_workers=len(tokens)) as pool:
        parts = list(pool.map(lambda args: _station(url, args[1], args[0], uploads, size, model), enumerate(tokens)))
    total = Load()
    for part in parts:
        total.latencies += part.latencies
        total.answers += part.answers
        total.errors += part.errors
    return total
