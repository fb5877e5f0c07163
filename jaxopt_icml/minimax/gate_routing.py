r"""Structural distillation of a gated mixture into a one-expert router.

A gated model ``p_g(x) = sum_j g(x, j) p_j(x)`` evaluates every expert at every input. For
cheap inference the gate is *distilled* into a router ``r_psi(x) = argmax_j s_psi(x)_j`` that
picks one expert per input without evaluating the experts. The router is trained to predict the
gated model's responsibilities

.. math::
   \pi(j \mid x) = \frac{g(x, j)\, p_j(x)}{p_g(x)},\qquad
   \min_\psi\; \mathbb{E}_{x \sim p_g}\Big[-\textstyle\sum_j \pi(j \mid x)
   \log \mathrm{softmax}(s_\psi(x))_j\Big]

(cross-entropy of the router against the responsibilities, under the gated model itself), and
the routed model keeps the gated model's mass on each routing region
``R_j = {x : r_psi(x) = j}`` and the expert's shape inside it:

.. math::
   p_r(x) = p_g(R_j)\, \frac{g(x, j)\, p_j(x)}{\sum_{x' \in R_j} g(x', j)\, p_j(x')}
   \quad\text{for } x \in R_j

(the top-1 gated expert, as in sparse mixtures of experts, renormalized to keep the gated
model's mass on each region; ``log_gates=None`` drops ``g`` and keeps the expert's own shape).
``p_r`` is a density (it sums to one), needs one expert (and one gate output) per input, and is
sampled by drawing a region ``j`` with probability ``p_g(R_j)`` and then the region's shape.
When the gate already routes (``pi`` is one-hot on each ``R_j``), ``p_r = p_g``.

Paper mapping: the abstract announces a "Structural Distillation method for efficient
inference" with no visible details (arXiv 2602.17554). This module implements the version that
keeps the modular structure (the experts are reused unchanged; only the gate is compressed
into a hard router): the alternative of distilling ``p_g`` into a new monolithic model would
discard the experts. The finite-support form here (``routed_log_density`` on a grid) is the
setting of the experiment; the router training itself is generic.

References: Cortes, Mohri & Zhong, A Theoretical Framework for Modular Learning of Robust
Generative Models, ICML 2026, arXiv 2602.17554.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import check_static_int

__all__ = [
    "distill_router",
    "routed_log_density",
    "responsibilities",
]


def responsibilities(log_gates, log_experts):
    """``pi(j | x) = softmax_j(h(x)_j + log p_j(x))`` over the last axis."""
    return jax.nn.softmax(log_gates + log_experts, axis=-1)


def distill_router(router_apply: Callable, params, inputs, target, log_weights,
                   optimizer: optax.GradientTransformation, *, num_steps: int):
    r"""Fits router scores to target responsibilities by full-batch weighted cross-entropy.

    .. math::
       \min_\psi\; \sum_x w(x) \Big[-\sum_j \pi(j\mid x)\log\mathrm{softmax}(s_\psi(x))_j\Big]

    run as ``num_steps`` optimizer steps in one ``lax.scan``.

    Args:
      router_apply: ``router_apply(params, inputs) -> (N, m)`` scores ``s_psi``.
      params: initial router parameters.
      inputs: ``(N, ...)`` inputs (the grid).
      target: ``(N, m)`` responsibilities ``pi`` (rows on the simplex).
      log_weights: ``(N,)`` log-weights ``log w(x)`` (``log p_g(x)`` for distillation under
        the gated model; they need not be normalized).
      optimizer: any ``optax.GradientTransformation``.
      num_steps: static int ``>= 1``.

    Returns:
      ``(params, losses)``: the fitted parameters and the loss before each step
      (``(num_steps,)``, normalized weights).

    Example:
      >>> import jax.numpy as jnp, optax
      >>> apply = lambda p, x: x[:, None] * p["w"][None] + p["b"][None]
      >>> x = jnp.linspace(-1.0, 1.0, 5)
      >>> tgt = jnp.stack([x < 0, x >= 0], 1).astype(jnp.float32)
      >>> p, _ = distill_router(apply, {"w": jnp.zeros(2), "b": jnp.zeros(2)}, x, tgt,
      ...                       jnp.zeros(5), optax.adam(0.1), num_steps=50)
    """
    num_steps = check_static_int("num_steps", num_steps, low=1)
    w = jax.nn.softmax(jnp.asarray(log_weights))

    def loss(p):
        logq = jax.nn.log_softmax(router_apply(p, inputs), axis=-1)
        return -jnp.sum(w * jnp.sum(target * logq, axis=-1))

    def body(carry, _):
        p, s = carry
        value, g = jax.value_and_grad(loss)(p)
        upd, s = optimizer.update(g, s, p)
        return (optax.apply_updates(p, upd), s), value

    (params, _), losses = jax.lax.scan(body, (params, optimizer.init(params)), None,
                                       length=num_steps)
    return params, losses


def routed_log_density(route, log_experts, log_model, log_gates=None):
    r"""Log-masses of the routed (top-1) model on a finite support.

    ``p_r(x) = p_g(R_j) f_j(x) / f_j(R_j)`` for ``x in R_j = {x : route(x) = j}``, with the
    in-region shape ``f_j = g(., j) p_j`` (``log_gates`` given: the top-1 gated expert, as in a
    sparse mixture of experts) or ``f_j = p_j`` (``log_gates=None``: the expert alone). The
    constants ``p_g(R_j) / f_j(R_j)`` are computed once, at distillation time.

    Args:
      route: ``(n,)`` int expert index per support point (e.g. ``argmax`` of router scores).
      log_experts: ``(m, n)`` expert log-masses.
      log_model: ``(n,)`` normalized log-masses of the gated model ``p_g``.
      log_gates: ``(n, m)`` log-gates ``h(x)_j`` or ``None``.

    Returns:
      ``(n,)`` normalized log-masses of ``p_r`` (sums to one over the support).
    """
    m = log_experts.shape[0]
    shape = log_experts if log_gates is None else log_experts + log_gates.T
    inside = jax.nn.one_hot(route, m, dtype=log_model.dtype).T > 0  # (m, n)
    neg = jnp.asarray(-jnp.inf, log_model.dtype)
    mass_g = jax.nn.logsumexp(jnp.where(inside, log_model[None, :], neg), axis=-1)
    mass_f = jax.nn.logsumexp(jnp.where(inside, shape, neg), axis=-1)
    own = jnp.take_along_axis(shape, route[None, :], axis=0)[0]
    return own + mass_g[route] - mass_f[route]
