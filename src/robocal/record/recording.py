"""What a socket-recording session holds, apart from the terminal: the stored configurations in
the order they were stored (so that undo removes the last one), the nominal model's predicted
ball center of each, and the figures a user judges a placement by while recording (the MUKCa
spread per socket and distortion). The nominal model is off by millimetres, so the spread shows
that figure plus the recording's own scatter; a stored configuration that lands far from its
socket's other ones (a ball not seated, a wrong key) shows at once, while it can still be undone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from robocal.errors import InputError, RobocalError
from robocal.io.sockets import SOCKET_FILE, write_socket_folder
from robocal.kinematics.model import RobotModel
from robocal.kinematics.tree import KinematicTree
from robocal.measurements.socket import socket_distortion, socket_spread
from robocal.simulation.socket_sampling import ball_chain

MIN_PER_SOCKET = 2  # a spread needs two configurations; `robocal calibrate` rejects a socket with fewer


class BallCenter:
    """The nominal model's ball center (m, robot root frame) of a configuration of `joints`, the
    actuated joints of the chain to `link` (the simulator's BallChain). Forward kinematics is
    compiled here, once, so that a key press answers at once."""

    def __init__(self, tree: KinematicTree, link: str):
        robot = RobotModel(tree)
        chain = ball_chain(robot, link)
        self.joints = chain.joints
        self._center = jax.jit(partial(chain.center, robot.nominal))
        self(np.zeros(len(self.joints)))

    def __call__(self, q: np.ndarray) -> np.ndarray:
        return np.asarray(self._center(jnp.asarray(q, dtype=float)))


@dataclass(frozen=True)
class Stored:
    """One stored configuration; `offset` (m): its ball center's distance from the mean of the
    socket's earlier ones (None for the first); `nearer`: (another socket, distance from its
    mean) when that socket's mean is nearer, a sign of a wrong key."""

    socket: int
    q: np.ndarray
    center: np.ndarray
    offset: float | None
    nearer: tuple[int, float] | None


@dataclass(frozen=True)
class Figures:
    """Per socket: count and spread (m, socket_mae of its predicted ball centers; None when
    empty); over all rows: MAE (m); distortion (m) when a distance is known and sockets 0 and 1
    have rows."""

    counts: list[int]
    spreads: list[float | None]
    mae: float | None
    distortion: float | None


class Recording:
    def __init__(self, n_sockets: int, ball: BallCenter, distance: float | None):
        self.n_sockets = n_sockets
        self.ball = ball
        self.distance = distance
        self.stored: list[Stored] = []

    def __len__(self) -> int:
        return len(self.stored)

    def count(self, socket: int) -> int:
        return sum(s.socket == socket for s in self.stored)

    def _centers(self, socket: int) -> np.ndarray:
        return np.array([s.center for s in self.stored if s.socket == socket]).reshape(-1, 3)

    def store(self, socket: int, q: np.ndarray) -> Stored:
        center = self.ball(q)
        distances = {k: float(np.linalg.norm(center - c.mean(axis=0))) for k in range(self.n_sockets) if len(c := self._centers(k))}
        offset = distances.get(socket)
        nearest = min(distances, key=lambda k: distances[k], default=socket)
        nearer = (nearest, distances[nearest]) if offset is not None and nearest != socket else None
        entry = Stored(socket, np.array(q, dtype=float), center, offset, nearer)
        self.stored.append(entry)
        return entry

    def undo(self) -> Stored | None:
        return self.stored.pop() if self.stored else None

    def configurations(self) -> list[np.ndarray]:
        """Per socket, its configurations (n_k, n_joints) in the order stored."""
        return [np.array([s.q for s in self.stored if s.socket == k]).reshape(-1, len(self.ball.joints)) for k in range(self.n_sockets)]

    def figures(self) -> Figures:
        counts = [self.count(k) for k in range(self.n_sockets)]
        if not self.stored:
            return Figures(counts, [None] * self.n_sockets, None, None)
        sockets = np.array([s.socket for s in self.stored])
        spread, distortion = _padded_figures(np.array([s.center for s in self.stored]), sockets, self.n_sockets, self.distance or 0.0)
        spreads = [float(spread[sockets == k].mean()) if counts[k] else None for k in range(self.n_sockets)]
        known = self.distance is not None and counts[0] > 0 and counts[1] > 0
        return Figures(counts, spreads, float(spread.mean()), distortion if known else None)

    def write(self, folder: Path, partial: bool = False) -> list[Path]:
        """hole_<k>.csv for every socket, replacing the folder's earlier socket files (with
        --force, a recording with fewer sockets must not leave a stale hole_2.csv behind).
        `partial`: also sockets with fewer than MIN_PER_SOCKET rows (saving a session cut short)."""
        configurations = self.configurations()
        short = ", ".join(f"socket {k} has {len(rows)}" for k, rows in enumerate(configurations) if len(rows) < MIN_PER_SOCKET)
        if short and not partial:
            raise RobocalError(f"{short}; store at least {MIN_PER_SOCKET} configurations per socket (a spread needs two)")
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            if SOCKET_FILE.fullmatch(old.name):
                old.unlink()
        return write_socket_folder(folder, configurations)


def _padded_figures(points: np.ndarray, sockets: np.ndarray, n_sockets: int, distance: float) -> tuple[np.ndarray, float]:
    """(socket_spread of each row (m), socket_distortion (m)). The rows are padded to a power of
    two (at least 16) and the padding given a socket of its own, so the jitted figures compile
    once per size class rather than at every store (0.4 s each). The mean of a socket's spread
    is its socket_mae; the padding changes no socket's mean."""
    size = max(16, 1 << (len(points) - 1).bit_length())
    padded = np.zeros((size, 3))
    padded[: len(points)] = points
    ids = np.full(size, n_sockets)
    ids[: len(points)] = sockets
    spread, distortion = _figures_kernel(jnp.asarray(padded), jnp.asarray(ids), n_sockets + 1, distance)
    return np.asarray(spread)[: len(points)], float(distortion)


@partial(jax.jit, static_argnames=("n_sockets",))
def _figures_kernel(points, sockets, n_sockets: int, distance: float):
    return socket_spread(points, sockets, n_sockets), socket_distortion(points, sockets, n_sockets, distance)


def check_output_folder(folder: Path, force: bool) -> None:
    """Before recording, not after: a user who has guided the arm through sixty poses must not
    learn then that the files cannot go where asked."""
    if folder.exists() and not folder.is_dir():
        raise InputError(folder, "--out: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise InputError(folder, "--out: the folder exists and is not empty; choose a new one, or pass --force to replace its socket files")
