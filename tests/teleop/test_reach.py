"""Closest-point inverse kinematics of the DLR-Hand II fingers (`robocal.teleop.reach`).

References are computed here independently of the solver: the fingertip of a DLR finger in
closed form (numpy), dense sampling of each finger's joint box refined locally for the closest
reachable point, and the first-order sensitivity of the closest point (implicit function
theorem) for the size of a joint step along a path of targets.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from robocal.teleop import HandMapping

DEG = np.pi / 180


@pytest.fixture(scope="module")
def mapping():
    return HandMapping.load()


@pytest.fixture(scope="module")
def solve(mapping):
    return jax.jit(mapping.reach.solve)


@pytest.fixture(scope="module")
def bases(mapping):
    model = mapping.robot_model
    return np.asarray(model.link_poses(model.nominal, jnp.zeros(12), [f"{f}_base" for f in mapping.fingers]))


def finger_tip(base: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Tip of a DLR finger (..., 3) in the palm frame from (q1, q2, q3), closed form of the
    modified-DH rows (q4 = q3): a planar chain 0.075 + 0.04 + 0.029 m in the flexion plane."""
    q1, q2, q3 = x[..., 0], x[..., 1], x[..., 2]
    px = 0.075 + 0.04 * np.cos(q3) + 0.029 * np.cos(2 * q3)
    py = 0.04 * np.sin(q3) + 0.029 * np.sin(2 * q3)
    u, v = px * np.cos(q2) - py * np.sin(q2), px * np.sin(q2) + py * np.cos(q2)
    return np.stack([u * np.cos(q1), u * np.sin(q1), v], axis=-1) @ base[:3, :3].T + base[:3, 3]


def dense_closest(base, lower, upper, targets, step=1.5 * DEG, picks=10, rounds=5, half=4):
    """Closest reachable point to each target by sampling: a 1.5 deg grid of the joint box, then
    around each of the `picks` best samples (at least 3 grid steps apart, so distinct basins
    are refined too) a (2 half + 1)^3 grid shrunk `half` times per round (final spacing
    1.5 deg / 4^5, under 5 um at the tip). Returns (distances, points)."""
    axes = [np.arange(lo, hi + step / 2, step) for lo, hi in zip(lower, upper)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    index = np.stack(np.meshgrid(*[np.arange(len(a)) for a in axes], indexing="ij"), -1).reshape(-1, 3)
    points = finger_tip(base, grid)
    offsets = np.stack(np.meshgrid(*[np.linspace(-1, 1, 2 * half + 1)] * 3, indexing="ij"), -1).reshape(-1, 3)
    distances, closest = [], []
    for t in targets:
        d = np.sum((points - t) ** 2, axis=1)
        top = np.argpartition(d, 400)[:400]
        chosen = []
        for i in top[np.argsort(d[top])]:
            if all(np.abs(index[i] - index[j]).max() > 3 for j in chosen):
                chosen.append(i)
            if len(chosen) == picks:
                break
        best = (np.inf, None)
        for i in chosen:
            center, width = grid[i], step
            for _ in range(rounds):
                candidates = np.clip(center + offsets * width, lower, upper)
                dd = np.sum((finger_tip(base, candidates) - t) ** 2, axis=1)
                center, width = candidates[np.argmin(dd)], width / half
            best = min(best, (np.sqrt(dd.min()), tuple(center)))
        distances.append(best[0])
        closest.append(finger_tip(base, np.array(best[1])))
    return np.array(distances), np.array(closest)


def test_chains_and_closed_form_agree_with_the_model(mapping, bases):
    """The compiled fingertips (`TipChains`) and the closed form against `RobotModel` FK; the
    human hand's chains are checked through the targets in test_mapping.py."""
    rng = np.random.default_rng(0)
    model, chains = mapping.robot_model, mapping.reach.chains
    tips = [f.robot_tip for f in mapping.config.fingers]
    q = rng.uniform(-1.0, 1.5, (20, len(model.tree.actuated)))
    expected = np.asarray(jax.jit(jax.vmap(lambda q: model.link_poses(model.nominal, q, tips)[:, :3, 3]))(q))
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda q: chains.points(chains.gather(q)))(q)), expected, atol=1e-15)
    x = np.asarray(jax.vmap(chains.gather)(q))
    closed = np.stack([finger_tip(bases[f], x[:, f]) for f in range(4)], axis=1)
    np.testing.assert_allclose(closed, expected, atol=1e-15)


def test_reachable_targets_are_reproduced(mapping, solve):
    """200 targets (50 x 4 fingers) at fingertips of random configurations within the limits,
    each solved from another random configuration as the previous solution."""
    rng = np.random.default_rng(1)
    lower, upper = mapping.reach.lower, mapping.reach.upper
    error = []
    for _ in range(50):
        targets = np.asarray(mapping.reach.points(rng.uniform(lower, upper)))
        x, tips = solve(targets, rng.uniform(lower, upper))
        error.append(np.linalg.norm(np.asarray(mapping.reach.points(x)) - targets, axis=1))
        np.testing.assert_allclose(np.asarray(tips), np.asarray(mapping.reach.points(x)), atol=1e-15)
        assert (np.asarray(x) >= lower).all() and (np.asarray(x) <= upper).all()
    assert np.max(error) < 1e-4


def _targets(mapping, bases, kind, n, rng):
    lower, upper = mapping.reach.lower, mapping.reach.upper
    if kind == "offset":  # fingertips of random configurations moved 1-5 cm in a random direction
        tips = np.stack([finger_tip(bases[f], rng.uniform(lower[f], upper[f], (n, 3))) for f in range(4)], axis=1)
        direction = rng.normal(size=tips.shape)
        return tips + direction / np.linalg.norm(direction, axis=-1, keepdims=True) * rng.uniform(0.01, 0.05, (n, 4, 1))
    human = mapping.config.human  # scaled fingertips of random human poses within the human limits
    lo, hi = (np.array([human.joint(name).limits[i] for name in human.actuated]) for i in (0, 1))
    targets = jax.jit(jax.vmap(mapping.targets))
    return np.asarray(targets(rng.uniform(lo, hi, (n, len(human.actuated)))))


@pytest.mark.parametrize("kind", ["offset", "human"])
def test_unreachable_targets_go_to_the_closest_reachable_point(mapping, solve, bases, kind):
    n = 40
    targets = _targets(mapping, bases, kind, n, np.random.default_rng(2))
    tips = np.array([np.asarray(solve(t, np.zeros((4, 3)))[1]) for t in targets])
    lower, upper = mapping.reach.lower, mapping.reach.upper
    reference = [dense_closest(bases[f], lower[f], upper[f], targets[:, f]) for f in range(4)]
    d_ref, p_ref = np.stack([r[0] for r in reference], axis=1), np.stack([r[1] for r in reference], axis=1)
    d = np.linalg.norm(tips - targets, axis=-1)
    assert (d_ref > 1e-3).sum() >= n  # at least a quarter of the targets is out of reach by > 1 mm
    assert np.max(d - d_ref) < 5e-4
    assert np.max(np.linalg.norm(tips - p_ref, axis=-1)) < 5e-4


def _sensitivity(points, xs, targets, lower, upper):
    """Per frame and finger, ||dx/dt|| and ||dtip/dt|| (2-norms) at closest-point solutions
    xs (N, F, k) of targets (N, F, 3).

    With the joints at a bound held (they stay there for small target moves), the free joints
    satisfy J^T r = 0, r = tip - t; differentiating, H dx = J^T dt with H = J^T J + sum_i r_i
    d2tip_i/dx2, the Hessian of |r|^2 / 2 (implicit function theorem; exact inverse kinematics
    is the case r = 0, dx = J^-1 dt). So dx/dt = H^-1 J^T and dtip/dt = J H^-1 J^T."""
    jacs = np.asarray(jax.jit(jax.vmap(jax.jacfwd(points)))(xs))  # (N, F, 3, F, k)
    hessians = np.asarray(jax.jit(jax.vmap(jax.hessian(points)))(xs))  # (N, F, 3, F, k, F, k)
    residuals = np.asarray(jax.vmap(points)(xs)) - targets
    out = np.zeros(xs.shape[:2] + (2,))
    for n, f in np.ndindex(*xs.shape[:2]):
        free = (xs[n, f] > lower[f] + 1e-9) & (xs[n, f] < upper[f] - 1e-9)
        j = jacs[n, f, :, f][:, free]
        h = j.T @ j + np.einsum("i,iab->ab", residuals[n, f], hessians[n, f, :, f][:, :, f][:, free][:, :, free])
        dx = np.linalg.solve(h, j.T)
        out[n, f] = np.linalg.norm(dx, 2), np.linalg.norm(j @ dx, 2)
    return out


@pytest.mark.parametrize("direction", ["radial", "sideways"])
def test_a_path_out_of_the_workspace_and_back_moves_the_joints_continuously(mapping, solve, bases, direction):
    """Targets on a straight line from a reachable fingertip to 6 cm beyond it and back, in
    0.5 mm steps, each frame warm-started from the last: outward from the finger's base (out
    through the fully stretched finger) or sideways (out past the abduction limit).

    Every joint step is within 1.5 times the first-order bound ||dx/dt|| |dt| at either end of
    the step (the factor covers the second-order change of the sensitivity over one step), and
    the fingertip step likewise; back at the start the joints are where they began."""
    reach = mapping.reach
    x0 = np.tile([0.1, 0.5, 0.6], (4, 1))
    p0 = np.asarray(reach.points(x0))
    if direction == "radial":
        u = p0 - bases[:, :3, 3]
    else:  # the tip's velocity under abduction q1
        u = np.stack([finger_tip(bases[f], x0[f] + [1e-6, 0, 0]) - p0[f] for f in range(4)])
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    s = np.concatenate([np.arange(0, 0.06, 5e-4), np.arange(0.06, -1e-9, -5e-4)])
    targets = p0 + s[:, None, None] * u
    xs, tips, x = [], [], x0
    for t in targets:
        x, tip = solve(t, x)
        xs.append(np.asarray(x))
        tips.append(np.asarray(tip))
    xs, tips = np.array(xs), np.array(tips)
    bound = _sensitivity(reach.chains.points, xs, targets, reach.lower, reach.upper)  # (N, F, 2)
    step = np.linalg.norm(np.diff(targets, axis=0), axis=-1)  # (N - 1, F)
    allowed = np.maximum(bound[1:], bound[:-1])
    assert (np.linalg.norm(np.diff(xs, axis=0), axis=-1) <= 1.5 * allowed[..., 0] * step + 1e-9).all()
    assert (np.linalg.norm(np.diff(tips, axis=0), axis=-1) <= 1.5 * allowed[..., 1] * step + 1e-9).all()
    assert np.linalg.norm(tips - targets, axis=-1).max() > 0.02  # it did leave the workspace, by 2 cm or more
    np.testing.assert_allclose(xs[-1], x0, atol=1e-6)
