"""The force a wrench estimator reports where (almost) none acts: the bounds that define it, and
its figures in a training run's state (`training.train` records one per validation point)."""

from __future__ import annotations

QUIET = 0.5  # N: an applied force below this counts as none
QUIET_LIMIT = 0.3  # N: an estimator reporting more than this on average where none acts invents forces (the acceptance's bound)


def quiet_at(state: dict, step: int) -> float | None:
    """The mean force (N) the minimal-wrench estimator of validation point `step` reports where
    less than `QUIET` acts (the state's `quiet`); None for a run that records none."""
    return dict(state.get("quiet", [])).get(step)


def invents_forces(state: dict, step: int) -> bool:
    """Whether that force (`quiet_at`) is over `QUIET_LIMIT`."""
    quiet = quiet_at(state, step)
    return quiet is not None and quiet > QUIET_LIMIT
