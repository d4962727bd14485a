"""The grasp controller (seed paper, Sec. III) and the two baselines it is measured against.

Every controller talks to the hand only through desired joint angles q_d of the joint-level
impedance controller tau = kp (q_d - q_m) - kd dq_m, and reads the measured angles q_m and
torques tau_m. Ours runs two steps each cycle:

1. a `WrenchEstimator` turns the measured torques into the external wrench on the object;
2. a `TorquePredictor` turns that wrench into the joint angle offsets from q_init that hold the
   object at its initial pose (for torques tau at displacement dq: dq + tau / kp).

Both are interfaces: the analytical versions here solve the convex programs of
`robocal.grasp.programs` on the grasp linearized at its start; a learned estimator / predictor
(seed Sec. IV: networks of the object, q_grasp, q_init, q_d, tau_m) implements the same two
methods, `start` receiving everything a network may look at.

Baselines (seed Sec. V-B), both constant over a trial, scaled by s in {1, 1.5, 2, 2.5, 3}:
- fixed offsets: q_d = q_init + s (0 abduction, 0.2 rad proximal, 0.1 rad medial) per finger;
- without wrench estimate: q_d = q_init + s * (the predictor's offsets for zero wrench).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from robocal.errors import RobocalError
from robocal.grasp.constants import FRICTION, KP, STIFFNESS
from robocal.grasp.contacts import grasp_model
from robocal.grasp.programs import GraspModel, TorqueCommand, estimate_wrench, optimize_torques
from robocal.grasp.simulation import GraspSituation

FILTER_TIME = 0.1  # s: time constant of our controller's low-pass on the wrench estimate
MIN_MARGIN = 0.05  # N: the smallest friction margin tried before none


class WrenchEstimator(Protocol):
    def start(self, situation: GraspSituation) -> None:
        """Prepare for one grasp (called once, before any external force)."""

    def estimate(self, q_d: np.ndarray, q_m: np.ndarray, tau_m: np.ndarray) -> np.ndarray:
        """External wrench on the object (6,: force N, moment Nm about the object reference
        point, palm frame) from the commanded angles and the measured angles and torques."""


class TorquePredictor(Protocol):
    def start(self, situation: GraspSituation) -> None:
        """Prepare for one grasp (called once, before any external force)."""

    def offsets(self, wrench: np.ndarray) -> np.ndarray:
        """Desired joint angles minus q_init (L,) that hold the object at its initial pose
        against `wrench` (a torque predictor returning tau_d gives tau_d / kp)."""


T = TypeVar("T")


def _started(value: T | None) -> T:
    """What `start` sets, once it has run."""
    if value is None:
        raise RobocalError("start() must be called before the controller is used")
    return value


@dataclass
class AnalyticalEstimator:
    """The smallest external force that explains the measured torques (programs.estimate_wrench)."""

    torque_sigma: float = 0.005  # Nm: torque the contact model may leave unexplained
    model: GraspModel | None = field(default=None, init=False)

    def start(self, situation: GraspSituation) -> None:
        self.model = linearized(situation)

    def estimate(self, q_d, q_m, tau_m) -> np.ndarray:
        return estimate_wrench(_started(self.model), np.asarray(tau_m, dtype=float), torque_sigma=self.torque_sigma).wrench


@dataclass
class AnalyticalPredictor:
    """The smallest torques holding the object with a friction margin (programs.optimize_torques).

    The contact springs start deflected by the grasp's preload: `start` takes the contact forces
    that explain the settled torques tau_init (the estimator's program) as c delta0, so the
    command knows what the generator's preload already presses and can also release it.

    Where no motion of the modeled contacts gives some fingertip the margin within the joints'
    torque limit (a tip only the object's motion can press, or a margin that needs more than
    the actuators give), the program is infeasible; that cycle is solved again with the margin
    halved, down to MIN_MARGIN and then none, and `margin_dropped` counts such cycles."""

    margin: float = 0.5  # N: minimum friction margin per fingertip in contact (seed Eq. 9)
    model: GraspModel | None = field(default=None, init=False)
    delta0: np.ndarray | None = field(default=None, init=False)
    margin_dropped: int = field(default=0, init=False)

    def start(self, situation: GraspSituation) -> None:
        self.model = linearized(situation)
        forces = estimate_wrench(self.model, np.asarray(situation.grasp.tau_init, dtype=float)).forces
        self.delta0 = forces.reshape(-1) / self.model.stiffness

    def offsets(self, wrench) -> np.ndarray:
        command, margin = torque_command(_started(self.model), np.asarray(wrench, dtype=float), self.margin, self.delta0)
        if margin < self.margin:
            self.margin_dropped += 1
        return command.q_offset


def torque_command(model: GraspModel, wrench: np.ndarray, margin: float, delta0: np.ndarray | None = None) -> tuple[TorqueCommand, float]:
    """`optimize_torques` with the friction margin halved while the program is infeasible
    (down to MIN_MARGIN, then none); returns the command and the margin it holds."""
    while True:
        try:
            return optimize_torques(model, wrench, margin=margin, delta0=delta0), margin
        except RobocalError:
            if margin == 0:
                raise
            margin = margin / 2 if margin / 2 >= MIN_MARGIN else 0.0


def linearized(situation: GraspSituation) -> GraspModel:
    """The grasp linearized at the controller's start: contacts at q_init, moments about the
    object's reference point, torques within the hand's limit. Made once per situation and kept
    on it (like `programs_for` on the model), so estimator and predictor share it and the
    programs assembled for it."""
    cached = situation.__dict__.get("_linearized")
    if cached is None:
        hand = situation.hand
        cached = grasp_model(
            hand, situation.grasp.q_init, situation.contacts, situation.center, mu=FRICTION, stiffness=STIFFNESS, kp=KP, torque_limit=hand.effort
        )
        situation.__dict__["_linearized"] = cached
    return cached


@dataclass
class GraspController:
    """Ours: estimate the wrench, then command the offsets that hold against it, every cycle.

    The estimate passes a first-order low-pass (time constant `filter_time`) before the
    predictor sees it; `last_wrench` is the filtered estimate. Unfiltered, the loop estimate ->
    command -> object motion -> estimate can ring up: fingertip tripods then drift millimetres
    with no external force at all (docs/grasp.md has the figures)."""

    estimator: WrenchEstimator
    predictor: TorquePredictor
    filter_time: float = FILTER_TIME
    last_wrench: np.ndarray = field(default_factory=lambda: np.zeros(6), init=False)
    _q_init: np.ndarray | None = field(default=None, init=False, repr=False)
    _q_d: np.ndarray | None = field(default=None, init=False, repr=False)
    _t: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not (np.isfinite(self.filter_time) and self.filter_time >= 0):
            raise RobocalError(f"the wrench filter's time constant must be >= 0 s (got {self.filter_time})")

    def start(self, situation: GraspSituation) -> np.ndarray:
        self.estimator.start(situation)
        self.predictor.start(situation)
        self._q_init = np.asarray(situation.grasp.q_init, dtype=float)
        self.last_wrench = np.zeros(6)
        self._t = 0.0
        self._q_d = self._q_init + self.predictor.offsets(self.last_wrench)
        return self._q_d

    def step(self, t: float, q_m: np.ndarray, tau_m: np.ndarray) -> np.ndarray:
        dt, self._t = t - self._t, t
        alpha = dt / (self.filter_time + dt) if self.filter_time > 0 else 1.0
        self.last_wrench = self.last_wrench + alpha * (self.estimator.estimate(_started(self._q_d), q_m, tau_m) - self.last_wrench)
        self._q_d = self._q_init + self.predictor.offsets(self.last_wrench)
        return self._q_d


@dataclass
class ConstantOffsets:
    """A baseline: q_d = q_init + scale * offsets, fixed for the whole trial."""

    offsets_for: Callable[[GraspSituation], np.ndarray]  # situation -> offsets (L,)
    scale: float = 1.0
    _q_d: np.ndarray | None = field(default=None, init=False, repr=False)

    def start(self, situation: GraspSituation) -> np.ndarray:
        self._q_d = np.asarray(situation.grasp.q_init, dtype=float) + self.scale * self.offsets_for(situation)
        return self._q_d

    def step(self, t: float, q_m: np.ndarray, tau_m: np.ndarray) -> np.ndarray:
        return _started(self._q_d)


def fixed_offsets(situation: GraspSituation) -> np.ndarray:
    """Seed baseline: 0.2 rad on every proximal flexion joint, 0.1 rad on every medial one."""
    per_finger = (0.0, 0.2, 0.1)  # q1 abduction, q2 proximal, q3 medial
    hand = situation.hand
    out = np.zeros(len(hand.joints))
    for tip in hand.tips:
        for position, name in enumerate(hand.tree.actuated_for([tip])):
            out[hand.joints.index(name)] = per_finger[position]
    return out


@dataclass
class ZeroWrenchOffsets:
    """Seed baseline 'without wrench estimate': the predictor's offsets for zero wrench."""

    predictor: TorquePredictor

    def __call__(self, situation: GraspSituation) -> np.ndarray:
        self.predictor.start(situation)
        return self.predictor.offsets(np.zeros(6))


METHODS = ("controller", "fixed_offsets", "without_wrench_estimate")


def make_controller(method: str, scale: float = 1.0, margin: float = 0.5, filter_time: float = FILTER_TIME):
    """A fresh controller for one trial: `controller` (ours; scale unused) or a baseline
    (filter_time unused: they never estimate)."""
    if method == "controller":
        return GraspController(AnalyticalEstimator(), AnalyticalPredictor(margin), filter_time)
    if method == "fixed_offsets":
        return ConstantOffsets(fixed_offsets, scale)
    if method == "without_wrench_estimate":
        return ConstantOffsets(ZeroWrenchOffsets(AnalyticalPredictor(margin)), scale)
    raise RobocalError(f"unknown method '{method}' (one of {', '.join(METHODS)})")
