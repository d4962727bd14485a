"""The teleoperation mapping file: which human finger drives which robot finger, and how.

The file is data (format: docs/formats.md, "Teleoperation mapping"). Loading it also loads the
two hand models it names and checks every link and joint name against them, so a typo is an
error naming the file and field, not a finger that silently stays still.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from robocal.errors import InputError
from robocal.geometry.links import GeometryFile, LinkShape, shape_from_config
from robocal.kinematics import transforms as tf
from robocal.kinematics.dh import Num, Vec3
from robocal.kinematics.load import load_robot
from robocal.kinematics.tree import KinematicTree
from robocal.models import packaged
from robocal.validation import Positive, Strict, load_yaml_model


class JointTerm(Strict):
    """robot joint = scale * human joint + offset (rad)."""

    human: str
    scale: float = 1.0
    offset: Num = 0.0


class Frame(Strict):
    """A reference frame: the link frame moved by `xyz` (m, in the link frame)."""

    link: str
    xyz: Vec3 = (0.0, 0.0, 0.0)


class Reference(Strict):
    """The pair of frames the fingertip mapping goes through; `rpy` is the human frame's
    orientation in the robot frame (URDF roll-pitch-yaw, rad)."""

    human: Frame
    robot: Frame
    rpy: Vec3 = (0.0, 0.0, 0.0)


class FingerSpec(Strict):
    human_tip: str
    robot_tip: str
    joints: dict[str, JointTerm]
    reference: Reference
    contact_link: str


class ContactSpec(Strict):
    geometry: Path
    threshold: Positive = 0.005


class MappingFile(Strict):
    robot: Path
    human: Path
    scale: Positive = 1.5
    contact: ContactSpec
    fingers: dict[str, FingerSpec] = Field(min_length=1)


@dataclass(frozen=True)
class Finger:
    """One robot finger of a loaded mapping, names checked against both trees."""

    name: str
    human_tip: str
    robot_tip: str
    joints: tuple[str, ...]  # the robot finger's actuated joints, in robot tree order
    sources: tuple[str, ...]  # the human joint driving each of `joints`
    scales: np.ndarray
    offsets: np.ndarray
    human_reference: str
    human_xyz: np.ndarray
    robot_reference: str
    robot_xyz: np.ndarray
    rotation: np.ndarray  # 3x3, human reference axes -> robot reference axes
    contact_link: str


@dataclass(frozen=True)
class MappingConfig:
    path: Path
    human: KinematicTree
    robot: KinematicTree
    scale: float
    fingers: tuple[Finger, ...]
    shapes: dict[str, tuple[LinkShape, ...]]  # contact shapes of each finger's contact link
    threshold: float


def default_mapping_path() -> Path:
    """The packaged human hand -> DLR-Hand II mapping."""
    return packaged("human_to_dlr_hand_ii.yaml")


def _fixed_to_root(tree: KinematicTree, link: str) -> bool:
    return not any(tree.joints[i].moves for i in tree.chain(link))


def load_mapping(path: str | Path | None = None) -> MappingConfig:
    """Load and check a mapping file (default: the packaged human hand -> DLR-Hand II one).

    Every robot actuated joint must belong to exactly one finger, and each finger's joint map
    must name exactly the actuated joints that move its tip: the fingertip inverse kinematics
    then splits into independent fingers, and the joint map leaves no joint undefined.
    """
    path = Path(path) if path is not None else default_mapping_path()
    spec = load_yaml_model(path, MappingFile)
    human, robot = (load_robot(p if p.is_absolute() else path.parent / p) for p in (spec.human, spec.robot))

    def need(tree: KinematicTree, link: str, field: str) -> None:
        if not tree.has_link(link):
            raise InputError(path, f"'{tree.name}' has no link '{link}'", field=field)

    fingers: list[Finger] = []
    owner: dict[str, str] = {}
    for name, f in spec.fingers.items():
        where = f"fingers.{name}"
        need(human, f.human_tip, f"{where}.human_tip")
        need(robot, f.robot_tip, f"{where}.robot_tip")
        need(human, f.reference.human.link, f"{where}.reference.human.link")
        need(robot, f.reference.robot.link, f"{where}.reference.robot.link")
        need(robot, f.contact_link, f"{where}.contact_link")
        for tree, side in ((human, "human"), (robot, "robot")):
            link = getattr(f.reference, side).link
            if not _fixed_to_root(tree, link):
                raise InputError(
                    path, f"'{link}' moves with the {side} hand's joints; a reference must be fixed to '{tree.root}'", field=f"{where}.reference.{side}.link"
                )
        moving = robot.actuated_for([f.robot_tip])
        if set(f.joints) != set(moving):
            raise InputError(
                path, f"the joint map must name exactly the actuated joints that move '{f.robot_tip}': {', '.join(moving)}", field=f"{where}.joints"
            )
        for joint in moving:
            if joint in owner:
                raise InputError(path, f"joint '{joint}' also moves finger '{owner[joint]}'; fingers must not share joints", field=f"{where}.joints")
            owner[joint] = name
            if f.joints[joint].human not in human.actuated:
                raise InputError(path, f"'{f.joints[joint].human}' is not an actuated joint of '{human.name}'", field=f"{where}.joints.{joint}.human")
        terms = [f.joints[j] for j in moving]
        fingers.append(
            Finger(
                name,
                f.human_tip,
                f.robot_tip,
                moving,
                tuple(t.human for t in terms),
                np.array([t.scale for t in terms]),
                np.array([t.offset for t in terms]),
                f.reference.human.link,
                np.array(f.reference.human.xyz),
                f.reference.robot.link,
                np.array(f.reference.robot.xyz),
                np.asarray(tf.rpy_to_matrix(np.array(f.reference.rpy))),
                f.contact_link,
            )
        )
    unmapped = [j for j in robot.actuated if j not in owner]
    if unmapped:
        raise InputError(path, f"robot joints moved by no finger: {', '.join(unmapped)}", field="fingers")
    geometry_path = spec.contact.geometry if spec.contact.geometry.is_absolute() else path.parent / spec.contact.geometry
    declared = load_yaml_model(geometry_path, GeometryFile).links
    shapes = {}
    for finger in fingers:
        if finger.contact_link not in declared:
            raise InputError(geometry_path, f"no shapes for link '{finger.contact_link}' (the contact link of finger '{finger.name}' in {path})", field="links")
        shapes[finger.contact_link] = tuple(shape_from_config(finger.contact_link, c) for c in declared[finger.contact_link])
    return MappingConfig(path, human, robot, float(spec.scale), tuple(fingers), shapes, float(spec.contact.threshold))
