"""The contact-search simulator (issue 3) on the DLR-Hand II, checked against independent code.

One noise-free geometric run of 50 contacts per fingertip pair, written by the function behind
`robocal simulate contact` (module fixture), serves most tests; torque detection and determinism
reuse its true model, so the simulator's kernels compile once. Independent references:
`robocal.geometry.links.link_distance` (the per-shape library path, not the simulator's batched
swept-sphere path) for distances, the `contact` measurement for the written files, closed-form
segment closest points (Ericson) plus `jax.jacfwd` of FK for the torque model, and the URDF
reader for true.urdf.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from robocal.calibration import calibrate
from robocal.cli import app
from robocal.geometry.links import link_distance
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from robocal.simulation.contact import (
    DEFAULT_CONTACT_STIFFNESS,
    DEFAULT_TORQUE_THRESHOLD,
    DLR_FINGERS,
    FAILURES,
    dlr_hand_pairs,
    simulate_contacts,
    simulate_dlr_hand,
)
from robocal.simulation.sampling import batch_link_poses, sample_configurations

N_PER_PAIR = 50
FINGERS = DLR_FINGERS
BODIES = tuple(f"{f}_link{k}" for f in FINGERS for k in (2, 3, 4))  # every link with geometry
TIPS = tuple(f"{f}_link4" for f in FINGERS)


def finger(link: str) -> str:
    return link.split("_")[0]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """300 noise-free geometric contacts of a hand perturbed by 5 mm / 5 deg (seed 0), as files."""
    return simulate_dlr_hand(tmp_path_factory.mktemp("contact_sim"), n_per_pair=N_PER_PAIR, seed=0)


@pytest.fixture(scope="module")
def tip_distances(written):
    """Independent true signed distances of each fingertip to every body of the other fingers:
    f(q) -> {(tip, body): d}, through link_distance (the library's per-shape path)."""
    truth, theta, geometry = written.truth, jnp.asarray(written.theta_true), written.geometry
    pairs = [(tip, body) for tip in TIPS for body in BODIES if finger(body) != finger(tip)]

    @jax.jit
    def distances(q):
        def one(qi):
            poses = dict(zip(BODIES, truth.link_poses(theta, qi, BODIES)))
            return jnp.stack([link_distance(geometry[a], poses[a], geometry[b], poses[b]) for a, b in pairs])

        return jax.vmap(one)(q)

    return lambda q: dict(zip(pairs, np.asarray(distances(jnp.asarray(q))).T))


def test_recorded_pairs_cover_all_six_pairs_with_the_requested_counts(written):
    sim, tree = written.sim, written.tree
    assert len(sim) == 6 * N_PER_PAIR
    assert sim.q.shape == sim.start_q.shape == sim.end_q.shape == (6 * N_PER_PAIR, len(tree.actuated))
    assert sim.counts() == {tuple(sorted(pair)): N_PER_PAIR for pair in dlr_hand_pairs()}
    assert list(sim.failures) == dlr_hand_pairs()
    for pair in dlr_hand_pairs():
        moving = [m for m, s in sim.pairs if {m, s} == set(pair)]
        assert set(moving) == set(pair)  # each fingertip moved in some drives and stayed in others
    # the search had to retry failed drives (a 5 mm / 5 deg hand misses or hits other bodies), and
    # still delivered exactly the requested count: failures are counted, never silently dropped
    assert sum(sum(f.values()) for f in sim.failures.values()) > 0
    assert all(set(f) == set(FAILURES) for f in sim.failures.values())


def test_geometric_detection_is_exact_without_noise(written, tip_distances):
    sim = written.sim
    assert np.abs(sim.true_distance).max() < 1e-9
    independent = tip_distances(sim.q)
    d = np.array([independent[(moving, static)][i] for i, (moving, static) in enumerate(sim.pairs)])
    assert np.abs(d).max() < 1e-9
    # the recorded contact lies on the drive, after its start and before the end of the extension
    assert np.all((sim.s > 0.0) & (sim.s <= 1.5))
    limits = np.array([written.tree.joint(n).limits for n in written.tree.actuated])
    drive = np.clip(sim.start_q + sim.s[:, None] * (sim.end_q - sim.start_q), limits[:, 0], limits[:, 1])
    np.testing.assert_allclose(sim.q, drive, atol=1e-15)
    # and it is the first contact: the drive starts apart and a step before contact is still apart
    before = np.clip(sim.start_q + 0.99 * sim.s[:, None] * (sim.end_q - sim.start_q), limits[:, 0], limits[:, 1])
    for q in (sim.start_q, before):
        independent = tip_distances(q)
        assert all(independent[pair][i] > 0.0 for i, pair in enumerate(sim.pairs))


def test_parked_fingers_do_not_touch_the_pair(written, tip_distances):
    """Along every executed drive (start to recorded contact, true model), neither fingertip of the
    pair touches a parked finger, nor any body but the other fingertip."""
    sim, tree = written.sim, written.tree
    limits = np.array([tree.joint(n).limits for n in tree.actuated])
    to_parked, to_any = np.inf, np.inf
    for fraction in np.linspace(0.0, 1.0, 11):
        q = np.clip(sim.start_q + fraction * sim.s[:, None] * (sim.end_q - sim.start_q), limits[:, 0], limits[:, 1])
        d = tip_distances(q)
        for i, (moving, static) in enumerate(sim.pairs):
            parked = [f for f in FINGERS if f not in (finger(moving), finger(static))]
            assert len(parked) == 2
            for tip, partner in ((moving, static), (static, moving)):
                to_parked = min(to_parked, min(d[(tip, body)][i] for body in BODIES if finger(body) in parked))
                to_any = min(to_any, min(d[(tip, body)][i] for body in BODIES if finger(body) != finger(tip) and body != partner))
    assert to_parked > 0.0 and to_any > 0.0
    # parked fingers wait at one joint-limit corner per pair, and do not move during a drive
    for pair in dlr_hand_pairs():
        rows = [i for i, p in enumerate(sim.pairs) if set(p) == set(pair)]
        parked_cols = [c for c, name in enumerate(tree.actuated) if finger(name) not in {finger(pair[0]), finger(pair[1])}]
        values = np.concatenate([sim.q[rows][:, parked_cols], sim.start_q[rows][:, parked_cols], sim.end_q[rows][:, parked_cols]])
        assert np.all(values == values[0])
        assert np.all(np.isclose(values[0], limits[parked_cols, 0]) | np.isclose(values[0], limits[parked_cols, 1]))


def _closest_core_points(p0, p1, q0, q1):
    """Closest points of segments p0-p1 and q0-q1 (Ericson, Real-Time Collision Detection 5.1.9)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    c, b = d1 @ r, d1 @ d2
    denominator = a * e - b * b
    s = np.clip((b * f - c * e) / denominator, 0.0, 1.0) if denominator > 0.0 else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t, s = 0.0, np.clip(-c / a, 0.0, 1.0)
    elif t > 1.0:
        t, s = 1.0, np.clip((b - c) / a, 0.0, 1.0)
    return p0 + s * d1, q0 + t * d2


def _core_ends(pose, cap):
    """The two core end points of a capsule at a link pose, in the world frame."""
    return [pose[:3, :3] @ np.asarray(e) + pose[:3, 3] for e in (cap.primitive.p0, cap.primitive.p1)]


def test_torque_detection_penetrates_by_threshold_over_stiffness_times_lever_arm(written):
    """At detection ||J^T f|| = tau_th with f = k delta n, so delta = tau_th / (k ||J^T n||).

    Bound: ||J^T n||^2 = sum_j (dd/dq_j)^2 over the static finger's actuated q1, q2, q3, and
    |dd/dq_j| <= r_j, the distance of the contact point from joint j's axis (q3 also carries the
    coupled q4: r_3 + r_4). On the nominal finger the contact point is at most
    a3 + a4 + 0.033 + 0.01425 = 0.162 m from the q1/q2 axes, 0.087 m from q3's and 0.047 m from
    q4's, so ||J^T n|| <= sqrt(2 * 0.162^2 + 0.134^2) = 0.265 m; 0.3 m allows for the +-5 mm
    errors of the true lengths. Hence delta >= 0.1 Nm / (1e4 N/m * 0.3 m) = 0.033 mm: the
    recorded contact penetrates by a small, strictly positive depth.
    """
    truth, theta, tree, geometry = written.truth, written.theta_true, written.tree, written.geometry
    sim = simulate_contacts(truth, truth.nominal, truth, theta, geometry, dlr_hand_pairs(), 2, seed=5, detection="torque", pool_size=4000)
    k, tau_th = DEFAULT_CONTACT_STIFFNESS, DEFAULT_TORQUE_THRESHOLD
    depth = -sim.true_distance
    assert depth.min() >= tau_th / (k * 0.3)
    assert depth.max() < 2e-3
    # fingertip poses and their derivatives w.r.t. every actuated joint, at each recorded q

    def fk(q):
        return truth.link_poses(jnp.asarray(theta), q, TIPS)

    poses, dposes = (np.asarray(v) for v in jax.jit(jax.vmap(lambda q: (fk(q), jax.jacfwd(fk)(q))))(jnp.asarray(sim.q)))  # (n, 4, 4, 4), (n, 4, 4, 4, n_act)
    for i, (moving, static) in enumerate(sim.pairs):
        m, s = TIPS.index(moving), TIPS.index(static)
        (cap_m,), (cap_s,) = geometry[moving], geometry[static]
        core_m, core_s = _closest_core_points(*_core_ends(poses[i, m], cap_m), *_core_ends(poses[i, s], cap_s))
        gap = np.linalg.norm(core_m - core_s)
        np.testing.assert_allclose(cap_m.primitive.radius + cap_s.primitive.radius - gap, depth[i], rtol=1e-9)
        n = (core_s - core_m) / gap  # pushes the static body away from the moving one
        contact = core_s - cap_s.primitive.radius * n  # on the static fingertip's surface
        local = np.linalg.solve(poses[i, s], np.append(contact, 1.0))  # fixed in the static distal link
        cols = [tree.actuated.index(name) for name in tree.actuated_for([static])]
        jacobian = np.einsum("ijk,j->ik", dposes[i, s], local)[:3, cols]  # d(contact point)/d(static actuated joints)
        tau = jacobian.T @ (k * depth[i] * n)
        np.testing.assert_allclose(np.linalg.norm(tau), tau_th, rtol=1e-7)


def test_determinism_given_a_seed(written):
    truth, theta, geometry = written.truth, written.theta_true, written.geometry

    def run(seed, noise):
        return simulate_contacts(truth, truth.nominal, truth, theta, geometry, dlr_hand_pairs(), 2, seed=seed, joint_noise=noise, pool_size=3000)

    first, second, other = run(7, 1e-3), run(7, 1e-3), run(8, 1e-3)
    for name in ("q", "true_distance", "start_q", "end_q", "s"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert first.pairs == second.pairs and first.failures == second.failures and first.rejections == second.rejections
    assert not np.array_equal(first.q, other.q)
    # encoder noise moves the recorded joints off contact by about the noise times the lever arm
    assert 1e-6 < np.abs(first.true_distance).mean() < 1e-3


def test_csv_round_trips_through_the_contact_measurement(written, tmp_path):
    folder = written.problem.parent
    problem_file = tmp_path / "problem.yaml"
    problem_file.write_text(
        yaml.safe_dump(
            {
                "robot": str(folder / "dlr_hand_ii.yaml"),
                "parameters": {"joints": {"*_q?": "dh"}},
                "geometry": {"files": [str(folder / "dlr_hand_ii_geometry.yaml")]},
                "measurements": [{"name": "contacts", "type": "contact", "data": str(folder / "contacts.csv"), "sigma": 1e-4}],
            }
        )
    )
    problem = load_problem(problem_file)
    measurement = problem.measurements[0]
    assert measurement.n == 6 * N_PER_PAIR
    robot = problem.layout.blocks["robot"]
    assert problem.layout.names[robot] == [p.name for p in written.truth.parameters]
    theta = problem.layout.nominal.copy()
    theta[robot] = written.theta_true
    thetas = jnp.asarray(np.stack([theta, problem.layout.nominal]))
    true_d, nominal_d = np.asarray(jax.jit(jax.vmap(lambda th: measurement.signed_distances(th, measurement.data)))(thetas))
    assert np.abs(true_d).max() < 1e-9
    assert np.abs(nominal_d).mean() > 1e-3  # the nominal hand is ~10 mm off at the same joint values


def test_true_urdf_is_the_true_hand(written):
    urdf = load_urdf(written.problem.parent / "true.urdf")
    q = sample_configurations(written.tree, 20, 3)
    tips = written.tree.end_effectors
    expected = batch_link_poses(written.truth, written.theta_true, q, tips)
    np.testing.assert_allclose(batch_link_poses(RobotModel(urdf), np.zeros(0), q, tips), expected, atol=1e-12)


def task_errors(model: RobotModel, theta, truth: RobotModel, theta_true, q) -> np.ndarray:
    """|(p_f - p_thumb)_model - (p_f - p_thumb)_true| for f = fore, middle, ring (m)."""
    tips = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")
    p = batch_link_poses(model, theta, q, tips)[..., :3, 3]
    p_true = batch_link_poses(truth, theta_true, q, tips)[..., :3, 3]
    return np.linalg.norm((p[:, 1:] - p[:, :1]) - (p_true[:, 1:] - p_true[:, :1]), axis=-1)


@pytest.mark.slow  # ~all of it is compiling the MAP solver for 300 contacts x 64 parameters
def test_calibration_from_the_simulated_contacts_recovers_the_fingertip_task(written):
    problem = load_problem(written.problem)
    cal = calibrate(problem)
    q = sample_configurations(written.tree, 200, 11)
    robot = problem.layout.blocks["robot"]
    before = task_errors(problem.robot, problem.robot.nominal, written.truth, written.theta_true, q)
    after = task_errors(problem.robot, cal.estimate[robot], written.truth, written.theta_true, q)
    assert before.mean() > 5e-3
    assert after.mean() < 0.5e-3


def test_cli_writes_the_problem_and_prints_the_summary(tmp_path):
    out = tmp_path / "sim"
    # the true hand of the module fixture (seed 0, 5 mm / 5 deg): its compiled kernels are reused
    result = CliRunner().invoke(app, ["simulate", "contact", "--out", str(out), "--n-per-pair", "1", "--detection", "torque", "--joint-noise", "1e-4"])
    assert result.exit_code == 0, result.output
    for name in ("contacts.csv", "true.urdf", "dlr_hand_ii.yaml", "dlr_hand_ii_geometry.yaml", "problem.yaml"):
        assert (out / name).is_file()
    header, *rows = (out / "contacts.csv").read_text().splitlines()
    assert header.split(",")[:2] == ["body_a", "body_b"] and len(rows) == 6
    assert "penetration at torque detection" in result.output and "6 contacts" in result.output
    problem = yaml.safe_load((out / "problem.yaml").read_text())
    assert problem["measurements"][0]["type"] == "contact" and problem["parameters"] == {"joints": {"*_q?": "dh"}}
