"""The task a calibration is for, and the task-space error its posterior predicts.

A task is the position of tip links relative to a reference link (with a single tip, the root
link: the tip's absolute position), on a test set whose tips are uniform in their Cartesian
workspace (`robocal.simulation.testset`). Linearized at the estimate, a parameter covariance C
gives each task vector at test configuration m and tip f the error covariance

    S_mf = Jt_mf C Jt_mf^T        (3 x 3, Jt the task Jacobian, m per parameter unit),

so the predicted root mean squared error is sqrt(mean_mf tr S_mf) = sqrt(tr(C M) / F) with
M = mean_m sum_f Jt_mf^T Jt_mf (`TaskMetric`), and the predicted mean error is the mean of
E|e| over e ~ N(0, S_mf), the figure the hand-calibration paper tabulates. E|e| has no closed
form; it is averaged over a fixed set of standard normal draws (the same for every call).

Parameters held at nominal (`parameters.fixed`, `select: identifiable`) are known only to their
prior (Sigma_h), and where the measurements see them the fitted parameters absorb their deviation:
linearized, the MAP estimate's error is e_f = C J_f^T J_h dh + (the posterior's own part) for a
held deviation dh, with C the fitted parameters' posterior and J_f, J_h the whitened measurement
Jacobians of the fitted and the held parameters, while e_h = -dh. With G = C J_f^T J_h, the
covariance of the whole model's error (`robot_uncertainty`) is

    [[C + G Sigma_h G^T, -G Sigma_h], [-G Sigma_h, Sigma_h]],

so a task that moves the held parameters and the fitted ones that absorb them the same way sees
their difference, not the sum of both (a held `*_j3.dy` that a fitted `*_j2` origin absorbs).
Where the measurements do not see the held ones (G = 0) they add their prior alone.

A calibration realizes one parameter error delta, so one mean task error over the test set,
mean_mf |Jt_mf delta|; with delta ~ N(0, C) its central 95 % interval (`interval95`) is the
prediction a realized figure is checked against (tests/analysis/test_task_coverage.py: how often
it falls inside over seeded simulated calibrations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from robocal.analysis.doptimal import TaskMetric
from robocal.analysis.task_error import task_jacobians
from robocal.errors import RobocalError
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.simulation.testset import uniform_cartesian_test_set
from robocal.solver.map import rows_and_jacobian

DRAWS = 256  # standard normal draws for E|e|
INTERVAL_DRAWS = 1000  # parameter-error draws for the interval of the test set's mean task error


def default_tips(tree: KinematicTree) -> tuple[str, ...]:
    """The tree's end effectors (DH tables name them), else its leaf links; where two leaves share
    an actuated joint (a serial arm, its flange, tool frame and gripper fingers all leaves), the
    one leaf moved by the fewest actuated joints, at least one (the flange or tool, not a finger)."""
    if tree.end_effectors:
        return tree.end_effectors
    parents = {j.parent for j in tree.joints}
    leaves = tuple(link for link in tree.links if link not in parents)
    chains = [set(tree.actuated_for([leaf])) for leaf in leaves]
    if all(not (a & b) for i, a in enumerate(chains) for b in chains[i + 1 :]):
        return leaves
    moved = [(len(chain), leaf) for chain, leaf in zip(chains, leaves) if chain]
    return (min(moved, key=lambda item: item[0])[1],)


@dataclass(frozen=True)
class Task:
    """Positions of `tips` relative to `reference` on `n` test configurations (seeded)."""

    reference: str
    tips: tuple[str, ...]
    n: int = 1000
    seed: int = 0

    @classmethod
    def default(cls, problem, reference: str | None = None, tips: Sequence[str] | None = None, **options) -> Task:
        """Tips default to the robot's end effectors (else its leaf links); the reference to the
        first tip, or the root link when there is one tip."""
        tips = tuple(tips or default_tips(problem.tree))
        reference = reference or (tips[0] if len(tips) > 1 else problem.tree.root)
        for link in (reference, *tips):
            if not problem.tree.has_link(link):
                raise RobocalError(f"{problem.tree.source or problem.tree.name}: no link named '{link}'")
        others = tuple(tip for tip in dict.fromkeys(tips) if tip != reference)
        if not others:
            raise RobocalError(f"the task needs a tip other than the reference '{reference}'")
        return cls(reference, others, **options)

    def jacobians(self, problem, theta: np.ndarray) -> np.ndarray:
        """(n, F, 3, P): task Jacobians on the test set over all of the problem's parameters
        (zero outside the robot block)."""
        block = problem.layout.blocks["robot"]
        robot_jac = self.robot_jacobians(problem.robot, theta[block])
        jac = np.zeros((*robot_jac.shape[:-1], len(theta)))
        jac[..., block] = robot_jac
        return jac

    def robot_jacobians(self, robot: RobotModel, theta: np.ndarray) -> np.ndarray:
        """(n, F, 3, P_robot): task Jacobians on the test set over the robot's parameters at theta (P_robot,)."""
        q = uniform_cartesian_test_set(robot, theta, (self.reference, *self.tips), self.n, self.seed)
        return task_jacobians(robot, theta, q, self.reference, self.tips)

    def metric(self, problem, theta: np.ndarray) -> TaskMetric:
        return TaskMetric.from_jacobians(self.jacobians(problem, theta))


@dataclass(frozen=True)
class RobotUncertainty:
    """The robot's parameters with what is known of them after a calibration: `theta` (P,) the
    estimate, held parameters at nominal; `covariance` (P, P) the covariance of the estimate's
    error (module docstring: the fitted parameters' posterior, the held ones' prior, inf where a
    held one has no prior, and the fitted ones' response to the held ones); `held` their names."""

    robot: RobotModel
    theta: np.ndarray
    covariance: np.ndarray
    held: tuple[str, ...]


def robot_uncertainty(
    problem, theta: np.ndarray, covariance: np.ndarray, masks: list[np.ndarray] | None = None, data: list | None = None, held: Sequence[str] = ()
) -> RobotUncertainty:
    """Every parameter of the problem's parameterization with the uncertainty of its estimate: a
    parameter held at nominal (left out by parameters.fixed, or `held` in the layout by select:
    identifiable) is not known to be nominal, it is known to its prior, and the fitted parameters
    that the data tie to it absorb its deviation (module docstring). theta (p,) and covariance
    (p, p): the problem's estimate and posterior (zero rows for the `held` ones); masks: the rows
    the fit kept (default all); data: the measurements' data the fit used (default the problem's)."""
    block = problem.layout.blocks["robot"]
    if not (held or problem.config.parameters.fixed):
        return RobotUncertainty(problem.robot, theta[block], covariance[block, block], ())
    unheld = problem.unheld
    names = unheld.layout.names
    fitted = np.array([i for i, name in enumerate(problem.layout.names) if name not in held], dtype=int)  # in the problem's layout
    at = np.array([names.index(problem.layout.names[i]) for i in fitted], dtype=int)  # the same, in the unheld layout
    held_at = np.setdiff1d(np.arange(len(names)), at)
    full_theta = unheld.theta0.copy()
    full_theta[[names.index(name) for name in problem.layout.names]] = theta
    covariance = covariance[np.ix_(fitted, fitted)]
    blocks, jac = rows_and_jacobian(replace(unheld.map_problem, data=data or unheld.map_problem.data), full_theta)
    rows = np.concatenate([np.repeat(m, b.shape[1]) for b, m in zip(blocks, masks or [np.ones(len(b)) for b in blocks])]) > 0
    prior = np.asarray(unheld.map_problem.prior_sqrt_precision, dtype=float)[held_at] ** -2.0  # inf where no prior
    known = np.isfinite(prior)
    # The fitted parameters' error per unit of the held ones' deviation (the fit absorbs J_h dh): C J_f^T J_h.
    response = np.where(np.isfinite(covariance), covariance, 0.0) @ jac[rows][:, at].T @ jac[rows][:, held_at[known]]
    full_cov = np.zeros((len(names), len(names)))
    full_cov[np.ix_(at, at)] = covariance + (response * prior[known]) @ response.T
    full_cov[np.ix_(at, held_at[known])] = -response * prior[known]
    full_cov[np.ix_(held_at[known], at)] = full_cov[np.ix_(at, held_at[known])].T
    full_cov[held_at, held_at] = prior
    robot = unheld.layout.blocks["robot"]
    return RobotUncertainty(unheld.robot, full_theta[robot], full_cov[robot, robot], tuple(names[i] for i in held_at))


def predicted_task_error(jacobians: np.ndarray, covariance: np.ndarray) -> dict[str, float | list[float] | None]:
    """Predicted RMS and mean task error (m) for a parameter covariance, and `interval95`: the
    central 95 % interval of the test set's mean task error, the figure a calibration realizes
    once (over parameter errors delta ~ N(0, C), INTERVAL_DRAWS seeded draws of
    mean_mf |Jt_mf delta|). None where a parameter the task depends on has unbounded variance
    (no prior and no data)."""
    unbounded = ~np.isfinite(np.diag(covariance))
    if np.abs(jacobians[..., unbounded]).max(initial=0.0) > 0:
        return {"rms": None, "mean": None, "interval95": None}
    keep = ~unbounded
    jac = jacobians[..., keep]
    cov = jac @ covariance[np.ix_(keep, keep)] @ np.swapaxes(jac, -1, -2)  # (n, F, 3, 3)
    lam, vec = np.linalg.eigh(cov)
    z = np.random.default_rng(0).standard_normal((DRAWS, 3))
    norms = np.linalg.norm(np.einsum("...ij,...j,dj->...di", vec, np.sqrt(np.clip(lam, 0.0, None)), z), axis=-1)
    w, v = np.linalg.eigh(covariance[np.ix_(keep, keep)])
    factor = v * np.sqrt(np.clip(w, 0.0, None))  # C = factor factor^T
    deltas = factor @ np.random.default_rng(1).standard_normal((factor.shape[1], INTERVAL_DRAWS))  # (P, D)
    means = np.linalg.norm(jac @ deltas, axis=-2).mean(axis=(0, 1))  # (D,): |Jt delta| over (3,) per draw, averaged over the test set
    low, high = np.quantile(means, [0.025, 0.975])
    return {"rms": float(np.sqrt(np.trace(cov, axis1=-2, axis2=-1).mean())), "mean": float(norms.mean()), "interval95": [float(low), float(high)]}
