"""The identifiability numbers of the DLR-Hand II (contact-calibration paper, Sec. VI-A, Figs. 5/6)
on the shipped example data, by robocal and by an independent numpy reference (reference_hand.py).

Nominal hand, 100 contacts per finger pair and 100 task configurations per finger:
- whole hand: 56 of 64 identifiable for contact and task; the 8-dimensional kernel is exactly the
  parallel axes (q2, q3, q4 of each finger: only the sum of their d's moves anything), and
  kernel(contact) is in kernel(task);
- single pair (thumb, fore): 26 (contact) vs 27 (task) of 32; the task kernel is the parallel
  axes plus one common translation of both fingers (d and a of both q1 rows); the contact kernel
  adds one more direction, so the inclusion fails;
- three fingers: 41 / 41 of 48 with thumb, fore, middle (fore and middle are mounted parallel,
  which leaves one more common translation), 42 / 42 with thumb, fore, ring;
- generic hand (every DH parameter perturbed, no parallel axes): no exact kernel, but 6 (contact)
  and 8 (task) eigenvalues still below 1e-6.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robocal.analysis.identifiability import kernel_inclusion, subspace_inclusion
from robocal.analysis.sensitivity import analyze, analyze_mode, measurement_jacobians
from robocal.problem import load_problem

from . import reference_hand as ref

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "dlr_hand_ii"
MODELS = REPO / "src" / "robocal" / "models"
TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")
PAIR, THREE, THREE_RING, PARALLEL_PAIR = TIPS[:2], TIPS[:3], ("thumb_tip", "fore_tip", "ring_tip"), ("fore_tip", "middle_tip")
FINGERS = ("thumb", "fore", "middle", "ring")
THRESHOLD = 1e-6


def _modes(analyses):
    return {a.links: {r.name: r for r in a.measurements} | {"inclusion": a.inclusion} for a in analyses}


@pytest.fixture(scope="module")
def nominal():
    problem = load_problem(EXAMPLES / "identifiability.yaml")
    jacobians = measurement_jacobians(problem)
    modes = [None, PAIR, THREE, THREE_RING, PARALLEL_PAIR]
    analyses = [analyze_mode(problem, jacobians, links, kernel_of="contacts", within="task") for links in modes]
    return problem, jacobians, _modes(analyses)


@pytest.fixture(scope="module")
def generic():
    problem = load_problem(EXAMPLES / "identifiability_generic.yaml")
    return problem, _modes(analyze(problem, modes=[None], kernel_of="contacts", within="task"))


def parallel_axes(names: list[str]) -> np.ndarray:
    """Orthonormal basis of the shifts along each finger's parallel q2/q3/q4 axes that keep the
    sum of their d's: 2 per finger."""
    directions = []
    for finger in FINGERS:
        for a, b in (("q2", "q3"), ("q3", "q4")):
            v = np.zeros(len(names))
            v[names.index(f"{finger}_{a}.d")], v[names.index(f"{finger}_{b}.d")] = 1.0, -1.0
            directions.append(v)
    q, _ = np.linalg.qr(np.array(directions).T)
    return q


def test_whole_hand_56_of_64(nominal):
    _, _, modes = nominal
    for name in ("contacts", "task"):
        ident = modes[None][name].identifiability
        assert (ident.n_parameters, ident.rank) == (64, 56)
        assert ident.eigenvalues[55] > 1e-5 and ident.eigenvalues[56] < 1e-25  # a clean gap: the kernel is exact


def test_kernel_is_the_parallel_axes(nominal):
    problem, _, modes = nominal
    names = problem.layout.names
    axes = parallel_axes(names)
    for name in ("contacts", "task"):
        ident = modes[None][name].identifiability
        both_ways = subspace_inclusion(ident.basis, axes), subspace_inclusion(axes, ident.basis)
        assert all(t.holds and t.residual < 1e-9 for t in both_ways)
        # listed by name: each direction is "d of one of q2/q3 minus d of q4" within one finger
        assert len(ident.kernel) == 8
        for direction in ident.kernel:
            assert len(direction) == 2 and sorted(direction.values()) == [-0.7071, 0.7071]
            fingers = {key.split("_")[0] for key in direction}
            joints = {key.split("_")[1] for key in direction}
            assert len(fingers) == 1 and joints <= {"q2.d", "q3.d", "q4.d"} and direction[f"{fingers.pop()}_q4.d"] == -0.7071


def test_whole_hand_contact_kernel_in_task_kernel(nominal):
    inclusion = nominal[2][None]["inclusion"]
    assert inclusion["holds"] and (inclusion["dim_a"], inclusion["dim_b"]) == (8, 8)
    assert inclusion["residual"] < 1e-9


def test_single_pair_26_contact_27_task(nominal):
    modes = nominal[2]
    contact, task = (modes[PAIR][n].identifiability for n in ("contacts", "task"))
    assert (contact.n_parameters, contact.rank, task.rank) == (32, 26, 27)
    # the task's extra kernel direction: both fingers shifted alike, by the d and a of their q1 rows
    extra = [d for d in task.kernel if not all(k.endswith(("q2.d", "q3.d", "q4.d")) for k in d)]
    assert len(extra) == 1 and set(extra[0]) == {"thumb_q1.d", "thumb_q1.a", "fore_q1.d", "fore_q1.a"}
    assert not modes[PAIR]["inclusion"]["holds"] and modes[PAIR]["inclusion"]["residual"] == pytest.approx(1.0)
    reverse = kernel_inclusion(task, contact)  # what the task cannot see, the contacts cannot either
    assert reverse.holds and reverse.residual < 1e-9


def test_three_fingers(nominal):
    modes = nominal[2]
    for links, rank in ((THREE, 41), (THREE_RING, 42)):
        for name in ("contacts", "task"):
            ident = modes[links][name].identifiability
            assert (ident.n_parameters, ident.rank) == (48, rank), (links, name)
        assert modes[links]["inclusion"]["holds"] and modes[links]["inclusion"]["residual"] < 1e-9


def test_parallel_mounted_pair(nominal):
    """Fore and middle finger have the same base orientation: two common translations."""
    modes = nominal[2]
    assert (modes[PARALLEL_PAIR]["contacts"].identifiability.rank, modes[PARALLEL_PAIR]["task"].identifiability.rank) == (24, 26)


def test_generic_hand_has_no_exact_kernel(generic, nominal):
    _, modes = generic
    for name, below in (("contacts", 6), ("task", 8)):
        ident = modes[None][name].identifiability
        sigma = np.sqrt(ident.eigenvalues)
        assert sigma[-1] / sigma[0] > 1e-9, name  # round-off of an exact kernel is ~1e-16 sigma_max (nominal hand below)
        assert ident.n_parameters - ident.rank == below, name
    nominal_sigma = np.sqrt(nominal[2][None]["contacts"].identifiability.eigenvalues)
    assert (nominal_sigma / nominal_sigma[0] < 1e-13).sum() == 8


def test_quality_indices_of_the_example(nominal):
    """Pinned numbers of the shipped example (docs/analysis.md); kappa is invariant to units."""
    modes = nominal[2]
    contact, task = modes[None]["contacts"].quality, modes[None]["task"].quality
    assert contact["scaled_condition_number"] == pytest.approx(2552.3, rel=1e-3)
    assert task["scaled_condition_number"] == pytest.approx(182.95, rel=1e-3)
    sigma = np.sqrt(modes[None]["task"].identifiability.eigenvalues[:56])
    assert task["observability"]["O2"] == pytest.approx(sigma[-1] / sigma[0])
    assert task["observability"]["O3"] == pytest.approx(0.0240963, rel=1e-5)


# ---- the independent reference -------------------------------------------------------------


@pytest.fixture(scope="module")
def reference():
    """Reference Jacobians (numpy FK, capsule distance, central differences) of both example hands."""
    out = {}
    for hand_name, table in (("nominal", MODELS / "dlr_hand_ii.yaml"), ("generic", EXAMPLES / "generic_hand_ii.yaml")):
        hand = ref.ReferenceHand(table, MODELS / "dlr_hand_ii_geometry.yaml")
        prefix = "identifiability" if hand_name == "nominal" else "generic"
        contacts, task = ref.read_rows(EXAMPLES / f"{prefix}_contacts.csv"), ref.read_rows(EXAMPLES / f"{prefix}_task.csv")
        out[hand_name] = (hand, contacts, task)
    return out


def _reference_counts(hand, contacts, task, fingers) -> tuple[int, int, int]:
    """(parameters, identifiable by contact, identifiable by task) with only the fingers' rows and parameters."""
    columns = ref.columns_of(hand, fingers)
    rows = [r for r in contacts if r["body_a"].split("_")[0] in fingers and r["body_b"].split("_")[0] in fingers]
    jc = ref.jacobian(ref.contact_function(hand, rows), hand.nominal, columns)
    jt = ref.jacobian(ref.task_function(hand, task, list(fingers)), hand.nominal, columns)
    return len(columns), int((ref.eigenvalues(jc) > THRESHOLD).sum()), int((ref.eigenvalues(jt) > THRESHOLD).sum())


def test_reference_reproduces_the_jacobian(reference, nominal):
    hand, contacts, task = reference["nominal"]
    problem, jacobians, _ = nominal
    assert hand.names == problem.layout.names
    assert np.abs(ref.contact_function(hand, contacts)(hand.nominal)).max() < 1e-12  # the data are contacts of this hand
    everything = np.arange(len(hand.names))
    jc = ref.jacobian(ref.contact_function(hand, contacts), hand.nominal, everything)
    jt = ref.jacobian(ref.task_function(hand, task, list(FINGERS)), hand.nominal, everything)
    # robocal orders contact rows as in the file, task rows as (configuration, tip, xyz)
    assert np.abs(jc - jacobians[0]).max() < 1e-8 and np.abs(jt - jacobians[1]).max() < 1e-8


def test_each_contact_row_moves_with_its_own_fingers_only(nominal):
    """The contacts' Jacobian (the solver's: one reverse-mode row function for every pair, through
    the custom JVP; equal to the reference above) is exactly zero for every parameter that moves
    neither body of the row's pair, and not for those that do."""
    problem, jacobians, _ = nominal
    m = problem.measurements[0]
    pair_of_row = np.asarray(m.data.pair)
    for k, pair in enumerate(m.pairs):
        moving = np.zeros(len(problem.theta0), bool)
        moving[m.ctx.robot_block.start + m.ctx.model.parameters_affecting(pair)] = True
        block = jacobians[0][pair_of_row == k]
        assert 0 < moving.sum() < len(moving)  # two fingers of four
        assert np.all(block[:, ~moving] == 0.0)
        assert np.abs(block[:, moving]).max() > 1e-2  # m per m or rad: far from zero


@pytest.mark.parametrize(
    "hand_name, fingers, expected",
    [
        ("nominal", FINGERS, (64, 56, 56)),
        ("nominal", ("thumb", "fore"), (32, 26, 27)),
        ("nominal", ("thumb", "fore", "middle"), (48, 41, 41)),
        ("nominal", ("thumb", "fore", "ring"), (48, 42, 42)),
        ("nominal", ("fore", "middle"), (32, 24, 26)),
        ("generic", FINGERS, (64, 58, 56)),
    ],
)
def test_reference_reproduces_the_counts(reference, hand_name, fingers, expected):
    assert _reference_counts(*reference[hand_name], fingers) == expected


def test_reference_kernel_is_the_parallel_axes(reference):
    hand, contacts, task = reference["nominal"]
    everything = np.arange(len(hand.names))
    for function in (ref.contact_function(hand, contacts), ref.task_function(hand, task, list(FINGERS))):
        j = ref.jacobian(function, hand.nominal, everything)
        w, v = np.linalg.eigh(j.T @ j)
        kernel = v[:, w <= THRESHOLD]
        assert kernel.shape[1] == 8 and subspace_inclusion(kernel, parallel_axes(hand.names)).residual < 1e-6


def test_console_summary(nominal):
    from rich.console import Console

    from robocal.analysis.sensitivity import print_modes

    problem, jacobians, _ = nominal
    console = Console(record=True, width=120)
    print_modes([analyze_mode(problem, jacobians, PAIR, kernel_of="contacts", within="task")], console)
    text = console.export_text()
    assert "26 of 32" in text and "27 of 32" in text and "kappa" in text
    assert "kernel(contacts) in kernel(task): does not hold" in text
    assert "thumb_q2.d +0.707, thumb_q4.d -0.707" in text


def test_marker_rows_and_points():
    """Markers: whole or dropped by link; Schroer points are the 3-row marker positions, not the
    orientation rows."""
    from types import SimpleNamespace

    from robocal.analysis.sensitivity import mode_rows
    from robocal.measurements.markers import MarkerMeasurement

    markers = object.__new__(MarkerMeasurement)  # two rows of two points and an orientation: 9 columns
    markers.config = SimpleNamespace(link="fore_tip", points=[1, 2], sigma=1.0, orientation=SimpleNamespace(sigma=1.0))
    markers.lines = np.arange(2)
    jacobian = np.arange(18 * 4, dtype=float).reshape(18, 4)
    kept = mode_rows(markers, jacobian, lambda link: link == "fore_tip")
    assert np.array_equal(kept.jacobian, jacobian)
    assert [list(g) for g in kept.points] == [[0, 1, 2], [3, 4, 5], [9, 10, 11], [12, 13, 14]]
    assert mode_rows(markers, jacobian, lambda link: False).jacobian.shape == (0, 4)
