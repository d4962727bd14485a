"""The uniform Cartesian test set (seed paper, III-B).

- `uniform_cell_draw` is exactly uniform over the non-empty cells: the cell counts of n draws are
  multinomial(n, 1/K), whose Pearson statistic X^2 has mean K - 1 and std sqrt(2 (K - 1)); a
  sample taken in the points' own (non-uniform) density is far outside that band.
- On the DLR-Hand II, the test set's fingertips fill the workspace more evenly than configurations
  uniform in joint space: over 1 cm cells of the reachable workspace (from an independent large
  pool), the dispersion index var/mean of the counts (1 for uniform Poisson counts, more with
  clumping and partly-filled boundary cells) is less than 0.6 of joint-space sampling's, and more
  cells are hit.
"""

from importlib import resources

import numpy as np
import pytest

from robocal.errors import RobocalError
from robocal.kinematics.dh import load_dh
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import Joint, KinematicTree, Origin
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set, uniform_cell_draw

N = 3000


def pearson(counts: np.ndarray) -> float:
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


def test_cell_draw_is_uniform_over_non_empty_cells():
    rng = np.random.default_rng(0)
    points = rng.normal(0.0, 0.1, (20000, 3))  # dense core, sparse tails
    cell = 0.05
    keys, inverse = np.unique(np.floor(points / cell).astype(int), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    k = len(keys)
    n = 20 * k
    drawn = uniform_cell_draw(points, n, cell, np.random.default_rng(1))
    band = 5 * np.sqrt(2 * (k - 1))
    assert abs(pearson(np.bincount(inverse[drawn], minlength=k)) - (k - 1)) < band
    assert pearson(np.bincount(inverse[rng.integers(len(points), size=n)], minlength=k)) > k - 1 + 100 * band
    # Within a cell every point is equally likely: the most populated cell's members are all hit
    # about equally often (binomial counts).
    busiest = np.bincount(inverse).argmax()
    members = np.flatnonzero(inverse == busiest)
    hits = np.bincount(np.searchsorted(members, drawn[inverse[drawn] == busiest]), minlength=len(members))
    assert abs(pearson(hits) - (len(members) - 1)) < 5 * np.sqrt(2 * (len(members) - 1))


@pytest.fixture(scope="module")
def hand():
    with resources.as_file(resources.files("robocal").joinpath("models/dlr_hand_ii.yaml")) as path:
        tree = load_dh(path)
    return RobotModel(tree)


@pytest.fixture(scope="module")
def test_set(hand):
    return uniform_cartesian_test_set(hand, hand.nominal, list(hand.tree.end_effectors), N, seed=0)


def test_deterministic_per_seed(hand, test_set):
    tips = {name.removesuffix("_tip"): name for name in hand.tree.end_effectors}
    assert np.array_equal(uniform_cartesian_test_set(hand, hand.nominal, tips, N, seed=0), test_set)
    assert not np.allclose(uniform_cartesian_test_set(hand, hand.nominal, tips, N, seed=1), test_set)


def test_within_joint_limits(hand, test_set):
    tree = hand.tree
    lower, upper = np.array([tree.joint(name).limits for name in tree.actuated]).T
    assert test_set.shape == (N, len(tree.actuated))
    assert np.all((test_set >= lower) & (test_set <= upper))


def test_covers_the_workspace_more_evenly_than_joint_space_sampling(hand, test_set):
    tips, tree, cell = hand.tree.end_effectors, hand.tree, 0.01
    reachable = batch_link_poses(hand, hand.nominal, sample_configurations(tree, 200000, seed=99), tips)[..., :3, 3]
    samples = {
        name: batch_link_poses(hand, hand.nominal, q, tips)[..., :3, 3]
        for name, q in (("test set", test_set), ("joint space", sample_configurations(tree, N, seed=10)))
    }
    for f, tip in enumerate(tips):
        cells = np.unique(np.floor(reachable[:, f] / cell).astype(int), axis=0)
        stats = {}
        for name, points in samples.items():
            keys = np.floor(points[:, f] / cell).astype(int)
            index = {tuple(c): i for i, c in enumerate(cells)}
            counts = np.bincount([index[tuple(c)] for c in keys if tuple(c) in index], minlength=len(cells))
            stats[name] = (counts.var() / counts.mean(), (counts > 0).mean())
        (d_test, hit_test), (d_joint, hit_joint) = stats["test set"], stats["joint space"]
        assert d_test < 0.6 * d_joint, (tip, stats)
        assert hit_test > hit_joint, (tip, stats)


def test_fingers_must_be_independent():
    origin = Origin("xyzrpy", (0.0, 0.0, 0.1, 0.0, 0.0, 0.0))
    joints = (
        Joint("j1", "revolute", "palm", "l1", origin, limits=(-1.0, 1.0)),
        Joint("j2", "revolute", "l1", "a", origin, limits=(-1.0, 1.0)),
        Joint("j3", "revolute", "l1", "b", origin, limits=(-1.0, 1.0)),
    )
    robot = RobotModel(KinematicTree("forked", "palm", joints))
    with pytest.raises(RobocalError, match="share actuated joints \\(j1\\)"):
        uniform_cartesian_test_set(robot, robot.nominal, ["a", "b"], 10, seed=0)
