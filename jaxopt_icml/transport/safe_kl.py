r"""Safe KL: a capped, stochastic-gradient-friendly LogSumExp for DRO and semi-dual OT.

The log-partition ``F(phi; mu) = ln E_mu e^phi`` (``= logsumexp(phi) - ln n`` for an empirical
``mu``) is the convex conjugate of ``KL(. || mu)``. Writing ``ln s = min_c (c + s e^{-c} - 1)``,

.. math::
   F(\phi) = \min_{c\in\mathbb R}\; c + E_\mu\, f^*(\phi - c),\qquad f^*(s) = e^s - 1,

is jointly convex in ``(phi, c)`` and unbiased per sample, but ``e^{phi - c}`` overflows and has no
Lipschitz gradient. The Safe KL divergence keeps KL's generator ``f(t) = t ln t - t + 1`` for
likelihood ratios ``t <= M`` (``M = cap``) and forbids ratios above ``M``. Its conjugate is
exponential then linear (``C^1``, ``0 < f*' <= M``, ``f*'' <= M``):

.. math::
   f_M^*(s) = \begin{cases} e^s - 1, & s \le \ln M,\\ M (s - \ln M) + M - 1, & s > \ln M,
   \end{cases}\qquad F_M(\phi) = \min_c\; c + E_\mu f_M^*(\phi - c).

Properties (checked in ``tests/transport/test_safe_kl_logsumexp.py``): ``F_M`` is convex,
``F_M <= F``, nondecreasing in ``M``, and ``F_M = F`` exactly once ``M >= max_i e^{phi_i - F}``
(the largest tilt, ``max_i n softmax(phi)_i`` for the empirical measure). Stochastic gradients
of ``c + f_M^*(phi_i - c)`` are unbiased and bounded by ``M |grad phi_i|``.

The exact ``F_M`` needs no iterations: the optimality condition ``E_mu min(e^{phi - c}, M) = 1``
is solved in closed form after one sort. With the atoms sorted in decreasing ``phi`` and ``W_k``
the weight of the ``k`` largest, capping them gives the candidate
``c_k = ln sum_{i > k} w_i e^{phi_i} - ln(1 - M W_k)`` (when ``M W_k < 1``); because
``min(e^s, M)`` is below both ``e^s`` and ``M``, every candidate lies above the solution and the
right one equals it, so ``c* = min_k c_k`` (:func:`safe_log_mean_exp`).

Uses:

* KL-penalised DRO ``min_theta lam F(l(theta)/lam)`` through :func:`safe_kl_dro_loss`, a loss with
  an extra scalar parameter ``c`` that any optax optimizer consumes (minibatch means of it are
  unbiased, unlike the minibatch LSE :func:`lse_dro_loss`).
* Entropic OT semi-dual with ``KL(P || a x b)`` regularisation
  ``max_g <b, g> - e sum_i a_i F((g - C_i.)/e; b)``, with one ``c`` per source point:
  :func:`semidual_ot_safe` (an ``OracleAlgorithm``) on a :class:`SemiDualOT` problem, evaluated
  exactly by :func:`semidual_value`. With ``f_i = -e c_i`` it is the entropic dual in ``(f, g)``
  with ``e^s - 1`` replaced by ``f_M^*``.

References:
  * E. Gladin, A. Kroshnin, J.-J. Zhu, P. Dvurechensky. Improved Stochastic Optimization of
    LogSumExp. ICML 2026, arXiv 2509.24894.
  * A. Genevay, M. Cuturi, G. Peyre, F. Bach. Stochastic Optimization for Large-scale Optimal
    Transport. NeurIPS 2016 (the semi-dual SGD).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml import base
from jaxopt_icml.hyperparams import (
    check_bool,
    check_float,
    check_static_int,
    compute_dtype,
    concrete_float,
    resolve,
)

__all__ = [
    "safe_log_mean_exp",
    "safe_kl_dro_loss",
    "semidual_ot_safe",
    "safe_conjugate",
    "safe_tilt",
    "safe_logpartition",
    "log_mean_exp",
    "lse_dro_loss",
    "safe_kl_dro_value",
    "SemiDualOT",
    "SemiDualState",
    "semidual_value",
    "sqeuclidean",
]


def _check_cap(cap):
    """``cap`` (the largest allowed likelihood ratio ``M``) must be > 1 or ``inf``."""
    v = concrete_float(cap)
    if v is not None and v == math.inf:
        return cap
    return check_float("cap", cap, low=1.0, allow_schedule=False)


def safe_conjugate(s, cap):
    r"""``f_M^*(s)``: ``e^s - 1`` for ``s <= ln M``, ``M (s - ln M) + M - 1`` beyond.

    Args:
      s: array.
      cap: ``M > 1`` (float or array); ``inf`` gives the plain ``e^s - 1``.

    Returns:
      ``f_M^*(s)``, same shape and dtype as ``s``.

    Example:
      >>> float(safe_conjugate(jnp.log(100.0), 10.0))  # 10 (ln 100 - ln 10) + 9
      32.02585...
    """
    s = jnp.asarray(s)
    cap = jnp.asarray(cap, s.dtype)
    log_cap = jnp.log(cap)
    # the linear branch with a finite stand-in for cap = inf (never selected then): keeps its
    # gradient finite, so jnp.where's unused branch cannot turn gradients into NaN
    m = jnp.where(jnp.isfinite(cap), cap, 1.0)
    below = jnp.expm1(jnp.minimum(s, log_cap))
    above = m * (s - jnp.log(m)) + m - 1
    return jnp.where(s <= log_cap, below, above)


def safe_tilt(s, cap):
    """``f_M^*'(s) = min(e^s, M)``: the likelihood ratio of the tilted measure, capped at ``M``."""
    s = jnp.asarray(s)
    return jnp.exp(jnp.minimum(s, jnp.log(jnp.asarray(cap, s.dtype))))


def safe_logpartition(phi, c, cap):
    """Per-sample surrogate ``c + f_M^*(phi - c)``; its mean over ``mu`` is minimised by ``c``.

    ``min_c mean(safe_logpartition(phi, c, cap)) = F_M(phi)`` (:func:`safe_log_mean_exp`); for
    any fixed ``c`` the mean over a minibatch is an unbiased estimate of the full mean, and so
    are its gradients ``f_M^*'(phi - c) grad phi`` and ``1 - f_M^*'(phi - c)`` (in ``c``).

    Args:
      phi: per-sample values (any shape).
      c: scalar or broadcastable array (the dual variable, one per measure).
      cap: ``M > 1``, or ``inf`` for the naive exponential dual ``c + e^{phi - c} - 1``.

    Returns:
      ``c + f_M^*(phi - c)``, broadcast shape.

    Example:
      >>> phi = jnp.array([0.0, 1.0, 2.0])
      >>> c = safe_log_mean_exp(phi, 1e3)
      >>> bool(jnp.allclose(safe_logpartition(phi, c, 1e3).mean(), c))  # E f*(phi - c*) = 0
      True
    """
    phi = jnp.asarray(phi)
    c = jnp.asarray(c, phi.dtype)
    return c + safe_conjugate(phi - c, cap)


def log_mean_exp(phi, weights=None):
    """``F(phi; mu) = ln sum_i w_i e^{phi_i}`` over the last axis (``w = 1/n`` by default)."""
    phi = jnp.asarray(phi)
    if weights is None:
        n = phi.shape[-1]
        return jax.nn.logsumexp(phi, axis=-1) - jnp.log(jnp.asarray(n, phi.dtype))
    return jax.nn.logsumexp(phi, axis=-1, b=jnp.asarray(weights, phi.dtype))


def _safe_c(phi, cap, weights):
    """``argmin_c c + sum w f_M^*(phi - c)`` for a 1-D ``phi``: ``min_k c_k`` (module doc)."""
    n = phi.shape[0]
    w = jnp.full((n,), 1.0 / n, phi.dtype) if weights is None else jnp.asarray(weights, phi.dtype)
    order = jnp.argsort(-phi)
    ps, ws = phi[order], w[order]
    # rest_k = ln sum_{i >= k} w_i e^{phi_i} (k = 0..n-1), W_k = sum_{i < k} w_i
    rest = jax.lax.cumlogsumexp(ps + jnp.log(ws), reverse=True)
    capped = jnp.cumsum(ws) - ws
    # cap * W_k with 0 * inf = 0 (k = 0 caps nothing, also for cap = inf)
    denom = 1.0 - jnp.where(capped > 0, jnp.asarray(cap, phi.dtype) * capped, 0.0)
    ok = denom > 0
    cand = jnp.where(ok, rest - jnp.log(jnp.where(ok, denom, 1.0)), jnp.inf)
    return jnp.min(cand)


def safe_log_mean_exp(phi, cap, weights=None, *, return_c: bool = False):
    r"""The exact Safe-KL log-partition ``F_M(phi) = min_c c + sum_i w_i f_M^*(phi_i - c)``.

    Solved in closed form (module docstring): sort ``phi`` once, ``c* = min_k c_k``. The value
    is ``c* + sum_i w_i f_M^*(phi_i - c*)`` and its gradient ``w_i min(e^{phi_i - c*}, M)``
    (reverse-mode differentiable, including through ``c*``).

    Args:
      phi: values, shape ``(..., n)``; batch axes are vmapped.
      cap: ``M > 1`` or ``inf`` (then ``F_M = F``, the plain log-mean-exp).
      weights: probabilities ``w`` of shape ``(n,)`` (default uniform ``1/n``).
      return_c: also return the minimiser ``c*`` (static bool).

    Returns:
      ``F_M(phi)`` with shape ``phi.shape[:-1]`` (and ``c*`` when ``return_c``).

    Example:
      >>> phi = jnp.array([0.0, 0.0, 5.0])
      >>> float(safe_log_mean_exp(phi, jnp.inf)) == float(log_mean_exp(phi))
      True
      >>> bool(safe_log_mean_exp(phi, 2.0) < log_mean_exp(phi))  # the tilt 2.97 > 2 is capped
      True

    Paper mapping: ``M = 1/eps`` is the Safe-KL cap on the density ratio ``dq/dmu`` (inferred
    construction, see the experiment's docstring); ``F_M`` is the conjugate of the Safe-KL
    divergence at ``phi``.

    Theory: ``F_M <= F``, nondecreasing in ``M``, ``= F`` once ``M >= max tilt`` (claim
    ``identity_*`` of ``experiments/transport/safe_kl_logsumexp.py``).
    """
    check_bool("return_c", return_c)
    cap = _check_cap(cap)
    phi = jnp.asarray(phi)
    flat = phi.reshape((-1, phi.shape[-1]))
    c = jax.vmap(lambda p: _safe_c(p, cap, weights))(flat)
    w = (jnp.full(phi.shape[-1:], 1.0 / phi.shape[-1], phi.dtype) if weights is None
         else jnp.asarray(weights, phi.dtype))
    val = c + jnp.sum(w[None, :] * safe_conjugate(flat - c[:, None], cap), axis=-1)
    val, c = val.reshape(phi.shape[:-1]), c.reshape(phi.shape[:-1])
    return (val, c) if return_c else val


# --------------------------------------------------------------------------- DRO


def lse_dro_loss(per_example_losses, lam=1.0):
    """KL-penalised DRO objective ``lam ln mean exp(l / lam)`` of the given losses.

    On the full data set it is the exact objective; on a minibatch it is the (biased, by
    Jensen) minibatch-LSE baseline.
    """
    check_float("lam", lam, allow_schedule=False)
    losses = jnp.asarray(per_example_losses)
    lam = jnp.asarray(lam, losses.dtype)
    return lam * log_mean_exp(losses / lam)


def safe_kl_dro_loss(per_example_losses, c, lam=1.0, cap=1e3):
    r"""Safe-KL DRO loss ``lam mean_i [c + f_M^*(l_i / lam - c)]``: unbiased on minibatches.

    Minimising it jointly over the model parameters and the scalar ``c`` (an extra entry of the
    params pytree) minimises ``lam F_M(l / lam)``, the Safe-KL approximation of the KL-DRO
    objective ``lam ln E e^{l/lam}``. The temperature divides the losses; nothing else is
    clipped.

    Args:
      per_example_losses: losses of a minibatch (any shape; the mean is taken over all).
      c: scalar dual variable (learned with the parameters; start it near ``mean(l) / lam``).
      lam: temperature ``lam > 0`` (KL penalty weight).
      cap: ``M > 1`` (``inf``: the naive exponential dual, which can overflow).

    Returns:
      Scalar loss (its gradient is an unbiased estimate of the full-data gradient at the same
      parameters and ``c``).

    Example:
      >>> import optax
      >>> params = {"w": jnp.zeros(3), "c": jnp.zeros([])}
      >>> X, y = jnp.eye(3), jnp.array([1.0, -1.0, 1.0])
      >>> loss = lambda p: safe_kl_dro_loss(jax.nn.softplus(-y * (X @ p["w"])), p["c"], 0.5)
      >>> grads = jax.grad(loss)(params)

    Paper mapping: ``lam F_eps(l(theta)/lam)`` with the Safe-KL log-partition, ``eps = 1/cap``.

    Theory: unbiasedness and the DRO comparison are claims ``unbiased_*`` and ``dro_*`` of
    ``experiments/transport/safe_kl_logsumexp.py``. ``F_M`` is a lower bound: evaluate trained
    models with :func:`lse_dro_loss` on the full data.
    """
    check_float("lam", lam, allow_schedule=False)
    cap = _check_cap(cap)
    losses = jnp.asarray(per_example_losses)
    lam = jnp.asarray(lam, losses.dtype)
    return lam * jnp.mean(safe_logpartition(losses / lam, c, cap))


def safe_kl_dro_value(per_example_losses, lam=1.0, cap=1e3):
    """The exact ``lam F_M(l / lam)`` (``c`` minimised in closed form) over the last axis."""
    check_float("lam", lam, allow_schedule=False)
    losses = jnp.asarray(per_example_losses)
    lam = jnp.asarray(lam, losses.dtype)
    return lam * safe_log_mean_exp(losses / lam, cap)


# --------------------------------------------------------------------------- semi-dual OT


def sqeuclidean(x, y):
    """``||x - y||^2`` (ott-jax's ``PointCloud`` default cost)."""
    d = x - y
    return jnp.sum(d * d, axis=-1)


class SemiDualOT(NamedTuple):
    """Discrete entropic OT problem between ``mu = sum a_i delta_{x_i}`` and
    ``nu = sum b_j delta_{y_j}`` (an oracle pytree: vmap over instances works).

    Attributes:
      x: source points ``(n, d)``.
      y: target points ``(m, d)``.
      a: source weights ``(n,)`` (sum 1).
      b: target weights ``(m,)`` (sum 1).
    """

    x: jax.Array
    y: jax.Array
    a: jax.Array
    b: jax.Array

    def sample(self, key, num_x: int, num_y: int):
        """``(ix, iy)``: i.i.d. indices drawn from ``a`` and from ``b`` (with replacement), by
        inverse-CDF sampling (``O(num log n)``, no ``(num, n)`` Gumbel draw)."""
        kx, ky = jax.random.split(key)
        return _draw(kx, self.a, num_x), _draw(ky, self.b, num_y)


def _draw(key, w, num):
    cdf = jnp.cumsum(w.astype(jnp.float32))
    u = jax.random.uniform(key, (num,), jnp.float32) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), w.shape[0] - 1).astype(jnp.int32)


def _pairwise(cost_fn, xs, ys):
    return jax.vmap(lambda u: jax.vmap(lambda v: cost_fn(u, v))(ys))(xs)


def semidual_value(g, problem: SemiDualOT, *, eps, cost_fn: Callable = sqeuclidean,
                   cap=math.inf):
    r"""Exact semi-dual ``<b, g> - e sum_i a_i F_M((g - C_i.)/e; b)`` (full batch).

    With ``cap = inf`` this is the semi-dual of ``min_P <C, P> + e KL(P || a x b)``, whose
    maximum equals ott-jax's ``Sinkhorn(...).reg_ot_cost`` (its KL convention; pinned in the
    tests on a 3x3 case). Any ``g`` gives a lower bound.

    Args:
      g: target potential ``(m,)``.
      problem: a :class:`SemiDualOT`.
      eps: entropic regularisation ``e > 0``.
      cost_fn: pointwise cost ``c(x, y) -> scalar``.
      cap: ``M > 1`` or ``inf``.

    Returns:
      Scalar value.
    """
    check_float("eps", eps, allow_schedule=False)
    dt = compute_dtype(g.dtype)
    g = g.astype(dt)
    C = _pairwise(cost_fn, problem.x.astype(dt), problem.y.astype(dt))
    e = jnp.asarray(eps, dt)
    b = problem.b.astype(dt)
    rows = safe_log_mean_exp((g[None, :] - C) / e, cap, b)
    return jnp.sum(b * g) - e * jnp.sum(problem.a.astype(dt) * rows)


class SemiDualState(NamedTuple):
    """State of :func:`semidual_ot_safe`.

    Attributes:
      x: the iterate ``(g, c)``: target potential ``(m,)`` and per-source variables ``(n,)``.
      avg: the running (Polyak) average of the iterates, same structure.
      count: int32 number of updates.
    """

    x: Any
    avg: Any
    count: jax.Array


def semidual_ot_safe(learning_rate=0.01, *, eps: float = 0.1, cap: float = 1e3,
                     cost_fn: Callable = sqeuclidean, batch_x: int = 64, batch_y: int = 64,
                     average: bool = True) -> base.OracleAlgorithm:
    r"""Stochastic Safe-KL semi-dual OT: SGD ascent on ``(g, c)`` with minibatches of pairs.

    The objective (jointly concave; ``c`` minimised inside ``F_M``) is

    .. math::
       \Phi(g, c) = \sum_j b_j g_j - e \sum_i a_i\Big[c_i + \sum_j b_j
       f_M^*\big((g_j - C_{ij})/e - c_i\big)\Big],

    and ``max_c Phi(g, c)`` is the Safe-KL semi-dual (:func:`semidual_value`). One update draws
    ``I ~ a`` (``batch_x`` indices) and ``J ~ b`` (``batch_y``), forms the tilts
    ``t_kl = min(e^{(g_{J_l} - C(x_{I_k}, y_{J_l}))/e - c_{I_k}}, M)`` and takes the ascent step
    preconditioned by ``diag(1/b)``, ``diag(1/a)`` (each coordinate in its own units; ``u = e c``
    is in the units of ``g``):

    .. math::
       g_j \mathrel{+}= \eta\,\frac{1}{B_y b_j}\sum_{l: J_l = j}\big(1 - \tfrac1{B_x}\textstyle
       \sum_k t_{kl}\big),\qquad
       c_i \mathrel{-}= \frac{\eta}{e}\,\frac{1}{B_x a_i}\sum_{k: I_k = i}\big(1 -
       \tfrac1{B_y}\textstyle\sum_l t_{kl}\big),

    unbiased for ``eta (1 - E_x t_.j)`` and ``(eta/e)(1 - E_y t_i.)``; only sampled entries move.

    Args:
      learning_rate: ``eta > 0``, a float or an optax schedule of the update count (default
        0.01). A sampled coordinate moves by about ``eta m / (B_y e)`` times its residual
        (uniform weights), so keep that below 2 (the experiment uses 0.4-0.8).
      eps: entropic regularisation ``e > 0`` (static float).
      cap: ``M > 1``; ``inf`` is the naive exponential dual (``e^s`` unbounded: may overflow).
      cost_fn: pointwise ``c(x, y) -> scalar`` (static; default squared Euclidean).
      batch_x, batch_y: static ints ``>= 1``, samples of ``mu`` and ``nu`` per update.
      average: report the running average of the iterates as ``Step.x`` (static bool).

    Returns:
      ``OracleAlgorithm`` on a :class:`SemiDualOT` oracle: ``init((g, c), key)`` and
      ``update(state, problem, key) -> (Step, SemiDualState)``; ``info`` holds
      ``"oracle_calls"`` (points sampled, ``batch_x + batch_y``), ``"max_tilt"`` (largest
      ``t_kl``) and ``"finite"`` (1 while the iterate is finite, else 0).

    Example:
      >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
      >>> prob = SemiDualOT(jax.random.normal(k1, (32, 2)), jax.random.normal(k2, (32, 2)),
      ...                   jnp.full(32, 1 / 32), jnp.full(32, 1 / 32))
      >>> alg = semidual_ot_safe(0.02, eps=0.5, batch_x=8, batch_y=8)
      >>> state, _ = base.run(alg, (jnp.zeros(32), jnp.zeros(32)), prob,
      ...                     jax.random.PRNGKey(1), 100)
      >>> value = semidual_value(state.avg[0], prob, eps=0.5)

    Paper mapping: ``F_eps((g - c(x, .))/e; nu)`` with one ``c`` per source sample (the spec's
    ``c_vec``), ``eps_{Safe} = 1/cap``; SGD as in the paper's continuous-OT experiment, with the
    marginal-weight preconditioning and Polyak averaging chosen here (not from the paper).

    Theory: ``max Phi`` equals the entropic OT cost once ``M >= 1/min_j b_j`` (then
    ``F_M = F`` on every row); claim ``ot_*`` of ``experiments/transport/safe_kl_logsumexp.py``
    compares the averaged iterate with ott-jax's Sinkhorn.

    References: Gladin, Kroshnin, Zhu, Dvurechensky, ICML 2026, arXiv 2509.24894; Genevay et
    al. 2016.
    """
    check_float("learning_rate", learning_rate)
    check_float("eps", eps, allow_schedule=False)
    cap = _check_cap(cap)
    if not callable(cost_fn):
        raise ValueError(f"cost_fn must be callable, got {cost_fn!r}")
    batch_x = check_static_int("batch_x", batch_x)
    batch_y = check_static_int("batch_y", batch_y)
    average = check_bool("average", average)

    def init(x0, key):
        del key
        g, c = x0
        return SemiDualState(x=(g, c), avg=(g, c), count=jnp.zeros([], jnp.int32))

    def update(state, problem, key):
        g, c = state.x
        if g.shape != problem.b.shape or c.shape != problem.a.shape:
            # out-of-range gathers clamp and out-of-range scatters drop: fail loudly instead
            raise ValueError(f"semidual_ot_safe: g must have the shape of problem.b "
                             f"{problem.b.shape} and c that of problem.a {problem.a.shape}, got "
                             f"{g.shape} and {c.shape}")
        dt = compute_dtype(jnp.result_type(g.dtype, c.dtype))
        gc, cc = g.astype(dt), c.astype(dt)
        ix, iy = problem.sample(key, batch_x, batch_y)
        xs, ys = problem.x[ix].astype(dt), problem.y[iy].astype(dt)
        e = jnp.asarray(eps, dt)
        lr = resolve(learning_rate, state.count, dt)
        s = (gc[iy][None, :] - _pairwise(cost_fn, xs, ys)) / e - cc[ix][:, None]
        t = safe_tilt(s, cap)
        wy = problem.b.astype(dt)[iy] * batch_y
        wx = problem.a.astype(dt)[ix] * batch_x
        g_new = gc.at[iy].add(lr * (1.0 - t.mean(0)) / wy)
        c_new = cc.at[ix].add(-(lr / e) * (1.0 - t.mean(1)) / wx)
        new = (g_new.astype(g.dtype), c_new.astype(c.dtype))
        k = (state.count + 1).astype(dt)
        avg = jax.tree.map(lambda m, v: (m.astype(dt) + (v.astype(dt) - m.astype(dt)) / k
                                         ).astype(m.dtype), state.avg, new)
        finite = jnp.isfinite(g_new).all() & jnp.isfinite(c_new).all()
        info = {"oracle_calls": jnp.asarray(batch_x + batch_y, jnp.int32),
                "max_tilt": jnp.max(t).astype(jnp.float32),
                "finite": finite.astype(jnp.int32)}
        out = avg if average else new
        return base.Step(out, info), SemiDualState(new, avg, state.count + 1)

    return base.OracleAlgorithm(init, update)
