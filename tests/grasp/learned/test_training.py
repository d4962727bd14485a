import json
import shutil

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robocal.errors import InputError
from robocal.grasp.learned import dataset, networks, training
from robocal.grasp.learned.controller import load_run
from robocal.grasp.learned.quiet import QUIET
from tests.grasp.learned.test_networks import clipped_shift

jax.config.update("jax_enable_x64", True)

SMALL = dict(network="predictor", batch=32, learning_rate=1e-3, width=64, channels=(4, 8, 8, 8), eval_every=25)


@pytest.fixture(scope="module")
def tiny_run(tiny_dataset, tmp_path_factory):
    """A 100-step float64 predictor run on the tiny dataset: (its state, its folder)."""
    out = tmp_path_factory.mktemp("run")
    return training.train(training.TrainConfig(steps=100, checkpoint_every=50, **SMALL), tiny_dataset, out), out


def test_tiny_run_reduces_validation_loss_and_beats_the_constant(tiny_run):
    state, folder = tiny_run
    curves = np.array(state["curves"])
    first, last = curves[0, 2], curves[-1, 2]
    # the torque predictor on an object it never saw: the validation loss falls to under half
    # the untrained network's and under half the best constant's (the training mean)
    assert curves[0, 0] == 0 and last < 0.5 * first
    assert last < 0.5 * state["constant_val_loss"]
    assert (folder / training.CURVES).read_text().startswith("<!DOCTYPE html>")


def test_the_validation_loss_is_recorded_per_grasp_kind(tiny_dataset, tiny_run):
    """Each point of the curves has the validation loss of each grasp kind; weighted by the kinds'
    sample counts they give the overall validation loss, and each equals the batch loss of that
    kind's samples taken together (per-sample losses average to the batch loss)."""
    state, _ = tiny_run
    val = dataset.load(tiny_dataset, "val")
    kinds = val["kind"][val["grasp"]]
    counts = {kind: int(np.sum(kinds == kind)) for kind in ("power", "precision")}
    assert min(counts.values()) > 0
    assert [step for step, _ in state["val_by_kind"]] == [row[0] for row in state["curves"]]
    for (_, means), row in zip(state["val_by_kind"], state["curves"]):
        assert set(means) == set(counts)
        assert sum(means[k] * n for k, n in counts.items()) / len(kinds) == pytest.approx(row[2], rel=1e-12)
    model, saved = load_run(tiny_run[1])  # the run's result: the network of its best point
    voxels, rows, inputs, targets = training.arrays(val, "predictor")
    features = training.encode(model, jnp.asarray(voxels))[rows]
    precision = kinds == "precision"
    batch = training.head_loss(model, training.loss_of(training.TrainConfig(**saved["config"])), features[precision], inputs[precision], targets[precision])
    best_point = dict(state["val_by_kind"])[training.kept(state)[1]]
    assert best_point["precision"] == pytest.approx(float(batch), rel=1e-12)


def test_the_run_keeps_its_best_network(tiny_dataset, tiny_run, tmp_path):
    """The state names the point of the lowest validation loss (the first of equals), and the
    network `load_run` gives has that loss on the validation split, recomputed here. A
    fine-tuning that only does harm (a learning rate of 0.3 on the trained network: every later
    point above the start's) keeps the start network, bit for bit."""
    state, folder = tiny_run
    curves = np.array(state["curves"], dtype=float)
    best = int(np.argmin(curves[:, 2]))
    assert state["scores"] == [[row[0], row[2]] for row in state["curves"]]  # the predictor: judged by its validation loss
    assert state["best"] == [int(curves[best, 0]), curves[best, 2]] and (folder / training.BEST).exists()
    net, _ = load_run(folder)
    config = training.TrainConfig(**state["config"])
    val = training.on_device(training.arrays(dataset.load(tiny_dataset, "val"), config.network), config.precision)
    assert training.evaluate(net, training.loss_of(config), val).mean() == pytest.approx(state["best"][1], rel=1e-12)
    harm = training.TrainConfig(steps=10, init=str(folder), **{**SMALL, "learning_rate": 0.3, "eval_every": 2, "checkpoint_every": 5})
    harmed = training.train(harm, tiny_dataset, tmp_path / "harm", start=net)
    assert min(row[2] for row in harmed["curves"][1:]) > harmed["curves"][0][2]  # the test's premise: every step did harm
    assert harmed["best"] == [0, harmed["curves"][0][2]] and training.kept(harmed) == (training.BEST, 0)
    kept_net, _ = load_run(tmp_path / "harm")
    for a, b in zip(jax.tree.leaves(kept_net), jax.tree.leaves(net)):
        np.testing.assert_array_equal(a, b)


def test_the_minimal_wrench_estimator_is_judged_by_the_force_it_reports(tiny_dataset, tmp_path):
    """`force_figures` gives the mean distance (N) between the applied force and the estimate
    shortened to its scale, and the mean force so reported where less than `QUIET` is applied, as
    computed here sample by sample through the whole network; a minimal-wrench run's scores are
    the first (its loss would prefer a network whose scale is too small), its best the lowest by
    `rank`; the L2 ablation is judged by its loss."""
    config = training.TrainConfig(steps=4, **{**SMALL, "network": "estimator", "eval_every": 2})
    data = training.arrays(dataset.load(tiny_dataset, "val"), "estimator")
    model = training.new_network(config, data[0].shape[1], data[2], data[3])
    split = training.on_device(data, config.precision)
    one_by_one, quiet = [], []
    for grid, inputs, target in zip(data[0][data[1]], data[2], data[3]):
        wrench, scale = (np.asarray(a) for a in networks.split_estimate(model(jnp.asarray(grid, dtype=float), jnp.asarray(inputs))))
        one_by_one.append(np.linalg.norm(networks.capped(wrench, scale)[:3] - target[:3]))
        if np.linalg.norm(target[:3]) < QUIET:
            quiet.append(np.linalg.norm(networks.capped(wrench, scale)[:3]))
    assert len(quiet) > 0
    features = training.encode_all(model, split[0])
    assert training.force_figures(model, features, split) == (pytest.approx(np.mean(one_by_one), rel=1e-12), pytest.approx(np.mean(quiet), rel=1e-12))
    assert training.criterion(config) == training.FORCE_ERROR and training.criterion(config.model_copy(update={"loss": "l2"})) == training.VALIDATION_LOSS
    run = training.train(config, tiny_dataset, tmp_path / "estimator", start=model)
    assert run["scores"][0] == [0, pytest.approx(np.mean(one_by_one), rel=1e-12)] and run["quiet"][0] == [0, pytest.approx(np.mean(quiet), rel=1e-12)]
    assert run["best"] == min(run["scores"], key=lambda point: training.rank(run, *point))
    page = (tmp_path / "estimator" / training.CURVES).read_text()
    assert f"the network of step {run['best'][0]}, the best by force error (N) (it reports {dict(run['quiet'])[run['best'][0]]:.3g} N on average" in page


def test_an_estimator_that_invents_forces_is_kept_only_when_every_point_does_and_then_is_reported():
    """`rank`: a validation point whose estimator reports more than `QUIET_LIMIT` on average where
    less than `QUIET` acts comes after every point that does not, however much lower its force
    error; among points on the same side the lower error wins. A run whose kept point is over the
    limit warns, with the step and the force."""
    state = {"step": 1500, "quiet": [[0, 0.46], [500, 0.31], [1000, 0.12], [1500, 0.29]], "object_features": []}
    points = [[0, 2.80], [500, 2.85], [1000, 3.40], [1500, 3.10]]
    assert min(points, key=lambda point: training.rank(state, *point)) == [1500, 3.10]
    assert training.rank(state, 0, 2.80) > training.rank(state, 1000, 3.40) and training.rank(state, 0, 2.80) < training.rank(state, 500, 2.90)
    assert training.rank({"quiet": []}, 7, 1.0) == (False, 1.0)  # the validation loss's criterion records no quiet force
    assert training.warnings({**state, "best": [1500, 3.10]}) == []
    (warning,) = training.warnings({**state, "quiet": [[0, 0.46], [500, 0.31]], "best": [0, 2.80]})
    assert "network of step 0 reports 0.460 N" in warning and f"less than {QUIET} N" in warning


def test_a_network_with_dead_convolutions_is_reported(tiny_dataset, tiny_run, tmp_path):
    """Some of a trained network's object features vary across the validation grids; the same network
    with its last convolution's biases at -1e6 (every unit off for every object: what a learning
    rate too high leaves) has none that varies, and a run from it records so and warns, with the
    step and the count."""
    state, folder = tiny_run
    net, _ = load_run(folder)
    voxels = jnp.asarray(dataset.load(tiny_dataset, "val")["voxels"])
    total = training.encode(net, voxels).shape[1]
    assert state["object_features"][-1] == [100, training.varying_features(training.encode(net, voxels)), total]
    assert training.varying_features(training.encode(net, voxels)) > 0 and training.warnings(state) == []
    dead = eqx.tree_at(lambda m: m.net.convs[-1].bias, net, replace=jnp.full_like(net.net.convs[-1].bias, -1e6))
    assert training.varying_features(training.encode(dead, voxels)) == 0
    run = training.train(training.TrainConfig(steps=4, init="dead", **{**SMALL, "eval_every": 2}), tiny_dataset, tmp_path / "dead", start=dead)
    assert [row[1] for row in run["object_features"]] == [0, 0, 0]  # no gradient reaches a unit that is off: they stay dead
    (warning,) = training.warnings(run)
    assert f"none of the {total} object features of the network of step {training.kept(run)[1]} varies" in warning
    assert training.varying_features(np.ones((1, 5))) is None  # one grid: nothing to compare


def test_a_resumed_run_takes_the_same_steps(tiny_dataset, tmp_path):
    config = training.TrainConfig(steps=40, checkpoint_every=20, **SMALL)
    straight = training.train(config, tiny_dataset, tmp_path / "straight")

    class Killed(Exception):
        pass

    def kill_at_30(step, total):
        if step == 30:
            raise Killed

    with pytest.raises(Killed):
        training.train(config, tiny_dataset, tmp_path / "resumed", progress=kill_at_30)
    assert json.loads((tmp_path / "resumed" / training.STATE).read_text())["step"] == 20
    resumed = training.train(config, tiny_dataset, tmp_path / "resumed")
    assert resumed["curves"][-1] == straight["curves"][-1]  # same losses to the last bit
    for name in (training.CHECKPOINT, training.BEST):
        assert (tmp_path / "straight" / name).read_bytes() == (tmp_path / "resumed" / name).read_bytes()
    assert resumed["best"] == straight["best"]
    with pytest.raises(InputError, match="another configuration"):
        training.train(config.model_copy(update={"steps": 41}), tiny_dataset, tmp_path / "resumed")


def test_a_damaged_run_folder_is_an_input_error_naming_the_file(tiny_dataset, tmp_path):
    """Resuming from a checkpoint cut short, or from a state.json without its step: refused with
    the file (and field), the run folder left as it was."""
    config = training.TrainConfig(steps=2, checkpoint_every=2, **SMALL)
    run = tmp_path / "run"
    training.train(config, tiny_dataset, run)
    checkpoint = (run / training.CHECKPOINT).read_bytes()
    (run / training.CHECKPOINT).write_bytes(checkpoint[:1000])
    with pytest.raises(InputError, match="cut short or written for other options") as error:
        training.train(config, tiny_dataset, run)
    assert error.value.path == run / training.CHECKPOINT
    assert (run / training.CHECKPOINT).read_bytes() == checkpoint[:1000]
    state = json.loads((run / training.STATE).read_text())
    del state["step"]
    (run / training.STATE).write_text(json.dumps(state))
    with pytest.raises(InputError, match="required") as error:
        training.train(config, tiny_dataset, run)
    assert error.value.path == run / training.STATE and error.value.field == "step"


def test_a_manifest_of_another_grid_or_no_configuration_is_refused(tiny_dataset, tmp_path):
    """The shards' grid must be the manifest's (the observation the weights are used with), and
    the manifest a dataset configuration."""
    copy = tmp_path / "data"
    shutil.copytree(tiny_dataset, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    config = training.TrainConfig(steps=1, **SMALL)
    (copy / "manifest.json").write_text(json.dumps({**manifest, "grid": 24}))
    with pytest.raises(InputError, match="grids of 16 voxels where .*manifest.json says 24"):
        training.train(config, copy, tmp_path / "run")
    (copy / "manifest.json").write_text(json.dumps({**manifest, "grid": "x"}))
    with pytest.raises(InputError) as error:
        training.train(config, copy, tmp_path / "run")
    assert error.value.path == copy / "manifest.json" and error.value.field == "grid"
    assert not (tmp_path / "run").exists()


def test_a_float32_run_follows_the_float64_run_and_keeps_its_weights_in_float32(tiny_dataset, tiny_run, tmp_path):
    from robocal.grasp.learned.controller import load_run

    double = tiny_run[0]
    single = training.train(training.TrainConfig(**{**double["config"], "precision": "float32"}), tiny_dataset, tmp_path / "f32")
    # same initial weights (rounded), same minibatches: single precision rounds each step at
    # 6e-8 relative; over 100 Adam steps the validation losses agree to well under 1 %
    a, b = (np.array(run["curves"], dtype=float)[:, 2] for run in (double, single))
    assert np.allclose(a, b, rtol=1e-2), (a, b)
    net, _ = load_run(tmp_path / "f32")
    leaves = [leaf for leaf in jax.tree.leaves(net) if hasattr(leaf, "dtype")]
    assert leaves and all(leaf.dtype == np.float32 for leaf in leaves)


def test_grouped_minibatches_are_uniform_and_share_their_grid():
    """`minibatch` with per_grid 4 over grasps of 1 to 40 samples: every group within one grasp,
    each index drawn uniformly over all samples (chi-square over 3,000 batches), and per_grid 1
    the plain uniform draw."""
    counts = np.array([1, 3, 40, 7, 25, 12])
    rows = jnp.asarray(np.repeat(np.arange(len(counts)), counts), dtype=jnp.int32)
    draw = jax.jit(jax.vmap(lambda k: training.minibatch(k, rows, 32, 4)))
    picks = np.asarray(draw(jax.random.split(jax.random.PRNGKey(0), 3000)))
    groups = np.asarray(rows)[picks].reshape(3000, 8, 4)
    assert (groups == groups[:, :, :1]).all()
    # 96,000 draws over 88 samples: expected 1,090.9 each; chi-square with 87 degrees of freedom
    # has mean 87 and standard deviation 13.2, so 87 + 5 sd = 153 fails only for a non-uniform draw
    observed = np.bincount(picks.ravel(), minlength=len(rows))
    expected = picks.size / len(rows)
    assert ((observed - expected) ** 2 / expected).sum() < 153
    key = jax.random.PRNGKey(3)
    np.testing.assert_array_equal(training.minibatch(key, rows, 16, 1), jax.random.randint(key, (16,), 0, len(rows)))
    with pytest.raises(ValueError, match="multiple of per_grid"):
        training.TrainConfig(batch=30, per_grid=4)


def test_a_grouped_step_takes_the_loss_of_its_samples_each_encoded(tiny_dataset, tmp_path):
    """The step's loss with per_grid 4 (each grid encoded once, its features repeated) is the
    loss of the same samples run through the whole network one by one; and such a run learns."""
    config = training.TrainConfig(steps=60, per_grid=4, **SMALL)
    data = training.arrays(dataset.load(tiny_dataset, "train"), config.network)
    split = training.on_device(data, config.precision)
    model = training.new_network(config, data[0].shape[1], data[2], data[3])
    optimizer, step = training.training_step(training.loss_of(config), config.learning_rate, config.batch, config.per_grid)
    key = jax.random.PRNGKey(config.seed + 1)
    _, _, value = step(model, optimizer.init(eqx.filter(model, eqx.is_array)), split, key, jnp.uint32(7))
    pick = np.asarray(training.minibatch(jax.random.fold_in(key, jnp.uint32(7)), split[1], config.batch, config.per_grid))
    one_by_one = jnp.stack([model(data[0][data[1][i]].astype(float), data[2][i]) for i in pick])
    np.testing.assert_allclose(float(value), float(training.loss_of(config)(one_by_one, jnp.asarray(data[3][pick]))), rtol=1e-12)
    state = training.train(config, tiny_dataset, tmp_path / "grouped")
    assert state["curves"][-1][2] < 0.5 * state["constant_val_loss"]


def test_an_augmented_step_takes_the_loss_of_its_samples_on_their_grids_moved(tiny_dataset):
    """With shift_augment 2 the step's loss is that of its samples run one by one through the whole
    network on their grids moved by the step's offsets (`clipped_shift`, indexing with clipped
    coordinates, not `networks.moved`); the offsets differ from grid to grid; and dense layers alone take none."""
    config = training.TrainConfig(per_grid=4, shift_augment=2, **SMALL)
    data = training.arrays(dataset.load(tiny_dataset, "train"), config.network)
    split = training.on_device(data, config.precision)
    model = training.new_network(config, data[0].shape[1], data[2], data[3])
    optimizer, step = training.training_step(training.loss_of(config), config.learning_rate, config.batch, config.per_grid, "all", 2)
    key, number = jax.random.PRNGKey(config.seed + 1), jnp.uint32(7)
    _, _, value = step(model, optimizer.init(eqx.filter(model, eqx.is_array)), split, key, number)
    draw = jax.random.fold_in(key, number)
    pick = np.asarray(training.minibatch(draw, split[1], config.batch, config.per_grid))
    offsets = np.repeat(np.asarray(jax.random.randint(jax.random.fold_in(draw, 2), (config.batch // config.per_grid, 3), -2, 3)), config.per_grid, axis=0)
    assert len({tuple(o) for o in offsets}) > 1 and np.abs(offsets).max() == 2
    one_by_one = jnp.stack([model(clipped_shift(data[0][data[1][i]], o).astype(float), data[2][i]) for i, o in zip(pick, offsets)])
    np.testing.assert_allclose(float(value), float(training.loss_of(config)(one_by_one, jnp.asarray(data[3][pick]))), rtol=1e-12)
    with pytest.raises(ValueError, match="shift_augment needs layers 'all'"):
        training.TrainConfig(layers="dense", init="w", shift_augment=1)


def test_a_run_started_from_a_trained_network_begins_where_it_ended(tiny_dataset, tiny_run, tmp_path):
    """Fine-tuning: a run given `start` (the tiny run's network, with its statistics) has that
    network's validation loss at step 0, to rounding; a network of another shape is refused."""
    from robocal.grasp.learned.controller import load_run

    state, folder = tiny_run
    net, _ = load_run(folder)
    config = training.TrainConfig(steps=5, init=str(folder), **{**SMALL, "learning_rate": 1e-4, "eval_every": 5})
    tuned = training.train(config, tiny_dataset, tmp_path / "tuned", start=net)
    np.testing.assert_allclose(tuned["curves"][0][2], state["best"][1], rtol=1e-12)
    assert tuned["step"] == 5 and tuned["config"]["init"] == str(folder)
    wider = config.model_copy(update={"width": 32})
    with pytest.raises(InputError, match="not of the shape") as error:
        training.train(wider, tiny_dataset, tmp_path / "wider", start=net)
    assert error.value.path == folder and not (tmp_path / "wider").exists()


def test_a_run_of_the_dense_layers_keeps_the_convolutions_and_learns(tiny_dataset, tiny_run, tmp_path):
    """layers "dense": the convolutions and the input / output statistics stay bit for bit those of
    the network it starts from, the dense layers move, and the validation loss falls from the
    start network's; a resumed dense run takes the same steps. Without a start network it is
    refused."""
    from robocal.grasp.learned.controller import load_run

    state, folder = tiny_run
    net, _ = load_run(folder)
    config = training.TrainConfig(steps=60, init=str(folder), layers="dense", **{**SMALL, "learning_rate": 3e-4, "eval_every": 20, "checkpoint_every": 30})
    tuned = training.train(config, tiny_dataset, tmp_path / "dense", start=net)
    after, _ = load_run(tmp_path / "dense")
    kept = lambda m: (m.net.convs, m.x_mean, m.x_std, m.y_mean, m.y_std)  # noqa: E731
    for a, b in zip(jax.tree.leaves(kept(after)), jax.tree.leaves(kept(net))):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(after.net.dense), jax.tree.leaves(net.net.dense)))
    np.testing.assert_allclose(tuned["curves"][0][2], state["best"][1], rtol=1e-12)  # encoded once, the same loss
    assert tuned["curves"][-1][2] < tuned["curves"][0][2]

    def kill_at_45(step, total):
        if step == 45:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        training.train(config, tiny_dataset, tmp_path / "resumed", progress=kill_at_45, start=net)
    assert json.loads((tmp_path / "resumed" / training.STATE).read_text())["step"] == 30
    resumed = training.train(config, tiny_dataset, tmp_path / "resumed", start=net)
    assert resumed["curves"][-1] == tuned["curves"][-1]  # same losses to the last bit
    with pytest.raises(ValueError, match="give init"):
        training.TrainConfig(layers="dense", **SMALL)
