"""Forward kinematics cross-checked against Pinocchio, the field's reference, on every shipped model."""

import numpy as np
import pytest

from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from tests.conftest import shared_path

pin = pytest.importorskip("pinocchio")

MODELS = [
    "models/dlr_hand_ii/dlr_hand_ii.urdf",
    "data/tiago_mocap/tiago_48_schunk.urdf",
    "data/mukca/urdf/panda.urdf",
    "data/mukca/urdf/iiwa14.urdf",
    "data/mukca/urdf/gen3lite.urdf",
]


def pinocchio_configuration(model, values: dict[str, float]) -> np.ndarray:
    """Pinocchio's q vector (cos/sin for continuous joints) from per-joint values."""
    q = pin.neutral(model)
    for jid in range(1, model.njoints):
        name, joint = model.names[jid], model.joints[jid]
        v = values[name]
        if joint.nq == 2:
            q[joint.idx_q : joint.idx_q + 2] = np.cos(v), np.sin(v)
        else:
            q[joint.idx_q] = v
    return q


@pytest.mark.parametrize("relative", MODELS)
def test_fk_matches_pinocchio(relative):
    path = shared_path(relative)
    tree = load_urdf(path)
    robot = RobotModel(tree)
    reference = pin.buildModelFromUrdf(str(path))
    data = reference.createData()
    links = list(tree.links)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, len(tree.actuated))
        ours = np.asarray(robot.link_poses(robot.nominal, q, links))
        values = {k: float(v) for k, v in robot.joint_values(robot.nominal, q).items()}
        pin.framesForwardKinematics(reference, data, pinocchio_configuration(reference, values))
        for link, pose in zip(links, ours):
            frame = data.oMf[reference.getFrameId(link, pin.BODY)]
            worst = max(worst, np.abs(pose[:3, 3] - frame.translation).max())
            assert np.abs(pose[:3, :3] - frame.rotation).max() < 1e-10
    assert worst < 1e-10, f"max position difference {worst:.3e} m"
