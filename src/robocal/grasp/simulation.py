"""One evaluation trial: a grasp, a controller and an external force, simulated in MuJoCo.

The protocol is the paper's (section V-B): a force of fixed magnitude is applied at a point of
the object's surface along the inward surface normal (it pushes), ramped linearly from zero to
full in `duration_ramp` (4 s) and then held for `duration_hold` (4 s); the grasp breaks when the
object's centre of mass moves more than 3 cm or the object turns more than 20 degrees from its
initial pose. The point and direction are fixed to the object (they turn with it); the force
acts on the object body as `xfrc_applied` (the force and its moment about the centre of mass).

The controller runs every `control_period` (25 ms, the 40 Hz of the real hand): it reads the
measured joint angles q_m and the joint torques tau_m of the actuated joints (the impedance
torques of the position actuators, recomputed for the state the controller sees) and returns
the desired angles q_d, which the joint impedance (see `mjcf`) tracks at the physics rate in
MuJoCo's C code; Python runs once per control period only. In a control period the applied
force is constant, at the ramp's value in the middle of the period (a staircase of 25 ms
steps around the line).

Contacts for the controller (`GraspSituation.contacts`) come from the object model and the
hand state only, not from the simulator's internal state: `detect_contacts` places the object
model at its pose and the hand at its joint angles and collects every hand geom within
`threshold` of the object with MuJoCo's collision functions: one contact per contact point
MuJoCo reports (a capsule on a flat face can give two, the palm box under a flat face up to
four), points of the same link closer than `MERGE_DISTANCE` merged into their mean.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import mujoco
import numpy as np

from robocal.errors import RobocalError
from robocal.grasp import mjcf
from robocal.grasp.contacts import Contact
from robocal.grasp.grasps import MAX_ROTATION, MAX_TRANSLATION, Grasp, rotation_angle
from robocal.grasp.hand import Hand
from robocal.grasp.objects import GraspObject

MERGE_DISTANCE = 0.003  # m


@dataclass(frozen=True)
class GraspSituation:
    """What a controller knows when it starts."""

    hand: Hand
    grasp: Grasp
    contacts: tuple[Contact, ...]
    center: np.ndarray  # object reference point (COM) in the palm frame at the initial pose


class Controller(Protocol):
    def start(self, situation: GraspSituation) -> np.ndarray:
        """Desired angles q_d (L,) to command from t = 0."""
        ...

    def step(self, t: float, q_m: np.ndarray, tau_m: np.ndarray) -> np.ndarray:
        """Desired angles q_d (L,) from the measured angles and torques at time t."""
        ...


class HoldController:
    """Keeps the grasp's desired angles q_d0 (the do-nothing controller)."""

    last_wrench = None

    def start(self, situation: GraspSituation) -> np.ndarray:
        self.q_d = np.asarray(situation.grasp.q_d0, dtype=float).copy()
        return self.q_d

    def step(self, t: float, q_m: np.ndarray, tau_m: np.ndarray) -> np.ndarray:
        return self.q_d


@dataclass(frozen=True)
class ExternalForce:
    """A force of `magnitude` N at `point` along unit `direction`, both in the object frame."""

    point: np.ndarray
    direction: np.ndarray
    magnitude: float

    @classmethod
    def sample(cls, obj: GraspObject, rng: np.random.Generator, magnitude: float) -> ExternalForce:
        """A uniformly sampled surface point, pushing along the inward normal."""
        points, normals = obj.sample_surface(rng, 1)
        return cls(points[0], -normals[0], float(magnitude))

    @classmethod
    def none(cls) -> ExternalForce:
        return cls(np.zeros(3), np.array([0.0, 0.0, 1.0]), 0.0)


@dataclass(frozen=True)
class TrialResult:
    """One trial; per-cycle arrays have one row per controller call (t = 0, period, ...)."""

    broken: bool
    break_time: float  # s, nan when the grasp held
    max_translation: float  # m, of the centre of mass from its initial position
    max_rotation: float  # rad, from the initial orientation
    t: np.ndarray  # (K,) s
    wrench: np.ndarray  # (K, 6) applied force and moment about the COM (palm frame) in the period ending at t
    tau: np.ndarray  # (K, L) measured joint torques at t
    q_m: np.ndarray  # (K, L) measured joint angles at t
    q_d: np.ndarray  # (K, L) desired angles commanded from t
    translation: np.ndarray  # (K,) m
    rotation: np.ndarray  # (K,) rad
    estimate: np.ndarray  # (K, 6) the controller's `last_wrench` after its call at t (nan rows while it has none); (0, 6) if it never has one
    unstable: bool = False  # MuJoCo reported a diverging simulation
    wall_time: float = 0.0  # s


def object_contacts(model: mujoco.MjModel, data: mujoco.MjData, index: mjcf.SceneIndex) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    """(link, object surface point, outward object normal, distance) of every contact MuJoCo
    reports between the object and the hand in `data` (palm frame)."""
    out = []
    for i in range(data.ncon):
        c = data.contact[i]
        if index.object_geom not in (c.geom1, c.geom2):
            continue
        first = c.geom1 == index.object_geom
        other = c.geom2 if first else c.geom1
        if other not in index.geom_link:
            continue
        normal = np.array(c.frame[:3]) * (1.0 if first else -1.0)  # frame normal points from geom1 to geom2
        point = np.array(c.pos) - normal * c.dist / 2.0
        out.append((index.geom_link[other], point, normal, float(c.dist)))
    return out


def detect_contacts(
    hand: Hand, obj: GraspObject, object_pose: np.ndarray, q: np.ndarray, threshold: float = 0.002, scene: tuple[mujoco.MjModel, mjcf.SceneIndex] | None = None
) -> tuple[Contact, ...]:
    """Contacts between the hand at configuration q and the object model at `object_pose` (palm
    frame): every hand geom closer than `threshold` (m), or penetrating; `scene` reuses a model
    from `mjcf.build_scene(hand, obj, ...)` (left as it was)."""
    model, index = scene if scene is not None else mjcf.build_scene(hand, obj, object_pose)
    margin, gap = model.pair_margin.copy(), model.pair_gap.copy()
    model.pair_margin[:] = threshold
    model.pair_gap[:] = 0.0
    try:
        data = mujoco.MjData(model)
        mjcf.set_hand(model, data, index, q)
        mjcf.set_object(data, index, np.asarray(object_pose, dtype=float))
        mujoco.mj_fwdPosition(model, data)
        found = object_contacts(model, data, index)
    finally:
        model.pair_margin[:], model.pair_gap[:] = margin, gap
    order = {link: k for k, link in enumerate([hand.tree.root, *(j.child for j in hand.tree.joints)])}
    merged: list[list] = []
    for link, point, normal, _ in sorted(found, key=lambda c: (order[c[0]], tuple(np.round(c[1], 9)))):
        for group in merged:
            if group[0] == link and np.linalg.norm(np.mean(group[1], axis=0) - point) < MERGE_DISTANCE:
                group[1].append(point)
                group[2].append(normal)
                break
        else:
            merged.append([link, [point], [normal]])
    out = []
    for link, points, normals in merged:
        n = np.mean(normals, axis=0)
        out.append(Contact(point=np.mean(points, axis=0), normal=n / np.linalg.norm(n), link=link))
    return tuple(out)


def situation(hand: Hand, obj: GraspObject, grasp: Grasp, threshold: float = 0.002, scene=None) -> GraspSituation:
    """The controller's view of a settled grasp: contacts of the object model at the grasp's
    initial pose with the hand at q_init, and the centre of mass."""
    pose = np.asarray(grasp.object_pose, dtype=float)
    contacts = detect_contacts(hand, obj, pose, grasp.q_init, threshold, scene)
    return GraspSituation(hand=hand, grasp=grasp, contacts=contacts, center=pose[:3, 3].copy())


def _start_state(
    hand: Hand, obj: GraspObject, grasp: Grasp, gravity: bool | np.ndarray
) -> tuple[mujoco.MjModel, mujoco.MjData, mjcf.SceneIndex, GraspSituation]:
    """The scene at the grasp's settled state (its stored qpos, else q_init and the object pose), at rest."""
    pose0 = np.asarray(grasp.object_pose, dtype=float)
    model, index = mjcf.build_scene(hand, obj, pose0, gravity=gravity)
    data = mujoco.MjData(model)
    sit = situation(hand, obj, grasp, scene=(model, index))
    if grasp.qpos.shape == (model.nq,):
        data.qpos[:] = grasp.qpos
    else:
        mjcf.set_hand(model, data, index, grasp.q_init)
        mjcf.set_object(data, index, pose0)
    data.qvel[:] = 0.0
    return model, data, index, sit


def _apply_force(data: mujoco.MjData, index: mjcf.SceneIndex, force: ExternalForce, scale: float) -> np.ndarray:
    """Apply `scale` times the external force (and its moment about the object's COM) to the
    object at its current pose; returns the wrench (6,)."""
    body = index.object_body
    pose = mjcf.object_pose(data, index)
    f = force.magnitude * scale * (pose[:3, :3] @ force.direction)
    p = pose[:3, :3] @ force.point + pose[:3, 3]
    moment = np.cross(p - data.xipos[body], f)
    data.xfrc_applied[body, :3], data.xfrc_applied[body, 3:] = f, moment
    return np.concatenate([f, moment])


@dataclass
class _TrialLog:
    """What a trial records per control cycle."""

    t: list[float] = field(default_factory=list)
    wrench: list[np.ndarray] = field(default_factory=list)
    tau: list[np.ndarray] = field(default_factory=list)
    q_m: list[np.ndarray] = field(default_factory=list)
    q_d: list[np.ndarray] = field(default_factory=list)
    translation: list[float] = field(default_factory=list)
    rotation: list[float] = field(default_factory=list)
    estimate: list[np.ndarray] = field(default_factory=list)

    def record(
        self,
        data: mujoco.MjData,
        index: mjcf.SceneIndex,
        controller: Controller,
        t: float,
        wrench: np.ndarray,
        q_d: np.ndarray,
        translation: float,
        rotation: float,
    ) -> None:
        self.t.append(t)
        self.wrench.append(wrench)
        self.tau.append(data.actuator_force[index.actuators].copy())
        self.q_m.append(data.qpos[index.joint_qpos].copy())
        self.q_d.append(q_d.copy())
        self.translation.append(translation)
        self.rotation.append(rotation)
        estimate = getattr(controller, "last_wrench", None)
        self.estimate.append(np.full(6, np.nan) if estimate is None else np.asarray(estimate, dtype=float).reshape(6).copy())

    def estimates(self) -> np.ndarray:
        """(cycles, 6) the controller's wrench estimates, (0, 6) when it gives none."""
        estimate = np.array(self.estimate).reshape(-1, 6)
        return np.zeros((0, 6)) if np.all(np.isnan(estimate)) else estimate


def run_trial(
    hand: Hand,
    obj: GraspObject,
    grasp: Grasp,
    controller: Controller,
    force: ExternalForce,
    *,
    gravity: bool | np.ndarray = False,
    duration_ramp: float = 4.0,
    duration_hold: float = 4.0,
    control_period: float = 0.025,
    limits: tuple[float, float] = (MAX_TRANSLATION, MAX_ROTATION),
) -> TrialResult:
    """Simulate one trial from the grasp's settled state (module docstring)."""
    if not grasp.ok:
        raise RobocalError(f"grasp {grasp.object}/{grasp.attempt} failed ({grasp.reason}); there is nothing to evaluate")
    clock = time.perf_counter()
    pose0 = np.asarray(grasp.object_pose, dtype=float)
    model, data, index, sit = _start_state(hand, obj, grasp, gravity)
    steps = max(1, round(control_period / model.opt.timestep))
    period = steps * model.opt.timestep
    cycles = int(round((duration_ramp + duration_hold) / period))
    L = len(hand.joints)

    def command(q_d) -> np.ndarray:
        q_d = np.asarray(q_d, dtype=float)
        if q_d.shape != (L,) or not np.all(np.isfinite(q_d)):
            raise RobocalError(f"the controller returned desired angles of shape {q_d.shape} or not finite: {q_d}")
        data.ctrl[index.actuators] = q_d
        return q_d

    log = _TrialLog()
    mujoco.mj_forward(model, data)
    q_d = command(controller.start(sit))
    mujoco.mj_forward(model, data)
    log.record(data, index, controller, 0.0, np.zeros(6), q_d, 0.0, 0.0)
    broken, break_time, unstable = False, float("nan"), False
    max_translation = max_rotation = 0.0
    for k in range(1, cycles + 1):
        t_mid = (k - 0.5) * period
        wrench = _apply_force(data, index, force, min(t_mid / duration_ramp, 1.0) if duration_ramp > 0 else 1.0)
        mujoco.mj_step(model, data, nstep=steps)
        mujoco.mj_forward(model, data)  # torques and sensors of the state the controller reads
        t = k * period
        if data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0 or not np.all(np.isfinite(data.qpos)):
            unstable = broken = True
            break_time = t
            break
        pose = mjcf.object_pose(data, index)
        translation = float(np.linalg.norm(pose[:3, 3] - pose0[:3, 3]))
        rotation = rotation_angle(pose0[:3, :3], pose[:3, :3])
        max_translation, max_rotation = max(max_translation, translation), max(max_rotation, rotation)
        if translation > limits[0] or rotation > limits[1]:
            broken, break_time = True, t
            log.record(data, index, controller, t, wrench, q_d, translation, rotation)
            break
        q_d = command(controller.step(t, data.qpos[index.joint_qpos].copy(), data.actuator_force[index.actuators].copy()))
        log.record(data, index, controller, t, wrench, q_d, translation, rotation)
    return TrialResult(
        broken=broken,
        break_time=break_time,
        max_translation=max_translation,
        max_rotation=max_rotation,
        t=np.array(log.t),
        wrench=np.array(log.wrench),
        tau=np.array(log.tau),
        q_m=np.array(log.q_m),
        q_d=np.array(log.q_d),
        translation=np.array(log.translation),
        rotation=np.array(log.rotation),
        estimate=log.estimates(),
        unstable=unstable,
        wall_time=time.perf_counter() - clock,
    )
