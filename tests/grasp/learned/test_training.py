import json

import jax
import numpy as np
import pytest

from robocal.errors import InputError
from robocal.grasp.learned import training

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
    a, b = ((tmp_path / name / training.CHECKPOINT).read_bytes() for name in ("straight", "resumed"))
    assert a == b
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
