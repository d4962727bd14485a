import json

import numpy as np
import pytest

from robocal.errors import InputError
from robocal.grasp.learned import dataset

from .conftest import TINY as CONFIG


def test_generation_is_reproducible_from_the_seed_and_resumable(tiny_dataset, tmp_path):
    files = sorted(p.relative_to(tiny_dataset) for p in tiny_dataset.rglob("*.npz"))
    assert [f.parent.name for f in files].count("train") == 5 and len(files) == 6
    # a second run in two worker processes, one shard removed first: the same bytes of data
    again = tmp_path / "again"
    assert dataset.generate(CONFIG, again, workers=2)["made"] == 6
    (again / files[0]).unlink()
    assert dataset.generate(CONFIG, again, workers=1)["made"] == 1
    for f in files:
        a, b = np.load(tiny_dataset / f), np.load(again / f)
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    train = dataset.load(tiny_dataset, "train")
    S = len(train["grasp"])
    assert S >= 50 and train["wrench"].shape == (S, 6) and train["voxels"].shape[1:] == (16, 16, 16)
    # sampled forces lie in [0, 10] N and the commands follow the teacher: q_d differs from q_init
    assert np.linalg.norm(train["wrench"][:, :3], axis=1).max() <= 10.0
    assert np.abs(train["q_d"] - train["q_init"][train["grasp"]]).max() > 1e-3


def test_another_configuration_in_the_same_folder_is_refused(tiny_dataset):
    other = CONFIG.model_copy(update={"samples": 11})
    with pytest.raises(InputError, match="another configuration"):
        dataset.generate(other, tiny_dataset)
    assert json.loads((tiny_dataset / dataset.MANIFEST).read_text())["samples"] == 10
