"""Quadratic objectives with known constants, as oracle pytrees.

``f(x) = 0.5 (x - x*)^T H (x - x*) + f*`` with ``H`` symmetric PSD; ``L = lambda_max(H)``,
``mu = lambda_min(H)``. ``value_and_grad(x, key)`` adds optional Gaussian gradient noise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxopt_icml.problems.games import random_orthogonal

__all__ = ["Quadratic", "random_quadratic"]


class Quadratic(struct.PyTreeNode):
    H: jax.Array
    optimum: jax.Array
    min_value: jax.Array
    lipschitz: jax.Array
    strong_convexity: jax.Array
    grad_noise: jax.Array

    def value(self, x, key=None):
        del key
        d = x - self.optimum
        return 0.5 * d @ (self.H @ d) + self.min_value

    def grad(self, x, key=None):
        g = self.H @ (x - self.optimum)
        if key is None:
            return g
        return g + self.grad_noise * jax.random.normal(key, g.shape, g.dtype)

    def value_and_grad(self, x, key=None):
        return self.value(x), self.grad(x, key)


def random_quadratic(key, d: int, *, mu: float = 0.01, L: float = 1.0, grad_noise: float = 0.0,
                     dtype=jnp.float32) -> Quadratic:
    """Eigenvalues of ``H`` log-spaced in ``[mu, L]`` (``mu = 0`` gives a zero eigenvalue)."""
    if d < 1 or not 0 <= mu <= L:
        raise ValueError(f"need d >= 1 and 0 <= mu <= L, got d={d}, mu={mu}, L={L}")
    k1, k2 = jax.random.split(key)
    Q = random_orthogonal(k1, d, dtype)
    eigs = jnp.geomspace(max(mu, 1e-12), L, d).astype(dtype)
    eigs = eigs.at[0].set(mu)
    H = (Q * eigs[None, :]) @ Q.T
    x_star = jax.random.normal(k2, (d,), dtype)
    f = lambda v: jnp.asarray(v, dtype)
    return Quadratic(H, x_star, f(0.0), jnp.max(eigs), jnp.min(eigs), f(grad_noise))
