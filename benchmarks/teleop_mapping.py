"""Real-time check of the modified fingertip mapping (human hand -> DLR-Hand II, the packaged
mapping file): warm time of one full-hand frame, human joint values -> human fingertips ->
scaled targets -> closest-point inverse kinematics of the 4 robot fingers, through the public
`HandMapping.fingertip_map` (input checks and numpy results included), each frame warm-started
from the last as in a live stream. Target: 1 ms per frame.

Usage: .venv/bin/python benchmarks/teleop_mapping.py [--frames 5000] [--seed 0]
"""

from __future__ import annotations

import argparse
import platform
import time

import jax
import numpy as np

from robocal.teleop import HandMapping
from timing import cpu_name

TARGET = 1e-3  # s per frame


def human_stream(mapping: HandMapping, frames: int, seed: int) -> np.ndarray:
    """A smooth operator: every human joint a sum of two sines (random frequencies 0.1-1 Hz
    and phases) spanning its range, sampled at 100 Hz."""
    tree = mapping.config.human
    lo, hi = (np.array([tree.joint(name).limits[i] for name in tree.actuated]) for i in (0, 1))
    rng = np.random.default_rng(seed)
    t = np.arange(frames)[:, None] / 100.0
    freq, phase = rng.uniform(0.1, 1.0, (2, len(lo))), rng.uniform(0, 2 * np.pi, (2, len(lo)))
    wave = 0.5 + 0.25 * np.sin(2 * np.pi * freq[0] * t + phase[0]) + 0.25 * np.sin(2 * np.pi * freq[1] * t + phase[1])
    return lo + (hi - lo) * wave


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {cpu_name()}, {jax.local_device_count()} JAX device(s) ({jax.default_backend()}), jax {jax.__version__}")
    started = time.perf_counter()
    mapping = HandMapping.load()
    loaded = time.perf_counter() - started
    stream = human_stream(mapping, args.frames, args.seed)
    started = time.perf_counter()
    result = mapping.fingertip_map(stream[0])
    compiled = time.perf_counter() - started
    seconds, unreached = np.empty(len(stream)), 0
    for i, pose in enumerate(stream):
        started = time.perf_counter()
        result = mapping.fingertip_map(pose, result.q)
        seconds[i] = time.perf_counter() - started
        unreached += int((~result.reached).sum())
    joint = []
    for pose in stream[:1000]:
        started = time.perf_counter()
        mapping.joint_map(pose)
        joint.append(time.perf_counter() - started)
    median = float(np.median(seconds))
    print(f"load {loaded:.2f} s (models, seed grid), first frame {compiled:.2f} s (compilation)")
    print(
        f"fingertip mapping, {len(stream)} warm frames: median {median * 1e6:.0f} us, 90 % {np.percentile(seconds, 90) * 1e6:.0f} us, "
        f"99 % {np.percentile(seconds, 99) * 1e6:.0f} us, max {seconds.max() * 1e6:.0f} us; target {TARGET * 1e3:.0f} ms -> ratio {median / TARGET:.2f}"
    )
    print(f"  {unreached} of {4 * len(stream)} finger targets were out of reach (mapped to the closest reachable point)")
    print(f"joint mapping: median {np.median(joint) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
