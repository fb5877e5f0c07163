r"""Baselines for variable clustering: Lasso nodewise regression (SSC) and k-means on the rows
of the correlation matrix.

**Lasso nodewise / sparse subspace clustering** (:func:`lasso_nodewise`): every variable is
regressed on all the others with an ``l1`` penalty, all columns at once,

.. math::
   \min_{\mathrm{diag}(B) = 0}\ \tfrac{1}{2n}\|X - XB\|_F^2 + \lambda\|B\|_1,

by FISTA (ISTA with Nesterov extrapolation): ``B <- S_{\lambda/L}(Y - \nabla/L)`` with the
diagonal set to 0, ``L = ||X||_2^2 / n`` (power iteration, no LAPACK call). Above
``lambda_max = max_{i != j} |X_i^T X_j| / n`` the solution is 0 (:func:`lasso_lambda_max`).

**k-means on correlation rows** (:func:`correlation_kmeans`): the rows of ``X^T X`` (the
correlation matrix of the preprocessed data) clustered by k-means.

References:
  * E. Elhamifar, R. Vidal. Sparse Subspace Clustering: Algorithm, Theory, and Applications.
    IEEE TPAMI 2013.
  * A. Beck, M. Teboulle. A Fast Iterative Shrinkage-Thresholding Algorithm. SIAM J. Imaging
    Sciences 2009.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxopt_icml.hyperparams import check_float, check_static_int
from jaxopt_icml.robust import variable_clustering as vc

__all__ = ["correlation_kmeans", "lasso_lambda_max", "lasso_nodewise", "lasso_objective"]


def _spectral_norm_sq(G, iters=100):
    """Largest eigenvalue of the PSD matrix ``G`` by power iteration (times 1.01 for safety)."""
    v = jnp.ones((G.shape[0],), G.dtype) / jnp.sqrt(G.shape[0])

    def body(v, _):
        w = G @ v
        return w / jnp.maximum(jnp.linalg.norm(w), jnp.finfo(G.dtype).tiny), None

    v, _ = jax.lax.scan(body, v, None, length=iters)
    return 1.01 * v @ (G @ v)


def lasso_lambda_max(X):
    """``max_{i != j} |X_i^T X_j| / n``: the smallest ``lambda`` with solution ``B = 0``."""
    X = jnp.asarray(X)
    G = X.T @ X
    d = G.shape[0]
    return jnp.max(jnp.abs(G) * (1.0 - jnp.eye(d, dtype=G.dtype))) / X.shape[0]


def lasso_objective(X, B, lam):
    """``||X - XB||_F^2 / (2n) + lam ||B||_1``."""
    X = jnp.asarray(X)
    return 0.5 * jnp.sum((X - X @ B) ** 2) / X.shape[0] + lam * jnp.sum(jnp.abs(B))


def lasso_nodewise(X, lam, *, num_steps: int = 500):
    """Lasso nodewise coefficients (``diag = 0``) by ``num_steps`` FISTA steps from ``B = 0``.

    Args:
      X: preprocessed data ``(n, d)``.
      lam: penalty ``lambda >= 0`` (scalar; may be traced, so a grid vmaps).
      num_steps: FISTA iterations (static int >= 1).

    Returns:
      ``B`` ``(d, d)`` with zero diagonal.

    Example:
      >>> X = jax.random.normal(jax.random.PRNGKey(0), (30, 6))
      >>> B = lasso_nodewise(X, 0.5 * lasso_lambda_max(X))
      >>> bool(jnp.all(jnp.diag(B) == 0))
      True
    """
    num_steps = check_static_int("num_steps", num_steps)
    check_float("lam", lam, strict=False, allow_schedule=False)
    X = jnp.asarray(X)
    n, d = X.shape
    G = X.T @ X / n
    L = _spectral_norm_sq(G)
    lam = jnp.asarray(lam, X.dtype)
    mask = 1.0 - jnp.eye(d, dtype=X.dtype)

    def prox(Z):
        return jnp.sign(Z) * jnp.maximum(jnp.abs(Z) - lam / L, 0.0) * mask

    def body(carry, _):
        B, Y, t = carry
        Bn = prox(Y - (G @ Y - G) / L)  # grad of ||X - XY||^2 / (2n) = G Y - G
        tn = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
        Y = Bn + ((t - 1.0) / tn) * (Bn - B)
        return (Bn, Y, tn), None

    B0 = jnp.zeros((d, d), X.dtype)
    (B, _, _), _ = jax.lax.scan(body, (B0, B0, jnp.ones((), X.dtype)), None, length=num_steps)
    return B


def correlation_kmeans(X, num_clusters: int, key, *, num_iters: int = 50, num_init: int = 10):
    """k-means on the rows of the correlation matrix ``X^T X`` of preprocessed ``X``.

    Returns:
      Labels ``(d,)`` int32.
    """
    X = jnp.asarray(X)
    labels, _ = vc.kmeans(X.T @ X, num_clusters, key, num_iters=num_iters, num_init=num_init)
    return labels
