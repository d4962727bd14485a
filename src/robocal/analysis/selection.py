"""`parameters.select: identifiable`: the robot parameters a fit holds at nominal because the
problem's data do not identify them. The problem keeps every parameter; the fit (and what
describes it: `robocal analyze`, `robocal design`) works on the free ones, a mask over the
layout, so choosing costs no second trace of the problem."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from robocal.analysis.identifiability import identifiable_subset

if TYPE_CHECKING:
    from robocal.problem.build import Problem


def selection(problem: Problem) -> tuple[str, ...]:
    """The robot parameters `parameters.select: identifiable` holds at nominal: those outside a
    base set the problem's data identify at nominal (pivoted QR after the frame and marker
    columns: `identifiable_subset`); none with `select: all`. The Jacobian is the problem's
    compiled one, which the fit then uses."""
    if problem.config.parameters.select != "identifiable" or "robot" not in problem.layout.blocks:
        return ()
    robot = np.zeros(len(problem.layout), bool)
    robot[problem.layout.blocks["robot"]] = True  # drive parameters are never held: three, and each observable
    keep = identifiable_subset(problem.unweighted_jacobian(problem.theta0), robot)
    return tuple(name for name, r, k in zip(problem.layout.names, robot, keep) if r and not k)


def free_mask(problem: Problem, held: tuple[str, ...]) -> np.ndarray:
    """(p,) bool: the problem's parameters but the `held` ones."""
    return np.array([name not in held for name in problem.layout.names], bool)
