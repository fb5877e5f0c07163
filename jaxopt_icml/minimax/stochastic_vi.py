r"""Minibatch forward-backward-forward (Tseng) for stochastic VIs without bounded variance.

Find ``z`` with ``0 in F(z) + dr(z)`` (``r`` convex, e.g. the indicator of a possibly unbounded
closed convex set, through its prox), given an unbiased oracle ``F~(z; xi)`` whose variance may
grow like ``||z||^2``: ``E||F~(z) - F(z)||^2 <= s^2 + c ||z||^2``. With batch means ``F^_k`` of
size ``b_k`` (independent batches at the two points):

.. math::
   \bar z_k = \mathrm{prox}_{t r}(z_k - t \hat F_k(z_k)),\qquad
   w_k = \bar z_k - t\big(\hat F'_k(\bar z_k) - \hat F_k(z_k)\big),\qquad
   z_{k+1} = z_k + \alpha (w_k - z_k).

``alpha = 1`` is minibatch FBF (monotone case); ``alpha < 1`` is the relaxed, CEG+-style variant
for problems with a weak-Minty solution (``<F(z), z - z*> >= -(rho/2)||F(z)||^2``), which needs a
step bounded below (``t > 2 rho``), never a decaying one: noise is removed by the growing batch.

Accuracy: :func:`residual` ``res(z) = ||z - prox_{tr}(z - t F(z))|| / t`` with the EXACT field.

Oracles: ``minibatch_operator`` draws the batch mean of ``problems.NoisyOperator`` (multiplicative
Gaussian noise ``s G z / sqrt(d)`` plus additive ``a e``) directly: the mean of ``n`` samples has
exactly the law ``F(z) + (s G z / sqrt(d) + a e) / sqrt(n)``, so a batch of any size costs one
``d x d`` draw. An oracle may provide ``operator_mean(z, key, n)`` itself; any other oracle is
averaged with a ``lax.fori_loop`` over the traced count ``n`` (capped by the static
``max_batch``; not reverse-differentiable, which is not needed here).

Theory (claims of ``experiments/minimax/stochastic_vi.py``): with ``b_k = k + 1`` minibatch FBF
reaches residual ``eps`` after ``O(eps^{-4})`` oracle calls up to logs (``fbf_calls_slope``);
under variance growing like ``||z||^2`` single-sample SEG diverges in mean square at every
constant step, near the step its exact mean-square recursion predicts, while minibatch FBF
stays bounded (``seg_*``, ``fbf_hard_bounded``); on a weak-Minty field relaxed FBF with a step
``t > 2 rho`` converges where SGDA diverges (``relaxed_fbf_weak_minty_calls``,
``sgda_weak_minty_diverged_fraction``).
Measured results: the docstring of ``experiments/minimax/stochastic_vi.py``.

Not implemented here (spec companions): the MLMC inexact fixed-point FBF and the variance-reduced
Halpern FBF.

References:
  * A. Alacaoglu, J.-H. Kim. Solving Stochastic Variational Inequalities without the Bounded
    Variance Assumption. ICML 2026, arXiv 2602.05531.
  * P. Tseng. A modified forward-backward splitting method for maximal monotone mappings. SIAM J.
    Control Optim., 2000.
  * T. Pethick, P. Latafat, P. Patrinos, O. Fercoq, V. Cevher. Escaping limit cycles: global
    convergence for constrained nonconvex-nonconcave minimax problems. ICLR 2022 (CEG+).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml import base, problems
from jaxopt_icml.hyperparams import check_float, check_static_int, compute_dtype, concrete_float
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "stochastic_fbf",
    "relaxed_fbf",
    "residual",
    "box_prox",
    "minibatch_operator",
    "linear_batches",
    "StochasticFBFState",
]


class StochasticFBFState(NamedTuple):
    """State of :func:`stochastic_fbf`.

    Attributes:
      x: the iterate ``z_k`` (pytree, leaves keep their dtypes).
      count: int32 iteration counter ``k``.
      oracle_calls: int32 total oracle samples drawn so far.
    """

    x: Any
    count: jax.Array
    oracle_calls: jax.Array


def _identity_prox(z, t):
    del t
    return z


def box_prox(lower: float | None = None, upper: float | None = None) -> Callable:
    """``prox(z, t) = clip(z, lower, upper)``: projection onto a (possibly unbounded) box.

    Args:
      lower, upper: bounds (``None``: unbounded on that side); ``lower <= upper`` when both given.

    Returns:
      ``prox(z, t)`` acting leafwise (``t`` is ignored: an indicator's prox is the projection).

    Example:
      >>> import jax.numpy as jnp
      >>> box_prox(0.0)(jnp.array([-1.0, 2.0]), 0.5)
      Array([0., 2.], dtype=float32)
    """
    lo, hi = concrete_float(lower), concrete_float(upper)
    if lower is not None and lo is None or upper is not None and hi is None:
        raise ValueError(f"lower and upper must be floats or None, got {lower!r}, {upper!r}")
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"need lower <= upper, got lower={lower!r}, upper={upper!r}")

    def prox(z, t):
        del t
        return jax.tree.map(lambda v: jnp.clip(v, lo, hi).astype(v.dtype), z)

    return prox


def residual(field_fn: Callable, *, prox: Callable | None = None, step_size: float = 1.0
             ) -> Callable:
    r"""``res(z) = ||z - prox_{tr}(z - t F(z))|| / t``, the natural residual (exact ``F``).

    Args:
      field_fn: the exact field ``F(z)`` (e.g. ``problems.LinearOperator.operator``).
      prox: ``prox(z, t)``; ``None`` is the identity (unconstrained: ``res = ||F(z)||``).
      step_size: ``t > 0``.

    Returns:
      ``res(z) -> scalar`` (a jittable function).

    Example:
      >>> import jax.numpy as jnp
      >>> residual(lambda z: 2.0 * z)(jnp.array([3.0, 4.0]))
      Array(10., dtype=float32)
    """
    check_float("step_size", step_size, allow_schedule=False)
    prox = _identity_prox if prox is None else prox

    def res(z):
        t = jnp.asarray(step_size, jax.tree.leaves(z)[0].dtype)
        moved = jax.tree.map(lambda v, g: v - t * g, z, field_fn(z))
        gap = jax.tree.map(lambda v, p: v - p, z, prox(moved, t))
        sq = sum(jnp.vdot(g, g) for g in jax.tree.leaves(gap))
        return jnp.sqrt(sq) / t

    return res


def _noisy_mean(op: problems.NoisyOperator, z, key, n):
    """Exact law of the mean of ``n`` NoisyOperator samples at ``z`` (one d x d draw)."""
    d = z.shape[0]
    k1, k2 = jax.random.split(key)
    G = jax.random.normal(k1, (d, d), z.dtype) / jnp.sqrt(jnp.asarray(d, z.dtype))
    e = jax.random.normal(k2, (d,), z.dtype)
    noise = op.noise_scale.astype(z.dtype) * (G @ z) + op.additive_scale.astype(z.dtype) * e
    return op.base.operator(z).astype(z.dtype) + noise / jnp.sqrt(n.astype(z.dtype))


def minibatch_operator(oracle, z, key, batch_size, *, max_batch: int = 4096):
    """Mean of ``min(batch_size, max_batch)`` i.i.d. oracle samples at ``z``.

    Args:
      oracle: a ``problems.NoisyOperator`` (batch mean drawn directly), an object with
        ``operator_mean(z, key, n)``, or any ``operator(z, key)`` oracle (``fori_loop`` average).
      z: the point.
      key: a PRNG key.
      batch_size: int (possibly traced) ``>= 1``; clipped to ``[1, max_batch]``.
      max_batch: static cap on the batch.

    Returns:
      The batch mean, same structure as ``F(z)``.
    """
    n = jnp.clip(jnp.asarray(batch_size).astype(jnp.int32), 1, max_batch)
    if isinstance(oracle, problems.NoisyOperator):
        return _noisy_mean(oracle, z, key, n)
    if hasattr(oracle, "operator_mean"):
        return oracle.operator_mean(z, key, n)
    first = oracle.operator(z, jax.random.fold_in(key, 0))

    def body(i, acc):
        g = oracle.operator(z, jax.random.fold_in(key, i))
        return jax.tree.map(jnp.add, acc, g)

    total = jax.lax.fori_loop(1, n, body, first)
    return jax.tree.map(lambda a: a / n.astype(a.dtype), total)


def _batch_fn(batch_schedule):
    if callable(batch_schedule):
        # evaluated eagerly even when the algorithm is built inside jit/vmap (a sweep);
        # a schedule that depends on traced values is left unchecked
        with jax.ensure_compile_time_eval():
            first = batch_schedule(jnp.int32(0))
        if not isinstance(first, jax.core.Tracer):
            b0 = concrete_float(first)
            if b0 is None or b0 < 1:
                raise ValueError(f"batch_schedule(0) must be a scalar >= 1, got {first!r}")
        return batch_schedule
    b = check_static_int("batch_schedule", batch_schedule, low=1)
    return lambda k: jnp.asarray(b, jnp.int32)


def linear_batches(k):
    """The default schedule ``b_k = 8 (k + 1)`` (linearly growing batches)."""
    return 8 * (k + 1)


def stochastic_fbf(step_size: float = 0.5, *, batch_schedule: int | Callable = linear_batches,
                   prox: Callable | None = None, relaxation: float = 1.0,
                   max_batch: int = 4096) -> base.OracleAlgorithm:
    r"""Minibatch (relaxed) forward-backward-forward as an ``OracleAlgorithm``.

    .. math::
       \bar z_k = \mathrm{prox}_{t r}(z_k - t \hat F_k(z_k)),\quad
       z_{k+1} = z_k + \alpha\big(\bar z_k - t(\hat F'_k(\bar z_k) - \hat F_k(z_k)) - z_k\big),

    with independent batch means of size ``b_k = min(batch_schedule(k), max_batch)``.

    Args:
      step_size: ``t > 0`` (float, closure constant). Monotone: ``t < 1/L``. Weak Minty:
        ``2 rho < t < 1/L`` with ``relaxation < 1``.
      batch_schedule: an int ``>= 1`` (constant batch) or ``k -> b_k`` (traceable, int-valued,
        ``b_0 >= 1``; default ``8 (k + 1)``). Static. Under vmap every seed shares it.
      prox: ``prox(z, t)``, default identity (unconstrained); e.g. :func:`box_prox`.
      relaxation: ``alpha`` in ``(0, 1]``; 1 is Tseng's FBF, ``< 1`` the CEG+-style variant.
      max_batch: static int ``>= 1`` capping the batch.

    Returns:
      ``OracleAlgorithm`` with state :class:`StochasticFBFState`; ``info`` holds
      ``"oracle_calls"`` (``2 b_k``, int32), ``"batch_size"`` and ``"total_oracle_calls"``.
      ``update`` raises a ``ValueError`` naming the leaf when the operator's value or the
      prox's output differs from the iterate in tree structure or leaf shape (checked when
      traced).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxopt_icml import base, problems
      >>> game = problems.bilinear_game(jax.random.PRNGKey(0), 5)
      >>> noisy = problems.NoisyOperator(game, jnp.asarray(0.5), jnp.asarray(0.0))
      >>> _, res = base.run(stochastic_fbf(0.5), jnp.zeros(10), noisy, jax.random.PRNGKey(1),
      ...                   50, trace_fn=lambda s, st, o: residual(game.operator)(s.x))

    Paper mapping: ``t`` -> ``step_size``, ``b_k`` -> ``batch_schedule`` (the paper's growing
    batches, ``b_k ~ k``), ``alpha`` -> ``relaxation``, ``r`` -> ``prox``. Unconstrained with
    ``alpha = 1`` it is stochastic extragradient with one batch reused at ``z_k``.

    Theory: ``E res <= eps`` with ``O~(eps^-4)`` oracle calls for monotone and weak-Minty VIs
    under variance ``<= s^2 + c||z||^2`` (claims ``fbf_*`` in
    ``experiments/minimax/stochastic_vi.py``).

    References: Alacaoglu & Kim, ICML 2026, arXiv 2602.05531; Tseng 2000.
    """
    check_float("step_size", step_size, allow_schedule=False)
    check_float("relaxation", relaxation, high=1.0, allow_schedule=False)
    max_batch = check_static_int("max_batch", max_batch, low=1)
    batches = _batch_fn(batch_schedule)
    prox = _identity_prox if prox is None else prox

    def init(x0, key):
        del key
        zero = jnp.zeros([], jnp.int32)
        return StochasticFBFState(x0, zero, zero)

    def update(state, oracle, key):
        z = state.x
        like = jax.tree.leaves(z)[0]
        cd = compute_dtype(like.dtype)
        t, a = jnp.asarray(step_size, cd), jnp.asarray(relaxation, cd)
        n = jnp.clip(jnp.asarray(batches(state.count)).astype(jnp.int32), 1, max_batch)
        zc = jax.tree.map(lambda v: v.astype(cd), z)
        k1, k2 = jax.random.split(key)
        cast = lambda tree: jax.tree.map(lambda v: jnp.asarray(v).astype(cd), tree)
        g = minibatch_operator(oracle, zc, k1, n, max_batch=max_batch)
        check_same_shapes("oracle.operator(z)", g, "z", z, context="stochastic_fbf")
        g = cast(g)
        zbar = prox(jax.tree.map(lambda v, gv: v - t * gv, zc, g), t)
        check_same_shapes("prox(z, t)", zbar, "z", z, context="stochastic_fbf")
        zbar = cast(zbar)
        gbar = cast(minibatch_operator(oracle, zbar, k2, n, max_batch=max_batch))
        w = jax.tree.map(lambda zb, gb, gv: zb - t * (gb - gv), zbar, gbar, g)
        new = jax.tree.map(lambda v, wv, ref: (v + a * (wv - v)).astype(ref.dtype), zc, w, z)
        calls = 2 * n
        total = state.oracle_calls + calls
        info = {"oracle_calls": calls, "batch_size": n, "total_oracle_calls": total}
        return base.Step(new, info), StochasticFBFState(new, state.count + 1, total)

    return base.OracleAlgorithm(init, update)


def relaxed_fbf(step_size: float = 1.0, relaxation: float = 0.5, *,
                batch_schedule: int | Callable = linear_batches, prox: Callable | None = None,
                max_batch: int = 4096) -> base.OracleAlgorithm:
    """The relaxed (CEG+-style) minibatch FBF for weak-Minty VIs: :func:`stochastic_fbf` with
    ``relaxation = alpha < 1`` by default.

    Args:
      step_size: ``t``, must exceed ``2 rho`` (``rho``: the weak-Minty constant) and stay below
        ``1/L``. relaxation: ``alpha`` in ``(0, 1]``. batch_schedule, prox, max_batch: as in
        :func:`stochastic_fbf`.

    Returns:
      An ``OracleAlgorithm`` (state :class:`StochasticFBFState`).

    Example:
      >>> alg = relaxed_fbf(1.0, 0.5)

    Paper mapping: the weak-Minty method of arXiv 2602.05531 with a CEG+ relaxation of the
    second step; ``alpha = 0.5`` follows the spec. Theory: claim ``relaxed_fbf_weak_minty_*``
    of ``experiments/minimax/stochastic_vi.py``.
    """
    return stochastic_fbf(step_size, batch_schedule=batch_schedule, prox=prox,
                          relaxation=relaxation, max_batch=max_batch)
