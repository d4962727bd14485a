"""The mobile-base simulator, checked through the files it writes, read back with the project's
own readers (read_mocap, read_robot_log, read_intervals) and independent references: the drive
model of `robocal.mobile.drive` (its loop `integrate`, its `increment`), the timesync and
motion-center methods, and the truth in truth.json.

One simulation (seed 0, the default plan, ~2.7 min of motion) serves every test; the command
line writes a second one with the same seed, which must be byte-identical.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from typer.testing import CliRunner

from robocal.cli import app
from robocal.errors import RobocalError
from robocal.io.intervals import read_intervals
from robocal.io.mocap import read_mocap
from robocal.io.robotlog import read_robot_log
from robocal.mobile.drive import DriveParameters, increment, integrate
from robocal.mobile.motion_center import motion_center, planar
from robocal.mobile.se2 import compose, conjugate, inverse, wrap
from robocal.mobile.timesync import estimate_offset, yaw_rate
from robocal.simulation.base import Segment, Trajectory, simulate_base

MOCAP_FILES = ("mocap.c3d", "mocap_optitrack.csv", "mocap_vicon.csv")
LOG_FILES = ("robot.mcap", "robot_bag", "robot.bag")
FRAME = 0.01  # s, one mocap frame
WHEELS = ("wheel_left_joint", "wheel_right_joint")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    out = tmp_path_factory.mktemp("base")
    result = simulate_base(out, seed=0)
    return out, result


@pytest.fixture(scope="module")
def truth(sim):
    return json.loads((sim[0] / "truth.json").read_text())


@pytest.fixture(scope="module")
def mocap(sim):
    return {name: read_mocap(sim[0] / name) for name in MOCAP_FILES}


@pytest.fixture(scope="module")
def logs(sim):
    return {name: read_robot_log(sim[0] / name) for name in LOG_FILES}


def drive(parameters: dict) -> DriveParameters:
    return DriveParameters(parameters["wheel_radius_left"], parameters["wheel_radius_right"], parameters["wheelbase"])


def body_planar(recording, markers_only: bool) -> np.ndarray:
    """Planar poses of the body 'base': streamed, or fitted to its markers (C3D has no bodies)."""
    names = [n for n in recording.markers if n.startswith("base_")] if markers_only else None
    positions, rotations, valid = recording.body_pose("base", names)
    quaternions = np.full((len(valid), 4), np.nan)
    quaternions[valid] = Rotation.from_matrix(rotations[valid]).as_quat()
    return planar(positions, quaternions, valid)


def test_every_file_is_written_and_recorded_in_truth(sim, truth):
    out, result = sim
    assert sorted(p.name for p in out.iterdir()) == sorted([*MOCAP_FILES, *LOG_FILES, "laser_intervals.csv", "segments.json", "truth.json"])
    assert [p.name for p in result["files"]] == [*MOCAP_FILES, *LOG_FILES, "laser_intervals.csv", "segments.json", "truth.json"]
    for name in ("wheel_radius_left", "wheel_radius_right", "wheelbase", "sensor_x", "sensor_y", "sensor_yaw", "markers_x", "markers_y", "markers_yaw"):
        assert name in truth["true"] and name in truth["nominal"]
    true, nominal = truth["true"], truth["nominal"]
    for name in ("wheel_radius_left", "wheel_radius_right"):
        assert 0.005 <= abs(true[name] / nominal[name] - 1) <= 0.01
    assert abs(true["wheelbase"] / nominal["wheelbase"] - 1) == pytest.approx(0.01)
    assert true["clock_offset"] == 0.237
    assert truth["noise"]["marker"] == 2e-4 and truth["rates"] == {"joint_states": 50.0, "odometry": 50.0, "mocap": 100.0}


def test_mocap_files_agree_and_show_occlusions(mocap, truth):
    """Same frames and markers in all three formats (C3D: float32 mm, < 1 um); the body in the
    two CSVs; occluded frames NaN and invalid."""
    c3d, opti, vicon = (mocap[name] for name in MOCAP_FILES)
    assert opti.rate == vicon.rate == c3d.rate == truth["rates"]["mocap"]
    np.testing.assert_allclose(c3d.times, opti.times, atol=1e-9)
    np.testing.assert_allclose(vicon.times, opti.times, atol=1e-9)
    assert opti.times[0] == 0.0 and opti.times[-1] > 160.0
    assert list(c3d.markers) == list(opti.markers) == list(vicon.markers) == list(truth["marker_layout"])
    assert c3d.bodies == {} and list(opti.bodies) == list(vicon.bodies) == ["base"]
    for name, track in opti.markers.items():
        for other in (c3d, vicon):
            np.testing.assert_array_equal(other.markers[name].valid, track.valid)
            np.testing.assert_allclose(other.markers[name].positions[track.valid], track.positions[track.valid], atol=1e-6)
        assert 0 < (~track.valid).sum() < 0.05 * len(track.valid)
        assert np.isnan(track.positions[~track.valid]).all()
    body = opti.bodies["base"]
    np.testing.assert_array_equal(vicon.bodies["base"].valid, body.valid)
    np.testing.assert_allclose(vicon.bodies["base"].positions[body.valid], body.positions[body.valid], atol=1e-8)
    assert 20 <= (~body.valid).sum() <= 80  # four bursts of 5 to 20 frames
    np.testing.assert_allclose(body.positions[body.valid, 2], truth["marker_height"], atol=1e-3)


def test_body_at_rest_where_the_truth_puts_it(mocap, truth):
    """Before the first segment the base stands at the start pose; the body is at
    start ⊕ (marker body in the base), to the noise averaged over 1.5 s."""
    rec = mocap["mocap_optitrack.csv"]
    poses = body_planar(rec, markers_only=False)
    still = (rec.times < 1.5) & rec.bodies["base"].valid
    true = truth["true"]
    expected = compose(np.array(truth["start_pose"]), np.array([true["markers_x"], true["markers_y"], true["markers_yaw"]]))
    np.testing.assert_allclose(poses[still, :2].mean(axis=0), expected[:2], atol=5e-5)
    assert abs(wrap(poses[still, 2].mean() - expected[2])) < 2e-4


def test_robot_logs_agree_and_are_quantized(logs, truth):
    mcap = logs["robot.mcap"]
    times, angles = mcap.wheel_angles(*WHEELS)
    assert len(times) == round(truth["rates"]["joint_states"] * times[-1]) + 1 and times[0] == 0.0
    tick = 2 * np.pi / truth["noise"]["ticks_per_rev"]
    np.testing.assert_allclose(angles / tick, np.round(angles / tick), atol=1e-6)
    for name in ("robot_bag", "robot.bag"):
        other_times, other_angles = logs[name].wheel_angles(*WHEELS)
        np.testing.assert_allclose(other_times, times, atol=1e-9)
        np.testing.assert_array_equal(other_angles, angles)
        np.testing.assert_allclose(logs[name].odometry["/odom"].poses, mcap.odometry["/odom"].poses, atol=1e-12)
    assert mcap.joint_states["/joint_states"].velocities is not None


def test_odometry_is_the_nominal_model_on_the_encoders(logs, truth):
    """The robot's own odometry: `drive.integrate` (the reference loop) of the logged encoder
    increments with the NOMINAL parameters, from the odom origin."""
    log = logs["robot.mcap"]
    times, angles = log.wheel_angles(*WHEELS)
    steps = np.diff(angles, axis=0)
    expected = integrate(drive(truth["nominal"]), np.zeros(3), steps[:, 0], steps[:, 1])
    odometry = log.odometry["/odom"]
    np.testing.assert_allclose(odometry.times, times, atol=1e-9)
    np.testing.assert_allclose(odometry.poses[:, :2], expected[:, :2], atol=1e-9)
    np.testing.assert_allclose(wrap(odometry.poses[:, 2] - expected[:, 2]), 0.0, atol=1e-9)
    rate = np.diff(np.unwrap(odometry.poses[:, 2])) / np.diff(times)
    np.testing.assert_allclose(odometry.twists[1:, 2], rate, atol=1e-6)


@pytest.mark.parametrize(
    "mocap_file, log_file, signal",
    [("mocap_optitrack.csv", "robot.mcap", "odometry"), ("mocap.c3d", "robot.bag", "wheels"), ("mocap_vicon.csv", "robot_bag", "odometry")],
)
def test_clock_offset_recovered_from_the_files(mocap, logs, truth, mocap_file, log_file, signal):
    """The yaw rate of the marker body against the robot's (its odometry, or the nominal model on
    the wheel angles): the offset within a fifth of a mocap frame (measured: ~0.25 ms)."""
    rec = mocap[mocap_file]
    body = body_planar(rec, markers_only=mocap_file.endswith(".c3d"))
    log = logs[log_file]
    if signal == "odometry":
        times, yaw = log.odometry["/odom"].times, log.odometry["/odom"].poses[:, 2]
    else:
        times, angles = log.wheel_angles(*WHEELS)
        p = drive(truth["nominal"])
        yaw = (p.wheel_radius_right * angles[:, 1] - p.wheel_radius_left * angles[:, 0]) / p.wheelbase
    result = estimate_offset(*yaw_rate(rec.times, body[:, 2]), *yaw_rate(times, yaw))
    assert abs(result.offset - truth["true"]["clock_offset"]) < 0.2 * FRAME, result
    assert result.peak > 0.99


def test_motion_center_from_the_files(mocap, logs, truth, sim):
    """Spin and straight drive found by segments.json, mocap frames selected through the
    estimated clock offset: the base pose in the body within 1 mm and 0.1 deg (measured: a few um,
    ~0.001 deg)."""
    rec = mocap["mocap_optitrack.csv"]
    body = body_planar(rec, markers_only=False)
    odometry = logs["robot.mcap"].odometry["/odom"]
    offset = estimate_offset(*yaw_rate(rec.times, body[:, 2]), *yaw_rate(odometry.times, odometry.poses[:, 2])).offset
    segments = json.loads((sim[0] / "segments.json").read_text())

    def frames(kind: str, forward: bool = True) -> np.ndarray:
        segment = next(s for s in segments if s["kind"] == kind and (s["speed"] > 0) == forward)
        return body[(rec.times >= segment["start"] + offset) & (rec.times <= segment["end"] + offset)]

    result = motion_center(frames("spin", forward=False), frames("straight"))
    true = truth["true"]
    markers = np.array([true["markers_x"], true["markers_y"], true["markers_yaw"]])
    expected = inverse(markers)
    assert np.hypot(result.x - expected[0], result.y - expected[1]) < 1e-3
    assert abs(wrap(result.yaw - expected[2])) < np.deg2rad(0.1)
    np.testing.assert_allclose(result.marker_in_base()[:2], markers[:2], atol=1e-3)
    assert result.rms < 1e-3


def test_laser_intervals_follow_the_true_parameters(sim, truth):
    """Each row: the TRUE drive on the row's wheel angles, seen from the TRUE laser pose, is the
    row's displacement up to the documented noise (std within 20 %, mean within 4 standard
    errors); the NOMINAL parameters do not explain them."""
    intervals = read_intervals(sim[0] / "laser_intervals.csv")
    assert len(intervals.phi) == truth["laser_intervals"] > 150
    sigma = np.array([truth["noise"]["laser_xy"], truth["noise"]["laser_xy"], truth["noise"]["laser_yaw"]])

    def residuals(parameters: dict) -> np.ndarray:
        laser = np.array([parameters["sensor_x"], parameters["sensor_y"], parameters["sensor_yaw"]])
        predicted = conjugate(laser, increment(drive(parameters), intervals.phi[:, 0], intervals.phi[:, 1]))
        r = intervals.motion - predicted
        return np.column_stack([r[:, :2], wrap(r[:, 2])]) / sigma

    r = residuals(truth["true"])
    np.testing.assert_array_less(np.abs(r.std(axis=0) - 1.0), 0.2)
    np.testing.assert_array_less(np.abs(r.mean(axis=0)), 4 / np.sqrt(len(r)))
    assert np.sqrt((residuals(truth["nominal"]) ** 2).mean()) > 3.0


def test_segments_cover_every_kind(sim, truth):
    segments = json.loads((sim[0] / "segments.json").read_text())
    assert {s["kind"] for s in segments} == {"straight", "circle", "s_shape", "spin", "one_wheel"}
    bounds = np.array([[s["start"], s["end"]] for s in segments])
    assert (bounds[:, 1] > bounds[:, 0]).all() and (bounds[1:, 0] > bounds[:-1, 1]).all()  # stops between segments
    assert bounds[0, 0] > 0.0


def test_one_wheel_segment_holds_a_wheel_still(logs, sim):
    segments = json.loads((sim[0] / "segments.json").read_text())
    times, angles = logs["robot.mcap"].wheel_angles(*WHEELS)
    for segment, still in (("left_wheel_still", 0), ("right_wheel_still", 1)):
        s = next(s for s in segments if s["name"] == segment)
        inside = (times >= s["start"]) & (times <= s["end"])
        assert np.ptp(angles[inside, still]) <= 2 * np.pi / 4096 + 1e-12  # at most one tick of jitter
        assert np.ptp(angles[inside, 1 - still]) > 10.0


def test_cli_writes_the_same_simulation(sim, tmp_path):
    result = CliRunner().invoke(app, ["simulate", "base", "--out", str(tmp_path), "--seed", "0"])
    assert result.exit_code == 0, result.output
    assert "wheel_radius_left" in result.output and "wrote 9 files" in result.output
    for name in ("laser_intervals.csv", "mocap_optitrack.csv", "segments.json", "truth.json", "mocap.c3d"):
        assert (tmp_path / name).read_bytes() == (sim[0] / name).read_bytes(), name


def test_bad_plans_are_refused(tmp_path):
    with pytest.raises(RobocalError, match="segment 'turn': a straight needs a speed and no yaw rate"):
        Trajectory([Segment("turn", "straight", 4.0, speed=0.2, yaw_rate=0.1)], DriveParameters(0.1, 0.1, 0.4), 0.02)
    with pytest.raises(RobocalError, match="unknown kind 'zigzag'"):
        simulate_base(tmp_path, plan=[Segment("z", "zigzag", 4.0, speed=0.2)])
    with pytest.raises(RobocalError, match="shorter than its two 1.0 s speed ramps"):
        Trajectory([Segment("short", "spin", 1.5, yaw_rate=0.5)], DriveParameters(0.1, 0.1, 0.4), 0.02)
