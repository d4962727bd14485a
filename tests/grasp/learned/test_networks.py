import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from robocal.grasp.learned import networks

jax.config.update("jax_enable_x64", True)


def _inputs(grid, n, seed=1):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    voxels = (jax.random.uniform(k1, (grid, grid, grid)) > 0.7).astype(jnp.float64)
    return voxels, jax.random.normal(k2, (n,))


def test_shapes_for_configurable_grids_and_split_outputs():
    """Shapes by abstract evaluation; the scale's sign on computed values."""
    for grid in (16, 24):
        # abstract inputs: only their shapes enter (random values would compile programs of their own)
        voxels, x = jax.ShapeDtypeStruct((grid,) * 3, jnp.float64), jax.ShapeDtypeStruct((48,), jnp.float64)

        def estimate(voxels, x, grid=grid):
            est = networks.estimator_network(grid, 12, 0, width=32)
            return est.encode(voxels), networks.split_estimate(est(voxels, x))

        features, (wrench, scale) = eqx.filter_eval_shape(estimate, voxels, x)
        side = -(-grid // 16)  # four stride-2 convolutions: G -> ceil(G / 16) per side, 32 channels
        assert features.shape == (32 * side**3,) and wrench.shape == (6,) and scale.shape == ()
        torques = eqx.filter_eval_shape(lambda voxels, grid=grid: networks.predictor_network(grid, 12, 0, width=32)(voxels, jnp.zeros(30)), voxels)
        assert torques.shape == (12,)
    voxels, x = _inputs(16, 48)
    _, scale = networks.split_estimate(networks.estimator_network(16, 12, 0, width=32)(voxels, x))
    assert float(scale) > 0.0


def test_encoding_once_gives_the_full_call_and_seed_fixes_weights():
    net = networks.estimator_network(16, 12, 3, width=32)
    voxels, x = _inputs(16, 48)
    features = net.encode(voxels)
    np.testing.assert_allclose(net.head(features, x), net(voxels, x), rtol=0, atol=1e-14)
    again = networks.estimator_network(16, 12, 3, width=32)
    np.testing.assert_array_equal(again(voxels, x), net(voxels, x))
    other = networks.estimator_network(16, 12, 4, width=32)
    assert not np.allclose(other(voxels, x), net(voxels, x))


def test_object_grid_changes_the_output():
    net = networks.predictor_network(16, 12, 0, width=32)
    voxels, _ = _inputs(16, 48)  # the grid of the other tests (the vector input is not used here)
    x = jnp.zeros(30)
    assert float(jnp.max(jnp.abs(net(voxels, x) - net(jnp.zeros_like(voxels), x)))) > 1e-6


def clipped_shift(grid: np.ndarray, offset) -> np.ndarray:
    """The reference for `networks.moved`: one grid (G, G, G) indexed with clipped coordinates,
    new[i] = old[clip(i - offset)] along each axis."""
    return grid[np.ix_(*(np.clip(np.arange(n) - o, 0, n - 1) for n, o in zip(grid.shape, offset)))]


def test_moved_grids_are_each_grids_content_at_its_offset_edge_padded():
    """`moved` against `clipped_shift`, random grids and offsets up to the reach, uint8 kept;
    offset 0 is the grid itself."""
    rng = np.random.default_rng(4)
    grids = (rng.random((5, 9, 10, 11)) > 0.6).astype(np.uint8)
    offsets = rng.integers(-3, 4, size=(5, 3))
    offsets[0] = 0
    got = np.asarray(networks.moved(jnp.asarray(grids), offsets, 3))
    for grid, offset, out in zip(grids, offsets, got):
        np.testing.assert_array_equal(out, clipped_shift(grid, offset))
    assert got.dtype == np.uint8 and np.array_equal(got[0], grids[0])
