"""Processes seen through /proc (Linux): the children of a process, the workers a
multiprocessing pool spawned, whether processes have ended."""

import time
from pathlib import Path


def children(pid: int) -> list[int]:
    """The living (not zombie) children of process `pid`."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def spawned_workers(pid: int) -> list[int]:
    """The pool's worker processes among the children (not multiprocessing's resource tracker,
    which leaves by itself once the parent has gone)."""
    return [w for w in children(pid) if "spawn_main" in Path(f"/proc/{w}/cmdline").read_text()]


def gone(pids: list[int], within: float = 5.0) -> bool:
    """Whether every process of `pids` has ended (or is a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(p) for p in pids)
