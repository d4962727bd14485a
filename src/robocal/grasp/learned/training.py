"""Training the learned controller's networks (seed paper 002, Sec. IV and V-A) with optax.

`train(config, data, out)` fits one network on the `train` split of a dataset folder
(`dataset.load`) and measures the `val` split every `eval_every` steps:

- estimator: inputs (q_grasp, q_init, q_d, tau_m) and the voxels, target the applied wrench w,
  loss the minimal-wrench loss (`losses.estimator_loss`, quantile t) or, for the ablation,
  plain L2 on the wrench (`loss="l2"`);
- predictor: inputs (q_grasp, q_init, w') and the voxels, target the teacher's torques tau'
  (L2).

Inputs are standardized and outputs scaled by the training set's statistics
(`networks.Scaled`, kept with the weights). The baseline every curve is compared with is the
best constant: the training mean (for the minimal-wrench loss: the mean wrench with the t-quantile of the scales).
Adam (learning rate 3e-4, the paper's) on minibatches drawn with `jax.random.fold_in(key,
step)` (`per_grid` > 1: groups of that many samples of one grasp, whose grid the step encodes
once for the group; the convolutions are most of a step's work), so a run resumed from its
checkpoint (`checkpoint.eqx` + `state.json`, written every `checkpoint_every` steps and at the
end) takes the same steps as one that never stopped. The best network so far by the run's
`criterion` and `rank` is kept beside it (`best.eqx`, written before the state that names its
step): on a small dataset validation turns worse long before the training loss stops falling,
and the best network, not the last, is the run's result (`kept`). `layers="dense"` fine-tunes
the dense layers of a trained network only: its convolutions stay, so every grid is encoded
once for the run and a step costs the dense layers alone (what a CPU can train; for example the
estimator for another quantile t). `shift_augment` K > 0 moves each minibatch grid by a random
whole offset in [-K, K]^3 voxels (edge-padded, `networks.moved`), so that on few objects the
convolutions learn less of their training objects' exact voxels. Each validation point also
counts the object features that vary across the validation grids (`varying_features`): where
none does, the convolutions are dead (every unit off for every object: a learning rate too
high), the network ignores the object, and `warnings` says so.
`curves.html` shows the training and validation losses against the constant baseline, and the
validation loss per grasp kind: for the estimator the power grasps' part is mostly a floor the
network cannot pass (their palm takes an external force the joint torques do not see, so the
minimal-wrench answer is a small scale whatever was applied), and progress shows in the
precision grasps' part.

The splits are put on JAX's default device once (the grids as uint8) and every step draws its
minibatch there, inside the compiled step: on a GPU nothing but the step number crosses to the
device per step. `precision="float32"` trains the network in single precision (for a GPU,
where double-precision convolutions are slow); the weights are then float32, and `Scaled`
casts its inputs to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from pydantic import BaseModel, ConfigDict, Field, model_validator

from robocal.errors import InputError, RobocalError
from robocal.grasp.learned import losses, networks
from robocal.grasp.learned.curves import write_curves
from robocal.grasp.learned.leaves import read_leaves, write_leaves
from robocal.grasp.learned.networks import Scaled, in_precision
from robocal.grasp.learned.quiet import QUIET, QUIET_LIMIT, invents_forces, quiet_at
from robocal.outputs import write_atomically
from robocal.validation import Seed, read_json, validate_mapping

CHECKPOINT, BEST, STATE, CURVES = "checkpoint.eqx", "best.eqx", "state.json", "curves.html"
FORCE_ERROR, VALIDATION_LOSS = "force error (N)", "validation loss"  # the `criterion`s


class TrainConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    network: Literal["estimator", "predictor"] = "estimator"
    loss: Literal["minimal_wrench", "l2"] = "minimal_wrench"  # estimator only
    quantile: float = Field(losses.QUANTILE, gt=0.0, lt=1.0)  # t of the scale loss
    steps: int = Field(20000, ge=1)
    batch: int = Field(64, ge=1)
    per_grid: int = Field(1, ge=1)  # samples of one grasp per minibatch: its grid is encoded once for them (batch a multiple)
    learning_rate: float = Field(3e-4, gt=0.0)
    width: int = Field(networks.WIDTH, ge=4)
    channels: tuple[int, int, int, int] = networks.CHANNELS
    seed: Seed = 0
    eval_every: int = Field(200, ge=1)
    checkpoint_every: int = Field(1000, ge=1)
    precision: Literal["float64", "float32"] = "float64"  # the network's and the inputs' float type
    init: str | None = None  # the weights or `grasp train` folder whose network the run starts from (fine-tuning); None: random weights
    layers: Literal["all", "dense"] = "all"  # what trains; "dense": the dense layers only, the convolutions kept from `init` (every grid encoded once per run)
    shift_augment: int = Field(0, ge=0, le=8)  # voxels: each minibatch grid moved by a random whole offset up to this along each axis (0: as seen)

    @model_validator(mode="after")
    def _whole_groups(self) -> TrainConfig:
        if self.batch % self.per_grid:
            raise ValueError(f"batch ({self.batch}) must be a multiple of per_grid ({self.per_grid})")
        if self.layers == "dense" and self.init is None:
            raise ValueError("layers 'dense' keeps the convolutions of a trained network: give init")
        if self.layers == "dense" and self.shift_augment:
            raise ValueError("layers 'dense' encodes every grid once, as seen: shift_augment needs layers 'all'")
        return self


def arrays(data: dict[str, np.ndarray], network: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(voxels (K, G, G, G), grasp row per sample (S,), inputs (S, n), targets (S, m)) of one split."""
    g = data["grasp"]
    if network == "estimator":
        inputs = np.hstack([data["q_grasp"][g], data["q_init"][g], data["q_d"], data["tau_m"]])
        return data["voxels"], g, inputs, data["wrench"]
    inputs = np.hstack([data["q_grasp"][g], data["q_init"][g], data["wrench_cmd"]])
    return data["voxels"], g, inputs, data["tau_cmd"]


def new_network(config: TrainConfig, grid: int, inputs: np.ndarray, targets: np.ndarray) -> Scaled:
    """A freshly initialized network (seeded) with the statistics of the training inputs (S, n)
    and targets (S, m)."""
    n_joints = targets.shape[1] if config.network == "predictor" else inputs.shape[1] // 4
    make = networks.estimator_network if config.network == "estimator" else networks.predictor_network
    net = make(grid, n_joints, config.seed, channels=config.channels, width=config.width)
    x_std = np.where(inputs.std(axis=0) > 1e-9, inputs.std(axis=0), 1.0)
    y_mean, y_std = targets.mean(axis=0), np.where(targets.std(axis=0) > 1e-9, targets.std(axis=0), 1.0)
    if config.network == "estimator":  # the seventh output is the scale (N) before its softplus
        y_mean = np.r_[y_mean, 0.0]
        y_std = np.r_[y_std, np.mean(losses.ground_truth_scale(jnp.asarray(targets)))]
    return in_precision(Scaled(net, jnp.asarray(inputs.mean(axis=0)), jnp.asarray(x_std), jnp.asarray(y_mean), jnp.asarray(y_std)), config.precision)


def loss_of(config: TrainConfig) -> Callable:
    """Batch loss (outputs (B, m'), targets (B, m)) -> scalar; the same function for the same
    settings, so that jitted code is reused across runs in one process."""
    return _loss(config.network, config.loss, config.quantile)


@cache
def _loss(network: str, kind: str, quantile: float) -> Callable:
    if network == "predictor":
        return losses.l2_loss
    if kind == "l2":
        return lambda out, target: losses.l2_loss(networks.split_estimate(out)[0], target)
    return lambda out, target: losses.estimator_loss(*networks.split_estimate(out), target, quantile)


def constant_loss(config: TrainConfig, train_targets: np.ndarray, targets: np.ndarray) -> float:
    """The loss on `targets` of the best constant output fitted to the training targets."""
    mean = jnp.asarray(train_targets.mean(axis=0))
    out = jnp.broadcast_to(mean, targets.shape)
    if config.network == "estimator":
        scale = np.quantile(np.linalg.norm(train_targets[:, :3], axis=1), config.quantile)
        raw = np.log(np.expm1(max(scale, 1e-6)))  # softplus^-1
        out = jnp.hstack([out, jnp.full((len(targets), 1), raw)])
    return float(loss_of(config)(out, jnp.asarray(targets)))


def on_device(split: tuple, precision: str) -> tuple:
    """A split (voxels (K, G, G, G), grid row per sample (S,), inputs (S, n), targets (S, m)) as
    arrays on JAX's default device: grids uint8, rows int32, inputs and targets in `precision`."""
    voxels, rows, inputs, targets = split
    return jnp.asarray(voxels, dtype=jnp.uint8), jnp.asarray(rows, dtype=jnp.int32), jnp.asarray(inputs, dtype=precision), jnp.asarray(targets, dtype=precision)


def encode(model: Scaled, voxels: jnp.ndarray) -> jnp.ndarray:
    """Object features (K, F) of occupancy grids (K, G, G, G) of any dtype."""
    return jax.vmap(model.encode)(voxels)


def head_loss(model: Scaled, loss: Callable, features, inputs, targets) -> jnp.ndarray:
    """Loss of a batch: object features per sample (B, F), inputs (B, n), targets (B, m)."""
    return loss(jax.vmap(model.head)(features, inputs), targets)


_encode = eqx.filter_jit(encode)


def outputs(model: Scaled, voxels: np.ndarray, rows: np.ndarray, inputs: np.ndarray) -> jnp.ndarray:
    """The model's outputs (S, m) for samples: grids (K, G, G, G), each encoded once, the grid
    row of each sample (S,) and its inputs (S, n)."""
    return head_outputs(model, encode_all(model, jnp.asarray(voxels)), rows, inputs)


_heads = eqx.filter_jit(lambda model, features, inputs: jax.vmap(model.head)(features, inputs))


def head_outputs(model: Scaled, features: jnp.ndarray, rows, inputs, chunk: int = 4096) -> jnp.ndarray:
    """The model's outputs (S, m) for samples from their grids' features (K, F), the grid row of
    each sample (S,) and its inputs (S, n), in chunks."""
    rows, inputs = jnp.asarray(rows), jnp.asarray(inputs)
    return jnp.concatenate([_heads(model, features[rows[start : start + chunk]], inputs[start : start + chunk]) for start in range(0, len(rows), chunk)])


def force_figures(model: Scaled, features: jnp.ndarray, split: tuple) -> tuple[float, float | None]:
    """An estimator's split (`on_device`, its grids' features (K, F) given), through the force the
    controller acts on (the estimate shortened to its scale, `networks.capped`): its mean error
    (N), and the mean force (N) it reports on the samples with less than `QUIET` applied (None
    where there are none)."""
    _, rows, inputs, targets = split
    wrench, scale = (np.asarray(a, dtype=float) for a in networks.split_estimate(head_outputs(model, features, rows, inputs)))
    force, applied = networks.capped(wrench, scale)[:, :3], np.asarray(targets, dtype=float)[:, :3]
    quiet = np.linalg.norm(applied, axis=1) < QUIET
    return float(np.mean(np.linalg.norm(force - applied, axis=1))), float(np.mean(np.linalg.norm(force[quiet], axis=1))) if quiet.any() else None


def criterion(config: TrainConfig) -> str:
    """The score of a run's validation points (`rank` orders them): the validation loss, except
    for the minimal-wrench estimator, whose loss rewards a scale too small (Eq. 13 counts only
    the samples below it: in the third GPU lease, docs/grasp.md, one trained for t = 0.05 beat at
    t = 0.5 every one trained for 0.5); there `force_figures`' mean error."""
    return FORCE_ERROR if config.network == "estimator" and config.loss == "minimal_wrench" else VALIDATION_LOSS


def rank(state: dict, step: int, score: float) -> tuple[bool, float]:
    """A validation point's order among a run's (the lowest is kept): one whose estimator
    `invents_forces` comes after every one that does not, whatever its score; then the lower
    score."""
    return invents_forces(state, step), score


def sample_losses(model: Scaled, loss: Callable, features, inputs, targets) -> jnp.ndarray:
    """Each sample's own loss (B,): features (B, F), inputs (B, n), targets (B, m). Every loss here
    is a mean over its batch of per-sample terms, so these average to the batch loss."""
    return jax.vmap(lambda f, x, t: head_loss(model, loss, f[None], x[None], t[None]))(features, inputs, targets)


_sample_losses = eqx.filter_jit(sample_losses)


def encode_all(model: Scaled, voxels: jnp.ndarray, chunk: int = 512) -> jnp.ndarray:
    """Object features (K, F) of grids (K, G, G, G), in chunks."""
    return jnp.concatenate([_encode(model, voxels[start : start + chunk]) for start in range(0, len(voxels), chunk)])


def evaluate(model: Scaled, loss: Callable, split: tuple, chunk: int = 512, encoded: bool = False) -> np.ndarray:
    """The loss of every sample (S,) of a whole split (`on_device` arrays): each grid encoded once,
    the samples in chunks. `encoded`: the split holds the grids' features (K, F), not the grids
    (a run of the dense layers only, `encoded_split`)."""
    voxels, rows, inputs, targets = split
    features = voxels if encoded else encode_all(model, voxels, chunk)
    parts = [
        _sample_losses(model, loss, features[rows[start : start + chunk]], inputs[start : start + chunk], targets[start : start + chunk])
        for start in range(0, len(rows), chunk)
    ]
    return np.asarray(jax.device_get(jnp.concatenate(parts)), dtype=float)


def varying_features(features: jnp.ndarray) -> int | None:
    """How many of the object features (K, F) of K grids vary across them (standard deviation over
    the grids above 1e-6 of the largest feature, or of 1); None for fewer than two grids. A
    feature that does not vary tells the head nothing about the object: a ReLU unit off for every
    grid stays off, since no gradient reaches it."""
    if len(features) < 2:
        return None
    values = np.asarray(jax.device_get(features), dtype=float)
    return int(np.sum(values.std(axis=0) > 1e-6 * max(1.0, float(np.abs(values).max()))))


def by_kind(per_sample: np.ndarray, kinds: np.ndarray) -> dict[str, float]:
    """Mean loss per grasp kind: per-sample losses (S,) and each sample's grasp kind (S,)."""
    return {str(kind): float(per_sample[kinds == kind].mean()) for kind in np.unique(kinds)}


def minibatch(key: jax.Array, rows: jnp.ndarray, batch: int, per_grid: int) -> jnp.ndarray:
    """Sample indices (batch,) into a split whose grid rows (S,) ascend: batch / per_grid samples
    drawn uniformly, each followed by per_grid - 1 drawn uniformly among its grasp's samples, so
    every index is still uniform over the split and each group shares one grid."""
    first = jax.random.randint(key, (batch // per_grid,), 0, rows.shape[0])
    if per_grid == 1:
        return first
    grid = rows[first]
    start, end = jnp.searchsorted(rows, grid, side="left"), jnp.searchsorted(rows, grid, side="right")
    more = start[:, None] + jnp.floor(jax.random.uniform(jax.random.fold_in(key, 1), (len(first), per_grid - 1)) * (end - start)[:, None]).astype(rows.dtype)
    return jnp.concatenate([first[:, None], more], axis=1).reshape(-1)


def trainable(model: Scaled, layers: str) -> Scaled:
    """Filter spec of the arrays a run of `layers` trains: every float array ("all"), or the dense
    layers' ("dense")."""
    if layers == "all":
        return jax.tree.map(eqx.is_inexact_array, model)
    spec = jax.tree.map(lambda _: False, model)
    return eqx.tree_at(lambda m: m.net.dense, spec, replace=jax.tree.map(eqx.is_inexact_array, model.net.dense))


@cache
def training_step(
    loss: Callable, learning_rate: float, batch: int, per_grid: int, layers: str = "all", shift_augment: int = 0
) -> tuple[optax.GradientTransformation, Callable]:
    """Adam and its jitted training step (kept per loss, rate, minibatch shape, layers and
    augmentation: compiled once per process). The step draws its minibatch (`minibatch`) from the
    split on the device with `fold_in(key, step)` and encodes each of its grids once, moved by a
    random offset in [-shift_augment, shift_augment]^3 voxels (`networks.moved`) when
    shift_augment > 0; with layers "dense" the split holds the grids' features (`encoded_split`)
    and only the dense layers move (Adam's state covers only them: `optimizer.init(eqx.filter(model,
    trainable(model, layers)))`)."""
    optimizer = optax.adam(learning_rate)

    def batch_loss(model, split, pick, key):
        grids, rows, inputs, targets = split
        if layers == "dense":
            features = grids[rows[pick]]
        else:
            seen = grids[rows[pick[::per_grid]]]
            if shift_augment:
                seen = networks.moved(seen, jax.random.randint(key, (len(seen), 3), -shift_augment, shift_augment + 1), shift_augment)
            features = jnp.repeat(encode(model, seen), per_grid, axis=0)
        return head_loss(model, loss, features, inputs[pick], targets[pick])

    @eqx.filter_jit
    def step(model, state, split, key, number):
        draw = jax.random.fold_in(key, number)
        pick = minibatch(draw, split[1], batch, per_grid)
        params, kept = eqx.partition(model, trainable(model, layers))
        value, grads = eqx.filter_value_and_grad(lambda p: batch_loss(eqx.combine(p, kept), split, pick, jax.random.fold_in(draw, 2)))(params)
        updates, state = optimizer.update(grads, state, params)
        return eqx.apply_updates(model, updates), state, value

    return optimizer, step


def encoded_split(model: Scaled, split: tuple) -> tuple:
    """An `on_device` split with its grids (K, G, G, G) replaced by `model`'s features of them (K,
    F): for a run of the dense layers only, whose convolutions do not change."""
    return (encode_all(model, split[0]), *split[1:])


class RunState(BaseModel):
    """The fields of a run's state.json that resuming and loading it rely on; the others (dataset,
    constant_val_loss) are its record."""

    model_config = ConfigDict(extra="allow")

    config: TrainConfig
    step: int = Field(ge=0)
    grid: int = Field(ge=1)
    curves: list[tuple[int, float | None, float]]


def read_state(run: Path) -> dict | None:
    """A run folder's state (`train`'s return value) as written, None where it has none yet; a
    state.json that is not one is an InputError naming the field."""
    path = Path(run) / STATE
    if not path.exists():
        return None
    state = read_json(path)
    validate_mapping(path, state, RunState)
    return state


def _load(out: Path, config: TrainConfig, like: tuple) -> tuple[tuple, dict] | None:
    """The checkpoint (model, optimizer state) and state of an earlier run of `config`, if any."""
    state = read_state(out)
    if state is None:
        return None
    if TrainConfig(**state["config"]) != config:  # a field added since the run was made takes its default
        raise InputError(Path(out) / STATE, "the folder holds a training run of another configuration; give a new --out or the same options")
    return read_leaves(Path(out) / CHECKPOINT, like), state


def _save(out: Path, model_state: tuple, state: dict) -> None:
    """Checkpoint and state, each written aside and renamed into place."""
    write_leaves(out, CHECKPOINT, model_state)
    write_atomically(out / STATE, json.dumps(state, indent=1).encode())


def kept(state: dict) -> tuple[str, int]:
    """The file in a run folder that holds the run's result, and its step: the best network
    (`BEST`) where the state names one, else (a run made before robocal kept it) the checkpoint's."""
    return (BEST, state["best"][0]) if state.get("best") else (CHECKPOINT, state["step"])


def warnings(state: dict) -> list[str]:
    """What makes the run's result (`kept`) doubtful, with the evidence: no object feature varies;
    forces reported where none acts."""
    _, step = kept(state)
    found = []
    counts = {point: (varying, total) for point, varying, total in state.get("object_features", [])}
    if step in counts and counts[step][0] == 0:
        found.append(
            f"none of the {counts[step][1]} object features of the network of step {step} varies across the validation grids: its convolutions "
            "are dead (every unit off for every object), so it ignores the object; train again with a lower --learning-rate"
        )
    if invents_forces(state, step):
        found.append(
            f"the network of step {step} reports {quiet_at(state, step):.3f} N on average on the validation samples with less than {QUIET} N "
            f"applied, more than {QUIET_LIMIT} N: it invents forces (no validation point of the run stayed under that); train for a smaller --quantile"
        )
    return found


def _same_shapes(a: Scaled, b: Scaled) -> bool:
    try:
        return all(jax.tree.leaves(jax.tree.map(lambda x, y: x.shape == y.shape, a, b)))
    except ValueError:  # another tree structure (layers, static fields)
        return False


def train(config: TrainConfig, data: Path | Sequence[Path], out: Path, progress: Callable[[int, int], None] | None = None, start: Scaled | None = None) -> dict:
    """Train (or resume) one network on a dataset folder, or on several (`dataset.read_manifests`);
    returns the state: config, dataset (the first folder's manifest), datasets (every folder's),
    step, curves (step, mean training loss since the last point (None at step 0), validation
    loss), val_by_kind (step, validation loss per grasp kind), object_features (step, how many vary across the validation
    grids or None, how many there are), scores (step, the `criterion`'s value), quiet (step,
    the minimal-wrench estimator's mean reported force where less than `QUIET` acts, or None),
    best (step, score of the network in `BEST`) and the constant baseline's validation loss. `start`: the
    network a new run begins from, with its input and output statistics (fine-tuning;
    `config.init` says where it came from), instead of random weights with this training set's
    statistics."""
    from robocal.grasp.learned.dataset import MANIFEST, load, read_manifests

    out = Path(out)
    folders = [Path(data)] if isinstance(data, (str, Path)) else [Path(d) for d in data]
    manifests = read_manifests(folders)
    manifest = manifests[0]
    loaded = {split: load(folders, split) for split in ("train", "val")}
    train_arrays, val_arrays = (arrays(loaded[split], config.network) for split in ("train", "val"))
    val_kinds = loaded["val"]["kind"][loaded["val"]["grasp"]]
    grid = manifest.grid
    for split, (voxels, *_) in (("train", train_arrays), ("val", val_arrays)):
        if voxels.shape[1:] != (grid,) * 3:
            raise InputError(folders[0] / split, f"grids of {voxels.shape[1]} voxels where {folders[0] / MANIFEST} says {grid}")
    train_split, val_split = on_device(train_arrays, config.precision), on_device(val_arrays, config.precision)
    loss = loss_of(config)
    optimizer, step_fn = training_step(loss, config.learning_rate, config.batch, config.per_grid, config.layers, config.shift_augment)
    model = new_network(config, grid, train_arrays[2], train_arrays[3])
    if start is not None:
        if not _same_shapes(start, model):
            raise InputError(config.init or "start", f"its {config.network} is not of the shape this run's options and the dataset's grid {grid} give")
        model = in_precision(start, config.precision)
    elif config.layers == "dense":
        raise RobocalError(f"a run of the dense layers only starts from the trained network of {config.init}: give it as start")
    opt_state = optimizer.init(eqx.filter(model, trainable(model, config.layers)))
    encoded = config.layers == "dense"
    if encoded:  # the convolutions stay as given: every grid encoded once
        train_split, val_split = encoded_split(model, train_split), encoded_split(model, val_split)

    best_unsaved: list[Scaled] = []  # the best network since the last checkpoint, if any

    def validation(model: Scaled, step: int, training_loss: float | None) -> None:
        """A point of the curves: the validation loss, over all and per grasp kind; the object
        features that vary; the best network so far."""
        features = val_split[0] if encoded else encode_all(model, val_split[0])
        per_sample = evaluate(model, loss, (features, *val_split[1:]), encoded=True)
        mean_loss = float(per_sample.mean())
        state["curves"].append([step, training_loss, mean_loss])
        state["val_by_kind"].append([step, by_kind(per_sample, val_kinds)])
        state["object_features"].append([step, varying_features(features), int(features.shape[1])])
        if criterion(config) == FORCE_ERROR:
            score, quiet = force_figures(model, features, val_split)
            state["quiet"].append([step, quiet])
        else:
            score = mean_loss
        state["scores"].append([step, score])
        if state["best"] is None or rank(state, step, score) < rank(state, *state["best"]):
            state["best"] = [step, score]
            best_unsaved[:] = [model]

    earlier = _load(out, config, (model, opt_state))
    if earlier is None:
        constant = constant_loss(config, train_arrays[3], np.asarray(val_split[3]))
        state: dict[str, Any] = {
            "config": config.model_dump(mode="json"),
            "dataset": manifest.model_dump(),
            "datasets": [m.model_dump() for m in manifests],
            "grid": grid,
            "step": 0,
            "curves": [],
            "val_by_kind": [],
            "constant_val_loss": constant,
            "object_features": [],
            "scores": [],
            "quiet": [],
            "best": None,
        }
        validation(model, 0, None)
    else:
        (model, opt_state), state = earlier
        # a run begun before robocal recorded these fields lacks them
        for field, empty in (("val_by_kind", []), ("object_features", []), ("scores", []), ("quiet", []), ("best", None)):
            state.setdefault(field, empty)
    key = jax.random.PRNGKey(config.seed + 1)
    recent: list[jnp.ndarray] = []  # this stretch's losses, left on the device until the next point
    for step in range(state["step"] + 1, config.steps + 1):
        model, opt_state, value = step_fn(model, opt_state, train_split, key, jnp.uint32(step))  # an array: traced, not a constant
        recent.append(value)
        if step % config.eval_every == 0 or step == config.steps:
            validation(model, step, float(np.mean(jax.device_get(recent))))
            recent = []
        if step % config.checkpoint_every == 0 or step == config.steps:
            state["step"] = step
            if best_unsaved:
                write_leaves(out, BEST, best_unsaved.pop())
            _save(out, (model, opt_state), state)
            write_curves(out / CURVES, state, kept(state)[1], criterion(config))
        if progress:
            progress(step, config.steps)
    return state
