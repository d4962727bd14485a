"""Forward kinematics as one compiled graph: the NumPy and JAX paths of the transforms agree,
the motion of a joint equals an independent rotation (SciPy's rotation vector), a DH row equals
the product of its elementary transforms, and batched FK on rows padded to a bucket gives the
unpadded poses and compiles once for every row count in the bucket."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robocal.kinematics import model as model_module
from robocal.kinematics import transforms as tf
from robocal.kinematics.model import RobotModel, row_bucket
from robocal.kinematics.tree import Joint, Origin
from robocal.kinematics.urdf import load_urdf
from robocal.simulation.sampling import sample_configurations
from tests.kinematics.test_jacobian import URDF

# A rotation entry is a sum of a few products of numbers <= 1: a handful of ulps (1e-16) apart
# between two correct formulas; 1e-14 catches any wrong sign or axis (errors of order 1).
EXACT = 1e-14


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("urdf") / "tiny.urdf"
    path.write_text(URDF)
    tree = load_urdf(path)
    return RobotModel(tree, {"j1": "full", "j2": "xyzrpy", "j3": "joint_offsets"})


def test_row_bucket():
    assert [row_bucket(n) for n in (0, 1, 16, 17, 33, 4096, 4097, 200000)] == [16, 16, 16, 32, 64, 4096, 8192, 200704]
    for n in range(1, 20000, 37):
        assert n <= row_bucket(n) <= max(16, 2 * n, n + 4095)


def test_motion_is_a_rotation_about_the_axis():
    """Revolute and prismatic motions against SciPy's rotation vector and axis * q, on NumPy
    inputs and traced (all joints in one jit), for unit and non-unit axes."""
    rng = np.random.default_rng(0)
    joints, angles, expected = [], [], []
    for k in range(8):
        axis = tuple(rng.normal(size=3) * (1.0 if k % 2 else 1.0 / 3.0))
        q = float(rng.uniform(-4.0, 4.0))
        rotation, shift = np.eye(4), np.eye(4)
        rotation[:3, :3] = Rotation.from_rotvec(np.asarray(axis) * q).as_matrix()
        shift[:3, 3] = np.asarray(axis) * q
        for kind, matrix in (("revolute", rotation), ("prismatic", shift)):
            joints.append(Joint("j", kind, "a", "b", Origin("xyzrpy", (0.0,) * 6), axis=axis))
            angles.append(q)
            expected.append(matrix)
    numpy_values = [joint.motion(q) for joint, q in zip(joints, angles)]
    assert all(isinstance(value, np.ndarray) for value in numpy_values)
    np.testing.assert_allclose(np.stack(numpy_values), np.stack(expected), atol=EXACT)
    traced = jax.jit(lambda qs: jnp.stack([joint.motion(qs[i]) for i, joint in enumerate(joints)]))(jnp.asarray(angles))
    np.testing.assert_allclose(np.asarray(traced), np.stack(expected), atol=EXACT)


def test_transforms_agree_in_numpy_and_jax():
    """Each transform on NumPy inputs (NumPy out) against its traced JAX path (one vmapped jit
    per function) and, for rotations, against SciPy."""
    rng = np.random.default_rng(1)
    deltas, dh, quaternions = rng.normal(size=(20, 6)), rng.normal(size=(20, 4)), rng.normal(size=(20, 4))
    for f, args in (
        (tf.perturbation, (deltas,)),
        (tf.rpy_to_matrix, (deltas[:, 3:],)),
        (tf.dh_modified, tuple(dh.T)),
        (tf.dh_standard, tuple(dh.T)),
        (tf.quaternion_to_matrix, (quaternions,)),
    ):
        numpy_values = [f(*row) for row in zip(*args)]
        assert all(isinstance(value, np.ndarray) for value in numpy_values)
        traced = jax.jit(jax.vmap(f))(*(jnp.asarray(a) for a in args))
        np.testing.assert_allclose(np.stack(numpy_values), np.asarray(traced), atol=EXACT)
    for delta, v, u in zip(deltas, rng.normal(size=(20, 3)), rng.normal(size=(20, 3))):
        np.testing.assert_allclose(tf.skew(v) @ u, np.cross(v, u), atol=EXACT)
        rotation = Rotation.from_rotvec(delta[3:]).as_matrix()
        np.testing.assert_allclose(tf.perturbation(delta)[:3, :3], rotation, atol=EXACT)
        np.testing.assert_allclose(tf.matrix_to_rotvec(rotation), Rotation.from_matrix(rotation).as_rotvec(), atol=1e-12)
        np.testing.assert_allclose(tf.rpy_to_matrix(delta[3:]), Rotation.from_euler("xyz", delta[3:]).as_matrix(), atol=EXACT)  # fixed axes x, y, z


def test_dh_rows_are_the_products_of_their_four_elementary_transforms():
    """The multiplied-out DH matrices against the products that define them, built from SciPy's
    rotations: modified RotX(alpha) TransX(a) RotZ(theta) TransZ(d), standard RotZ(theta)
    TransZ(d) TransX(a) RotX(alpha)."""

    def rotation(axis: str, angle: float) -> np.ndarray:
        m = np.eye(4)
        m[:3, :3] = Rotation.from_euler(axis, angle).as_matrix()
        return m

    def shift(axis: int, length: float) -> np.ndarray:
        m = np.eye(4)
        m[axis, 3] = length
        return m

    for d, theta, a, alpha in np.random.default_rng(2).normal(size=(20, 4)) * [0.1, 2.0, 0.1, 2.0]:
        modified = rotation("x", alpha) @ shift(0, a) @ rotation("z", theta) @ shift(2, d)
        standard = rotation("z", theta) @ shift(2, d) @ shift(0, a) @ rotation("x", alpha)
        np.testing.assert_allclose(tf.dh_modified(d, theta, a, alpha), modified, atol=EXACT)
        np.testing.assert_allclose(tf.dh_standard(d, theta, a, alpha), standard, atol=EXACT)


def test_batched_fk_padded_rows_compile_once(tiny):
    """Row counts within one bucket reuse one executable, and the padded batch gives the poses of
    `link_poses` row by row."""
    theta = np.random.default_rng(2).normal(scale=0.05, size=len(tiny.parameters))
    q = sample_configurations(tiny.tree, 30, seed=3)
    links = ("tool", "l2")
    compiled = model_module._batch_link_poses._cache_size()
    poses = {n: tiny.batch_link_poses(theta, q[:n], links) for n in (17, 30, 25)}  # one bucket: 32 rows
    assert model_module._batch_link_poses._cache_size() == compiled + 1
    for n, batch in poses.items():
        assert batch.shape == (n, 2, 4, 4)
        single = np.stack([np.asarray(tiny.link_poses(theta, qi, links)) for qi in q[:n]])
        np.testing.assert_allclose(batch, single, atol=EXACT)
