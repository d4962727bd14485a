"""A generated hand that is not the DLR-Hand II works unchanged: its URDF loads, its FK matches
Pinocchio, its fingertip capsules are read from the collision geometry, and a `markers`
calibration with the `full` parameterization recovers the task function exactly from noise-free
fingertip data. The problem is compiled once (module fixture)."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from robocal.analysis.task_error import task_errors
from robocal.calibration import calibrate
from robocal.geometry.links import shapes_from_urdf
from robocal.geometry.primitives import Capsule
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from robocal.simulation.hands import CAPSULE_RADIUS, generic_hand
from robocal.simulation.markers import MarkerBody, simulate_markers
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import sample_configurations
from robocal.simulation.testset import uniform_cartesian_test_set
from tests.kinematics.test_fk_pinocchio import pinocchio_configuration

TIPS = ("f0_tip", "f1_tip", "f2_tip")
DISTAL = ("f0_link4", "f1_link4", "f2_link3")  # finger kinds: coupled 4-joint, 4-joint, 3-joint
NO_PRIOR = {"translation": None, "rotation": None, "joint_offset": None}


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Path:
    return generic_hand(tmp_path_factory.mktemp("hand") / "hand.urdf")


def test_structure(hand):
    tree = load_urdf(hand)
    assert [tree.actuated_for([tip]) for tip in TIPS] == [("f0_j1", "f0_j2", "f0_j3"), ("f1_j1", "f1_j2", "f1_j3", "f1_j4"), ("f2_j1", "f2_j2", "f2_j3")]
    assert tree.joint("f0_j4").mimic.joint == "f0_j3"
    assert all(tree.joint(name).limits is not None for name in tree.actuated)
    # Not the DLR-Hand II: no 75 mm proximal link, and no two flexion axes of a finger parallel.
    robot = RobotModel(tree)
    for tip in TIPS:
        joints = [tree.joints[j] for j in tree.chain(tip) if tree.joints[j].moves][1:]
        links = tuple(j.child for j in joints)
        poses = np.asarray(robot.link_poses(robot.nominal, np.zeros(len(tree.actuated)), links))
        axes = np.einsum("nij,nj->ni", poses[:, :3, :3], np.array([j.axis for j in joints]))
        for a in range(len(axes)):
            for b in range(a + 1, len(axes)):
                assert np.linalg.norm(np.cross(axes[a], axes[b])) > 1e-3
        assert abs(np.linalg.norm(poses[1, :3, 3] - poses[0, :3, 3]) - 0.075) > 0.01
    assert generic_hand(hand.with_name("again.urdf")).read_bytes() == hand.read_bytes()
    assert generic_hand(hand.with_name("other.urdf"), seed=1).read_bytes() != hand.read_bytes()


def test_fk_matches_pinocchio(hand):
    pin = pytest.importorskip("pinocchio")
    tree = load_urdf(hand)
    robot = RobotModel(tree)
    reference = pin.buildModelFromUrdf(str(hand))
    data = reference.createData()
    links = list(tree.links)
    for q in sample_configurations(tree, 20, seed=7):
        ours = np.asarray(robot.link_poses(robot.nominal, q, links))
        values = {k: float(v) for k, v in robot.joint_values(robot.nominal, q).items()}
        pin.framesForwardKinematics(reference, data, pinocchio_configuration(reference, values))
        for link, pose in zip(links, ours):
            frame = data.oMf[reference.getFrameId(link, pin.BODY)]
            assert np.abs(pose[:3, 3] - frame.translation).max() < 1e-10
            assert np.abs(pose[:3, :3] - frame.rotation).max() < 1e-10


def test_distal_links_carry_capsules(hand):
    shapes = shapes_from_urdf(hand)
    assert sorted(shapes) == sorted(DISTAL)
    tree = load_urdf(hand)
    for link, tip in zip(DISTAL, TIPS):
        (shape,) = shapes[link]
        assert isinstance(shape.primitive, Capsule) and shape.primitive.radius == CAPSULE_RADIUS
        tip_xyz = tree.joint(f"{tip}_joint").origin.values[:3]
        np.testing.assert_allclose(shape.primitive.p1, tip_xyz, atol=1e-15)  # the tip is the centre of the fingertip sphere


@pytest.fixture(scope="module")
def calibrated(hand):
    """Every joint in `full` mode (origins of finger bases and tips included), perturbed by up to
    5 mm / 5 deg; noise-free fingertip positions at 60 configurations, no prior."""
    folder = hand.parent
    tree = load_urdf(hand)
    parameters = {"default": "full"}
    bodies = [MarkerBody(tip, tip, np.zeros((1, 3))) for tip in TIPS]
    problem_file = folder / "problem.yaml"
    measurements = [{"type": "markers", "name": b.name, "data": "train.csv", "sigma": 1e-4, "link": b.link, "points": b.points()} for b in bodies]
    problem_file.write_text(yaml.safe_dump({"robot": hand.name, "parameters": parameters, "priors": NO_PRIOR, "measurements": measurements}))
    truth = RobotModel(tree, {j.name: "full" for j in tree.joints})
    theta_true = perturb_parameters(truth, seed=0)
    simulate_markers(folder / "train.csv", truth, theta_true, sample_configurations(tree, 60, seed=1), bodies)
    problem = load_problem(problem_file)
    assert [p.name for p in problem.robot.parameters] == [p.name for p in truth.parameters]
    cal = calibrate(problem)
    q = uniform_cartesian_test_set(problem.robot, problem.robot.nominal, TIPS, 500, seed=2)
    robot = problem.robot
    return SimpleNamespace(
        cal=cal,
        errors=lambda theta: task_errors(robot, theta, truth, theta_true, q, TIPS[0], TIPS),
        estimate=cal.estimate[problem.layout.blocks["robot"]],
        nominal=robot.nominal,
    )


def test_full_marker_calibration_recovers_the_task_function(calibrated):
    assert calibrated.cal.solution.converged
    assert calibrated.cal.identifiability.rank < len(calibrated.estimate)  # `full` is redundant here, as on any hand
    assert calibrated.errors(calibrated.nominal).mean() > 5e-3
    assert calibrated.errors(calibrated.estimate).max() < 1e-6
