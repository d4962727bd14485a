"""DH / modified-DH tables (YAML) turned into the internal kinematic tree.

The file format is documented in docs/formats.md. In the modified (Craig) convention a row is
RotX(alpha) TransX(a) RotZ(theta + q) TransZ(d), which is a constant origin followed by a
rotation about z, exactly a URDF joint. In the standard convention a row is
RotZ(theta + q) TransZ(d) TransX(a) RotX(alpha): the joint moves first, so the constant part of
row k becomes the origin of the *next* joint (or of the chain's tip), and the `dh` parameters of
row k are reported under that next joint's name.
"""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from robocal.errors import InputError
from robocal.kinematics import transforms as tf
from robocal.kinematics.tree import MAX_ORIGIN_VALUE, Joint, KinematicTree, Mimic, Origin, OriginKind
from robocal.validation import Strict, load_yaml_model

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _number(value) -> float:
    """A finite float within the plausibility limit of model files, or a small arithmetic
    expression in `pi` such as "-pi/2"."""
    if isinstance(value, bool):
        raise ValueError(f"'{value}' is not a number")
    number = float(value) if isinstance(value, (int, float)) else _expression(value)
    if not abs(number) <= MAX_ORIGIN_VALUE:
        raise ValueError(f"'{value}' is not a finite number within +-{MAX_ORIGIN_VALUE:g}")
    return number


def _expression(value) -> float:
    """The value of a text of numbers, `pi`, + - * / and parentheses."""

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id == "pi":
            return math.pi
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -ev(node.operand) if isinstance(node.op, ast.USub) else ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError(f"'{value}' is not a number or an expression in pi")

    try:
        with warnings.catch_warnings():  # "1if 2": Python's warning is noise beside the error below
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(str(value), mode="eval")
        return ev(tree.body)
    except (SyntaxError, RecursionError, ZeroDivisionError, OverflowError):
        raise ValueError(f"'{value}' is not a number or an expression in pi") from None


Num = Annotated[float, BeforeValidator(_number)]
Vec3 = tuple[Num, Num, Num]


class MimicSpec(Strict):
    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


DH_ENTRIES = ("d", "theta", "a", "alpha")


def _entries(value):
    """`fixed:` of a row: true (all four), false (none) or a list of distinct entry names."""
    if isinstance(value, bool):
        return list(DH_ENTRIES) if value else []
    if isinstance(value, list) and len(set(map(str, value))) != len(value):
        raise ValueError(f"an entry is named twice in {value}")
    return value


Fixed = Annotated[list[Literal["d", "theta", "a", "alpha"]], BeforeValidator(_entries)]


class Row(Strict):
    name: str
    type: Literal["revolute", "prismatic"] = "revolute"
    link: str | None = None
    d: Num = 0.0
    theta: Num = 0.0
    a: Num = 0.0
    alpha: Num = 0.0
    fixed: Fixed = Field(default_factory=list)
    limits: tuple[Num, Num] | None = None
    mimic: MimicSpec | None = None


class Tip(Strict):
    name: str
    d: Num = 0.0
    theta: Num = 0.0
    a: Num = 0.0
    alpha: Num = 0.0
    fixed: Fixed = Field(default_factory=list)


class Placement(Strict):
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 | None = None
    rotvec: Vec3 | None = None

    @model_validator(mode="after")
    def _one_rotation(self):
        if self.rpy is not None and self.rotvec is not None:
            raise ValueError("give either rpy or rotvec, not both")
        return self

    def xyzrpy(self) -> tuple[float, ...]:
        if self.rotvec is not None:
            rpy = tuple(tf.matrix_to_rpy(tf.rotvec_to_matrix(np.asarray(self.rotvec))))
        else:
            rpy = self.rpy or (0.0, 0.0, 0.0)
        return tuple(self.xyz) + tuple(float(v) for v in rpy)


class Chain(Strict):
    name: str
    parent: str | None = None
    base: Placement = Field(default_factory=Placement)
    joints: list[Row]
    tip: Tip | None = None


class DHTable(Strict):
    name: str
    convention: Literal["modified", "standard"]
    root: str = "base"
    chains: list[Chain]


def _in_order(fixed: Sequence[str]) -> tuple[str, ...]:
    return tuple(entry for entry in DH_ENTRIES if entry in fixed)


def load_dh(path: str | Path) -> KinematicTree:
    """Kinematic tree of a DH table file."""
    path = Path(path)
    return dh_tree(load_yaml_model(path, DHTable), path)


def dh_tree(table: DHTable, path: Path) -> KinematicTree:
    """Kinematic tree of a validated DH table (read from `path`, which errors name)."""
    kind: OriginKind = "mdh" if table.convention == "modified" else "dh"
    joints: list[Joint] = []
    tips = []
    for chain in table.chains:
        base_link = f"{chain.name}_base"
        joints.append(Joint(f"{chain.name}_base_joint", "fixed", chain.parent or table.root, base_link, Origin("xyzrpy", chain.base.xyzrpy())))
        parent, pending = base_link, None  # pending: constant part of the previous standard-DH row
        for k, row in enumerate(chain.joints):
            values, fixed = (row.d, row.theta, row.a, row.alpha), _in_order(row.fixed)
            origin = Origin(kind, values, fixed) if kind == "mdh" else (pending or Origin("dh", (0.0, 0.0, 0.0, 0.0)))
            child = row.link or f"{chain.name}_link{k + 1}"
            mimic = Mimic(row.mimic.joint, row.mimic.multiplier, row.mimic.offset) if row.mimic else None
            joints.append(Joint(row.name, row.type, parent, child, origin, (0.0, 0.0, 1.0), mimic, row.limits))
            parent, pending = child, Origin("dh", values, fixed)
        if chain.tip is not None or pending is not None:
            tip_name = chain.tip.name if chain.tip else f"{chain.name}_tip"
            if kind == "mdh":
                t = chain.tip
                origin = Origin("mdh", (t.d, t.theta, t.a, t.alpha), _in_order(t.fixed)) if t else Origin("mdh", (0.0, 0.0, 0.0, 0.0))
            elif chain.tip is not None and (any((chain.tip.d, chain.tip.theta, chain.tip.a, chain.tip.alpha)) or chain.tip.fixed):
                raise InputError(path, f"chain '{chain.name}': in the standard convention the tip is the last row's frame; give no tip values")
            else:  # the last row's frame; a chain without rows ends at its base
                origin = pending if pending is not None else Origin("dh", (0.0, 0.0, 0.0, 0.0))
            joints.append(Joint(f"{tip_name}_joint", "fixed", parent, tip_name, origin))
            tips.append(tip_name)
    return KinematicTree(table.name, table.root, tuple(joints), source=path, source_kind="dh", end_effectors=tuple(tips))
