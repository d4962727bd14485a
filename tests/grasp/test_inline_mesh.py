"""Mesh objects given by points instead of an STL file (`objects.inline_mesh`)."""

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robocal.grasp import mjcf
from robocal.grasp.hand import Hand
from robocal.grasp.learned import observation as ob
from robocal.grasp.objects import DENSITY, inline_mesh

HALF = np.array([0.03, 0.02, 0.015])
OFFSET = np.array([0.01, -0.02, 0.005])
CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * HALF


@pytest.fixture(scope="module")
def hand():
    return Hand.load()


def _box():
    """A box given by its corners, centred at OFFSET in the points' coordinates."""
    return inline_mesh("box", CORNERS + OFFSET, "test")


def _distance(obj, points):
    """(N,) signed distance of each point to the hull's boundary (<= 0 inside), object frame."""
    equations = obj._hull().equations
    return np.max(points @ equations[:, :3].T + equations[:, 3], axis=1)


def test_inline_box_is_exact_hashable_and_sampled_on_its_hull():
    box = _box()
    assert box == _box() and hash(box) == hash(_box()) and box != inline_mesh("box", CORNERS, "test")
    assert box.volume == pytest.approx(8 * np.prod(HALF), rel=1e-12)
    assert box.mass == pytest.approx(DENSITY * 8 * np.prod(HALF), rel=1e-12)
    np.testing.assert_allclose(box.mesh_com, OFFSET, atol=1e-15)
    np.testing.assert_allclose(box.half_extents(), HALF, rtol=1e-12)
    points, normals = box.sample_surface(np.random.default_rng(0), 2000)
    assert np.max(np.abs(_distance(box, points))) < 1e-9
    np.testing.assert_allclose(np.abs(normals).max(axis=1), 1.0, atol=1e-12)  # a face normal of the box
    exit_point, normal = box.ray_exit(np.zeros(3), np.array([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(exit_point, [HALF[0], 0, 0], atol=1e-15)
    np.testing.assert_allclose(normal, [1, 0, 0], atol=1e-15)


def test_mujoco_compiles_the_points_as_the_same_hull(hand):
    turn = Rotation.from_rotvec([0.3, -0.5, 0.2]).as_matrix()
    box = inline_mesh("turned box", (CORNERS @ turn.T + OFFSET), "test")
    model, index = mjcf.build_scene(hand, box)
    body = model.geom_bodyid[index.object_geom]
    assert abs(model.body_mass[body] - box.mass) < 1e-6 * box.mass
    np.testing.assert_allclose(model.body_ipos[body], 0.0, atol=1e-7)  # the centre of mass is the body frame's origin
    np.testing.assert_allclose(np.sort(model.body_inertia[body]), np.sort(box.mass / 3 * (np.sum(HALF**2) - HALF**2)), rtol=1e-5)
    # with a density instead of the mass, MuJoCo's own hull volume gives the mass (float32 vertices)
    root = ET.fromstring(mjcf.scene_xml(hand, box, None, False, False))
    geom = root.find(".//geom[@name='object']")
    del geom.attrib["mass"]
    geom.set("density", repr(DENSITY))
    mass = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode")).body_mass[body]
    assert abs(mass - box.mass) < 1e-6 * box.mass


def test_depth_image_hits_the_inline_hull(hand):
    config = ob.ObservationConfig(grid=24)
    shape = inline_mesh("box and axis points", np.vstack([CORNERS, 1.3 * np.diag(HALF), -1.3 * np.diag(HALF)]), "test")
    pose = np.eye(4)
    pose[:3, 3] = config.center
    cloud = ob.back_project(ob.depth_image(hand, shape, pose, config), config)
    assert len(cloud) > 200
    assert np.max(np.abs(_distance(shape, cloud - config.center))) < 1e-7
