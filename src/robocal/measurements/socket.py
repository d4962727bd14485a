"""Sphere-in-socket measurements (MUKCa): groups of joint configurations that hold one point of a
link (the ball center on the flange) in one fixed, unknown place (a socket of a plate).

The figures users judge a placement by, for predicted ball centers p_i in socket s(i) with mean m_s:
- MAE: mean over all rows of ||p_i - m_s(i)|| (the count-weighted mean of the per-socket means);
- distortion: | ||m_0 - m_1|| - distance |, the error of the known distance between sockets 0 and 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def socket_means(points, socket, n_sockets: int):
    """(n_sockets, 3) mean point of each socket; `socket` (n,) holds integer ids 0..n_sockets-1."""
    one_hot = jax.nn.one_hot(socket, n_sockets, dtype=points.dtype)
    return (one_hot.T @ points) / one_hot.sum(axis=0)[:, None]


def socket_spread(points, socket, n_sockets: int):
    """(n,) distance of each predicted point from the mean of its socket."""
    return jnp.linalg.norm(points - socket_means(points, socket, n_sockets)[socket], axis=-1)


def socket_mae(points, socket, n_sockets: int):
    return socket_spread(points, socket, n_sockets).mean()


def socket_distortion(points, socket, n_sockets: int, distance: float):
    """| ||m_0 - m_1|| - distance |."""
    means = socket_means(points, socket, n_sockets)
    return jnp.abs(jnp.linalg.norm(means[1] - means[0]) - distance)
