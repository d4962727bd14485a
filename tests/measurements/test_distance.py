"""The distance measurement: rows against a plain numpy computation, and a simulated ball-bar /
string-pot calibration of the Panda's joint offsets that recovers the true offsets."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from robocal.calibration import calibrate
from robocal.errors import InputError
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.problem import load_problem
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from tests.conftest import REPO

PANDA = REPO / "examples" / "mukca" / "data" / "urdf" / "panda.urdf"
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
TOOL = np.array([0.03, -0.02, 0.12])  # m, ball center on panda_link8
PIVOT = np.array([0.45, 0.25, 0.10])  # m, fixed pivot in the robot root frame, off the base axis


def write(tmp_path, q: np.ndarray, lengths: np.ndarray | None, **measurement):
    """The problem of a distance measurement `bar` on q (and a `length` column, if given)."""
    header = JOINTS + ([] if lengths is None else ["length"])
    rows = q[:, :7] if lengths is None else np.column_stack([q[:, :7], lengths])
    (tmp_path / "bar.csv").write_text(",".join(header) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    config = {
        "robot": str(PANDA),
        "parameters": {"joints": {name: "joint_offsets" for name in JOINTS}},
        "priors": {"joint_offset": None},
        "measurements": [
            {
                "name": "bar",
                "type": "distance",
                "data": "bar.csv",
                "sigma": 1e-5,
                "a": {"link": "panda_link8", "point": TOOL.tolist()},
                "b": {"point": PIVOT.tolist()},
            }
            | measurement
        ],
    }
    path = tmp_path / "problem.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return load_problem(path)


def configurations(n: int, seed: int) -> np.ndarray:
    """(n, 8) arm configurations within the limits, the finger joint (not in the data) at 0."""
    q = sample_configurations(load_robot(PANDA), n, seed=seed)
    q[:, 7] = 0.0
    return q


def tool_to_pivot(robot: RobotModel, theta: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(n,) |tool ball - pivot| (m) by numpy from the link poses."""
    pose = batch_link_poses(robot, theta, q, ("panda_link8",))[:, 0]
    return np.linalg.norm(pose[:, :3, :3] @ TOOL + pose[:, :3, 3] - PIVOT, axis=1)


def test_rows_are_the_distance_error_over_sigma(tmp_path) -> None:
    q = configurations(12, seed=0)
    problem = write(tmp_path, q, None, length=0.6)
    m = problem.measurements[0]
    rows = np.asarray(m.rows(problem.theta0, problem.map_problem.data[0]))
    expected = (tool_to_pivot(problem.robot, problem.robot.nominal, q) - 0.6) / 1e-5
    assert rows.shape == (12, 1)
    assert np.abs(rows[:, 0] - expected).max() < 1e-6  # 1e-11 m
    assert m.figures(m.data, problem.theta0)["max"] == pytest.approx(np.abs(expected).max() * 1e-5, rel=1e-9)


def test_ball_bar_lengths_recover_the_true_joint_offsets(tmp_path) -> None:
    """Noise-free tool-to-pivot lengths at 40 configurations: the 7 joint offsets (perturbed by up
    to the default offset tolerance) are recovered to far below a microradian."""
    tree = load_robot(PANDA)
    truth = RobotModel(tree, {name: "joint_offsets" for name in JOINTS})
    theta_true = perturb_parameters(truth, seed=3)
    q = configurations(40, seed=1)
    problem = write(tmp_path, q, tool_to_pivot(truth, theta_true, q))
    assert [p.name for p in problem.robot.parameters] == [p.name for p in truth.parameters]
    assert np.abs(theta_true - truth.nominal).max() > 1e-3  # the perturbation matters
    estimate = calibrate(problem).estimate[problem.layout.blocks["robot"]]
    assert np.abs(estimate - theta_true).max() < 1e-7


def test_two_fixed_points_and_unknown_links_are_located_errors(tmp_path) -> None:
    q = np.zeros((2, 8))
    with pytest.raises(InputError, match=r"field 'measurements\[0\]\.a\.link': both points are fixed"):
        write(tmp_path, q, None, length=0.5, a={"point": [0, 0, 0]})
    with pytest.raises(InputError, match=r"field 'measurements\[0\]\.b\.link': unknown link 'flange'"):
        write(tmp_path, q, None, length=0.5, b={"link": "flange"})
    with pytest.raises(InputError, match=r"bar\.csv: missing length column 'length'"):
        write(tmp_path, q, None)  # no `length:` and no length column


def test_self_touch_of_two_fingers_reads_both_chains(tmp_path) -> None:
    """Fore fingertip to thumb tip on the DLR-Hand II: the data hold only the six joints that move
    the two chains, and each row is the numpy distance between the two points."""
    hand = REPO / "src" / "robocal" / "models" / "dlr_hand_ii.yaml"
    tree = load_robot(hand)
    q = sample_configurations(tree, 10, seed=2)
    q[:, 6:] = 0.0  # middle and ring fingers: not in the data, at their default 0
    columns = ["thumb_q1", "thumb_q2", "thumb_q3", "fore_q1", "fore_q2", "fore_q3"]
    (tmp_path / "touch.csv").write_text(",".join(columns) + "\n" + "\n".join(",".join(repr(float(v)) for v in r[:6]) for r in q) + "\n")
    fore, thumb = np.array([0.004, 0.0, 0.0]), np.array([0.0, -0.003, 0.001])
    config = {
        "robot": str(hand),
        "measurements": [
            {
                "name": "touch",
                "type": "distance",
                "data": "touch.csv",
                "sigma": 1e-4,
                "length": 0.01,
                "a": {"link": "fore_tip", "point": fore.tolist()},
                "b": {"link": "thumb_tip", "point": thumb.tolist()},
            }
        ],
    }
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    problem = load_problem(tmp_path / "problem.yaml")
    m = problem.measurements[0]
    assert m.chain_joints() == tuple(columns)
    poses = batch_link_poses(problem.robot, problem.robot.nominal, q, ("fore_tip", "thumb_tip"))
    a = poses[:, 0, :3, :3] @ fore + poses[:, 0, :3, 3]
    b = poses[:, 1, :3, :3] @ thumb + poses[:, 1, :3, 3]
    expected = (np.linalg.norm(a - b, axis=1) - 0.01) / 1e-4
    rows = np.asarray(m.rows(problem.theta0, problem.map_problem.data[0]))[:, 0]
    assert np.abs(expected).max() > 10  # the fingertips are centimetres apart: the rows are not all ~0
    assert np.abs(rows - expected).max() < 1e-7  # 1e-11 m
