"""Monotone operators and games with known solutions, as oracle pytrees.

Every problem here is a ``flax.struct`` dataclass (a pytree of arrays), so it can be vmapped over
instances, and exposes ``operator(z, key) -> F(z)``. ``key`` is ignored by deterministic operators;
:class:`NoisyOperator` wraps a deterministic one and uses it. Exact diagnostics
(``residual_sq``, ``distance_to_solution``) never use noise.

The variable ``z`` is a 1-D array (for games, ``z = concat(x, y)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

__all__ = [
    "LinearOperator",
    "NoisyOperator",
    "bilinear_game",
    "monotone_linear",
    "random_orthogonal",
    "strongly_monotone_linear",
]


class LinearOperator(struct.PyTreeNode):
    """Affine operator ``F(z) = M z + c`` with ``M`` monotone (``M + M^T`` PSD).

    Attributes:
      M: ``(d, d)`` matrix.
      c: ``(d,)`` offset.
      solution: one zero of ``F`` (for bilinear games the minimum-norm one is not unique: the
        solution set is ``solution + null(M)``).
      lipschitz: ``||M||_2``.
      strong_monotonicity: ``lambda_min((M + M^T)/2)`` (0 when merely monotone).
    """

    M: jax.Array
    c: jax.Array
    solution: jax.Array
    lipschitz: jax.Array
    strong_monotonicity: jax.Array

    def operator(self, z, key=None):
        del key
        return self.M @ z + self.c

    def residual_sq(self, z):
        """``||F(z)||^2``, exact."""
        r = self.operator(z)
        return jnp.vdot(r, r)

    def project_solution(self, z):
        """Euclidean projection of ``z`` onto the solution set ``{z: M z + c = 0}``."""
        pinv = jnp.linalg.pinv(self.M)
        return z - pinv @ (self.M @ z + self.c)

    def distance_to_solution_sq(self, z):
        d = z - self.project_solution(z)
        return jnp.vdot(d, d)


class NoisyOperator(struct.PyTreeNode):
    """Unbiased stochastic operator with variance that may grow with ``||z||^2``.

    ``F~(z; xi) = (M + noise_scale * G_xi) z + c + additive_scale * e_xi`` where ``G_xi`` has i.i.d.
    ``N(0, 1/d)`` entries and ``e_xi ~ N(0, I)``. Then ``E F~ = F`` and
    ``E||F~ - F||^2 = noise_scale^2 ||z||^2 + additive_scale^2 d``: the variance is unbounded on
    ``R^d`` (the regime of GOMA's stochastic claim).
    """

    base: LinearOperator
    noise_scale: jax.Array
    additive_scale: jax.Array

    def operator(self, z, key):
        d = z.shape[0]
        k1, k2 = jax.random.split(key)
        G = jax.random.normal(k1, (d, d), z.dtype) / jnp.sqrt(jnp.asarray(d, z.dtype))
        e = jax.random.normal(k2, (d,), z.dtype)
        return self.base.operator(z) + self.noise_scale * (G @ z) + self.additive_scale * e

    def residual_sq(self, z):
        return self.base.residual_sq(z)

    def distance_to_solution_sq(self, z):
        return self.base.distance_to_solution_sq(z)


def random_orthogonal(key, n: int, dtype=jnp.float32):
    """Haar-distributed orthogonal matrix (QR of a Gaussian with sign correction).

    Note: building many problems at once with ``jit(vmap(...))`` in float64 has been seen to hang
    in jaxlib 0.10.2 on a 2-core CPU (batched QR/pinv custom calls waiting on one thread pool);
    build instances with ``jax.lax.map`` instead of ``vmap`` there.
    """
    q, r = jnp.linalg.qr(jax.random.normal(key, (n, n), dtype))
    return q * jnp.sign(jnp.diag(r))[None, :]


def bilinear_game(key, n: int, *, singular_values=None, num_zero: int = 1,
                  dtype=jnp.float32) -> LinearOperator:
    """``min_x max_y x^T A y + b^T x - c^T y`` with ``A = U diag(s) V^T``, ``x, y in R^n``.

    The operator is ``F(x, y) = (A y + b, -A^T x + c)``: monotone (skew-symmetric ``M``), not
    strongly monotone, ``L = max s``. By default ``s ~ U[0, 1]`` with the largest set to 1 and
    ``num_zero`` exact zeros, so the solution set is an affine subspace. ``b, c`` are chosen so a
    random point is a solution.
    """
    if n < 1 or not 0 <= num_zero <= n:
        raise ValueError(f"need n >= 1 and 0 <= num_zero <= n, got n={n}, num_zero={num_zero}")
    ku, kv, ks, kz = jax.random.split(key, 4)
    U = random_orthogonal(ku, n, dtype)
    V = random_orthogonal(kv, n, dtype)
    if singular_values is None:
        s = jax.random.uniform(ks, (n,), dtype)
        s = s.at[0].set(1.0)
        s = s.at[n - num_zero:].set(0.0) if num_zero else s
    else:
        s = jnp.asarray(singular_values, dtype)
    A = (U * s[None, :]) @ V.T
    zero = jnp.zeros((n, n), dtype)
    M = jnp.block([[zero, A], [-A.T, zero]])
    z_star = jax.random.normal(kz, (2 * n,), dtype)
    c = -M @ z_star
    return LinearOperator(M, c, z_star, jnp.max(jnp.abs(s)), jnp.asarray(0.0, dtype))


def _linear_from(key, d, sym_eigs, skew_scale, dtype) -> LinearOperator:
    k1, k2, k3 = jax.random.split(key, 3)
    Q = random_orthogonal(k1, d, dtype)
    S = (Q * sym_eigs[None, :]) @ Q.T
    B = jax.random.normal(k2, (d, d), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
    M = S + skew_scale * (B - B.T) / 2
    z_star = jax.random.normal(k3, (d,), dtype)
    c = -M @ z_star
    return LinearOperator(M, c, z_star, jnp.linalg.norm(M, 2), jnp.min(sym_eigs))


def strongly_monotone_linear(key, d: int, *, mu: float = 0.1, skew_scale: float = 1.0,
                             dtype=jnp.float32) -> LinearOperator:
    """``F(z) = M (z - z*)`` with symmetric part eigenvalues in ``[mu, 1]`` plus a skew part."""
    if d < 1 or not mu > 0:
        raise ValueError(f"need d >= 1 and mu > 0, got d={d}, mu={mu}")
    eigs = jnp.linspace(mu, 1.0, d, dtype=dtype)
    return _linear_from(key, d, eigs, skew_scale, dtype)


def monotone_linear(key, d: int, *, rank: int | None = None, skew_scale: float = 1.0,
                    dtype=jnp.float32) -> LinearOperator:
    """Merely monotone ``F(z) = M (z - z*)``: symmetric part PSD with ``d - rank`` zero eigenvalues.

    The solution is unique when the skew part makes ``M`` nonsingular (generic), but the operator
    is not strongly monotone: ``lambda_min((M + M^T)/2) = 0``.
    """
    rank = d // 2 if rank is None else rank
    if d < 1 or not 0 <= rank <= d:
        raise ValueError(f"need d >= 1 and 0 <= rank <= d, got d={d}, rank={rank}")
    positive = jnp.linspace(0.1, 1.0, rank, dtype=dtype)
    eigs = jnp.concatenate([jnp.zeros((d - rank,), dtype), positive])
    return _linear_from(key, d, eigs, skew_scale, dtype)
