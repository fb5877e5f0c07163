r"""APUB: the average percentile upper bound of a mean, its bootstrap approximation, and
APUB-minimisation by scenario reweighting.

Data :math:`\xi_1, \dots, \xi_N` with empirical law :math:`\hat P_N` and a cost
:math:`F(x, \xi)`. A bootstrap mean is :math:`\mu^* = \frac1N \sum_n F(x, \zeta_n)` with
:math:`\zeta_n` drawn i.i.d. from :math:`\hat P_N`. Efron's percentile bound at level
:math:`\tau` is the :math:`(1-\tau)`-quantile :math:`U^E_\tau` of :math:`\mu^*`, and

.. math::
   \mathrm{APUB}_\alpha = \frac1\alpha \int_0^\alpha U^E_\tau\, d\tau
   = \min_t\, t + \frac1\alpha E(\mu^* - t)_+ ,

the upper-tail CVaR of the bootstrap-mean law. The bootstrap sampling approximation (BSA) keeps
``M`` resamples as a count matrix :math:`K` (rows sum to :math:`N`), :math:`W = K / N`, so that
:math:`\mu^*_m(x) = \sum_n W_{mn} F(x, \xi_n)`: only the ``N`` scenario costs are evaluated.

The APUB is a convex, positively homogeneous function of the scenario-cost vector, and its
subgradient is :math:`\omega = W^\top \lambda`, with :math:`\lambda` the CVaR tail weights of the
bootstrap means (:math:`\lambda_m \in [0, 1/(\alpha M)]`, :math:`\sum_m \lambda_m = 1`, the VaR
atom taking the fractional remainder). Hence :math:`\partial_x \mathrm{APUB} \ni \sum_n
\omega_n \nabla_x F(x, \xi_n)`: a reweighted SAA gradient that any optax optimizer consumes
(:func:`scenario_reweighter`).

Paper mapping: :math:`\alpha` -> ``alpha``; :math:`M` -> ``num_boot``; :math:`W_{mn}` ->
``bootstrap_weights``; :math:`\mathrm{APUB}_\alpha` -> :func:`apub_value` (BSA) or
:func:`upper_cvar` of the exact law (:func:`exact_bootstrap_law`); :math:`U^E_\alpha` ->
:func:`efron_bound`; the CLT bound :math:`\bar F + z_{1-\alpha} s / \sqrt N` ->
:func:`clt_bound`.

References:
  H. Liu, S. Gao, C. Hu. *Managing Epistemic Uncertainty in Stochastic Optimization through a
  Statistical Upper Bound Framework* (APUB). ICML 2026, arXiv 2403.08966.
  R. T. Rockafellar, S. Uryasev. *Optimization of conditional value-at-risk*. J. Risk, 2000.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxopt_icml import base
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "apub_value",
    "scenario_reweighter",
    "upper_cvar",
    "ReweighterState",
    "bootstrap_weights",
    "clt_bound",
    "efron_bound",
    "exact_bootstrap_law",
    "newsvendor_apub_m",
    "newsvendor_cost",
    "newsvendor_lognormal_expected_cost",
    "scenario_weights",
    "tail_weights",
]


def _check_alpha(alpha):
    if isinstance(alpha, int | float) and not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")


def _check_pos_int(name, v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")


# --------------------------------------------------------------------------- bootstrap


def bootstrap_weights(key, n: int, num_boot: int, dtype=jnp.float32) -> jax.Array:
    r"""Bootstrap weights :math:`W = K / N` from multinomial counts.

    Row ``m`` holds the counts of a resample of size ``n`` drawn uniformly with replacement
    from ``n`` points, divided by ``n``: :math:`K_m \sim \mathrm{Multinomial}(n, 1/n)`. Built by
    a scatter-add of ``num_boot * n`` uniform indices (memory ``O(num_boot * n)``, never an
    ``M x N x N`` one-hot tensor).

    Args:
      key: PRNG key.
      n: number of data points (static, >= 1).
      num_boot: number of resamples ``M`` (static, >= 1).
      dtype: floating dtype of ``W``.

    Returns:
      ``W`` of shape ``(num_boot, n)``, rows summing to 1.
    """
    _check_pos_int("n", n)
    _check_pos_int("num_boot", num_boot)
    idx = jax.random.randint(key, (num_boot, n), 0, n)
    flat = (idx + n * jnp.arange(num_boot)[:, None]).reshape(-1)
    counts = jax.ops.segment_sum(jnp.ones_like(flat), flat, num_segments=num_boot * n)
    return counts.reshape(num_boot, n).astype(dtype) / n


def exact_bootstrap_law(n: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The exact bootstrap law of the weights for small ``n``, by enumeration.

    Every multiset of size ``n`` from ``n`` points (``C(2n-1, n)`` of them: 126 for
    ``n = 5``) with its multinomial probability :math:`n! / (\prod_i k_i!\, n^n)`.

    Returns:
      ``(W, prob)``: float64 NumPy arrays of shapes ``(S, n)`` (counts / n) and ``(S,)``.
    """
    _check_pos_int("n", n)
    if n > 8:
        raise ValueError(f"n must be <= 8 for enumeration, got {n}")
    rows, probs = [], []
    for combo in itertools.combinations_with_replacement(range(n), n):
        k = np.bincount(combo, minlength=n)
        rows.append(k / n)
        probs.append(math.factorial(n) / np.prod([math.factorial(int(v)) for v in k]) / n ** n)
    return np.asarray(rows, np.float64), np.asarray(probs, np.float64)


# --------------------------------------------------------------------------- CVaR


def tail_weights(values, alpha, probs=None) -> jax.Array:
    r"""Upper-tail CVaR weights :math:`\lambda` of a discrete law (last axis).

    Sort descending; each atom gets the part of its probability that falls in the top
    ``alpha`` of the mass, divided by ``alpha``: :math:`\lambda_i = (\min(P_{\ge i}, \alpha) -
    \min(P_{> i}, \alpha))_+ / \alpha`. The VaR atom gets the fractional remainder, so
    :math:`\sum_i \lambda_i = 1` exactly and the weights are a subgradient of CVaR. Ties get
    sorted order (any split is a valid subgradient).

    Args:
      values: shape ``(..., M)``.
      alpha: tail mass in (0, 1] (dynamic).
      probs: atom probabilities, shape ``(..., M)`` summing to 1; default uniform ``1/M``.

    Returns:
      ``lambda`` with the shape of ``values``, in the original order.
    """
    _check_alpha(alpha)
    values = jnp.asarray(values)
    dt = values.dtype if jnp.issubdtype(values.dtype, jnp.floating) else jnp.float32
    m = values.shape[-1]
    alpha = jnp.asarray(alpha, dt)
    order = jnp.argsort(-values, axis=-1, stable=True)
    if probs is None:
        # uniform atoms, in units of one atom: the descending rank r gets clip(alpha M - r, 0, 1)
        # / (alpha M) (exact integers; a float32 cumsum of 1/M drifts by ~1e-5 at M = 20000
        # and put a spurious weight on the atom after the tail)
        am = alpha * m
        r = jnp.broadcast_to(jnp.arange(m, dtype=dt), values.shape)
        lam_sorted = jnp.clip(am - r, 0, 1) / am
    else:
        probs = jnp.broadcast_to(jnp.asarray(probs, dt), values.shape)
        p = jnp.take_along_axis(probs, order, axis=-1)
        cum = jnp.cumsum(p, axis=-1)
        lam_sorted = jnp.maximum(jnp.minimum(cum, alpha) - jnp.minimum(cum - p, alpha), 0) / alpha
    # back to the original order by a scatter (cheaper than a second argsort)
    flat_order = order.reshape(-1, m)
    out = jax.vmap(lambda o, v: jnp.zeros((m,), v.dtype).at[o].set(v))(
        flat_order, lam_sorted.reshape(-1, m))
    return out.reshape(values.shape)


def upper_cvar(values, alpha, probs=None) -> jax.Array:
    r"""Upper-tail CVaR :math:`\frac1\alpha \int_0^\alpha \mathrm{VaR}_{1-\tau}\, d\tau` of a
    discrete law along the last axis (exact, fractional weight on the VaR atom).

    Equals :math:`\min_t t + E(X - t)_+ / \alpha` (Rockafellar-Uryasev); ``alpha = 1`` gives
    the mean. Args as in :func:`tail_weights`.
    """
    values = jnp.asarray(values)
    return jnp.sum(tail_weights(values, alpha, probs) * values, axis=-1)


def efron_bound(values, alpha, probs=None) -> jax.Array:
    r"""Efron's percentile upper bound: the lower :math:`(1-\alpha)`-quantile
    :math:`\inf\{v : P(X \le v) \ge 1 - \alpha\}` of a discrete law (last axis).

    Always :math:`\le` :func:`upper_cvar` at the same ``alpha``."""
    _check_alpha(alpha)
    values = jnp.asarray(values)
    m = values.shape[-1]
    order = jnp.argsort(values, axis=-1, stable=True)
    v = jnp.take_along_axis(values, order, axis=-1)
    tol = 16 * jnp.finfo(values.dtype).eps
    alpha = jnp.asarray(alpha, values.dtype)
    # first index whose cumulative probability reaches 1 - alpha (a small slack for round-off)
    if probs is None:  # uniform: cumulative counts k = 1..M are exact integers
        k = jnp.arange(1, m + 1, dtype=values.dtype)
        idx = jnp.broadcast_to(jnp.sum(k < m * (1.0 - alpha) * (1.0 - tol)), values.shape[:-1])
    else:
        probs = jnp.broadcast_to(jnp.asarray(probs, values.dtype), values.shape)
        cum = jnp.cumsum(jnp.take_along_axis(probs, order, axis=-1), axis=-1)
        idx = jnp.sum(cum < 1.0 - alpha - tol, axis=-1)
    idx = jnp.minimum(idx, m - 1)
    return jnp.take_along_axis(v, idx[..., None], axis=-1)[..., 0]


def clt_bound(costs, alpha) -> jax.Array:
    r"""The CLT upper bound :math:`\bar F + z_{1-\alpha}\, s / \sqrt N` (``s`` with ``N - 1``
    degrees of freedom), along the last axis."""
    _check_alpha(alpha)
    costs = jnp.asarray(costs)
    n = costs.shape[-1]
    z = jax.scipy.special.ndtri(1.0 - jnp.asarray(alpha, costs.dtype))
    return costs.mean(-1) + z * costs.std(-1, ddof=1) / math.sqrt(n)


def apub_value(costs, W, alpha) -> jax.Array:
    r"""BSA APUB :math:`\mathrm{CVaR}^{\uparrow}_\alpha(W c)` of per-scenario costs.

    Args:
      costs: shape ``(..., N)``; ``W``: ``(M, N)`` bootstrap weights; ``alpha`` in (0, 1].
    """
    means = jnp.einsum("mn,...n->...m", W, costs)
    return upper_cvar(means, alpha)


def scenario_weights(costs, W, alpha) -> tuple[jax.Array, jax.Array]:
    r"""``(APUB, omega)``: the BSA APUB of ``costs (N,)`` and its subgradient
    :math:`\omega = W^\top \lambda` with respect to the costs (nonnegative, sums to 1)."""
    means = W @ costs
    lam = tail_weights(means, alpha)
    return jnp.sum(lam * means), W.T @ lam


# --------------------------------------------------------------------------- reweighter


class ReweighterState(NamedTuple):
    """State of :func:`scenario_reweighter`.

    Attributes:
      x: current decision (pytree).
      W: bootstrap weights ``(num_boot, num_scenarios)``, float32, drawn once at ``init``
        (common random numbers: the objective stays fixed while ``x`` moves).
      inner: the optax optimizer's state.
      count: int32 number of updates.
    """

    x: base.PyTree
    W: jax.Array
    inner: base.PyTree
    count: jax.Array


def scenario_reweighter(
    optimizer: optax.GradientTransformation,
    *,
    alpha: float = 0.1,
    num_boot: int = 1000,
    num_scenarios: int,
    projection: Callable | None = None,
) -> base.OracleAlgorithm:
    r"""APUB-M by subgradient steps on the bootstrap-CVaR of reweighted scenario costs.

    Each update evaluates every scenario's cost and gradient at ``x``, forms the bootstrap
    means :math:`\mu_m = \sum_n W_{mn} F_n(x)`, their upper-tail CVaR weights :math:`\lambda`
    (:func:`tail_weights`) and :math:`\omega = W^\top\lambda`, and feeds
    :math:`g = \sum_n \omega_n \nabla F_n(x)` (a subgradient of the BSA APUB) to ``optimizer``:

    .. math:: x \leftarrow \Pi_X\big(x + \mathrm{optimizer}(g)\big).

    With :math:`\omega = 1/N` this is SAA; ``alpha = 1`` gives the bootstrap-averaged SAA.

    Args:
      optimizer: any optax ``GradientTransformation`` (e.g. ``optax.sgd`` with a decaying
        schedule: the objective is piecewise linear, so the rate must decay).
      alpha: tail level in (0, 1] (default 0.1; static float, validated eagerly).
      num_boot: resamples ``M`` (static, >= 1).
      num_scenarios: ``N``, the scenario count of the oracle (static, >= 1).
      projection: ``projection(x) -> x`` onto the feasible set (e.g. from
        ``optax.projections``); default none.

    The oracle provides ``scenario_value_and_grad(x) -> (costs (N,), grads)``, where ``grads``
    is a pytree like ``x`` with a leading axis ``N`` (a different tree structure or leaf shape
    raises a ``ValueError`` naming the leaf).

    Returns:
      An ``OracleAlgorithm``. ``init(x0, key)`` draws ``W`` from ``key``. ``Step.info`` holds
      ``oracle_calls`` (= N), ``apub`` (BSA APUB at the pre-step ``x``), ``saa`` (mean cost)
      and ``weight_max`` (largest :math:`\omega_n`).

    Paper mapping: BSA problem of the paper (:math:`\min_{x,t,s} t + \frac1{\alpha M}\sum_m
    s_m`) solved in its primal form by subgradient steps instead of an LP; :math:`t` is
    eliminated (the sort gives the optimal :math:`t` = VaR). Theory: the subgradient is
    checked against finite differences and a grid minimiser in ``tests/robust/test_apub.py``.
    """
    _check_alpha(alpha)
    _check_pos_int("num_boot", num_boot)
    _check_pos_int("num_scenarios", num_scenarios)
    if not isinstance(optimizer, optax.GradientTransformation
                      | optax.GradientTransformationExtraArgs):
        raise ValueError(f"optimizer must be an optax GradientTransformation, got {optimizer!r}")
    if projection is not None and not callable(projection):
        raise ValueError(f"projection must be callable or None, got {projection!r}")
    proj = (lambda x: x) if projection is None else projection

    @jax.jit
    def init(x0, key):
        W = bootstrap_weights(key, num_scenarios, num_boot, jnp.float32)
        return ReweighterState(x=x0, W=W, inner=optimizer.init(x0),
                               count=jnp.zeros((), jnp.int32))

    def update(state, oracle, key):
        del key
        costs, grads = oracle.scenario_value_and_grad(state.x)
        per_scenario = jax.tree.map(
            lambda G: jax.ShapeDtypeStruct(jnp.shape(G)[1:], jnp.result_type(G)), grads)
        check_same_shapes("oracle.scenario_value_and_grad(x)[1] (after the scenario axis)",
                          per_scenario, "x", state.x, context="scenario_reweighter")
        return _step(state, costs, grads)

    # everything after the oracle call is one compiled call when used eagerly (the oracle
    # itself may be any Python object, so it stays outside)
    @jax.jit
    def _step(state, costs, grads):
        ct = jnp.promote_types(costs.dtype, jnp.float32)
        value, omega = scenario_weights(costs.astype(ct), state.W.astype(ct), alpha)
        g = jax.tree.map(
            lambda G, p: jnp.tensordot(omega, G.astype(ct), axes=1).astype(p.dtype),
            grads, state.x)
        updates, inner = optimizer.update(g, state.inner, state.x)
        x = proj(optax.apply_updates(state.x, updates))
        x = jax.tree.map(lambda a, p: a.astype(p.dtype), x, state.x)
        info = {"oracle_calls": jnp.asarray(num_scenarios, jnp.int32),
                "apub": value.astype(jnp.float32),
                "saa": costs.astype(jnp.float32).mean(),
                "weight_max": omega.max().astype(jnp.float32)}
        return base.Step(x=x, info=info), ReweighterState(x, state.W, inner,
                                                          state.count + 1)

    return base.OracleAlgorithm(init=init, update=update)


# --------------------------------------------------------------------------- newsvendor


def newsvendor_cost(q, d, c=1.0, p=2.0):
    r"""Newsvendor cost :math:`F(q, d) = c q - p \min(q, d)` (order ``q``, demand ``d``)."""
    return c * q - p * jnp.minimum(q, d)


def newsvendor_lognormal_expected_cost(q, mu, sigma, c=1.0, p=2.0):
    r"""True :math:`E F(q, D)` for :math:`D \sim \mathrm{LogNormal}(\mu, \sigma)`:
    :math:`E\min(q, D) = e^{\mu + \sigma^2/2}\Phi(\frac{\ln q - \mu - \sigma^2}{\sigma}) +
    q(1 - \Phi(\frac{\ln q - \mu}{\sigma}))`."""
    Phi = jax.scipy.special.ndtr
    lq = jnp.log(q)
    emin = (jnp.exp(mu + sigma ** 2 / 2) * Phi((lq - mu - sigma ** 2) / sigma)
            + q * (1 - Phi((lq - mu) / sigma)))
    return c * q - p * emin


def newsvendor_apub_m(demand, W, alpha, c=1.0, p=2.0, *, iters: int = 50):
    r"""Minimises the BSA APUB of the newsvendor cost over ``q in [min d, max d]`` by golden-
    section search (the objective is convex in ``q``: a CVaR of convex costs).

    Args:
      demand: ``(N,)`` samples; ``W``: ``(M, N)`` bootstrap weights (a single row ``1/N`` with
        ``alpha = 1`` gives SAA); ``alpha`` in (0, 1]; ``iters``: golden-section steps
        (static; 50 shrink the bracket by ``0.618^50 ~ 4e-11``).

    Returns:
      ``(q_hat, value)``.
    """
    _check_pos_int("iters", iters)
    f = lambda q: apub_value(newsvendor_cost(q, demand, c, p), W, alpha)
    g = (math.sqrt(5.0) - 1) / 2
    a, b = demand.min(), demand.max()
    x1, x2 = b - g * (b - a), a + g * (b - a)

    def body(_, st):
        # one new evaluation per step: the surviving interior point keeps its value
        a, b, x1, x2, f1, f2 = st
        left = f1 <= f2
        na, nb = jnp.where(left, a, x1), jnp.where(left, x2, b)
        nx1 = jnp.where(left, nb - g * (nb - na), x2)
        nx2 = jnp.where(left, x1, na + g * (nb - na))
        fnew = f(jnp.where(left, nx1, nx2))
        return (na, nb, nx1, nx2, jnp.where(left, fnew, f2), jnp.where(left, f1, fnew))

    a, b, *_ = jax.lax.fori_loop(0, iters, body, (a, b, x1, x2, f(x1), f(x2)))
    q = 0.5 * (a + b)
    return q, f(q)
