"""What one calibration traces and compiles, per phase (issue 19): JAX's monitoring events counted
while a problem loads, calibrates and writes its results, in this process. The counts do not
depend on the machine's load (the seconds printed beside them do).

Run from the repository root:  .venv/bin/python benchmarks/trace_counts.py examples/tiago_mocap/full.yaml
(ROBOCAL_JAX_CACHE=an empty folder for the counts of a first run; PYTHONPATH=OTHER_TREE/src for
another version of the package.)
"""

from __future__ import annotations

import collections
import sys
import tempfile
import time
from pathlib import Path

from jax._src import monitoring

TRACE = "/jax/core/compile/jaxpr_trace_duration"
COMPILE = "/jax/core/compile/backend_compile_duration"
HIT = "/jax/compilation_cache/cache_hits"


def main(problem_path: str) -> None:
    counts: collections.Counter = collections.Counter()
    seconds: collections.Counter = collections.Counter()
    monitoring.register_event_listener(lambda event, **_: counts.update([event]))

    def timed(event: str, duration: float, **_) -> None:
        counts.update([event])
        seconds[event] += duration

    monitoring.register_event_duration_secs_listener(timed)
    from robocal.calibration import calibrate
    from robocal.problem import load_problem
    from robocal.results import write_results
    from robocal.runtime import enable_compilation_cache

    enable_compilation_cache()

    def phase(name: str, started: float) -> None:
        print(
            f"{name:10s} {time.perf_counter() - started:7.2f} s  traces {counts[TRACE]:3d} ({seconds[TRACE]:.2f} s)  XLA compilations {counts[COMPILE]:3d} ({seconds[COMPILE]:.2f} s)  cache hits {counts[HIT]}"
        )
        counts.clear(), seconds.clear()

    started = time.perf_counter()
    problem = load_problem(problem_path)
    phase("load", started)
    started = time.perf_counter()
    cal = calibrate(problem)
    phase("calibrate", started)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        write_results(cal, Path(out))
    phase("write", started)
    print("after:", {m["name"]: m["after"] for m in cal.metrics})


if __name__ == "__main__":
    main(sys.argv[1])
