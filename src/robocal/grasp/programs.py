"""The analytical grasp controller (seed paper, Sec. III) as two convex programs, solved by clarabel.

The grasp is linearized once, at the controller's start (`GraspModel`): N contacts with
outward object normals n_i, the grasp matrix G (6, 3N) that sums the stacked contact forces f
(the hand's forces ON the object) into a wrench about the object reference point, and the
contact Jacobian J (3N, L) of the hand's L actuated joints. Joint torques are tau = J^T f, and
the object is in equilibrium under an external wrench w when G f + w = 0. Units are SI: N, Nm,
m, rad.

Friction cone of contact i: f_n,i = -n_i . f_i >= 0 and ||f_t,i|| <= mu f_n,i (f_t,i the part
of f_i orthogonal to n_i), a second-order cone.

Wrench estimation (seed Eq. 8). Among contact forces in their cones, find the one whose torques
match the measured ones tau_m and whose external force (w = -G f, force rows) is smallest:

    minimize  ||(G f)_force|| + (F_SIGMA / sigma) ||J^T f - tau_m|| + FORCE_REG ||f||^2.

Torques that internal forces (G f = 0, palm contacts included) can explain cost nothing, so
they produce no wrench. The misfit is a penalty, not a constraint: a contact model that is a
little off leaves some torque unexplained instead of making the program infeasible. Both norms
are plain (not squared), which makes the penalty exact: whenever some f in the cones explains
tau_m and explaining a torque error of sigma (the sensor noise, Nm) takes less than
F_SIGMA = 1 N of external force, the program's minimizer is exactly the seed's (torques as hard
constraints). Squared norms would shrink every estimate towards zero: to 73-82 % of the
applied force on the fingertip grasps of the tests at sigma = 5 mNm. FORCE_REG only makes the minimizer unique: among the
force sets with the same objective it picks the smallest.

Torque optimization (seed Eq. 9-10). Contacts are springs of stiffness c: for joint motion dq
and a small object twist dx (translation, rotation),

    f = c (J dq - G^T dx + delta0),

delta0 the spring deflection at the controller's start. Find the motion with the smallest joint
torques that holds the object against w with a friction margin v (N) on every finger l whose
tip touches the object:

    minimize    ||J^T f||^2 + W_EQ ||D (G f + w)|| + regularization(dq, dx)
    subject to  f_i in its friction cone                         for every contact,
                s_i >= ||f_t,i||,  sum_{i on tip l} (mu f_n,i - s_i) >= v   for every finger l,
                |(J^T f)_j| <= torque_limit                       for every joint j.

Equilibrium is a penalty, so the program stays feasible when this contact set cannot resist w;
`TorqueCommand.equilibrium_residual` reports what is left. D = diag(1, 1, 1, 1/LEVER x 3)
measures moments as forces at a 5 cm lever. Like the estimate's misfit the penalty is a plain
norm, hence exact: with W_EQ = 100 Nm^2/N (one mN of residual costs as much as a squared torque
norm of 0.1 Nm^2) the residual is zero, to solver accuracy, unless holding w would raise the
squared torque norm by more than 100 Nm^2 per N of wrench. That slope is about
2 ||tau|| lever / mu, a few Nm^2/N for a hand whose joints give a few Nm at levers of cm. A
squared penalty would always leave a residual, the torque cost's slope over twice its weight;
a larger W_EQ only makes clarabel stall more often at an exactly held equilibrium (1000 did, in
5 of 48,000 benchmark cycles; 100 in none).

The regularization picks one motion among those giving the same forces (hand and object moving
together, joints that touch nothing), preferring joint motion to object motion:

    (c LEVER^2)^2 (MOTION_REG ||dq||^2 + OBJECT_REG (||dx_rot||^2 + ||dx_trans / LEVER||^2)),

(c LEVER^2)^2 being the squared torque a unit motion causes through one contact spring at a
5 cm lever. With MOTION_REG = 1e-6 and OBJECT_REG = 1e-4 it changes the torques by a part in
10^4 at most (where forces come from object motion alone, at palm contacts), while the object
stays where it is as far as the joints can make the contact deflections.

The command is q_d = q_init + dq + tau / kp: the impedance controller tau = kp (q_d - q_m)
then applies tau when the joints sit at q_m = q_init + dq.

Stated deviation from the seed: every modeled contact stays a sticking spring inside its
friction cone. The seed's contact law also lets a contact slide (force on the cone's boundary,
Eq. 6) or separate (no force under tension, Eq. 5); both branches make the programs non-convex
and are excluded here by construction. The price: no contact may pull, so a motion that would
unload a contact past its preload c delta0 is ruled out, and a grasp with many link and palm
contacts (delta0 = 0) can be unable to hold even w = 0 with the margin; the residual says so.

Each program is assembled once per grasp (`GraspPrograms`); a controller cycle only updates the
right-hand side (and, for delta0, the linear cost) of a persistent clarabel solver.
"""

from __future__ import annotations

from dataclasses import dataclass

import clarabel
import numpy as np
import scipy.sparse as sp

from robocal.errors import RobocalError

LEVER = 0.05  # m: typical contact lever in the hand (a fingertip about its joints, an object's radius)
F_SIGMA = 1.0  # N: external force worth one torque_sigma of unexplained joint torque
FORCE_REG = 1e-6  # 1/N: weight of ||f||^2 in the estimate (uniqueness only)
W_EQ = 100.0  # Nm^2/N: weight of the equilibrium residual's norm in the torque optimization
MOTION_REG = 1e-6  # weight of joint motion in the torque optimization's regularization (see the module doc)
OBJECT_REG = 1e-4  # weight of object motion there: moving the joints is preferred to moving the object


@dataclass(frozen=True, eq=False)
class GraspModel:
    """The linearized grasp the controller reasons about, fixed at the controller's start.

    Compared by identity: its arrays have no single truth value."""

    G: np.ndarray  # (6, 3N) grasp matrix: wrench on the object = G @ f; rows force, moment about the reference point
    J: np.ndarray  # (3N, L) contact-point Jacobians w.r.t. the L actuated joints; zero rows for palm contacts
    normals: np.ndarray  # (N, 3) unit outward object surface normals at the contacts
    tip_finger: np.ndarray  # (N,) int: finger index of a fingertip (distal link) contact, -1 otherwise
    mu: float = 0.4
    stiffness: float = 1.0e4  # c, N/m
    kp: float = 5.0  # Nm/rad
    torque_limit: float = np.inf  # Nm, |tau_j| the actuators can give (inf: none)

    def __post_init__(self):
        for name, dtype in (("G", float), ("J", float), ("normals", float), ("tip_finger", int)):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        n = len(self.normals)
        if self.normals.shape != (n, 3) or self.G.shape != (6, 3 * n) or self.J.ndim != 2 or len(self.J) != 3 * n or self.tip_finger.shape != (n,):
            shapes = f"G {self.G.shape}, J {self.J.shape}, normals {self.normals.shape}, tip_finger {self.tip_finger.shape}"
            raise RobocalError(f"GraspModel: inconsistent shapes {shapes} (expected (6, 3N), (3N, L), (N, 3), (N,))")
        if n and not np.allclose(np.linalg.norm(self.normals, axis=1), 1.0, atol=1e-6):
            raise RobocalError("GraspModel: the contact normals must be unit vectors")
        if not (self.mu > 0 and self.stiffness > 0 and self.kp > 0 and self.torque_limit > 0):
            raise RobocalError(
                f"GraspModel: mu, stiffness, kp and torque_limit must be positive (got {self.mu}, {self.stiffness}, {self.kp}, {self.torque_limit})"
            )

    @property
    def n_contacts(self) -> int:
        return len(self.normals)

    @property
    def n_joints(self) -> int:
        return self.J.shape[1]


@dataclass(frozen=True)
class WrenchEstimate:
    wrench: np.ndarray  # (6,) external wrench on the object, w = -G f (force N, moment Nm)
    forces: np.ndarray  # (N, 3) contact forces of the hand on the object
    torque_residual: np.ndarray  # (L,) J^T f - tau_measured, the torque the model leaves unexplained
    status: str  # clarabel's status: "Solved" or "AlmostSolved"


@dataclass(frozen=True)
class TorqueCommand:
    tau: np.ndarray  # (L,) joint torques J^T f
    dq: np.ndarray  # (L,) joint displacement from q_init
    dx: np.ndarray  # (6,) object twist (translation m, rotation rad), ideally ~0
    forces: np.ndarray  # (N, 3) contact forces c (J dq - G^T dx + delta0)
    q_offset: np.ndarray  # (L,) q_d - q_init = dq + tau / kp
    equilibrium_residual: np.ndarray  # (6,) G f + w
    status: str


def tangent_basis(normals: np.ndarray) -> np.ndarray:
    """(N, 2, 3) two orthonormal tangents per unit normal."""
    normals = np.asarray(normals, dtype=float).reshape(-1, 3)
    helper = np.where(np.abs(normals[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    t1 = helper - np.sum(helper * normals, axis=1, keepdims=True) * normals
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return np.stack([t1, np.cross(normals, t1)], axis=1)


def _settings(careful: bool = False) -> clarabel.DefaultSettings:
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.presolve_enable = False  # both needed for updating b and q in place
    settings.input_sparse_dropzeros = False
    if careful:  # the retry: no equilibration, shorter steps
        settings.equilibrate_enable = False
        settings.max_step_fraction = 0.9
    return settings


class _Program:
    """One conic program min 1/2 z'Pz + q'z s.t. b - A z in cones, kept in a persistent clarabel
    solver whose q and b change from call to call. A solve that ends in neither Solved nor
    AlmostSolved (rarely: the default path can stall near a cone's apex, as at an exactly held
    equilibrium) is repeated once from scratch with careful settings."""

    def __init__(self, what: str, P: sp.csc_matrix, q: np.ndarray, A: sp.csc_matrix, cones: list):
        self.what, self.P, self.q, self.A, self.cones = what, P, q, A, cones
        self.b = np.zeros(A.shape[0])
        self.solver = clarabel.DefaultSolver(P, q, A, self.b, cones, _settings())
        self.retries = 0

    def solve(self, *, q: np.ndarray | None = None, b: np.ndarray | None = None) -> tuple[np.ndarray, str]:
        self.q, self.b = (self.q if q is None else q), (self.b if b is None else b)
        self.solver.update(q=self.q, b=self.b)
        solution = self.solver.solve()
        if not self._ok(solution):
            self.retries += 1
            solution = clarabel.DefaultSolver(self.P, self.q, self.A, self.b, self.cones, _settings(careful=True)).solve()
            if not self._ok(solution):
                raise RobocalError(f"{self.what}: clarabel stopped with status {solution.status} after {solution.iterations} iterations")
        return np.asarray(solution.x), str(solution.status)

    @staticmethod
    def _ok(solution) -> bool:
        return str(solution.status) in ("Solved", "AlmostSolved") and bool(np.all(np.isfinite(solution.x)))


class GraspPrograms:
    """Both programs of one GraspModel, assembled once; `estimate` and `optimize` solve one
    controller cycle each. Not thread-safe: every call updates a persistent solver."""

    def __init__(self, model: GraspModel, *, torque_sigma: float = 0.005):
        if not torque_sigma > 0:
            raise RobocalError(f"torque_sigma must be positive (got {torque_sigma} Nm)")
        self.model, self.torque_sigma = model, torque_sigma
        n, tips = model.n_contacts, model.tip_finger >= 0
        self.fingers = np.unique(model.tip_finger[tips])
        # friction rows per contact: (-mu n . f, t1 . f, t2 . f), an SOC of dimension 3
        self._cone = np.zeros((3 * n, 3 * n))
        tangents = tangent_basis(model.normals)
        for i in range(n):
            self._cone[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = np.vstack([-model.mu * model.normals[i], tangents[i]])
        self._estimator: _Program | None = None
        self._optimizer: _Program | None = None

    @property
    def retries(self) -> int:
        """Solves so far that needed clarabel's careful retry."""
        return sum(program.retries for program in (self._estimator, self._optimizer) if program is not None)

    # ---- wrench estimation ------------------------------------------------------------------

    def _build_estimator(self) -> _Program:
        m, n, L = self.model, self.model.n_contacts, self.model.n_joints
        # variables z = (f (3N), t_w, t_r); slack = S z + const, clarabel's A = -S, b = const
        S = np.zeros((3 * n + 4 + 1 + L, 3 * n + 2))
        S[: 3 * n, : 3 * n] = self._cone
        S[3 * n, 3 * n] = 1.0  # (t_w, force part of G f) in SOC(4)
        S[3 * n + 1 : 3 * n + 4, : 3 * n] = m.G[:3]
        S[3 * n + 4, 3 * n + 1] = 1.0  # (t_r, J^T f - tau_m) in SOC(L + 1)
        S[3 * n + 5 :, : 3 * n] = m.J.T
        P = sp.diags(np.r_[np.full(3 * n, 2 * FORCE_REG), 0.0, 0.0]).tocsc()
        q = np.r_[np.zeros(3 * n), 1.0, F_SIGMA / self.torque_sigma]
        cones = [clarabel.SecondOrderConeT(3)] * n + [clarabel.SecondOrderConeT(4), clarabel.SecondOrderConeT(L + 1)]
        self._estimator = _Program("wrench estimation", P, q, sp.csc_matrix(-S), cones)
        return self._estimator

    def estimate(self, tau_measured: np.ndarray) -> WrenchEstimate:
        """The smallest external wrench consistent with the measured joint torques (L,)."""
        m, n, L = self.model, self.model.n_contacts, self.model.n_joints
        tau_measured = np.asarray(tau_measured, dtype=float)
        if tau_measured.shape != (L,) or not np.all(np.isfinite(tau_measured)):
            raise RobocalError(f"estimate_wrench: tau_measured must be {L} finite torques (got shape {tau_measured.shape})")
        estimator = self._estimator if self._estimator is not None else self._build_estimator()
        b = np.zeros(estimator.A.shape[0])
        b[3 * n + 5 :] = -tau_measured
        x, status = estimator.solve(b=b)
        f = x[: 3 * n]
        return WrenchEstimate(wrench=-(m.G @ f), forces=f.reshape(n, 3), torque_residual=m.J.T @ f - tau_measured, status=status)

    # ---- torque optimization ----------------------------------------------------------------

    def _build_optimizer(self) -> _Program:
        m, n, L = self.model, self.model.n_contacts, self.model.n_joints
        c, tips = m.stiffness, np.flatnonzero(m.tip_finger >= 0)
        T, F, nu = len(tips), len(self.fingers), L + 6
        K = 2 * L if np.isfinite(m.torque_limit) else 0  # -limit <= tau <= limit
        N = T + F + K  # rows of the nonnegative cone
        # variables z = (u (L + 6), s (T), t), u the motion in newtons: c LEVER dq, c dx_trans,
        # c LEVER dx_rot; f = B u + c delta0. The objective is divided by LEVER^2 so that
        # clarabel sees entries of order one (its static regularization, 1e-8, would
        # otherwise outweigh the motion regularization).
        self._unit = c * np.r_[np.full(L, LEVER), np.ones(3), np.full(3, LEVER)]  # u / (dq, dx)
        self._B = np.hstack([m.J, -m.G.T]) * (c / self._unit)
        # slack = S_f f + S_z z + b0: rows (NN: T tips, F margins, K torque limits) (SOC3 x N)
        # (SOC7: t, D (G f + w))
        rows = N + 3 * n + 7
        S_f, S_z = np.zeros((rows, 3 * n)), np.zeros((rows, nu + T + 1))
        cone = self._cone.copy()
        for k, i in enumerate(tips):
            S_f[k] = cone[3 * i]  # mu f_n,i - s_i >= 0
            S_z[k, nu + k] = -1.0
            cone[3 * i] = 0.0  # its cone's first entry becomes s_i
            S_z[N + 3 * i, nu + k] = 1.0
        for j, finger in enumerate(self.fingers):  # sum over the finger's tips of (mu f_n - s) >= v
            mine = m.tip_finger[tips] == finger
            S_f[T + j], S_z[T + j] = S_f[:T][mine].sum(axis=0), S_z[:T][mine].sum(axis=0)
        if K:
            S_f[T + F : N] = np.vstack([-m.J.T, m.J.T])  # limit -+ J^T f >= 0
        S_f[N : N + 3 * n] = cone
        D = np.r_[np.ones(3), np.full(3, 1.0 / LEVER)]
        S_z[N + 3 * n, -1] = 1.0
        S_f[N + 3 * n + 1 :] = D[:, None] * m.G
        self._b0 = np.zeros(rows)
        self._b0[T + F : N] = m.torque_limit
        self._S_f, self._D, self._T, self._F, self._N = S_f, D, T, F, N
        A = -np.hstack([S_f @ self._B, S_z[:, nu:]])  # S_z has no entries on u: it acts through f
        self._JB = JB = m.J.T @ self._B / LEVER  # tau / LEVER per u
        P = np.zeros((nu + T + 1, nu + T + 1))
        P[:nu, :nu] = 2 * (JB.T @ JB + np.diag(np.r_[np.full(L, MOTION_REG), np.full(6, OBJECT_REG)]))
        self._q_opt = np.r_[np.zeros(nu + T), W_EQ / LEVER**2]
        cones = [clarabel.NonnegativeConeT(N)] if N else []
        cones += [clarabel.SecondOrderConeT(3)] * n + [clarabel.SecondOrderConeT(7)]
        self._optimizer = _Program("torque optimization", sp.csc_matrix(np.triu(P)), self._q_opt, sp.csc_matrix(A), cones)
        return self._optimizer

    def optimize(self, wrench: np.ndarray, margin: float, delta0: np.ndarray | None = None) -> TorqueCommand:
        """The smallest joint torques that hold the object at its initial pose against `wrench`
        (6,) with friction margin `margin` (N) on every fingertip in contact; delta0 (3N,) is
        the contact springs' deflection at the controller's start (zero by default)."""
        m, n, L = self.model, self.model.n_contacts, self.model.n_joints
        wrench = np.asarray(wrench, dtype=float)
        if wrench.shape != (6,) or not np.all(np.isfinite(wrench)):
            raise RobocalError(f"optimize_torques: the wrench must be 6 finite numbers (got shape {wrench.shape})")
        if not (np.isfinite(margin) and margin >= 0):
            raise RobocalError(f"optimize_torques: the friction margin must be >= 0 N (got {margin})")
        f0 = np.zeros(3 * n) if delta0 is None else m.stiffness * np.asarray(delta0, dtype=float).reshape(-1)
        if f0.shape != (3 * n,) or not np.all(np.isfinite(f0)):
            raise RobocalError(f"optimize_torques: delta0 must hold 3N = {3 * n} finite values")
        optimizer = self._optimizer if self._optimizer is not None else self._build_optimizer()
        T, F, N, nu = self._T, self._F, self._N, L + 6
        b = self._S_f @ f0 + self._b0
        b[T : T + F] -= margin
        b[N + 3 * n + 1 :] += self._D * wrench
        q = self._q_opt.copy()
        q[:nu] = 2 * self._JB.T @ (m.J.T @ f0 / LEVER)
        x, status = optimizer.solve(q=q, b=b)
        u = x[:nu]
        f = self._B @ u + f0
        tau = m.J.T @ f
        motion = u / self._unit
        dq, dx = motion[:L], motion[L:]
        return TorqueCommand(
            tau=tau,
            dq=dq,
            dx=dx,
            forces=f.reshape(n, 3),
            q_offset=dq + tau / m.kp,
            equilibrium_residual=m.G @ f + wrench,
            status=status,
        )


def programs_for(model: GraspModel, torque_sigma: float = 0.005) -> GraspPrograms:
    """The assembled programs of `model`, built on first use and kept on the model itself (in
    a private attribute past the frozen dataclass), so they live and go exactly as long as it."""
    per_sigma = model.__dict__.setdefault("_programs", {})
    if torque_sigma not in per_sigma:
        per_sigma[torque_sigma] = GraspPrograms(model, torque_sigma=torque_sigma)
    return per_sigma[torque_sigma]


def estimate_wrench(model: GraspModel, tau_measured: np.ndarray, *, torque_sigma: float = 0.005) -> WrenchEstimate:
    """The smallest external wrench on the object consistent with the measured joint torques
    (see the module docstring); torque_sigma (Nm) is the torque-sensor noise level."""
    return programs_for(model, torque_sigma).estimate(tau_measured)


def optimize_torques(model: GraspModel, wrench: np.ndarray, *, margin: float, delta0: np.ndarray | None = None) -> TorqueCommand:
    """The smallest joint torques holding the object against `wrench` with friction margin
    `margin` (N) per fingertip (see the module docstring), as a command for the impedance
    controller: q_d = q_init + q_offset."""
    return programs_for(model).optimize(wrench, margin, delta0)
