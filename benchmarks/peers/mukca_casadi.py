"""The MUKCa sphere-in-socket cost of one placement written in CasADi and solved by IPOPT: the peer
of `robocal calibrate examples/mukca/panda_1_front.yaml` in benchmarks/peers/run.py.

Run by run.py in the peers' own virtual environment (CasADi is not a robocal dependency):
    PEERS_VENV/bin/python benchmarks/peers/mukca_casadi.py PROBLEM.yaml [--tol 1e-10]
It prints one JSON object (the estimate by parameter name, MAE before and after, IPOPT's status,
iterations and the seconds of each phase) as its last line.

The cost is robocal's for that problem file (src/robocal/measurements/socket.py and the solver's
Gaussian prior), written out again here from the problem file and the URDF, not imported:

    sum_i ||p_i(theta) - m_s(i)(theta)||^2 / sigma^2            (each ball center about its socket's mean)
  + (||m_1 - m_0|| - distance)^2 / distance_sigma^2            (the caliper distance between the sockets)
  + sum_k (theta_k - nominal_k)^2 / prior_k^2                  (translation / rotation prior)

with p_i the ball-link origin of configuration i by forward kinematics through the URDF chain,
theta the x, y, z, roll, pitch, yaw of every listed joint origin (additive on the nominal numbers,
URDF rpy: R = Rz(yaw) Ry(pitch) Rx(roll)), m_s the mean of the predicted centers of socket s.
robocal minimises the same sum of squares by Levenberg-Marquardt; IPOPT minimises it as an
unconstrained NLP with CasADi's exact Hessian. The same cost has the same minimiser, so the two
estimates should agree to the solvers' tolerances.
"""

from __future__ import annotations

import argparse
import json
import time

START = time.perf_counter()

import xml.etree.ElementTree as ET  # noqa: E402
from pathlib import Path  # noqa: E402

import casadi as ca  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

IMPORTED = time.perf_counter()
COORDINATES = ("x", "y", "z", "roll", "pitch", "yaw")


def rot(axis: int, angle):
    c, s = ca.cos(angle), ca.sin(angle)
    if axis == 0:
        return ca.vertcat(ca.horzcat(1, 0, 0), ca.horzcat(0, c, -s), ca.horzcat(0, s, c))
    if axis == 1:
        return ca.vertcat(ca.horzcat(c, 0, s), ca.horzcat(0, 1, 0), ca.horzcat(-s, 0, c))
    return ca.vertcat(ca.horzcat(c, -s, 0), ca.horzcat(s, c, 0), ca.horzcat(0, 0, 1))


def axis_angle(axis: np.ndarray, angle):
    """Rodrigues' rotation about a unit axis (URDF joint axes need not be coordinate axes)."""
    k = ca.DM(axis / np.linalg.norm(axis))
    kx = ca.skew(k)
    return ca.DM.eye(3) + ca.sin(angle) * kx + (1 - ca.cos(angle)) * (kx @ kx)


def chain(urdf: Path, link: str) -> list[dict]:
    """The joints from the URDF's root to `link`, root first: name, type, xyz, rpy, axis."""
    root = ET.parse(urdf).getroot()
    by_child = {}
    for joint in root.iter("joint"):
        origin = joint.find("origin")
        axis = joint.find("axis")
        by_child[joint.find("child").get("link")] = {
            "name": joint.get("name"),
            "type": joint.get("type"),
            "parent": joint.find("parent").get("link"),
            "xyz": np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]),
            "rpy": np.array([float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]),
            "axis": np.array([float(v) for v in (axis.get("xyz") if axis is not None else "1 0 0").split()]),
        }
    joints = []
    while link in by_child:
        joints.append(by_child[link])
        link = by_child[link]["parent"]
    return joints[::-1]


def read_placement(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """(n, n_joints) configurations and (n,) socket ids from hole_0.csv, hole_1.csv, ..."""
    q, socket = [], []
    k = 0
    while (folder / f"hole_{k}.csv").exists():
        rows = np.loadtxt(folder / f"hole_{k}.csv", delimiter=",", ndmin=2)
        q.append(rows)
        socket.append(np.full(len(rows), k))
        k += 1
    return np.concatenate(q), np.concatenate(socket)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", type=Path)
    parser.add_argument("--tol", type=float, default=1e-10, help="IPOPT's tol (its default is 1e-8)")
    options = parser.parse_args()
    problem = yaml.safe_load(options.problem.read_text())
    here = options.problem.parent
    (measurement,) = problem["measurements"]
    calibrated = list(problem["parameters"]["joints"])
    prior = problem["priors"]
    joints = chain(here / problem["robot"], measurement["link"])
    q, socket = read_placement(here / measurement["data"])
    loaded = time.perf_counter()

    # decision variables: additive errors on x, y, z, roll, pitch, yaw of every calibrated origin
    names = [f"{j['name']}.{c}" for j in joints if j["name"] in calibrated for c in COORDINATES]
    delta = ca.SX.sym("delta", len(names))
    prior_sigma = np.array([prior["translation"] if n.rsplit(".", 1)[1] in "xyz" else prior["rotation"] for n in names])
    nominal = np.concatenate([np.r_[j["xyz"], j["rpy"]] for j in joints if j["name"] in calibrated])

    qs = ca.SX.sym("q", q.shape[1])
    pose, k, moving = ca.SX.eye(4), 0, 0
    for j in joints:
        xyz, rpy = ca.SX(ca.DM(j["xyz"])), ca.SX(ca.DM(j["rpy"]))
        if j["name"] in calibrated:
            xyz, rpy = xyz + delta[k : k + 3], rpy + delta[k + 3 : k + 6]
            k += 6
        origin = ca.SX.eye(4)
        origin[:3, :3] = rot(2, rpy[2]) @ rot(1, rpy[1]) @ rot(0, rpy[0])
        origin[:3, 3] = xyz
        pose = pose @ origin
        if j["type"] in ("revolute", "continuous"):
            motion = ca.SX.eye(4)
            motion[:3, :3] = axis_angle(j["axis"], qs[moving])
            pose = pose @ motion
            moving += 1
        elif j["type"] == "prismatic":
            motion = ca.SX.eye(4)
            motion[:3, 3] = ca.DM(j["axis"]) * qs[moving]
            pose = pose @ motion
            moving += 1
    center = ca.Function("center", [delta, qs], [pose[:3, 3]])
    centers = center.map(len(q))(delta, ca.DM(q.T))  # (3, n)

    one_hot = np.eye(int(socket.max()) + 1)[socket]  # (n, K)
    means = centers @ ca.DM(one_hot / one_hot.sum(axis=0))  # (3, K)
    spread = centers - means @ ca.DM(one_hot.T)
    cost = ca.sumsqr(spread) / measurement["sigma"] ** 2
    if measurement.get("distance") is not None:
        error = ca.norm_2(means[:, 1] - means[:, 0]) - measurement["distance"]
        cost += error**2 / measurement["distance_sigma"] ** 2
    cost += ca.sumsqr(delta / ca.DM(prior_sigma))
    mae = ca.Function("mae", [delta], [ca.sum2(ca.sqrt(ca.sum1(spread**2))) / len(q)])

    solver = ca.nlpsol("socket", "ipopt", {"x": delta, "f": cost}, {"print_time": False, "ipopt": {"print_level": 0, "tol": options.tol, "sb": "yes"}})
    built = time.perf_counter()
    result = solver(x0=np.zeros(len(names)))
    solved = time.perf_counter()
    estimate = nominal + np.asarray(result["x"]).ravel()
    stats = solver.stats()
    print(
        json.dumps(
            {
                "estimate": dict(zip(names, estimate.tolist())),
                "mae_before_mm": float(mae(np.zeros(len(names)))) * 1e3,
                "mae_after_mm": float(mae(result["x"])) * 1e3,
                "cost": float(result["f"]),
                "status": stats["return_status"],
                "iterations": stats["iter_count"],
                "seconds": {"import": IMPORTED - START, "load": loaded - IMPORTED, "build": built - loaded, "solve": solved - built},
            }
        )
    )


if __name__ == "__main__":
    main()
