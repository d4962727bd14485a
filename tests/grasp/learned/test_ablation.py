import jax
import jax.numpy as jnp
import numpy as np

from robocal.grasp.learned import ablation, dataset
from robocal.grasp.learned.controller import skeleton
from robocal.grasp.learned.training import TrainConfig

jax.config.update("jax_enable_x64", True)


def test_quiet_force_reports_the_capped_and_the_network_force(tiny_dataset):
    """A network whose output is a constant (output scale 0): force (3, 4, 0) N = 5 N and a
    scale of 2 N; quiet_force reports 2 N capped and 5 N before the cap, on exactly the
    samples whose applied force is below 0.5 N."""
    net = skeleton(TrainConfig(network="estimator", width=8, channels=(2, 2, 2, 2)), 16, 12)
    raw_scale = float(np.log(np.expm1(2.0)))  # softplus^-1(2)
    constant = net.__class__(net.net, net.x_mean, net.x_std, jnp.array([3.0, 4.0, 0, 0, 0, 0, raw_scale]), jnp.zeros(7))
    result = ablation.quiet_force(constant, tiny_dataset, "train")
    applied = np.linalg.norm(dataset.load(tiny_dataset, "train")["wrench"][:, :3], axis=1)
    assert result["samples"] == int((applied < ablation.QUIET).sum()) > 0
    assert abs(result["mean_force"] - 2.0) < 1e-12 and abs(result["mean_network_force"] - 5.0) < 1e-12
    assert abs(result["mean_applied"] - applied[applied < ablation.QUIET].mean()) < 1e-12


def test_sphere_map_caps_like_the_controller_and_marks_the_broken_directions():
    """The same constant estimator on one precision grasp: every direction the teacher's contact
    model holds reports 2 N capped (5 N uncapped), the one with no force too; the directions
    where `equilibrium` finds no rest (computed here independently) are NaN."""
    from robocal.grasp.controller import AnalyticalPredictor, linearized
    from robocal.grasp.grasps import generate_grasps
    from robocal.grasp.hand import Hand
    from robocal.grasp.learned.teacher import MARGIN, equilibrium
    from robocal.grasp.objects import get
    from robocal.grasp.simulation import situation

    hand, obj = Hand.load(), get("sphere_35")
    grasp = next(g for g in generate_grasps(hand, obj, seed=0, n_power=0, n_precision=1, until_ok=True) if g.ok)
    scene = situation(hand, obj, grasp)
    estimator = skeleton(TrainConfig(network="estimator", width=8, channels=(2, 2, 2, 2)), 16, 12)
    raw_scale = float(np.log(np.expm1(2.0)))
    constant = estimator.__class__(estimator.net, estimator.x_mean, estimator.x_std, jnp.array([3.0, 4.0, 0, 0, 0, 0, raw_scale]), jnp.zeros(7))
    zero = skeleton(TrainConfig(network="predictor", width=8, channels=(2, 2, 2, 2)), 16, 12)
    zero = zero.__class__(zero.net, zero.x_mean, zero.x_std, jnp.zeros(12), jnp.zeros(12))  # offsets 0: q_d = q_init
    directions = ablation.force_directions(7, 12)
    assert np.allclose(np.linalg.norm(directions, axis=-1), 1.0, atol=1e-15)
    voxels = np.zeros((16, 16, 16))
    capped = ablation.sphere_map(constant, zero, scene, voxels, directions, force=20.0)
    uncapped = ablation.sphere_map(constant, zero, scene, voxels, directions, force=20.0, cap=False)
    model, preload = linearized(scene), AnalyticalPredictor(MARGIN)
    preload.start(scene)
    breaks = [equilibrium(model, np.zeros(12), np.r_[20.0 * u, 0, 0, 0], preload.delta0) is None for u in directions.reshape(-1, 3)] + [False]
    assert np.array_equal(np.isnan(capped), np.array(breaks)) and np.array_equal(np.isnan(uncapped), np.array(breaks))
    assert 0 < sum(breaks) < len(breaks) - 1  # 20 N pushes break a tripod on a sphere in some directions, not in all
    assert np.allclose(capped[~np.isnan(capped)], 2.0, atol=1e-6) and np.allclose(uncapped[~np.isnan(uncapped)], 5.0, atol=1e-6)
