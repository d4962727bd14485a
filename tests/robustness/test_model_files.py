"""Hostile and malformed robot model files: each gives one located InputError, never a hang, a
traceback or a silently wrong tree (issue 17's list, one named test per case)."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

from robocal.errors import InputError, RobocalError
from robocal.kinematics.dh import load_dh
from robocal.kinematics.tree import MAX_JOINTS
from robocal.kinematics.urdf import load_urdf


def urdf(links: str, joints: str) -> str:
    return f'<?xml version="1.0"?>\n<robot name="r">\n{links}\n{joints}\n</robot>\n'


JOINTS_LINE = 4  # the line of `urdf`'s text that holds the joints
LINKS = '<link name="base"/><link name="a"/><link name="b"/>'
J_A = '<joint name="ja" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>'
J_B = '<joint name="jb" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>'


def load(tmp_path: Path, text: str):
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    return load_urdf(path)


def error_of(tmp_path: Path, text: str) -> InputError:
    with pytest.raises(InputError) as info:
        load(tmp_path, text)
    assert str(tmp_path / "robot.urdf") in str(info.value)
    return info.value


def test_joint_cycle_below_the_root_is_an_error_not_a_hang(tmp_path):
    cycle = '<joint name="jc" type="revolute"><parent link="b"/><child link="a"/><axis xyz="0 0 1"/></joint>'
    start = time.perf_counter()
    error = error_of(tmp_path, urdf(LINKS, J_A + J_B + cycle))
    assert time.perf_counter() - start < 5
    assert "'a'" in error.detail and "ja" in error.detail and "jc" in error.detail
    assert error.line is not None


def test_cycle_without_a_root_names_it(tmp_path):
    loop = '<joint name="j0" type="fixed"><parent link="b"/><child link="base"/></joint>'
    error = error_of(tmp_path, urdf(LINKS, J_A + J_B + loop))
    assert "cycle" in error.detail


def test_link_with_two_parent_joints(tmp_path):
    second = '<joint name="jx" type="fixed"><parent link="base"/><child link="b"/></joint>'
    error = error_of(tmp_path, urdf(LINKS, J_A + J_B + second))
    assert "'b'" in error.detail and "jb" in error.detail and "jx" in error.detail


@pytest.mark.parametrize("limit", ['lower="abc" upper="1"', 'lower="-1" upper=""', 'lower="nan" upper="1"', 'lower="2" upper="1"'])
def test_malformed_limit(tmp_path, limit):
    joint = J_A.replace("</joint>", f"<limit {limit} effort='1' velocity='1'/></joint>")
    error = error_of(tmp_path, urdf(LINKS, joint + J_B))
    assert error.line == JOINTS_LINE and "limit" in error.detail


@pytest.mark.parametrize("mimic", ['<mimic joint="ja" multiplier="x"/>', '<mimic joint="ja" offset="inf"/>', "<mimic/>", '<mimic joint="nope"/>'])
def test_malformed_mimic(tmp_path, mimic):
    joint = J_B.replace("</joint>", f"{mimic}</joint>")
    error = error_of(tmp_path, urdf(LINKS, J_A + joint))
    assert error.line == JOINTS_LINE and "mimic" in error.detail


def test_mimic_cycle(tmp_path):
    ja = J_A.replace("</joint>", '<mimic joint="jb"/></joint>')
    jb = J_B.replace("</joint>", '<mimic joint="ja"/></joint>')
    error = error_of(tmp_path, urdf(LINKS, ja + jb))
    assert "mimics itself" in error.detail


def test_joint_without_a_name(tmp_path):
    error = error_of(tmp_path, urdf(LINKS, J_A + J_B.replace(' name="jb"', "")))
    assert "without a name" in error.detail and error.line == JOINTS_LINE


def test_joint_and_link_defined_twice(tmp_path):
    assert "defined twice" in error_of(tmp_path, urdf(LINKS, J_A + J_B + J_B.replace('child link="b"', 'child link="base"'))).detail
    assert "defined twice" in error_of(tmp_path, urdf(LINKS + '<link name="a"/>', J_A + J_B)).detail


def test_child_link_that_is_not_declared(tmp_path):
    error = error_of(tmp_path, urdf(LINKS, J_A + J_B.replace('child link="b"', 'child link="ghost"')))
    assert "'ghost'" in error.detail


@pytest.mark.parametrize("xyz", ["nan 0 0", "0 inf 0", "1e300 0 0", "0 0 -2000"])
def test_non_finite_or_absurd_origin(tmp_path, xyz):
    joint = J_A.replace("<parent", f'<origin xyz="{xyz}"/><parent')
    error = error_of(tmp_path, urdf(LINKS, joint + J_B))
    assert error.line == JOINTS_LINE and "finite" in error.detail


def test_external_entity_is_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("0 0 1")
    text = (
        f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY s SYSTEM "file://{secret}">]>\n'
        f'<robot name="r">{LINKS}<joint name="ja" type="revolute"><parent link="base"/><child link="a"/>'
        '<axis xyz="&s;"/></joint></robot>'
    )
    with pytest.raises(InputError):  # the entity stays unexpanded: the axis is not 3 numbers
        load(tmp_path, text)


def test_billion_laughs_is_not_expanded(tmp_path):
    entities = '<!ENTITY l0 "ha">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    text = f'<?xml version="1.0"?>\n<!DOCTYPE robot [{entities}]>\n<robot name="&l9;">{LINKS}{J_A}{J_B}</robot>'
    start = time.perf_counter()
    try:
        tree = load(tmp_path, text)
    except InputError:
        pass  # refusing the document is as good as not expanding it
    else:
        assert len(tree.name) < 1000
    assert time.perf_counter() - start < 5


def test_very_long_chain_is_refused_quickly(tmp_path):
    n = 10_000
    links = "".join(f'<link name="l{i}"/>' for i in range(n + 1))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/><axis xyz="0 0 1"/></joint>' for i in range(n))
    start = time.perf_counter()
    error = error_of(tmp_path, urdf(links, joints))
    assert str(MAX_JOINTS) in error.detail
    assert time.perf_counter() - start < 10


def dh_error(tmp_path: Path, row: str) -> RobocalError:
    path = tmp_path / "robot.yaml"
    path.write_text(f"name: r\nconvention: modified\nchains:\n  - name: f\n    joints:\n      - {row}\n")
    with pytest.raises(RobocalError) as info:
        load_dh(path)
    assert str(path) in str(info.value)
    return info.value


@pytest.mark.parametrize(
    "row",
    [
        "{name: j1, d: .nan}",
        "{name: j1, a: .inf}",
        "{name: j1, d: 1e300}",
        "{name: j1, theta: pi/0}",
        "{name: j1, alpha: true}",
        "{name: j1, theta: 'import os'}",
        "{name: j1, theta: '1if 1 else 2'}",
    ],
)
def test_dh_row_with_a_bad_number(tmp_path, row):
    """A located error, and nothing else: no warning of Python's parser ("invalid decimal literal")."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error = dh_error(tmp_path, row)
    assert "chains[0].joints[0]" in str(error) and not caught, [str(w.message) for w in caught]


def test_dh_mimic_cycle(tmp_path):
    path = tmp_path / "robot.yaml"
    path.write_text(
        "name: r\nconvention: modified\nchains:\n  - name: f\n    joints:\n      - {name: j1, mimic: {joint: j2}}\n      - {name: j2, mimic: {joint: j1}}\n"
    )
    with pytest.raises(RobocalError, match="mimics itself"):
        load_dh(path)
