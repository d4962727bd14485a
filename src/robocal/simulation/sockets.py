"""Simulated sphere-in-socket (MUKCa) recordings for any URDF whose flange carries a ball link.

The configurations of each socket are samples of the arm's self-motion manifold with the ball in
the socket, drawn as an operator moves the arm (`robocal.simulation.socket_sampling`, whose
docstring gives the procedure and its accuracy).

`simulate_sockets` builds the whole experiment: a perturbed TRUE robot, plate placements, the
recorded (noisy) joints in the `hole_<k>.csv` layout, one ready problem file per placement and
truth.json (`robocal simulate sockets`).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from robocal.errors import InputError, RobocalError
from robocal.io.sockets import write_socket_folder
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf, write_calibrated_urdf
from robocal.measurements.socket import socket_distortion, socket_mae
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.socket_sampling import (
    DEFAULT_CONE,
    BallChain,
    ball_chain,
    position_jacobian,
    sample_socket_configurations,
)

DEFAULT_LINK = "ball_link"
SOCKET_DISTANCE = 0.05  # m, between sockets 0 and 1 of the MUKCa plate
DISTANCE_SIGMA = 2e-5  # m, machining tolerance of that distance, as written in the problems
MIN_SIGMA = 1e-6  # m, the written sigma of a noise-free simulation (a problem needs sigma > 0)

TABLE_CLEARANCE = 0.02  # m, ball center above the robot's base plane when the plate lies on its table
PLACEMENT_RADIUS = 0.55  # default plates at this fraction of the seatable horizontal reach
HIGH_LIFT = 0.4  # the high plate this fraction of the reach above the table
SIDE_AZIMUTH = float(np.deg2rad(45.0))
PLACEMENT_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Placement:
    """One placement of the socket plate: socket 0 at `socket0` (root frame, m); socket 1 is
    `distance` further along the unit vector `direction`."""

    name: str
    socket0: tuple[float, float, float]
    direction: tuple[float, float, float] = (0.0, 1.0, 0.0)

    def sockets(self, distance: float) -> np.ndarray:
        """(2, 3) socket centers."""
        origin, direction = np.asarray(self.socket0, dtype=float), np.asarray(self.direction, dtype=float)
        return np.stack([origin, origin + distance * direction / np.linalg.norm(direction)])


@jax.jit
def _placement_figures(points, socket, distance):
    return socket_mae(points, socket, 2), socket_distortion(points, socket, 2, distance)


@partial(jax.jit, static_argnames=("chain",))
def _centers_and_jacobians(theta, qc, chain: BallChain):
    """Ball centers (n, 3) and their joint Jacobians (n, 3, k)."""
    jac, p = jax.vmap(lambda q: position_jacobian(chain, theta, q))(qc)
    return p, jac


@partial(jax.jit, static_argnames=("chain",))
def _poses(theta, qc, chain: BallChain):
    return jax.vmap(partial(chain.pose, theta))(qc)


def _first_axis(chain: BallChain, theta) -> np.ndarray:
    """(x, y) of the frame of the chain's first moving joint: the arm's vertical axis for an arm
    standing on its base, the center that its reach is measured from."""
    tree = chain.robot.tree
    first = next(tree.joints[i] for i in tree.chain(chain.link) if tree.joints[i].moves)
    return np.asarray(chain.robot.link_poses(jnp.asarray(theta), jnp.zeros(len(tree.actuated)), (first.child,))[0])[:2, 3]


def default_placements(
    chain: BallChain, theta: np.ndarray, *, cone: float = DEFAULT_CONE, distance: float = SOCKET_DISTANCE, seed: int = 0, n: int = 4096
) -> list[Placement]:
    """Four plates (front, left, right, high) scaled to the robot's workspace, so any arm gets a
    reachable, MUKCa-like set: from `n` random configurations, keep those whose approach axis is
    within the cone (the seatable poses), take their 95th-percentile horizontal distance from the
    first joint's axis as the reach; plates lie TABLE_CLEARANCE above the base plane (or at the
    5th-percentile height of the seatable poses, for a base above its table), at PLACEMENT_RADIUS
    of the reach, ahead (+x) and SIDE_AZIMUTH to each side, and one HIGH_LIFT of the reach higher.
    Socket 1 is `distance` from socket 0 across the reach (tangentially), as on the real plates."""
    rng = np.random.default_rng(seed)
    qc = rng.uniform(chain.lower, chain.upper, size=(n, len(chain.joints)))
    poses = np.asarray(_poses(jnp.asarray(theta), jnp.asarray(qc), chain))
    seatable = -(poses[:, :3, :3] @ np.asarray(chain.approach))[:, 2] >= np.cos(cone)
    if not seatable.any():
        raise RobocalError(
            f"'{chain.link}' never points within {np.degrees(cone):.0f} deg of straight down in {n} random configurations; give the placements explicitly"
        )
    hub = _first_axis(chain, theta)
    points = poses[seatable, :3, 3]
    reach = float(np.percentile(np.linalg.norm(points[:, :2] - hub, axis=1), 95))
    table = max(TABLE_CLEARANCE, float(np.percentile(points[:, 2], 5)))
    radius = PLACEMENT_RADIUS * reach

    def plate(name: str, azimuth: float, height: float) -> Placement:
        radial = np.array([np.cos(azimuth), np.sin(azimuth)])
        socket0 = np.append(hub + radius * radial - 0.5 * distance * np.array([-radial[1], radial[0]]), height)
        x, y, z = (float(v) for v in socket0)
        return Placement(name, (x, y, z), (float(-radial[1]), float(radial[0]), 0.0))

    return [plate("front", 0.0, table), plate("left", SIDE_AZIMUTH, table), plate("right", -SIDE_AZIMUTH, table), plate("high", 0.0, table + HIGH_LIFT * reach)]


def socket_model(robot_path: str | Path, link: str) -> RobotModel:
    """The robot whose origins a socket calibration estimates: `xyzrpy` on every moving joint of
    the chain to `link`, then on the joint that carries `link` (the ball joint). Cached per file
    version, so that repeated simulations of one URDF (tests, studies) reuse compiled kernels."""
    path = Path(robot_path).resolve()
    try:
        stat = path.stat()
    except OSError as exc:
        raise InputError(robot_path, f"cannot read URDF ({exc.strerror})") from None
    return _socket_model(path, (stat.st_mtime_ns, stat.st_size), link)


@lru_cache(maxsize=8)
def _socket_model(path: Path, _version: tuple[int, int], link: str) -> RobotModel:
    tree = load_urdf(path)
    try:
        chain = tree.chain(link)
    except RobocalError:
        raise InputError(path, f"no link named '{link}' to carry the ball (--link)") from None
    moving = [tree.joints[i].name for i in chain if tree.joints[i].moves]
    if not moving:
        raise InputError(path, f"no joint moves link '{link}' (--link)")
    return RobotModel(tree, dict.fromkeys([*moving, tree.joints[chain[-1]].name], "xyzrpy"))


def _check_placements(placements: Sequence[Placement]) -> list[Placement]:
    names = [p.name for p in placements]
    for p in placements:
        if not PLACEMENT_NAME.fullmatch(p.name):
            raise RobocalError(f"placement '{p.name}': a name is a folder name, letters, digits, '_', '.', '-' only")
        if not np.linalg.norm(np.asarray(p.direction, dtype=float)) > 0:
            raise RobocalError(f"placement '{p.name}': the direction from socket 0 to socket 1 is zero")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates or not names:
        raise RobocalError(f"placements: {'repeated names ' + ', '.join(duplicates) if duplicates else 'none given'}")
    return list(placements)


@dataclass
class SocketSimulation:
    """What `simulate_sockets` simulated and wrote. Configurations per placement name, one (n, k)
    array per socket, in the columns of `chain.joints`."""

    truth: RobotModel  # `xyzrpy` on the perturbed joints; its nominal is the input URDF
    theta_true: np.ndarray
    chain: BallChain
    placements: list[Placement]
    configurations: dict[str, list[np.ndarray]]  # the TRUE robot holds the ball exactly in the socket
    recorded: dict[str, list[np.ndarray]]  # plus joint noise: what the files hold
    truth_json: dict
    problems: dict[str, Path]
    files: list[Path]
    seconds: float


def _placement_truth(chain: BallChain, theta_nominal, theta_true, placement: Placement, configurations, recorded, joint_noise: float, distance: float) -> dict:
    """truth.json's entry of a placement. The noise floor is the MAE of the TRUE robot at the
    recorded joints: what a perfect calibration would score. `sigma` is the std of one coordinate
    of a predicted ball center that the joint noise causes, to first order:
    joint_noise * sqrt(mean ||J||_F^2 / 3) over the placement's configurations."""
    q, noisy = np.concatenate(configurations), np.concatenate(recorded)
    socket = jnp.asarray(np.concatenate([np.full(len(c), k) for k, c in enumerate(configurations)]))
    _, jac = _centers_and_jacobians(jnp.asarray(theta_true), jnp.asarray(q), chain)
    figures: dict[str, float] = {}
    for label, theta in (("nominal", theta_nominal), ("noise_floor", theta_true)):
        points, _ = _centers_and_jacobians(jnp.asarray(theta), jnp.asarray(noisy), chain)
        mae, distortion = _placement_figures(points, socket, distance)
        figures |= {f"{label}_mae": float(mae), f"{label}_distortion": float(distortion)}
    sigma = joint_noise * float(np.sqrt(np.mean(np.sum(np.asarray(jac) ** 2, axis=(1, 2))) / 3.0))
    return {"sockets": placement.sockets(distance).tolist(), "rows": [len(c) for c in configurations], "sigma": max(sigma, MIN_SIGMA), **figures}


def _problem(placement: str, link: str, joints: Sequence[str], entry: dict, translation: float, rotation: float, distance: float) -> dict:
    """A problem file calibrating the origins (`xyzrpy`) of `joints` from one placement, with
    priors of the perturbation's size."""
    return {
        "robot": "nominal.urdf",
        "parameters": {"joints": {name: "xyzrpy" for name in joints}},
        "priors": {"translation": float(translation), "rotation": float(rotation)},
        "measurements": [
            {
                "name": placement,
                "type": "socket",
                "data": f"data/{placement}",
                "link": link,
                "sigma": entry["sigma"],
                "distance": float(distance),
                "distance_sigma": DISTANCE_SIGMA,
            }
        ],
    }


def _check_options(translation: float, rotation: float, distance: float, joint_noise: float, n_per_socket: int) -> None:
    prior = "it is also the prior sigma of the written problems"
    for name, value, meaning in (("translation", translation, prior), ("rotation", rotation, prior), ("distance", distance, "between sockets 0 and 1")):
        if not value > 0:
            raise RobocalError(f"{name} = {value}: must be > 0 ({meaning})")
    if joint_noise < 0 or n_per_socket < 1:
        raise RobocalError(f"joint_noise = {joint_noise}, n_per_socket = {n_per_socket}: need joint_noise >= 0 and n_per_socket >= 1")


def _socket_configurations(
    truth: RobotModel,
    theta_true: np.ndarray,
    link: str,
    placements: Sequence[Placement],
    distance: float,
    n_per_socket: int,
    rng: np.random.Generator,
    robot_path: Path,
    progress: Callable[[int, int, str], None] | None,
) -> dict[str, list[np.ndarray]]:
    """Per placement, the TRUE robot's configurations (n_per_socket, k) in each of its two sockets."""
    configurations: dict[str, list[np.ndarray]] = {}
    total = 2 * len(placements)
    for placement in placements:
        configurations[placement.name] = []
        for k, center in enumerate(placement.sockets(distance)):
            try:
                configurations[placement.name].append(sample_socket_configurations(truth, theta_true, link, center, n_per_socket, rng))
            except RobocalError as exc:
                raise RobocalError(f"{robot_path}: placement '{placement.name}', socket {k}: {exc}") from None
            if progress is not None:
                progress(sum(map(len, configurations.values())), total, f"{placement.name} socket {k}")
    return configurations


def simulate_sockets(
    robot_path: str | Path,
    out: str | Path,
    *,
    link: str = DEFAULT_LINK,
    placements: Sequence[Placement] | None = None,
    n_per_socket: int = 30,
    translation: float = 1e-3,
    rotation: float = float(np.deg2rad(0.5)),
    joint_noise: float = 1e-4,
    distance: float = SOCKET_DISTANCE,
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> SocketSimulation:
    """A perturbed robot recorded in the sockets of plate placements, written as ready problems.

    The TRUE robot is the URDF with the origin (x, y, z, roll, pitch, yaw) of every moving joint
    of the chain to `link`, and of the ball joint, perturbed uniformly by up to `translation` (m)
    / `rotation` (rad) (`perturb_parameters`, `seed`). Placements default to `default_placements`
    of the nominal robot. Per socket, `n_per_socket` configurations of the TRUE robot hold the
    ball exactly in the socket (`sample_socket_configurations`); the recorded joints add Gaussian
    noise of std `joint_noise` (rad). Everything is drawn from `seed`.

    Writes to `out`: nominal.urdf (the input, copied), true.urdf (the input with the true origins),
    data/<placement>/hole_0.csv, hole_1.csv, one problem <placement>.yaml per placement (a
    `socket` measurement; priors of the perturbation's size), and truth.json (socket centers,
    nominal MAE, noise floor, per placement; SI units). `progress(done, total, label)` is called
    after each socket.
    """
    started = time.perf_counter()
    _check_options(translation, rotation, distance, joint_noise, n_per_socket)
    robot_path, out = Path(robot_path), Path(out)
    truth = socket_model(robot_path, link)
    tree, joints = truth.tree, tuple(truth.modes)
    theta_true = perturb_parameters(truth, seed=seed, translation=translation, rotation=rotation)
    chain = ball_chain(truth, link)
    placements = _check_placements(placements if placements is not None else default_placements(chain, truth.nominal, distance=distance, seed=seed))
    sampling, noise = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))

    configurations = _socket_configurations(truth, theta_true, link, placements, distance, n_per_socket, sampling, robot_path, progress)
    recorded = {name: [q + noise.normal(0.0, joint_noise, q.shape) for q in qs] for name, qs in configurations.items()}

    out.mkdir(parents=True, exist_ok=True)
    files = [out / "nominal.urdf", out / "true.urdf"]
    shutil.copyfile(robot_path, files[0])
    origins = truth.urdf_origins(theta_true)
    write_calibrated_urdf(robot_path, files[1], origins)
    entries, problems = {}, {}
    for placement in placements:
        name = placement.name
        files += write_socket_folder(out / "data" / name, recorded[name])
        entries[name] = _placement_truth(chain, truth.nominal, theta_true, placement, configurations[name], recorded[name], joint_noise, distance)
        problems[name] = out / f"{name}.yaml"
        header = f"# Sphere-in-socket calibration of a simulated {tree.name}, placement '{name}' (robocal simulate sockets, seed {seed}); the true robot is true.urdf, its figures are in truth.json.\n"
        problems[name].write_text(header + yaml.safe_dump(_problem(name, link, joints, entries[name], translation, rotation, distance), sort_keys=False))
        files.append(problems[name])
    truth_json = {
        "units": "m, rad",
        "robot": files[0].name,
        "true_robot": files[1].name,
        "link": link,
        "joints": list(chain.joints),
        "perturbed_joints": list(joints),
        "seed": seed,
        "translation": translation,
        "rotation": rotation,
        "joint_noise": joint_noise,
        "distance": distance,
        "placements": entries,
    }
    files.append(out / "truth.json")
    files[-1].write_text(json.dumps(truth_json, indent=1) + "\n")
    return SocketSimulation(
        truth, np.array(theta_true), chain, placements, configurations, recorded, truth_json, problems, files, time.perf_counter() - started
    )
