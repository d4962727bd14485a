"""The result folder of `robocal calibrate`, and reading it back for `robocal evaluate`.

- report.json: parameters, before/after metrics, solver and identifiability summary;
- frames.yaml: every problem frame as xyz + rpy + quaternion, for the baseline and the
  calibrated fit, and the `initial` pose both are expressed relative to;
- calibrated.urdf (when the problem has a `robot:`): the input URDF with the calibrated joint
  origins changed (lossless), or, for a DH-table robot, a URDF generated from the calibrated table;
  for a mobile base with `drive.wheels`, also its wheel radii, wheelbase and sensor poses
  (robocal.mobile.urdf);
- calibrated_sensors.yaml (when the problem has `sensors:`): the joint sensor file with the
  calibrated offsets and gains;
- report.html: tables and plots;
- <measurement name>.png: a measurement's own before/after figure, where it has one (e.g. the
  predicted ball centers per socket of a `socket` measurement).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from pydantic import BaseModel, Field, RootModel

from robocal.analysis.gauge import TWISTS
from robocal.calibration import Calibration
from robocal.errors import InputError
from robocal.kinematics import transforms as tf
from robocal.kinematics.urdf import write_calibrated_urdf, write_urdf
from robocal.outputs import file_stem
from robocal.provenance import fingerprints
from robocal.validation import Number, Vec3, load_yaml_model, read_json, validate_mapping


def _pose(t: np.ndarray) -> dict:
    return {
        "xyz": [float(v) for v in t[:3, 3]],
        "rpy": [float(v) for v in tf.matrix_to_rpy(t[:3, :3])],
        "quaternion_wxyz": [float(v) for v in tf.matrix_to_quaternion(t[:3, :3])],
    }


def _from_pose(d: dict) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = np.asarray(tf.rpy_to_matrix(np.asarray(d["rpy"], dtype=float)))
    t[:3, 3] = d["xyz"]
    return t


def write_results(cal: Calibration, out: Path, figures: bool = True) -> list[Path]:
    """The result files in `out` (module doc); `figures=False` leaves out report.html and the
    measurements' plots (the fleet keeps report.json and the URDF, and renders its own pages)."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json", out / "frames.yaml"]
    written[0].write_text(report_json(cal))
    header = "# Frames estimated by robocal: pose of the frame as xyz (m), URDF rpy (rad) and quaternion.\n# std_local: std of the 6 local corrections (dx, dy, dz in m, rotation vector in rad) about `initial`.\n"
    written[1].write_text(header + yaml.safe_dump(reported_frames(cal), sort_keys=False))
    urdf = write_calibrated_robot(cal, out / "calibrated.urdf")
    written += [urdf] if urdf is not None else []
    robot = cal.problem.robot
    sensors = robot.calibrated_sensors(cal.estimate[cal.problem.layout.blocks["robot"]]) if urdf is not None and robot is not None else None
    if sensors is not None:
        written.append(out / "calibrated_sensors.yaml")
        source = sensors.source.name if sensors.source is not None else "the robot"
        sensors.write(written[-1], f"# The joint sensor model of {source}, calibrated by robocal (problem {cal.problem.path.name}).\n")
    if figures:
        from robocal import svg
        from robocal.report.html import measurement_figures, write_html_report

        plots = measurement_figures(cal)
        written.insert(2, out / "report.html")
        write_html_report(cal, written[2], plots)
        for name, drawing in plots.items():
            written.append(out / (file_stem(name) + ".svg"))
            written[-1].write_text(svg.standalone(drawing), encoding="utf-8")
    return written


def report_json(cal: Calibration) -> str:
    """The text of report.json: the calibration's report and its inputs' SHA-256."""
    report = cal.report()
    report["inputs"] = fingerprints(cal.problem)
    return json.dumps(report, indent=2) + "\n"


def reported_frames(cal: Calibration) -> dict:
    """frames.yaml's content: each problem frame's initial, baseline and calibrated pose; an
    InputError where a frame has no initial pose."""
    problem, frames = cal.problem, {}
    for name, frame in problem.frames.items():
        if frame.initial is None:
            raise InputError(problem.path, f"frame '{name}' has no initial pose to report")
        std = dict(zip(("dx", "dy", "dz", "rx", "ry", "rz"), cal.solution.std[frame.block].tolist())) if frame.block is not None else None
        frames[name] = {
            "initial": _pose(frame.initial),
            "baseline": _pose(frame.estimate(cal.baseline)),
            "calibrated": _pose(frame.estimate(cal.estimate)),
            "std_local": std,
        }
    return frames


def write_calibrated_robot(cal: Calibration, path: Path) -> Path | None:
    """The calibrated URDF at `path` (module doc), where the problem has a `robot:`; else None."""
    problem = cal.problem
    robot, tree = problem.robot, problem.tree
    if tree is None or robot is None:
        return None
    origins = robot.urdf_origins(cal.estimate[problem.layout.blocks["robot"]])
    if tree.source_kind == "urdf" and tree.source is not None:
        # a mobile base with `drive.wheels`: its wheels, axle and sensor mounts as well (robocal.mobile.urdf)
        base, radii = problem.base_urdf.changes(dict(zip(problem.layout.names, map(float, cal.estimate)))) if problem.base_urdf else ({}, None)
        write_calibrated_urdf(tree.source, path, {**origins, **base}, radii)
    else:
        write_urdf(tree, path, origins)
    return path


@dataclass(frozen=True)
class StoredResult:
    frame_initials: dict[str, np.ndarray]
    baseline: dict[str, float]
    estimate: dict[str, float]
    inputs: dict[str, dict[str, str]] | None  # report.json `inputs`: role -> path, sha256 (None: an older result)
    gauge_twists: np.ndarray | None  # (k, 6) report.json `gauge`'s twists, the gauge the fit fixed (None: none)
    report: Path  # the report.json read

    def vectors(self, names: list[str], nominal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(baseline, estimate) vectors in a problem's parameter order; absent names (held at
        nominal by the fit: parameters.select) keep nominal. A stored parameter the problem does
        not have is an InputError: the result was fitted with other parameters, and dropping its
        value would evaluate another model than the one fitted."""
        known = set(names)
        foreign = [name for name in self.estimate if name not in known]
        if foreign:
            listed = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise InputError(
                self.report, f"{listed}: not parameters of this problem; the result was fitted with other parameters (calibrate this problem again)"
            )
        before, after = nominal.copy(), nominal.copy()
        for i, name in enumerate(names):
            if name in self.estimate:
                before[i], after[i] = self.baseline[name], self.estimate[name]
        return before, after


class InputFile(BaseModel):
    """One input file of report.json `inputs` (provenance.fingerprints)."""

    path: str
    sha256: str = Field(pattern="^[0-9a-f]{64}$")


class StoredParameter(BaseModel):
    name: str
    baseline: Number
    estimate: Number


class StoredTwist(BaseModel):
    """A gauge direction's rigid motion, in the order of `TWISTS`."""

    dx: Number
    dy: Number
    dz: Number
    rx: Number
    ry: Number
    rz: Number


class StoredDirection(BaseModel):
    twist: StoredTwist


class StoredGauge(BaseModel):
    directions: list[StoredDirection]


class StoredReport(BaseModel):
    """report.json as `read_results` reads it, checked by field name: the parameters' values, the
    gauge's twists and the `inputs` block (compared with a problem's files; absent from a report of
    an older robocal). The other fields (measurements, solver, verdict, ...) are for people and
    other programs; robocal never reads them back, so their content cannot mislead it and is not
    checked (a hand-edited verdict must not make a sound result unusable)."""

    parameters: list[StoredParameter]
    gauge: StoredGauge | None = None
    inputs: dict[str, InputFile] = Field(default_factory=dict)  # None is no value of it: null in the file is an error, absence is not


class StoredPose(BaseModel):
    xyz: Vec3
    rpy: Vec3


class StoredFrame(BaseModel):
    initial: StoredPose


class StoredFrames(RootModel[dict[str, StoredFrame]]):
    """frames.yaml as `read_results` reads it: each frame's `initial` pose (the other poses are for people)."""


def read_results(folder: Path) -> StoredResult:
    """The result folder of `robocal calibrate` (module doc); a missing, unreadable or damaged
    report.json or frames.yaml is an InputError naming the file (and the field). A report without
    `inputs` (written by an older robocal) reads as `inputs` None."""
    report_path, frames_path = folder / "report.json", folder / "frames.yaml"
    for path in (report_path, frames_path):
        if not path.exists():
            raise InputError(path, "missing; is this the output folder of `robocal calibrate`?")
    report = validate_mapping(report_path, read_json(report_path), StoredReport)
    baseline = {p.name: p.baseline for p in report.parameters}
    estimate = {p.name: p.estimate for p in report.parameters}
    twists = np.array([[getattr(d.twist, name) for name in TWISTS] for d in report.gauge.directions]) if report.gauge is not None else None
    inputs = {role: entry.model_dump() for role, entry in report.inputs.items()} if "inputs" in report.model_fields_set else None
    frames = load_yaml_model(frames_path, StoredFrames).root
    initials = {name: _from_pose(frame.initial.model_dump()) for name, frame in frames.items()}
    return StoredResult(initials, baseline, estimate, inputs, twists, report_path)
