"""Whole-process times of robocal's commands (issue 19): each job is run as a fresh
`python -m robocal ...` process, with an empty persistent compilation cache and with a warm one
(filled by one unmeasured run first); the median and the spread of `--repeats` runs of each.

Run from the repository root:  .venv/bin/python benchmarks/cold_start.py [--repeats 5] [--jobs tiago,mukca]

Jobs (the issue's table): `help` (robocal --help), `tiago` (calibrate examples/tiago_mocap/full.yaml),
`tiago-evaluate` (evaluate that result on the 11-26 held-out session), `mukca` (calibrate
examples/mukca/panda_1_front.yaml) and `hand` (calibrate the full-DH DLR-Hand II problem of
`robocal simulate contact`, 300 contacts). The load average is printed with every job: on a shared
machine, compare the figures of one run with each other, not with another day's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from timing import cpu_name

ROOT = Path(__file__).resolve().parents[1]
TIAGO = ROOT / "examples/tiago_mocap/full.yaml"
HELD_OUT = ROOT / "examples/tiago_mocap/data/qualisys_2021-11-26_static_postures.csv"
MUKCA = ROOT / "examples/mukca/panda_1_front.yaml"
TARGETS = {"tiago": (2.5, 6.0), "tiago-evaluate": (2.0, None), "mukca": (2.0, None), "hand": (5.0, 15.0)}  # (warm, empty) s


def robocal(*args: str, cache: Path, src: Path | None = None, check: bool = True) -> float:
    """Seconds of one `python -m robocal ARGS` process with the compilation cache `cache` (and the
    package imported from the source tree `src`, e.g. a worktree of an older commit)."""
    env = os.environ | {"ROBOCAL_JAX_CACHE": str(cache)} | ({"PYTHONPATH": str(src)} if src else {})
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "robocal", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if check and done.returncode != 0:
        raise SystemExit(f"robocal {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def jobs(work: Path, wanted: list[str]) -> dict[str, list[str]]:
    """Command lines (after `robocal`) of the jobs; writes what the `wanted` ones need under `work`."""
    hand, result = work / "hand", work / "tiago_result"
    if "hand" in wanted:
        robocal("simulate", "contact", "--out", str(hand), cache=work / "sim_cache")
    if "tiago-evaluate" in wanted:
        robocal("calibrate", str(TIAGO), "--out", str(result), cache=work / "prep_cache")
    return {
        "help": ["--help"],
        "tiago": ["calibrate", str(TIAGO), "--out", str(work / "out_tiago")],
        "tiago-evaluate": ["evaluate", str(TIAGO), "--result", str(result), "--data", str(HELD_OUT)],
        "mukca": ["calibrate", str(MUKCA), "--out", str(work / "out_mukca")],
        "hand": ["calibrate", str(hand / "problem.yaml"), "--out", str(work / "out_hand")],
    }


def measure(args: list[str], work: Path, repeats: int, src: Path | None = None) -> tuple[list[float], list[float]]:
    """(empty-cache seconds, warm-cache seconds), `repeats` of each, alternating; outputs go to
    fresh folders."""
    empty, warm = [], []
    tag = f"{args[0].strip('-')}_{'other' if src else 'this'}"
    warm_cache = work / f"cache_warm_{tag}"
    out = args.index("--out") + 1 if "--out" in args else None

    def run(cache: Path, k: str) -> float:
        line = list(args)
        if out is not None:
            line[out] = f"{args[out]}_{k}"
        return robocal(*line, cache=cache, src=src)

    run(warm_cache, "fill")
    for k in range(repeats):
        empty.append(run(work / f"cache_empty_{tag}_{k}", f"e{k}"))
        warm.append(run(warm_cache, f"w{k}"))
    return empty, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", default="help,tiago,tiago-evaluate,mukca,hand")
    parser.add_argument("--compare-src", type=Path, help="also time the package in this source tree (its src/ folder), in the same run")
    options = parser.parse_args()
    print(f"{cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, median of {options.repeats}")
    print("| job | empty cache: median (min-max) | warm cache: median (min-max) | target warm / empty | load average |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="robocal_cold_start_") as folder:
        work = Path(folder)
        commands = jobs(work, options.jobs.split(","))
        for name in options.jobs.split(","):
            warm_target, empty_target = TARGETS.get(name, (None, None))
            target = f"{warm_target or '-'} s / {empty_target or '-'} s"
            for label, src in (("", None), (f" ({options.compare_src})", options.compare_src)) if options.compare_src else (("", None),):
                empty, warm = measure(commands[name], work, options.repeats, src)
                print(f"| {name}{label} | {spread(empty)} | {spread(warm)} | {target} | {os.getloadavg()[0]:.1f} |", flush=True)


def spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s ({min(seconds):.2f}-{max(seconds):.2f})"


if __name__ == "__main__":
    main()
