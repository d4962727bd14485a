import numpy as np
import pytest
from scipy.special import beta

from robocal.grasp.learned.procedural import (
    GRID,
    HALF_MAX,
    HALF_MIN,
    KINDS,
    PART_MIN,
    procedural_objects,
    split_indices,
    surface_points,
    union_parts,
)
from robocal.grasp.objects import DENSITY, catalog, inline_mesh

# The curved kinds are their (eta, omega) grid's convex hull, `GRID` steps per half turn (step
# d = pi / GRID). On the unit sphere every point lies within d / sqrt 2 (half a cell's diagonal)
# of a grid point, so no hull facet's circumscribed cap, which holds no grid point, is wider:
# every facet plane is at least k = cos(d / sqrt 2) from the centre. The hull lies between the
# ball of radius k and the sphere, and an ellipsoid's hull is the affine image of the sphere's.
K = np.cos(np.pi / GRID / np.sqrt(2))
VOLUME_SHORTFALL = 1 - K**3  # 2.9 % for GRID = 16


def _kind(obj):
    return obj.name.rsplit("_", 1)[1]


def _inside(obj, points):
    """max over the points of their signed distance to the object's hull (<= 0 inside), object frame."""
    equations = obj._hull().equations
    return float(np.max(points @ equations[:, :3].T + equations[:, 3]))


def test_family_is_reproducible_sized_and_split_by_object():
    objects = procedural_objects(7, 200)
    assert objects == procedural_objects(7, 200)  # bit for bit the same points
    assert objects != procedural_objects(8, 200)
    assert {_kind(o) for o in objects} == set(KINDS)
    for o in objects:
        assert all(HALF_MIN <= s <= HALF_MAX for s in o.size)
        assert np.all(o.half_extents() >= HALF_MIN - 1e-12) and np.all(o.half_extents() <= HALF_MAX + 1e-12), o.name
        assert abs(o.mass - DENSITY * o.volume) < 1e-12
        assert (o.kind == "mesh") == (_kind(o) in ("ellipsoid", "superquadric", "union"))
    names = [{objects[i].name for i in part} for part in split_indices(len(objects), 0).values()]
    assert [len(n) for n in names] == [160, 20, 20]
    assert set.union(*names) == {o.name for o in objects}
    assert not (names[0] & names[1]) and not (names[0] & names[2]) and not (names[1] & names[2])
    assert all(o.name.startswith("proc_") for o in objects)
    assert not {o.name for o in catalog()} & set.union(*names)
    box = next(o for o in objects if o.kind == "box")
    assert abs(box.volume - 8 * np.prod(box.size)) < 1e-15


def test_ellipsoid_hull_volume_mass_and_inertia():
    from robocal.grasp import mjcf
    from robocal.grasp.hand import Hand

    a, b, c = 0.02, 0.033, 0.038
    obj = inline_mesh("e", surface_points("ellipsoid", (a, b, c)), "test")
    exact = 4 / 3 * np.pi * a * b * c
    assert exact * (1 - VOLUME_SHORTFALL) <= obj.volume <= exact
    assert abs(obj.mass - DENSITY * obj.volume) < 1e-15
    np.testing.assert_allclose(obj.half_extents(), [a, b, c], rtol=1e-12)  # the grid holds the axis extremes
    model, index = mjcf.build_scene(Hand.load(), obj)
    body = model.geom_bodyid[index.object_geom]
    assert abs(model.body_mass[body] - obj.mass) < 1e-6 * obj.mass
    # the hull lies between k E and E: for its mass, its inertia is k^2 to k^-3 times the ellipsoid's
    inertia = np.sort(model.body_inertia[body])
    analytic = np.sort(obj.mass / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b]))
    assert np.all(inertia >= K**2 * analytic) and np.all(inertia <= analytic / K**3)


def test_superquadric_spans_ellipsoid_to_box():
    half = (0.03, 0.02, 0.025)
    ellipsoid = inline_mesh("e", surface_points("ellipsoid", half), "test")
    assert inline_mesh("s", surface_points("superquadric", half + (1.0, 1.0)), "test") == inline_mesh("s", surface_points("ellipsoid", half), "test")
    volumes = []
    for eps in (1.0, 0.5, 0.1):
        obj = inline_mesh("s", surface_points("superquadric", half + (eps, eps)), "test")
        # Jaklic et al.: V = 2 a b c eps1 eps2 B(eps1 / 2 + 1, eps1) B(eps2 / 2, eps2 / 2), the box 8 a b c as eps -> 0
        exact = 2 * np.prod(half) * eps * eps * beta(eps / 2 + 1, eps) * beta(eps / 2, eps / 2)
        assert exact * (1 - VOLUME_SHORTFALL) <= obj.volume <= exact, eps
        np.testing.assert_allclose(obj.half_extents(), half, rtol=1e-12)
        volumes.append(obj.volume)
    assert volumes[0] == pytest.approx(ellipsoid.volume, rel=1e-12)
    assert volumes[0] < volumes[1] < volumes[2] <= 8 * np.prod(half)
    assert volumes[2] >= (1 - VOLUME_SHORTFALL) * 0.988 * 8 * np.prod(half)  # exact: 98.9 % of the box at eps = 0.1


def test_union_hull_holds_both_parts():
    rng = np.random.default_rng(3)
    for _ in range(10):
        first, second = union_parts(rng)
        union = inline_mesh("u", np.vstack([first, second]), "test")
        assert np.all(union.half_extents() >= PART_MIN - 1e-12) and np.all(union.half_extents() <= HALF_MAX + 1e-12)
        volumes = []
        for points in (first, second):
            part = inline_mesh("p", points, "test")
            surface, _ = part.sample_surface(rng, 500)
            assert _inside(union, surface + np.asarray(part.mesh_com) - np.asarray(union.mesh_com)) < 1e-9
            volumes.append(part.volume)
        assert union.volume >= max(volumes) - 1e-15
        # the second part's centre lies inside the first: the parts overlap
        centre = inline_mesh("c", second, "test").mesh_com
        assert _inside(inline_mesh("p", first, "test"), np.asarray(centre) - inline_mesh("p", first, "test").mesh_com) < 0
