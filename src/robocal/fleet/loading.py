"""Loading the fleet's problems. The sessions of one model differ in their measurement data alone:
the problem file, robot, criteria, ... are byte for byte the same (the store knows each file's
SHA-256). So the first session of each such set is loaded in full (`load_problem`: YAML parsed
and validated, robot built, parameter layout, every check) and kept by the process as the set's
template, and each later session is derived from it (`derive`): the template's configuration,
robot and layout with the session's own data files read, the Problem `load_problem` builds from
the same files. Problems whose assembly reads more of the data than its rows (frames with
`initial: auto`, guessed from the data) are always loaded in full.

A template's files are kept in a folder of the process (its robot's URDF is the source of every
derived unit's calibrated URDF), removed with it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from functools import cached_property
from pathlib import Path

from robocal.errors import RobocalError
from robocal.fleet.batch import structure_key
from robocal.problem import Problem, load_problem

TEMPLATES = 16  # sets of non-data files whose template problem a process keeps
_templates: OrderedDict[str, Problem] = OrderedDict()  # digest of the non-data files -> template, most recent last
_UNKNOWN = object()
_lock = threading.Lock()
_data_files: OrderedDict[tuple[str, str], frozenset[str] | None] = OrderedDict()  # (problem file, its SHA-256) -> its data files (None: not derivable)


def derivable(problem: Problem) -> bool:
    """Whether the problem is assembled from its data by reading them alone (module doc)."""
    return all(frame.initial != "auto" for frame in problem.config.frames.values())


def data_files(problem: Problem) -> frozenset[str] | None:
    """The problem's measurement data files relative to its folder; None where it is not derivable
    or a data file lies outside its folder."""
    folder = problem.path.parent.resolve()
    paths = [m.ctx.resolve(m.config.data).resolve() for m in problem.measurements]
    if not derivable(problem) or not all(folder in p.parents for p in paths):
        return None
    return frozenset(p.relative_to(folder).as_posix() for p in paths)


def _fresh(obj):
    """A shallow copy of `obj` without what it computed lazily: its cached properties and jitted methods."""
    mine = copy.copy(obj)
    for name in {name for klass in type(obj).__mro__ for name, attribute in vars(klass).items() if isinstance(attribute, cached_property)}:
        mine.__dict__.pop(name, None)
    mine.__dict__.pop("_jitted", None)
    return mine


def derive(template: Problem, path: Path) -> Problem:
    """The problem at `path`, whose files are the template's but for the measurement data: the
    template's parts, each measurement a copy reading its own data (measurements keep everything
    they read from the data in what `read_data` sets)."""
    unit = _fresh(template)
    unit.path, unit.measurements = path, []
    for measurement in template.measurements:
        mine = _fresh(measurement)
        mine.ctx = dataclasses.replace(measurement.ctx, problem_path=path)
        mine.read_data()
        unit.measurements.append(mine)
    return unit


def keep(cache: OrderedDict, key, value, size: int = TEMPLATES):
    """`value` as the most recent entry of the LRU `cache` of `size` entries (the service's worker
    threads share the caches)."""
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > size:
            cache.popitem(last=False)
    return value


def _adopt(digest: str, path: Path) -> Problem | None:
    """Load the session at `path` in full from a copy of its folder, which lives as long as the
    template's robot (its URDF is the source of the derived units' calibrated URDFs); None where
    the session does not load (a bad data file: the caller loads it in place, for the error)."""
    folder = Path(tempfile.mkdtemp(prefix="robocal-template-"))
    shutil.copytree(path.parent, folder, dirs_exist_ok=True)
    try:
        template = load_problem(folder / path.name)
    except RobocalError:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    structure_key(template)  # digested once here, kept by the units derived from it
    weakref.finalize(template.tree if template.tree is not None else template, shutil.rmtree, folder, True)
    return keep(_templates, digest, template)


def load_session(path: Path, files: dict[str, str]) -> Problem:
    """The problem of a materialized session: `path` its problem file, at the session's root,
    `files` every file of the session (relative path -> SHA-256). Derived from the process's
    template of its non-data files where there is one; else loaded in full, a copy kept as that
    template where it is derivable."""
    problem_key = (path.name, files.get(path.name, ""))
    if not problem_key[1]:
        return load_problem(path)
    data = _data_files.get(problem_key, _UNKNOWN)
    if data is _UNKNOWN:
        problem = load_problem(path)
        keep(_data_files, problem_key, data_files(problem), 4 * TEMPLATES)
        return problem
    keep(_data_files, problem_key, data, 4 * TEMPLATES)
    if not isinstance(data, frozenset):  # not derivable
        return load_problem(path)
    digest = hashlib.sha256("".join(f"{p}\0{h}\n" for p, h in sorted(files.items()) if p not in data).encode()).hexdigest()
    template = _templates.get(digest)
    template = keep(_templates, digest, template) if template is not None else _adopt(digest, path)
    return derive(template, path) if template is not None else load_problem(path)
