"""`robocal analyze --kernel-of fingertips --within task` where the task is only the problem's
`task:` (tips and a seeded test set, no data file): the nominal DLR-Hand II with its example
fingertip data (a `task` measurement named `fingertips`, 300 rows; its contacts would do as well,
at four times the compile time) and a `task:` of all four fingertips relative to the thumb tip.

The task's kernel, as robocal reports it, is checked against an independent Jacobian of the task
over the same test configurations (numpy forward kinematics written from the DH table and central
differences, tests/analysis/reference_hand.py, no robocal or JAX): every kernel direction moves no
task vector (to 1e-9 m per unit direction), and the reference Jacobian has exactly the rank
robocal finds. Whole hand: 56 of 64 (the kernel: the parallel axes); thumb and fore alone: 27 of
32; the measured fingertips' kernel lies in the task's in both.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from robocal.analysis.sensitivity import TASK, analyze
from robocal.errors import RobocalError
from robocal.problem import load_problem
from robocal.simulation.testset import uniform_cartesian_test_set

from . import reference_hand as ref

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "dlr_hand_ii"
MODELS = REPO / "src" / "robocal" / "models"
TIPS = ("thumb_tip", "fore_tip", "middle_tip", "ring_tip")
N, SEED = 30, 4


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    folder = tmp_path_factory.mktemp("task_only")
    spec = {
        "robot": str(MODELS / "dlr_hand_ii.yaml"),
        "geometry": {"files": [str(MODELS / "dlr_hand_ii_geometry.yaml")]},
        "parameters": {"joints": {"*_q?": "dh"}},
        "measurements": [
            {
                "name": "fingertips",
                "type": "task",
                "data": str(EXAMPLES / "identifiability_task.csv"),
                "sigma": 1e-4,
                "reference": "thumb_tip",
                "links": list(TIPS[1:]),
            }
        ],
        "task": {"tips": list(TIPS), "reference": "thumb_tip", "n": N, "seed": SEED},
    }
    (folder / "problem.yaml").write_text(yaml.safe_dump(spec))
    return load_problem(folder / "problem.yaml")


@pytest.fixture(scope="module")
def modes(problem):
    whole, pair = analyze(problem, modes=[None, TIPS[:2]], kernel_of="fingertips", within=TASK)
    return whole, pair


def reference_task_jacobian(problem, fingers) -> tuple[np.ndarray, np.ndarray]:
    """Central-difference Jacobian of the fingers' tips relative to the first finger's over the
    task's test set, by the numpy reference hand, in the columns of the fingers' parameters; and those columns."""
    hand = ref.ReferenceHand(MODELS / "dlr_hand_ii.yaml", MODELS / "dlr_hand_ii_geometry.yaml")
    assert hand.names == problem.layout.names
    robot = problem.robot
    q = uniform_cartesian_test_set(robot, robot.nominal, TIPS, N, SEED)  # the task's test set, as the task draws it
    rows = [{joint: str(value) for joint, value in zip(robot.tree.actuated, row)} for row in q]
    columns = ref.columns_of(hand, fingers)
    return ref.jacobian(ref.task_function(hand, rows, list(fingers)), hand.nominal, columns), columns


@pytest.mark.parametrize("fingers, rank", [(("thumb", "fore", "middle", "ring"), 56), (("thumb", "fore"), 27)])
def test_task_kernel_is_the_null_space_of_the_task_jacobian(problem, modes, fingers, rank):
    mode = modes[0] if len(fingers) == 4 else modes[1]
    jacobian, columns = reference_task_jacobian(problem, fingers)
    assert [problem.layout.names[c] for c in columns] == mode.parameters
    ident = mode.task.identifiability
    assert (ident.rank, ident.n_parameters) == (rank, len(columns))
    assert int((ref.eigenvalues(jacobian) > ident.threshold).sum()) == rank
    basis = ident.basis
    assert basis.shape == (len(columns), len(columns) - rank)
    assert np.abs(jacobian @ basis).max() < 1e-9
    complement = np.linalg.svd(basis.T)[2][len(columns) - rank :].T  # what the task does see: no such direction is in the null space
    assert np.linalg.svd(jacobian @ complement, compute_uv=False).min() ** 2 > ident.threshold


def test_inclusion_against_the_task(modes):
    whole, pair = modes
    assert whole.inclusion["holds"] and (whole.inclusion["dim_a"], whole.inclusion["dim_b"]) == (8, 8)
    assert pair.inclusion["holds"] and (pair.inclusion["dim_a"], pair.inclusion["dim_b"]) == (5, 5)
    report = json.loads(json.dumps(whole.to_dict()))
    assert report["task"]["rank"] == 56 and report["inclusion"]["within"] == TASK
    assert report["task"]["description"] == f"fore_tip, middle_tip, ring_tip relative to thumb_tip, {N} configurations (seed {SEED})"
    assert report["rank"] == 56 and [m["name"] for m in report["measurements"]] == ["fingertips"]  # the task is not a measurement


def test_task_name_only_in_the_inclusion_test(problem):
    with pytest.raises(RobocalError, match="no measurement named 'task'"):
        analyze(problem, measurements=["task"])
