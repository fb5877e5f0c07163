r"""Stochastic contextual bandits with a finite realizable class, and the standard learners.

Setting (losses, minimised). At round ``t`` a context ``x_t ~ D`` arrives, the learner draws
``a_t ~ p_t(. | x_t)`` and observes ``l_t(a_t)`` in ``[0, 1]`` with ``E[l(a) | x] = f*(x, a)``
and ``f*`` in a finite class ``F``. The pseudo-regret uses the exact ``f*``:

.. math::
   \mathrm{Reg}(K) = \sum_{t \le K} \Big(\sum_a p_t(a|x_t) f^*(x_t, a) - \min_a f^*(x_t, a)\Big),

whose expectation is the paper's ``sum_k E_x[...]`` (the realised contexts give an unbiased,
lower-variance estimate than the realised losses).

Environment: :class:`FiniteClassCMAB` (an oracle pytree), ``f_theta(x, a) = sigmoid(theta_a^T x)``
for a table ``Theta`` of ``|F|`` parameter sets, ``x ~ N(0, I_d)``, Bernoulli losses; it exposes
``context(key)``, ``predictions(x)`` (every ``f`` in ``F`` at ``x``: the class the learner is
given), ``loss(x, a, key)`` (the sampled feedback) and the exact diagnostics ``mean_loss(x)`` and
``regret(x, probs)`` (never used by a learner; :func:`regret_trace` records them).

Learners: one skeleton (:func:`finite_class_learner`) keeps the least-squares sufficient
statistics of the whole class, ``SSE(f) = sum_s (f(x_s, a_s) - l_s)^2`` over all data and over the
current epoch, so the offline oracle ``argmin_f SSE(f)`` is an exact ``jnp.argmin`` (no data
buffer, everything jit/vmap-able). Doubling epochs: epoch ``m`` has ``N_m = N_0 2^m`` rounds; at
its end the skeleton fits ``f^_m`` on all data (``use_all_data``) or on epoch ``m`` only.
Baselines built on it:

* :func:`squarecb`: inverse-gap weighting (:func:`inverse_gap_weighting`) around the online
  least-squares fit (refit every round), ``gamma_t = c sqrt(|A| t / ln|F|)``;
* :func:`falcon`: inverse-gap weighting with the offline fit of the previous epoch,
  ``gamma_m = c sqrt(|A| N_{m-1} / ln|F|)``;
* :func:`epsilon_greedy`: ``eps_t = min(1, c t^{-1/3})`` around the online fit.

References:
  * D. Foster, A. Rakhlin. Beyond UCB: optimal and efficient contextual bandits with regression
    oracles. ICML 2020 (SquareCB).
  * D. Simchi-Levi, Y. Xu. Bypassing the monster: a faster and simpler optimal algorithm for
    contextual bandits under realizability. Math. Oper. Res. 2022 (FALCON).
  * O. Levy, Y. Mansour. Optimal Regret for Policy Optimization in Contextual Bandits. ICML 2026,
    arXiv 2602.13700 (the environment of its claims; the method is in ``opo.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_bool, check_float, check_static_int, compute_dtype

__all__ = [
    "logistic_cmab",
    "squarecb",
    "falcon",
    "epsilon_greedy",
    "inverse_gap_weighting",
    "CMABState",
    "FiniteClassCMAB",
    "epoch_end",
    "finite_class_learner",
    "regret_trace",
    "sample_action",
]


class FiniteClassCMAB(NamedTuple):
    """A logistic contextual bandit whose mean losses lie in a finite class (an oracle pytree).

    ``f_j(x, a) = sigmoid(<thetas[j, a], x>)``, contexts ``x ~ N(0, I_d)``, Bernoulli losses of
    mean ``f*(x, a) = f_{true_index}(x, a)``.

    Attributes:
      thetas: ``(|F|, |A|, d)`` parameter table of the class.
      true_index: int32 scalar, the index of ``f*`` in the class (realizability).
    """

    thetas: jax.Array
    true_index: jax.Array

    @property
    def num_functions(self) -> int:
        return self.thetas.shape[0]

    @property
    def num_actions(self) -> int:
        return self.thetas.shape[1]

    @property
    def dim(self) -> int:
        return self.thetas.shape[2]

    def context(self, key):
        """A context ``x ~ N(0, I_d)`` in the class's dtype."""
        return jax.random.normal(key, (self.dim,), self.thetas.dtype)

    def predictions(self, x):
        """``(|F|, |A|)``: every function of the class at ``x`` (what the learner is given)."""
        return jax.nn.sigmoid(jnp.einsum("fad,d->fa", self.thetas, x.astype(self.thetas.dtype)))

    def mean_loss(self, x):
        """``(|A|,)``: the exact ``f*(x, .)`` (diagnostics only)."""
        return jax.nn.sigmoid(self.thetas[self.true_index] @ x.astype(self.thetas.dtype))

    def loss(self, x, action, key):
        """The sampled loss ``l(a) ~ Bernoulli(f*(x, a))`` of ``action`` at ``x``."""
        mean = self.mean_loss(x)[action]
        return (jax.random.uniform(key, (), mean.dtype) < mean).astype(mean.dtype)

    def regret(self, x, probs):
        """``sum_a probs(a) f*(x, a) - min_a f*(x, a)`` (exact, in the class's dtype)."""
        f = self.mean_loss(x)
        return jnp.dot(probs.astype(f.dtype), f) - jnp.min(f)


def logistic_cmab(key, *, num_functions: int = 256, num_actions: int = 5, dim: int = 5,
                  scale: float = 1.0, spread: float = 1.0, dtype=jnp.float32
                  ) -> FiniteClassCMAB:
    """Draws a :class:`FiniteClassCMAB`: ``theta* ~ N(0, scale^2 I)`` and the other ``|F| - 1``
    functions ``theta* + spread * scale * N(0, I)``; ``f*`` sits at a random index.

    Args:
      key: PRNG key.
      num_functions: ``|F| >= 2`` (static).
      num_actions: ``|A| >= 2`` (static).
      dim: context dimension ``d >= 1`` (static).
      scale: ``> 0``, the scale of ``theta*``.
      spread: ``> 0``, distance of the alternatives from ``theta*`` relative to ``scale``
        (small: a hard regression problem, large: alternatives far apart).
      dtype: floating dtype of the table.

    Returns:
      The environment.

    Example:
      >>> import jax
      >>> env = logistic_cmab(jax.random.PRNGKey(0), num_functions=16)
      >>> env.predictions(env.context(jax.random.PRNGKey(1))).shape
      (16, 5)
    """
    num_functions = check_static_int("num_functions", num_functions, low=2)
    num_actions = check_static_int("num_actions", num_actions, low=2)
    dim = check_static_int("dim", dim, low=1)
    check_float("scale", scale, allow_schedule=False)
    check_float("spread", spread, allow_schedule=False)
    k1, k2, k3 = jax.random.split(key, 3)
    star = scale * jax.random.normal(k1, (num_actions, dim), dtype)
    others = star[None] + spread * scale * jax.random.normal(k2, (num_functions, num_actions, dim),
                                                       dtype)
    idx = jax.random.randint(k3, (), 0, num_functions)
    thetas = others.at[idx].set(star)
    return FiniteClassCMAB(thetas, idx.astype(jnp.int32))


def regret_trace(step: base.Step, state, oracle):
    """``trace_fn`` for ``base.run``: the exact instantaneous regret of the played distribution
    ``step.x`` at the round's context ``state.context``."""
    return oracle.regret(state.context, step.x)


# --------------------------------------------------------------------------- the skeleton


class CMABState(NamedTuple):
    """State shared by the finite-class learners.

    Attributes:
      probs: ``(|A|,)`` the distribution played at the last context (x0's dtype).
      context: ``(d,)`` the last context (compute dtype).
      count: int32, rounds played ``t``.
      epoch: int32, completed epochs ``m`` (capped at ``max_epochs``).
      sse_all: ``(|F|,)`` squared errors of every ``f`` in ``F`` on all data.
      sse_epoch: ``(|F|,)`` the same on the current epoch's data.
      fits: ``(max_epochs,)`` int32, ``fits[i]`` the index of ``f^_i`` fitted at the end of epoch
        ``i`` (valid for ``i < epoch``; 0 elsewhere).
    """

    probs: jax.Array
    context: jax.Array
    count: jax.Array
    epoch: jax.Array
    sse_all: jax.Array
    sse_epoch: jax.Array
    fits: jax.Array


def epoch_end(m, first_epoch: int):
    """Round count at which epoch ``m`` ends: ``N_0 (2^{m+1} - 1)`` (epoch ``m`` lasts
    ``N_0 2^m`` rounds)."""
    return first_epoch * (jnp.left_shift(jnp.int32(1), jnp.asarray(m, jnp.int32) + 1) - 1)


def sample_action(key, probs):
    """Draws ``a ~ probs`` by inverting the CDF (no ``log 0`` for zero-probability actions):
    ``a = #{k : cdf_k <= u cdf_K}`` with ``u ~ U[0, 1)``, so a zero-probability action is never
    drawn, even at ``u = 0``."""
    u = jax.random.uniform(key, (), probs.dtype)
    cdf = jnp.cumsum(probs)
    a = jnp.sum((cdf <= u * cdf[-1]).astype(jnp.int32))
    return jnp.minimum(a, probs.shape[0] - 1)


def inverse_gap_weighting(fhat, gamma):
    r"""``p(a) = 1 / (|A| + gamma (fhat(a) - fhat(a^)))`` for ``a != a^ = argmin fhat``, and
    ``p(a^) = 1 - sum_{a != a^} p(a)`` (Abe-Long / SquareCB; ``gamma = 0`` is uniform).

    Example:
      >>> import jax.numpy as jnp
      >>> inverse_gap_weighting(jnp.array([0.2, 0.7]), 2.0)
      Array([0.6666666 , 0.33333334], dtype=float32)
    """
    num = fhat.shape[-1]
    best = jnp.argmin(fhat)
    gap = fhat - fhat[best]
    p = 1.0 / (num + gamma * gap)
    p = p.at[best].set(0.0)
    return p.at[best].set(1.0 - jnp.sum(p))


def _check_sizes(first_epoch, max_epochs):
    first_epoch = check_static_int("first_epoch", first_epoch, low=1)
    max_epochs = check_static_int("max_epochs", max_epochs, low=1)
    if first_epoch * (2 ** (max_epochs + 1) - 1) >= 2 ** 31:
        raise ValueError(f"max_epochs must keep first_epoch * (2^(max_epochs+1) - 1) < 2^31 "
                         f"(int32 round counts), got max_epochs={max_epochs} with "
                         f"first_epoch={first_epoch}")
    return first_epoch, max_epochs


def finite_class_learner(policy_fn: Callable, *, num_functions: int, context_dim: int,
                         first_epoch: int = 64, max_epochs: int = 20,
                         use_all_data: bool = True) -> base.OracleAlgorithm:
    r"""The shared round of the finite-class learners, as an ``OracleAlgorithm``.

    Per round: ``x = oracle.context``, ``P = oracle.predictions(x)`` (``|F| x |A|``),
    ``p = policy_fn(state, P)``, ``a ~ p``, ``l = oracle.loss(x, a)``,
    ``SSE(f) += (P[f, a] - l)^2``; when round ``t = N_0(2^{m+1} - 1)`` closes epoch
    ``m < max_epochs``: ``fits[m] = argmin_f SSE(f)`` (all data, or epoch ``m`` only), ``m += 1``.
    After ``max_epochs`` epochs no more refits happen (the last policy plays on).

    Args:
      policy_fn: ``policy_fn(state, P) -> p``, a distribution over actions in the compute
        dtype; ``state`` is the :class:`CMABState` before the round.
      num_functions: ``|F|`` (static int ``>= 1``), the class size of the oracles it meets.
      context_dim: ``d`` (static int ``>= 1``).
      first_epoch: ``N_0`` (static int ``>= 1``).
      max_epochs: static int ``>= 1``, the number of refits stored.
      use_all_data: static bool, fit on all data (``True``) or on the last epoch only.

    Returns:
      ``OracleAlgorithm``: ``init(x0, key)`` with ``x0`` an ``(|A|,)`` array (its shape gives
      ``|A|``, its dtype the dtype of ``Step.x``; values unused); ``Step.x`` the played
      distribution, ``info`` with ``oracle_calls`` (1), ``action``, ``loss``, ``refit``.

    Example (greedy play around the online fit):
      >>> import jax.numpy as jnp
      >>> greedy = lambda state, P: jax.nn.one_hot(jnp.argmin(P[jnp.argmin(state.sse_all)]),
      ...                                          P.shape[1])
      >>> alg = finite_class_learner(greedy, num_functions=256, context_dim=5)

    Paper mapping: the offline oracle ``argmin_{f in F} sum (f(x, a) - l)^2`` of arXiv
    2602.13700 (and of FALCON) over all logged data or over the last epoch, computed exactly
    from running sums (ties go to the smallest index, as ``jnp.argmin``).

    Theory: exactness of the oracle is checked against a NumPy least-squares re-derivation
    from the logged data in ``tests/online/test_cmab_policy_optimization.py``.
    """
    num_functions = check_static_int("num_functions", num_functions, low=1)
    context_dim = check_static_int("context_dim", context_dim, low=1)
    first_epoch, max_epochs = _check_sizes(first_epoch, max_epochs)
    check_bool("use_all_data", use_all_data)

    def init(x0, key):
        del key
        cd = compute_dtype(x0.dtype)
        zero = jnp.zeros([], jnp.int32)
        sse = jnp.zeros((num_functions,), cd)
        return CMABState(jnp.zeros(x0.shape, x0.dtype), jnp.zeros((context_dim,), cd), zero,
                         zero, sse, sse, jnp.zeros((max_epochs,), jnp.int32))

    def update(state, oracle, key):
        cd = state.sse_all.dtype
        kx, ka, kl = jax.random.split(key, 3)
        x = oracle.context(kx).astype(cd)
        preds = oracle.predictions(x).astype(cd)
        p = policy_fn(state, preds).astype(cd)
        a = sample_action(ka, p)
        loss = jnp.asarray(oracle.loss(x, a, kl)).astype(cd)
        err = jnp.square(preds[:, a] - loss)
        sse_all, sse_epoch = state.sse_all + err, state.sse_epoch + err
        t = state.count + 1
        refit = (t == epoch_end(state.epoch, first_epoch)) & (state.epoch < max_epochs)
        fit = jnp.argmin(sse_all if use_all_data else sse_epoch).astype(jnp.int32)
        fits = jnp.where(refit, state.fits.at[state.epoch].set(fit, mode="drop"), state.fits)
        new = CMABState(p.astype(state.probs.dtype), x, t, state.epoch + refit.astype(jnp.int32),
                        sse_all, jnp.where(refit, jnp.zeros_like(sse_epoch), sse_epoch), fits)
        info = {"oracle_calls": jnp.asarray(1, jnp.int32), "action": a.astype(jnp.int32),
                "loss": loss, "refit": refit}
        return base.Step(new.probs, info), new

    return base.OracleAlgorithm(init, update)


def _log_size(preds):
    return jnp.log(jnp.asarray(max(preds.shape[0], 2), preds.dtype))


def squarecb(gamma_scale: float = 1.0, *, num_functions: int, context_dim: int
             ) -> base.OracleAlgorithm:
    r"""SquareCB with the online least-squares fit over the finite class.

    ``fhat_t = argmin_f SSE_t(f)`` (refit every round), ``gamma_t = c sqrt(|A| max(t, 1) /
    ln|F|)``, ``p_t = inverse_gap_weighting(fhat_t(x_t), gamma_t)``.

    Args:
      gamma_scale: ``c > 0`` (float).
      num_functions, context_dim: as in :func:`finite_class_learner` (static).

    Returns:
      An ``OracleAlgorithm`` with state :class:`CMABState`.

    Example:
      >>> alg = squarecb(1.0, num_functions=256, context_dim=5)

    Paper mapping: Foster & Rakhlin (2020) with ``gamma = sqrt(|A| T / Reg_sq)``, anytime form
    ``T -> t`` and ``Reg_sq ~ ln|F|``; the online oracle is follow-the-leader least squares over
    ``F`` (for a finite realizable class it has ``O(ln|F|)`` expected square-loss regret up to
    constants, like the aggregating algorithm).

    Theory: ``O(sqrt(K |A| ln|F|))`` regret; the baseline of claim 2 in
    ``experiments/online/cmab_policy_optimization.py``. References: Foster & Rakhlin, ICML 2020.
    """
    check_float("gamma_scale", gamma_scale, allow_schedule=False)

    def policy(state, preds):
        fhat = preds[jnp.argmin(state.sse_all)]
        t = jnp.maximum(state.count, 1).astype(preds.dtype)
        gamma = jnp.asarray(gamma_scale, preds.dtype) * jnp.sqrt(
            preds.shape[1] * t / _log_size(preds))
        return inverse_gap_weighting(fhat, gamma)

    return finite_class_learner(policy, num_functions=num_functions, context_dim=context_dim)


def falcon(gamma_scale: float = 1.0, *, num_functions: int, context_dim: int,
           first_epoch: int = 64, max_epochs: int = 20) -> base.OracleAlgorithm:
    r"""FALCON: epoch-wise inverse-gap weighting with the offline fit on the previous epoch.

    Epoch ``m >= 1`` plays ``inverse_gap_weighting(f^_{m-1}(x), gamma_m)`` with ``f^_{m-1}``
    fitted on epoch ``m - 1``'s data only and ``gamma_m = c sqrt(|A| N_{m-1} / ln|F|)``; epoch 0
    plays uniformly.

    Args:
      gamma_scale: ``c > 0`` (float).
      num_functions, context_dim, first_epoch, max_epochs: as in :func:`finite_class_learner`.

    Returns:
      An ``OracleAlgorithm`` with state :class:`CMABState`.

    Example:
      >>> alg = falcon(1.0, num_functions=256, context_dim=5)

    Paper mapping: Simchi-Levi & Xu (2022) with doubling epochs ``tau_m = N_0 (2^{m+1} - 1)``
    and ``gamma_m = c sqrt(|A| (tau_{m-1} - tau_{m-2}) / ln(|F|))`` (the ``delta`` and
    ``log T`` factors of the paper are folded into ``c``).

    Theory: ``O(sqrt(K |A| ln(|F| K)))`` regret with the offline oracle; the baseline of claim 2
    in ``experiments/online/cmab_policy_optimization.py``. References: Simchi-Levi & Xu, 2022.
    """
    check_float("gamma_scale", gamma_scale, allow_schedule=False)
    first_epoch, max_epochs = _check_sizes(first_epoch, max_epochs)

    def policy(state, preds):
        m = state.epoch
        fhat = preds[state.fits[jnp.maximum(m - 1, 0)]]
        last = (first_epoch * jnp.left_shift(jnp.int32(1), jnp.maximum(m - 1, 0))).astype(
            preds.dtype)
        gamma = jnp.asarray(gamma_scale, preds.dtype) * jnp.sqrt(
            preds.shape[1] * last / _log_size(preds))
        return inverse_gap_weighting(fhat, jnp.where(m > 0, gamma, 0.0))

    return finite_class_learner(policy, num_functions=num_functions, context_dim=context_dim,
                                first_epoch=first_epoch, max_epochs=max_epochs,
                                use_all_data=False)


def epsilon_greedy(eps_scale: float = 1.0, *, num_functions: int, context_dim: int
                   ) -> base.OracleAlgorithm:
    r"""Epsilon-greedy around the online least-squares fit, ``eps_t = min(1, c t^{-1/3})``.

    ``p_t = eps_t / |A| + (1 - eps_t) 1[a = argmin_a fhat_t(x_t, a)]`` with
    ``fhat_t = argmin_f SSE_t(f)`` and ``t`` the 1-based round.

    Args:
      eps_scale: ``c > 0`` (float).
      num_functions, context_dim: as in :func:`finite_class_learner` (static).

    Returns:
      An ``OracleAlgorithm`` with state :class:`CMABState`.

    Example:
      >>> alg = epsilon_greedy(1.0, num_functions=256, context_dim=5)

    Paper mapping: the spec's baseline ``eps_k = k^{-1/3}`` (``c = 1``).

    Theory: ``O(K^{2/3})`` regret (exploration ``sum_t eps_t`` against the estimation error);
    the ``eps-greedy`` baseline of claim 2 in ``experiments/online/cmab_policy_optimization.py``.
    """
    check_float("eps_scale", eps_scale, allow_schedule=False)

    def policy(state, preds):
        fhat = preds[jnp.argmin(state.sse_all)]
        t = (state.count + 1).astype(preds.dtype)
        eps = jnp.minimum(1.0, jnp.asarray(eps_scale, preds.dtype) * t ** (-1.0 / 3.0))
        greedy = jax.nn.one_hot(jnp.argmin(fhat), preds.shape[1], dtype=preds.dtype)
        return eps / preds.shape[1] + (1.0 - eps) * greedy

    return finite_class_learner(policy, num_functions=num_functions, context_dim=context_dim)

