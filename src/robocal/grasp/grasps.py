"""A simple grasp generator: object placements, closing the fingers onto them, settling.

A grasp is an object pose in the palm frame, a pre-grasp configuration q_pre and a closing
target q_grasp; the fingers move from q_pre toward q_grasp (the closing direction) until they
touch. `generate_grasps` makes `n_power` power and `n_precision` precision attempts per object
(seeded; different orientations and offsets per attempt), or with `until_ok` goes on until
that many of each kind succeeded, and returns every attempt, failed ones with their reason.

Power grasps
    The object, in a random orientation, sits 1 mm above the palm's top face at a random point
    of the space between the thumb and the fingers (x in [-15, 15] mm, y in [-25, 5] mm). All
    fingers start opened (q2 = -0.3, q3 = 0, random spread q1) and close q2 and q3 toward
    (1.45, 1.6) rad: proximal and medial links and the palm take the object.

Precision grasps
    The thumb, fore and middle fingers (a tripod: with point contacts, condim 3, a two-point
    pinch cannot resist a moment about the line through its contacts, so any push off that line
    or gravity turns the object about it) close along a
    straight line in joint space, q(s) = q_open + s (q_closed - q_open). An antipodal pair of
    object points is drawn: a random surface point and the point where its inward normal leaves
    the object, whose normal must lie within 15 degrees of that line (the friction cone is 21.8
    degrees). The object is turned so that the pair lies along the line from the fingers' tips
    to the thumb's tip at the first closure s at which their distance, less the two tip radii,
    is the pair's width (random turn about that line), and placed so that the finger side
    touches. The hand starts 0.12 (in s) before that point and closes toward s + 0.25; the other
    fingers stay opened. Placements where the open hand touches the object, or where a link other
    than a fingertip reaches it by the touching configuration, are drawn again.

Closing until contact
    The object is held in place (a static copy, `build_scene(fixed_object=True)`) while the
    desired angles of the closing joints move toward q_grasp in `CLOSING_TIME`. A joint stops
    once its measured torque, in the closing sense, exceeds `contact_torque` (0.1 Nm: 2% of a
    radian's worth of impedance torque, 1 N at a 10 cm lever), and resumes should it fall back
    below a third of that (a bounce); closing ends when every closing joint has stopped or
    reached q_grasp, then the hand is held 0.1 s. Each joint stopped by a contact then gets
    q_d = q_m + `preload` / kp (0.3 Nm beyond its measured angle, about 3 N at a fingertip;
    the contact threshold alone would hold the object by 2 mm of finger travel, which the small
    imbalances of the finger forces use up before the object has settled) and the hand is held
    0.1 s more: these desired angles are q_d0.

Settling
    Then the object is free (gravity as the scenario says), q_d0 kept, for `SETTLE_TIME`. The
    grasp fails if the object moved more than 3 cm or 20 degrees, is still moving (1 cm/s or
    0.5 rad/s), or touches too few links: a power grasp needs at least three hand links
    including a non-distal one (the palm or a proximal / medial link), a precision grasp the
    thumb tip and at least one other fingertip and no other link. The settled state is the
    initial state of an evaluation: `object_pose`, `q_init` (measured angles), `q_d0` and the
    complete MuJoCo `qpos` (coupled joints included) to restore it exactly.

Everything is deterministic for a seed (MuJoCo is, on one thread) and `Grasp` holds plain
numpy arrays and strings, so it pickles into worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from robocal.grasp import mjcf
from robocal.grasp.hand import Hand
from robocal.grasp.objects import GraspObject

CLOSING_TIME = 2.0  # s, from q_pre to q_grasp
CHUNK = 0.01  # s, closing update period
HOLD_TIME = 0.1  # s, after closing, object still held
SETTLE_TIME = 0.6  # s, object free
PLACEMENT_TRIES = 40
GAP = 0.001  # m, object above the palm at placement
MAX_TRANSLATION = 0.03  # m
MAX_ROTATION = np.deg2rad(20.0)
REST_SPEED = 0.01  # m/s
REST_ANGULAR_SPEED = 0.5  # rad/s
OPEN_Q2, OPEN_Q3 = -0.3, 0.0
POWER_CLOSED = (1.45, 1.6)  # q2, q3 target of a power grasp
ANTIPODAL = np.deg2rad(15.0)  # precision contact normals within this of the pinch line (friction cone: 21.8 deg)
PRECISION_FINGERS = ("fore", "middle")  # with the thumb: a tripod (a two-point pinch spins about its axis)


@dataclass(frozen=True)
class Grasp:
    """One grasp attempt and, when it succeeded, the settled state an evaluation starts from."""

    object: str  # object name
    kind: str  # "power" or "precision"
    attempt: int  # index among the object's attempts
    seed: int
    status: str  # "ok" or "failed"
    reason: str  # why it failed ("" when ok)
    object_pose: np.ndarray  # (4, 4) palm frame; the settled pose (= initial pose of an evaluation)
    placement: np.ndarray  # (4, 4) palm frame; where the object was held while the fingers closed
    q_pre: np.ndarray  # (L,) pre-grasp configuration
    q_grasp: np.ndarray  # (L,) closing target
    closing: np.ndarray  # (L,) closing direction (q_grasp - q_pre, unit infinity norm; 0 = joint not closing)
    q_init: np.ndarray  # (L,) measured angles after settling (controller start)
    q_d0: np.ndarray  # (L,) desired angles holding the preload
    tau_init: np.ndarray  # (L,) measured torques after settling
    qpos: np.ndarray  # MuJoCo qpos after settling (hand incl. coupled joints, object)
    gravity: np.ndarray  # (3,) gravity during settling (palm frame)
    contact_links: tuple[str, ...] = ()  # hand links touching the object after settling
    settle_translation: float = float("nan")  # m
    settle_rotation: float = float("nan")  # rad
    fingers: tuple[str, ...] = field(default=())  # fingers that closed

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation between two rotation matrices."""
    c = (np.trace(a.T @ b) - 1.0) / 2.0
    return float(np.arccos(np.clip(c, -1.0, 1.0)))


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, q)
    return out.reshape(3, 3)


class _Scenes:
    """The two models of one object: static (closing) and free (settling)."""

    def __init__(self, hand: Hand, obj: GraspObject, gravity):
        self.hand, self.obj = hand, obj
        self.fixed, self.fixed_index = mjcf.build_scene(hand, obj, np.eye(4), fixed_object=True)
        self.free, self.free_index = mjcf.build_scene(hand, obj, np.eye(4), gravity=gravity)
        self.fixed_data = mujoco.MjData(self.fixed)
        self.free_data = mujoco.MjData(self.free)
        self.hand_geoms = np.array(sorted(g for g, link in self.fixed_index.geom_link.items() if link != hand.tree.root))

    def place(self, pose: np.ndarray) -> None:
        b = self.fixed_index.object_body
        self.fixed.body_pos[b] = pose[:3, 3]
        self.fixed.body_quat[b] = mjcf.pose_to_qpos(pose)[3:]

    def collides(self, q: np.ndarray, margin: float = 0.0) -> list[str]:
        """Hand links within `margin` of the (static, placed) object at configuration q."""
        m, d, ix = self.fixed, self.fixed_data, self.fixed_index
        mjcf.set_hand(m, d, ix, q)
        mujoco.mj_kinematics(m, d)
        out = []
        for g in self.hand_geoms:
            dist = mujoco.mj_geomDistance(m, d, int(g), ix.object_geom, margin + 0.01, None)
            if dist < margin:
                out.append(ix.geom_link[int(g)])
        return out


def _q(hand: Hand, spread: np.ndarray, q2: np.ndarray, q3: np.ndarray) -> np.ndarray:
    q = np.zeros(len(hand.joints))
    q[0::3], q[1::3], q[2::3] = spread, q2, q3
    return np.clip(q, hand.limits[:, 0], hand.limits[:, 1])


def _tip_point(hand: Hand, poses, finger: str) -> np.ndarray:
    """Centre of the fingertip sphere: the capsule end of the distal link farther from its joint."""
    tip = hand.tips[hand.fingers.index(finger)]
    capsule = hand.capsules[tip][-1]
    end = max((np.asarray(capsule.p0), np.asarray(capsule.p1)), key=np.linalg.norm)
    return poses[tip][:3, :3] @ end + poses[tip][:3, 3]


def _tip_radius(hand: Hand, finger: str) -> float:
    return float(hand.capsules[hand.tips[hand.fingers.index(finger)]][-1].radius)


def _power_candidate(hand: Hand, obj: GraspObject, scenes: _Scenes, rng: np.random.Generator):
    top = hand.palm.center[2] + hand.palm.half_extents[2]
    for _ in range(PLACEMENT_TRIES):
        rotation = random_rotation(rng)
        pose = np.eye(4)
        pose[:3, :3] = rotation
        lowest = obj.support(rotation.T @ np.array([0.0, 0.0, -1.0]))
        pose[:3, 3] = [rng.uniform(-0.015, 0.015), rng.uniform(-0.025, 0.005), top + lowest + GAP]
        spread = np.concatenate([[rng.uniform(-0.2, 0.3)], rng.uniform(-0.15, 0.15, 3)])
        q_pre = _q(hand, spread, np.full(4, OPEN_Q2), np.full(4, OPEN_Q3))
        scenes.place(pose)
        if scenes.collides(q_pre, margin=0.002):
            continue
        q_grasp = _q(hand, spread, np.full(4, POWER_CLOSED[0]), np.full(4, POWER_CLOSED[1]))
        return pose, q_pre, q_grasp, tuple(hand.fingers)
    return None


def _aligning(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A rotation taking unit vector a to unit vector u."""
    v, c = np.cross(a, u), float(a @ u)
    if c < -1 + 1e-12:
        axis = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        axis /= np.linalg.norm(axis)
        return 2 * np.outer(axis, axis) - np.eye(3)
    k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + k + k @ k / (1 + c)


def _about(u: np.ndarray, angle: float) -> np.ndarray:
    k = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _precision_candidate(hand: Hand, obj: GraspObject, scenes: _Scenes, rng: np.random.Generator):
    thumb = hand.fingers[0]
    for _ in range(PLACEMENT_TRIES):
        fingers = PRECISION_FINGERS
        closing = (thumb, *fingers)
        spread = np.concatenate([[rng.uniform(-0.2, 0.3)], rng.uniform(-0.1, 0.1, 3)])
        ratio = rng.uniform(0.6, 1.1)  # q3 closes this much per unit q2
        q2_open, q2_closed = np.full(4, OPEN_Q2), np.full(4, OPEN_Q2)
        q3_open, q3_closed = np.full(4, OPEN_Q3), np.full(4, OPEN_Q3)
        for k, finger in enumerate(hand.fingers):
            if finger in closing:
                q2_closed[k] = 1.2
                q3_closed[k] = OPEN_Q3 + ratio * (1.2 - OPEN_Q2)
        q_open, q_closed = _q(hand, spread, q2_open, q3_open), _q(hand, spread, q2_closed, q3_closed)
        # an antipodal pair of object points: the finger side p_f, the thumb side where the
        # inward normal there leaves the object; both normals within ANTIPODAL of the line
        points, normals = obj.sample_surface(rng, 1)
        p_f, n_f = points[0], normals[0]
        p_t, n_t = obj.ray_exit(p_f, -n_f)
        width = float(np.linalg.norm(p_t - p_f))
        a = (p_t - p_f) / max(width, 1e-12)
        if width < 0.01 or n_t @ a < np.cos(ANTIPODAL):
            continue
        r_f = float(np.mean([_tip_radius(hand, x) for x in fingers]))
        found = None
        for s in np.linspace(0.0, 1.0, 201):
            q = q_open + s * (q_closed - q_open)
            poses = hand.link_poses(q)
            t = _tip_point(hand, poses, thumb)
            f = np.mean([_tip_point(hand, poses, finger) for finger in fingers], axis=0)
            gap = np.linalg.norm(t - f) - _tip_radius(hand, thumb) - r_f
            if gap <= width:
                found = s, f, (t - f) / np.linalg.norm(t - f)
                break
        if found is None:
            continue
        s, f, u = found
        rotation = _about(u, rng.uniform(0, 2 * np.pi)) @ _aligning(a, u)
        pose = np.eye(4)
        pose[:3, :3] = rotation
        pose[:3, 3] = f + u * r_f - rotation @ p_f
        q_pre = q_open + max(0.0, s - 0.12) * (q_closed - q_open)
        q_grasp = q_open + min(1.0, s + 0.25) * (q_closed - q_open)
        scenes.place(pose)
        if scenes.collides(q_pre, margin=0.002):
            continue
        # only the fingertips may reach the object on the way to the touching configuration
        touching = q_open + s * (q_closed - q_open)
        if any(link not in hand.tips for link in scenes.collides(touching, margin=0.0)):
            continue
        return pose, q_pre, q_grasp, fingers
    return None


def _close(scenes: _Scenes, q_pre: np.ndarray, q_grasp: np.ndarray, contact_torque: float, preload: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Close from q_pre toward q_grasp onto the held object; returns (q_d0, full hand qpos and qvel)."""
    m, d, ix = scenes.fixed, scenes.fixed_data, scenes.fixed_index
    mujoco.mj_resetData(m, d)
    mjcf.set_hand(m, d, ix, q_pre)
    mujoco.mj_forward(m, d)
    direction = q_grasp - q_pre
    moving = np.abs(direction) > 1e-9
    sense = np.sign(direction)
    rate = direction / CLOSING_TIME
    q_d = q_pre.copy()
    stopped = ~moving
    steps = max(1, round(CHUNK / m.opt.timestep))
    settled_for = 0.0
    t = 0.0
    while t < CLOSING_TIME * 1.5 + 1.0:
        advance = moving & ~stopped
        q_d[advance] = q_d[advance] + rate[advance] * CHUNK
        past = advance & (sense * (q_d - q_grasp) >= 0)
        q_d[past] = q_grasp[past]
        d.ctrl[ix.actuators] = q_d
        mujoco.mj_step(m, d, nstep=steps)
        t += CHUNK
        tau = sense * d.actuator_force[ix.actuators]
        stopped = stopped | (moving & (tau > contact_torque))
        stopped = stopped & ~(moving & (tau < contact_torque / 3) & (sense * (q_grasp - q_d) > 0))
        done = np.all(stopped | (q_d == q_grasp) | ~moving)
        settled_for = settled_for + CHUNK if done else 0.0
        if settled_for >= HOLD_TIME:
            break
    # preload: joints stopped by a contact hold `preload` beyond their measured angles
    touching = moving & (sense * d.actuator_force[ix.actuators] > contact_torque / 3)
    q_m = d.qpos[ix.joint_qpos]
    q_d = np.where(touching, q_m + sense * preload / mjcf.KP, q_d)
    d.ctrl[ix.actuators] = q_d
    mujoco.mj_step(m, d, nstep=max(1, round(HOLD_TIME / m.opt.timestep)))
    return q_d, d.qpos.copy(), d.qvel.copy()


def _settle(scenes: _Scenes, placement: np.ndarray, q_d0: np.ndarray, hand_qpos: np.ndarray, hand_qvel: np.ndarray):
    m, d, ix = scenes.free, scenes.free_data, scenes.free_index
    fixed_ix = scenes.fixed_index
    mujoco.mj_resetData(m, d)
    addresses = np.concatenate([ix.joint_qpos, ix.mimic_qpos])
    fixed_addresses = np.concatenate([fixed_ix.joint_qpos, fixed_ix.mimic_qpos])
    d.qpos[addresses] = hand_qpos[fixed_addresses]
    d.qvel[addresses] = hand_qvel[fixed_addresses]  # hinge qpos and dof addresses coincide before the free joint
    mjcf.set_object(d, ix, placement)
    d.ctrl[ix.actuators] = q_d0
    mujoco.mj_step(m, d, nstep=max(1, round(SETTLE_TIME / m.opt.timestep)))
    mujoco.mj_forward(m, d)
    return d


def _contact_links(scenes: _Scenes, d: mujoco.MjData, min_force: float = 1e-3) -> tuple[str, ...]:
    m, ix = scenes.free, scenes.free_index
    links = set()
    force = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        if ix.object_geom not in (c.geom1, c.geom2):
            continue
        other = c.geom1 if c.geom2 == ix.object_geom else c.geom2
        mujoco.mj_contactForce(m, d, i, force)
        if force[0] > min_force and other in ix.geom_link:
            links.add(ix.geom_link[other])
    order = [scenes.hand.tree.root, *(j.child for j in scenes.hand.tree.joints)]
    return tuple(link for link in order if link in links)


def _check(hand: Hand, kind: str, links: tuple[str, ...]) -> str:
    tips = set(hand.tips)
    if kind == "power":
        if len(links) < 3:
            return f"power grasp touches {len(links)} links ({', '.join(links) or 'none'}), needs 3"
        if all(link in tips for link in links):
            return f"power grasp touches fingertips only ({', '.join(links)})"
        return ""
    thumb_tip = hand.tips[0]
    others = [link for link in links if link in tips and link != thumb_tip]
    inner = [link for link in links if link not in tips]
    if inner:
        return f"precision grasp touches non-distal links ({', '.join(inner)})"
    if thumb_tip not in links:
        return "precision grasp without the thumb tip"
    if not others:
        return "precision grasp with the thumb tip alone"
    return ""


def generate_grasps(
    hand: Hand,
    obj: GraspObject,
    *,
    seed: int = 0,
    n_power: int = 4,
    n_precision: int = 4,
    gravity: bool | np.ndarray = False,
    contact_torque: float = 0.1,
    preload: float = 0.3,
    until_ok: bool = False,
    max_attempts: int = 12,
) -> list[Grasp]:
    """`n_power` power and `n_precision` precision attempts on `obj` (module docstring), each
    closed onto the held object and settled; with `until_ok`, attempts of a kind go on until that
    many succeeded or `max_attempts` were made. Every attempt is returned, failed ones with status
    "failed" and a reason. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    scenes = _Scenes(hand, obj, gravity)
    out: list[Grasp] = []
    for kind, wanted in (("power", n_power), ("precision", n_precision)):
        made = ok = 0
        while (ok if until_ok else made) < wanted and made < (max_attempts if until_ok else wanted):
            grasp = _attempt(hand, obj, scenes, rng, kind, len(out), seed, contact_torque, preload)
            out.append(grasp)
            made, ok = made + 1, ok + grasp.ok
    return out


def _attempt(
    hand: Hand, obj: GraspObject, scenes: _Scenes, rng: np.random.Generator, kind: str, attempt: int, seed: int, contact_torque: float, preload: float
) -> Grasp:
    L = len(hand.joints)
    g = scenes.free.opt.gravity.copy()
    candidate = (_power_candidate if kind == "power" else _precision_candidate)(hand, obj, scenes, rng)
    if candidate is None:
        nan = np.full(L, np.nan)
        return Grasp(
            obj.name,
            kind,
            attempt,
            seed,
            "failed",
            "no collision-free placement found",
            np.full((4, 4), np.nan),
            np.full((4, 4), np.nan),
            nan,
            nan,
            np.zeros(L),
            nan,
            nan,
            nan,
            np.zeros(0),
            g,
        )
    placement, q_pre, q_grasp, fingers = candidate
    closing = q_grasp - q_pre
    closing = closing / max(np.abs(closing).max(), 1e-12)
    scenes.place(placement)
    q_d0, hand_qpos, hand_qvel = _close(scenes, q_pre, q_grasp, contact_torque, preload)
    d = _settle(scenes, placement, q_d0, hand_qpos, hand_qvel)
    ix = scenes.free_index
    pose = mjcf.object_pose(d, ix)
    translation = float(np.linalg.norm(pose[:3, 3] - placement[:3, 3]))
    rotation = rotation_angle(placement[:3, :3], pose[:3, :3])
    links = _contact_links(scenes, d)
    speed = np.linalg.norm(d.qvel[ix.object_dof : ix.object_dof + 3])
    spin = np.linalg.norm(d.qvel[ix.object_dof + 3 : ix.object_dof + 6])
    if translation > MAX_TRANSLATION or rotation > MAX_ROTATION:
        reason = f"object moved {translation * 1000:.1f} mm / {np.rad2deg(rotation):.1f} deg while settling"
    elif speed > REST_SPEED or spin > REST_ANGULAR_SPEED:
        reason = f"object still moving after settling ({speed * 1000:.1f} mm/s, {spin:.2f} rad/s)"
    else:
        reason = _check(hand, kind, links)
    return Grasp(
        object=obj.name,
        kind=kind,
        attempt=attempt,
        seed=seed,
        status="failed" if reason else "ok",
        reason=reason,
        object_pose=pose,
        placement=placement,
        q_pre=q_pre,
        q_grasp=q_grasp,
        closing=closing,
        q_init=d.qpos[ix.joint_qpos].copy(),
        q_d0=q_d0.copy(),
        tau_init=d.actuator_force[ix.actuators].copy(),
        qpos=d.qpos.copy(),
        gravity=g,
        contact_links=links,
        settle_translation=translation,
        settle_rotation=rotation,
        fingers=tuple(hand.fingers) if kind == "power" else (hand.fingers[0], *fingers),
    )
