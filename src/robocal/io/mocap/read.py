"""Read a motion-capture file whichever system wrote it: the format is told by the content."""

from __future__ import annotations

from pathlib import Path

from robocal.errors import InputError
from robocal.io.mocap import c3d, optitrack, vicon
from robocal.io.mocap.recording import MocapRecording

SUPPORTED_FORMATS = "C3D (.c3d), OptiTrack Motive CSV export, Vicon Nexus CSV export"


def read_mocap(path: str | Path) -> MocapRecording:
    """Read a motion-capture file, its format told by content, not by name: the C3D signature
    (byte 2 is 0x50) -> C3D; a CSV whose first line starts with "Format Version" -> OptiTrack
    Motive export; a CSV whose first line is a Nexus section name ("Trajectories", "Segments",
    "Devices", ...) -> Vicon Nexus export. Anything else is an InputError naming the file and the
    supported formats."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError as exc:
        raise InputError(path, f"cannot read motion-capture file ({exc.strerror})") from None
    if c3d.is_c3d(head):
        return c3d.read_c3d(path)
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", errors="replace")
    if optitrack.is_optitrack(first):
        return optitrack.read_optitrack_csv(path)
    if vicon.is_vicon(first):
        return vicon.read_vicon_csv(path)
    raise InputError(path, f"not a supported motion-capture file (supported: {SUPPORTED_FORMATS})")
