r"""Robust aggregation of per-example gradients: filter, trimmed mean, median of means.

Given ``n`` per-example vectors ``g_1, ..., g_n`` of which an ``eps`` fraction may be arbitrary
(strong contamination) and the rest heavy-tailed, estimate their mean.

* **Filter** (Diakonikolas et al. style, made mask-based so that it jits and vmaps): keep a 0/1
  weight ``w_i``; each round computes the kept mean ``mu``, the top direction ``v`` of the kept
  covariance by power iteration (matrix-vector products only, never a ``P x P`` matrix), the
  projections ``p_i = (g_i - mu)^T v``, their median ``m`` and robust scale
  ``s = 1.4826 MAD`` over the kept points, and drops the kept points with the largest scores
  ``|p_i - m| / s`` among those above ``thresh``, at most ``ceil(drop_frac n)`` per round and
  ``floor(max_frac n)`` in total. The loop stops after ``rounds`` rounds or once a round drops
  nothing. The estimate is the mean of the kept points.
* **Coordinate-wise trimmed mean**: per coordinate, drop the ``floor(trim n)`` smallest and
  largest values and average the rest (``scipy.stats.trim_mean``'s rule).
* **Median of means**: split the rows into ``num_blocks`` contiguous blocks (the remainder of
  ``n mod num_blocks`` rows is left out), average each, take the coordinate-wise median.

:func:`aggregate` wraps them as an ``optax.GradientTransformationExtraArgs`` acting on
per-example gradient pytrees; the arrays functions :func:`filter_mean`, :func:`trimmed_mean`,
:func:`median_of_means` act on an ``(n, P)`` matrix.

References:
  * I. Diakonikolas, G. Kamath, D. Kane, J. Li, A. Moitra, A. Stewart. Robust Estimators in
    High Dimensions without the Computational Intractability. FOCS 2016 (the filter).
  * I. Diakonikolas, G. Kamath, D. Kane, J. Li, J. Steinhardt, A. Stewart. Sever: A Robust
    Meta-Algorithm for Stochastic Optimization. ICML 2019 (filtering gradients).
  * A. Prasad, A. S. Suggala, S. Balakrishnan, P. Ravikumar. Robust Estimation via Robust
    Gradient Estimation. JRSS-B 2020 (robust gradient descent).
  * S. Das, S. Chatterjee, J. Batra. Convex Basins in Single-Index Model Loss Landscapes:
    Applications to Robust Recovery under Strong Adversarial Corruption. ICML 2026,
    arXiv 2605.29497 (the user of this module, :mod:`jaxopt_icml.robust.sim`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import (
    check_choice,
    check_float,
    check_static_int,
    compute_dtype,
    concrete_float,
)
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "AggregateState",
    "FilterResult",
    "aggregate",
    "aggregate_tree",
    "filter_mean",
    "median_of_means",
    "trimmed_mean",
]

METHODS = ("filter", "trimmed", "mom", "mean")
_MAD_TO_SD = 1.482602218505602  # 1 / Phi^{-1}(3/4): MAD -> standard deviation for a Gaussian


class FilterResult(NamedTuple):
    """Output of :func:`filter_mean`.

    Attributes:
      mean: the mean of the kept rows, shape ``(P,)``.
      kept: boolean mask of the kept rows, shape ``(n,)``.
      rounds: int32 number of rounds that dropped at least one row.
    """

    mean: jax.Array
    kept: jax.Array
    rounds: jax.Array


class AggregateState(NamedTuple):
    """State of :func:`aggregate`: diagnostics of the last update (fixed shapes).

    Attributes:
      kept_fraction: float32 fraction of the examples the last update kept (1 for ``mean`` and
        ``mom``, ``1 - 2 floor(trim n)/n`` per coordinate for ``trimmed``).
      rounds: int32 filter rounds that dropped something in the last update (0 otherwise).
    """

    kept_fraction: jax.Array
    rounds: jax.Array


# --------------------------------------------------------------------------- validation


def _check_eps(eps):
    check_float("eps", eps, low=0.0, strict=False, high=0.5, allow_schedule=False)
    v = concrete_float(eps)
    if v is not None and v >= 0.5:
        raise ValueError(f"eps must be a finite float in [0, 0.5), got {eps!r}")
    return eps


def _check_fraction(name, value, *, allow_none=True, below_half=False):
    check_float(name, value, low=0.0, strict=False, high=1.0, allow_schedule=False,
                allow_none=allow_none)
    v = concrete_float(value)
    if below_half and v is not None and v >= 0.5:
        raise ValueError(f"{name} must be a finite float in [0, 0.5), got {value!r}")
    return value


def _check_filter_args(eps, rounds, thresh, drop_frac, max_frac, power_iters):
    _check_eps(eps)
    rounds = check_static_int("rounds", rounds, low=1)
    check_float("thresh", thresh, allow_schedule=False)
    _check_fraction("drop_frac", drop_frac)
    _check_fraction("max_frac", max_frac)
    power_iters = check_static_int("power_iters", power_iters, low=1)
    return rounds, power_iters


# --------------------------------------------------------------------------- arrays


def _masked_median(values, kept):
    """Median of ``values[kept]`` (the mean of the two middle values for an even count) by one
    sort; dropped entries are sent to ``+inf``. Needs at least one kept entry."""
    n = values.shape[0]
    s = jnp.sort(jnp.where(kept, values, jnp.inf))
    m = jnp.sum(kept, dtype=jnp.int32)
    lo = jnp.clip((m - 1) // 2, 0, n - 1)
    hi = jnp.clip(m // 2, 0, n - 1)
    return 0.5 * (s[lo] + s[hi])


def _power_iteration(centered, w, v, iters):
    """``iters`` steps of ``v <- C v / |C v|`` with ``C = centered^T diag(w) centered``."""

    def body(_, v):
        u = centered.T @ (w * (centered @ v))
        norm = jnp.linalg.norm(u)
        return jnp.where(norm > 0, u / jnp.where(norm > 0, norm, 1.0), v)

    return jax.lax.fori_loop(0, iters, body, v)


def filter_mean(G, eps, *, rounds: int = 10, thresh=3.0, drop_frac=None, max_frac=None,
                power_iters: int = 10) -> FilterResult:
    r"""Filter-based robust mean of the rows of ``G`` (module docstring), with masks.

    One round, with ``K`` the kept rows (``w_i = 1``):

    .. math::
       \mu = \tfrac{1}{|K|}\sum_K g_i,\quad v = \mathrm{top\ eigvec}\Big(\sum_K (g_i-\mu)
       (g_i-\mu)^\top\Big),\quad p_i = (g_i-\mu)^\top v,\quad
       \mathrm{score}_i = \frac{|p_i - \mathrm{med}_K p|}{1.4826\,\mathrm{MAD}_K p},

    then the (at most) ``ceil(drop_frac n)`` highest scores above ``thresh`` are dropped, never
    more than ``floor(max_frac n)`` rows in all. With nothing above ``thresh`` (or
    ``drop_frac = 0``, the default at ``eps = 0``) nothing is dropped and the result is the plain
    mean.

    The power iteration starts from the row farthest from the mean (an
    outlier direction when there is one; deterministic) and is warm-started across rounds.

    Args:
      G: ``(n, P)`` array (float; computed in its dtype, float32 for 16-bit inputs).
      eps: contamination fraction in ``[0, 0.5)`` (float, may be traced); sets the defaults
        of ``drop_frac`` and ``max_frac``.
      rounds: maximal number of filter rounds (static int >= 1).
      thresh: robust-score threshold ``> 0``: only rows more than ``thresh`` robust standard
        deviations from the median projection may be dropped.
      drop_frac: fraction of ``n`` dropped per round at most, in ``[0, 1]``; default
        ``eps / 2``.
      max_frac: fraction of ``n`` dropped in total at most, in ``[0, 1]``; default ``2 eps``.
      power_iters: power-iteration steps per round (static int >= 1).

    Returns:
      :class:`FilterResult` ``(mean, kept, rounds)``.

    Example:
      >>> G = jnp.concatenate([jnp.zeros((95, 3)), jnp.full((5, 3), 100.0)])
      >>> G = G + 0.1 * jax.random.normal(jax.random.key(0), G.shape)
      >>> res = filter_mean(G, 0.05)
      >>> int(res.kept[95:].sum()), bool(jnp.abs(res.mean).max() < 0.1)  # cluster removed
      (0, True)

    Theory: the planted cluster, ``eps = 0`` and "no point above the threshold" cases and the
    agreement with a NumPy re-implementation are tests in ``tests/robust/test_robust_sim.py``.
    """
    rounds, power_iters = _check_filter_args(eps, rounds, thresh, drop_frac, max_frac,
                                             power_iters)
    G = jnp.asarray(G)
    if G.ndim != 2:
        raise ValueError(f"G must have shape (n, P), got {G.shape}")
    dt = compute_dtype(G.dtype)
    G = G.astype(dt)
    n = G.shape[0]
    # statically nothing to drop (eps = 0 with the default budgets, or a zero budget): the
    # plain mean, without tracing the loop
    zero_budget = concrete_float(max_frac if max_frac is not None else eps) == 0.0
    zero_rate = concrete_float(drop_frac if drop_frac is not None else eps) == 0.0
    if zero_budget or zero_rate:
        return FilterResult(jnp.mean(G, axis=0), jnp.ones((n,), bool), jnp.zeros((), jnp.int32))
    eps_ = jnp.asarray(eps, dt)
    drop_frac = eps_ / 2 if drop_frac is None else jnp.asarray(drop_frac, dt)
    max_frac = 2 * eps_ if max_frac is None else jnp.asarray(max_frac, dt)
    per_round = jnp.ceil(drop_frac * n - 1e-6).astype(jnp.int32)
    budget = jnp.floor(max_frac * n + 1e-6).astype(jnp.int32)
    thresh = jnp.asarray(thresh, dt)

    mean0 = jnp.mean(G, axis=0)
    far = jnp.argmax(jnp.sum((G - mean0[None, :]) ** 2, axis=1))
    v0 = G[far] - mean0
    fallback = jnp.ones_like(v0) / jnp.sqrt(jnp.asarray(G.shape[1], dt))
    norm0 = jnp.linalg.norm(v0)
    v0 = jnp.where(norm0 > 0, v0 / jnp.where(norm0 > 0, norm0, 1.0), fallback)

    def one_round(carry):
        kept, v, dropped, t, active, _ = carry
        w = kept.astype(dt)
        mu = (w @ G) / jnp.sum(w)
        centered = G - mu[None, :]
        v = _power_iteration(centered, w, v, power_iters)
        p = centered @ v
        med = _masked_median(p, kept)
        dev = jnp.abs(p - med)
        scale = _MAD_TO_SD * _masked_median(dev, kept)
        tiny = jnp.finfo(dt).tiny
        score = dev / jnp.maximum(scale, tiny)
        cand = kept & (score > thresh)
        k = jnp.minimum(per_round, budget - dropped)
        # the k-th largest candidate score (ties at it are all dropped: measure zero for
        # continuous data, and the budget check below stops the loop)
        ranked = jnp.sort(jnp.where(cand, score, -jnp.inf))
        kth = ranked[jnp.clip(n - k, 0, n - 1)]
        drop = cand & (score >= kth) & (k > 0)
        num = jnp.sum(drop, dtype=jnp.int32)
        return (kept & ~drop, v, dropped + num, t + 1, active + (num > 0).astype(jnp.int32),
                num)

    def cond(carry):
        _, _, dropped, t, _, last = carry
        return (t < rounds) & (last > 0) & (dropped < budget)

    init = (jnp.ones((n,), bool), v0, jnp.int32(0), jnp.int32(0), jnp.int32(0), jnp.int32(1))
    kept, _, _, _, active, _ = jax.lax.while_loop(cond, one_round, init)
    w = kept.astype(dt)
    return FilterResult((w @ G) / jnp.sum(w), kept, active)


def trimmed_mean(G, trim):
    """Coordinate-wise trimmed mean of the rows of ``G``: per column, drop the
    ``floor(trim n)`` smallest and largest entries and average the others (the rule of
    ``scipy.stats.trim_mean(G, trim, axis=0)``).

    Args:
      G: ``(n, P)`` array.
      trim: fraction cut from each end, in ``[0, 0.5)`` (float, may be traced).

    Returns:
      ``(P,)`` array.
    """
    _check_fraction("trim", trim, allow_none=False, below_half=True)
    G = jnp.asarray(G)
    dt = compute_dtype(G.dtype)
    n = G.shape[0]
    s = jnp.sort(G.astype(dt), axis=0)
    k = jnp.floor(jnp.asarray(trim, jnp.float32) * n + 1e-6).astype(jnp.int32)
    idx = jnp.arange(n, dtype=jnp.int32)
    keep = ((idx >= k) & (idx < n - k)).astype(dt)
    return (keep @ s) / jnp.sum(keep)


def median_of_means(G, num_blocks: int):
    """Coordinate-wise median of the means of ``num_blocks`` contiguous blocks of rows (the
    last ``n mod num_blocks`` rows are left out; shuffle first if the rows are ordered).

    Args:
      G: ``(n, P)`` array with ``n >= num_blocks``.
      num_blocks: static int >= 1.

    Returns:
      ``(P,)`` array.
    """
    num_blocks = check_static_int("num_blocks", num_blocks, low=1)
    G = jnp.asarray(G)
    n = G.shape[0]
    if n < num_blocks:
        raise ValueError(f"num_blocks must be <= the number of examples {n}, got {num_blocks}")
    m = n // num_blocks
    dt = compute_dtype(G.dtype)
    means = G[: m * num_blocks].astype(dt).reshape((num_blocks, m) + G.shape[1:]).mean(axis=1)
    return jnp.median(means, axis=0)


# --------------------------------------------------------------------------- pytrees


def _flatten(tree):
    leaves, treedef = jax.tree.flatten(tree)
    if not leaves:
        raise ValueError("robust aggregation needs at least one leaf")
    n = leaves[0].shape[0] if leaves[0].ndim else None
    for leaf in leaves:
        if leaf.ndim == 0 or leaf.shape[0] != n:
            raise ValueError("every leaf needs the same leading per-example axis, got shapes "
                             f"{[tuple(x.shape) for x in leaves]}")
    dt = jnp.result_type(*[compute_dtype(x.dtype) for x in leaves])
    G = jnp.concatenate([x.reshape((n, -1)).astype(dt) for x in leaves], axis=1)

    def unflatten(vec):
        out, start = [], 0
        for leaf in leaves:
            size = 1
            for s in leaf.shape[1:]:
                size *= s
            out.append(vec[start:start + size].reshape(leaf.shape[1:]).astype(leaf.dtype))
            start += size
        return jax.tree.unflatten(treedef, out)

    return G, unflatten


def aggregate_tree(tree, eps=0.0, method: str = "filter", *, rounds: int = 10, thresh=3.0,
                drop_frac=None, max_frac=None, power_iters: int = 10, trim=None,
                num_blocks: int = 10):
    """Robust mean over the leading axis of every leaf of ``tree`` (see :func:`aggregate`).

    Returns:
      ``(mean_tree, kept_fraction, rounds)``: the estimate with the leaves' trailing shapes and
      dtypes, and the diagnostics stored by :func:`aggregate`.
    """
    method = check_choice("method", method, METHODS)
    G, unflatten = _flatten(tree)
    n = G.shape[0]
    one = jnp.ones((), jnp.float32)
    zero = jnp.zeros((), jnp.int32)
    if method == "filter":
        res = filter_mean(G, eps, rounds=rounds, thresh=thresh, drop_frac=drop_frac,
                          max_frac=max_frac, power_iters=power_iters)
        return unflatten(res.mean), res.kept.astype(jnp.float32).mean(), res.rounds
    if method == "trimmed":
        trim = eps if trim is None else trim
        k = jnp.floor(jnp.asarray(trim, jnp.float32) * n + 1e-6)
        return unflatten(trimmed_mean(G, trim)), one - 2 * k / n, zero
    if method == "mom":
        return unflatten(median_of_means(G, num_blocks)), one, zero
    return unflatten(G.mean(axis=0)), one, zero


def aggregate(eps=0.0, method: str = "filter", *, rounds: int = 10, thresh=3.0,
              drop_frac=None, max_frac=None, power_iters: int = 10, trim=None,
              num_blocks: int = 10) -> optax.GradientTransformationExtraArgs:
    r"""Robust aggregation of per-example gradients as an optax transformation.

    **Contract.** ``update(updates, state, params=None, **extra)`` takes ``updates`` with a
    leading per-example axis on every leaf (leaf shapes ``(n,) + param.shape``, e.g. from
    ``jax.vmap(jax.grad(loss), in_axes=(None, 0))(params, batch)``) and returns a robust mean
    with the parameters' shapes and dtypes. ``init(params)`` only needs the parameters'
    structure (it works on ``jax.ShapeDtypeStruct`` leaves) and the state holds scalar
    diagnostics (:class:`AggregateState`). Put it FIRST in a chain; everything after it sees
    ordinary parameter-shaped gradients::

        tx = optax.chain(aggregate(0.05), optax.sgd(0.5))
        per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0))(params, batch)
        updates, state = tx.update(per_example, state, params)

    Wrappers: ``optax.chain`` (first), ``optax.inject_hyperparams`` (``eps``, ``thresh``,
    ``drop_frac``, ``max_frac``, ``trim`` may be injected; pass ``method``, ``rounds``,
    ``power_iters``, ``num_blocks`` in ``static_args``) and ``jit``/``vmap`` apply. Wrappers
    that treat their input as parameter-shaped do not apply AROUND it: ``optax.MultiSteps``
    accumulates its inputs into parameter-shaped buffers (so wrap the later part instead:
    ``chain(aggregate(...), MultiSteps(sgd(...)))``, or concatenate the per-example axes of
    the micro-batches), ``optax.masked`` passes the unmasked leaves through with their
    per-example axis (mask the later part instead), and ``optax.apply_if_finite`` returns
    zeros shaped like its input when the update is not finite (put it after this
    transformation). Schedules do not apply: nothing here is a learning rate.

    Methods (module docstring): ``"filter"`` (:func:`filter_mean` on the concatenation of all
    leaves, so one direction spans the whole pytree), ``"trimmed"`` (coordinate-wise,
    ``trim`` defaults to ``eps``), ``"mom"`` (median of ``num_blocks`` block means) and
    ``"mean"`` (the plain, non-robust mean: the vanilla baseline).

    Args:
      eps: contamination fraction in ``[0, 0.5)`` (float, may be traced).
      method: one of ``"filter"``, ``"trimmed"``, ``"mom"``, ``"mean"`` (static).
      rounds, thresh, drop_frac, max_frac, power_iters: filter settings, see
        :func:`filter_mean` (defaults ``10, 3.0, eps/2, 2 eps, 10``).
      trim: trimmed-mean fraction per side in ``[0, 0.5)`` (default ``eps``).
      num_blocks: median-of-means blocks (static int >= 1; ``<= n`` at update time).

    Returns:
      An ``optax.GradientTransformationExtraArgs``. When ``params`` is given, ``update`` checks
      that the updates have its tree structure and, after the leading per-example axis, its
      leaf shapes; a mismatch raises a ``ValueError`` naming the first leaf that differs.

    Paper mapping: ``RobustMean{g_i(beta_t)}`` of the paper's robust gradient descent phase
    (``beta_{t+1} = beta_t - eta RobustMean``: chain with ``optax.sgd(eta)``). The filter's
    "variance along the top direction exceeds a constant times a robust scale" test is applied
    per point (a round stops when no kept point exceeds ``thresh`` robust standard deviations),
    with the MAD as the scale because heavy-tailed inliers make the sample variance useless;
    the per-round drop fraction and the total budget are explicit (spec: the result depends on
    them).

    Theory: robust GD with this filter reaches ``O(sigma sqrt(eps))`` error in the spec's
    claims 3-4 (``experiments/robust/robust_sim.py``).
    """
    method = check_choice("method", method, METHODS)
    _check_filter_args(eps, rounds, thresh, drop_frac, max_frac, power_iters)
    if trim is not None:
        _check_fraction("trim", trim, allow_none=False, below_half=True)
    check_static_int("num_blocks", num_blocks, low=1)

    def init(params):
        del params
        return AggregateState(jnp.ones((), jnp.float32), jnp.zeros((), jnp.int32))

    def update(updates, state, params=None, **extra):
        del state, extra
        if params is not None:  # trace-time check of the shapes after the per-example axis
            per_example = jax.tree.map(
                lambda g: jax.ShapeDtypeStruct(jnp.shape(g)[1:], jnp.result_type(g)), updates)
            check_same_shapes("updates (after the leading per-example axis)", per_example,
                              "params", params, context="aggregate")
        mean, kept, used = aggregate_tree(
            updates, eps, method, rounds=rounds, thresh=thresh, drop_frac=drop_frac,
            max_frac=max_frac, power_iters=power_iters, trim=trim, num_blocks=num_blocks)
        return mean, AggregateState(jnp.asarray(kept, jnp.float32), jnp.asarray(used, jnp.int32))

    return optax.GradientTransformationExtraArgs(init, update)
