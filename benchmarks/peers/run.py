"""robocal beside its peers, whole process, same data, same metric (issue 19): FIGAROH 1.0.2 on the
TIAGo held-out protocol and a CasADi/IPOPT formulation of the MUKCa socket cost on one unit.

Run from the repository root:  .venv/bin/python benchmarks/peers/run.py [--repeats 5] [--jobs tiago,mukca]

The peers run in their own virtual environment (default ~/.cache/robocal/peers/venv, `--venv`),
created on first use with pinned versions from PyPI (network needed that once); robocal runs from
this interpreter (`python -m robocal`). Discipline as in benchmarks/cold_start.py: robocal gets
its own persistent compilation cache, filled by one unmeasured run, and each peer one unmeasured
run too (bytecode and page cache warm); then `--repeats` measured runs of each, taking turns,
each a fresh process. Printed: median (min-max) wall seconds, the ratio robocal / peer of the
medians, the load average, and the figures that show both solved the same job (held-out RMSE per
TIAGo session; MUKCa MAE and the largest difference of the estimated origins).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TIAGO = ROOT / "examples/tiago_mocap/full.yaml"
TIAGO_DATA = ROOT / "examples/tiago_mocap/data"
TIAGO_URDF = ROOT / "../shared/data/tiago_mocap/tiago_48_schunk.urdf"
HELD_OUT = {
    "validation 11-26": "qualisys_2021-11-26_static_postures.csv",
    "confirmation 14:03": "qualisys_2021-11-30-1403_static_postures.csv",
    "confirmation 15:04": "qualisys_2021-11-30-1504_static_postures.csv",
}
MUKCA = ROOT / "examples/mukca/panda_1_front.yaml"
PINNED = ["figaroh==1.0.2", "pin==4.1.0", "ndcurves==2.3.0", "casadi==3.8.2"]


def peers_python(venv: Path) -> Path:
    """The peers' interpreter, creating the environment and installing PINNED if needed."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import figaroh, casadi, pinocchio; print(figaroh.__version__ if hasattr(figaroh, '__version__') else '', casadi.__version__)"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {venv} and installing {' '.join(PINNED)} from PyPI (once; needs the network)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PINNED], check=True)
    return python


def timed(command: list[str], env: dict | None = None) -> tuple[float, str]:
    """Wall seconds of one process and its stdout; exits on failure."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s ({min(seconds):.2f}-{max(seconds):.2f})"


def side_by_side(title: str, ours: Callable, ours_label: str, theirs: Callable, theirs_label: str, repeats: int) -> tuple:
    """One warm-up run of each (robocal's compilation cache, both tools' bytecode and the page
    cache), then `repeats` runs alternating robocal and the peer; prints the section's title and
    its timing table (median, spread, ratio of the medians, load average) and returns the last
    run's results (ours, theirs). `ours` and `theirs` return (seconds, result)."""
    ours(), theirs()
    load = os.getloadavg()[0]
    mine, peer = [], []
    for _ in range(repeats):
        seconds, our_result = ours()
        mine.append(seconds)
        seconds, their_result = theirs()
        peer.append(seconds)
    ratio = statistics.median(mine) / statistics.median(peer)
    print(f"\n## {title}")
    print("| tool | whole process | ratio robocal / peer | load average (1 min, before-after) |")
    print("|---|---|---|---|")
    print(f"| {ours_label} | {spread(mine)} | {ratio:.2f} | {load:.1f}-{os.getloadavg()[0]:.1f} |")
    print(f"| {theirs_label} | {spread(peer)} | | |")
    return our_result, their_result


class Robocal:
    """`python -m robocal ...` with one persistent compilation cache."""

    def __init__(self, work: Path):
        self.work, self.env = work, os.environ | {"ROBOCAL_JAX_CACHE": str(work / "jax_cache")}
        self.runs = 0

    def __call__(self, *args: str) -> tuple[float, str]:
        return timed([sys.executable, "-m", "robocal", *args], self.env)

    def out(self, name: str) -> Path:
        self.runs += 1
        return self.work / f"{name}_{self.runs}"


def tiago(python: Path, work: Path, repeats: int) -> None:
    robocal = Robocal(work)
    held_out = [str(TIAGO_DATA / file) for file in HELD_OUT.values()]

    def ours() -> tuple[float, dict]:
        out = robocal.out("tiago")
        calibrate, _ = robocal("calibrate", str(TIAGO), "--out", str(out))
        evaluate, stdout = robocal("evaluate", str(TIAGO), "--result", str(out), *[a for f in held_out for a in ("--data", f)], "--json")
        return calibrate + evaluate, json.loads(stdout)

    def theirs() -> tuple[float, dict]:
        seconds, stdout = timed([str(python), str(HERE / "tiago_figaroh.py"), "--urdf", str(TIAGO_URDF), "--data", str(TIAGO_DATA)])
        return seconds, last_json(stdout)

    report, result = side_by_side(
        "TIAGo full, held-out protocol v1 (fit on 11-30 15:44, scored on three other sessions)",
        ours,
        "robocal: `calibrate full.yaml` + `evaluate` on the 3 held-out files (2 processes)",
        theirs,
        f"FIGAROH {PINNED[0].split('==')[1]}: import + `full_params` calibration + evaluation on 4 sessions (1 process)",
        repeats,
    )
    rmse = {"training": report["training"][0]["measurements"][0]["after"]["rms"] * 1e3}
    for name, evaluation in zip(HELD_OUT, report["evaluations"]):
        rmse[name] = evaluation["measurements"][0]["after"]["rms"] * 1e3
    n_ours = json.loads((work / f"tiago_{robocal.runs}" / "report.json").read_text())["parameters"]
    print(
        f"\nRMSE of point BL, mm (parameters: robocal {len(n_ours)}, FIGAROH {result['n_parameters']}; FIGAROH excluded {result['excluded_postures']} postures)"
    )
    print("| session | robocal | FIGAROH |")
    print("|---|---|---|")
    for name in rmse:
        print(f"| {name} | {rmse[name]:.2f} | {result['rmse_mm'][name]:.2f} |")
    print("FIGAROH's phases in its last run, s: " + ", ".join(f"{k} {v:.2f}" for k, v in result["seconds"].items()), flush=True)


def mukca(python: Path, work: Path, repeats: int) -> None:
    robocal = Robocal(work)

    def ours() -> tuple[float, Path]:
        out = robocal.out("mukca")
        return robocal("calibrate", str(MUKCA), "--out", str(out))[0], out

    def theirs() -> tuple[float, dict]:
        seconds, stdout = timed([str(python), str(HERE / "mukca_casadi.py"), str(MUKCA)])
        return seconds, last_json(stdout)

    out, result = side_by_side(
        "MUKCa panda_1, placement front (xyz + rpy of 8 origins, 48 parameters)",
        ours,
        "robocal: `calibrate panda_1_front.yaml`",
        theirs,
        f"CasADi {PINNED[3].split('==')[1]} + IPOPT: parse, build, solve (1 process)",
        repeats,
    )
    report = json.loads((out / "report.json").read_text())
    estimate = {p["name"]: p["estimate"] for p in report["parameters"]}
    difference = {name: abs(value - estimate[name]) for name, value in result["estimate"].items()}
    worst = max(difference, key=difference.get)
    figures = report["measurements"][0]
    print(
        f"\nMAE before -> after, mm: robocal {json_figure(figures, 'before')} -> {json_figure(figures, 'after')}, CasADi {result['mae_before_mm']:.3f} -> {result['mae_after_mm']:.3f}"
    )
    print(
        f"estimated origins: {len(difference)} numbers compared, largest difference {difference[worst]:.2e} ({worst}); IPOPT {result['status']} in {result['iterations']} iterations"
    )
    print("CasADi's phases in its last run, s: " + ", ".join(f"{k} {v:.2f}" for k, v in result["seconds"].items()), flush=True)


def json_figure(measurement: dict, which: str) -> str:
    """The MAE in mm of a report.json measurement entry, `before` or `after`."""
    return f"{measurement[which]['mae'] * 1e3:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", default="tiago,mukca")
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache/robocal/peers/venv", help="the peers' virtual environment")
    options = parser.parse_args()
    python = peers_python(options.venv)
    versions = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in ('figaroh', 'pin', 'casadi', 'numpy', 'scipy')))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"{cpu()}, {os.cpu_count()} cores, Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, median of {options.repeats}; peers: {versions}"
    )
    with tempfile.TemporaryDirectory(prefix="robocal_peers_") as folder:
        for job in options.jobs.split(","):
            work = Path(folder) / job
            work.mkdir()
            {"tiago": tiago, "mukca": mukca}[job](python, work, options.repeats)


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
