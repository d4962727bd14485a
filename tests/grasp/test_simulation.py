"""The MuJoCo hand, the contact model, the grasp generator and one trial, each against physics:
forward kinematics against the numpy model, the joint impedance and J^T f at rest, the
penetration F / c of a pressed contact, and the paper's trial protocol."""

import pickle

import mujoco
import numpy as np
import pytest

from robocal.grasp import mjcf, objects
from robocal.grasp.grasps import generate_grasps
from robocal.grasp.hand import Hand
from robocal.grasp.simulation import ExternalForce, HoldController, detect_contacts, run_trial
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def hand():
    return Hand.load()


@pytest.fixture(scope="module")
def sphere_grasps(hand):
    return generate_grasps(hand, objects.get("sphere_30"), seed=3)


def _fk_error(hand, configurations):
    model, index = mjcf.build_scene(hand)
    data = mujoco.MjData(model)
    worst = 0.0
    for q in configurations:
        mjcf.set_hand(model, data, index, q)
        mujoco.mj_kinematics(model, data)
        poses = hand.link_poses(q)
        for link, site in index.link_site.items():
            worst = max(worst, np.abs(data.site_xpos[site] - poses[link][:3, 3]).max())
            worst = max(worst, np.abs(data.site_xmat[site].reshape(3, 3) - poses[link][:3, :3]).max() * 0.1)  # 0.1 m lever
    return worst


def test_forward_kinematics_is_the_hand_model(hand):
    rng = np.random.default_rng(0)
    configurations = rng.uniform(hand.limits[:, 0], hand.limits[:, 1], size=(10, len(hand.joints)))
    assert _fk_error(hand, configurations) < 1e-9


def test_forward_kinematics_of_the_shared_urdf():
    urdf_hand = Hand.load(shared_path("models/dlr_hand_ii/dlr_hand_ii.urdf"))
    rng = np.random.default_rng(1)
    configurations = rng.uniform(urdf_hand.limits[:, 0], urdf_hand.limits[:, 1], size=(5, len(urdf_hand.joints)))
    assert _fk_error(urdf_hand, configurations) < 1e-9


def _pressed_fingertip(hand, finger="fore", push=0.1, obstacle_radius=0.02, friction=True):
    """The finger at q2 = q3 = 0.6 touching a fixed sphere with its tip, then commanded `push`
    rad further on q2 and q3 and left to come to rest (3 s). With friction the tangential load
    makes MuJoCo's soft friction creep slowly (steady, so quasi-static); without it the finger
    comes to rest."""
    k = hand.fingers.index(finger)
    columns = [i for i, name in enumerate(hand.joints) if name.startswith(finger)]
    q = np.zeros(len(hand.joints))
    q[columns[1]] = q[columns[2]] = 0.6
    tip = hand.tips[k]
    capsule = hand.capsules[tip][-1]
    pose = hand.link_poses(q)[tip]
    end = max((np.asarray(capsule.p0), np.asarray(capsule.p1)), key=np.linalg.norm)
    p = pose[:3, :3] @ end + pose[:3, 3]
    jacobian = hand.point_jacobian(q, tip, p)
    v = jacobian[:, columns[1]] + jacobian[:, columns[2]]
    v /= np.linalg.norm(v)
    obstacle = np.eye(4)
    obstacle[:3, 3] = p + v * (obstacle_radius + capsule.radius)
    model, index = mjcf.build_scene(hand, objects.primitive("obstacle", "sphere", (obstacle_radius,)), obstacle, fixed_object=True)
    if not friction:
        model.pair_friction[:] = 0.0
    data = mujoco.MjData(model)
    q_d = q.copy()
    q_d[columns[1:]] += push
    mjcf.set_hand(model, data, index, q, q_d)
    mujoco.mj_step(model, data, nstep=3000)
    mujoco.mj_forward(model, data)
    return model, data, index, q_d, tip


def _hand_on_object(model, data, index, i):
    """World force the hand exerts on the object at contact i, and the contact position."""
    contact = data.contact[i]
    local = np.zeros(6)
    mujoco.mj_contactForce(model, data, i, local)
    force = contact.frame.reshape(3, 3).T @ local[:3]  # on geom2, from geom1
    return (force if contact.geom2 == index.object_geom else -force), np.array(contact.pos)


def test_joint_impedance_at_rest(hand):
    model, data, index, q_d, _ = _pressed_fingertip(hand, friction=False)
    q_m = data.qpos[index.joint_qpos]
    tau_m = data.sensordata[index.torque_sensors]
    assert np.abs(data.qvel).max() < 1e-6  # at rest: kd * dq below 1e-7 Nm
    # the actuator is the joint impedance tau = kp (q_d - q_m), read by the torque sensors
    np.testing.assert_allclose(tau_m, mjcf.KP * (q_d - q_m), atol=1e-6)
    assert tau_m.max() > 0.3  # the fingertip really pushes


def test_joint_torques_hold_the_contact_force(hand):
    model, data, index, q_d, tip = _pressed_fingertip(hand)
    q_m, dq = data.qpos[index.joint_qpos], data.qvel[index.joint_dof]
    tau_m = data.sensordata[index.torque_sensors]
    np.testing.assert_allclose(tau_m, mjcf.KP * (q_d - q_m) - mjcf.KD * dq, atol=1e-12)
    # one fingertip contact, creeping at < 1e-3 rad/s (steady: the inertial torques are < 1e-9
    # Nm), so the joint torques hold the contact force: tau_m = J^T f. The hand model's J assumes
    # q4 = q3, the simulation bends the coupling by < 1e-4 rad (below), which moves the contact
    # lever by < 1e-4 * 0.05 m: < 1e-5 Nm per N, the tolerance's order
    assert data.ncon == 1 and np.abs(dq).max() < 1e-3
    force, point = _hand_on_object(model, data, index, 0)
    local = np.zeros(6)
    mujoco.mj_contactForce(model, data, 0, local)
    assert np.linalg.norm(local[1:3]) > 0.05 * local[0]  # a real friction force takes part
    jacobian = hand.point_jacobian(q_m, tip, point)
    np.testing.assert_allclose(tau_m, jacobian.T @ force, atol=5e-5)


def test_coupling_bends_by_the_transmitted_torque_over_its_stiffness(hand):
    model, data, index, _, tip = _pressed_fingertip(hand, push=0.3, friction=False)
    force, point = _hand_on_object(model, data, index, 0)
    body = index.link_body[tip]
    jacp = np.zeros((3, model.nv))
    mujoco.mj_jac(model, data, jacp, None, point, body)
    eq = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_EQUALITY, "couple:fore_q4")
    mimic, driver = model.eq_obj1id[eq], model.eq_obj2id[eq]
    transmitted = jacp[:, model.jnt_dofadr[mimic]] @ -force  # external torque on the coupled joint
    bend = data.qpos[model.jnt_qposadr[mimic]] - data.qpos[model.jnt_qposadr[driver]]
    stiffness = mjcf.coupling_stiffness(model)[eq]
    assert abs(transmitted) > 0.1
    # MuJoCo's soft equality at rest: violation = torque / (K d / R), exactly up to the solver's tolerance
    assert bend == pytest.approx(transmitted / stiffness, rel=0.02)
    assert abs(bend) < 2.0 / stiffness < 1e-3  # even the 2 Nm torque limit bends it below a milliradian


def test_contact_stiffness_is_force_over_penetration(hand):
    c = mjcf.CONTACT_STIFFNESS
    # a sphere pushed into the palm's top face by 10 N: one contact point, penetration F / c
    sphere = objects.get("sphere_30")
    pose = np.eye(4)
    pose[:3, 3] = [0.0, -0.01, hand.palm.center[2] + hand.palm.half_extents[2] + sphere.size[0]]
    model, index = mjcf.build_scene(hand, sphere, pose)
    data = mujoco.MjData(model)
    mjcf.set_hand(model, data, index, np.zeros(len(hand.joints)))
    mjcf.set_object(data, index, pose)
    data.xfrc_applied[index.object_body, 2] = -10.0
    mujoco.mj_step(model, data, nstep=1000)
    mujoco.mj_forward(model, data)
    assert data.ncon == 1
    assert -data.contact[0].dist == pytest.approx(10.0 / c, rel=1e-3)
    # a fingertip pressing a fixed sphere: whatever force the finger reaches, penetration = f_n / c
    model, data, index, _, _ = _pressed_fingertip(hand, push=0.2, friction=False)
    local = np.zeros(6)
    mujoco.mj_contactForce(model, data, 0, local)
    assert local[0] > 1.0
    assert -data.contact[0].dist == pytest.approx(local[0] / c, rel=1e-3)


def test_grasp_generator_attempts_reasons_and_determinism(hand, sphere_grasps):
    grasps = sphere_grasps
    assert sum(g.kind == "power" for g in grasps) >= 4 and sum(g.kind == "precision" for g in grasps) >= 4
    for g in grasps:
        assert g.status in ("ok", "failed") and (g.reason == "") == g.ok
    ok = [g for g in grasps if g.ok]
    assert len(ok) >= 6
    tips = set(hand.tips)
    for g in ok:
        if g.kind == "power":
            assert len(g.contact_links) >= 3 and not set(g.contact_links) <= tips
        else:
            assert hand.tips[0] in g.contact_links and set(g.contact_links) <= tips and len(g.contact_links) >= 2
        assert g.settle_translation < 0.03 and g.settle_rotation < np.deg2rad(20)
    # the same seed gives the same grasps, bit for bit, and they pickle
    again = generate_grasps(hand, objects.get("sphere_30"), seed=3)
    for a, b in zip(grasps, again, strict=True):
        assert pickle.loads(pickle.dumps(a)).reason == b.reason
        for name in ("object_pose", "q_pre", "q_grasp", "q_init", "q_d0", "qpos"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_grasp_generator_reports_what_fails(hand):
    too_big = objects.primitive("sphere_260", "sphere", (0.13,))  # wider than the open hand
    grasps = generate_grasps(hand, too_big, seed=0, n_power=4, n_precision=4)
    assert len(grasps) == 8 and not any(g.ok for g in grasps)
    assert all("placement" in g.reason for g in grasps)
    # a box: another shape, power and precision attempts
    box = generate_grasps(hand, objects.get("box_60x40x100"), seed=0)
    assert len(box) == 8 and sum(g.ok for g in box) >= 4


def test_detected_contacts_are_where_the_simulation_touches(hand, sphere_grasps):
    sphere = objects.get("sphere_30")
    for g in [g for g in sphere_grasps if g.ok][:3]:
        contacts = detect_contacts(hand, sphere, g.object_pose, g.q_init)
        assert set(g.contact_links) <= {c.link for c in contacts}
        center = g.object_pose[:3, 3]
        for contact in contacts:
            # on the object's surface (within the detection threshold and the contact penetration)
            assert np.linalg.norm(contact.point - center) == pytest.approx(sphere.size[0], abs=1e-3)
            np.testing.assert_allclose(contact.normal, (contact.point - center) / np.linalg.norm(contact.point - center), atol=2e-2)


class _Estimating(HoldController):
    def step(self, t, q_m, tau_m):
        self.last_wrench = np.full(6, t)
        return self.q_d


def test_trial_holds_without_force_and_breaks_under_a_large_one(hand, sphere_grasps):
    sphere = objects.get("sphere_30")
    grasp = next(g for g in sphere_grasps if g.ok and g.kind == "power")
    kwargs = dict(duration_ramp=1.0, duration_hold=0.5)
    quiet = run_trial(hand, sphere, grasp, HoldController(), ExternalForce.none(), **kwargs)
    assert not quiet.broken and quiet.max_translation < 1e-3
    assert quiet.t.shape == (61,) and quiet.tau.shape == (61, 12) and quiet.wrench.shape == (61, 6)
    assert quiet.estimate.shape == (0, 6)
    np.testing.assert_allclose(quiet.q_d, np.tile(grasp.q_d0, (61, 1)))
    # 50 N on a precision grasp: only fingertips touch, their normal forces are at most
    # 2 Nm / ~0.1 m lever = 20 N each, so friction (mu = 0.4) holds less than 50 N in any direction
    pinch = next(g for g in sphere_grasps if g.ok and g.kind == "precision")
    away = pinch.object_pose[:3, :3].T @ np.array([0.0, 0.0, 1.0])
    push = ExternalForce(point=-sphere.size[0] * away, direction=away, magnitude=50.0)
    result = run_trial(hand, sphere, pinch, _Estimating(), push, **kwargs)
    assert result.broken and 0.0 < result.break_time <= 1.5
    assert result.max_translation > 0.03 or result.max_rotation > np.deg2rad(20)
    assert result.estimate.shape == (len(result.t), 6) and np.isnan(result.estimate[0]).all()
    # the applied force ramps linearly and points along `direction`, turned with the object
    ramp = np.linalg.norm(result.wrench[1:, :3], axis=1)
    np.testing.assert_allclose(ramp, 50.0 * np.minimum((result.t[1:] - 0.0125) / 1.0, 1.0), rtol=1e-9)
    np.testing.assert_allclose(result.wrench[1, :3] / ramp[0], [0.0, 0.0, 1.0], atol=1e-2)
