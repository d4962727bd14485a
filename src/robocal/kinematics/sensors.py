"""Joint sensors: the joint values that raw sensor readings stand for (a data glove, or encoders
with an unknown gain).

Every actuated joint of the robot is a linear function of the raw readings,

    q_k = offset_k + sum_s gain_ks * raw_s,

the glove seed's Eq. 3 (one sensor per joint) and Eq. 4 (sensors cross-coupled over several joints,
and a joint no sensor reads directly, such as the thumb's twist, driven by its neighbours'
sensors). Which sensor drives which joint, and with what nominal gain, is data: a YAML file
(format in docs/formats.md), so a new glove layout is a new file. Every offset and every declared
gain is a calibration parameter (`<joint>.offset`, `<joint>.gain.<sensor>`); a gain that is not
declared is zero and stays zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from pydantic import Field

from robocal.errors import InputError
from robocal.kinematics.dh import Num
from robocal.parameters import Parameter
from robocal.validation import Strict, load_yaml_model


class JointSensing(Strict):
    offset: Num = Field(0.0, description="joint value (rad or m) at raw readings of zero")
    gains: dict[str, Num] = Field(default_factory=dict, description="sensor name -> joint units per raw unit")


class SensorFile(Strict):
    name: str
    raw_unit: str = Field("count", description="what one raw unit is, for reports")
    sensors: list[str] = Field(min_length=1, description="sensor names, which are also the data columns")
    joints: dict[str, JointSensing] = Field(min_length=1)


class JointSensors:
    """The linear sensor model of a robot's actuated joints, rows in a given joint order."""

    def __init__(self, spec: SensorFile, joints: tuple[str, ...], source: Path | None = None):
        """`joints`: the robot's actuated joints, in configuration order; each must be in `spec`."""
        self.spec, self.source, self.joints = spec, source, tuple(joints)
        self.sensors = tuple(spec.sensors)
        self.offsets = np.array([spec.joints[j].offset for j in joints], dtype=float)
        self.gains = np.zeros((len(joints), len(self.sensors)))
        self.terms = np.zeros(self.gains.shape, bool)  # declared gains: the calibration parameters
        for k, joint in enumerate(joints):
            for sensor, gain in spec.joints[joint].gains.items():
                s = self.sensors.index(sensor)
                self.gains[k, s], self.terms[k, s] = gain, True

    @classmethod
    def load(cls, path: str | Path, joints: tuple[str, ...]) -> JointSensors:
        """The sensor file at `path` for a robot whose actuated joints are `joints`; every actuated
        joint must be listed there, and nothing else."""
        path = Path(path)
        spec = load_yaml_model(path, SensorFile)
        for i, sensor in enumerate(spec.sensors):
            if sensor in spec.sensors[:i]:
                raise InputError(path, f"sensor '{sensor}' listed twice", field=f"sensors[{i}]")
        for joint, sensing in spec.joints.items():
            for sensor in sensing.gains:
                if sensor not in spec.sensors:
                    raise InputError(path, f"unknown sensor '{sensor}' (not in sensors:)", field=f"joints.{joint}.gains.{sensor}")
        missing = [j for j in joints if j not in spec.joints]
        if missing:
            raise InputError(path, f"no sensing given for actuated joint(s) {', '.join(missing)}", field="joints")
        unknown = [j for j in spec.joints if j not in joints]
        if unknown:
            raise InputError(path, f"'{unknown[0]}' is not an actuated joint of the robot", field=f"joints.{unknown[0]}")
        return cls(spec, joints, path)

    def parameters(self) -> list[tuple[Parameter, int, int | None]]:
        """(parameter, joint row, sensor column or None for the offset), joint by joint."""
        out: list[tuple[Parameter, int, int | None]] = []
        unit = f"rad/{self.spec.raw_unit}"
        for k, joint in enumerate(self.joints):
            out.append((Parameter(f"{joint}.offset", "joint_offset", float(self.offsets[k]), unit="rad"), k, None))
            for s in np.flatnonzero(self.terms[k]):
                out.append((Parameter(f"{joint}.gain.{self.sensors[s]}", "gain", float(self.gains[k, s]), unit=unit), k, int(s)))
        return out

    def driven_by(self, joints) -> tuple[str, ...]:
        """The sensors that drive any of `joints` (the data columns they need), in sensor order."""
        rows = [self.joints.index(j) for j in joints]
        used = np.asarray(self.terms[rows].any(axis=0)) if rows else np.zeros(len(self.sensors), bool)
        return tuple(s for s, u in zip(self.sensors, used) if u)

    def with_values(self, offsets: np.ndarray, gains: np.ndarray) -> JointSensors:
        """The same layout with other offsets (per joint) and gains (declared terms only)."""
        joints = {}
        for k, joint in enumerate(self.joints):
            terms = {self.sensors[s]: float(gains[k, s]) for s in np.flatnonzero(self.terms[k])}
            joints[joint] = JointSensing(offset=float(offsets[k]), gains=terms)
        return JointSensors(self.spec.model_copy(update={"joints": joints}), self.joints, self.source)

    def write(self, path: Path, header: str = "") -> None:
        """The sensor file, in the format `load` reads."""
        joints: dict[str, dict[str, float | dict[str, float]]] = {}
        body = {"name": self.spec.name, "raw_unit": self.spec.raw_unit, "sensors": list(self.sensors), "joints": joints}
        for k, joint in enumerate(self.joints):
            entry: dict[str, float | dict[str, float]] = {"offset": float(self.offsets[k])}
            if self.terms[k].any():
                entry["gains"] = {self.sensors[s]: float(self.gains[k, s]) for s in np.flatnonzero(self.terms[k])}
            joints[joint] = entry
        path.write_text(header + yaml.safe_dump(body, sort_keys=False))

    def joint_values(self, raw: np.ndarray) -> np.ndarray:
        """(..., n_joints) joint values of raw readings (..., n_sensors) at the file's values."""
        return self.offsets + np.asarray(raw, dtype=float) @ self.gains.T
