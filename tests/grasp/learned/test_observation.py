import numpy as np
import pytest

from robocal.grasp.hand import Hand
from robocal.grasp.learned import observation as ob
from robocal.grasp.objects import primitive


@pytest.fixture(scope="module")
def hand():
    return Hand.load()


def _pose(center):
    pose = np.eye(4)
    pose[:3, 3] = center
    return pose


def test_depth_pixels_lie_on_the_sphere_and_mirror_completion_restores_it(hand):
    config = ob.ObservationConfig(grid=48)
    center, radius = np.array([0.01, -0.005, 0.15]), 0.035
    depth = ob.depth_image(hand, primitive("s", "sphere", (radius,)), _pose(center), config)
    cloud = ob.back_project(depth, config)
    assert 200 < len(cloud) < np.isfinite(depth).size
    # every back-projected pixel is on the sphere (ray casting, not rasterization)
    np.testing.assert_allclose(np.linalg.norm(cloud - center, axis=1), radius, atol=1e-9)
    # the camera sees less than a hemisphere: its silhouette circle lies r^2 / D in front of the
    # centre (D the camera's distance); the mirror through that plane gives the sphere back, its
    # extent along the optical axis the diameter less 2 r^2 / D (a voxel's accuracy)
    _, axis = ob.camera_rays(config)
    completed = ob.complete(cloud, config)
    distance = np.linalg.norm(center - np.asarray(config.camera))
    assert np.ptp(cloud @ axis) < radius
    assert abs(np.ptp(completed @ axis) - 2 * (radius - radius**2 / distance)) < 0.001
    # voxels: intersection over union with the true ball above 0.8 (voxel 5 mm, radius 35 mm)
    voxels = ob.voxelize(completed, config).astype(bool)
    truth = np.linalg.norm(ob.voxel_centers(config) - center, axis=-1) <= radius
    assert (voxels & truth).sum() / (voxels | truth).sum() > 0.8


def test_grid_size_is_configurable_and_in_the_hand_frame(hand):
    box = primitive("b", "box", (0.03, 0.02, 0.025))
    for grid in (16, 24):
        config = ob.ObservationConfig(grid=grid)
        voxels = ob.observe(hand, box, _pose([0.0, 0.0, 0.19]), config)
        assert voxels.shape == (grid,) * 3 and voxels.dtype == np.uint8
        moved = ob.observe(hand, box, _pose([0.0, 0.0, 0.19 + 4 * config.voxel()]), config)
        # the object 4 voxels higher: the grid shifts by 4 along z (a face-on view at most a
        # voxel off where the silhouette depth changes with the perspective)
        occupied = np.argwhere(voxels).mean(axis=0)
        np.testing.assert_allclose(np.argwhere(moved).mean(axis=0) - occupied, [0, 0, 4], atol=1.0)
        np.testing.assert_array_equal(voxels, ob.observe(hand, box, _pose([0.0, 0.0, 0.19]), config))
