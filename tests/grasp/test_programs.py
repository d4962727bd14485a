"""The grasp controller's convex programs (`robocal.grasp.programs`).

References are independent of the module: the same mathematics written directly with cvxpy
atoms (friction cones as norms of the projected tangential force, the margins as a concave
sum, no tangent bases, no auxiliary variables, no scaling of the motion), solved through cvxpy,
and grasps with a known answer: internal squeezing forces, an injective fingertip grasp, and an
antipodal pinch whose minimal torques have a closed form.

Random grasps: contacts on a sphere of radius 3-5 cm with outward normals, moments about a
reference point a few mm off its center; a hand of 4 fingers x 3 revolute joints (L = 12), each
finger leaving the surface at its fingertip (`finger`), each column of J being
axis x (contact - joint position). A fingertip contact moves with its finger's three joints, a
link contact with the first two, a palm contact with none.
"""

from __future__ import annotations

from dataclasses import replace

import cvxpy as cp
import numpy as np
import pytest

from robocal.errors import RobocalError
from robocal.grasp.controller import torque_command
from robocal.grasp.programs import (
    F_SIGMA,
    FORCE_REG,
    LEVER,
    MOTION_REG,
    OBJECT_REG,
    W_EQ,
    GraspModel,
    estimate_wrench,
    optimize_torques,
    programs_for,
)

MU, C, KP = 0.4, 1.0e4, 5.0
SIGMA = 0.005  # Nm
FINGERS, JOINTS = 4, 3
D = np.r_[np.ones(3), np.full(3, 1 / LEVER)]


def skew(r):
    return np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def finger(rng, point, normal):
    """Joint positions and axes (3, 3) of a finger whose tip touches `point`: it leaves the
    surface along a random tangent e, rising by 5-15 degrees to its distal (third) joint 2.5-3.5
    cm back and 20-40 degrees more to its base 4-5 cm further, where an abduction (first, about
    the normal) and a flexion joint (second) sit. The flexion axes are e x normal, so that
    flexing presses the tip into the object inside its friction cone; axes jittered by 0.1 rad."""
    e = unit(np.cross(normal, rng.normal(size=3)))
    rise = np.deg2rad(rng.uniform(5, 15))
    distal = point + rng.uniform(0.025, 0.035) * (np.cos(rise) * e + np.sin(rise) * normal)
    rise += np.deg2rad(rng.uniform(20, 40))
    base = distal + rng.uniform(0.04, 0.05) * (np.cos(rise) * e + np.sin(rise) * normal)
    axes = unit(np.array([normal, np.cross(e, normal), np.cross(e, normal)]) + 0.1 * rng.normal(size=(3, 3)))
    return np.array([base, base, distal]), axes


def build_grasp(rng, directions, kinds, radius=None):
    """A GraspModel for contacts at `directions` (from the sphere's center) of kinds ("tip", k),
    ("link", k) (on finger k's proximal link, moved by its first two joints) or ("palm",). A
    finger whose tip is not in the list stands over a random point."""
    radius = rng.uniform(0.03, 0.05) if radius is None else radius
    normals = unit(np.asarray(directions, dtype=float))
    points = radius * normals
    reference = rng.normal(0.0, 0.005, 3)
    tip_of = {kind[1]: i for i, kind in enumerate(kinds) if kind[0] == "tip"}
    fingers = []
    for k in range(FINGERS):
        normal = normals[tip_of[k]] if k in tip_of else unit(rng.normal(size=3))
        fingers.append(finger(rng, radius * normal, normal))
    J = np.zeros((3 * len(kinds), FINGERS * JOINTS))
    for i, kind in enumerate(kinds):
        if kind[0] != "palm":
            joints, axes = fingers[kind[1]]
            for j in range(JOINTS if kind[0] == "tip" else 2):
                J[3 * i : 3 * i + 3, JOINTS * kind[1] + j] = np.cross(axes[j], points[i] - joints[j])
    G = np.hstack([np.vstack([np.eye(3), skew(p - reference)]) for p in points])
    tip_finger = np.array([kind[1] if kind[0] == "tip" else -1 for kind in kinds])
    return GraspModel(G=G, J=J, normals=normals, tip_finger=tip_finger, mu=MU, stiffness=C, kp=KP)


def random_grasp(rng, n_link=0, n_palm=0):
    """4 fingertips (a thumb opposing three fingers, jittered), n_link link and n_palm palm contacts."""
    tips = [[-1.0, 0.0, 0.0], [1.0, -0.6, 0.0], [1.0, 0.0, 0.0], [1.0, 0.6, 0.0]]
    directions = [unit(np.array(t) + 0.3 * rng.normal(size=3)) for t in tips]
    kinds = [("tip", k) for k in range(FINGERS)]
    for m in range(n_link):
        k = m % FINGERS
        directions.append(unit(directions[k] + np.array([0.0, 0.0, -0.5 * (1 + m // FINGERS)]) + 0.2 * rng.normal(size=3)))
        kinds.append(("link", k))
    for _ in range(n_palm):
        directions.append(unit(np.array([0.0, 0.0, -1.0]) + 0.5 * rng.normal(size=3)))
        kinds.append(("palm",))
    return build_grasp(rng, directions, kinds)


def antipodal_grasp(rng, injective=False):
    """Fingertips in two antipodal pairs: tips 0 and 1 at +-u1, tips 2 and 3 at +-u2."""
    while True:
        u1, u2 = unit(rng.normal(size=(2, 3)))
        if abs(u1 @ u2) > 0.7:  # well apart, so that the pairs span the moments
            continue
        model = build_grasp(rng, [u1, -u1, u2, -u2], [("tip", k) for k in range(4)])
        # explaining a torque error takes a lever: keep fingers whose tips move >= 1 cm per rad
        if not injective or min(np.linalg.svd(model.J[3 * k : 3 * k + 3, 3 * k : 3 * k + 3], compute_uv=False)[-1] for k in range(4)) > 0.01:
            return model


def cone_forces(rng, normals, scale=3.0):
    """Forces strictly inside the friction cones: normal part 0.5..1 x scale, tangential part
    up to 0.8 mu of it."""
    fn = rng.uniform(0.5, 1.0, len(normals)) * scale
    tangent = unit(np.cross(normals, rng.normal(size=normals.shape)))
    return -fn[:, None] * normals + (rng.uniform(0, 0.8, len(normals)) * MU * fn)[:, None] * tangent


def friction_slack(model, forces):
    """mu f_n - ||f_t|| per contact (N): >= 0 inside the cone."""
    fn = -np.sum(forces * model.normals, axis=1)
    ft = forces + fn[:, None] * model.normals
    return model.mu * fn - np.linalg.norm(ft, axis=1)


def tip_margins(model, forces):
    slack = friction_slack(model, forces)
    return {k: slack[model.tip_finger == k].sum() for k in np.unique(model.tip_finger[model.tip_finger >= 0])}


# ---- references (cvxpy) -----------------------------------------------------------------------


def reference_estimate(model, tau):
    n = model.n_contacts
    f = cp.Variable(3 * n)
    cones = []
    for i, normal in enumerate(model.normals):
        fi = f[3 * i : 3 * i + 3]
        cones.append(cp.norm(fi - (normal @ fi) * normal) <= model.mu * (-normal @ fi))
    objective = cp.norm(model.G[:3] @ f) + F_SIGMA / SIGMA * cp.norm(model.J.T @ f - tau) + FORCE_REG * cp.sum_squares(f)
    problem = cp.Problem(cp.Minimize(objective), cones)
    problem.solve(solver=cp.CLARABEL)
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)  # the objective comparison judges
    return problem.value


def estimate_objective(model, estimate, tau):
    f = estimate.forces.reshape(-1)
    return np.linalg.norm(estimate.wrench[:3]) + F_SIGMA / SIGMA * np.linalg.norm(model.J.T @ f - tau) + FORCE_REG * f @ f


def motion_regularization(dq, dx):
    return (C * LEVER**2) ** 2 * (MOTION_REG * dq @ dq + OBJECT_REG * (dx[3:] @ dx[3:] + dx[:3] @ dx[:3] / LEVER**2))


def reference_optimize(model, wrench, margin, delta0):
    dq, dx = cp.Variable(model.n_joints), cp.Variable(6)
    f = model.stiffness * (model.J @ dq - model.G.T @ dx + delta0)
    constraints, margins = [], {}
    for i, normal in enumerate(model.normals):
        fi = f[3 * i : 3 * i + 3]
        slack = model.mu * (-normal @ fi) - cp.norm(fi - (normal @ fi) * normal)
        constraints.append(slack >= 0)
        if model.tip_finger[i] >= 0:
            margins.setdefault(model.tip_finger[i], []).append(slack)
    constraints += [cp.sum(cp.hstack(terms)) >= margin for terms in margins.values()]
    if np.isfinite(model.torque_limit):
        constraints.append(cp.abs(model.J.T @ f) <= model.torque_limit)
    regularization = (C * LEVER**2) ** 2 * (MOTION_REG * cp.sum_squares(dq) + OBJECT_REG * (cp.sum_squares(dx[3:]) + cp.sum_squares(dx[:3]) / LEVER**2))
    objective = cp.sum_squares(model.J.T @ f) + W_EQ * cp.norm(cp.multiply(D, model.G @ f + wrench)) + regularization
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver=cp.CLARABEL)
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)  # the objective comparison judges
    return problem.value


def optimize_objective(command):
    return command.tau @ command.tau + W_EQ * np.linalg.norm(D * command.equilibrium_residual) + motion_regularization(command.dq, command.dx)


# ---- against the references -------------------------------------------------------------------

# Both sides are interior-point solutions stopped at a relative duality gap of 1e-8 (clarabel's
# default, directly and through cvxpy); 1e-6 relative leaves a factor 100 for the different
# scalings of the two formulations. The objectives are recomputed from the returned quantities,
# so a solution that cut a corner of a constraint would show here as well.
REL = 1e-6
CONE_TOL = 1e-7  # N


@pytest.mark.parametrize("seed", range(10))
def test_estimate_matches_reference(seed):
    rng = np.random.default_rng(seed)
    model = random_grasp(rng, n_link=seed % 4, n_palm=seed % 3)
    forces = cone_forces(rng, model.normals)
    # torques of forces in their cones, some with an external load, some with noise no contact
    # force explains (sensor noise 0-2 sigma)
    tau = model.J.T @ forces.reshape(-1) + rng.normal(0, SIGMA * (seed % 3), model.n_joints)
    estimate = estimate_wrench(model, tau, torque_sigma=SIGMA)
    assert estimate.status in ("Solved", "AlmostSolved")
    np.testing.assert_allclose(estimate.torque_residual, model.J.T @ estimate.forces.reshape(-1) - tau)
    np.testing.assert_allclose(estimate.wrench, -model.G @ estimate.forces.reshape(-1))
    assert friction_slack(model, estimate.forces).min() > -CONE_TOL
    expected = reference_estimate(model, tau)
    assert estimate_objective(model, estimate, tau) == pytest.approx(expected, rel=REL, abs=1e-9)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("seed", range(10))
def test_optimize_matches_reference(seed):
    rng = np.random.default_rng(100 + seed)
    model = random_grasp(rng, n_link=seed % 4, n_palm=seed % 3)
    wrench = np.r_[unit(rng.normal(size=3)) * rng.uniform(0, 5), rng.normal(0, 0.05, 3)]
    margin = rng.uniform(0, 1)
    # half of them start from a preload: 0-0.2 mm deflections inside the cones
    delta0 = cone_forces(rng, model.normals, scale=2.0).reshape(-1) / C * (seed % 2)
    command = optimize_torques(model, wrench, margin=margin, delta0=delta0)
    forces = command.forces.reshape(-1)
    np.testing.assert_allclose(forces, C * (model.J @ command.dq - model.G.T @ command.dx + delta0), atol=1e-9)
    np.testing.assert_allclose(command.tau, model.J.T @ forces, atol=1e-12)
    np.testing.assert_allclose(command.q_offset, command.dq + command.tau / KP, atol=1e-12)
    assert friction_slack(model, command.forces).min() > -CONE_TOL
    assert min(tip_margins(model, command.forces).values()) > margin - 1e-6
    expected = reference_optimize(model, wrench, margin, delta0)
    assert optimize_objective(command) == pytest.approx(expected, rel=REL, abs=1e-9)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("seed", range(5))
def test_torque_limit_binds_and_matches_reference(seed):
    """With a joint torque limit at 80 % of the unlimited command's largest torque, no torque
    exceeds it, the limit binds, and the objective is the reference's (which has the limit too)."""
    rng = np.random.default_rng(500 + seed)
    model = random_grasp(rng, n_link=seed % 3)
    wrench = np.r_[unit(rng.normal(size=3)) * rng.uniform(0, 3), rng.normal(0, 0.03, 3)]
    delta0 = cone_forces(rng, model.normals, scale=2.0).reshape(-1) / C
    free = optimize_torques(model, wrench, margin=0.2, delta0=delta0)
    limited_model = replace(model, torque_limit=0.8 * np.abs(free.tau).max())
    command = optimize_torques(limited_model, wrench, margin=0.2, delta0=delta0)
    assert np.abs(command.tau).max() < limited_model.torque_limit + 1e-6
    assert np.abs(command.tau).max() > limited_model.torque_limit - 1e-3  # binds: the free optimum lies beyond
    assert min(tip_margins(model, command.forces).values()) > 0.2 - 1e-6
    expected = reference_optimize(limited_model, wrench, 0.2, delta0)
    assert optimize_objective(command) == pytest.approx(expected, rel=REL, abs=1e-9)


# ---- physics ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_internal_forces_make_no_wrench(seed):
    """Squeezing antipodal pairs (two fingertips; a link contact against a palm contact, which
    the torques cannot see) produce torques but no external force."""
    rng = np.random.default_rng(200 + seed)
    u = unit(rng.normal(size=(3, 3)))
    kinds = [("tip", 0), ("tip", 1), ("tip", 2), ("tip", 3), ("link", 1), ("palm",)]
    model = build_grasp(rng, [u[0], -u[0], u[1], -u[1], u[2], -u[2]], kinds)
    squeeze = np.repeat(rng.uniform(1, 10, 3), 2)  # N, equal within a pair
    forces = -squeeze[:, None] * model.normals
    assert np.abs(model.G @ forces.reshape(-1)).max() < 1e-12  # internal indeed
    tau = model.J.T @ forces.reshape(-1)
    estimate = estimate_wrench(model, tau, torque_sigma=SIGMA)
    assert np.linalg.norm(estimate.wrench[:3]) < 1e-3
    assert np.abs(estimate.torque_residual).max() < 1e-6  # explained by the squeeze itself


@pytest.mark.parametrize("seed", range(5))
def test_estimate_recovers_applied_wrench(seed):
    """Fingertips only, each finger's J invertible: the torques determine the contact forces,
    hence the wrench. The applied wrench is held by forces strictly inside the cones."""
    rng = np.random.default_rng(300 + seed)
    model = antipodal_grasp(rng, injective=True)
    applied = np.r_[unit(rng.normal(size=3)) * rng.uniform(1, 10), rng.normal(0, 0.1, 3)]
    particular = (-np.linalg.pinv(model.G) @ applied).reshape(4, 3)
    squeeze = 2 * np.linalg.norm(particular, axis=1).max() * (1 + 1 / MU)
    forces = particular - squeeze * model.normals  # antipodal equal squeezes are internal
    assert friction_slack(model, forces).min() > 0
    estimate = estimate_wrench(model, model.J.T @ forces.reshape(-1), torque_sigma=SIGMA)
    np.testing.assert_allclose(estimate.wrench[:3], applied[:3], atol=1e-3)
    np.testing.assert_allclose(estimate.wrench[3:], applied[3:], atol=1e-3 * LEVER)


@pytest.mark.parametrize("seed", range(5))
def test_optimized_torques_hold_the_object(seed):
    rng = np.random.default_rng(400 + seed)
    model = antipodal_grasp(rng)
    wrench = np.r_[unit(rng.normal(size=3)) * 5.0, rng.normal(0, 0.05, 3)]
    command = optimize_torques(model, wrench, margin=0.5)
    assert np.abs(command.equilibrium_residual).max() < 1e-6  # held: the exact penalty leaves nothing
    assert min(tip_margins(model, command.forces).values()) > 0.5 - 1e-6
    assert friction_slack(model, command.forces).min() > -CONE_TOL
    np.testing.assert_allclose(command.tau, model.J.T @ command.forces.reshape(-1), atol=1e-12)
    np.testing.assert_allclose(command.equilibrium_residual, model.G @ command.forces.reshape(-1) + wrench, atol=1e-12)
    # the joints make the contact deflections, not the object: its motion is regularized 100 x
    # more than theirs, and at the contacts it stays a fraction of the deflections f / c (up to 0.43
    # over 40 seeds)
    deflection = np.linalg.norm(command.forces, axis=1).max() / C
    assert np.linalg.norm(command.dx[:3]) + 0.05 * np.linalg.norm(command.dx[3:]) < 0.5 * deflection


def pinch(lever=0.04, radius=0.03, **limit):
    """Two fingertips at +-radius x, each finger's J lever x a rotation (||tau|| = lever ||f||)."""
    rng = np.random.default_rng(5)
    J = np.zeros((6, 6))
    for k in range(2):
        J[3 * k : 3 * k + 3, 3 * k : 3 * k + 3] = lever * np.linalg.qr(rng.normal(size=(3, 3)))[0]
    normals = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    G = np.hstack([np.vstack([np.eye(3), skew(radius * n)]) for n in normals])
    return GraspModel(G=G, J=J, normals=normals, tip_finger=np.array([0, 1]), mu=MU, stiffness=C, kp=KP, **limit)


def test_pinch_torques_closed_form_and_monotonic():
    """Two fingertips pinch at +-R x; each finger's J is lever x a rotation, so ||tau|| = lever
    ||f||. A force s along y splits evenly between the tips (the moment about z forbids
    otherwise), and each tip needs a normal force a with mu a - s/2 >= v:
    ||tau||^2 = lever^2 (2 a^2 + s^2 / 2), a = (v + s / 2) / mu, increasing with s."""
    lever, v = 0.04, 0.5
    model = pinch(lever)
    norms = []
    for s in [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]:
        command = optimize_torques(model, np.array([0, s, 0, 0, 0, 0.0]), margin=v)
        a = (v + s / 2) / MU
        # the regularization may trade 1e-6 of the torque for smaller motions
        assert command.tau @ command.tau == pytest.approx(lever**2 * (2 * a**2 + s**2 / 2), rel=2e-6)
        norms.append(np.linalg.norm(command.tau))
    assert np.all(np.diff(norms) > 0)


# ---- interface --------------------------------------------------------------------------------


def test_a_margin_beyond_the_torque_limit_is_halved():
    """Unloaded, the pinch's torques grow in proportion to the margin (a = v / mu along the
    normals): a limit at 75 % of those of v = 0.5 N allows v <= 0.375 N, so the controller's
    command halves the margin once, to 0.25 N, within the limit."""
    free = optimize_torques(pinch(), np.zeros(6), margin=0.5)
    limited = pinch(torque_limit=0.75 * np.abs(free.tau).max())
    with pytest.raises(RobocalError):
        optimize_torques(limited, np.zeros(6), margin=0.5)
    command, margin = torque_command(limited, np.zeros(6), 0.5)
    assert margin == 0.25
    assert min(tip_margins(limited, command.forces).values()) > 0.25 - 1e-6
    assert np.abs(command.tau).max() < limited.torque_limit + 1e-6


def test_unholdable_margin_raises():
    """A fingertip and a palm contact at the same point with opposite normals: only the object
    can move them, by the same amount, so no force is inside both cones except zero and the
    fingertip can have no margin."""
    normals = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    G = np.hstack([np.vstack([np.eye(3), skew([0.03, 0, 0])])] * 2)
    model = GraspModel(G=G, J=np.zeros((6, 12)), normals=normals, tip_finger=np.array([0, -1]))
    assert np.linalg.norm(optimize_torques(model, np.zeros(6), margin=0.0).tau) == 0.0
    with pytest.raises(RobocalError, match="torque optimization"):
        optimize_torques(model, np.zeros(6), margin=1.0)


def test_inputs_checked_and_programs_reused():
    rng = np.random.default_rng(7)
    model = random_grasp(rng)
    assert programs_for(model) is programs_for(model)
    with pytest.raises(RobocalError, match="12 finite torques"):
        estimate_wrench(model, np.zeros(11))
    with pytest.raises(RobocalError, match="wrench"):
        optimize_torques(model, np.full(6, np.nan), margin=0.5)
    with pytest.raises(RobocalError, match="inconsistent shapes"):
        GraspModel(G=model.G[:, :-1], J=model.J, normals=model.normals, tip_finger=model.tip_finger)


def test_stalled_solve_is_retried(monkeypatch):
    """A solve that ends without a solution is repeated with careful settings: here the first
    attempt may take only 2 iterations."""
    import robocal.grasp.programs as programs

    model = antipodal_grasp(np.random.default_rng(8))
    wrench, tau_m = np.r_[2.0, 0, 0, 0, 0.02, 0], np.linspace(-0.1, 0.1, 12)
    expected = programs.GraspPrograms(model)
    expected_command, expected_estimate = expected.optimize(wrench, 0.5), expected.estimate(tau_m)
    assert expected.retries == 0
    real = programs._settings

    def first_gives_up(careful=False):
        settings = real(careful)
        settings.max_iter = 200 if careful else 2
        return settings

    monkeypatch.setattr(programs, "_settings", first_gives_up)
    retried = programs.GraspPrograms(model)
    command, estimate = retried.optimize(wrench, 0.5), retried.estimate(tau_m)
    assert retried.retries == 2
    np.testing.assert_allclose(command.tau, expected_command.tau, rtol=1e-5, atol=1e-8)
    # these torques leave a misfit, where only FORCE_REG pins the forces down: the two solver
    # paths stop ~3e-5 N apart
    np.testing.assert_allclose(estimate.wrench, expected_estimate.wrench, atol=1e-4)
