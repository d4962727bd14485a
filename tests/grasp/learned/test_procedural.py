import numpy as np

from robocal.grasp.learned.procedural import HALF_MAX, HALF_MIN, procedural_objects, split
from robocal.grasp.objects import DENSITY, catalog


def test_family_is_reproducible_sized_and_split_by_object():
    objects = procedural_objects(7, 200)
    assert objects == procedural_objects(7, 200)
    assert objects != procedural_objects(8, 200)
    assert {o.kind for o in objects} == {"sphere", "cylinder", "box"}
    for o in objects:
        assert all(HALF_MIN <= s <= HALF_MAX for s in o.size)
        assert abs(o.mass - DENSITY * o.volume) < 1e-12
    parts = split(objects, 0)
    names = [{o.name for o in part} for part in parts.values()]
    assert [len(n) for n in names] == [160, 20, 20]
    assert set.union(*names) == {o.name for o in objects}
    assert not (names[0] & names[1]) and not (names[0] & names[2]) and not (names[1] & names[2])
    assert not {o.name for o in catalog(meshes=False)} & set.union(*names)
    box = next(o for o in objects if o.kind == "box")
    assert abs(box.volume - 8 * np.prod(box.size)) < 1e-15
