"""Contact bodies from a URDF's <collision> elements, by link name (`geometry: {from_urdf, bodies}`).

Each shape is checked by signed distances to a probe ball at hand-computed values (exact to
1e-12 m: the closed forms are exact up to rounding); refusals name the link, the reason and the
line of the element; a JSON geometry file reads as its YAML twin."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from robocal.errors import InputError
from robocal.geometry.links import GeometryConfig, LinkShape, link_distance, load_geometry
from robocal.geometry.primitives import Sphere
from robocal.problem import load_problem
from robocal.validation import validate_mapping

HAND = """<robot name="hand">
  <link name="palm">
    <collision><geometry><mesh filename="package://hand/palm.stl"/></geometry></collision>
  </link>
  <link name="ball"><collision><origin xyz="0 0 0.02"/><geometry><sphere radius="0.01"/></geometry></collision></link>
  <link name="pill">
    <collision><origin xyz="0 0 0.03" rpy="0 1.5707963267948966 0"/><geometry><capsule radius="0.008" length="0.04"/></geometry></collision>
  </link>
  <link name="capped">
    <collision><origin xyz="0 0 0.02"/><geometry><cylinder radius="0.01" length="0.04"/></geometry></collision>
    <collision><geometry><sphere radius="0.01"/></geometry></collision>
    <collision><origin xyz="0 0 0.04"/><geometry><sphere radius="0.01"/></geometry></collision>
  </link>
  <link name="rod">
    <collision><geometry><cylinder radius="0.01" length="0.04"/></geometry></collision>
  </link>
  <link name="mixed">
    <collision><geometry><sphere radius="0.01"/></geometry></collision>
    <collision><geometry><mesh filename="package://hand/mixed.stl"/></geometry></collision>
  </link>
  <link name="bare"/>
  <joint name="j_ball" type="revolute"><parent link="palm"/><child link="ball"/><origin xyz="0.02 0 0.05"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j_pill" type="revolute"><parent link="palm"/><child link="pill"/><origin xyz="-0.02 0 0.05"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="f1" type="fixed"><parent link="palm"/><child link="capped"/></joint>
  <joint name="f2" type="fixed"><parent link="palm"/><child link="rod"/></joint>
  <joint name="f3" type="fixed"><parent link="palm"/><child link="mixed"/></joint>
  <joint name="f4" type="fixed"><parent link="palm"/><child link="bare"/></joint>
</robot>
"""


@pytest.fixture()
def hand(tmp_path) -> Path:
    path = tmp_path / "hand.urdf"
    path.write_text(HAND)
    return path


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def geometry(path: Path, **config) -> dict[str, tuple[LinkShape, ...]]:
    return load_geometry(GeometryConfig.model_validate({"from_urdf": path.name, **config}), path.parent)


def distance_to_probe(shapes: tuple[LinkShape, ...], center, radius: float = 0.005) -> float:
    probe = (LinkShape("probe", Sphere(radius)),)
    pose = jnp.eye(4).at[:3, 3].set(jnp.asarray(center, dtype=float))
    return float(link_distance(shapes, jnp.eye(4), probe, pose))


def test_bodies_by_link_name(hand):
    shapes = geometry(hand, bodies=["ball", "pill", "capped"])
    assert sorted(shapes) == ["ball", "capped", "pill"]
    # sphere r 0.01 at z 0.02, probe r 0.005 at x 0.05: 0.05 - 0.015
    assert distance_to_probe(shapes["ball"], [0.05, 0, 0.02]) == pytest.approx(0.035, abs=1e-12)
    # <capsule> along x (pitch pi/2): segment x in [-0.02, 0.02] at z 0.03, r 0.008
    assert distance_to_probe(shapes["pill"], [0.05, 0, 0.03]) == pytest.approx(0.05 - 0.02 - 0.013, abs=1e-12)
    assert distance_to_probe(shapes["pill"], [0.0, 0.05, 0.03]) == pytest.approx(0.05 - 0.013, abs=1e-12)
    # a cylinder capped by two spheres of its radius: one capsule, segment z in [0, 0.04]
    assert len(shapes["capped"]) == 1
    assert distance_to_probe(shapes["capped"], [0, 0, 0.07]) == pytest.approx(0.07 - 0.04 - 0.015, abs=1e-12)
    assert distance_to_probe(shapes["capped"], [0.05, 0, 0.02]) == pytest.approx(0.035, abs=1e-12)


def test_every_usable_link_without_bodies(hand):
    """Without `bodies`, the links whose collisions can all be used; the others are left out."""
    assert sorted(geometry(hand)) == ["ball", "capped", "pill"]


@pytest.mark.parametrize(
    "link, needle, message",
    [
        ("palm", "palm.stl", "link 'palm': its <collision> is a <mesh>"),
        ("mixed", "mixed.stl", "link 'mixed': its <collision> is a <mesh>"),
        ("rod", '<link name="rod">', "geometry.cylinders: capsule"),
        ("bare", None, "link 'bare' has no <collision>"),
        ("thumb", None, "link 'thumb' is no <link> of this URDF"),
    ],
)
def test_refused_bodies_are_named(hand, link, needle, message):
    with pytest.raises(InputError) as error:
        geometry(hand, bodies=["ball", link])
    assert message in str(error.value)
    expected = None if needle is None else line_of(HAND, needle) + (1 if link == "rod" else 0)
    assert error.value.line == expected


def test_bare_cylinder_as_capsule_on_request(hand):
    """cylinders: capsule reads it as the capsule of its axis and radius: exact on the side, longer
    by the radius beyond each end (a true cylinder's end face would be 0.01 farther)."""
    shapes = geometry(hand, bodies=["rod"], cylinders="capsule")
    assert distance_to_probe(shapes["rod"], [0.05, 0, 0.01]) == pytest.approx(0.035, abs=1e-12)
    assert distance_to_probe(shapes["rod"], [0, 0, 0.05]) == pytest.approx(0.05 - 0.02 - 0.015, abs=1e-12)


def test_bad_attribute_is_located(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text('<robot name="r">\n  <link name="a">\n    <collision><geometry><sphere radius="one"/></geometry></collision>\n  </link>\n</robot>\n')
    with pytest.raises(InputError) as error:
        geometry(path, bodies=["a"])
    assert error.value.line == 3 and "radius='one'> must be 1 finite number" in str(error.value)


def test_bodies_need_a_urdf(tmp_path):
    with pytest.raises(InputError) as error:
        validate_mapping(tmp_path / "p.yaml", {"bodies": ["a"]}, GeometryConfig)
    assert "give from_urdf" in str(error.value)


def test_json_geometry_file_reads_as_yaml(tmp_path):
    links = {"tip": [{"type": "capsule", "p0": [0, 0, 0], "p1": [0, 0, 0.03], "radius": 0.01}, {"type": "sphere", "center": [0, 0.01, 0], "radius": 0.004}]}
    (tmp_path / "shapes.yaml").write_text(yaml.safe_dump({"links": links}))
    (tmp_path / "shapes.json").write_text(json.dumps({"links": links}, indent=1))
    from_yaml = load_geometry(GeometryConfig(files=[Path("shapes.yaml")]), tmp_path)
    from_json = load_geometry(GeometryConfig(files=[Path("shapes.json")]), tmp_path)
    assert from_json == from_yaml and len(from_json["tip"]) == 2
    (tmp_path / "bad.json").write_text('{"links": {"tip": [\n  {"type": "sphere", "radius": -1}\n]}}')
    with pytest.raises(InputError) as error:
        load_geometry(GeometryConfig(files=[Path("bad.json")]), tmp_path)
    assert error.value.field == "links.tip[0].radius"
    (tmp_path / "bad.json").write_text('{"links": {\n "tip": [}\n}')
    with pytest.raises(InputError) as error:
        load_geometry(GeometryConfig(files=[Path("bad.json")]), tmp_path)
    assert error.value.line == 2 and "not valid JSON" in str(error.value)


def test_a_contact_problem_names_its_bodies(hand):
    """In a problem file: the two moving links' URDF collisions are the contact bodies; a row naming
    the palm (a mesh, not among the bodies) is refused at its line."""
    folder = hand.parent
    rows = ["body_a,body_b,j_ball,j_pill", "ball,pill,0.1,-0.1", "pill,ball,0.2,-0.2"]
    (folder / "contacts.csv").write_text("\n".join(rows) + "\n")
    problem = {
        "robot": "hand.urdf",
        "geometry": {"from_urdf": "hand.urdf", "bodies": ["ball", "pill"]},
        "parameters": {"default": "joint_offsets"},
        "measurements": [{"name": "touch", "type": "contact", "data": "contacts.csv", "sigma": 1e-4}],
    }
    (folder / "problem.yaml").write_text(yaml.safe_dump(problem))
    loaded = load_problem(folder / "problem.yaml")
    assert sorted(loaded.geometry) == ["ball", "pill"] and loaded.measurements[0].links() == ("ball", "pill")
    (folder / "contacts.csv").write_text("\n".join(rows + ["palm,ball,0.0,0.0"]) + "\n")
    with pytest.raises(InputError) as error:
        load_problem(folder / "problem.yaml")
    assert (error.value.line, error.value.field) == (4, "body_a") and "without contact geometry" in str(error.value)
    np.testing.assert_equal(len(loaded.measurements[0].lines), 2)
