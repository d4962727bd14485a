"""NTP-style estimate of a station's clock offset to the server (RFC 5905's on-wire exchange).

One exchange: the station sends at t0 (its clock), the server receives at t1 and replies at t2 (its
clock), the station receives at t3. With symmetric paths the station clock minus the server clock is
((t0 - t1) + (t3 - t2)) / 2, within half the round-trip delay (t3 - t0) - (t2 - t1); of several
exchanges the one with the smallest delay is kept."""

from __future__ import annotations

from collections.abc import Callable

import httpx


def offset_from(t0: float, t1: float, t2: float, t3: float) -> tuple[float, float]:
    """(station minus server clock, round-trip delay), s, from one exchange's four timestamps."""
    return ((t0 - t1) + (t3 - t2)) / 2, (t3 - t0) - (t2 - t1)


def estimate_offset(client: httpx.Client, clock: Callable[[], float], exchanges: int = 8) -> tuple[float, float]:
    """(offset, delay) of the exchange with the smallest delay among `exchanges` with the server's /api/time."""
    best = (float("nan"), float("inf"))
    for _ in range(exchanges):
        t0 = clock()
        answer = client.get("/api/time")
        t3 = clock()
        answer.raise_for_status()
        server = answer.json()
        estimate = offset_from(t0, server["received"], server["sent"], t3)
        if estimate[1] < best[1]:
            best = estimate
    return best
