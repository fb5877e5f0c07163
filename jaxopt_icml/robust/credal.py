r"""Box credal sets from an ensemble, and their upper / lower entropies.

An ensemble of ``M`` probability vectors ``p_1, ..., p_M`` on ``K`` classes defines the box
credal set (the probability intervals of the "credal wrapper")

.. math::
   Q = \{p \in \Delta_K : l_k \le p_k \le u_k\},\qquad l_k = \min_m p_{m,k},\quad
   u_k = \max_m p_{m,k},

tightened to the reachable intervals (each bound attained by some ``p`` in ``Q``):

.. math::
   l_k \leftarrow \max\big(l_k, 1 - \textstyle\sum_{j\ne k} u_j\big),\qquad
   u_k \leftarrow \min\big(u_k, 1 - \textstyle\sum_{j\ne k} l_j\big).

Uncertainty (:func:`eu_au`): total = upper entropy ``H̄ = max_{p in Q} H(p)``, aleatoric = lower
entropy ``H̲ = min_{p in Q} H(p)``, epistemic ``EU = H̄ - H̲ >= 0``.

* :func:`upper_entropy` is exact: the KKT conditions of ``max H`` on the box-simplex give
  ``p_k = clip(tau, l_k, u_k)`` with ``sum_k p_k = 1`` (water-filling). ``S(tau) = sum_k
  clip(tau, l_k, u_k)`` is piecewise linear and nondecreasing with breakpoints at the ``2K``
  bounds, so ``tau`` is found exactly by sorting them and interpolating on the one segment
  where ``S`` crosses 1 (no bisection).
* :func:`lower_entropy`: ``H`` is concave, so its minimum over the polytope ``Q`` is attained at
  a vertex, where ``K - 1`` coordinates sit at a bound and the last is ``1 -`` their sum.
  ``exact=True`` enumerates all ``K 2^{K-1}`` candidates (default for ``K <= 10``); above that
  a greedy vertex (start at ``l``, give the free mass ``1 - sum l`` to the classes in
  decreasing order of ``u``) is returned, which is an UPPER bound on ``H̲`` (so ``EU`` is then
  under-estimated). The vertex minimum alone is never above the greedy one (claim
  ``solver_exact_not_above_greedy`` checks this without the safeguard ``min`` with greedy).
* :func:`mutual_information`: the deep-ensemble baseline ``EU = H(mean_m p_m) - mean_m H(p_m)``.

All functions act on the last axis and broadcast over leading axes; they are jit/vmap/grad
friendly (``lower_entropy``'s enumeration table is static NumPy).

Theory: claim ``solver_*`` of ``experiments/robust/credro.py`` and ``tests/robust/test_credro.py``
(water-filling vs SLSQP and a NumPy mirror descent; exhaustive vertices vs a NumPy brute force).

References:
  * K. Wang, G. A. Faza, F. Cuzzolin, S. L. Chau, D. Moens, H. Hallez. Learning Credal
    Ensembles via Distributionally Robust Optimization. ICML 2026, arXiv 2602.08470.
  * K. Wang, F. Cuzzolin, K. Shariatmadar, D. Moens, H. Hallez. Credal Wrapper of Model
    Averaging for Uncertainty Estimation in Classification. ICLR 2025.
  * L. M. de Campos, J. F. Huete, S. Moral. Probability intervals: a tool for uncertain
    reasoning. IJUFKS 1994 (reachability).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml.hyperparams import check_static_int

__all__ = [
    "CredalUncertainty",
    "credal_uncertainty",
    "eu_au",
    "greedy_lower_entropy",
    "intervals",
    "lower_entropy",
    "mutual_information",
    "tighten",
    "upper_entropy",
    "upper_entropy_argmax",
]

#: ``lower_entropy(exact=None)`` enumerates vertices up to this many classes (then greedy).
MAX_EXACT_CLASSES = 10
# exact enumeration is refused above this (K 2^(K-1) candidates: 2^20 at K = 16)
_ENUMERATION_LIMIT = 16


class CredalUncertainty(NamedTuple):
    """Total, aleatoric and epistemic uncertainty of a credal set (nats).

    Attributes:
      total: upper entropy ``H̄``.
      aleatoric: lower entropy ``H̲``.
      epistemic: ``H̄ - H̲`` (``>= 0``).
    """

    total: jax.Array
    aleatoric: jax.Array
    epistemic: jax.Array


def _xlogx(p):
    """``p log p`` with ``0 log 0 = 0`` (gradient-safe at 0)."""
    safe = jnp.where(p > 0, p, 1.0)
    return jnp.where(p > 0, p * jnp.log(safe), 0.0)


def entropy(p, axis: int = -1):
    """Shannon entropy ``-sum p log p`` (nats) along ``axis``, with ``0 log 0 = 0``."""
    return -jnp.sum(_xlogx(jnp.asarray(p)), axis=axis)


def _float(x):
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)


def tighten(lo, hi):
    """Reachable probability intervals (one pass suffices for a nonempty box).

    ``lo_k <- max(lo_k, 1 - sum_{j != k} hi_j)``, ``hi_k <- min(hi_k, 1 - sum_{j != k} lo_j)``;
    the set ``{p in simplex : lo <= p <= hi}`` is unchanged, and afterwards every bound is
    attained by one of its points.

    Args:
      lo, hi: bounds, shape ``(..., K)``, with ``sum lo <= 1 <= sum hi`` and ``lo <= hi``.

    Returns:
      ``(lo, hi)`` tightened, same shapes and dtype.
    """
    lo, hi = _float(lo), _float(hi)
    slo = jnp.sum(lo, axis=-1, keepdims=True)
    shi = jnp.sum(hi, axis=-1, keepdims=True)
    new_lo = jnp.maximum(lo, 1.0 - (shi - hi))
    new_hi = jnp.minimum(hi, 1.0 - (slo - lo))
    return new_lo, new_hi


def intervals(probs, *, axis: int = 0, reachable: bool = True):
    """The box credal set of an ensemble: class-wise ``min`` and ``max`` over members.

    Args:
      probs: member probabilities, members along ``axis`` (default 0), classes on the last
        axis, e.g. ``(M, K)`` or ``(M, N, K)``.
      axis: the member axis (static int, not the class axis).
      reachable: apply :func:`tighten` (default ``True``; a no-op up to rounding for boxes of
        an ensemble, since each member lies in the box, but kept for general inputs).

    Returns:
      ``(lo, hi)`` with the member axis removed.

    Example:
      >>> lo, hi = intervals(jnp.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]]))
      >>> lo.tolist(), hi.tolist()
      ([0.5, 0.2, 0.1], [0.7, 0.3, 0.2])
    """
    probs = _float(probs)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise ValueError(f"axis must be an int, got {axis!r}")
    if probs.ndim < 2 or axis % probs.ndim == probs.ndim - 1:
        raise ValueError(f"axis must name the member axis, not the class axis (last); got "
                         f"axis={axis} for probs of shape {probs.shape}")
    lo, hi = jnp.min(probs, axis=axis), jnp.max(probs, axis=axis)
    return tighten(lo, hi) if reachable else (lo, hi)


# --------------------------------------------------------------------------- upper entropy


def upper_entropy_argmax(lo, hi):
    """The maximum-entropy distribution of the box credal set (exact water-filling).

    ``p_k = clip(tau, lo_k, hi_k)`` with ``tau`` the root of ``S(tau) = sum_k clip(tau, lo_k,
    hi_k) = 1``, found exactly: ``S`` is linear between consecutive sorted bounds, so ``tau``
    is interpolated on the segment where ``S`` crosses 1.

    Args:
      lo, hi: bounds ``(..., K)`` with ``sum lo <= 1 <= sum hi``.

    Returns:
      ``p`` of shape ``(..., K)``.
    """
    lo, hi = _float(lo), _float(hi)
    b = jnp.sort(jnp.concatenate([lo, hi], axis=-1), axis=-1)  # (..., 2K) breakpoints
    s = jnp.sum(jnp.clip(b[..., :, None], lo[..., None, :], hi[..., None, :]), axis=-1)
    # j: the last breakpoint with S(b_j) <= 1 (S nondecreasing; S(b_0) = sum lo <= 1)
    j = jnp.clip(jnp.sum(s <= 1.0, axis=-1) - 1, 0, b.shape[-1] - 2)
    take = lambda a, i: jnp.take_along_axis(a, i[..., None], axis=-1)[..., 0]
    b0, b1, s0, s1 = take(b, j), take(b, j + 1), take(s, j), take(s, j + 1)
    rise = s1 - s0
    frac = jnp.where(rise > 0, (1.0 - s0) / jnp.where(rise > 0, rise, 1.0), 0.0)
    tau = b0 + jnp.clip(frac, 0.0, 1.0) * (b1 - b0)
    return jnp.clip(tau[..., None], lo, hi)


def upper_entropy(lo, hi):
    """``H̄ = max {H(p) : p in simplex, lo <= p <= hi}`` (exact water-filling).

    Example:
      >>> float(upper_entropy(jnp.zeros(4), jnp.ones(4)))  # log 4
      1.386294...
    """
    return entropy(upper_entropy_argmax(lo, hi))


# --------------------------------------------------------------------------- lower entropy


@functools.cache
def _vertex_tables(k: int):
    """0/1 tables over the ``K 2^{K-1}`` vertex candidates: ``(at_lo, at_hi, free)``, each
    ``(C, K)``; row ``c`` puts every class but its free one at a bound."""
    rows_lo, rows_hi, rows_free = [], [], []
    bits = ((np.arange(2 ** (k - 1))[:, None] >> np.arange(k - 1)[None, :]) & 1).astype(bool)
    for free in range(k):
        others = [j for j in range(k) if j != free]
        at_hi = np.zeros((bits.shape[0], k), bool)
        at_hi[:, others] = bits
        at_lo = np.zeros_like(at_hi)
        at_lo[:, others] = ~bits
        f = np.zeros_like(at_hi)
        f[:, free] = True
        rows_lo.append(at_lo)
        rows_hi.append(at_hi)
        rows_free.append(f)
    return tuple(np.concatenate(r).astype(np.float64) for r in (rows_lo, rows_hi, rows_free))


def _dot(x, table):
    """``x @ table.T`` at full precision (TPU/GPU default f32 matmuls round to bf16/tf32)."""
    return jnp.einsum("...k,ck->...c", x, jnp.asarray(table, x.dtype),
                      precision=jax.lax.Precision.HIGHEST)


def greedy_lower_entropy(lo, hi, *, return_p: bool = False):
    """A vertex of the box credal set with small entropy: start at ``lo`` and give the free
    mass ``1 - sum lo`` to the classes in decreasing order of ``hi``, each up to its ``hi``.

    Its entropy is an upper bound on ``H̲`` (exact for ``K = 2``); use it above
    :data:`MAX_EXACT_CLASSES` classes.

    Args:
      lo, hi: bounds ``(..., K)``, ``sum lo <= 1 <= sum hi``.
      return_p: also return the vertex (static bool).
    """
    lo, hi = _float(lo), _float(hi)
    order = jnp.argsort(-hi, axis=-1)
    take = lambda a: jnp.take_along_axis(a, order, axis=-1)
    gap = take(hi) - take(lo)
    free = 1.0 - jnp.sum(lo, axis=-1, keepdims=True)
    before = jnp.cumsum(gap, axis=-1) - gap
    add_sorted = jnp.clip(free - before, 0.0, gap)
    add = jnp.take_along_axis(add_sorted, jnp.argsort(order, axis=-1), axis=-1)
    p = lo + add
    h = entropy(p)
    return (h, p) if return_p else h


def _vertex_lower_entropy(lo, hi):
    """The minimum entropy over the feasible vertex candidates alone (no greedy fallback):
    ``K - 1`` classes at a bound, the free class takes ``1 -`` their sum and must lie in its
    interval up to the rounding tolerance ``2 K eps``; its entropy is evaluated at the free
    value clipped into the interval, so a candidate accepted by the tolerance never scores
    below a point of the box. ``+inf`` when no candidate passes (only possible through
    rounding). Used by :func:`lower_entropy` and by the claim that checks it against greedy."""
    k = lo.shape[-1]
    at_lo, at_hi, free = _vertex_tables(k)
    fixed = _dot(lo, at_lo) + _dot(hi, at_hi)
    p_free = 1.0 - fixed
    lo_free, hi_free = _dot(lo, free), _dot(hi, free)
    # the K - 1 fixed coordinates sum to <= 1, so 1 - fixed carries a rounding error of at
    # most ~K eps / 2; 2 K eps accepts every true vertex and little else (16 K eps let float32
    # corners break a bound and under-estimate H̲ on narrow boxes)
    tol = 2 * k * jnp.finfo(lo.dtype).eps
    ok = (p_free >= lo_free - tol) & (p_free <= hi_free + tol)
    p_eval = jnp.clip(p_free, lo_free, hi_free)
    neg_h = _dot(_xlogx(lo), at_lo) + _dot(_xlogx(hi), at_hi) + _xlogx(p_eval)
    return jnp.min(jnp.where(ok, -neg_h, jnp.inf), axis=-1)


def lower_entropy(lo, hi, *, exact: bool | None = None):
    """``H̲ = min {H(p) : p in simplex, lo <= p <= hi}``.

    Exact by vertex enumeration (``K 2^{K-1}`` candidates: ``K - 1`` classes at a bound, the
    free class takes the rest and must lie in its interval up to a rounding tolerance
    ``2 K eps``, its entropy taken at the free value clipped into the interval), or the greedy
    vertex of :func:`greedy_lower_entropy` (approximate: an upper bound on ``H̲``).

    Args:
      lo, hi: bounds ``(..., K)``, ``sum lo <= 1 <= sum hi`` (e.g. from :func:`intervals`).
      exact: static; ``None`` (default) enumerates when ``K <= MAX_EXACT_CLASSES`` (10), else
        greedy; ``True`` enumerates (``K <= 16``; memory ``K 2^{K-1}`` per box); ``False``
        greedy.

    Returns:
      ``H̲`` with shape ``lo.shape[:-1]``. The exact value is the minimum over the feasible
      candidates and the greedy vertex (a safeguard: the greedy vertex is itself a candidate,
      so in exact arithmetic the minimum with it changes nothing; it only guards against
      rounding rejecting every candidate).

    Example:
      >>> lo, hi = jnp.array([0.5, 0.2, 0.1]), jnp.array([0.7, 0.3, 0.2])
      >>> round(float(lower_entropy(lo, hi)), 4)  # at the vertex (0.7, 0.2, 0.1)
      0.8018
    """
    lo, hi = _float(lo), _float(hi)
    k = lo.shape[-1]
    if exact is None:
        exact = k <= MAX_EXACT_CLASSES
    if not isinstance(exact, bool):
        raise ValueError(f"exact must be None or a bool, got {exact!r}")
    check_static_int("K (number of classes)", k, low=1)
    greedy = greedy_lower_entropy(lo, hi)
    if not exact or k == 1:
        return greedy
    if k > _ENUMERATION_LIMIT:
        raise ValueError(f"exact=True enumerates K 2^(K-1) vertices and supports K <= "
                         f"{_ENUMERATION_LIMIT}, got K={k}; pass exact=False (greedy)")
    return jnp.minimum(_vertex_lower_entropy(lo, hi), greedy)


# --------------------------------------------------------------------------- decompositions


def eu_au(lo, hi, *, exact: bool | None = None) -> CredalUncertainty:
    """Total (``H̄``), aleatoric (``H̲``) and epistemic (``H̄ - H̲``) uncertainty of a box.

    Args:
      lo, hi: bounds ``(..., K)``.
      exact: as in :func:`lower_entropy` (static).

    Returns:
      :class:`CredalUncertainty` of arrays with shape ``lo.shape[:-1]``; ``epistemic`` is
      clipped at 0 (it is ``>= 0`` in exact arithmetic).
    """
    total = upper_entropy(lo, hi)
    alea = lower_entropy(lo, hi, exact=exact)
    return CredalUncertainty(total, alea, jnp.maximum(total - alea, 0.0))


def credal_uncertainty(probs, *, axis: int = 0, exact: bool | None = None,
                       reachable: bool = True) -> CredalUncertainty:
    """:func:`eu_au` of the box :func:`intervals` of an ensemble's probabilities.

    Example:
      >>> p = jnp.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]])
      >>> u = credal_uncertainty(p)
      >>> bool(u.epistemic > 0)
      True
    """
    lo, hi = intervals(probs, axis=axis, reachable=reachable)
    return eu_au(lo, hi, exact=exact)


def mutual_information(probs, *, axis: int = 0):
    """Deep-ensemble epistemic uncertainty ``H(mean_m p_m) - mean_m H(p_m)`` (nats, ``>= 0``).

    Args:
      probs: member probabilities, members along ``axis`` (default 0), classes last.
      axis: the member axis (static int).

    Returns:
      Mutual information with the member and class axes removed.
    """
    probs = _float(probs)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise ValueError(f"axis must be an int, got {axis!r}")
    axis = axis % probs.ndim
    if probs.ndim < 2 or axis == probs.ndim - 1:
        raise ValueError(f"axis must name the member axis, not the class axis (last); got "
                         f"axis={axis} for probs of shape {probs.shape}")
    mean = jnp.mean(probs, axis=axis)
    return jnp.maximum(entropy(mean) - jnp.mean(entropy(probs), axis=axis), 0.0)
