"""`robocal convert`: a URDF (or a DH table) as a DH table in either convention, a DH table as a URDF."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from robocal.errors import RobocalError
from robocal.terminal import out

DH_SUFFIXES = (".yaml", ".yml")
URDF_SUFFIXES = (".urdf", ".xml")
# A written model must reproduce its source to this (m for positions, unit entries for rotations);
# conversions are exact up to float64 rounding (about 1e-15), so a larger difference is a bug.
AGREEMENT = 1e-10


def convert(
    source: Annotated[Path, typer.Argument(help="a URDF (.urdf, .xml) or a DH table (.yaml, .yml)")],
    out_file: Annotated[Path, typer.Option("--out", help="a new file: a DH table (.yaml, .yml) or a URDF (.urdf, .xml)")],
    convention: Annotated[str | None, typer.Option("--convention", help="of the DH table written: modified (default) or standard")] = None,
) -> None:
    """A URDF chain or tree as a DH table (docs/formats.md section 3), or a DH table as a URDF, with
    the forward kinematics of every link unchanged (checked to 1e-10 before the file is written).
    Where two axes have no exact DH row between them, a fixed transform (a chain base) joins them;
    links whose frame is no DH frame are kept as fixed frames, by name."""
    if out_file.exists():
        raise RobocalError(f"{out_file}: exists; give a new file name (robocal convert never overwrites a file)")
    if out_file.suffix not in DH_SUFFIXES + URDF_SUFFIXES:
        raise RobocalError(f"--out {out_file}: give a .yaml or .yml file for a DH table, or a .urdf or .xml file for a URDF")
    to_dh = out_file.suffix in DH_SUFFIXES
    if convention is not None and (not to_dh or convention not in ("modified", "standard")):
        raise RobocalError(f"--convention {convention}: " + ("one of modified, standard" if to_dh else "only a DH table (.yaml) has a convention"))
    if not to_dh and source.suffix not in DH_SUFFIXES:
        raise RobocalError(f"{source}: already a URDF; convert a URDF to a DH table (--out NAME.yaml) or a DH table to a URDF")

    from robocal.kinematics.load import load_robot

    tree = load_robot(source)
    partial = out_file.with_name(f".{out_file.name}.partial")
    out_file.parent.mkdir(parents=True, exist_ok=True)
    try:
        summary = _write_dh(tree, source, partial, convention or "modified") if to_dh else _write_urdf(tree, partial)
        if out_file.exists():
            raise RobocalError(f"{out_file}: appeared while converting; not overwritten")
        partial.replace(out_file)
    finally:
        partial.unlink(missing_ok=True)
    out.print(f"wrote {out_file}: {summary}", markup=False, highlight=False, soft_wrap=True)


def _write_dh(tree, source: Path, target: Path, convention) -> str:
    from robocal.kinematics.convert import dh_text, tree_to_dh
    from robocal.kinematics.dh import load_dh

    conversion = tree_to_dh(tree, convention)
    comment = (
        f"{tree.name} as a {convention}-DH table, converted by robocal from {source.name} (robocal convert).\n"
        "Every link of the source keeps its name and its pose at every joint configuration."
    )
    target.write_text(dh_text(conversion.table, comment), encoding="utf-8")
    _check(tree, load_dh(target))
    chains = conversion.table["chains"]
    rows = sum(len(c["joints"]) for c in chains)
    lines = [f"{convention}-DH table, {rows} rows in {sum(1 for c in chains if c['joints'])} chains"]
    lines.append(f"links on DH frames: {', '.join(conversion.coincide) or 'none'}")
    if conversion.fixed:
        lines.append(f"links kept as fixed frames (chains without rows): {', '.join(conversion.fixed)}")
    return "\n".join(lines + list(conversion.notes))


def _write_urdf(tree, target: Path) -> str:
    from robocal.kinematics.convert import urdf_tree
    from robocal.kinematics.urdf import load_urdf, write_urdf

    write_urdf(urdf_tree(tree), target)
    _check(tree, load_urdf(target))
    note = "\nthe `fixed` DH entries are not carried over (a URDF has no such field)" if any(j.origin.fixed for j in tree.joints) else ""
    return f"URDF of {len(tree.links)} links, {sum(j.moves for j in tree.joints)} moving joints{note}"


def _check(tree, written) -> None:
    """The written model against its source: every link of the source, the same pose."""
    from robocal.kinematics.convert import table_difference

    missing = sorted(set(tree.links) - set(written.links))
    position, rotation = table_difference(tree, written)
    if missing or position > AGREEMENT or rotation > AGREEMENT:  # pragma: no cover (a bug, reported as one)
        raise RuntimeError(f"conversion not exact: links missing {missing}, position {position:.3g} m, rotation {rotation:.3g}")
