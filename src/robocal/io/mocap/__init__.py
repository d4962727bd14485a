"""Motion-capture files: C3D, OptiTrack Motive CSV and Vicon Nexus CSV, read into one
`MocapRecording` in SI units (see `recording`; `read` tells the format by content), and written back by the simulator so that the
whole ingestion path is exercised."""

from robocal.io.mocap.c3d import read_c3d, write_c3d
from robocal.io.mocap.optitrack import read_optitrack_csv, write_optitrack_csv
from robocal.io.mocap.read import read_mocap
from robocal.io.mocap.recording import BodyTrack, MarkerTrack, MocapRecording
from robocal.io.mocap.vicon import read_vicon_csv, write_vicon_csv

__all__ = [
    "BodyTrack",
    "MarkerTrack",
    "MocapRecording",
    "read_c3d",
    "read_mocap",
    "read_optitrack_csv",
    "read_vicon_csv",
    "write_c3d",
    "write_optitrack_csv",
    "write_vicon_csv",
]
