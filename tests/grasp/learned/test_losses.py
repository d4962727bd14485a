import jax
import jax.numpy as jnp
import numpy as np
import optax

from robocal.grasp.learned import losses

jax.config.update("jax_enable_x64", True)


def test_scale_loss_hand_computed():
    # true scales 1, 3; predicted 2 for both; t = 0.1
    # sample 1: true below -> (1 - 0.1)(2 - 1) = 0.9; sample 2: true above -> 0.1 (3 - 2) = 0.1
    value = losses.scale_loss(jnp.array([2.0, 2.0]), jnp.array([1.0, 3.0]), t=0.1)
    assert abs(float(value) - (0.9 + 0.1) / 2) < 1e-15


def test_wrench_loss_counts_only_samples_below_predicted_scale():
    wrench_true = jnp.array([[3.0, 4.0, 0, 0, 0, 0], [0.0, 0.0, 1.0, 0, 0, 0]])  # scales 5, 1
    wrench = jnp.array([[0.0, 0.0, 0, 0, 0, 1.0], [0.0, 0.0, 0.0, 2.0, 0, 0]])
    scale = jnp.array([2.0, 2.0])  # only sample 2 (scale 1 < 2) counts: 1 + 4 = 5
    assert abs(float(losses.wrench_loss(wrench, wrench_true, scale)) - 5.0 / 2) < 1e-15
    # total = scale loss (t = 0.05: 0.05 * 3 and 0.95 * 1) + wrench loss
    total = losses.estimator_loss(wrench, scale, wrench_true)
    assert abs(float(total) - ((0.05 * 3 + 0.95 * 1) / 2 + 2.5)) < 1e-15


def test_wrench_mask_carries_no_gradient_into_scale():
    wrench_true = jnp.array([[0.0, 0.0, 1.0, 0, 0, 0]])
    grad = jax.grad(lambda s: losses.wrench_loss(jnp.zeros((1, 6)), wrench_true, s))(jnp.array([2.0]))
    assert float(grad[0]) == 0.0


def test_scale_loss_optimum_is_the_t_quantile():
    """A single scale fitted by gradient descent to one ambiguous input's ground-truth scales
    lands on their t-quantile (within the spacing of the samples)."""
    rng = np.random.default_rng(0)
    truth = jnp.asarray(rng.uniform(0.0, 10.0, 2000))
    t = losses.QUANTILE
    opt = optax.adam(0.05)
    s = jnp.array(5.0)
    state = opt.init(s)
    step_grad = jax.jit(jax.grad(lambda s: losses.scale_loss(jnp.full(truth.shape, s), truth, t)))
    for _ in range(1500):
        updates, state = opt.update(step_grad(s), state)
        s = optax.apply_updates(s, updates)
    quantile = float(np.quantile(np.asarray(truth), t))
    assert abs(float(s) - quantile) < 0.05  # samples lie ~0.005 apart; adam jitters a few steps
    assert abs(float(jnp.mean(truth < s)) - t) < 0.005
