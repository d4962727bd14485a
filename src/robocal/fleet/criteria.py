"""Performance criteria of a robot model and the verdict on one unit: pass / rework / fail, with
every reason. Judged from the core's report (`Calibration.report()`), in one function, `judge`,
on top of the calibration's own verdict (robocal.analysis.verdict), which says whether the result
can be trusted at all:

- fail: the calibration's verdict is `fail` (its fail findings are the reasons: not converged, a
  model that does not explain the data, ...); a measurement's calibrated rms error exceeds
  `max_rms` (the unit cannot reach its accuracy).
- rework: the calibration's verdict is `warning` (a result no one should ship unseen: its warnings
  are the reasons); a robot parameter deviates from nominal beyond the manufacturing `tolerance` by
  more than `sigmas` posterior standard deviations (an offset slipped, a link bent: fix the unit,
  recalibrate); more than `max_rejected_share` of the rows rejected as outliers (measuring system
  to check).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from robocal.parameters import Kind
from robocal.validation import Number, Positive, read_yaml, validate_mapping

CRITERIA = "criteria.yaml"  # beside problem.yaml in a session folder


class Criteria(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tolerance: dict[Kind, Annotated[Number, Field(ge=0)]] = Field(default_factory=dict)  # parameter kind (translation, rotation, joint_offset, ...) -> m or rad
    sigmas: Positive = 3.0
    max_rms: Positive | None = None  # m
    max_rejected_share: Annotated[Number, Field(ge=0, le=1)] = 0.05


def load_criteria(path: Path) -> Criteria:
    """A criteria file (YAML); defaults where the session folder has none (or it is empty). A file that
    cannot be read, is not UTF-8, not YAML or not criteria is an InputError naming it."""
    if not path.exists():
        return Criteria()
    return validate_mapping(path, read_yaml(path, "the criteria file") or {}, Criteria)


@dataclass
class Verdict:
    status: str  # pass | rework | fail
    reasons: list[str] = field(default_factory=list)


def judge(report: dict, kinds: Mapping[str, Kind], criteria: Criteria) -> Verdict:
    """The verdict on one calibration report; `kinds`: parameter name -> kind (of the problem's layout)."""
    fail: list[str] = []
    rework: list[str] = []
    for finding in report["verdict"]["findings"]:
        {"fail": fail, "warning": rework}.get(finding["level"], []).append(f"{finding['code']}: {finding['sentence']}")
    for m in report["measurements"]:
        rms = m["after"]["rms"]
        if criteria.max_rms is not None and rms > criteria.max_rms:
            fail.append(f"{m['name']}: rms error {rms * 1e3:.3f} mm > {criteria.max_rms * 1e3:.3f} mm")
        share = m["rejected"] / max(m["rejected"] + m["n"], 1)
        if share > criteria.max_rejected_share:
            rework.append(f"{m['name']}: {share:.0%} of rows rejected (> {criteria.max_rejected_share:.0%}); check the measuring system")
    for p in report["parameters"]:
        kind = kinds.get(p["name"])
        tolerance = None if kind is None else criteria.tolerance.get(kind)
        if tolerance is None:
            continue
        deviation, std = abs(p["estimate"] - p["nominal"]), p["std"] or 0.0
        if deviation - criteria.sigmas * std > tolerance:
            rework.append(f"{p['name']}: {p['estimate'] - p['nominal']:+.4g} {p['unit']} from nominal, tolerance {tolerance:g} (std {std:.2g})")
    return Verdict("fail" if fail else "rework" if rework else "pass", fail + rework)
