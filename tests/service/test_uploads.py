"""store_upload when concurrent uploads keep beating it to a unique row: a 503 the station agent
retries, never a 500."""

from __future__ import annotations

import contextlib

import pytest
from fastapi import HTTPException
from sqlalchemy.exc import IntegrityError

from robocal.service import uploads


class Transactions:
    """A database session stand-in whose transactions only count themselves."""

    def __init__(self) -> None:
        self.begun = 0

    def begin(self):
        self.begun += 1
        return contextlib.nullcontext()


def test_a_race_lost_every_time_answers_503_with_retry_after(monkeypatch):
    def lose(*args):
        raise IntegrityError("INSERT INTO blob", {}, Exception("UNIQUE constraint failed: blob.sha256"))

    monkeypatch.setattr(uploads, "_store_once", lose)
    db = Transactions()
    with pytest.raises(HTTPException) as refused:
        uploads.store_upload(db, 1, None, "unit-1", {"problem.yaml": b"robot: robot.urdf"}, "key-1", None)
    assert refused.value.status_code == 503
    assert refused.value.headers == {"Retry-After": "1"}
    assert db.begun == uploads.ATTEMPTS


def test_a_race_lost_once_is_tried_again(monkeypatch):
    outcomes = iter([IntegrityError("INSERT INTO blob", {}, Exception("UNIQUE")), {"session": 7}])

    def once(*args):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(uploads, "_store_once", once)
    db = Transactions()
    assert uploads.store_upload(db, 1, None, "unit-1", {"problem.yaml": b"robot: robot.urdf"}, None, None) == {"session": 7}
    assert db.begun == 2
