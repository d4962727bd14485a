"""Motion-capture files: each writer's output read back equals the recording to the precision of
the file (C3D float32: 1e-6 relative; CSV: half a unit of the last written decimal), occlusions
survive as masks and reports, a body fitted to markers moves as the streamed body, and every
broken file is an InputError that names it (and its line for CSV)."""

from __future__ import annotations

import c3d
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robocal.errors import InputError
from robocal.io.mocap import (
    BodyTrack,
    MarkerTrack,
    MocapRecording,
    read_mocap,
    write_c3d,
    write_optitrack_csv,
    write_vicon_csv,
)

RATE = 100.0
N = 120
FIRST = 7  # frame index of the first frame: the first time is nonzero
# Marker layout in the body frame (m); a body origin away from the markers' centroid.
LAYOUT = np.array([[0.10, 0.00, 0.05], [-0.05, 0.08, 0.02], [-0.05, -0.08, 0.00], [0.02, 0.01, 0.12]])
BODY_GAP = slice(40, 43)
MARKER_GAPS = {"base:M1": slice(10, 13), "base:M2": slice(11, 14), "base:M3": slice(N - 2, N)}


def _truth() -> MocapRecording:
    """A body driving a circle with yaw (and a little roll and pitch), its four markers, gaps."""
    t = (FIRST + np.arange(N)) / RATE
    angle = 1.5 * t
    rotation = Rotation.from_euler("zyx", np.stack([angle + np.pi / 2, 0.05 * np.sin(3 * t), 0.03 * np.cos(2 * t)], axis=1))
    position = np.stack([1.2 + 0.8 * np.cos(angle), -0.3 + 0.8 * np.sin(angle), 0.25 + 0.01 * np.sin(5 * t)], axis=1)
    valid = np.ones(N, dtype=bool)
    valid[BODY_GAP] = False
    markers = {}
    for i, offset in enumerate(LAYOUT):
        name = f"base:M{i + 1}"
        seen = np.ones(N, dtype=bool)
        seen[MARKER_GAPS.get(name, slice(0))] = False
        markers[name] = MarkerTrack(position + rotation.apply(offset), seen)
    return MocapRecording(None, RATE, t, {"base": BodyTrack(position, rotation.as_quat(), valid)}, markers)


# writer, file name, position tolerance (m) = half the last decimal written, quaternion tolerance
FORMATS = {
    "c3d": (write_c3d, "take.c3d", None, None),  # float32: relative tolerance, markers only
    "optitrack": (write_optitrack_csv, "take.csv", 0.5e-9 + 1e-15, 2e-9),
    "vicon": (write_vicon_csv, "take.csv", 0.5e-9 + 1e-15, 1e-9),
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip(tmp_path, fmt):
    writer, name, atol, qtol = FORMATS[fmt]
    truth = _truth()
    writer(truth, tmp_path / name)
    rec = read_mocap(tmp_path / name)

    assert rec.source == tmp_path / name
    assert rec.rate == RATE
    np.testing.assert_allclose(rec.times, truth.times, rtol=0, atol=1e-12)
    assert list(rec.markers) == list(truth.markers)
    for key, marker in rec.markers.items():
        expected = truth.markers[key]
        np.testing.assert_array_equal(marker.valid, expected.valid)
        assert np.isnan(marker.positions[~marker.valid]).all()
        if atol is None:
            np.testing.assert_allclose(marker.positions[marker.valid], expected.positions[expected.valid], rtol=1e-6, atol=0)
        else:
            np.testing.assert_allclose(marker.positions[marker.valid], expected.positions[expected.valid], rtol=0, atol=atol)
    if fmt == "c3d":
        assert rec.bodies == {}
        expected_gaps = {k: v for k, v in truth.occlusions().items() if k != "base"}
    else:
        body, expected = rec.bodies["base"], truth.bodies["base"]
        np.testing.assert_array_equal(body.valid, expected.valid)
        np.testing.assert_allclose(body.positions[body.valid], expected.positions[expected.valid], rtol=0, atol=atol)
        q, q0 = body.quaternions[body.valid], expected.quaternions[expected.valid]
        q = q * np.sign(np.sum(q * q0, axis=1))[:, None]  # q and -q are the same rotation
        np.testing.assert_allclose(q, q0, rtol=0, atol=qtol)
        np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1, rtol=0, atol=1e-12)
        expected_gaps = truth.occlusions()
    gaps = rec.occlusions()
    assert gaps.keys() == expected_gaps.keys()
    for key, gap in gaps.items():
        assert gap["frames"] == expected_gaps[key]["frames"]
        np.testing.assert_allclose(gap["ranges"], expected_gaps[key]["ranges"], rtol=0, atol=1e-12)


def test_occlusion_report():
    gaps = _truth().occlusions()
    assert gaps["base"] == {"frames": 3, "ranges": [pytest.approx((0.47, 0.49))]}
    assert gaps["base:M3"]["ranges"] == [pytest.approx(((FIRST + N - 2) / RATE, (FIRST + N - 1) / RATE))]
    assert "base:M4" not in gaps


def _relative_motions(positions, rotations, frames):
    """World-frame motion T_j T_i^-1 between consecutive listed frames: a constant offset of the
    body frame (T -> T C) leaves it unchanged."""
    i, j = frames[:-1], frames[1:]
    r = rotations[j] @ rotations[i].transpose(0, 2, 1)
    return r, positions[j] - np.einsum("fab,fb->fa", r, positions[i])


@pytest.mark.parametrize("through_file", [False, True])
def test_body_pose_from_markers(tmp_path, through_file):
    truth = _truth()
    rec = truth
    if through_file:
        write_optitrack_csv(truth, tmp_path / "take.csv")
        rec = read_mocap(tmp_path / "take.csv")
    p_true, r_true, v_true = truth.body_pose("base")
    p_fit, r_fit, v_fit = rec.body_pose("fitted", list(truth.markers))

    fewer_than_3 = np.zeros(N, dtype=bool)
    fewer_than_3[11:13] = True  # M1 and M2 are both occluded there
    np.testing.assert_array_equal(v_fit, ~fewer_than_3)
    assert np.isnan(p_fit[~v_fit]).all() and np.isnan(r_fit[~v_fit]).all()
    # The body frame of the fit: origin at the markers' centroid, axes of the first frame.
    np.testing.assert_allclose(r_fit[0], np.eye(3), atol=1e-12)
    centroid = np.mean([m.positions[0] for m in truth.markers.values()], axis=0)
    np.testing.assert_allclose(p_fit[0], centroid, rtol=0, atol=1e-9)

    both = np.flatnonzero(v_true & v_fit)
    tol = 1e-6 if through_file else 1e-12
    for fitted, true in zip(_relative_motions(p_fit, r_fit, both), _relative_motions(p_true, r_true, both)):
        np.testing.assert_allclose(fitted, true, rtol=0, atol=tol)
    # Equivalently: the offset between the streamed and the fitted frame is constant.
    offsets = np.einsum("fba,fbc->fac", r_true[both], r_fit[both])
    np.testing.assert_allclose(offsets, np.broadcast_to(offsets[0], offsets.shape), atol=tol)


def test_body_pose_of_a_streamed_body():
    truth = _truth()
    positions, rotations, valid = truth.body_pose("base")
    body = truth.bodies["base"]
    np.testing.assert_array_equal(valid, body.valid)
    np.testing.assert_allclose(rotations[valid], Rotation.from_quat(body.quaternions[valid]).as_matrix(), atol=1e-15)
    np.testing.assert_array_equal(positions[valid], body.positions[valid])
    assert np.isnan(rotations[~valid]).all()


def test_body_pose_errors_name_the_file(tmp_path):
    path = tmp_path / "take.csv"
    write_vicon_csv(_truth(), path)
    rec = read_mocap(path)
    with pytest.raises(InputError, match="bodies: base; markers: base:M1, base:M2") as err:
        rec.body_pose("robot")
    assert str(path) in str(err.value)
    with pytest.raises(InputError, match="unknown marker.*'nope'") as err:
        rec.body_pose("robot", ["base:M1", "base:M2", "nope"])
    assert str(path) in str(err.value)
    line = MocapRecording(
        path, RATE, rec.times, {}, {f"m{i}": MarkerTrack(np.outer(np.ones(N), [i * 0.1, 0.0, 0.0]), np.ones(N, dtype=bool)) for i in range(3)}
    )
    with pytest.raises(InputError, match="collinear"):
        line.body_pose("robot", ["m0", "m1", "m2"])


# ---- broken files -----------------------------------------------------------------------------


def test_truncated_c3d(tmp_path):
    path = tmp_path / "take.c3d"
    write_c3d(_truth(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="truncated C3D file: the header announces 120 frames") as err:
        read_mocap(path)
    assert str(path) in str(err.value)
    path.write_bytes(data[:300])  # inside the header block
    with pytest.raises(InputError, match="not a readable C3D file") as err:
        read_mocap(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("writer", [write_optitrack_csv, write_vicon_csv])
def test_csv_with_a_broken_cell(tmp_path, writer):
    path = tmp_path / "take.csv"
    writer(_truth(), path)
    lines = path.read_text().splitlines()
    broken = len(lines) - 30  # a data row of the last section
    cells = lines[broken].split(",")
    cells[3] = "1.2.3"
    lines[broken] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"line {broken + 1}, column '.*': '1\.2\.3' is not a number \(column 4\)") as err:
        read_mocap(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("writer", [write_optitrack_csv, write_vicon_csv])
def test_csv_with_a_short_row(tmp_path, writer):
    path = tmp_path / "take.csv"
    writer(_truth(), path)
    lines = path.read_text().splitlines()
    lines[-5] = lines[-5].rsplit(",", 2)[0]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=f"line {len(lines) - 4}: expected .* fields as in the header") as err:
        read_mocap(path)
    assert str(path) in str(err.value)


def test_csv_with_a_partly_empty_sample(tmp_path):
    path = tmp_path / "take.csv"
    write_optitrack_csv(_truth(), path)
    lines = path.read_text().splitlines()
    cells = lines[20].split(",")
    cells[5] = ""  # the W of the body's quaternion, the rest of the sample present
    lines[20] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 21, column 'base Rotation W': empty cell in a partly filled sample"):
        read_mocap(path)


def test_unsupported_file(tmp_path):
    path = tmp_path / "take.txt"
    path.write_text("time,x,y,z\n0,1,2,3\n")
    with pytest.raises(InputError, match="not a supported motion-capture file .*C3D.*OptiTrack.*Vicon") as err:
        read_mocap(path)
    assert str(path) in str(err.value)
    with pytest.raises(InputError, match="cannot read"):
        read_mocap(tmp_path / "missing.c3d")


# ---- conventions of files the systems write ---------------------------------------------------

MOTIVE = """\
Format Version,1.23,Take Name,Take 2024-05-02 10.11.12 AM,Take Notes,,Capture Frame Rate,120.000000,Export Frame Rate,120.000000,Capture Start Time,2024-05-02 10.11.12.345 AM,Capture Start Frame,1000,Total Frames in Take,3,Total Exported Frames,3,Rotation Type,Quaternion,Length Units,Millimeters,Coordinate Space,Global

,Type,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body,Rigid Body Marker,Rigid Body Marker,Rigid Body Marker,Rigid Body Marker,Marker,Marker,Marker,Marker
,Name,base,base,base,base,base,base,base,base,base:Marker1,base:Marker1,base:Marker1,base:Marker1,base:Marker1,base:Marker1,base:Marker1,base:Marker1
,ID,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1
,,Rotation,Rotation,Rotation,Rotation,Position,Position,Position,Mean Marker Error,Position,Position,Position,Marker Quality,Position,Position,Position,Marker Quality
Frame,Time (Seconds),X,Y,Z,W,X,Y,Z,,X,Y,Z,,X,Y,Z,
0,0.000000,0.000000,0.000000,0.382683,0.923880,1000.000000,-250.500000,80.000000,0.000213,1010.0,-250.0,90.0,1.0,1010.100000,-250.200000,90.300000,0.998
1,0.008333,,,,,,,,,,,,,,,,
2,0.016667,0.000000,0.000000,0.707107,0.707107,1001.000000,-249.500000,80.000000,0.000198,1011.0,-249.0,90.0,1.0,1011.100000,-249.200000,90.300000,0.997
"""


def test_motive_export_conventions(tmp_path):
    path = tmp_path / "motive.csv"
    path.write_text(MOTIVE.replace("\n", "\r\n"))  # Motive writes on Windows
    rec = read_mocap(path)
    assert rec.rate == 120.0
    np.testing.assert_allclose(rec.times, [0.0, 0.008333, 0.016667])
    assert list(rec.bodies) == ["base"]  # the expected ("Rigid Body Marker") positions are not markers
    assert list(rec.markers) == ["base:Marker1"]
    body = rec.bodies["base"]
    np.testing.assert_array_equal(body.valid, [True, False, True])
    np.testing.assert_allclose(body.positions[[0, 2]], [[1.0, -0.2505, 0.08], [1.001, -0.2495, 0.08]], atol=1e-12)
    yaw = Rotation.from_quat(body.quaternions[[0, 2]]).as_euler("zyx")[:, 0]
    np.testing.assert_allclose(yaw, [np.pi / 4, np.pi / 2], atol=2e-6)  # 6 decimals
    np.testing.assert_allclose(rec.markers["base:Marker1"].positions[0], [1.0101, -0.2502, 0.0903], atol=1e-12)
    assert rec.occlusions() == {"base": {"frames": 1, "ranges": [(0.008333, 0.008333)]}, "base:Marker1": {"frames": 1, "ranges": [(0.008333, 0.008333)]}}


def test_motive_euler_export_is_refused(tmp_path):
    path = tmp_path / "motive.csv"
    path.write_text(MOTIVE.replace("Rotation Type,Quaternion", "Rotation Type,XYZ"))
    with pytest.raises(InputError, match="line 1: rotation type 'XYZ' is not supported"):
        read_mocap(path)


NEXUS = """\
Devices
1000
,,Force Plate 1 - Force,,
Frame,Sub Frame,Fx,Fy,Fz
,,N,N,N
1,0,0.1,0.2,700.0
1,1,0.1,0.2,701.0

Trajectories
100
,,robot:LFWD,,,robot:RBACK,,
Frame,Sub Frame,X,Y,Z,X,Y,Z
,,mm,mm,mm,mm,mm,mm
1,0,1200.5,-300.25,250.125,1000.0,-400.0,250.0
2,0,1201.5,-299.25,250.125,,,
3,0,1202.5,-298.25,250.125,1002.0,-398.0,250.0
"""


def test_nexus_export_conventions(tmp_path):
    path = tmp_path / "nexus.csv"
    path.write_text(NEXUS)
    rec = read_mocap(path)
    assert rec.rate == 100.0 and rec.bodies == {}
    np.testing.assert_allclose(rec.times, [0.0, 0.01, 0.02])  # frame 1 is t = 0
    np.testing.assert_allclose(rec.markers["robot:LFWD"].positions[2], [1.2025, -0.29825, 0.250125], atol=1e-15)
    np.testing.assert_array_equal(rec.markers["robot:RBACK"].valid, [True, False, True])


def test_nexus_segments_in_radians(tmp_path):
    path = tmp_path / "nexus.csv"
    path.write_text("Segments\n50\n,,robot:base,,,,,\nFrame,Sub Frame,RX,RY,RZ,TX,TY,TZ\n,,rad,rad,rad,m,m,m\n11,0,0,0,1.5,1.0,2.0,0.3\n")
    rec = read_mocap(path)
    np.testing.assert_allclose(rec.times, [0.2])
    np.testing.assert_allclose(Rotation.from_quat(rec.bodies["robot:base"].quaternions).as_rotvec(), [[0, 0, 1.5]], atol=1e-15)
    np.testing.assert_allclose(rec.bodies["robot:base"].positions, [[1.0, 2.0, 0.3]])


def test_c3d_in_metres_from_frame_11(tmp_path):
    """A C3D written by another program: POINT:UNITS m, first frame 11, a negative residual."""
    writer = c3d.Writer(point_rate=200.0, point_units="m   ")
    writer.set_point_labels(["LFWD", ""])
    writer.set_start_frame(11)
    for k in range(4):
        points = np.array([[1.0 + k, 2.0, 0.5, 1.0, 3.0], [0.25, 0.5, 0.75, 1.0 if k != 2 else -1.0, 3.0]], dtype=np.float32)
        writer.add_frames([(points, np.zeros((0, 0)))])
    path = tmp_path / "other.c3d"
    with path.open("wb") as handle, pytest.warns(UserWarning):
        writer.write(handle)
    rec = read_mocap(path)
    np.testing.assert_allclose(rec.times, (10 + np.arange(4)) / 200.0)
    assert list(rec.markers) == ["LFWD", "#2"]  # a blank label is named by its index
    np.testing.assert_allclose(rec.markers["LFWD"].positions[:, 0], [1, 2, 3, 4])
    np.testing.assert_array_equal(rec.markers["#2"].valid, [True, True, False, True])
    assert rec.occlusions() == {"#2": {"frames": 1, "ranges": [(0.06, 0.06)]}}
