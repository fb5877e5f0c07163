r"""Variable clustering: the multi-factor block model and spectral clustering of a coefficient
matrix, in JAX (jit/vmap over seeds).

**Multi-factor block model** (:func:`block_model`). ``d`` variables fall into ``K`` clusters.
A pool of ``P = min(n, d)`` factors ``F`` (``n x P``, unit-norm Gaussian columns) and a global
factor ``g`` (unit norm) are drawn. Cluster ``k`` loads on a random subset of ``m_k`` factors,
``m_k`` uniform on ``{1, ..., |cluster k| - 1}`` (1 for a singleton), drawn without replacement
from the pool (clusters may share factors). Variable ``j`` in cluster ``k`` is

.. math::
   x_j = \sqrt{\rho_j}\, g + \sqrt{1 - \rho_j}\, F_{S_k} \ell_j + \sqrt{\nu_j}\, e_j,
   \qquad \ell_j \sim \mathrm{Unif}(S^{m_k - 1}),\ \rho_j \sim U(\rho\text{ range}),\
   \nu_j \sim U(\text{noise range}),

with ``e_j`` a unit-norm Gaussian vector. Labels are i.i.d. uniform over ``K`` and sorted
(contiguous blocks with multinomial sizes, as in the released code).

**Spectral clustering** (:func:`spectral_clustering`). ``A = |B| + |B|^T``,
``L = D^{-1/2} A D^{-1/2}`` (degrees ``+ 1e-12``), the ``K`` eigenvectors of the largest
eigenvalues (``eigh``), centred and orthonormalised (QR), then k-means (:func:`kmeans`:
k-means++ seeding and Lloyd iterations, the best of ``num_init`` restarts by inertia).

References:
  * K. Wang, X. Xu, X. Y. Zhou. Variable Clustering via Distributionally Robust Nodewise
    Regression. ICML 2026, arXiv 2212.07944.
  * A. Ng, M. Jordan, Y. Weiss. On Spectral Clustering: Analysis and an Algorithm. NeurIPS 2001.
  * D. Arthur, S. Vassilvitskii. k-means++: The Advantages of Careful Seeding. SODA 2007.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml.hyperparams import check_static_int

__all__ = [
    "BlockModel",
    "block_model",
    "clustering_accuracy",
    "kmeans",
    "spectral_clustering",
    "spectral_embedding",
]


class BlockModel(NamedTuple):
    """One draw of the multi-factor block model (a data pytree; vmap over seeds works).

    Attributes:
      X: raw samples ``(n, d)`` (preprocess with :func:`nodewise.preprocess`).
      labels: true cluster of each variable ``(d,)`` int32, sorted.
      rho: global-factor weights ``rho_j`` ``(d,)``.
      noise: noise variances ``nu_j`` ``(d,)``.
      num_factors: factors per cluster ``m_k`` ``(K,)`` int32.
    """

    X: jax.Array
    labels: jax.Array
    rho: jax.Array
    noise: jax.Array
    num_factors: jax.Array


def _check_range(name, r):
    if not (isinstance(r, tuple | list) and len(r) == 2):
        raise ValueError(f"{name} must be a (low, high) pair, got {r!r}")
    lo, hi = float(r[0]), float(r[1])
    if not 0.0 <= lo <= hi:
        raise ValueError(f"{name} must satisfy 0 <= low <= high, got {r!r}")
    return lo, hi


def block_model(key, n: int, d: int, num_clusters: int, *, noise_range=(0.0, 0.5),
                rho_range=(0.0, 0.5), dtype=jnp.float32) -> BlockModel:
    """Draws the multi-factor block model (module docstring).

    Args:
      key: PRNG key.
      n: samples (static int >= 2).
      d: variables (static int >= num_clusters).
      num_clusters: ``K`` (static int >= 1).
      noise_range: ``(low, high)`` of the noise variances, ``0 <= low <= high``.
      rho_range: ``(low, high)`` of the global-factor weights, within ``[0, 1]``.
      dtype: floating dtype of the samples.

    Returns:
      A :class:`BlockModel`.
    """
    n = check_static_int("n", n, low=2)
    num_clusters = check_static_int("num_clusters", num_clusters)
    d = check_static_int("d", d, low=num_clusters)
    nlo, nhi = _check_range("noise_range", noise_range)
    rlo, rhi = _check_range("rho_range", rho_range)
    if rhi > 1.0:
        raise ValueError(f"rho_range must lie in [0, 1], got {rho_range!r}")
    P = min(n, d)
    ks = jax.random.split(key, 9)
    labels = jnp.sort(jax.random.randint(ks[0], (d,), 0, num_clusters)).astype(jnp.int32)
    sizes = jnp.sum(labels[None, :] == jnp.arange(num_clusters)[:, None], axis=1)
    F = jax.random.normal(ks[1], (n, P), dtype)
    F = F / jnp.linalg.norm(F, axis=0)[None, :]
    g = jax.random.normal(ks[2], (n,), dtype)
    g = g / jnp.linalg.norm(g)
    rho = jax.random.uniform(ks[3], (d,), dtype, rlo, rhi)
    # m_k uniform on {1, ..., min(size_k, P + 1) - 1} (randint(1, size) in the released code)
    upper = jnp.maximum(jnp.minimum(sizes, P + 1), 2)
    u = jax.random.uniform(ks[4], (num_clusters,), dtype)
    m = 1 + jnp.floor(u * (upper - 1).astype(dtype)).astype(jnp.int32)
    m = jnp.minimum(m, upper - 1)
    # a random subset of m_k factors: ranks of i.i.d. uniforms below m_k
    ranks = jnp.argsort(jnp.argsort(jax.random.uniform(ks[5], (num_clusters, P)), axis=1), axis=1)
    support = (ranks < m[:, None]).astype(dtype)  # (K, P)
    loads = jax.random.normal(ks[6], (d, P), dtype) * support[labels]
    loads = loads / jnp.linalg.norm(loads, axis=1)[:, None]
    loads = loads * jnp.sqrt(1.0 - rho)[:, None]
    noise_var = jax.random.uniform(ks[7], (d,), dtype, nlo, nhi)
    E = jax.random.normal(ks[8], (n, d), dtype)
    E = E / jnp.linalg.norm(E, axis=0)[None, :] * jnp.sqrt(noise_var)[None, :]
    X = g[:, None] * jnp.sqrt(rho)[None, :] + F @ loads.T + E
    return BlockModel(X, labels, rho, noise_var, m)


# --------------------------------------------------------------------------- k-means


def _sqdist(P, C):
    return (jnp.sum(P * P, 1)[:, None] - 2.0 * P @ C.T + jnp.sum(C * C, 1)[None, :])


def _kmeans_pp(P, K, key):
    """k-means++ seeding: the first centre uniform, each next with probability ``~ D^2``."""
    m = P.shape[0]
    k0, key = jax.random.split(key)
    first = jax.random.randint(k0, (), 0, m)
    C = jnp.zeros((K, P.shape[1]), P.dtype).at[0].set(P[first])
    dist = jnp.sum((P - P[first][None, :]) ** 2, 1)

    def body(i, carry):
        C, dist = carry
        k = jax.random.fold_in(key, i)
        w = jnp.maximum(dist, 0.0)
        logits = jnp.where(w > 0, jnp.log(jnp.where(w > 0, w, 1.0)), -jnp.inf)
        logits = jnp.where(jnp.any(w > 0), logits, jnp.zeros_like(logits))
        j = jax.random.categorical(k, logits)
        C = C.at[i].set(P[j])
        dist = jnp.minimum(dist, jnp.sum((P - P[j][None, :]) ** 2, 1))
        return C, dist

    C, _ = jax.lax.fori_loop(1, K, body, (C, dist))
    return C


def kmeans(points, num_clusters: int, key, *, num_iters: int = 50, num_init: int = 10):
    """k-means (Lloyd) with k-means++ seeding; the best of ``num_init`` restarts.

    Args:
      points: ``(m, p)`` points.
      num_clusters: ``K`` (static int >= 1).
      key: PRNG key (seeding).
      num_iters: Lloyd iterations (static int >= 1); an empty cluster keeps its centre.
      num_init: restarts (static int >= 1), vmapped.

    Returns:
      ``(labels (m,) int32, inertia)`` of the restart with the lowest inertia.
    """
    K = check_static_int("num_clusters", num_clusters)
    num_iters = check_static_int("num_iters", num_iters)
    num_init = check_static_int("num_init", num_init)
    P = jnp.asarray(points)

    def one(k):
        C = _kmeans_pp(P, K, k)

        def lloyd(C, _):
            lab = jnp.argmin(_sqdist(P, C), axis=1)
            onehot = jax.nn.one_hot(lab, K, dtype=P.dtype)
            cnt = onehot.sum(0)
            newC = (onehot.T @ P) / jnp.maximum(cnt, 1.0)[:, None]
            return jnp.where((cnt > 0)[:, None], newC, C), None

        C, _ = jax.lax.scan(lloyd, C, None, length=num_iters)
        D = _sqdist(P, C)
        lab = jnp.argmin(D, axis=1)
        return lab.astype(jnp.int32), jnp.sum(jnp.maximum(jnp.min(D, axis=1), 0.0))

    labs, inertia = jax.vmap(one)(jax.random.split(key, num_init))
    best = jnp.argmin(inertia)
    return labs[best], inertia[best]


# --------------------------------------------------------------------------- spectral


def spectral_embedding(B, num_clusters: int):
    """Rows of the centred, orthonormalised top-``K`` eigenvectors of the normalised affinity
    ``D^{-1/2}(|B| + |B|^T)D^{-1/2}`` (``(d, K)``)."""
    K = check_static_int("num_clusters", num_clusters)
    B = jnp.asarray(B)
    A = jnp.abs(B) + jnp.abs(B).T
    deg = A.sum(1) + 1e-12
    inv = 1.0 / jnp.sqrt(deg)
    L = inv[:, None] * A * inv[None, :]
    _, V = jnp.linalg.eigh(L)  # ascending eigenvalues
    E = V[:, -K:]
    E = E - E.mean(0)[None, :]
    Q, _ = jnp.linalg.qr(E)
    return Q


def spectral_clustering(B, num_clusters: int, key, *, num_iters: int = 50, num_init: int = 10):
    r"""Clusters the ``d`` variables from a coefficient matrix ``B`` (``d x d``).

    ``A = |B| + |B|^T``, ``L = D^{-1/2} A D^{-1/2}``, top-``K`` eigenvectors of ``L`` (largest
    eigenvalues, one ``eigh``), centred, QR, k-means (:func:`kmeans`).

    Args:
      B: coefficient matrix ``(d, d)``.
      num_clusters: ``K`` (static).
      key: PRNG key for k-means++.
      num_iters, num_init: k-means settings (static).

    Returns:
      Labels ``(d,)`` int32.

    Example:
      >>> B = jnp.kron(jnp.eye(2), jnp.ones((3, 3)))
      >>> lab = spectral_clustering(B, 2, jax.random.PRNGKey(0))
      >>> bool(lab[0] == lab[2] and lab[0] != lab[3])
      True

    Paper mapping: the released code takes the top-``K`` singular vectors of ``L``
    (TruncatedSVD) and scales them by ``sqrt(n)`` before k-means; we take the eigenvectors of
    the ``K`` largest eigenvalues (the same unless a negative eigenvalue has a larger modulus)
    and drop the scale (k-means is invariant to it).
    """
    Q = spectral_embedding(B, num_clusters)
    labels, _ = kmeans(Q, num_clusters, key, num_iters=num_iters, num_init=num_init)
    return labels


def _perms(K):
    return np.asarray(list(itertools.permutations(range(K))), np.int32)


def clustering_accuracy(labels, predicted, num_clusters: int):
    """Fraction of variables correctly clustered under the best matching of cluster ids
    (a brute-force maximum over the ``K!`` permutations; ``K <= 8``).

    Args:
      labels, predicted: ``(d,)`` integer labels in ``[0, K)``.
      num_clusters: ``K`` (static int in ``[1, 8]``).

    Returns:
      Accuracy in ``[0, 1]`` (float32).
    """
    K = check_static_int("num_clusters", num_clusters)
    if K > 8:
        raise ValueError(f"num_clusters must be <= 8 for the brute-force matching, got {K}")
    t = jax.nn.one_hot(labels, K, dtype=jnp.float32)
    p = jax.nn.one_hot(predicted, K, dtype=jnp.float32)
    conf = p.T @ t  # (pred, true)
    perms = jnp.asarray(_perms(K))
    matched = conf[jnp.arange(K)[None, :], perms].sum(1)
    return jnp.max(matched) / labels.shape[0]

