"""The learned wrench estimator and torque predictor (seed paper 002, Sec. IV) behind the
`WrenchEstimator` / `TorquePredictor` interfaces of `robocal.grasp.controller`.

Both see only what the paper's networks see: the object's voxel grid from a depth image
(`observation.observe`, made once per grasp from the object at the grasp's pose), q_grasp,
q_init and, for the estimator, q_d and the measured torques; never the contacts. `start`
encodes the grid once (the convolutions); a control cycle runs the dense layers only.

- estimator: the network's wrench, its force shortened to the predicted scale s when longer
  (s is trained to be the smallest force consistent with the inputs, so the estimate never
  claims more than that);
- predictor: the network's torques tau, each within the hand's effort limit; offsets tau / kp
  (the paper's q_d = q_init + tau / kp: the joint motion dq is small against tau / kp when
  kp << c). With `predictor_shift` k > 0 (learned.json), tau is the mean of the network's
  torques on the grid shifted by k voxels along x, y or z, either way (6 grids; `shifted`): the
  object seen moved by k voxels, the layer at the face it moves away from repeated (where the
  object touches that face it stays touching; nothing wraps round to the opposite face). The 6
  grids are encoded once per grasp and the 6 heads run as one batched call.

`Models` holds both networks with the observation they were trained on; `save` / `load` write
and read a weights folder (`estimator.eqx`, `predictor.eqx`, `learned.json`), and `load` also
reads a `robocal grasp train` output folder (its `estimator/` and `predictor/` runs);
`load_networks` reads some networks of either (a folder where one network was trained);
`with_runs` puts the runs of such a folder into other weights (one network fine-tuned).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from pydantic import BaseModel, ConfigDict, Field, field_validator

from robocal.errors import InputError, RobocalError
from robocal.grasp.constants import KP
from robocal.grasp.learned import networks
from robocal.grasp.learned.leaves import read_leaves
from robocal.grasp.learned.networks import Scaled, in_precision
from robocal.grasp.learned.observation import ObservationConfig, observe
from robocal.grasp.learned.training import CHECKPOINT, STATE, TrainConfig, kept, read_state, trainable
from robocal.grasp.simulation import GraspSituation
from robocal.validation import read_json, validate_mapping

WEIGHTS = Path(__file__).parent / "weights"  # shipped weights for the DLR-Hand II
META = "learned.json"
NETWORKS = ("estimator", "predictor")


@dataclass(frozen=True)
class Models:
    estimator: Scaled
    predictor: Scaled
    observation: ObservationConfig
    meta: dict = field(default_factory=dict)  # training configurations, dataset, how made
    predictor_shift: int = 0  # voxels; the predictor's torques averaged over the grid shifted this far (module doc); 0: the grid as seen


def skeleton(config: TrainConfig, grid: int, n_joints: int) -> Scaled:
    """A network of `config`'s shape with zero weights and neutral scaling (output 0 for any
    input), to read serialized leaves into."""
    n_in = 4 * n_joints if config.network == "estimator" else 2 * n_joints + 6
    n_out = 7 if config.network == "estimator" else n_joints
    make = networks.estimator_network if config.network == "estimator" else networks.predictor_network
    net = make(grid, n_joints, None, channels=config.channels, width=config.width)
    return in_precision(Scaled(net, jnp.zeros(n_in), jnp.ones(n_in), jnp.zeros(n_out), jnp.ones(n_out)), config.precision)


def save(models: Models, folder: Path) -> None:
    """Write a weights folder (networks only, no optimizer state)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in NETWORKS:
        eqx.tree_serialise_leaves(folder / f"{name}.eqx", getattr(models, name))
    (folder / META).write_text(json.dumps({"observation": asdict(models.observation), "predictor_shift": models.predictor_shift, **models.meta}, indent=1))


def load_run(run: Path, n_joints: int = 12) -> tuple[Scaled, dict]:
    """The result of one training run (a `train` output folder: the network `training.kept`
    names, its best) and the run's state."""
    state = read_state(run)
    if state is None:
        raise InputError(Path(run) / STATE, "missing: not the output folder of a `robocal grasp train` run")
    config = TrainConfig(**state["config"])
    like = skeleton(config, state["grid"], n_joints)
    name, _ = kept(state)
    if name == CHECKPOINT:
        opt_state = optax.adam(config.learning_rate).init(eqx.filter(like, trainable(like, config.layers)))
        net, _ = read_leaves(Path(run) / CHECKPOINT, (like, opt_state))
    else:
        net = read_leaves(Path(run) / name, like)
    return net, state


def with_runs(folder: Path, base: Models, n_joints: int = 12) -> Models:
    """`base` with each network that a `grasp train` folder has a run of (`estimator/`,
    `predictor/`) replaced by that run's: the weights of a run that fine-tuned one network of
    `base`. The run's configuration replaces the network's in the meta, the steps of its result
    add to `trained_steps` where the meta counts them."""
    nets = {name: getattr(base, name) for name in NETWORKS}
    meta = json.loads(json.dumps(base.meta))  # a copy
    for name in NETWORKS:
        if (Path(folder) / name / STATE).exists():
            nets[name], state = load_run(Path(folder) / name, n_joints)
            meta[name] = state["config"]
            if isinstance(meta.get("trained_steps"), dict):
                meta["trained_steps"][name] = meta["trained_steps"].get(name, 0) + kept(state)[1]
    return Models(nets["estimator"], nets["predictor"], base.observation, meta, base.predictor_shift)


class WeightsFile(BaseModel):
    """What of learned.json reading the weights needs; its other fields (dataset, trained_steps,
    made_by) record how they were made."""

    model_config = ConfigDict(extra="allow")

    observation: ObservationConfig
    estimator: TrainConfig
    predictor: TrainConfig
    predictor_shift: int = Field(0, ge=0, description="voxels: the predictor's torques averaged over its grid shifted this far along x, y or z, both ways")
    predictor_roll: None = None  # the wrapping roll's key of 2026-11-27, read only to refuse it (below)

    @field_validator("predictor_roll", mode="before")
    @classmethod
    def _renamed(cls, value):
        raise ValueError("renamed predictor_shift: the grid is now shifted with its face layers repeated, not rolled round; rename the key")


@cache
def load(folder: Path = WEIGHTS, n_joints: int = 12) -> Models:
    """Both networks from a weights folder or a `grasp train` output folder (module doc)."""
    folder = Path(folder)
    if (folder / META).exists():
        meta = read_json(folder / META)
        described = validate_mapping(folder / META, meta, WeightsFile)
        grid = described.observation.grid
        nets = {name: read_leaves(folder / f"{name}.eqx", skeleton(getattr(described, name), grid, n_joints)) for name in NETWORKS}
        made = {k: v for k, v in meta.items() if k not in ("observation", "predictor_shift")}
        return Models(nets["estimator"], nets["predictor"], described.observation, made, described.predictor_shift)
    nets, meta = {}, {}
    for name, (net, state) in runs_of(folder, NETWORKS, n_joints).items():
        nets[name], meta[name] = net, state["config"]
        meta["dataset"] = state.get("dataset", {})
    side = meta["dataset"].get("side", ObservationConfig.side)
    return Models(nets["estimator"], nets["predictor"], ObservationConfig(grid=state["grid"], side=side), meta)


def runs_of(folder: Path, names: tuple[str, ...], n_joints: int = 12) -> dict[str, tuple[Scaled, dict]]:
    """`load_run` of each named network's run in a `grasp train` output folder; a missing run is an
    InputError naming its state file."""
    missing = [str(Path(folder) / name / STATE) for name in names if not (Path(folder) / name / STATE).exists()]
    if missing:
        raise InputError(folder, f"no learned weights here ({META}) and no training runs ({', '.join(missing)} missing)")
    return {name: load_run(Path(folder) / name, n_joints) for name in names}


def load_networks(folder: Path, names: tuple[str, ...], n_joints: int = 12) -> dict[str, Scaled]:
    """The named networks of a weights folder, or of a `grasp train` output folder that holds runs
    of those (only of those: a folder where one network was trained starts that network's next
    run)."""
    if (Path(folder) / META).exists():
        models = load(Path(folder), n_joints)
        return {name: getattr(models, name) for name in names}
    return {name: net for name, (net, _) in runs_of(folder, names, n_joints).items()}


_COMPILED: dict[int, tuple[Scaled, Callable, Callable]] = {}


def compiled(net: Scaled) -> tuple[Callable, Callable]:
    """`net.encode` and `net.head` over K grids, jitted with the weights as constants, once per
    network in a process (a cycle then passes two arrays, not the network's leaves): encode
    (K, G, G, G) -> features (K, F); head (K, F), inputs (n_in,) -> the mean of the K outputs
    (n_out,); for K = 1 the network's own head, unbatched (a batched matrix product sums in
    another order: 5e-5 off in float32)."""
    if id(net) not in _COMPILED:

        def head(features, inputs):
            if features.shape[0] == 1:  # static: one compiled program per K
                return net.head(features[0], inputs)
            return jnp.mean(jax.vmap(net.head, in_axes=(0, None))(features, inputs), axis=0)

        _COMPILED[id(net)] = (net, jax.jit(jax.vmap(net.encode)), jax.jit(head))  # the net is kept: its id stays its own
    return _COMPILED[id(net)][1:]


def shifted(voxels: np.ndarray, shift: int) -> np.ndarray:
    """Grids (..., G, G, G) -> (K, ..., G, G, G): the grids themselves (K = 1) for shift 0, else
    each grid's content moved by `shift` voxels along one of its axes, either way (K = 6, x-, x+,
    y-, y+, z-, z+), edge-padded (`networks.moved`: no layer wraps round)."""
    if shift == 0:
        return voxels[None]
    offsets = np.concatenate([sign * shift * np.eye(3, dtype=int)[axis : axis + 1] for axis, sign in itertools.product(range(3), (-1, 1))])
    grids = voxels.reshape(-1, *voxels.shape[-3:])
    copies = np.broadcast_to(grids, (len(offsets), *grids.shape)).reshape(-1, *grids.shape[1:])
    return np.asarray(networks.moved(jnp.asarray(copies), np.repeat(offsets, len(grids), axis=0), shift)).reshape(len(offsets), *voxels.shape)


@dataclass
class LearnedEstimator:
    """The wrench estimator network (module docstring); `voxels` (G, G, G) the object's grid;
    `cap` False reports the network's wrench as it is (an estimator trained with plain L2 has
    no trained scale)."""

    net: Scaled
    voxels: np.ndarray
    cap: bool = True
    _features: np.ndarray | None = field(default=None, init=False, repr=False)
    _fixed: np.ndarray | None = field(default=None, init=False, repr=False)
    _head: Callable | None = field(default=None, init=False, repr=False)

    def start(self, situation: GraspSituation) -> None:
        encode, self._head = compiled(self.net)
        self._features = np.asarray(encode(jnp.asarray(self.voxels[None], dtype=float)))  # waits for the encoding
        self._fixed = np.r_[situation.grasp.q_grasp, situation.grasp.q_init]

    def estimate(self, q_d, q_m, tau_m) -> np.ndarray:
        if self._head is None:
            raise RobocalError("start() must be called before the controller is used")
        out = np.asarray(self._head(self._features, np.r_[self._fixed, q_d, tau_m]))
        wrench, scale = out[:6], float(np.logaddexp(0.0, out[6]))  # softplus
        return networks.capped(wrench, scale) if self.cap else wrench


@dataclass
class LearnedPredictor:
    """The torque predictor network (module docstring); `voxels` (G, G, G) the object's grid;
    `shift` > 0 averages the torques over that grid shifted by `shift` voxels (`shifted`)."""

    net: Scaled
    voxels: np.ndarray
    shift: int = 0
    _features: np.ndarray | None = field(default=None, init=False, repr=False)
    _fixed: np.ndarray | None = field(default=None, init=False, repr=False)
    _head: Callable | None = field(default=None, init=False, repr=False)
    _limit: float = field(default=np.inf, init=False, repr=False)

    def start(self, situation: GraspSituation) -> None:
        encode, self._head = compiled(self.net)
        self._features = np.asarray(encode(jnp.asarray(shifted(self.voxels, self.shift), dtype=float)))  # waits for the encoding
        self._fixed = np.r_[situation.grasp.q_grasp, situation.grasp.q_init]
        self._limit = situation.hand.effort

    def offsets(self, wrench) -> np.ndarray:
        if self._head is None:
            raise RobocalError("start() must be called before the controller is used")
        tau = np.asarray(self._head(self._features, np.r_[self._fixed, wrench]))
        return np.clip(tau, -self._limit, self._limit) / KP


CONTROLLERS = {"learned": NETWORKS, "learned_estimator": ("estimator",), "learned_predictor": ("predictor",)}  # --controller: the steps its networks take


def learned_controller(method: str, scale: float, filter_time: float, margin: float, models: Models, voxels: np.ndarray, steps: tuple[str, ...] = NETWORKS):
    """A fresh trial controller whose `steps` (of "estimator", "predictor") the learned networks
    take, the others the analytical ones (`CONTROLLERS`: one network at a time shows which of
    the two limits the pair): `controller` (ours) or the baseline `without_wrench_estimate` on
    that predictor; `fixed_offsets` needs no network."""
    from robocal.grasp.controller import AnalyticalEstimator, AnalyticalPredictor, ConstantOffsets, GraspController, ZeroWrenchOffsets, make_controller

    def predictor():
        return LearnedPredictor(models.predictor, voxels, models.predictor_shift) if "predictor" in steps else AnalyticalPredictor(margin)

    if method == "controller":
        estimator = LearnedEstimator(models.estimator, voxels) if "estimator" in steps else AnalyticalEstimator()
        return GraspController(estimator, predictor(), filter_time)
    if method == "without_wrench_estimate":
        return ConstantOffsets(ZeroWrenchOffsets(predictor()), scale)
    return make_controller(method, scale, margin, filter_time)


def object_voxels(models: Models, hand, obj, grasp) -> np.ndarray:
    """The grid the networks see of `obj` at the grasp's settled pose."""
    return observe(hand, obj, np.asarray(grasp.object_pose, dtype=float), models.observation)
