"""examples/learned_grasp/carry.py: a dataset packed small and unpacked is the same dataset, to
float32 rounding."""

import importlib.util
from pathlib import Path

import numpy as np

from robocal.grasp.learned import dataset

spec = importlib.util.spec_from_file_location("carry", Path(__file__).resolve().parents[3] / "examples" / "learned_grasp" / "carry.py")
carry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(carry)


def test_a_packed_dataset_unpacks_to_the_same_shards(tiny_dataset, tmp_path):
    """Voxels, grasp rows, kinds and the manifest bit for bit; every sample to float32's rounding
    (a relative 6e-8, here bounded by 1e-7 of each array's largest value); only the shards asked
    for (4 of the 5 training objects, the validation one)."""
    carry.pack(tiny_dataset, tmp_path / "packed", {"train": 4, "val": 1, "test": 0})
    assert carry.unpack(tmp_path / "packed", tmp_path / "carried") == 5
    assert dataset.read_manifest(tmp_path / "carried") == dataset.read_manifest(tiny_dataset)
    for split, count in (("train", 4), ("val", 1)):
        files = sorted((tiny_dataset / split).glob("*.npz"))[:count]
        assert [f.name for f in sorted((tmp_path / "carried" / split).glob("*.npz"))] == [f.name for f in files]
        for f in files:
            a, b = dataset.read_shard(f), dataset.read_shard(tmp_path / "carried" / split / f.name)
            assert sorted(a) == sorted(b)
            for key in a:
                if a[key].dtype.kind == "f":
                    np.testing.assert_allclose(b[key], a[key], rtol=0, atol=1e-7 * max(1.0, float(np.abs(a[key]).max(initial=0))))
                else:
                    np.testing.assert_array_equal(b[key], a[key])
