"""Job code for the service's fault tests: a slow stand-in for the calibration, so a kill lands mid-job."""

from __future__ import annotations

import time

from robocal.fleet.store.models import Result


def slow_result(engine, session_id: int) -> Result:
    time.sleep(0.3)
    return Result(session_id=session_id, parameters=[], report="{}", urdf=None, verdict={"status": "pass", "reasons": []})
