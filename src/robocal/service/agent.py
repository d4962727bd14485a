"""The station agent: records sessions from a source into a spool folder first, then uploads them
(bulky data goes up after recording). Each spooled session keeps its Idempotency-Key, derived from
its content, so an upload interrupted or retried after a lost answer is stored once; a later run
uploads what is left (the spool is the resume state). A session appears in the spool whole or not
at all (written aside, then renamed into place); every pending session is checked against its key
before any is uploaded, so a damaged one (a file missing or cut short, its session.json unreadable)
is a located error, never sent. The clock offset to the server (NTP-style) is estimated once per run
and sent with every session."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from robocal.errors import InputError, RobocalError
from robocal.outputs import write_atomically
from robocal.service.clock import estimate_offset
from robocal.validation import Strict, load_json_model

META, DONE = "session.json", "uploaded.json"


class Meta(Strict):
    """A spooled session's session.json."""

    serial: str
    key: str  # the Idempotency-Key: the start of `content_digest`


def content_digest(serial: str, files: dict[str, bytes]) -> str:
    return hashlib.sha256(json.dumps([serial, sorted((n, hashlib.sha256(c).hexdigest()) for n, c in files.items())]).encode()).hexdigest()


def spool_session(spool: Path, serial: str, files: dict[str, bytes]) -> Path:
    """Write one recorded session under `spool` (a folder named by serial and content) unless it is
    there already, whole; returns it. Written in a hidden folder beside it, then renamed into place
    (over an incomplete or damaged one: its upload, if any, is answered from the server's record)."""
    digest = content_digest(serial, files)
    folder = spool / f"{serial}-{digest[:12]}"
    if (folder / META).exists():
        try:
            read_spooled(folder)
            return folder
        except InputError:
            pass
    try:
        spool.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=spool))
        (partial / "files").mkdir()
        for name, content in files.items():
            (partial / "files" / name).write_bytes(content)
        (partial / META).write_text(json.dumps({"serial": serial, "key": digest[:40]}))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(partial, folder)
    except OSError as exc:
        raise InputError(spool, f"cannot write the spool ({exc.strerror or exc})") from None
    return folder


def read_spooled(folder: Path) -> tuple[Meta, dict[str, bytes]]:
    """A spooled session's session.json and files, checked against its key: a damaged session (its
    session.json unreadable, a file missing, cut short or changed) is an InputError naming it."""
    meta = load_json_model(folder / META, Meta)
    files: dict[str, bytes] = {}
    try:
        for path in sorted((folder / "files").iterdir()):
            files[path.name] = path.read_bytes()
    except OSError as exc:
        raise InputError(exc.filename or folder, f"cannot read the spooled session ({exc.strerror or exc})") from None
    if content_digest(meta.serial, files)[:40] != meta.key:
        raise InputError(
            folder,
            "damaged: its files are not those it was recorded with (one is missing, cut short or changed); record the session again or remove the folder",
        )
    return meta, files


@dataclass
class Agent:
    url: str
    token: str
    model: str
    spool: Path
    clock: Callable[[], float] = time.time  # the station's clock
    retries: int = 6  # per session, on transport errors and 5xx answers, with exponential backoff
    offset: tuple[float, float] = field(default=(float("nan"), float("nan")), init=False)  # (station minus server clock, delay), s; set by upload_pending

    def __post_init__(self):
        if self.spool.exists() and not self.spool.is_dir():
            raise InputError(self.spool, "not a folder (the spool is the folder of recorded sessions)")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60)

    def record(self, source) -> list[Path]:
        """Spool every session of `source`."""
        return [spool_session(self.spool, serial, files) for serial, files in source.sessions()]

    def pending(self) -> list[Path]:
        return sorted(p.parent for p in self.spool.glob(f"*/{META}") if not p.parent.name.startswith(".") and not (p.parent / DONE).exists())

    def upload_pending(self, progress: Callable[[dict], None] | None = None) -> list[dict]:
        """Upload every spooled session not yet acknowledged (each checked first); the server's answers, in order."""
        for folder in self.pending():
            read_spooled(folder)
        answers = []
        with self.client() as client:
            try:
                self.offset = estimate_offset(client, self.clock)
            except httpx.HTTPError as exc:
                raise RobocalError(f"{self.url}: cannot reach the service ({type(exc).__name__}: {exc}); the recorded sessions stay in {self.spool}") from None
            for folder in self.pending():
                answer = self.upload(client, folder)
                write_atomically(folder / DONE, json.dumps(answer).encode())
                answers.append(answer)
                if progress is not None:
                    progress(answer)
        return answers

    def upload(self, client: httpx.Client, folder: Path) -> dict:
        meta, files = read_spooled(folder)
        parts = [("files", (name, content, "application/octet-stream")) for name, content in files.items()]
        data = {"serial": meta.serial, "model": self.model, "clock_offset": repr(self.offset[0])}
        for attempt in range(self.retries + 1):
            try:
                answer = client.post("/api/sessions", data=data, files=parts, headers={"Idempotency-Key": meta.key})
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
