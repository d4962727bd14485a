"""Carry a learned-grasp dataset to a machine that takes little: the lent GPU machine takes a
working tree of 64 MiB, and a shard holds 57 KB of an object (voxels as bytes, samples as
float64). `pack` writes the first COUNT shards of each split as one npz per split, voxels as
bits and samples as float32 (about 30 KB an object); `unpack` writes them back as shards of a
dataset folder (float64, the same voxels; the manifest copied), for `robocal grasp train --data`
beside a folder made there (docs/grasp.md, "The third lease").

    python examples/learned_grasp/carry.py pack out/cpu/data1 out/carry --count 1000,60,0
    python examples/learned_grasp/carry.py unpack out/carry /tmp/carried
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np

from robocal.grasp.learned.dataset import MANIFEST, SPLITS, read_shard, write_shard

FLOATS = ("q_grasp", "q_init", "wrench", "wrench_cmd", "q_d", "tau_m", "tau_cmd")


def pack(source: Path, target: Path, counts: dict[str, int]) -> None:
    """The first counts[split] shards of each split of `source` into `target`/<split>.npz."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / MANIFEST, target / MANIFEST)
    for split, count in counts.items():
        if count == 0:
            continue
        packed = {}
        for path in sorted((source / split).glob("[0-9]*.npz"))[:count]:
            shard = read_shard(path)
            packed[f"{path.stem}/voxels"] = np.packbits(shard["voxels"].astype(bool), axis=-1)
            packed.update({f"{path.stem}/{key}": shard[key].astype(np.float32) for key in FLOATS})
            packed.update({f"{path.stem}/{key}": shard[key] for key in ("kind", "grasp", "rejected")})
        np.savez_compressed(target / f"{split}.npz", **packed)


def unpack(source: Path, target: Path) -> int:
    """Shards of a dataset folder `target` from `pack`'s files in `source`; returns how many."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.npz"), dirs_exist_ok=True)
    made = 0
    for split in SPLITS:
        if not (source / f"{split}.npz").exists():
            continue
        with np.load(source / f"{split}.npz") as packed:
            for stem in sorted({key.split("/")[0] for key in packed.files}):
                shard = {key: packed[f"{stem}/{key}"] for key in ("kind", "grasp", "rejected")}
                shard.update({key: packed[f"{stem}/{key}"].astype(np.float64) for key in FLOATS})
                bits = packed[f"{stem}/voxels"]  # (K, G, G, G / 8 rounded up)
                shard["voxels"] = np.unpackbits(bits, axis=-1, count=bits.shape[1])
                write_shard(target, split, int(stem), shard)
                made += 1
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("pack", help="a dataset folder into one npz per split")
    packing.add_argument("source", type=Path)
    packing.add_argument("target", type=Path)
    packing.add_argument("--count", default="1000,60,0", help="shards of train, val and test (comma-separated)")
    unpacking = verbs.add_parser("unpack", help="pack's files into a dataset folder")
    unpacking.add_argument("source", type=Path)
    unpacking.add_argument("target", type=Path)
    args = parser.parse_args()
    if args.verb == "pack":
        pack(args.source, args.target, dict(zip(SPLITS, (int(c) for c in args.count.split(",")))))
        print(f"packed into {args.target}: {sum(f.stat().st_size for f in args.target.iterdir()) / 1e6:.1f} MB")
    else:
        print(f"{unpack(args.source, args.target)} shards in {args.target}")


if __name__ == "__main__":
    main()
