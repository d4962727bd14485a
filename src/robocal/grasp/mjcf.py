"""The hand and one object as a MuJoCo model (MJCF built here, compiled from a string).

Bodies and joints
    The palm (the tree's root) is the world body: the hand is fixed at the origin and the palm
    frame is the world frame. Every link behind a moving joint becomes a body placed by that
    joint's constant origin (composed with the fixed joints in between), with a hinge (slide for
    prismatic joints) about the same axis, so MuJoCo's forward kinematics is the tree's
    (`hand.link_poses`) up to rounding. Every link, moving or not, gets a site `link:<name>` at
    its frame, which is what the kinematics tests compare.

Coupling
    A mimic joint (q4 = q3 on the DLR-Hand II) is a joint of its own held to its driver by a
    joint equality constraint (`COUPLING_SOLREF`, `COUPLING_SOLIMP`). MuJoCo's equalities are
    soft: under a torque tau transmitted through the coupling the two angles differ by
    tau / k_eq with k_eq = 1 / ((1 - d) A tc^2 zeta^2), A the sum of the two dofs' inverse
    weights (`dof_invweight0`), d the impedance and (tc, zeta) the reference; `coupling_stiffness`
    evaluates it (a few thousand Nm/rad here, so the 2 Nm torque limit bends the coupling by
    well under a milliradian).

Drives
    One `position` actuator per actuated joint, in `hand.joints` order: the joint-level impedance
    tau = kp (q_d - q_m) - kd dq_m of the paper (eq. 1) with q_d = ctrl, evaluated by MuJoCo at
    every physics step. `KP` = 5 Nm/rad is the paper's stiffness; `KD` = 0.06 Nms/rad damps the
    medial joint (q3 with q4 coupled: about 1.6e-4 kg m^2 including armature) critically and the
    proximal joint (about 6e-4 kg m^2) at a damping ratio near 0.5. The control range is the
    joint range widened by `CTRL_MARGIN` on both sides, so a desired angle may lie beyond a
    contact or a joint limit; the force is clipped at `Hand.effort` = 2 Nm, the joint effort limit of
    the shared DLR-Hand II URDF. An `actuatorfrc` sensor per actuator reads the commanded (=
    measured, the torque controller being ideal) joint torque tau_m. The implicitfast integrator
    treats the actuator damping implicitly.

Mass
    Hand links have the density `HAND_DENSITY` = 700 kg/m^3 on their capsules (proximal 58 g,
    medial 46 g, distal 16 g on the DLR-Hand II), links without capsules `BARE_LINK_MASS` (20 g as
    a 1 cm sphere), armature `ARMATURE` on the driven joints (reflected motor inertia) and
    `MIMIC_ARMATURE` on coupled ones, and gravity compensation (gravcomp = 1): gravity acts on the
    object only, and only when a scene asks for it.

Contacts
    Only hand-object contacts exist (explicit contact pairs; hand-hand and hand-palm collisions
    are off: a grasp closes onto the object). Friction mu = 0.4 (elliptic cones, condim 3, no
    torsional friction). MuJoCo's friction is soft: a tangential load f_t inside the cone is held
    by a slow creep v = f_t R_f / B (R_f the friction regularizer, B the reference damping);
    `IMPRATIO` = 1000 makes R_f a thousandth of the normal one, so the creep is a few micrometres
    per second per newton (a 100 g object on the palm under a 3.9 N push, just inside its cone:
    14 um/s; grasps held without an external force drift by less than 0.3 mm in 8 s). The noslip
    post-solver would remove the creep too, but its friction forces are not those of the main
    solver, so at rest neither the contact stiffness below nor the coupling stiffness above hold
    any longer (20 % and 60x off in a pressed fingertip). The normal direction is made a spring
    of stiffness c = `CONTACT_STIFFNESS` (10,000 N/m, the paper's) per contact point:

    MuJoCo's direct reference (solref = (-s0, -s1)) with a constant impedance d gives, at rest,
    a contact force s0 / ((1 - d) A) per metre of penetration, A being MuJoCo's approximation of
    the inverse mass seen by the contact (`body_invweight0` of the two bodies), and an extra
    inertia d / ((1 - d) A) on the contact coordinate. Each pair therefore gets
    d = 1 - 1 / (m A) and solref = (-c / m, -2 zeta sqrt(c / m)) with the contact-mode mass
    m = max(2 / A, `MIN_CONTACT_MASS`): the static stiffness is exactly c whatever the bodies,
    the damping is `CONTACT_DAMPING_RATIO` (1: critical) of that mode and its frequency
    sqrt(c / m) stays below 500 rad/s, a quarter of the 1 ms step's explicit limit 2 / h.
    Writing solref = (-10000, -b) alone would give 10000 / ((1 - d) A) N/m, a stiffness that
    depends on the bodies' masses and on d. A face-to-face contact (box on the palm) has several contact points (up to
    four with `multiccd`), each a spring of stiffness c, as the paper's elastic model has.

Time step
    `TIMESTEP` = 1 ms: the stiffest modes (contacts at 500 rad/s, the drives at about 180 rad/s)
    are well inside the explicit limit of 2000 rad/s.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from robocal.errors import RobocalError
from robocal.grasp.constants import FRICTION, KP
from robocal.grasp.constants import STIFFNESS as CONTACT_STIFFNESS
from robocal.grasp.hand import Hand

if TYPE_CHECKING:
    from robocal.grasp.objects import GraspObject
    from robocal.kinematics.tree import Joint

TIMESTEP = 1e-3  # s
KD = 0.06  # Nms/rad, joint impedance damping (chosen, see the module docstring)
CTRL_MARGIN = 1.0  # rad, desired angles may lie this far outside the joint range
ARMATURE = 1e-4  # kg m^2, driven joints
MIMIC_ARMATURE = 2e-5  # kg m^2, coupled joints
HAND_DENSITY = 700.0  # kg/m^3 on the capsules
BARE_LINK_MASS = 0.02  # kg, links without capsules
CONTACT_DAMPING_RATIO = 1.0
MIN_CONTACT_MASS = 0.04  # kg: caps the contact mode at sqrt(c / m) = 500 rad/s
COUPLING_SOLREF = (0.002, 1.0)  # time constant (2 time steps), damping ratio
COUPLING_SOLIMP = (0.999, 0.999, 0.001, 0.5, 2.0)
IMPRATIO = 1000.0
GRAVITY = np.array([0.0, 0.0, -9.81])  # m/s^2 in the palm frame when a scene has gravity: palm up


@dataclass(frozen=True)
class SceneIndex:
    """Where things are in a compiled scene (all ids are MuJoCo ids; -1 where there is no object)."""

    joint_qpos: np.ndarray  # (L,) qpos address of each actuated joint, hand.joints order
    joint_dof: np.ndarray  # (L,) dof address of each actuated joint
    mimic_qpos: np.ndarray  # (M,) qpos address of each coupled joint
    mimic_driver: np.ndarray  # (M,) its driver's column in hand.joints
    mimic_gain: np.ndarray  # (M,) q_mimic = gain * q_driver + offset
    mimic_offset: np.ndarray  # (M,)
    actuators: np.ndarray  # (L,) actuator id per actuated joint
    torque_sensors: np.ndarray  # (L,) sensordata address of each actuator's torque sensor
    object_body: int
    object_geom: int
    object_qpos: int  # first of the free joint's 7 qpos (position, quaternion w x y z)
    object_dof: int  # first of its 6 dofs (linear velocity, angular velocity)
    palm_geom: int
    geom_link: dict[int, str] = field(default_factory=dict)  # hand geom id -> link name
    link_site: dict[str, int] = field(default_factory=dict)  # link name -> site id at its frame
    link_body: dict[str, int] = field(default_factory=dict)  # link name -> id of the body carrying it

    def hand_qpos(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """qpos addresses and values of every hand joint (actuated and coupled) for configuration q."""
        q = np.asarray(q, dtype=float)
        values = np.concatenate([q, self.mimic_gain * q[self.mimic_driver] + self.mimic_offset])
        return np.concatenate([self.joint_qpos, self.mimic_qpos]), values


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _quat(rotation: np.ndarray) -> np.ndarray:
    out = np.zeros(4)
    mujoco.mju_mat2Quat(out, np.ascontiguousarray(rotation, dtype=float).ravel())
    return out


def _place(element: ET.Element, pose: np.ndarray) -> None:
    element.set("pos", _fmt(pose[:3, 3]))
    element.set("quat", _fmt(_quat(pose[:3, :3])))


def pose_to_qpos(pose: np.ndarray) -> np.ndarray:
    """7 free-joint coordinates (position, quaternion w x y z) of a 4x4 pose."""
    return np.concatenate([pose[:3, 3], _quat(pose[:3, :3])])


def qpos_to_pose(qpos: np.ndarray) -> np.ndarray:
    """4x4 pose of 7 free-joint coordinates."""
    out = np.eye(4)
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(qpos[3:7], dtype=float))
    out[:3, :3] = mat.reshape(3, 3)
    out[:3, 3] = qpos[:3]
    return out


def scene_xml(
    hand: Hand, obj: GraspObject | None = None, object_pose: np.ndarray | None = None, gravity: bool | np.ndarray = False, fixed_object: bool = False
) -> str:
    """The MJCF text of the hand (and the object at `object_pose`, palm frame; a static body
    when `fixed_object`). Contact pairs get placeholder parameters; `build_scene` sets the real
    ones after compiling (they need the compiled inverse weights)."""
    root = ET.Element("mujoco", model=f"{hand.tree.name}_grasp")
    ET.SubElement(root, "compiler", angle="radian", autolimits="true")
    option = ET.SubElement(
        root,
        "option",
        timestep=repr(TIMESTEP),
        integrator="implicitfast",
        cone="elliptic",
        gravity=_fmt(_gravity(gravity)),
        impratio=repr(IMPRATIO),
    )
    ET.SubElement(option, "flag", multiccd="enable")
    ET.SubElement(root, "size", memory="16M")
    asset = ET.SubElement(root, "asset")
    world = ET.SubElement(root, "worldbody")
    # palm box, fixed to the world (= palm) frame
    palm = hand.palm
    ET.SubElement(
        world, "geom", name="palm", type="box", pos=_fmt(palm.center), size=_fmt(palm.half_extents), contype="0", conaffinity="0", rgba="0.6 0.6 0.65 1"
    )
    bodies = _hand_bodies(hand, world)
    _link_geometry(hand, bodies)
    if obj is not None:
        _object_body(world, asset, obj, object_pose, fixed_object)
    contact = ET.SubElement(root, "contact")
    if obj is not None:
        for link, capsules in hand.capsules.items():
            for k in range(len(capsules)):
                _pair(contact, f"{link}:capsule{k}")
        if not fixed_object:  # palm and a static object are both immovable
            _pair(contact, "palm")
    _drives(root, hand, bodies.joints)
    return ET.tostring(root, encoding="unicode")


@dataclass
class _Bodies:
    """The MJCF bodies of a hand: a link is carried by the nearest link at or above it whose
    parent joint moves (`carrier`), at `offset` in that body's frame."""

    carrier: dict[str, str | None]
    offset: dict[str, np.ndarray]
    elements: dict[str | None, ET.Element]  # carrying link (None: the world) -> its body element
    joints: list[Joint]  # the moving joints, in tree order


def _hand_bodies(hand: Hand, world: ET.Element) -> _Bodies:
    """One body with a hinge or slide joint per moving joint of the hand's tree, under `world`."""
    tree = hand.tree
    bodies = _Bodies({tree.root: None}, {tree.root: np.eye(4)}, {None: world}, [])
    for joint, origin in zip(tree.joints, hand.origins):
        pose = bodies.offset[joint.parent] @ origin
        if not joint.moves:
            bodies.carrier[joint.child], bodies.offset[joint.child] = bodies.carrier[joint.parent], pose
            continue
        body = ET.SubElement(bodies.elements[bodies.carrier[joint.parent]], "body", name=joint.child, gravcomp="1")
        _place(body, pose)
        kind = "slide" if joint.type == "prismatic" else "hinge"
        mimic = joint.mimic is not None
        attributes = {"name": joint.name, "type": kind, "axis": _fmt(joint.axis), "armature": repr(MIMIC_ARMATURE if mimic else ARMATURE)}
        if joint.limits is not None and joint.type != "continuous":
            attributes["range"] = _fmt(joint.limits)
        ET.SubElement(body, "joint", attributes)
        bodies.joints.append(joint)
        bodies.elements[joint.child], bodies.carrier[joint.child], bodies.offset[joint.child] = body, joint.child, np.eye(4)
    return bodies


def _link_geometry(hand: Hand, bodies: _Bodies) -> None:
    """A site per link frame, the links' capsules, and a small inertia for bodies without geometry."""
    tree = hand.tree
    for link in [tree.root, *(j.child for j in tree.joints)]:
        parent = bodies.elements[bodies.carrier[link]]
        offset = bodies.offset[link]
        site = ET.SubElement(parent, "site", name=f"link:{link}", size="0.002", rgba="1 0 0 0.5")
        _place(site, offset)
        for k, capsule in enumerate(hand.capsules.get(link, ())):
            ends = [offset[:3, :3] @ np.asarray(p, dtype=float) + offset[:3, 3] for p in (capsule.p0, capsule.p1)]
            ET.SubElement(
                parent,
                "geom",
                name=f"{link}:capsule{k}",
                type="capsule",
                fromto=_fmt(np.concatenate(ends)),
                size=repr(float(capsule.radius)),
                density=repr(HAND_DENSITY),
                contype="0",
                conaffinity="0",
                rgba="0.8 0.7 0.55 1",
            )
    for name, element in bodies.elements.items():
        if name is not None and element.find("geom") is None:
            r = 0.01
            ET.SubElement(element, "inertial", pos="0 0 0", mass=repr(BARE_LINK_MASS), diaginertia=_fmt([0.4 * BARE_LINK_MASS * r * r] * 3))


def _object_body(world: ET.Element, asset: ET.Element, obj: GraspObject, object_pose: np.ndarray | None, fixed_object: bool) -> None:
    """The object's body at `object_pose` (free unless `fixed_object`), and its mesh asset."""
    pose = np.eye(4) if object_pose is None else np.asarray(object_pose, dtype=float)
    body = ET.SubElement(world, "body", name="object")
    _place(body, pose)
    if not fixed_object:
        ET.SubElement(body, "freejoint", name="object")
    geom_attributes = obj.geom_attributes()
    if "mesh" in geom_attributes:
        source = {"file": str(obj.mesh_file)} if obj.mesh_data is None else {"vertex": _fmt(obj.mesh_points())}
        ET.SubElement(asset, "mesh", {"name": geom_attributes["mesh"], **source, "inertia": "convex"})
    ET.SubElement(body, "geom", {"name": "object", "contype": "0", "conaffinity": "0", "rgba": "0.3 0.5 0.8 1", **geom_attributes})


def _drives(root: ET.Element, hand: Hand, joints: list[Joint]) -> None:
    """Equality constraints of the coupled joints, a position actuator per actuated joint and
    its torque sensor."""
    tree = hand.tree
    equality = ET.SubElement(root, "equality")
    actuator = ET.SubElement(root, "actuator")
    sensor = ET.SubElement(root, "sensor")
    for joint in joints:
        if joint.mimic is not None:
            driver, gain, off = tree.driver(joint.name)
            ET.SubElement(
                equality,
                "joint",
                name=f"couple:{joint.name}",
                joint1=joint.name,
                joint2=driver,
                polycoef=_fmt([off, gain, 0, 0, 0]),
                solref=_fmt(COUPLING_SOLREF),
                solimp=_fmt(COUPLING_SOLIMP),
            )
    for name in hand.joints:
        joint = tree.joint(name)
        low, high = joint.limits if joint.limits is not None else (-np.pi, np.pi)
        ET.SubElement(
            actuator,
            "position",
            name=name,
            joint=name,
            kp=repr(KP),
            kv=repr(KD),
            ctrlrange=_fmt([low - CTRL_MARGIN, high + CTRL_MARGIN]),
            forcerange=_fmt([-hand.effort, hand.effort]),
        )
        ET.SubElement(sensor, "actuatorfrc", name=f"torque:{name}", actuator=name)


def _pair(contact: ET.Element, hand_geom: str) -> None:
    ET.SubElement(contact, "pair", geom1=hand_geom, geom2="object", condim="3", friction=_fmt([FRICTION, FRICTION, 0.005, 0.0001, 0.0001]))


def _gravity(gravity: bool | np.ndarray) -> np.ndarray:
    if isinstance(gravity, bool | np.bool_):
        return GRAVITY.copy() if gravity else np.zeros(3)
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,):
        raise RobocalError(f"gravity must be a bool or a 3-vector, not {gravity!r}")
    return g


def build_scene(
    hand: Hand, obj: GraspObject | None = None, object_pose: np.ndarray | None = None, gravity: bool | np.ndarray = False, fixed_object: bool = False
) -> tuple[mujoco.MjModel, SceneIndex]:
    """Compile the scene: the hand (gravity-compensated, at the origin) and, if given, the object
    as a free body at `object_pose` (4x4, palm frame; its frame is its centre of mass), or as a
    static body there when `fixed_object` (the object held in place while the fingers close; it
    can be moved through `model.body_pos` / `body_quat`). `gravity`: False (none), True
    (`GRAVITY`, palm up) or a 3-vector in the palm frame; it acts on the object only. Returns the
    model and the index of what others need in it."""
    model = mujoco.MjModel.from_xml_string(scene_xml(hand, obj, object_pose, gravity, fixed_object))
    index = _index(hand, model)
    _set_contact_parameters(model, index)
    return model, index


def contact_parameters(inverse_mass: float) -> tuple[np.ndarray, np.ndarray]:
    """(solref, solimp) of a contact pair whose bodies have MuJoCo's approximate inverse mass A
    (sum of their translational `body_invweight0`): static stiffness CONTACT_STIFFNESS per
    contact point, damping CONTACT_DAMPING_RATIO of the contact mode (module docstring)."""
    if inverse_mass <= 0:
        raise RobocalError("a contact pair between two immovable bodies")
    mass = max(2.0 / inverse_mass, MIN_CONTACT_MASS)
    impedance = 1.0 - 1.0 / (mass * inverse_mass)
    omega = np.sqrt(CONTACT_STIFFNESS / mass)
    solref = np.array([-(omega**2), -2.0 * CONTACT_DAMPING_RATIO * omega])
    solimp = np.array([impedance, impedance, 0.001, 0.5, 2.0])
    return solref, solimp


def _set_contact_parameters(model: mujoco.MjModel, index: SceneIndex) -> None:
    for i in range(model.npair):
        bodies = model.geom_bodyid[model.pair_geom1[i]], model.geom_bodyid[model.pair_geom2[i]]
        inverse_mass = sum(model.body_invweight0[b, 0] for b in bodies)
        solref, solimp = contact_parameters(inverse_mass)
        model.pair_solref[i] = solref
        model.pair_solimp[i] = solimp
        model.pair_solreffriction[i] = 0.0


def coupling_stiffness(model: mujoco.MjModel) -> np.ndarray:
    """(neq,) static stiffness (Nm/rad) of each joint equality: the torque it transmits per
    radian of violation, k = K d / R with MuJoCo's reference stiffness K, impedance d and
    regularizer R = (1 - d) / d * A."""
    out = np.zeros(model.neq)
    for i in range(model.neq):
        timeconst, ratio = model.eq_solref[i]
        d = model.eq_solimp[i, 1]
        dofs = [model.jnt_dofadr[model.eq_obj1id[i]], model.jnt_dofadr[model.eq_obj2id[i]]]
        inverse = sum(model.dof_invweight0[j] for j in dofs)
        timeconst = max(timeconst, 2 * model.opt.timestep)
        stiffness = 1.0 / (d * d * timeconst**2 * ratio**2)
        out[i] = stiffness * d / ((1 - d) / d * inverse)
    return out


def _index(hand: Hand, model: mujoco.MjModel) -> SceneIndex:
    def jid(name):
        return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)

    column = {name: i for i, name in enumerate(hand.joints)}
    joint_ids = [jid(name) for name in hand.joints]
    mimics = [j for j in hand.tree.joints if j.moves and j.mimic is not None]
    drivers = [hand.tree.driver(j.name) for j in mimics]
    actuators = np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, name) for name in hand.joints])
    sensors = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, f"torque:{name}") for name in hand.joints]
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "object")
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "object")
    free = jid("object")
    geom_link = {}
    for link, capsules in hand.capsules.items():
        for k in range(len(capsules)):
            geom_link[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, f"{link}:capsule{k}")] = link
    palm = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "palm")
    geom_link[palm] = hand.tree.root
    link_site = {}
    link_body = {}
    for link in [hand.tree.root, *(j.child for j in hand.tree.joints)]:
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"link:{link}")
        link_site[link] = site
        link_body[link] = int(model.site_bodyid[site])
    return SceneIndex(
        joint_qpos=np.array([model.jnt_qposadr[j] for j in joint_ids]),
        joint_dof=np.array([model.jnt_dofadr[j] for j in joint_ids]),
        mimic_qpos=np.array([model.jnt_qposadr[jid(j.name)] for j in mimics], dtype=int),
        mimic_driver=np.array([column[d[0]] for d in drivers], dtype=int),
        mimic_gain=np.array([d[1] for d in drivers], dtype=float),
        mimic_offset=np.array([d[2] for d in drivers], dtype=float),
        actuators=actuators,
        torque_sensors=np.array([model.sensor_adr[s] for s in sensors]),
        object_body=body,
        object_geom=geom,
        object_qpos=int(model.jnt_qposadr[free]) if free >= 0 else -1,
        object_dof=int(model.jnt_dofadr[free]) if free >= 0 else -1,
        palm_geom=palm,
        geom_link=geom_link,
        link_site=link_site,
        link_body=link_body,
    )


def set_hand(model: mujoco.MjModel, data: mujoco.MjData, index: SceneIndex, q: np.ndarray, q_d: np.ndarray | None = None) -> None:
    """Put the hand at configuration q (coupled joints at their drivers' values), at rest, with
    desired angles q_d (default q)."""
    addresses, values = index.hand_qpos(q)
    data.qpos[addresses] = values
    dofs = [model.jnt_dofadr[j] for j in range(model.njnt) if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE]
    data.qvel[dofs] = 0.0
    data.ctrl[index.actuators] = np.asarray(q if q_d is None else q_d, dtype=float)


def set_object(data: mujoco.MjData, index: SceneIndex, pose: np.ndarray) -> None:
    """Put the object at a 4x4 pose (palm frame), at rest."""
    data.qpos[index.object_qpos : index.object_qpos + 7] = pose_to_qpos(pose)
    data.qvel[index.object_dof : index.object_dof + 6] = 0.0


def object_pose(data: mujoco.MjData, index: SceneIndex) -> np.ndarray:
    """The object's current 4x4 pose (palm frame) from qpos."""
    return qpos_to_pose(data.qpos[index.object_qpos : index.object_qpos + 7])
