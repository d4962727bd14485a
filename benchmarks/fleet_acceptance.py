"""Issue 20's acceptance run: a simulated batch of the 6-joint arm (examples/fleet/arm_6r.urdf, 40
marker postures per unit, a share of units with one joint offset slipped by 20 mrad) through
`robocal fleet init`, `robocal fleet ingest` and `robocal fleet run`, as a user runs them (whole
processes), twice, each time into a new store.

Run from the repository root:

    .venv/bin/python benchmarks/fleet_acceptance.py [--units 1000] [--defect-share 0.03] [--seed 0] [-- fleet run options]

Prints the share of defective units caught (verdict rework or fail), the share of good units
flagged, the verdict counts, the time of each step, and whether the second run gave exactly the
results of the first (verdicts with their reasons, parameters, and report.json but for its
timings and the temporary paths it names). Exit status 1 when the issue's acceptance is not met:
>= 99 % of the defects caught, <= 1 % of the good units flagged, the two runs identical.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store import open_store
from robocal.fleet.store.models import Result, Session
from timing import cpu_name

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "examples" / "fleet" / "arm_6r.urdf"


def robocal(*args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "robocal", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"robocal {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def comparable(report: str) -> dict:
    """report.json without what differs between two runs of the same data: the solver's timings
    and the paths of the temporary session folder (the inputs keep their SHA-256)."""
    data = json.loads(report)
    data.pop("problem", None)
    for key in ("seconds", "compile_seconds"):
        data["solver"].pop(key, None)
    data["inputs"] = {role: entry["sha256"] for role, entry in data.get("inputs", {}).items()}
    return data


def results(db: Path) -> dict[str, tuple]:
    with DbSession(open_store(db)) as session:
        rows = session.execute(sa.select(Session.name, Result.verdict, Result.parameters, Result.report).join(Result, Result.session_id == Session.id))
        return {name: (verdict, parameters, comparable(report)) for name, verdict, parameters, report in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--defect-share", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("run_options", nargs="*", help="options of `robocal fleet run` (after --), e.g. --engine pool --workers 2")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="robocal-fleet-acceptance-"))
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cpu_name()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    sessions = work / "sessions"
    seconds = robocal(
        "simulate",
        "fleet",
        "--robot",
        str(ARM),
        "--units",
        str(args.units),
        "--defect-share",
        str(args.defect_share),
        "--seed",
        str(args.seed),
        "--out",
        str(sessions),
    )
    print(f"simulate fleet: {args.units} units in {seconds:.1f} s")
    truth = json.loads((sessions / "truth.json").read_text())["units"]
    runs = []
    for k in (1, 2):
        db = str(work / f"run{k}.db")
        times = [
            robocal("fleet", "init", "--db", db),
            robocal("fleet", "ingest", str(sessions), "--db", db),
            robocal("fleet", "run", "--db", db, *args.run_options),
        ]
        print(
            f"run {k}: init {times[0]:.1f} s, ingest {times[1]:.1f} s, run {times[2]:.1f} s ({1e3 * times[2] / args.units:.1f} ms per unit), load {os.getloadavg()[0]:.1f}"
        )
        runs.append(results(Path(db)))
    first, second = runs
    defective = [s for s in truth if truth[s]["defective"]]
    good = [s for s in truth if not truth[s]["defective"]]
    caught = [s for s in defective if first[s][0]["status"] != "pass"]
    flagged = [s for s in good if first[s][0]["status"] != "pass"]
    counts = {status: sum(v[0]["status"] == status for v in first.values()) for status in ("pass", "rework", "fail")}
    same = sorted(first) == sorted(second) and all(first[s] == second[s] for s in first)
    print(f"judged {len(first)} of {len(truth)} units: {counts}")
    print(f"defective caught: {len(caught)}/{len(defective)} = {100 * len(caught) / max(len(defective), 1):.1f} % (target >= 99 %)")
    print(
        f"good units flagged: {len(flagged)}/{len(good)} = {100 * len(flagged) / max(len(good), 1):.2f} % (target <= 1 %)" + (f": {flagged}" if flagged else "")
    )
    missed = [s for s in defective if s not in caught]
    if missed:
        print("missed: " + ", ".join(f"{s} ({truth[s]['slipped_joint']})" for s in missed))
    print(f"second run identical to the first (verdicts, reasons, parameters, reports): {same}")
    ok = len(first) == len(truth) and len(caught) >= 0.99 * len(defective) and len(flagged) <= 0.01 * len(good) and same
    print(f"acceptance {'met' if ok else 'NOT met'}; work folder: {work}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
