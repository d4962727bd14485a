"""The task test set: joint configurations whose fingertips cover the Cartesian workspace uniformly.

Configurations drawn uniformly within the joint limits crowd the fingertip where the finger's
position Jacobian is small (near singular, folded poses) and leave the rest of the workspace
thin, so a calibration scored on them is scored mostly where errors matter least. The test set of
the seed paper (section III-B) instead draws, per finger:

1. a pool of configurations uniform within the joint limits, mapped to fingertip positions
   p = FK_tip(theta, q);
2. a grid of cubic cells of edge `cell` over the positions; a non-empty cell c is drawn with
   probability 1 / K (K non-empty cells), then one pool configuration in c with probability
   1 / |c|.

The fingertip of a drawn configuration is then uniform over the occupied cells, i.e. uniform over
the workspace up to the grid resolution (and to how densely the pool fills it). Fingers are
independent chains (no actuated joint moves two tips), so a full-hand configuration combines one
independent draw per finger.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.simulation.sampling import batch_link_poses, sample_configurations


def uniform_cell_draw(points: np.ndarray, n: int, cell: float, rng: np.random.Generator) -> np.ndarray:
    """Indices (n,) into points (N, d): a non-empty grid cell (edge `cell`) uniformly, then a point in it uniformly."""
    keys = np.floor(np.asarray(points) / cell).astype(np.int64)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    members = np.argsort(inverse.ravel(), kind="stable")  # point indices grouped by cell
    starts = np.cumsum(counts) - counts
    cells = rng.integers(len(counts), size=n)
    return members[starts[cells] + rng.integers(counts[cells])]


def uniform_cartesian_test_set(
    robot: RobotModel,
    theta: np.ndarray,
    tips: dict[str, str] | Sequence[str],
    n: int,
    seed: int,
    *,
    pool: int = 20000,
    cell: float = 0.005,
) -> np.ndarray:
    """(n, n_actuated) configurations, fingertips uniform over each finger's Cartesian workspace.

    `robot` at `theta` maps configurations to fingertips. `tips`: the fingertip links (or finger
    name -> tip link); a finger is the set of actuated joints that move its tip,
    tree.actuated_for([tip]). `pool`: configurations sampled per finger; `cell`: grid edge (m).
    Actuated joints that move no tip are 0. Deterministic per seed.
    """
    tree = robot.tree
    links = tuple(dict.fromkeys(tips.values() if isinstance(tips, dict) else tips))
    fingers = [tree.actuated_for([tip]) for tip in links]
    for i, a in enumerate(links):
        for b, joints in zip(links[i + 1 :], fingers[i + 1 :]):
            shared = sorted(set(fingers[i]) & set(joints))
            if shared:
                raise RobocalError(f"tips '{a}' and '{b}' share actuated joints ({', '.join(shared)}); the test set needs independent fingers")
    rng = np.random.default_rng(seed)
    # One pool serves every finger: a tip's position depends only on its own finger's joints.
    q_pool = sample_configurations(tree, pool, seed=int(rng.integers(2**32)))
    positions = batch_link_poses(robot, theta, q_pool, links)[..., :3, 3]
    q = np.zeros((n, len(tree.actuated)))
    for f, joints in enumerate(fingers):
        columns = [tree.actuated.index(name) for name in joints]
        q[:, columns] = q_pool[uniform_cell_draw(positions[:, f], n, cell, rng)][:, columns]
    return q
