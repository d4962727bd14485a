import numpy as np

from robocal.grasp.contacts import grasp_matrix
from robocal.grasp.learned.teacher import equilibrium
from robocal.grasp.programs import GraspModel


def _tripod(seed=0):
    """Three contacts around a ball of 3 cm (outward normals), random contact Jacobians."""
    rng = np.random.default_rng(seed)
    normals = np.array([[1.0, 0, 0], [-0.5, 0.8, 0], [-0.5, -0.8, 0.2]])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    points = 0.03 * normals
    J = rng.normal(scale=0.05, size=(9, 6))
    return GraspModel(G=grasp_matrix(points, np.zeros(3)), J=J, normals=normals, tip_finger=np.array([0, 1, 2]), torque_limit=np.inf)


def test_equilibrium_is_the_minimum_of_the_elastic_energy():
    """Independent reference: the rest state minimizes the elastic energy
    1/2 kp |q_off - dq|^2 + 1/2 c |J dq - G^T dx + delta0|^2 - w . dx, all contacts pressed."""
    m = _tripod()
    rng = np.random.default_rng(1)
    delta0 = 0.0005 * -m.normals.reshape(-1)  # preload: springs pressed 0.5 mm (5 N) along the normals
    q_off, w = rng.normal(scale=0.002, size=6), np.r_[rng.normal(scale=0.5, size=3), rng.normal(scale=0.005, size=3)]
    c, kp = m.stiffness, m.kp

    def energy(z):
        dq, dx = z[:6], z[6:]
        spring = m.J @ dq - m.G.T @ dx + delta0
        return 0.5 * kp * np.sum((q_off - dq) ** 2) + 0.5 * c * spring @ spring - w @ dx

    # the energy is quadratic: its gradient and Hessian at 0 by central differences are exact
    # up to rounding, and its minimum solves H z = -g
    h, eye = 1e-3, np.eye(12)
    g = np.array([(energy(h * e) - energy(-h * e)) / (2 * h) for e in eye])
    H = np.array([[(energy(h * (a + b)) - energy(h * (a - b)) - energy(h * (b - a)) + energy(-h * (a + b))) / (4 * h * h) for b in eye] for a in eye])
    z = np.linalg.solve(H, -g)
    forces = c * (m.J @ z[:6] - m.G.T @ z[6:] + delta0)
    assert np.all(-np.sum(forces.reshape(3, 3) * m.normals, axis=1) > 0)  # every contact pressed
    tau = equilibrium(m, q_off, w, delta0)
    np.testing.assert_allclose(tau, kp * (q_off - z[:6]), atol=1e-6)
    np.testing.assert_allclose(tau, m.J.T @ forces, atol=1e-6)


def test_a_contact_pulled_into_tension_is_released_and_a_free_object_is_none():
    m = _tripod()
    delta0 = 0.0005 * -m.normals.reshape(-1)
    # pull along the first contact's outward normal with 20 N: its spring would go into tension
    pull = np.r_[20.0 * m.normals[0], 0, 0, 0]
    assert equilibrium(m, np.zeros(6), pull, delta0) is None  # two contacts cannot hold a 6-dof object
    assert equilibrium(m, np.zeros(6), np.zeros(6), delta0) is not None
