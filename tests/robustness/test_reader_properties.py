"""Property tests of the URDF, DH and CSV readers: random valid inputs round-trip losslessly;
random mutations of them give a valid result or a typed robocal error, never another exception."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robocal.errors import RobocalError
from robocal.io.table import read_table
from robocal.kinematics.dh import load_dh
from robocal.kinematics.tree import Joint, KinematicTree, Origin
from robocal.kinematics.urdf import load_urdf, write_urdf

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
angle = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
name = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6)


@st.composite
def trees(draw) -> KinematicTree:
    n = draw(st.integers(1, 8))
    joints = []
    for i in range(n):
        parent = "base" if i == 0 else draw(st.sampled_from(["base"] + [f"l{k}" for k in range(i)]))
        kind = draw(st.sampled_from(["revolute", "prismatic", "fixed", "continuous"]))
        values = tuple(draw(finite) for _ in range(3)) + tuple(draw(angle) for _ in range(3))
        axis = np.array([draw(finite) for _ in range(3)]) + np.array([0.0, 0.0, 11.0])  # never zero
        limits = tuple(sorted((draw(angle), draw(angle)))) if kind in ("revolute", "prismatic") and draw(st.booleans()) else None
        joints.append(Joint(f"j{i}", kind, parent, f"l{i}", Origin("xyzrpy", values), tuple(axis / np.linalg.norm(axis)), None, limits))
    order = {j.child: j for j in joints}
    ordered, stack = [], ["base"]
    while stack:  # parent before child, as the reader orders them
        link = stack.pop()
        for j in reversed([j for j in joints if j.parent == link]):
            ordered.append(j)
            stack.append(j.child)
    assert len(ordered) == len(order)
    return KinematicTree("random", "base", tuple(ordered))


def poses(tree: KinematicTree) -> dict[str, np.ndarray]:
    return {j.name: np.asarray(j.origin.matrix()) for j in tree.joints}


@SETTINGS
@given(trees())
def test_urdf_round_trip_is_lossless(tree):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "robot.urdf"
        write_urdf(tree, path)
        back = load_urdf(path)
    key = lambda j: j.name  # noqa: E731 (sibling order is not part of a tree)
    read, written = sorted(back.joints, key=key), sorted(tree.joints, key=key)
    assert [(j.name, j.type, j.parent, j.child, j.limits) for j in read] == [(j.name, j.type, j.parent, j.child, j.limits) for j in written]
    for a, b in zip(read, written):
        np.testing.assert_allclose(a.origin.matrix(), b.origin.matrix(), atol=1e-12)
        if a.moves:
            np.testing.assert_allclose(a.axis, b.axis, atol=1e-15)


def mutate(text: str, data) -> str:
    """One random edit: delete a span, duplicate a span, or put random text into it."""
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 40)))
    kind = data.draw(st.sampled_from(["delete", "duplicate", "replace"]))
    if kind == "delete":
        return text[:start] + text[end:]
    if kind == "duplicate":
        return text[:end] + text[start:end] + text[end:]
    return text[:start] + data.draw(st.text(max_size=12)) + text[end:]


@SETTINGS
@given(trees(), st.data())
def test_mutated_urdf_is_a_tree_or_a_robocal_error(tree, data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "robot.urdf"
        write_urdf(tree, path)
        path.write_text(mutate(path.read_text(), data))
        try:
            load_urdf(path)
        except RobocalError:
            pass


@st.composite
def dh_tables(draw) -> dict:
    rows = [{"name": f"j{i}", **{k: draw(finite if k in ("d", "a") else angle) for k in ("d", "theta", "a", "alpha")}} for i in range(draw(st.integers(1, 6)))]
    return {"name": "random", "convention": draw(st.sampled_from(["modified", "standard"])), "chains": [{"name": "c", "joints": rows}]}


@SETTINGS
@given(dh_tables())
def test_dh_table_is_read_exactly(table):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "robot.yaml"
        path.write_text(yaml.safe_dump(table))
        tree = load_dh(path)
    rows = table["chains"][0]["joints"]
    expected = [tuple(r[k] for k in ("d", "theta", "a", "alpha")) for r in rows]
    if table["convention"] == "modified":
        values = [j.origin.values for j in tree.joints if j.name in {r["name"] for r in rows}]
    else:  # row k's constant part is the origin of the next joint, the last one's of the tip (module doc of dh.py)
        values = [j.origin.values for j in tree.joints if j.origin.kind == "dh"][1:]
    assert values == expected


@SETTINGS
@given(dh_tables(), st.data())
def test_mutated_dh_table_is_a_tree_or_a_robocal_error(table, data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "robot.yaml"
        path.write_text(mutate(yaml.safe_dump(table), data))
        try:
            load_dh(path)
        except RobocalError:
            pass


@st.composite
def tables(draw) -> tuple[list[str], np.ndarray]:
    columns = draw(st.lists(name, min_size=1, max_size=5, unique=True))
    values = np.array(draw(st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=len(columns), max_size=len(columns)), min_size=1, max_size=20)))
    return columns, values


def csv_text(columns: list[str], values: np.ndarray, newline: str = "\n") -> str:
    return newline.join([",".join(columns), *(",".join(repr(float(v)) for v in row) for row in values)]) + newline


@SETTINGS
@given(tables(), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_csv_round_trip_is_exact(table, newline, bom):
    columns, values = table
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        path.write_bytes(("\ufeff" if bom else "").encode() + csv_text(columns, values, newline).encode())
        read = read_table(path)
    assert list(read.header) == columns
    assert np.array_equal(read.columns(columns), values)


@SETTINGS
@given(tables(), st.data())
def test_mutated_csv_is_a_table_or_a_robocal_error(table, data):
    columns, values = table
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        path.write_text(mutate(csv_text(columns, values), data))
        try:
            read = read_table(path)
            present = [c for c in columns if c in read.header]
            result = read.columns(present)
            assert all(math.isfinite(v) for v in result.ravel())
        except RobocalError:
            pass
