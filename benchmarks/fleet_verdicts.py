"""Score a fleet run's verdicts against a simulated batch's truth.json.

    robocal simulate fleet --robot examples/fleet/arm_6r.urdf --units 40 --defect-share 0.1 --out batch
    robocal fleet init && robocal fleet ingest batch && robocal fleet run
    python benchmarks/fleet_verdicts.py batch/truth.json robocal.db

Prints the share of defective units caught (rework or fail) and of good units flagged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store import open_store
from robocal.fleet.store.models import Result, Session


def main(truth_file: str, db: str) -> None:
    truth = json.loads(Path(truth_file).read_text())["units"]
    with DbSession(open_store(db)) as session:
        verdicts = {name: v["status"] for name, v in session.execute(sa.select(Session.name, Result.verdict).join(Result, Result.session_id == Session.id))}
    bad = [s for s in truth if truth[s]["defective"] and s in verdicts]
    good = [s for s in truth if not truth[s]["defective"] and s in verdicts]
    caught = sum(verdicts[s] != "pass" for s in bad)
    flagged = sum(verdicts[s] != "pass" for s in good)
    print(f"{len(verdicts)} units judged; defective caught {caught}/{len(bad)}; good flagged {flagged}/{len(good)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
