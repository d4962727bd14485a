"""The flat parameter vector every solver works on, with a name, kind and prior for each entry.

Blocks of parameters come from the robot model (kinematic errors), unknown frames and
measurement-specific unknowns (e.g. marker offsets). Priors are Gaussian, one sigma per *kind*
(set in the problem file) unless a parameter overrides it; a sigma of None means no prior.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

Kind = Literal["translation", "rotation", "joint_offset", "frame_translation", "frame_rotation", "point", "drive", "gain"]


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: Kind
    nominal: float = 0.0
    prior_sigma: float | None = None
    unit: str = "m"


class ParameterLayout:
    """An ordered collection of named parameter blocks."""

    def __init__(self) -> None:
        self.parameters: list[Parameter] = []
        self.blocks: dict[str, slice] = {}

    def add(self, block: str, parameters: list[Parameter]) -> slice:
        if block in self.blocks:
            raise ValueError(f"parameter block '{block}' defined twice")
        start = len(self.parameters)
        self.parameters.extend(parameters)
        self.blocks[block] = slice(start, len(self.parameters))
        return self.blocks[block]

    def set_nominal(self, block: str, values) -> None:
        """Set the nominal (initial) values of a block's parameters, e.g. once the data that give
        them are read."""
        span = self.blocks[block]
        self.parameters[span] = [replace(p, nominal=float(v)) for p, v in zip(self.parameters[span], values, strict=True)]

    def __len__(self) -> int:
        return len(self.parameters)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    @property
    def nominal(self) -> np.ndarray:
        return np.array([p.nominal for p in self.parameters], dtype=float)

    def prior_precision_sqrt(self) -> np.ndarray:
        """1/sigma per parameter (0 where there is no prior)."""
        return np.array([0.0 if p.prior_sigma is None else 1.0 / p.prior_sigma for p in self.parameters])

    def set_priors(self, by_kind: dict[str, float | None], overrides: dict[str, float | None] | None = None) -> None:
        """Assign prior sigmas by kind, then by name pattern (fnmatch) from `overrides`.
        A pattern that matches no parameter raises KeyError (a typo must not pass silently)."""
        for pattern in overrides or {}:
            if not any(fnmatch.fnmatchcase(p.name, pattern) for p in self.parameters):
                raise KeyError(pattern)
        updated = []
        for p in self.parameters:
            sigma = by_kind.get(p.kind, p.prior_sigma)
            for pattern, value in (overrides or {}).items():
                if fnmatch.fnmatchcase(p.name, pattern):
                    sigma = value
            updated.append(replace(p, prior_sigma=sigma))
        self.parameters = updated

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(name) from None
