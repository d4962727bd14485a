import json
import shutil

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


def test_a_damaged_shard_or_manifest_is_an_input_error_naming_the_file(tiny_dataset, tmp_path):
    """A shard cut short (a copy that stopped), of other arrays, of inconsistent shapes, values or
    rows, or of another grid than the split's first, and a manifest that is not JSON: each
    refused with the file's name (and the array's), nothing read half."""
    copy = tmp_path / "copy"
    shutil.copytree(tiny_dataset, copy)
    shards = sorted((copy / "train").glob("*.npz"))
    shard = next(f for f in shards[1:] if len(np.load(f)["grasp"]))  # not the split's first, with samples
    whole = shard.read_bytes()
    arrays = dict(np.load(shard))
    K, L = arrays["q_init"].shape
    shard.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match="not a whole shard.*remake") as error:
        dataset.load(copy, "train")
    assert error.value.path == shard
    np.savez(shard, voxels=arrays["voxels"])
    with pytest.raises(InputError, match="q_grasp, q_init, kind, grasp, wrench") as error:
        dataset.load(copy, "train")
    assert error.value.path == shard
    for key, value, message in (
        ("q_init", arrays["q_init"][:, :5], rf"shape \({K}, 5\) where the shard's other arrays give \({K}, {L}\)"),
        ("wrench", np.full_like(arrays["wrench"], np.nan), "not finite"),
        ("grasp", arrays["grasp"] + K, rf"integers in \[0, {K}\)"),
    ):
        np.savez(shard, **{**arrays, key: value})
        with pytest.raises(InputError, match=message) as error:
            dataset.load(copy, "train")
        assert (error.value.path, error.value.field) == (shard, key)
    np.savez(shard, **{**arrays, "voxels": arrays["voxels"][:, ::2, ::2, ::2]})
    with pytest.raises(InputError, match=f"grid 8 and {L} joints; {shards[0].name} has 16") as error:
        dataset.load(copy, "train")
    assert error.value.path == shard
    (copy / dataset.MANIFEST).write_text('{"seed": 3,\n"objects": }')
    with pytest.raises(InputError, match="not valid JSON") as error:
        dataset.generate(CONFIG, copy)
    assert error.value.path == copy / dataset.MANIFEST and error.value.line == 2


def test_several_folders_are_one_dataset_of_one_observation_and_other_objects(tiny_dataset, tmp_path):
    """`load` of two folders: the first's arrays, then the second's, each sample still pointing at
    its own grasp's grid. `read_manifests` refuses a folder of the same seed (the same objects) or
    of another grid; a training run on both records both manifests."""
    from robocal.grasp.learned import training

    other = tmp_path / "other"
    dataset.generate(CONFIG.model_copy(update={"seed": 4, "objects": 3, "samples": 5}), other, workers=1)
    a, b, both = dataset.load(tiny_dataset, "train"), dataset.load(other, "train"), dataset.load([tiny_dataset, other], "train")
    S, K = len(a["grasp"]), len(a["q_init"])
    assert len(b["grasp"]) > 0 and len(both["grasp"]) == S + len(b["grasp"]) and len(both["q_init"]) == K + len(b["q_init"])
    for key in ("wrench", "tau_m", "q_init", "voxels"):
        np.testing.assert_array_equal(both[key], np.concatenate([a[key], b[key]]))
    np.testing.assert_array_equal(both["voxels"][both["grasp"][S:]], b["voxels"][b["grasp"]])
    np.testing.assert_array_equal(both["grasp"][:S], a["grasp"])
    twin = tmp_path / "twin"
    shutil.copytree(tiny_dataset, twin)
    with pytest.raises(InputError, match="the same objects as") as error:
        dataset.read_manifests([tiny_dataset, other, twin])
    assert error.value.path == twin / dataset.MANIFEST
    coarse = tmp_path / "coarse"
    shutil.copytree(other, coarse)
    (coarse / dataset.MANIFEST).write_text(json.dumps({**json.loads((other / dataset.MANIFEST).read_text()), "grid": 24}))
    with pytest.raises(InputError, match="one observation") as error:
        dataset.read_manifests([tiny_dataset, coarse])
    assert error.value.path == coarse / dataset.MANIFEST
    config = training.TrainConfig(network="predictor", steps=2, batch=8, width=16, channels=(2, 4, 4, 4), eval_every=2)
    state = training.train(config, [tiny_dataset, other], tmp_path / "run")
    assert state["datasets"] == [dataset.read_manifest(f).model_dump() for f in (tiny_dataset, other)]
