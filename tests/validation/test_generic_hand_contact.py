"""A hand that is not the DLR-Hand II goes through the same contact pipeline unchanged: a
generated 3-finger URDF (non-parallel axes, a <mimic> joint, capsules as URDF collisions),
simulated contacts, the `contact` measurement with `full` placement errors, and the task error."""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest
import yaml

from robocal.analysis.task_error import task_errors
from robocal.calibration import calibrate
from robocal.geometry.links import shapes_from_urdf
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from robocal.simulation.contact import simulate_contacts, write_contact_csv
from robocal.simulation.hands import generic_hand
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.testset import uniform_cartesian_test_set

PERTURBATION = (0.002, float(np.deg2rad(2.0)))  # m, rad: true hand vs nominal, also the prior


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    out = tmp_path_factory.mktemp("generic")
    urdf = generic_hand(out / "hand.urdf")
    tree, geometry = load_urdf(urdf), shapes_from_urdf(urdf)
    truth = RobotModel(tree, {j.name: "full" for j in tree.joints if j.moves})
    theta_true = perturb_parameters(truth, seed=1, translation=PERTURBATION[0], rotation=PERTURBATION[1], joint_offset=PERTURBATION[1])
    sim = simulate_contacts(truth, truth.nominal, truth, theta_true, geometry, list(itertools.combinations(sorted(geometry), 2)), 40, 1)
    write_contact_csv(out / "contacts.csv", tree, sim)
    problem = {
        "robot": "hand.urdf",
        "geometry": {"files": ["hand.urdf"]},
        "parameters": {"joints": {"*": "full"}},
        "priors": {"translation": PERTURBATION[0], "rotation": PERTURBATION[1], "joint_offset": PERTURBATION[1]},
        "measurements": [{"name": "contacts", "type": "contact", "data": "contacts.csv", "sigma": 1e-4}],
    }
    (out / "problem.yaml").write_text(yaml.safe_dump(problem))
    loaded = load_problem(out / "problem.yaml")
    return loaded, calibrate(loaded), truth, theta_true


def test_contacts_are_fitted(fitted):
    problem, cal, _, _ = fitted
    assert cal.solution.converged
    distances = np.asarray(problem.measurements[0].signed_distances(jnp.asarray(cal.estimate), problem.map_problem.data[0]))
    assert np.abs(distances).max() < 1e-4  # within the 0.1 mm contact sigma at every contact


def test_task_error_shrinks(fitted):
    problem, cal, truth, theta_true = fitted
    tips = [link for link in truth.tree.links if link.endswith("tip")]
    q = uniform_cartesian_test_set(truth, truth.nominal, tips, 300, seed=5)
    robot = problem.layout.blocks["robot"]
    before = task_errors(problem.robot, problem.theta0[robot], truth, theta_true, q, tips[0], tips[1:]).mean()
    after = task_errors(problem.robot, cal.estimate[robot], truth, theta_true, q, tips[0], tips[1:]).mean()
    assert before > 3e-3
    assert after < 0.35 * before  # three chains identify less than four (the paper's Fig. 5/6)
