"""Throughput of `robocal fleet run` (issue 20): simulated units of the 6-joint arm
(examples/fleet/arm_6r.urdf, 40 marker postures each, 3 % slipped offsets), each engine timed as a
whole `robocal fleet run` process on a freshly ingested store: start, imports, compilation,
calibration, verdicts, results stored. Each variant has a compilation cache of its own: a first
run with it empty (`cold`: everything compiled), then --repeats runs with what the first left in
it (`warm`, as every later run on a line), the variants taking turns; each run on a fresh copy of
a store into which the sessions were ingested once.

Run from the repository root:

    .venv/bin/python benchmarks/fleet_throughput.py [--units 1000] [--one-at-a-time 24] [--workers 2] [--repeats 3] [--profile]

Variants: `one at a time` (--batch 0: each unit loads and compiles its own problem, as
`robocal calibrate` does; on --one-at-a-time units, it is slow), `batch 1` (compiled code shared
within the process, one unit per solve), `batched` (chunks of 256, each structure's fits in one
vectorized call), `pool` and `ray` (batched, --workers processes). Prints wall time, ms per unit,
units per minute, the ratio to one at a time, and the CPU time per unit (less sensitive than the
wall time to other work on a shared machine); with --profile, where the in-process batched
run spends its time (cProfile, per unit).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from timing import cpu_name

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "examples" / "fleet" / "arm_6r.urdf"
TARGET = 10_000  # units per minute on 2 cores (issue 20)


def robocal(*args: str, env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python -m robocal ARGS` process. The CPU time, user and
    system, counts the process and the children it waited for (the pool's workers), not Ray's
    workers (children of Ray's own servers)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "robocal", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"robocal {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def simulate(folder: Path, units: int, env: dict) -> Path:
    robocal("simulate", "fleet", "--robot", str(ARM), "--units", str(units), "--postures", "40", "--defect-share", "0.03", "--out", str(folder), env=env)
    return folder


def ingested(sessions: Path, db: Path, env: dict) -> Path:
    """A new store holding `sessions`, every job queued (copied for each measured run)."""
    robocal("fleet", "init", "--db", str(db), env=env)
    robocal("fleet", "ingest", str(sessions), "--db", str(db), env=env)
    return db


def timed_run(store: Path, db: Path, options: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of `robocal fleet run OPTIONS` on `db`, a fresh copy of the ingested `store`."""
    shutil.copyfile(store, db)
    return robocal("fleet", "run", "--db", str(db), *options, env=env)


def profile(sessions: Path, work: Path, units: int, cache: Path) -> None:
    """cProfile of the in-process batched run (compilation cache `cache`): seconds per unit in each phase."""
    import cProfile
    import pstats

    from robocal.fleet.engine import run
    from robocal.fleet.store import open_store
    from robocal.fleet.store.sessions import ingest
    from robocal.runtime import enable_compilation_cache

    os.environ["ROBOCAL_JAX_CACHE"] = str(cache)
    enable_compilation_cache()
    engine = open_store(work / "profile.db", create=True)
    ingest(engine, sessions)
    profiler = cProfile.Profile()
    profiler.enable()
    run(engine)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    phases = {
        "whole run": ("engine.py", "run"),
        "read sessions from the store (materialize_many)": ("sessions.py", "materialize_many"),
        "load the problems (load_session)": ("loading.py", "load_session"),
        "  of which in full (load_problem: YAML, URDF, checks)": ("build.py", "load_problem"),
        "  of which derived from a template (data read)": ("loading.py", "derive"),
        "structure_key": ("batch.py", "structure_key"),
        "vectorized fits (solve_batch)": ("map.py", "solve_batch"),
        "  of which Levenberg-Marquardt rounds": ("map.py", "_fit_batch"),
        "  of which Laplace covariance": ("map.py", "laplace"),
        "identifiability": ("identifiability.py", "identifiability"),
        "conditioning": ("calibration.py", "conditioning"),
        "before/after metrics, by group (group_metrics)": ("batch.py", "group_metrics"),
        "result row: report.json, URDF, verdict (result_row)": ("work.py", "result_row"),
        "store the results (finish_many)": ("jobs.py", "finish_many"),
    }
    print(f"\nwhere the in-process batched run spends its time (cProfile, {units} units, ms per unit; profiling slows it):")
    for label, (file, function) in phases.items():
        seconds = sum(v[3] for k, v in stats.items() if k[0].endswith(file) and k[2] == function)
        print(f"  {label:<52} {1e3 * seconds / units:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--one-at-a-time", type=int, default=24, help="units of the one-at-a-time variant")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip", default="", help="variants to leave out, comma separated (e.g. ray)")
    parser.add_argument("--repeats", type=int, default=3, help="warm runs of each variant")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="robocal-fleet-throughput-"))
    env = os.environ | {"ROBOCAL_JAX_CACHE": str(work / "jax_cache")}
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cpu_name()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    sessions, few = simulate(work / "sessions", args.units, env), simulate(work / "few", max(args.one_at_a_time, 8), env)
    variants = {
        "one at a time": (["--batch", "0"], few),
        "batch 1": (["--batch", "1"], sessions),
        "batched": ([], sessions),
        "pool": (["--engine", "pool", "--workers", str(args.workers)], sessions),
        "ray": (["--engine", "ray", "--workers", str(args.workers)], sessions),
    }
    stores = {folder: ingested(folder, work / f"{folder.name}.db", env) for folder in (sessions, few)}
    chosen = {k: (name, options, folder) for k, (name, (options, folder)) in enumerate(variants.items()) if name not in args.skip.split(",")}
    caches = {k: env | {"ROBOCAL_JAX_CACHE": str(work / f"jax_cache_{k}")} for k in chosen}  # one per variant
    cold = {k: timed_run(stores[folder], work / f"cold-{k}.db", options, caches[k])[0] for k, (_, options, folder) in chosen.items()}
    warm: dict[int, list[float]] = {k: [] for k in chosen}
    cpu: dict[int, list[float]] = {k: [] for k in chosen}
    for repeat in range(args.repeats):  # the variants in turn, so that the machine's load falls on all of them alike
        for k, (name, options, folder) in chosen.items():
            wall, used = timed_run(stores[folder], work / f"warm-{k}-{repeat}.db", options, caches[k])
            warm[k].append(wall)
            cpu[k].append(used)
            print(f"  {name}: {wall:.1f} s warm, {used:.1f} s CPU (cold {cold[k]:.1f} s), load {os.getloadavg()[0]:.1f}", flush=True)
    units = {folder: len(list(folder.glob("UNIT-*"))) for folder in stores}
    base = next((statistics.median(warm[k]) / units[f] for k, (n, _, f) in chosen.items() if n == "one at a time"), None)
    print(
        f"\n| variant | options | units | wall, cold cache | wall, warm: median (min-max) of {args.repeats} | per unit | units/min | vs one at a time "
        f"| of {TARGET:,}/min | CPU per unit (user + system) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, (name, options, folder) in chosen.items():
        median = statistics.median(warm[k])
        per = median / units[folder]
        ratio = f"{base / per:.1f}x" if base else "-"
        spread = f"{median:.1f} s ({min(warm[k]):.1f}-{max(warm[k]):.1f})"
        used = "not counted" if name == "ray" else f"{1e3 * statistics.median(cpu[k]) / units[folder]:.1f} ms"
        print(
            f"| {name} | `{' '.join(options) or '(defaults)'}` | {units[folder]} | {cold[k]:.1f} s | {spread} | {1e3 * per:.1f} ms | {60 / per:,.0f} "
            f"| {ratio} | {60 / per / TARGET:.2f} | {used} |"
        )
    if args.profile:
        profile(sessions, work, args.units, work / f"jax_cache_{list(variants).index('batched')}")  # warm: the batched variant's cache
    print(f"\nwork folder: {work}")


if __name__ == "__main__":
    main()
