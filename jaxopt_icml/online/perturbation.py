r"""PABLO: the perturbation reduction of unconstrained bandit linear optimization (uBLO) to OLO.

Protocol: each round the learner plays ``x_t`` in ``R^d``, an oblivious adversary has fixed
``l_t`` with ``||l_t|| <= G``, and the learner sees only the scalar ``<l_t, x_t>``. PABLO keeps
the point ``w_t`` of an OLO learner and plays a random point of the sphere of radius ``r_t``
around it:

.. math::
   x_t = w_t + r_t s_t,\quad s_t \sim \mathrm{Unif}(S^{d-1}),\qquad
   \hat l_t = \frac{d}{r_t}\langle l_t, x_t\rangle s_t,\qquad
   w_{t+1} = \mathrm{OLO}(w_t, \hat l_t),\qquad r_t = \sqrt d \max(\|w_t\|, r_{\min}).

Since ``E s = 0`` and ``E s s^T = I/d``: ``E l^_t = l_t`` and ``E<l_t, x_t> = <l_t, w_t>``, so the
expected bandit regret equals the expected OLO regret on the estimates, and
``E||l^_t||^2 = (d/r_t)^2 <l_t, w_t>^2 + d ||l_t||^2 <= 2 d G^2`` while
``||l^_t|| <= G (d + sqrt d)`` almost surely (because ``||w_t|| <= r_t / sqrt d``). A
comparator-adaptive OLO learner with a second-order bound (``online.coin_betting``, in module
``online.olo_learners``) then gives ``E R_T(u) = O~(||u|| G sqrt(d T))`` and ``E R_T(0) <= eps``.

Theory: the estimator identities, the ``sqrt(T)`` static regret with ``R_T(0) <= eps``, the
``sqrt(d)`` dependence and the dynamic regret are claims ``estimator_*``, ``static_*``,
``dimension_*`` and ``dynamic_*`` of ``experiments/online/unconstrained_blo.py``.
Measured results: the docstring of ``experiments/online/unconstrained_blo.py``.

Environments are data pytrees (:class:`LinearLosses`): an oblivious loss sequence indexed by the
round, ``loss(t)``, with the comparator sequence ``comparator(t)`` the claims are measured
against, and the bandit oracle ``feedback(x, key, t) = <loss(t), x>``.

References:
  * A. Jacobsen, D. Baudry, S. Ito, N. Cesa-Bianchi. A Perturbation Approach to Unconstrained
    Linear Bandits. ICML 2026, arXiv 2603.28201.
  * J. Abernethy, E. Hazan, A. Rakhlin. Competing in the dark: an efficient algorithm for bandit
    linear optimization. COLT 2008.
  * A. Flaxman, A. Kalai, H. B. McMahan. Online convex optimization in the bandit setting:
    gradient descent without a gradient. SODA 2005.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_float, check_static_int, compute_dtype
from jaxopt_icml.online.olo_learners import projected_ogd, tree_vdot
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "pablo",
    "fkm",
    "full_information",
    "linear_losses",
    "ball_lower_bound",
    "LinearLosses",
    "PabloState",
    "sphere_direction",
]


def _size(tree) -> int:
    return sum(int(math.prod(v.shape)) for v in jax.tree.leaves(tree))


def sphere_direction(key, like):
    """A uniform point of the unit sphere of ``R^d`` (``d`` = total size of ``like``), shaped and
    typed like the pytree ``like`` (drawn in the compute dtype, then cast)."""
    leaves, treedef = jax.tree.flatten(like)
    keys = jax.random.split(key, len(leaves))
    cd = jnp.result_type(*[compute_dtype(v.dtype) for v in leaves])
    draws = [jax.random.normal(k, v.shape, cd) for k, v in zip(keys, leaves, strict=True)]
    norm = jnp.sqrt(sum(jnp.sum(z * z) for z in draws))
    return jax.tree.unflatten(treedef, [(z / norm).astype(v.dtype) for z, v in
                                        zip(draws, leaves, strict=True)])


class LinearLosses(struct.PyTreeNode):
    """An oblivious linear loss sequence with a piecewise-constant comparator.

    ``loss(t) = sigma_t mean + noise xi_t`` with ``xi_t ~ Unif(S^{d-1})`` drawn from
    ``fold_in(key, t)`` (fixed in advance: oblivious), ``sigma_t = (-1)^{floor(t (S+1)/T)}``
    (``S`` sign switches over ``T`` rounds), and ``comparator(t) = -sigma_t radius mean/||mean||``,
    the minimiser of the expected loss on the ball of ``radius``. ``||loss(t)|| <= ||mean|| +
    noise``.

    Attributes:
      key: the environment's PRNG key (its randomness, not the learner's).
      mean: ``(d,)`` mean loss vector.
      noise: scalar radius of the noise.
      radius: scalar comparator norm ``R``.
      switches: int32 number of sign switches ``S`` (0: stationary).
      horizon: int32 ``T`` used to place the switches.
    """

    key: jax.Array
    mean: jax.Array
    noise: jax.Array
    radius: jax.Array
    switches: jax.Array
    horizon: jax.Array

    def sign(self, t):
        seg = (jnp.asarray(t, jnp.int32) * (self.switches + 1)) // self.horizon
        seg = jnp.where(self.switches > 0, seg, 0)  # stationary: rounds past T do not flip
        return jnp.where(seg % 2 == 0, 1.0, -1.0).astype(self.mean.dtype)

    def loss(self, t) -> jax.Array:
        """``l_t`` (shape ``(d,)``, the dtype of ``mean``)."""
        xi = sphere_direction(jax.random.fold_in(self.key, t), self.mean)
        return self.sign(t) * self.mean + self.noise.astype(self.mean.dtype) * xi

    def comparator(self, t) -> jax.Array:
        """``u_t``: ``-sigma_t R mean / ||mean||``."""
        unit = self.mean / jnp.maximum(jnp.linalg.norm(self.mean), jnp.finfo(self.mean.dtype).tiny)
        return -self.sign(t) * self.radius.astype(self.mean.dtype) * unit

    def feedback(self, x, key, t) -> jax.Array:
        """The bandit feedback ``<l_t, x>`` (``key`` unused: the sequence is fixed)."""
        del key
        cd = compute_dtype(x.dtype)
        return jnp.vdot(self.loss(t).astype(cd), x.astype(cd)).astype(x.dtype)

    def gradient(self, x, key, t) -> jax.Array:
        """The full-information feedback ``l_t`` (for the full-information reference)."""
        del key
        return self.loss(t).astype(x.dtype)


def linear_losses(key, dim: int, *, drift: float = 0.5, noise: float = 0.5,
                  radius: float = 1.0, switches: int = 0, horizon: int = 1,
                  dtype=jnp.float32) -> LinearLosses:
    """Stochastic linear losses ``l_t = -sigma_t drift e_1 + noise xi_t`` (``||l_t|| <= drift +
    noise``) with comparator ``u_t = sigma_t radius e_1``.

    Args:
      key: PRNG key of the sequence. dim: static ``d >= 1``. drift: ``> 0``. noise: ``>= 0``.
      radius: comparator norm ``R > 0``. switches: static ``S >= 0``. horizon: static
        ``T >= 1``. dtype: float dtype of the vectors.

    Returns:
      A :class:`LinearLosses`.

    Example:
      >>> import jax
      >>> env = linear_losses(jax.random.PRNGKey(0), 4, radius=10.0)
    """
    dim = check_static_int("dim", dim, low=1)
    switches = check_static_int("switches", switches, low=0)
    horizon = check_static_int("horizon", horizon, low=1)
    check_float("drift", drift, allow_schedule=False)
    check_float("noise", noise, strict=False, allow_schedule=False)
    check_float("radius", radius, allow_schedule=False)
    mean = jnp.zeros((dim,), dtype).at[0].set(-drift)
    return LinearLosses(key, mean, jnp.asarray(noise, dtype), jnp.asarray(radius, dtype),
                        jnp.asarray(switches, jnp.int32), jnp.asarray(horizon, jnp.int32))


def _norm(tree, dtype) -> jax.Array:
    """``||tree||`` without overflow: scaled by the largest magnitude first (a betting learner's
    iterate can exceed 1.8e19, where the squared norm overflows float32, long before its
    wealth does)."""
    big = jnp.max(jnp.stack([jnp.max(jnp.abs(v)).astype(dtype) for v in jax.tree.leaves(tree)]))
    big = jnp.maximum(big, jnp.finfo(dtype).tiny)
    scaled = jax.tree.map(lambda v: v.astype(dtype) / big, tree)
    return big * jnp.sqrt(tree_vdot(scaled, scaled, dtype))


def ball_lower_bound(key, dim: int, horizon: int, *, gap: float | None = None,
                     dtype=jnp.float32) -> LinearLosses:
    r"""The lower-bound instance on the unit ball: ``l_t = -Delta theta + (1 - Delta) xi_t``.

    ``theta`` is a uniform sign vector divided by ``sqrt d`` (unit norm, drawn from ``key``),
    ``xi_t`` uniform on the sphere, ``Delta = min(1/2, sqrt(d / T))`` unless ``gap`` is given,
    so ``||l_t|| <= 1`` and the best point of the unit ball is ``theta``: a learner that does not
    identify ``theta`` pays ``Delta`` per round, and identifying it from the feedback
    ``<l_t, x_t>`` takes ``~ d / Delta^2`` rounds, hence ``R_T(theta) = Omega(sqrt(d T))``.

    Args:
      key: PRNG key (``theta`` and the noise sequence). dim: static ``d``. horizon: static ``T``.
      gap: ``Delta`` in ``(0, 1)`` or ``None`` (default ``min(1/2, sqrt(d/T))``).
      dtype: float dtype.

    Returns:
      A stationary :class:`LinearLosses` with ``radius = 1`` (comparator ``theta``).

    Example:
      >>> import jax
      >>> env = ball_lower_bound(jax.random.PRNGKey(0), 8, 10_000)
    """
    dim = check_static_int("dim", dim, low=1)
    horizon = check_static_int("horizon", horizon, low=1)
    check_float("gap", gap, high=1.0, allow_schedule=False, allow_none=True)
    if gap is not None and float(gap) >= 1.0:
        raise ValueError(f"gap must lie in (0, 1), got {gap}")
    delta = min(0.5, math.sqrt(dim / horizon)) if gap is None else float(gap)
    k_theta, k_seq = jax.random.split(key)
    theta = jax.random.rademacher(k_theta, (dim,), dtype) / math.sqrt(dim)
    return LinearLosses(k_seq, (-delta * theta).astype(dtype), jnp.asarray(1.0 - delta, dtype),
                        jnp.asarray(1.0, dtype), jnp.asarray(0, jnp.int32),
                        jnp.asarray(horizon, jnp.int32))


class PabloState(NamedTuple):
    """State of :func:`pablo` and :func:`full_information`.

    Attributes:
      count: int32 round ``t``.
      center: ``w_t``, the OLO learner's point (structure and dtypes of ``x0``).
      olo: the OLO transformation's state.
    """

    count: jax.Array
    center: Any
    olo: Any


def _default_scale(norm, dim, r_min):
    return jnp.sqrt(jnp.asarray(dim, norm.dtype)) * jnp.maximum(norm, r_min)


def pablo(olo: optax.GradientTransformation, *, r_min: float = 1.0,
          scale_fn: Callable | None = None) -> base.OracleAlgorithm:
    r"""The perturbation reduction of unconstrained BLO to OLO, as an ``OracleAlgorithm``.

    Each ``update`` plays ``x_t = w_t + r_t s_t``, asks ``oracle.feedback(x_t, key, t)`` for
    ``<l_t, x_t>``, forms ``l^_t = (d / r_t) <l_t, x_t> s_t`` and runs one step of ``olo`` on it.

    Args:
      olo: the OLO learner, an ``optax.GradientTransformation`` fed ``l^_t`` as ``updates`` with
        ``params = w_t`` (e.g. :func:`online.olo_learners.coin_betting` with
        ``grad_bound = G (d + sqrt d)``; it keeps its wealth in the log domain and plays at
        most ``max_scale`` away from ``x0``, so a float32 run on a persistent drift, whose
        wealth grows exponentially, stays finite).
      r_min: floor ``> 0`` of the perturbation scale (keeps the variance finite near ``w = 0``).
      scale_fn: ``scale_fn(norm_w, d) -> r_t`` (static callable); default
        ``sqrt(d) max(||w_t||, r_min)``. A constant gives the FKM estimator (:func:`fkm`).

    Returns:
      ``OracleAlgorithm`` with state :class:`PabloState`; ``Step.x`` is the played ``x_t`` and
      ``info`` holds ``"oracle_calls"`` (1), ``"loss"`` (the feedback), ``"radius"`` (``r_t``)
      and ``"estimate_norm"`` (``||l^_t||``).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxopt_icml import base
      >>> from jaxopt_icml.online.olo_learners import coin_betting
      >>> env = linear_losses(jax.random.PRNGKey(0), 4, radius=10.0)
      >>> alg = pablo(coin_betting(1.0, grad_bound=6.0))
      >>> _, regret = base.run(alg, jnp.zeros(4), env, jax.random.PRNGKey(1), 100,
      ...     trace_fn=lambda s, st, o: jnp.vdot(o.loss(st.count - 1), s.x - o.comparator(
      ...         st.count - 1)))

    Paper mapping: PABLO of arXiv 2603.28201 with ``x_t = w_t + r_t s_t`` and the estimator
    ``l^_t`` above. The exact scale is not in the public summaries; ``r_t = sqrt(d) max(||w_t||,
    r_min)`` is the choice that makes ``E||l^_t||^2 <= 2 d G^2`` (spec) and bounds
    ``||l^_t|| <= G (d + sqrt d)`` almost surely, so a bounded-gradient bettor needs no clipping.

    Theory: ``E l^_t = l_t``; ``E||l^_t||^2 = (d/r)^2 <l,w>^2 + d||l||^2`` (tested by Monte Carlo
    and against a NumPy re-derivation of the loop); with the ONS coin bettor
    ``E R_T(u) = O~(||u|| G sqrt(d T))`` and ``E R_T(0) <= eps`` (claims ``static_*`` and
    ``dimension_*`` of ``experiments/online/unconstrained_blo.py``).
    """
    check_float("r_min", r_min, allow_schedule=False)
    if scale_fn is not None and not callable(scale_fn):
        raise ValueError(f"scale_fn must be a callable (norm, d) -> r or None, got {scale_fn!r}")
    scale = functools.partial(_default_scale, r_min=r_min) if scale_fn is None else scale_fn

    def init(x0, key):
        del key
        return PabloState(jnp.zeros([], jnp.int32), x0, olo.init(x0))

    def update(state, oracle, key):
        w = state.center
        dim = _size(w)
        cd = jnp.result_type(*[compute_dtype(v.dtype) for v in jax.tree.leaves(w)])
        k_dir, k_feed = jax.random.split(key)
        s = jax.tree.map(lambda v: v.astype(cd), sphere_direction(k_dir, w))
        r = jnp.asarray(scale(_norm(w, cd), dim)).astype(cd)
        x = jax.tree.map(lambda c, sv: (c.astype(cd) + r * sv).astype(c.dtype), w, s)
        loss = jnp.asarray(oracle.feedback(x, k_feed, state.count)).astype(cd)
        coef = jnp.asarray(dim, cd) / r * loss
        estimate = jax.tree.map(lambda sv, c: (coef * sv).astype(c.dtype), s, w)
        updates, olo_state = olo.update(estimate, state.olo, w)
        center = optax.apply_updates(w, updates)
        center = jax.tree.map(lambda c, ref: c.astype(ref.dtype), center, w)
        info = {"oracle_calls": jnp.asarray(1, jnp.int32), "loss": loss, "radius": r,
                "estimate_norm": jnp.abs(coef)}
        return base.Step(x, info), PabloState(state.count + 1, center, olo_state)

    return base.OracleAlgorithm(init, update)


def _constant_scale(norm, dim, delta):
    del dim
    return jnp.asarray(delta, norm.dtype)


def fkm(learning_rate: float, radius: float, delta: float = 1.0) -> base.OracleAlgorithm:
    r"""Flaxman-Kalai-McMahan: the one-point estimator with a fixed perturbation ``delta`` and
    projected OGD on the ball of known ``radius`` ``D >= ||u||``.

    ``x_t = w_t + delta s_t``, ``l^_t = (d/delta) <l_t, x_t> s_t``,
    ``w_{t+1} = Pi_{B(w_0, D)}(w_t - eta l^_t)``.

    Args:
      learning_rate: ``eta > 0`` (float or schedule). radius: ``D > 0``. delta: ``> 0``.

    Returns:
      An ``OracleAlgorithm`` (the :func:`pablo` loop with a constant scale).

    Example:
      >>> alg = fkm(0.01, radius=10.0)

    Paper mapping: the constrained baseline the paper improves on: it needs ``D`` and its
    estimates have ``E||l^||^2 ~ d^2 (D/delta)^2 G^2``, so its regret scales with ``d`` and ``D``
    rather than ``sqrt(d)`` and ``||u||``.
    """
    check_float("delta", delta, allow_schedule=False)
    return pablo(projected_ogd(learning_rate, radius),
                 scale_fn=functools.partial(_constant_scale, delta=delta))


def full_information(olo: optax.GradientTransformation) -> base.OracleAlgorithm:
    """The OLO learner fed the true ``l_t = oracle.gradient(w_t, key, t)`` (an upper reference:
    not a bandit algorithm). ``Step.x`` is the played ``w_t``.

    Args:
      olo: an ``optax.GradientTransformation``.

    Returns:
      An ``OracleAlgorithm`` with state :class:`PabloState`; a gradient whose tree structure or
      leaf shapes differ from ``w``'s raises a ``ValueError`` naming the leaf.

    Example:
      >>> from jaxopt_icml.online.olo_learners import coin_betting
      >>> alg = full_information(coin_betting(1.0, 1.0))
    """

    def init(x0, key):
        del key
        return PabloState(jnp.zeros([], jnp.int32), x0, olo.init(x0))

    def update(state, oracle, key):
        w = state.center
        g = oracle.gradient(w, key, state.count)
        check_same_shapes("oracle.gradient(w)", g, "w", w, context="full_information")
        updates, olo_state = olo.update(g, state.olo, w)
        center = jax.tree.map(lambda c, ref: c.astype(ref.dtype),
                              optax.apply_updates(w, updates), w)
        info = {"oracle_calls": jnp.asarray(1, jnp.int32)}
        return base.Step(w, info), PabloState(state.count + 1, center, olo_state)

    return base.OracleAlgorithm(init, update)
