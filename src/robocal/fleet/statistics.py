"""What a batch says that no single unit does: yield per model and station, the spread of every
parameter across units with the outlying units named, a parameter biased across the whole batch
(a production-line error, not a unit's), and each unit's drift between its sessions.

Robust statistics throughout: a unit is an outlier when its deviation from nominal lies more than
`OUTLIER` scaled median absolute deviations (1.4826 MAD estimates the standard deviation of a
normal sample) from the batch median, so the defective units do not hide themselves by inflating
the spread they are judged against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sqlalchemy as sa
from sqlalchemy import Engine
from sqlalchemy.orm import Session as DbSession

from robocal.fleet.store import stored_json
from robocal.fleet.store.jobs import verdict_status
from robocal.fleet.store.models import FleetModel, Result, Session, Station, Unit

OUTLIER = 5.0  # scaled MADs from the batch median
BIAS = 3.0  # standard errors of the batch mean from zero


@dataclass(frozen=True)
class UnitResult:
    serial: str
    session: int
    model: str
    station: str
    verdict: str
    parameters: list[dict]  # Calibration.parameters(): name, unit, nominal, estimate, std
    rms: float  # m, the largest calibrated rms over the session's measurements


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parameter(p: object) -> bool:
    """Whether `p` is one of `Calibration.parameters()`: its name, unit, nominal, estimate and std (None where unknown)."""
    return (
        isinstance(p, dict)
        and isinstance(p.get("name"), str)
        and isinstance(p.get("unit"), str)
        and _number(p.get("nominal"))
        and _number(p.get("estimate"))
        and (p.get("std") is None or _number(p.get("std")))
    )


def _parameters(value: object) -> list[dict]:
    """A result's stored parameters; ValueError where they are not what `Calibration.parameters()` wrote."""
    if not isinstance(value, list) or not all(_parameter(p) for p in value):
        raise ValueError("not a list of parameters, each with its name, unit, nominal, estimate and std")
    return value


def _rms(report: object) -> float:
    """The largest calibrated rms over a stored report's measurements (NaN without any)."""
    if not isinstance(report, dict):
        raise ValueError("not a report")
    values = [m["after"][m["headline"]] for m in report["measurements"]]
    if not all(_number(v) for v in values):
        raise ValueError("a measurement's calibrated error is not a number")
    return max(values, default=math.nan)


def results(engine: Engine) -> list[UnitResult]:
    """Every stored result, oldest first; a damaged one is a RobocalError naming its row."""
    query = (
        sa.select(
            Unit.serial,
            Session.id,
            FleetModel.name,
            Station.name,
            Result.id,
            sa.cast(Result.verdict, sa.Text),
            sa.cast(Result.parameters, sa.Text),
            Result.report,
        )
        .join(Session, Session.unit_id == Unit.id)
        .join(Result, Result.session_id == Session.id)
        .outerjoin(FleetModel, FleetModel.id == Session.model_id)
        .outerjoin(Station, Station.id == Session.station_id)
        .order_by(Result.created, Result.id)
    )
    with DbSession(engine) as db:
        return [
            UnitResult(
                serial,
                session,
                model or "-",
                station or "-",
                stored_json(engine, "results", row_id, "verdict", verdict, verdict_status),
                stored_json(engine, "results", row_id, "parameters", parameters, _parameters),
                float(stored_json(engine, "results", row_id, "report", report, _rms)),
            )
            for serial, session, model, station, row_id, verdict, parameters, report in db.execute(query)
        ]


def latest(rows: list[UnitResult]) -> list[UnitResult]:
    """Each unit's most recent result."""
    return list({r.serial: r for r in rows}.values())


def yields(rows: list[UnitResult]) -> dict[str, dict[str, float]]:
    """'model @ station' -> counts per verdict and the share that passed."""
    groups: dict[str, dict[str, float]] = {}
    for r in rows:
        group = groups.setdefault(f"{r.model} @ {r.station}", {"pass": 0, "rework": 0, "fail": 0})
        group[r.verdict] = group.get(r.verdict, 0) + 1
    return {k: {**v, "yield": v["pass"] / max(sum(v.values()), 1)} for k, v in sorted(groups.items())}


@dataclass(frozen=True)
class Spread:
    name: str
    unit: str
    deviations: np.ndarray  # (units,) estimate - nominal, in the order of `serials`
    serials: tuple[str, ...]
    outliers: tuple[str, ...]  # units beyond OUTLIER scaled MADs
    mean: float
    standard_error: float

    @property
    def biased(self) -> bool:
        """The batch mean is off zero by more than BIAS standard errors of the units that are not outliers."""
        return len(self.deviations) >= 3 and abs(self.mean) > BIAS * self.standard_error


def spreads(rows: list[UnitResult]) -> list[Spread]:
    """Per parameter, its deviations across the units' latest results."""
    values: dict[tuple[str, str], dict[str, float]] = {}
    for r in latest(rows):
        for p in r.parameters:
            values.setdefault((p["name"], p["unit"]), {})[r.serial] = p["estimate"] - p["nominal"]
    found = []
    for (name, unit), by_unit in values.items():
        serials, x = tuple(by_unit), np.array(list(by_unit.values()))
        median = np.median(x)
        scale = 1.4826 * np.median(np.abs(x - median))
        far = np.abs(x - median) > OUTLIER * scale if scale > 0 else np.zeros(len(x), bool)
        inliers = x[~far]
        error = float(inliers.std(ddof=1) / np.sqrt(len(inliers))) if len(inliers) > 1 else float("inf")
        found.append(Spread(name, unit, x, serials, tuple(s for s, f in zip(serials, far) if f), float(inliers.mean()), error))
    return found


@dataclass(frozen=True)
class Drift:
    serial: str
    name: str
    unit: str
    change: float  # latest estimate minus the previous session's
    sigmas: float  # |change| over the two estimates' combined std


def drifts(rows: list[UnitResult], threshold: float = 3.0) -> list[Drift]:
    """Parameters of a unit that moved between its last two sessions by more than `threshold`
    combined standard deviations (a unit whose calibration does not hold)."""
    sessions: dict[str, list[UnitResult]] = {}
    for r in rows:
        sessions.setdefault(r.serial, []).append(r)
    found = []
    for serial, history in sessions.items():
        if len(history) < 2:
            continue
        before = {p["name"]: p for p in history[-2].parameters}
        for p in history[-1].parameters:
            q = before.get(p["name"])
            if q is None:
                continue
            change, std = p["estimate"] - q["estimate"], float(np.hypot(p["std"] or 0.0, q["std"] or 0.0))
            sigmas = abs(change) / std if std > 0 else float("inf") if change else 0.0
            if sigmas > threshold:
                found.append(Drift(serial, p["name"], p["unit"], change, sigmas))
    return found
