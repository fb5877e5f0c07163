r"""Observation spectral filtering (OSF) for one-step prediction of dynamical systems.

The learner sees observations :math:`y_0, y_1, \dots \in \mathbb{R}^d` of an unknown system and,
before :math:`y_t` is revealed, predicts

.. math::
   \hat y_t = \underbrace{\textstyle\sum_{i=1}^{h} P_i\, y_{t-i}}_{\text{autoregressive block}}
   + \sum_{j=1}^{k} M_j\, X_{t,j},\qquad
   X_{t,j} = \sigma_j^{1/4} \sum_{s=1}^{L} \phi_j(s)\, y_{t-s},

where :math:`(\sigma_j, \phi_j)` are the top-``k`` eigenpairs of the Hankel matrix
:math:`Z_{ab} = 2/((a+b)^3 - (a+b))` (:func:`spectral_filters`). After :math:`y_t` arrives the
parameters :math:`(P, M)` take one step of an optax optimizer (AdaGrad by default) on
:math:`\ell_t = \tfrac12\|\hat y_t - y_t\|^2`; observations before time 0 are zero.

Why both blocks: the Hankel filters span, to accuracy :math:`e^{-\Omega(k/\log L)}`, the impulse
responses :math:`(\alpha^{s-1})_{s \le L}` of real modes :math:`\alpha \in [0, 1]` (so ``k``
does not grow with the hidden dimension or with :math:`1 - \alpha \to 0`), but not those of
complex marginal modes :math:`e^{\pm i\theta}`; a short autoregression over past observations
cancels finitely many such modes exactly (Cayley-Hamilton), and, acting on past *observations*
rather than inputs, is the observer/noise-correction form of the predictor.

Baselines with the same interface (every one an ``OracleAlgorithm``):
:func:`spectral_filtering` (the original predictor: :math:`y_{t-1}` plus spectral features, no
AR block), :func:`online_ar` (AR(h) by the same optimizer), :func:`rls_ar` (AR(h) by recursive
least squares), :func:`persistence` (:math:`\hat y_t = y_{t-1}`) and :func:`kalman_predictor`
(the true-model Kalman one-step predictor, reading the system from the oracle).

Protocol: ``init(y_like, key)`` takes a template observation (shape ``(d,)``, its dtype is the
prediction's dtype); ``update(state, oracle, key)`` predicts :math:`\hat y_t` for the round
``t = state.count`` from the buffer of past observations, THEN reads ``oracle.observe(t)`` and
learns; ``Step.x`` is the prediction, ``Step.info`` has ``"oracle_calls"`` (1) and
``"sq_error"`` :math:`\|\hat y_t - y_t\|^2`. The oracle is a
:class:`~jaxopt_icml.online.sf_systems.Trajectory`.

References:
  * E. Dogariu, A. Brahmbhatt, E. Hazan. Universal Learning of Nonlinear Dynamics. ICML 2026
    submission, arXiv 2508.11990 (OSF).
  * E. Hazan, K. Singh, C. Zhang. Learning linear dynamical systems via spectral filtering.
    NeurIPS 2017.
  * N. Agarwal, D. Suo, X. Chen, E. Hazan. Spectral state space models. 2023 (Hankel-L).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_choice, check_float, check_static_int, compute_dtype

__all__ = [
    "osf",
    "spectral_filtering",
    "online_ar",
    "rls_ar",
    "persistence",
    "kalman_predictor",
    "spectral_filters",
    "hankel_matrix",
    "hankel_factor",
    "SpectralState",
    "RLSState",
    "KalmanState",
    "PersistenceState",
]

VARIANTS = ("hankel", "hankel_l")


def hankel_matrix(context: int, variant: str = "hankel") -> np.ndarray:
    r"""The ``L x L`` Hankel matrix of spectral filtering, in float64 NumPy (1-based indices).

    ``"hankel"``: :math:`Z_{ab} = 2/((a+b)^3 - (a+b)) = \int_0^1 \mu_a(\alpha)\mu_b(\alpha)
    d\alpha` with :math:`\mu(\alpha) = (1-\alpha)(\alpha^{s-1})_{s \le L}` (Hazan et al. 2017).
    ``"hankel_l"``: :math:`Z_{ab} = ((-1)^{a+b} + 1)\, 8/((a+b+3)(a+b-1)(a+b+1))`, which also
    covers negative real modes (Agarwal et al., spectral state space models).
    """
    context = check_static_int("context", context)
    check_choice("variant", variant, VARIANTS)
    s = np.arange(1, context + 1, dtype=np.float64)
    ab = s[:, None] + s[None, :]
    if variant == "hankel":
        return 2.0 / (ab ** 3 - ab)
    return ((-1.0) ** ab + 1.0) * 8.0 / ((ab + 3.0) * (ab - 1.0) * (ab + 1.0))


def hankel_factor(context: int, variant: str = "hankel") -> np.ndarray:
    r"""A factor ``V`` (``L x (L + 2)``) with ``V V^T = Z`` exactly, from Gauss-Legendre
    quadrature of the Gram integral behind :func:`hankel_matrix`.

    ``Z = int mu(alpha) mu(alpha)^T d alpha`` with ``mu(alpha) = g(alpha) (alpha^{s-1})_s``,
    ``g = 1 - alpha`` on ``[0, 1]`` (``"hankel"``) or ``g = 1 - alpha^2`` on ``[-1, 1]``
    (``"hankel_l"``): the integrands are polynomials of degree ``<= 2L + 2``, which
    ``L + 2`` Gauss-Legendre nodes integrate exactly, so ``V_{sq} = sqrt(w_q) mu_s(alpha_q)``.
    """
    context = check_static_int("context", context)
    check_choice("variant", variant, VARIANTS)
    x, w = np.polynomial.legendre.leggauss(context + 2)
    if variant == "hankel":
        alpha, w = 0.5 * (x + 1.0), 0.5 * w
        g = 1.0 - alpha
    else:
        alpha, g = x, 1.0 - x * x
    powers = alpha[None, :] ** np.arange(context, dtype=np.float64)[:, None]
    return powers * (g * np.sqrt(w))[None, :]


@functools.lru_cache(maxsize=32)
def _filters(context: int, num_filters: int, variant: str):
    # eigenpairs of Z = V V^T from the SVD of V: singular values are accurate to eps * ||V||,
    # so the eigenvalues sigma = s^2 are resolved down to ~eps^2 ||Z|| (eigh of Z stops at
    # ~eps ||Z||, where the geometric decay makes the tail filters round-off)
    u, sv, _ = np.linalg.svd(hankel_factor(context, variant), full_matrices=False)
    w, v = sv[:num_filters] ** 2, u[:, :num_filters].copy()
    # eigenvector signs are arbitrary: fix them (largest-magnitude entry positive)
    sign = np.sign(v[np.argmax(np.abs(v), axis=0), np.arange(num_filters)])
    v = v * sign[None, :]
    w.setflags(write=False)
    v.setflags(write=False)
    return w, v


def spectral_filters(context: int, num_filters: int, variant: str = "hankel"):
    r"""The top ``num_filters`` eigenpairs of :func:`hankel_matrix` (float64, cached).

    :math:`Z` is extremely ill-conditioned (its eigenvalues decay geometrically), so the
    eigenpairs are computed once in float64 NumPy as the squared singular values and left
    singular vectors of the exact quadrature factor :func:`hankel_factor` (accurate far below
    the ``1e-16 ||Z||`` floor of ``eigh(Z)``); callers cast the result.

    Args:
      context: ``L >= 1``, the filter length (static).
      num_filters: ``1 <= k <= L`` (static).
      variant: ``"hankel"`` (default) or ``"hankel_l"``.

    Returns:
      ``(sigma, phi)``: eigenvalues in decreasing order, shape ``(k,)``, and the orthonormal
      filters as columns, shape ``(L, k)`` (read-only NumPy arrays).

    Example:
      >>> sigma, phi = spectral_filters(64, 8)
      >>> phi.shape, bool(sigma[0] > sigma[1] > 0)
      ((64, 8), True)
    """
    context = check_static_int("context", context)
    num_filters = check_static_int("num_filters", num_filters)
    check_choice("variant", variant, VARIANTS)
    if num_filters > context:
        raise ValueError(f"num_filters must be <= context={context}, got {num_filters}")
    return _filters(context, num_filters, variant)


class SpectralState(NamedTuple):
    """State of :func:`osf`, :func:`spectral_filtering` and :func:`online_ar`.

    Attributes:
      params: ``{"P": (h, d, d), "M": (k, d, d)}`` (only the blocks in use), compute dtype.
      opt_state: the optimizer's state.
      buffer: the last ``max(L, h, 1)`` observations, newest first, shape ``(., d)``, in the
        prediction's dtype (zeros before time 0).
      count: int32 round ``t``.
    """

    params: Any
    opt_state: Any
    buffer: jax.Array
    count: jax.Array


class RLSState(NamedTuple):
    """State of the recursive-least-squares fit (``optimizer="rls"``, :func:`rls_ar`).

    Attributes:
      W: weights on the stacked features (AR lags first, then spectral features), shape
        ``(d, (h + k) d)``.
      G: inverse regularised Gram matrix, shape ``((h + k) d, (h + k) d)``.
      buffer, count: as in :class:`SpectralState`.
    """

    W: jax.Array
    G: jax.Array
    buffer: jax.Array
    count: jax.Array


def _push(buffer, y):
    return jnp.concatenate([y[None].astype(buffer.dtype), buffer[:-1]], 0)


def _info(pred, y):
    err = pred - y
    return {"oracle_calls": jnp.ones([], jnp.int32), "sq_error": jnp.sum(err * err)}


def _check_optimizer(optimizer, ridge, forgetting):
    if optimizer is None:
        return optax.adagrad(0.05)
    if isinstance(optimizer, str):
        check_choice("optimizer", optimizer, ("rls",))
        check_float("ridge", ridge, allow_schedule=False)
        check_float("forgetting", forgetting, high=1.0, allow_schedule=False)
        return optimizer
    if not isinstance(optimizer, optax.GradientTransformation):
        raise ValueError(f"optimizer must be an optax.GradientTransformation or 'rls', "
                         f"got {optimizer!r}")
    return optimizer


def _linear_learner(*, num_filters: int, context: int, ar_order: int, anchor: bool,
                    optimizer, variant: str, ridge: float = 1.0,
                    forgetting: float = 1.0) -> base.OracleAlgorithm:
    """The shared predictor ``anchor * y_{t-1} + AR(h) + spectral(k)``, fitted online by an
    optax optimizer (params ``{"P", "M"}``) or by recursive least squares (``"rls"``: one
    matrix ``W`` on the stacked features, the AR block first)."""
    optimizer = _check_optimizer(optimizer, ridge, forgetting)
    if num_filters:
        sigma, phi = spectral_filters(context, num_filters, variant)
        # sigma^{1/4} folded into the filters (float64 before the cast)
        scaled = np.ascontiguousarray((phi * sigma[None, :] ** 0.25).T)  # (k, L)
    length = max(context if num_filters else 0, ar_order, 1)

    def features(buffer):
        parts = [buffer[:ar_order]] if ar_order else []
        if num_filters:
            parts.append(jnp.asarray(scaled, buffer.dtype) @ buffer[:context])  # (k, d)
        return jnp.concatenate(parts, 0)  # (h + k, d)

    def start(buffer):
        return buffer[0] if anchor else jnp.zeros(buffer.shape[1:], buffer.dtype)

    def predict(params, buffer):
        feats = features(buffer)
        out = start(buffer)
        if ar_order:
            out = out + jnp.einsum("hij,hj->i", params["P"], feats[:ar_order])
        if num_filters:
            out = out + jnp.einsum("kij,kj->i", params["M"], feats[ar_order:])
        return out

    def init(y_like, key):
        del key
        y_like = jnp.asarray(y_like)
        d, cd = y_like.shape[-1], compute_dtype(y_like.dtype)
        buffer = jnp.zeros((length, d), y_like.dtype)
        count = jnp.zeros([], jnp.int32)
        eye = jnp.eye(d, dtype=cd)
        if optimizer == "rls":
            nf = (ar_order + num_filters) * d
            W = jnp.zeros((d, nf), cd)
            if ar_order:
                W = W.at[:, :d].set(eye)  # P_1 = I
            G = jnp.eye(nf, dtype=cd) / jnp.asarray(ridge, cd)
            return RLSState(W, G, buffer, count)
        params = {}
        if ar_order:
            # start at the persistence predictor P_1 = I (plain SF hard-codes this term)
            params["P"] = jnp.zeros((ar_order, d, d), cd).at[0].set(eye)
        if num_filters:
            params["M"] = jnp.zeros((num_filters, d, d), cd)
        return SpectralState(params, optimizer.init(params), buffer, count)

    def update(state, oracle, key):
        del key
        cd = compute_dtype(state.buffer.dtype)
        buf = state.buffer.astype(cd)
        if optimizer == "rls":
            z = features(buf).reshape(-1)
            pred = start(buf) + state.W @ z  # committed before y_t is read
            y = jnp.asarray(oracle.observe(state.count)).astype(cd)
            W, G = _rls_step(state.W, state.G, z, y - pred, jnp.asarray(forgetting, cd))
            new = RLSState(W, G, _push(state.buffer, y), state.count + 1)
        else:
            pred = predict(state.params, buf)  # committed before y_t is read
            y = jnp.asarray(oracle.observe(state.count)).astype(cd)
            grads = jax.grad(lambda p: 0.5 * jnp.sum((predict(p, buf) - y) ** 2))(state.params)
            updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
            params = jax.tree.map(lambda p, u: (p + u).astype(p.dtype), state.params, updates)
            new = SpectralState(params, opt_state, _push(state.buffer, y), state.count + 1)
        return base.Step(pred.astype(state.buffer.dtype), _info(pred, y)), new

    return base.OracleAlgorithm(init, update)


def _rls_step(W, G, z, err, lam):
    """One recursive-least-squares step (Sherman-Morrison on the inverse Gram ``G``)."""
    u = G @ z
    c = lam + z @ u
    g = u / c
    G = (G - jnp.outer(g, u)) / lam
    return W + jnp.outer(err, g), G


def _check_common(num_filters, context, ar_order, variant, low_filters=1, low_ar=0):
    k = check_static_int("num_filters", num_filters, low=low_filters)
    L = check_static_int("context", context)
    h = check_static_int("ar_order", ar_order, low=low_ar)
    check_choice("variant", variant, VARIANTS)
    if k > L:
        raise ValueError(f"num_filters must be <= context={L}, got {k}")
    return k, L, h


def osf(num_filters: int = 24, context: int = 256, ar_order: int = 8, *, optimizer=None,
        variant: str = "hankel", ridge: float = 1.0,
        forgetting: float = 1.0) -> base.OracleAlgorithm:
    r"""Observation spectral filtering: AR(h) over past observations plus ``k`` spectral features.

    .. math::
       \hat y_t = \sum_{i=1}^{h} P_i y_{t-i} + \sum_{j=1}^{k} M_j \sigma_j^{1/4}
       \sum_{s=1}^{L} \phi_j(s) y_{t-s},\qquad
       (P, M) \leftarrow \mathrm{opt}\big(\nabla \tfrac12\|\hat y_t - y_t\|^2\big).

    Args:
      num_filters: ``k`` in ``[0, L]`` (static); 0 gives the pure online AR(h).
      context: ``L >= 1``, length of the spectral filters (static).
      ar_order: ``h >= 0`` (static); 0 removes the autoregressive block.
      optimizer: an ``optax.GradientTransformation`` on the parameter dict (default
        ``optax.adagrad(0.05)``: AdaGrad adapts to the scale of the observations, which matters
        because marginally stable signals never decay), or ``"rls"``: recursive least squares
        on the stacked features (the follow-the-leader / online Newton limit for the squared
        loss; state :class:`RLSState`).
      ridge: :math:`\rho > 0`, the RLS ridge (``G_0 = I/\rho``); ``"rls"`` only. The default
        1.0 keeps float32 RLS stable on smooth signals, whose lagged features are nearly
        collinear (1e-2 blew up on some Lorenz seeds).
      forgetting: :math:`\lambda \in (0, 1]`, the RLS forgetting factor; ``"rls"`` only.
      variant: ``"hankel"`` (eigenvalues in ``[0, 1]``) or ``"hankel_l"`` (``[-1, 1]``).

    Returns:
      An ``OracleAlgorithm`` with state :class:`SpectralState` (:class:`RLSState` for
      ``"rls"``); the AR block starts at :math:`P_1 = I` (the persistence predictor); ``Step.x`` is
      :math:`\hat y_t` in the template's dtype; ``info``: ``oracle_calls``, ``sq_error``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxopt_icml import base
      >>> from jaxopt_icml.online import sf_systems
      >>> lds = sf_systems.marginal_lds(jax.random.PRNGKey(0), hidden_dim=12)
      >>> traj = lds.simulate(jax.random.PRNGKey(1), 500)
      >>> _, info = base.run(osf(8, 64, 4), jnp.zeros(4), traj, jax.random.PRNGKey(2), 500)
      >>> info["sq_error"].shape
      (500,)

    Paper mapping: the paper's OSF predictor (arXiv 2508.11990) with the AR block ``P`` over
    past observations (``ar_order`` = its number of autoregressive terms) and spectral features
    of past observations (``num_filters``, ``context``); the :math:`\sigma^{1/4}` scaling is the
    one of Hazan et al. (2017). The full paper was not available: the exact filter set, the
    projection onto a bounded domain and its step sizes are replaced by an unconstrained optax
    optimizer (AdaGrad); the Hankel-L variant is an option. Observations before time 0 are 0.

    Theory: vanishing average prediction error on asymmetric marginally stable and noisy LDSs
    with a number of parameters independent of the hidden dimension, and on nonexpansive
    nonlinear systems with finitely many marginal modes (claims of
    ``experiments/online/spectral_filtering.py``: noiseless error and its growth exponent, the ratio
    to plain spectral filtering, independence of the hidden dimension, Lorenz). The math
    (updates, filters) is checked in ``tests/online/test_spectral_filtering.py`` against NumPy,
    exact rational arithmetic, batch ridge regression and exact Gaussian conditioning.
    Measured results: the docstring of ``experiments/online/spectral_filtering.py``.
    """
    k, L, h = _check_common(num_filters, context, ar_order, variant, low_filters=0)
    if k == 0 and h == 0:
        raise ValueError("ar_order must be >= 1 when num_filters is 0 (nothing to learn)")
    return _linear_learner(num_filters=k, context=L, ar_order=h, anchor=False,
                           optimizer=optimizer, variant=variant, ridge=ridge,
                           forgetting=forgetting)


def spectral_filtering(num_filters: int = 24, context: int = 256, *, optimizer=None,
                       variant: str = "hankel", ridge: float = 1.0,
                       forgetting: float = 1.0) -> base.OracleAlgorithm:
    r"""The original spectral-filtering predictor on past observations (no AR block):
    :math:`\hat y_t = y_{t-1} + \sum_j M_j X_{t,j}`.

    Args: as in :func:`osf` (``num_filters >= 1``).

    Returns:
      An ``OracleAlgorithm`` (state :class:`SpectralState`, no ``"P"`` block).

    Example:
      >>> alg = spectral_filtering(16, 128)

    Paper mapping: Hazan, Singh, Zhang (2017) with the past observations as the filtered signal
    (an autonomous system has no inputs) and their :math:`y_{t-1}` term; their terms in
    :math:`u_t, u_{t-1}` are the ``s = 1`` filter tap here. Real Hankel filters cannot represent
    complex marginal modes, which is what OSF's AR block adds.
    """
    k, L, _ = _check_common(num_filters, context, 0, variant)
    return _linear_learner(num_filters=k, context=L, ar_order=0, anchor=True,
                           optimizer=optimizer, variant=variant, ridge=ridge,
                           forgetting=forgetting)


def online_ar(ar_order: int = 8, *, optimizer=None, ridge: float = 1.0,
              forgetting: float = 1.0) -> base.OracleAlgorithm:
    r"""AR(h) over past observations by online gradient steps: :math:`\hat y_t = \sum_i P_i
    y_{t-i}` (:func:`osf` without spectral features), from :math:`P_1 = I`.

    Args:
      ar_order: ``h >= 1`` (static). optimizer, ridge, forgetting: as in :func:`osf`.

    Returns:
      An ``OracleAlgorithm`` (state :class:`SpectralState`, or :class:`RLSState` for
      ``"rls"``).

    Example:
      >>> alg = online_ar(8)

    Paper mapping: the spec's "online AR(h) by gradient descent" baseline.
    """
    h = check_static_int("ar_order", ar_order)
    return _linear_learner(num_filters=0, context=1, ar_order=h, anchor=False,
                           optimizer=optimizer, variant="hankel", ridge=ridge,
                           forgetting=forgetting)


def rls_ar(ar_order: int = 8, *, ridge: float = 1.0, forgetting: float = 1.0
           ) -> base.OracleAlgorithm:
    r"""AR(h) by recursive least squares (ridge-regularised, optional forgetting).

    With :math:`z_t = (y_{t-1}, \dots, y_{t-h})`: :math:`\hat y_t = W z_t`;
    :math:`g = G z_t / (\lambda + z_t^\top G z_t)`, :math:`W \leftarrow W + (y_t - \hat y_t)
    g^\top`, :math:`G \leftarrow (G - g z_t^\top G)/\lambda` from :math:`G_0 = I/\rho` and
    :math:`W_0 = (I, 0, \dots, 0)` (persistence). With :math:`\lambda = 1` this is exactly the
    ridge solution :math:`W_t = (\rho W_0 + \sum_s y_s z_s^\top)(\rho I + \sum_s z_s
    z_s^\top)^{-1}` at every round (tested against the batch solve).

    Args:
      ar_order: ``h >= 1`` (static).
      ridge: :math:`\rho > 0`.
      forgetting: :math:`\lambda \in (0, 1]`.

    Returns:
      An ``OracleAlgorithm`` with state :class:`RLSState`.

    Example:
      >>> alg = rls_ar(4, ridge=0.1)

    Paper mapping: the spec's least-squares baseline (online ridge / ARX without inputs).
    """
    h = check_static_int("ar_order", ar_order)
    return _linear_learner(num_filters=0, context=1, ar_order=h, anchor=False, optimizer="rls",
                           variant="hankel", ridge=ridge, forgetting=forgetting)


class PersistenceState(NamedTuple):
    """State of :func:`persistence`: the ``last`` observation and the int32 round ``count``."""

    last: jax.Array
    count: jax.Array


def persistence() -> base.OracleAlgorithm:
    r"""The persistence predictor :math:`\hat y_t = y_{t-1}` (``y_{-1} = 0``).

    Returns:
      An ``OracleAlgorithm`` with state :class:`PersistenceState`.

    Example:
      >>> alg = persistence()
    """

    def init(y_like, key):
        del key
        y_like = jnp.asarray(y_like)
        return PersistenceState(jnp.zeros(y_like.shape, y_like.dtype), jnp.zeros([], jnp.int32))

    def update(state, oracle, key):
        del key
        last, t = state
        cd = compute_dtype(last.dtype)
        y = jnp.asarray(oracle.observe(t)).astype(cd)
        pred = last.astype(cd)
        return base.Step(last, _info(pred, y)), PersistenceState(y.astype(last.dtype), t + 1)

    return base.OracleAlgorithm(init, update)


class KalmanState(NamedTuple):
    """State of :func:`kalman_predictor`: ``mean`` and ``cov``, the predicted mean and
    covariance of :math:`x_t` given :math:`y_{<t}` (compute dtype); the int32 round ``count``;
    ``like``, a zero of the prediction's shape and dtype."""

    mean: jax.Array
    cov: jax.Array
    count: jax.Array
    like: jax.Array


def kalman_predictor(hidden_dim: int) -> base.OracleAlgorithm:
    r"""The true-model Kalman one-step predictor (a reference floor, not a learner).

    Reads ``oracle.system`` (a :class:`~jaxopt_icml.online.sf_systems.LinearDynamicalSystem`)
    at every round, so one algorithm serves a batch of systems under ``vmap``:
    :math:`\hat y_t = C m_t`, :math:`K = S C^\top (C S C^\top + \sigma_v^2 I)^{-1}`,
    :math:`m_{t+1} = A(m_t + K(y_t - \hat y_t))`, :math:`S_{t+1} = A[(I - KC) S (I - KC)^\top +
    \sigma_v^2 K K^\top] A^\top + \sigma_w^2 I` (Joseph form), from :math:`m_0 = 0`,
    :math:`S_0 = s_0^2 I` (set at round 0 from the oracle). It is the minimum-mean-square
    predictor of :math:`y_t` from :math:`y_{<t}` for that Gaussian model.

    Args:
      hidden_dim: ``n >= 1``, the system's state dimension (static: it fixes the state shape).

    Returns:
      An ``OracleAlgorithm`` with state :class:`KalmanState`.

    Example:
      >>> alg = kalman_predictor(32)
    """
    n = check_static_int("hidden_dim", hidden_dim)

    def init(y_like, key):
        del key
        y_like = jnp.asarray(y_like)
        cd = compute_dtype(y_like.dtype)
        return KalmanState(jnp.zeros((n,), cd), jnp.zeros((n, n), cd), jnp.zeros([], jnp.int32),
                           jnp.zeros(y_like.shape, y_like.dtype))

    def update(state, oracle, key):
        del key
        sysm = oracle.system
        cd = state.mean.dtype
        A, C = sysm.A.astype(cd), sysm.C.astype(cd)
        eye = jnp.eye(n, dtype=cd)
        s0 = jnp.asarray(sysm.init_scale).astype(cd)
        m, S = state.mean, jnp.where(state.count == 0, s0 * s0 * eye, state.cov)
        rv = jnp.asarray(sysm.obs_noise).astype(cd) ** 2
        rw = jnp.asarray(sysm.process_noise).astype(cd) ** 2
        pred = C @ m
        y = jnp.asarray(oracle.observe(state.count)).astype(cd)
        SC = S @ C.T
        inn = C @ SC + rv * jnp.eye(C.shape[0], dtype=cd)
        # round-off guard for a (nearly) noiseless model, where C S C^T becomes singular
        jitter = jnp.finfo(cd).eps * (1.0 + jnp.trace(inn))
        inn = inn + jitter * jnp.eye(C.shape[0], dtype=cd)
        K = jnp.linalg.solve(inn, SC.T).T
        IKC = eye - K @ C
        post = IKC @ S @ IKC.T + rv * K @ K.T
        m_next = A @ (m + K @ (y - pred))
        S_next = A @ post @ A.T + rw * eye
        S_next = 0.5 * (S_next + S_next.T)
        new = KalmanState(m_next, S_next, state.count + 1, state.like)
        return base.Step(pred.astype(state.like.dtype), _info(pred, y)), new

    return base.OracleAlgorithm(init, update)
