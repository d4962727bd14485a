"""The learned controller's training data on disk: one npz shard per procedural object.

`generate(config, out)` draws `objects` procedural objects (`procedural.procedural_object`,
split by object into train / val / test), and per object, in worker processes: grasps
(`grasps.generate_grasps`, `power` + `precision` successful ones at most), per settled grasp the
observation (`observation.observe`) and the teacher's samples (`teacher.grasp_samples`). Shard
`<split>/<object index>.npz` holds, for its K grasps and S samples (L joints, grid G):

    voxels (K, G, G, G) uint8, q_grasp (K, L), q_init (K, L), kind (K,) str,
    grasp (S,) int (row in the K arrays), wrench (S, 6), wrench_cmd (S, 6), q_d (S, L),
    tau_m (S, L), tau_cmd (S, L), rejected () int

Every draw comes from a seed sequence keyed by (seed, object index), so the shards do not
depend on the number of workers. A shard is written aside and renamed into place, so a killed
run leaves whole shards only; running again with the same configuration (`manifest.json`)
makes only the missing ones. An object without any settled grasp still gets a shard (K = 0).
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from robocal.errors import InputError, RobocalError
from robocal.grasp.learned.observation import ObservationConfig
from robocal.validation import Seed, load_json_model

MANIFEST = "manifest.json"
SPLITS = ("train", "val", "test")
SHARD_KEYS = ("voxels", "q_grasp", "q_init", "kind", "grasp", "wrench", "wrench_cmd", "q_d", "tau_m", "tau_cmd", "rejected")


class DatasetConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: Seed = 0
    objects: int = Field(1000, ge=3)  # procedural objects (split 80 / 10 / 10 by object)
    power: int = Field(2, ge=0)  # successful power grasps per object at most
    precision: int = Field(2, ge=0)  # successful precision grasps per object at most
    samples: int = Field(40, ge=1)  # teacher samples per grasp (paper: 40)
    grid: int = Field(48, ge=8, le=128)  # voxels per side
    side: float = Field(0.24, gt=0.0, le=1.0)  # m, edge of the voxel cube
    family: int = 2  # version of the procedural family (2: six kinds, one generator per object); a folder of another is refused

    def observation(self) -> ObservationConfig:
        return ObservationConfig(grid=self.grid, side=self.side)


def shard_path(out: Path, split: str, index: int) -> Path:
    return Path(out) / split / f"{index:05d}.npz"


def make_shard(config: DatasetConfig, out: Path, job: tuple[str, int]) -> int:
    """Write one object's shard (module docstring); returns its number of samples."""
    from robocal.grasp.grasps import generate_grasps
    from robocal.grasp.hand import default_hand
    from robocal.grasp.learned.observation import observe
    from robocal.grasp.learned.procedural import procedural_object
    from robocal.grasp.learned.teacher import grasp_samples
    from robocal.grasp.simulation import situation

    split, index = job
    hand, obj = default_hand(), procedural_object(config.seed, index)
    sequence = np.random.SeedSequence([config.seed, index])
    grasp_seed, sample_seed = (int(s.generate_state(1)[0]) for s in sequence.spawn(2))
    rng = np.random.default_rng(sample_seed)
    attempts = generate_grasps(
        hand, obj, seed=grasp_seed, n_power=config.power, n_precision=config.precision, until_ok=True, max_attempts=2 * max(config.power, config.precision, 1)
    )
    per_grasp, sample_rows = [], []
    for grasp in (g for g in attempts if g.ok):
        try:
            samples = grasp_samples(situation(hand, obj, grasp), obj, rng, config.samples)
        except RobocalError:  # no sampled wrench held: the grasp gives no samples
            continue
        per_grasp.append((observe(hand, obj, grasp.object_pose, config.observation()), grasp))
        sample_rows.append(samples)
    L, G = len(hand.joints), config.grid
    arrays = {
        "voxels": np.array([v for v, _ in per_grasp], dtype=np.uint8).reshape(-1, G, G, G),
        "q_grasp": np.array([g.q_grasp for _, g in per_grasp]).reshape(-1, L),
        "q_init": np.array([g.q_init for _, g in per_grasp]).reshape(-1, L),
        "kind": np.array([g.kind for _, g in per_grasp], dtype=str),
        "grasp": np.concatenate([np.full(len(s.wrench), k) for k, s in enumerate(sample_rows)] or [np.zeros(0, dtype=int)]).astype(int),
        "rejected": np.array(sum(s.rejected for s in sample_rows)),
    }
    for key, width in (("wrench", 6), ("wrench_cmd", 6), ("q_d", L), ("tau_m", L), ("tau_cmd", L)):
        arrays[key] = np.concatenate([getattr(s, key) for s in sample_rows] or [np.zeros((0, width))])
    write_shard(out, split, index, arrays)
    return len(arrays["grasp"])


def write_shard(out: Path, split: str, index: int, arrays: dict[str, np.ndarray]) -> None:
    """One shard's arrays (module docstring) written aside and renamed into place."""
    target = shard_path(out, split, index)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial_file = target.with_name(f".{target.stem}.partial.npz")
    np.savez_compressed(partial_file, **arrays)  # type: ignore[arg-type]  # numpy stubs: **arrays might also fill allow_pickle: bool
    os.replace(partial_file, target)


def jobs(config: DatasetConfig) -> list[tuple[str, int]]:
    """(split, object index) of every shard, in object order."""
    from robocal.grasp.learned.procedural import split_indices

    parts = split_indices(config.objects, config.seed)
    return sorted(((name, index) for name in SPLITS for index in parts[name]), key=lambda job: job[1])


def read_manifest(out: Path) -> DatasetConfig:
    """The configuration a dataset folder was made with."""
    return load_json_model(Path(out) / MANIFEST, DatasetConfig)


def read_manifests(folders: Sequence[Path]) -> list[DatasetConfig]:
    """The configurations of dataset folders trained on together: one observation (grid and side:
    the networks see one) and other objects (a folder of the same seed and family as another
    holds the same objects); else an InputError naming the manifest."""
    found: list[DatasetConfig] = []
    for folder in folders:
        config, manifest = read_manifest(folder), Path(folder) / MANIFEST
        if found and config.observation() != found[0].observation():
            first = found[0]
            raise InputError(
                manifest,
                f"grid {config.grid}, side {config.side} m, where {Path(folders[0]) / MANIFEST} has grid {first.grid}, side {first.side} m: "
                "the networks see one observation",
            )
        twin = next((Path(f) for f, c in zip(folders, found) if (c.seed, c.family) == (config.seed, config.family)), None)
        if twin is not None:
            raise InputError(manifest, f"the same objects as {twin} (seed {config.seed}): give dataset folders of different seeds")
        found.append(config)
    return found


def _check_manifest(config: DatasetConfig, out: Path) -> None:
    manifest = Path(out) / MANIFEST
    if manifest.exists():
        found = read_manifest(out)
        if found != config:
            raise InputError(manifest, f"the folder holds a dataset of another configuration {found.model_dump()}; give a new --out or the same options")
    else:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(config.model_dump(), indent=1))


def generate(config: DatasetConfig, out: Path, workers: int = 1, progress: Callable[[int, int], None] | None = None) -> dict:
    """Write every missing shard of `config` under `out` (module docstring); returns counts."""
    from robocal.workers import worker_pool

    _check_manifest(config, out)
    todo = [job for job in jobs(config) if not shard_path(out, *job).exists()]
    report = progress or (lambda done, total: None)
    samples = 0
    with worker_pool(workers) as pool:
        for done, n in enumerate(pool.map(partial(make_shard, config, Path(out)), todo), 1):
            samples += n
            report(done, len(todo))
    return {"shards": len(jobs(config)), "made": len(todo), "samples_made": samples}


def read_shard(path: Path) -> dict[str, np.ndarray]:
    """One shard's arrays (module docstring); a file that is not a whole shard is an InputError
    that says how to remake it."""
    remake = "delete it and run `robocal grasp dataset` again with the same options to remake it"
    try:
        with np.load(path) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise InputError(path, f"not a whole shard ({type(exc).__name__}: {exc}); {remake}") from None
    missing = [key for key in SHARD_KEYS if key not in arrays]
    if missing:
        raise InputError(path, f"not a shard of this robocal ({', '.join(missing)} missing); {remake}")
    voxels, q_grasp = arrays["voxels"], arrays["q_grasp"]
    K, S = len(voxels), len(arrays["grasp"])
    G, L = voxels.shape[-1], q_grasp.shape[-1]
    shapes = {"voxels": (K, G, G, G), "q_grasp": (K, L), "q_init": (K, L), "kind": (K,), "grasp": (S,), "rejected": ()}
    shapes.update({"wrench": (S, 6), "wrench_cmd": (S, 6), "q_d": (S, L), "tau_m": (S, L), "tau_cmd": (S, L)})
    for key, shape in shapes.items():
        if arrays[key].shape != shape:
            raise InputError(path, f"shape {arrays[key].shape} where the shard's other arrays give {shape}; {remake}", field=key)
        if arrays[key].dtype.kind == "f" and not np.isfinite(arrays[key]).all():
            raise InputError(path, f"values that are not finite; {remake}", field=key)
    if S and not (arrays["grasp"].dtype.kind in "iu" and 0 <= arrays["grasp"].min() and arrays["grasp"].max() < K):
        raise InputError(path, f"grasp rows must be integers in [0, {K}); {remake}", field="grasp")
    return arrays


def load(folders: Path | Sequence[Path], split: str) -> dict[str, np.ndarray]:
    """Every shard of one split of a dataset folder, or of several (`read_manifests`),
    concatenated: the per-grasp arrays stacked and `grasp` renumbered into them (keys as in the
    module docstring). Shards of another grid or number of joints than the split's first are
    refused."""
    folders = [Path(folders)] if isinstance(folders, (str, Path)) else [Path(f) for f in folders]
    files = [f for folder in folders for f in sorted((folder / split).glob("[0-9]*.npz"))]
    if not files:
        raise InputError(folders[0] / split, "no shards (run `robocal grasp dataset` first)")
    parts = [read_shard(f) for f in files]
    for f, p in zip(files, parts):
        if (p["voxels"].shape[-1], p["q_grasp"].shape[-1]) != (parts[0]["voxels"].shape[-1], parts[0]["q_grasp"].shape[-1]):
            raise InputError(
                f,
                f"grid {p['voxels'].shape[-1]} and {p['q_grasp'].shape[-1]} joints; {files[0].name} has {parts[0]['voxels'].shape[-1]} and {parts[0]['q_grasp'].shape[-1]}",
            )
    offsets = np.cumsum([0] + [len(p["q_init"]) for p in parts[:-1]])
    merged = {key: np.concatenate([p[key] for p in parts]) for key in parts[0] if key not in ("grasp", "rejected")}
    merged["grasp"] = np.concatenate([p["grasp"] + o for p, o in zip(parts, offsets)])
    return merged
