import shutil
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from robocal.errors import InputError
from robocal.grasp.constants import KP
from robocal.grasp.learned import controller, networks, training

jax.config.update("jax_enable_x64", True)

SMALL = dict(batch=16, learning_rate=1e-3, width=32, channels=(4, 8, 8, 8), eval_every=5, checkpoint_every=5, steps=5)


@pytest.fixture(scope="module")
def trained(tiny_dataset, tmp_path_factory):
    """Both networks after 5 steps on the tiny dataset, as a `grasp train` output folder."""
    out = tmp_path_factory.mktemp("train")
    for name in controller.NETWORKS:
        training.train(training.TrainConfig(network=name, **SMALL), tiny_dataset, out / name)
    return out


def _situation(rng, L=12):
    return SimpleNamespace(grasp=SimpleNamespace(q_grasp=rng.uniform(0, 1, L), q_init=rng.uniform(0, 1, L)), hand=SimpleNamespace(effort=2.0))


def test_weights_round_trip_and_the_interfaces_follow_the_networks(trained, tmp_path):
    models = controller.load(trained)
    assert models.observation.grid == 16 and models.meta["dataset"]["grid"] == 16
    controller.save(models, tmp_path / "w")
    again = controller.load(tmp_path / "w")
    rng = np.random.default_rng(0)
    voxels = (rng.uniform(size=(16, 16, 16)) > 0.8).astype(np.uint8)
    situation = _situation(rng)
    for m in (models, again):
        est, pred = controller.LearnedEstimator(m.estimator, voxels), controller.LearnedPredictor(m.predictor, voxels)
        est.start(situation)
        pred.start(situation)
        q_d, tau = rng.uniform(0, 1, 12), rng.normal(scale=0.3, size=12)
        wrench = est.estimate(q_d, q_d, tau)
        # the estimate is the network's wrench, its force capped at the predicted scale
        raw, scale = networks.split_estimate(m.estimator(voxels.astype(float), np.r_[situation.grasp.q_grasp, situation.grasp.q_init, q_d, tau]))
        force = float(np.linalg.norm(raw[:3]))
        np.testing.assert_allclose(wrench, np.asarray(raw) * min(1.0, float(scale) / force), rtol=1e-12)
        # the offsets are the predicted torques within the effort limit over kp
        w = rng.normal(size=6)
        tau_pred = np.asarray(m.predictor(voxels.astype(float), np.r_[situation.grasp.q_grasp, situation.grasp.q_init, w]))
        np.testing.assert_allclose(pred.offsets(w), np.clip(tau_pred, -2.0, 2.0) / KP, rtol=1e-12)
    # the shipped format reads back the same numbers
    est_a = controller.LearnedEstimator(models.estimator, voxels)
    est_b = controller.LearnedEstimator(again.estimator, voxels)
    est_a.start(situation)
    est_b.start(situation)
    np.testing.assert_array_equal(est_a.estimate(q_d, q_d, tau), est_b.estimate(q_d, q_d, tau))


def test_a_run_of_one_network_goes_into_other_weights(trained, tiny_dataset, tmp_path):
    """`with_runs`: the fine-tuned estimator replaces the base's, the predictor stays the base's
    bit for bit, the meta takes the run's configuration and adds its steps."""
    base = controller.load(trained)
    base = controller.Models(base.estimator, base.predictor, base.observation, {**base.meta, "trained_steps": {"estimator": 5, "predictor": 5}})
    config = training.TrainConfig(network="estimator", init=str(trained), layers="dense", quantile=0.2, **{**SMALL, "steps": 3})
    training.train(config, tiny_dataset, tmp_path / "tune" / "estimator", start=base.estimator)
    merged = controller.with_runs(tmp_path / "tune", base)
    run, _ = controller.load_run(tmp_path / "tune" / "estimator")
    for got, want in ((merged.estimator, run), (merged.predictor, base.predictor)):
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            np.testing.assert_array_equal(a, b)
    assert merged.meta["estimator"]["quantile"] == 0.2 and merged.meta["estimator"]["layers"] == "dense"
    assert merged.meta["trained_steps"] == {"estimator": 8, "predictor": 5} and base.meta["trained_steps"]["estimator"] == 5
    assert merged.meta["predictor"] == base.meta["predictor"]


def test_a_folder_without_weights_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no learned weights"):
        controller.load(tmp_path)


def test_damaged_weights_are_input_errors_naming_file_line_and_field(trained, tmp_path):
    """learned.json that is not JSON (its line), of a wrong field (its name), weights cut short
    or of another network's shape (the file): each an InputError, never a traceback."""
    folder = tmp_path / "w"
    controller.save(controller.load(trained), folder)
    meta = (folder / controller.META).read_text()
    (folder / controller.META).write_text(meta.replace('"grid": 16', '"grid": '))
    with pytest.raises(InputError, match="not valid JSON") as error:
        controller.load(folder)
    assert error.value.path == folder / controller.META and error.value.line == 3
    (folder / controller.META).write_text(meta.replace('"width": 32', '"width": "wide"', 1))
    with pytest.raises(InputError) as error:
        controller.load(folder)
    assert error.value.field == "estimator.width"
    (folder / controller.META).write_text(meta.replace('"width": 32', '"width": 48', 1))
    with pytest.raises(InputError, match="written for other options.*changed shape") as error:
        controller.load(folder)
    assert error.value.path == folder / "estimator.eqx"
    (folder / controller.META).write_text(meta)
    weights = (folder / "predictor.eqx").read_bytes()
    (folder / "predictor.eqx").write_bytes(weights[:-100])
    with pytest.raises(InputError, match="cut short") as error:
        controller.load(folder)
    assert error.value.path == folder / "predictor.eqx"


def test_shifted_grids_are_the_object_moved_one_way_or_the_other_along_each_axis():
    voxels = np.zeros((16, 16, 16), np.uint8)
    voxels[7, 8, 9] = 1
    grids = controller.shifted(voxels, 2)
    assert grids.shape == (6, 16, 16, 16) and grids.sum() == 6
    moved = {tuple(int(i) for i in np.argwhere(grid)[0]) for grid in grids}
    assert moved == {(5, 8, 9), (9, 8, 9), (7, 6, 9), (7, 10, 9), (7, 8, 7), (7, 8, 11)}
    np.testing.assert_array_equal(controller.shifted(voxels, 0), voxels[None])
    np.testing.assert_array_equal(controller.shifted(np.stack([voxels, 2 * voxels]), 2), np.stack([grids, 2 * grids], axis=1))  # a batch of grids


def test_an_object_touching_a_face_stays_touching_it_and_nothing_wraps_round():
    """A column standing on the bottom face (z = 0, next to the palm): moved up by 2 its bottom
    layer is repeated below it; moved down it stays on the face, its top 2 layers gone. No layer
    appears at the top face (np.roll would put one there)."""
    voxels = np.zeros((16, 16, 16), np.uint8)
    voxels[7, 8, 0:5] = 1
    grids = controller.shifted(voxels, 2)
    up, down = grids[[5, 4]]  # along z (the last axis): +2, -2
    np.testing.assert_array_equal(np.flatnonzero(up[7, 8]), np.arange(0, 7))
    np.testing.assert_array_equal(np.flatnonzero(down[7, 8]), np.arange(0, 3))
    assert up.sum() == 7 and down.sum() == 3 and not grids[..., -1].any()


def test_the_predictor_with_a_shift_takes_the_mean_of_its_torques_on_the_shifted_grids(trained):
    """The batched call against the network run on each shifted grid alone; shift 0 is the network
    on the grid as seen, bit for bit as its own jitted encoding and head compute it."""
    models = controller.load(trained)
    rng = np.random.default_rng(3)
    voxels = np.zeros((16, 16, 16), np.uint8)
    voxels[4:12, 5:11, 4:13] = rng.uniform(size=(8, 6, 9)) > 0.3  # the faces empty: the shifts move the whole object
    situation, w = _situation(rng), rng.normal(size=6)
    inputs = np.r_[situation.grasp.q_grasp, situation.grasp.q_init, w]
    single = [np.asarray(models.predictor(grid.astype(float), inputs)) for grid in controller.shifted(voxels, 1)]
    for shift, want in ((1, np.mean(single, axis=0)), (0, np.asarray(models.predictor(voxels.astype(float), inputs)))):
        predictor = controller.LearnedPredictor(models.predictor, voxels, shift)
        predictor.start(situation)
        np.testing.assert_allclose(predictor.offsets(w), np.clip(want, -2.0, 2.0) / KP, rtol=1e-12, atol=1e-15)
    assert np.abs(single[0] - single[-1]).max() > 1e-6  # the shifts are seen: the mean is not any one of them
    features = jax.jit(lambda grid: models.predictor.encode(grid))(voxels.astype(float))
    alone = np.asarray(jax.jit(lambda f, x: models.predictor.head(f, x))(features, inputs))
    np.testing.assert_array_equal(predictor.offsets(w), np.clip(alone, -2.0, 2.0) / KP)  # `predictor` has shift 0 here


def test_the_predictor_shift_is_kept_with_the_weights(trained, tmp_path):
    models = controller.load(trained)
    assert models.predictor_shift == 0  # a training folder: the grid as seen
    controller.save(controller.Models(models.estimator, models.predictor, models.observation, models.meta, predictor_shift=2), tmp_path / "w")
    assert controller.load(tmp_path / "w").predictor_shift == 2
    assert controller.with_runs(tmp_path / "none", controller.load(tmp_path / "w")).predictor_shift == 2
    shutil.copytree(tmp_path / "w", tmp_path / "bad")  # another folder: `load` is cached per folder
    meta = (tmp_path / "bad" / controller.META).read_text()
    (tmp_path / "bad" / controller.META).write_text(meta.replace('"predictor_shift": 2', '"predictor_shift": -1'))
    with pytest.raises(InputError) as error:
        controller.load(tmp_path / "bad")
    assert error.value.field == "predictor_shift"
    shutil.copytree(tmp_path / "w", tmp_path / "old")
    (tmp_path / "old" / controller.META).write_text(meta.replace('"predictor_shift": 2', '"predictor_roll": 2'))
    with pytest.raises(InputError, match="renamed predictor_shift") as error:  # the wrapping roll's key: refused, not read as no shift
        controller.load(tmp_path / "old")
    assert error.value.field == "predictor_roll"
