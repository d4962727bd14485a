"""`robocal record sockets` end to end, in a pseudo-terminal, replaying a known recording.

The replayed operator shows 4 poses seated in socket 0 (R0..R3), then 3 in socket 1 (S0..S2),
one per key press, so every file row can be checked exactly against the pose that key stored.
One session exercises the keys that keep recording (refusals, undo, a wrong key, the quit
prompt declined) and ends with w; two short ones check that q and Ctrl-C write nothing. Each
session pays for a Python start with JAX and the compilation of forward kinematics.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from robocal.io.sockets import read_socket_folder, write_socket_folder
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.measurements.socket import socket_distortion, socket_mae
from robocal.simulation.sampling import batch_link_poses

from .terminal import Terminal

REPO = Path(__file__).resolve().parents[2]
URDF = REPO / "examples" / "mukca" / "data" / "urdf" / "panda.urdf"
RECORDED = REPO / "examples" / "mukca" / "data" / "panda_1" / "front"
TITLE = "robocal record sockets:"
KEYS = "keys:"
ROW = re.compile(r"^\s*(\d|all)\s+(\d+)\s+([\d.]+|-)\s*$", re.MULTILINE)
DISTORTION = re.compile(r"distortion \(mm\): ([\d.]+|-)")


@pytest.fixture(scope="module")
def tree():
    return load_urdf(URDF)


@pytest.fixture(scope="module")
def poses(tree):
    """R (4, 7) and S (3, 7): the first rows of a real Panda recording."""
    recording = read_socket_folder(RECORDED, tree.actuated_for(["ball_link"]))
    return recording.q[recording.socket == 0][:4], recording.q[recording.socket == 1][:3]


@pytest.fixture()
def replay(tmp_path, poses) -> Path:
    folder = tmp_path / "replay"
    write_socket_folder(folder, list(poses))
    return folder


def recorder(tmp_path: Path, replay: Path, out: Path, *extra: str) -> Terminal:
    return Terminal(["record", "sockets", "--robot", str(URDF), "--out", str(out), "--source", "replay", "--replay", str(replay), *extra], cwd=tmp_path)


def displayed(frame: str) -> dict[str, tuple[int, float | None]]:
    """socket (or 'all') -> (stored count, spread in mm) as the screen shows them."""
    return {key: (int(count), None if spread == "-" else float(spread)) for key, count, spread in ROW.findall(frame)}


def nominal_centers(tree, q: np.ndarray) -> jnp.ndarray:
    """Ball centers of the nominal Panda for chain configurations q, by the batch FK of the simulator."""
    robot = RobotModel(tree)
    full = np.zeros((len(q), len(tree.actuated)))
    full[:, [tree.actuated.index(name) for name in tree.actuated_for(["ball_link"])]] = q
    return jnp.asarray(batch_link_poses(robot, robot.nominal, full, ["ball_link"])[:, 0, :3, 3])


def test_recording_session_writes_exactly_the_stored_configurations(tmp_path, tree, poses, replay):
    R, S = poses
    out = tmp_path / "out"
    out.mkdir()
    (out / "hole_2.csv").write_text("stale socket of an earlier recording\n")
    (out / "notes.txt").write_text("kept\n")
    term = recorder(tmp_path, replay, out, "--distance", "0.05", "--force")
    try:
        term.expect(r"ball in socket 0, pose 1 of 7")
        term.press("w", r"not written: socket 0 has 0, socket 1 has 0; store at least 2")
        term.press("5", r"no socket 5: the plate has 2")
        term.press("0", r"stored socket 0 #1")  # R0
        term.press("0", r"stored socket 0 #2: ball center [\d.]+ mm from the socket's mean")  # R1
        term.press("u", r"undid the last store \(socket 0\)")
        assert displayed(term.frame(TITLE, KEYS))["0"][0] == 1
        term.press("0", r"stored socket 0 #2")  # R2
        term.press("0", r"stored socket 0 #3")  # R3
        term.press("1", r"stored socket 1 #1")  # S0
        term.press("0", r"stored socket 0 #4: .* but [\d.]+ mm from socket 1's: wrong key\? \(u undoes\)")  # S1, the wrong key
        term.press("u", r"undid the last store \(socket 0\)")
        term.press("1", r"stored socket 1 #2")  # S2
        frame = term.frame(TITLE, KEYS)
        term.press("1", r"not stored: replay of .*: all 7 poses have been shown")
        term.press("q", r"quit without writing the 5 stored configurations\? y: quit")
        term.press("n", r"kept recording")
        term.send("w")
        assert term.wait() == 0
        term.expect(r"wrote .*hole_0\.csv, .*hole_1\.csv")
        assert term.modes_restored()
    finally:
        term.close()

    hole_0, hole_1 = np.array([R[0], R[2], R[3]]), np.array([S[0], S[2]])
    assert sorted(p.name for p in out.iterdir()) == ["hole_0.csv", "hole_1.csv", "notes.txt"]
    np.testing.assert_array_equal(np.loadtxt(out / "hole_0.csv", delimiter=","), hole_0)
    np.testing.assert_array_equal(np.loadtxt(out / "hole_1.csv", delimiter=","), hole_1)

    # The figures on screen after the last store: socket_mae of the nominal ball centers (mm, 3 decimals).
    shown = displayed(frame)
    centers = [nominal_centers(tree, rows) for rows in (hole_0, hole_1)]
    points, sockets = jnp.concatenate(centers), jnp.array([0, 0, 0, 1, 1])
    expected = {
        "0": (3, socket_mae(centers[0], jnp.zeros(3, dtype=int), 1)),
        "1": (2, socket_mae(centers[1], jnp.zeros(2, dtype=int), 1)),
        "all": (5, socket_mae(points, sockets, 2)),
    }
    assert shown.keys() == expected.keys()
    for key, (count, spread) in expected.items():
        assert shown[key][0] == count
        assert shown[key][1] == pytest.approx(float(spread) * 1e3, abs=5.1e-4), key
    distortion = float(DISTORTION.search(frame).group(1))
    assert distortion == pytest.approx(float(socket_distortion(points, sockets, 2, 0.05)) * 1e3, abs=5.1e-4)


@pytest.mark.parametrize("ending", ["q", "ctrl-c"])
def test_quitting_writes_nothing_and_restores_the_terminal(tmp_path, replay, ending):
    out = tmp_path / "out"
    term = recorder(tmp_path, replay, out)
    try:
        term.expect(r"ball in socket 0, pose 1 of 7")
        term.press("0", r"stored socket 0 #1")
        if ending == "q":
            term.press("q", r"quit without writing the 1 stored configurations\?")
            term.send("y")
            assert term.wait() == 0
            term.expect(r"quit: nothing written")
        else:
            term.send("\x03")  # the line discipline turns it into SIGINT: cbreak, not raw mode
            assert term.wait() == 128 + signal.SIGINT
            term.expect(r"interrupted: nothing written")
        assert term.modes_restored()
    finally:
        term.close()
    assert not out.exists()


def test_a_closed_terminal_ends_the_key_reader(tmp_path):
    """Reading keys from a terminal whose other side has gone (EOF or EIO) raises TerminalClosed
    at once, instead of returning '' forever (which made an orphaned recorder spin on the CPU),
    and leaving the context does not fail on the dead terminal."""
    import os

    from robocal.record.recorder import TerminalClosed, key_presses

    master, slave = os.openpty()
    try:
        with key_presses(slave) as read:
            os.write(master, b"0")
            assert read(1.0) == "0"
            assert read(0.05) == ""
            os.close(master)
            master = None
            with pytest.raises(TerminalClosed):
                read(1.0)
    finally:
        os.close(slave)
        if master is not None:
            os.close(master)


def test_a_closed_terminal_writes_what_was_stored(tmp_path, tree, poses):
    """When the terminal closes mid-session, every stored configuration is written, also a
    socket with fewer rows than `w` asks for; with nothing stored nothing is written."""
    from robocal.record.recorder import Session
    from robocal.record.recording import BallCenter, Recording

    R, S = poses
    joints = tree.actuated_for(["ball_link"])

    class Poses:
        def __init__(self, rows):
            self.rows, self.joints = list(rows), joints

        def read(self):
            return self.rows.pop(0)

    def session(out):
        return Session(Recording(2, BallCenter(tree, "ball_link"), None), Poses([*R[:3], S[0]]), out)

    out = tmp_path / "out"
    cut_short = session(out)
    for key in "0001":
        cut_short.press(key)
    cut_short.terminal_closed()
    assert cut_short.done and [p.name for p in cut_short.written] == ["hole_0.csv", "hole_1.csv"]
    saved = read_socket_folder(out, joints)
    np.testing.assert_array_equal(saved.q, np.vstack([R[:3], S[:1]]))
    np.testing.assert_array_equal(saved.socket, [0, 0, 0, 1])

    empty = session(tmp_path / "empty")
    empty.terminal_closed()
    assert empty.done and empty.written == [] and not (tmp_path / "empty").exists()
