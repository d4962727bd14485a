"""The station agent: records sessions from a source into a spool folder first, then uploads them
(bulky data goes up after recording). Each spooled session keeps its Idempotency-Key, derived from
its content, so an upload interrupted or retried after a lost answer is stored once; a later run
uploads what is left (the spool is the resume state). The clock offset to the server (NTP-style) is
estimated once per run and sent with every session."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from robocal.errors import RobocalError
from robocal.service.clock import estimate_offset

META, DONE = "session.json", "uploaded.json"


def spool_session(spool: Path, serial: str, files: dict[str, bytes]) -> Path:
    """Write one recorded session under `spool` (a folder named by serial and content); returns it."""
    digest = hashlib.sha256(json.dumps([serial, sorted((n, hashlib.sha256(c).hexdigest()) for n, c in files.items())]).encode()).hexdigest()
    folder = spool / f"{serial}-{digest[:12]}"
    (folder / "files").mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / "files" / name).write_bytes(content)
    (folder / META).write_text(json.dumps({"serial": serial, "key": digest[:40]}))  # written last: the session is complete
    return folder


@dataclass
class Agent:
    url: str
    token: str
    model: str
    spool: Path
    clock: Callable[[], float] = time.time  # the station's clock
    retries: int = 6  # per session, on transport errors and 5xx answers, with exponential backoff
    offset: tuple[float, float] = field(default=(float("nan"), float("nan")), init=False)  # (station minus server clock, delay), s; set by upload_pending

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60)

    def record(self, source) -> list[Path]:
        """Spool every session of `source`."""
        return [spool_session(self.spool, serial, files) for serial, files in source.sessions()]

    def pending(self) -> list[Path]:
        return sorted(p.parent for p in self.spool.glob(f"*/{META}") if not (p.parent / DONE).exists())

    def upload_pending(self, progress: Callable[[dict], None] | None = None) -> list[dict]:
        """Upload every spooled session not yet acknowledged; the server's answers, in order."""
        answers = []
        with self.client() as client:
            try:
                self.offset = estimate_offset(client, self.clock)
            except httpx.HTTPError as exc:
                raise RobocalError(f"{self.url}: cannot reach the service ({type(exc).__name__}: {exc}); the recorded sessions stay in {self.spool}") from None
            for folder in self.pending():
                answer = self.upload(client, folder)
                (folder / DONE).write_text(json.dumps(answer))
                answers.append(answer)
                if progress is not None:
                    progress(answer)
        return answers

    def upload(self, client: httpx.Client, folder: Path) -> dict:
        meta = json.loads((folder / META).read_text())
        parts = [("files", (p.name, p.read_bytes(), "application/octet-stream")) for p in sorted((folder / "files").iterdir())]
        data = {"serial": meta["serial"], "model": self.model, "clock_offset": repr(self.offset[0])}
        for attempt in range(self.retries + 1):
            try:
                answer = client.post("/api/sessions", data=data, files=parts, headers={"Idempotency-Key": meta["key"]})
            except httpx.TransportError as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if answer.status_code in (200, 201):
                    return answer.json()
                if answer.status_code < 500:
                    raise RobocalError(f"{folder}: the server refused the session ({answer.status_code}): {answer.text[:300]}")
                failure = f"HTTP {answer.status_code}"
            time.sleep(min(0.2 * 2**attempt, 5.0))
        raise RobocalError(f"{folder}: upload failed {self.retries + 1} times, last: {failure}; run the agent again to resume")
