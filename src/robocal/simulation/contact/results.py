"""The result of a contact search: one row per simulated contact, with the failures and planning
rejections counted per body pair."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

FAILURES = ("miss", "start_in_contact", "obstructed", "not_detected")
REJECTIONS = ("no_clear_start", "nominal_obstructed")


@dataclass(frozen=True)
class ContactSample:
    """One simulated contact (a row of a `ContactSimulation`)."""

    moving: str
    static: str
    q: np.ndarray
    start_q: np.ndarray
    end_q: np.ndarray
    s: float
    true_distance: float


@dataclass
class ContactSimulation:
    """Simulated contacts, one row per contact; configurations in `tree.actuated` order.

    The drive of row i is q(s) = clip(start_q[i] + s (end_q[i] - start_q[i]), joint limits); contact
    was detected at s[i] and recorded as q[i] (with encoder noise). other_distance[i] is the
    smallest true signed distance of a designated body to any body but the other designated one,
    over the executed drive (positive, or the drive would have been a failure).
    """

    q: np.ndarray  # (n, n_actuated) recorded joint values at detected contact (with encoder noise)
    pairs: list[tuple[str, str]]  # per row (moving body link, static body link)
    true_distance: np.ndarray  # (n,) true signed distance at the recorded q
    start_q: np.ndarray  # (n, n_actuated) start configuration of each drive
    end_q: np.ndarray | None = None  # (n, n_actuated) planned configuration (nominal overlap), s = 1
    s: np.ndarray | None = None  # (n,) drive parameter at detection
    other_distance: np.ndarray | None = None  # (n,)
    failures: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # pair -> reason -> count
    rejections: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # pair -> reason -> count
    detection: str = "geometric"

    def __len__(self) -> int:
        return len(self.pairs)

    def sample(self, i: int) -> ContactSample:
        end = self.end_q[i] if self.end_q is not None else np.full_like(self.q[i], np.nan)
        s = float(self.s[i]) if self.s is not None else float("nan")
        return ContactSample(self.pairs[i][0], self.pairs[i][1], self.q[i], self.start_q[i], end, s, float(self.true_distance[i]))

    def pair_keys(self) -> list[tuple[str, str]]:
        """The body pair of each row, whichever body moved (names sorted)."""
        return [(a, b) if a <= b else (b, a) for a, b in self.pairs]

    def counts(self) -> dict[tuple[str, str], int]:
        """Contacts per body pair (names sorted)."""
        return dict(Counter(self.pair_keys()))

    def summary(self) -> list[dict]:
        """Per requested pair: contacts, failures and planning rejections by reason, and the mean
        and largest |true signed distance| at the recorded configurations (m)."""
        keys = np.array([" ".join(k) for k in self.pair_keys()])
        out = []
        for pair in self.failures:
            d = np.abs(self.true_distance[keys == " ".join(sorted(pair))])
            out.append(
                {
                    "pair": pair,
                    "contacts": int(len(d)),
                    "failures": dict(self.failures[pair]),
                    "rejections": dict(self.rejections.get(pair, {})),
                    "mean_abs_distance": float(d.mean()) if len(d) else float("nan"),
                    "max_abs_distance": float(d.max()) if len(d) else float("nan"),
                }
            )
        return out
