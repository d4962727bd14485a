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
