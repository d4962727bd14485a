"""A differential-drive base's calibration written into its URDF.

A problem with `robot:` (the base's URDF) names the left and right wheel joints in
`drive.wheels` and, in an odometry measurement, the fixed joint whose child link is the sensor
(`sensor.joint`). Checked when the problem is loaded (`base_urdf`), before any data are read;
`BaseUrdf.changes` then gives what calibrated.urdf changes (`write_calibrated_urdf`):

- the base frame of the odometry model (origin at the axle center, x forward) is the wheels'
  parent link (the base link) moved to the middle of the two wheel joints' origins. Its x axis is
  the link's: each wheel's axis must lie along the link's y axis (either sign: the sign only says
  which way the joint counts, which the log's wheel angles already say), within 1 degree;
- wheel radii: the `radius` of every `<cylinder>` in the wheel link's `<collision>` and `<visual>`;
- wheelbase: the two wheel joints' origins move apart along the link's y axis to the calibrated
  wheelbase about their middle, which stays where the URDF puts it (a base symmetric about its
  centreline stays so); their x, z and rpy are kept (the axle height is not a calibrated number);
- sensor pose: the joint's origin gets x, y = axle center + (`<sensor>_x`, `<sensor>_y`) and the
  rpy yaw `<sensor>_yaw` (the 2 pi branch nearest the URDF's own); z, roll and pitch are kept.
  The rpy yaw is the heading of the sensor's x axis on the floor whatever the roll and pitch
  (for |pitch| < 90 degrees), which is what the planar model estimates.

The sensor joint's parent must be the base link, so that its origin is the sensor's pose in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from robocal.errors import InputError
from robocal.kinematics.transforms import rpy_to_matrix
from robocal.kinematics.tree import Joint, KinematicTree
from robocal.kinematics.urdf import link_cylinders, parse_document
from robocal.measurements.odometry import OdometryConfig
from robocal.mobile.se2 import wrap

if TYPE_CHECKING:
    from robocal.problem.schema import ProblemConfig

AXLE_ANGLE = np.deg2rad(1.0)  # rad, largest angle between a wheel's axis and the base link's y axis
SAME_AXLE = 1e-6  # m, largest difference of the two wheel joints' x


@dataclass(frozen=True)
class BaseUrdf:
    """The checked joints and links that calibrated.urdf changes (module doc)."""

    wheels: tuple[Joint, Joint]  # left, right
    sensors: dict[str, Joint]  # parameter prefix (`sensor.name`) -> the sensor's fixed joint

    def changes(self, estimate: dict[str, float]) -> tuple[dict[str, tuple[np.ndarray, np.ndarray | None]], dict[str, float]]:
        """(joint -> new origin (xyz, rpy; rpy None: kept), wheel link -> radius) from the
        calibrated parameters by name."""
        left, right = (np.asarray(j.origin.values, dtype=float) for j in self.wheels)
        center = 0.5 * (left[:2] + right[:2])
        half = 0.5 * estimate["wheelbase"]
        origins: dict[str, tuple[np.ndarray, np.ndarray | None]] = {
            self.wheels[0].name: (np.array([left[0], center[1] + half, left[2]]), None),
            self.wheels[1].name: (np.array([right[0], center[1] - half, right[2]]), None),
        }
        for prefix, joint in self.sensors.items():
            own = np.asarray(joint.origin.values, dtype=float)
            xyz = np.array([center[0] + estimate[f"{prefix}_x"], center[1] + estimate[f"{prefix}_y"], own[2]])
            yaw = own[5] + float(wrap(estimate[f"{prefix}_yaw"] - own[5]))
            origins[joint.name] = (xyz, np.array([own[3], own[4], yaw]))
        radii = {self.wheels[0].child: estimate["wheel_radius_left"], self.wheels[1].child: estimate["wheel_radius_right"]}
        return origins, radii


def base_urdf(path: Path, config: ProblemConfig, tree: KinematicTree | None, calibrated: set[str]) -> BaseUrdf | None:
    """The write-back of problem file `path`, checked against its robot (`tree`, None without
    `robot:`), or None when it names no wheel or sensor joint. `calibrated`: the joints whose
    origins the problem's `parameters` calibrate, which the base's numbers must not also change."""
    sensors = {
        f"measurements[{i}].sensor.joint": (m.sensor.name, m.sensor.joint)
        for i, m in enumerate(config.measurements)
        if isinstance(m, OdometryConfig) and m.sensor.joint is not None
    }
    wheels = config.drive.wheels if config.drive is not None else None
    if wheels is None:
        if sensors:
            raise InputError(path, "the sensor's pose is written relative to the wheels' axle: give `drive.wheels` as well", field=next(iter(sensors)))
        return None
    if tree is None or tree.source_kind != "urdf" or tree.source is None:
        what = "no `robot:`" if tree is None else "a DH table as `robot:`"
        raise InputError(path, f"names joints of the base's URDF, but the problem has {what}: give `robot:` the base's URDF", field="drive.wheels")
    left, right = (_joint(path, tree, name, f"drive.wheels[{i}]", ("revolute", "continuous")) for i, name in enumerate(wheels))
    _check_axle(path, left, right)
    links = parse_document(tree.source).getroot()
    for i, joint in enumerate((left, right)):
        if not link_cylinders(links, joint.child):
            raise InputError(
                path,
                f"wheel link '{joint.child}' of {tree.source.name} has no <cylinder> in its <collision> or <visual>: nowhere to write its radius",
                field=f"drive.wheels[{i}]",
            )
    found: dict[str, Joint] = {}
    for where, (prefix, name) in sensors.items():
        joint = _joint(path, tree, name, where, ("fixed",))
        if joint.parent != left.parent:
            raise InputError(path, f"joint '{joint.name}' hangs from '{joint.parent}', not from the wheels' base link '{left.parent}'", field=where)
        if joint in found.values():
            raise InputError(path, f"joint '{joint.name}' is named by two odometry measurements", field=where)
        found[prefix] = joint
        _not_calibrated(path, joint, calibrated, where)
    for i, joint in enumerate((left, right)):
        _not_calibrated(path, joint, calibrated, f"drive.wheels[{i}]")
    return BaseUrdf((left, right), found)


def _joint(path: Path, tree: KinematicTree, name: str, where: str, types: tuple[str, ...]) -> Joint:
    if name not in tree.joint_index:
        raise InputError(
            path, f"'{name}' is not a joint of {tree.source.name if tree.source else tree.name} (its joints: {', '.join(tree.joint_index)})", field=where
        )
    joint = tree.joint(name)
    if joint.type not in types:
        raise InputError(path, f"joint '{name}' is {joint.type}; it must be {' or '.join(types)}", field=where)
    return joint


def _check_axle(path: Path, left: Joint, right: Joint) -> None:
    """Both wheels on the base link, their axes along its y axis, on one axle, the left one left."""
    if left.name == right.name:
        raise InputError(path, f"'{left.name}' is named as both wheels", field="drive.wheels")
    if left.parent != right.parent:
        raise InputError(path, f"the wheel joints hang from different links ('{left.parent}', '{right.parent}'); a base has one", field="drive.wheels")
    for i, joint in enumerate((left, right)):
        axis = np.asarray(rpy_to_matrix(np.asarray(joint.origin.values[3:6]))) @ np.asarray(joint.axis)
        if abs(axis[1]) < np.cos(AXLE_ANGLE):
            raise InputError(
                path,
                f"joint '{joint.name}' turns about {np.round(axis, 6).tolist()} in '{joint.parent}', not about its y axis "
                "(x forward, y left: the wheels' axle must lie along y)",
                field=f"drive.wheels[{i}]",
            )
    (xl, yl), (xr, yr) = left.origin.values[:2], right.origin.values[:2]
    if abs(xl - xr) > SAME_AXLE:
        raise InputError(
            path, f"the wheel joints are at x = {xl:g} and {xr:g} m in '{left.parent}'; a differential drive's share one axle", field="drive.wheels"
        )
    if yl <= yr:
        raise InputError(
            path, f"the left wheel '{left.name}' (y = {yl:g} m) is not left of the right one (y = {yr:g} m): give [left, right]", field="drive.wheels"
        )


def _not_calibrated(path: Path, joint: Joint, calibrated: set[str], where: str) -> None:
    if joint.name in calibrated:
        raise InputError(path, f"joint '{joint.name}' is calibrated by `parameters` as well; give it mode none", field=where)
