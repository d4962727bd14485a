"""Clock offset between two recordings of the same motion (motion capture and the robot's log)
from their yaw rates.

Motion capture and the robot stamp their samples with different clocks. Both see the base turn,
and the yaw rate is the signal they share whatever the frames: it does not depend on where the
marker body sits on the base, nor (up to a scale, which a normalized correlation ignores) on the
odometry's wheel parameters. So the offset is the lag that best aligns the two yaw rates.

Convention: `t_other + offset` is the time on the REFERENCE clock. With the motion capture as
reference and the robot log as the other series, `offset` is the mocap clock minus the robot
clock (mocap_time = robot_time + offset).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from robocal.errors import RobocalError

MIN_OVERLAP = 10.0  # s: a few turns and stops, enough for the correlation to have one clear peak
MIN_PEAK = 0.5  # normalized correlation below which the two series are not the same motion
SMOOTH = 0.05  # s, Gaussian sigma applied to both rates: far below the ~1 s of a speed change


class ClockOffset(NamedTuple):
    """offset (s): add it to the other series' times to put them on the reference clock; peak:
    normalized correlation of the aligned yaw rates, in [-1, 1]; overlap (s): common time span at
    that offset; dt (s): step of the grid the rates were correlated on."""

    offset: float
    peak: float
    overlap: float
    dt: float


def _finite_series(times, values, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows with finite time and values, checked to have strictly increasing times."""
    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    if times.ndim != 1 or values.shape[:1] != times.shape:
        raise RobocalError(f"{what}: {times.shape[0] if times.ndim else 0} times but values of shape {values.shape}")
    keep = np.isfinite(times) & np.isfinite(values.reshape(len(times), -1)).all(axis=1)
    times, values = times[keep], values[keep]
    if len(times) < 2:
        raise RobocalError(f"{what}: {len(times)} valid sample(s); at least 2 are needed")
    if np.any(np.diff(times) <= 0):
        first = int(np.argmax(np.diff(times) <= 0))
        raise RobocalError(f"{what}: times must increase strictly (valid sample {first + 1} at {times[first + 1]:.6f} s follows {times[first]:.6f} s)")
    return times, values


def yaw_rate(times, yaw, valid=None) -> tuple[np.ndarray, np.ndarray]:
    """(times_mid, rate): the yaw rate (rad/s) between consecutive valid samples of an angle
    series, stamped at the middle of each step.

    Samples that are NaN, or False in `valid`, are dropped first (an occluded frame); the rate
    across such a gap is the mean rate over it, still at its midpoint. The angles are unwrapped
    after the drop, so a gap must not hide more than half a turn. The difference over a step is
    the mean rate over that step, exact at its midpoint to second order.
    """
    yaw = np.asarray(yaw, dtype=float)
    if valid is not None:
        yaw = np.where(np.asarray(valid, dtype=bool), yaw, np.nan)
    t, angle = _finite_series(times, yaw, "yaw series")
    angle = np.unwrap(angle)
    return 0.5 * (t[1:] + t[:-1]), np.diff(angle) / np.diff(t)


def resample(times, values, new_times, *, angle_columns: Sequence[int] = ()) -> np.ndarray:
    """`values` (n,) or (n, k) linearly interpolated at `new_times`.

    Rows with a NaN are dropped (interpolation bridges them). Angle columns are unwrapped before
    the interpolation and wrapped to (-pi, pi] after, so a turn through +-pi is not averaged to 0.
    A new time outside the span of the valid samples raises RobocalError (no extrapolation, no
    mask: the caller chooses the span, see `estimate_offset`).
    """
    t, v = _finite_series(times, values, "resample")
    new_times = np.asarray(new_times, dtype=float)
    if new_times.size and (new_times.min() < t[0] or new_times.max() > t[-1]):
        raise RobocalError(f"resample: new times span [{new_times.min():.6f}, {new_times.max():.6f}] s, outside the valid samples' [{t[0]:.6f}, {t[-1]:.6f}] s")
    columns = v.reshape(len(t), -1).copy()
    angles = list(angle_columns)
    columns[:, angles] = np.unwrap(columns[:, angles], axis=0)
    out = np.stack([np.interp(new_times, t, c) for c in columns.T], axis=-1)
    out[..., angles] = np.arctan2(np.sin(out[..., angles]), np.cos(out[..., angles]))
    return out.reshape(new_times.shape + v.shape[1:])


def _grid(times: np.ndarray, dt: float) -> np.ndarray:
    """Uniform times of step dt from the first sample, none past the last (the clip only undoes
    the rounding of the last step)."""
    return np.minimum(times[0] + dt * np.arange(int(np.floor((times[-1] - times[0]) / dt)) + 1), times[-1])


def _smoothed(values: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian smoothing of uniform samples, sigma in samples (none at 0)."""
    from scipy.ndimage import gaussian_filter1d

    return gaussian_filter1d(values, sigma, mode="nearest") if sigma > 0 else values


def _window_sums(values: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sums of values and of their squares over [start, stop) for each window (prefix sums)."""
    s1 = np.concatenate([[0.0], np.cumsum(values)])
    s2 = np.concatenate([[0.0], np.cumsum(values**2)])
    return s1[stop] - s1[start], s2[stop] - s2[start]


def _correlations(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlation of x[k] with y[k - j] over their common samples, for every lag j from
    -(len(y) - 1) to len(x) - 1: (lags, correlation; 0 where a side is constant). The products come from
    one FFT correlation, the windowed means and variances from prefix sums."""
    from scipy.signal import correlate

    n, m = len(x), len(y)
    lags = np.arange(-(m - 1), n)
    sxy = correlate(x, y, mode="full", method="fft")  # index i <-> lag i - (m - 1)
    x_start, x_stop = np.maximum(lags, 0), np.minimum(n, m + lags)
    y_start, y_stop = x_start - lags, x_stop - lags
    count = x_stop - x_start
    sx, sxx = _window_sums(x, x_start, x_stop)
    sy, syy = _window_sums(y, y_start, y_stop)
    cov = sxy - sx * sy / count
    var = np.maximum(sxx - sx**2 / count, 0.0) * np.maximum(syy - sy**2 / count, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.where(var > 0, cov / np.sqrt(var), 0.0)
    return lags, corr


def _parabola_vertex(left: float, center: float, right: float) -> tuple[float, float]:
    """(shift in samples, value) of the vertex of the parabola through three equally spaced
    values around a maximum; the shift is clipped to half a sample."""
    curvature = left - 2.0 * center + right
    if curvature >= 0:
        return 0.0, center
    shift = float(np.clip(0.5 * (left - right) / curvature, -0.5, 0.5))
    return shift, center - 0.25 * (left - right) * shift


def estimate_offset(
    t_ref,
    rate_ref,
    t_other,
    rate_other,
    *,
    dt: float | None = None,
    max_offset: float | None = None,
    guess: float = 0.0,
    min_overlap: float = MIN_OVERLAP,
    min_peak: float = MIN_PEAK,
    smooth: float = SMOOTH,
) -> ClockOffset:
    """The offset that best aligns `rate_other` with `rate_ref` (`t_other + offset` is on the
    reference clock), by normalized cross-correlation.

    Both rates are resampled (linearly) on uniform grids of step `dt` (default: the finer median
    sample period of the two), and correlated at every lag with |offset - guess| <= max_offset
    (default: half the shorter series) whose common span is at least `min_overlap` seconds: a
    short overlap can correlate well by chance, so it never competes. The best integer lag is
    refined by a parabola through its neighbours (sub-sample). `guess` centers the search when the
    two clocks count from different epochs.

    Rates differentiated from noisy angles are noisiest at the highest frequencies, where the
    motion has no content; there the product of the two noises makes the correlation jitter from
    one lag to the next, and the parabola would follow the jitter (errors of a few samples on a
    broad peak). Both resampled rates are therefore smoothed by the same Gaussian (sigma `smooth`
    seconds, 0 for none): a symmetric kernel applied to both delays neither.

    Raises RobocalError when no lag overlaps by `min_overlap` (say how long the overlap could be),
    or when the best correlation is below `min_peak` (the rates do not match: the robot must turn
    during the recording, with both series seeing the same turns).
    """
    t_ref, rate_ref = _finite_series(t_ref, rate_ref, "reference rates")
    t_other, rate_other = _finite_series(t_other, rate_other, "other rates")
    if dt is None:
        dt = float(min(np.median(np.diff(t_ref)), np.median(np.diff(t_other))))
    if not dt > 0:
        raise RobocalError(f"estimate_offset: dt = {dt} s; it must be positive")
    span_ref, span_other = t_ref[-1] - t_ref[0], t_other[-1] - t_other[0]
    if max_offset is None:
        max_offset = 0.5 * min(span_ref, span_other)
    grid_ref, grid_other = _grid(t_ref, dt), _grid(t_other, dt)
    smoothed = [_smoothed(resample(t, r, g), smooth / dt) for t, r, g in ((t_ref, rate_ref, grid_ref), (t_other, rate_other, grid_other))]
    lags, corr = _correlations(*smoothed)
    offsets = grid_ref[0] - grid_other[0] + lags * dt  # ref sample k meets other sample k - lag
    overlap = np.minimum(t_ref[-1], t_other[-1] + offsets) - np.maximum(t_ref[0], t_other[0] + offsets)
    searched = np.abs(offsets - guess) <= max_offset
    candidate = searched & (overlap >= min_overlap)
    if not candidate.any():
        longest = float(max(overlap[searched].max(initial=0.0), 0.0))
        raise RobocalError(
            f"the two yaw-rate series overlap by at most {longest:.2f} s at offsets within {max_offset:.2f} s of {guess:g} s; "
            f"at least {min_overlap:g} s of common motion are needed (record longer, or widen max_offset)"
        )
    best = int(np.argmax(np.where(candidate, corr, -np.inf)))
    shift, peak = 0.0, float(corr[best])
    if 0 < best < len(corr) - 1 and candidate[best - 1] and candidate[best + 1]:
        shift, peak = _parabola_vertex(corr[best - 1], corr[best], corr[best + 1])
    if peak < min_peak:
        raise RobocalError(
            f"the yaw rates do not match (best normalized correlation {peak:.2f} at offset {offsets[best]:.3f} s, below {min_peak:g}); "
            "the robot must turn during the recording, and both recordings must cover the same turns"
        )
    return ClockOffset(float(offsets[best] + shift * dt), float(min(peak, 1.0)), float(overlap[best]), dt)
