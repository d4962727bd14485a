import pytest

from robocal.grasp.learned import dataset

TINY = dataset.DatasetConfig(seed=3, objects=6, power=1, precision=1, samples=10, grid=16)


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory):
    """Six procedural objects (five for training, one for validation), one power and one
    precision grasp each, 10 teacher samples per grasp, 16^3 voxels (about 15 s)."""
    out = tmp_path_factory.mktemp("dataset")
    dataset.generate(TINY, out, workers=1)
    return out
