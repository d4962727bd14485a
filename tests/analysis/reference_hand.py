"""An independent reference for the identifiability numbers: no robocal, no JAX.

Plain numpy: the DLR-Hand II modified-DH table read with PyYAML, forward kinematics written out
(row = RotX(alpha) TransX(a) RotZ(theta + q) TransZ(d), q4 = q3), fingertip capsules with a
segment-segment distance (Ericson, Real-Time Collision Detection, 5.1.9), and Jacobians by central
finite differences. The data are read from the example CSVs directly.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import yaml

COORDINATES = ("d", "theta", "a", "alpha")
STEP = 1e-6  # central differences: truncation ~ STEP^2, round-off ~ 1e-16 / STEP


def _number(value) -> float:
    return float(eval(str(value), {"__builtins__": {}}, {"pi": np.pi}))  # the table's "pi / 2" etc.


def _rot_x(angle):
    c, s = np.cos(angle), np.sin(angle)
    t = np.zeros(np.shape(angle) + (4, 4))
    t[..., 0, 0] = t[..., 3, 3] = 1.0
    t[..., 1, 1], t[..., 1, 2], t[..., 2, 1], t[..., 2, 2] = c, -s, s, c
    return t


def _rot_z(angle):
    c, s = np.cos(angle), np.sin(angle)
    t = np.zeros(np.shape(angle) + (4, 4))
    t[..., 2, 2] = t[..., 3, 3] = 1.0
    t[..., 0, 0], t[..., 0, 1], t[..., 1, 0], t[..., 1, 1] = c, -s, s, c
    return t


def _trans(x, y, z, shape=()):
    t = np.broadcast_to(np.eye(4), shape + (4, 4)).copy()
    t[..., 0, 3], t[..., 1, 3], t[..., 2, 3] = x, y, z
    return t


def _mdh(d, theta, a, alpha, q):
    """Modified-DH row for joint values q (n,): (n, 4, 4)."""
    n = np.shape(q)
    return _rot_x(np.full(n, alpha)) @ _trans(a, 0.0, 0.0, n) @ _rot_z(theta + q) @ _trans(0.0, 0.0, d, n)


def _rotvec(r):
    r = np.asarray(r, float)
    angle = np.linalg.norm(r)
    k = r / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


class ReferenceHand:
    """The table's fingers; parameters theta: (d, theta, a, alpha) of each joint row, named
    '<joint>.<coordinate>' in table order."""

    def __init__(self, table: Path, geometry: Path):
        spec = yaml.safe_load(Path(table).read_text())
        shapes = yaml.safe_load(Path(geometry).read_text())["links"]
        self.fingers = [c["name"] for c in spec["chains"]]
        self.names, nominal, self.chains = [], [], {}
        for chain in spec["chains"]:
            base = np.eye(4)
            base[:3, :3] = _rotvec(chain["base"]["rotvec"])
            base[:3, 3] = chain["base"]["xyz"]
            rows = []
            for row in chain["joints"]:
                rows.append((len(self.names), row["name"], row.get("mimic", {}).get("joint") if row.get("mimic") else None))
                for c in COORDINATES:
                    self.names.append(f"{row['name']}.{c}")
                    nominal.append(_number(row.get(c, 0.0)))
            tip = tuple(_number(chain["tip"].get(c, 0.0)) for c in COORDINATES)
            capsule = shapes[f"{chain['name']}_link4"][0]
            self.chains[chain["name"]] = (base, rows, tip, capsule)
        self.nominal = np.array(nominal)

    def frames(self, theta, finger: str, q: dict[str, np.ndarray]):
        """(link4 frame, tip frame), each (n, 4, 4), for joint values q[joint name] (n,)."""
        base, rows, tip, _ = self.chains[finger]
        n = len(next(iter(q.values())))
        t = np.broadcast_to(base, (n, 4, 4))
        for start, name, mimic in rows:
            d, th, a, al = theta[start : start + 4]
            t = t @ _mdh(d, th, a, al, q[mimic or name])
        return t, t @ _mdh(*tip, np.zeros(n))

    def tip(self, theta, finger, q):
        return self.frames(theta, finger, q)[1][:, :3, 3]

    def capsule(self, theta, finger, q):
        """Segment end points (n, 3) twice and the radius of the fingertip capsule, root frame."""
        link4 = self.frames(theta, finger, q)[0]
        shape = self.chains[finger][3]
        ends = [link4[:, :3, :3] @ np.asarray(shape[k], float) + link4[:, :3, 3] for k in ("p0", "p1")]
        return ends[0], ends[1], shape["radius"]


def segment_distance(p1, q1, p2, q2):
    """Distance between segments p1-q1 and p2-q2, rows of (n, 3) arrays (Ericson 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = (d1 * d1).sum(-1), (d2 * d2).sum(-1), (d2 * r).sum(-1)
    c, b = (d1 * r).sum(-1), (d1 * d2).sum(-1)
    denom = a * e - b * b
    s = np.where(denom > 1e-18, np.clip((b * f - c * e) / np.where(denom > 1e-18, denom, 1.0), 0.0, 1.0), 0.0)
    t = (b * s + f) / e
    s = np.where(t < 0, np.clip(-c / a, 0.0, 1.0), np.where(t > 1, np.clip((b - c) / a, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    return np.linalg.norm(p1 + d1 * s[:, None] - p2 - d2 * t[:, None], axis=-1)


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def joint_values(rows, columns) -> dict[str, np.ndarray]:
    return {c: np.array([float(r[c]) for r in rows]) for c in columns}


def contact_function(hand: ReferenceHand, rows):
    """theta -> signed distances (n,) of the rows' fingertip pairs (body names <finger>_link4)."""
    pairs = [(r["body_a"].removesuffix("_link4"), r["body_b"].removesuffix("_link4")) for r in rows]
    q = joint_values(rows, [k for k in rows[0] if k not in ("body_a", "body_b")])

    def distances(theta):
        out = np.empty(len(rows))
        for pair in sorted(set(pairs)):
            idx = np.array([i for i, p in enumerate(pairs) if p == pair])
            qi = {k: v[idx] for k, v in q.items()}
            (a0, a1, ra), (b0, b1, rb) = hand.capsule(theta, pair[0], qi), hand.capsule(theta, pair[1], qi)
            out[idx] = segment_distance(a0, a1, b0, b1) - ra - rb
        return out

    return distances


def task_function(hand: ReferenceHand, rows, fingers):
    """theta -> (n * (len(fingers) - 1) * 3,) tip positions of fingers[1:] minus that of fingers[0]."""
    q = joint_values(rows, [k for k in rows[0] if not k.endswith(("_x", "_y", "_z"))])

    def relative(theta):
        ref = hand.tip(theta, fingers[0], q)
        return np.stack([hand.tip(theta, f, q) - ref for f in fingers[1:]], axis=1).ravel()

    return relative


def jacobian(function, theta: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Central differences of function at theta with respect to theta[columns]."""
    out = []
    for j in columns:
        step = np.zeros_like(theta)
        step[j] = STEP
        out.append((function(theta + step) - function(theta - step)) / (2 * STEP))
    return np.stack(out, axis=1)


def columns_of(hand: ReferenceHand, fingers) -> np.ndarray:
    return np.array([i for i, name in enumerate(hand.names) if name.split("_")[0] in fingers])


def eigenvalues(j: np.ndarray) -> np.ndarray:
    """Eigenvalues of J^T J, descending (numpy's symmetric eigensolver, not robocal's SVD)."""
    return np.linalg.eigvalsh(j.T @ j)[::-1]
