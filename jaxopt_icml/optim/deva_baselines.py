r"""Baselines of DeVA: SOAP (Adam in the Shampoo eigenbasis) and Signum (momentum signSGD).

:func:`soap` (Vyas et al., 2024; optax 0.2.8 has no ``contrib.soap``) shares the eigenbasis
bookkeeping of DeVA's Schatten form (:mod:`jaxopt_icml.optim.eigenbasis`) and differs only in the
direction computed in the rotated coordinates: Adam's :math:`m / (\sqrt v + \epsilon)` instead of
DeVA's variance-scaled matrix sign. :func:`signum` is the non-adaptive :math:`\ell_\infty`
baseline: :func:`~jaxopt_icml.optim.deva.deva_linf` with the variance factor replaced by 1.

Example:
  >>> import jax, jax.numpy as jnp, optax
  >>> from jaxopt_icml.optim.deva_baselines import signum
  >>> tx = signum(0.1); w = jnp.array([1.0, -2.0]); s = tx.init(w)
  >>> u, s = tx.update(jnp.array([0.5, -0.5]), s, w)
  >>> u.tolist()
  [-0.10000000149011612, 0.10000000149011612]

References:
  Nikhil Vyas, Depen Morwani, Rosie Zhao, Itai Shapira, David Brandfonbrener, Lucas Janson,
  Sham Kakade, "SOAP: Improving and Stabilizing Shampoo using Adam", arXiv:2409.11321.
  Jeremy Bernstein, Yu-Xiang Wang, Kamyar Azizzadenesheli, Anima Anandkumar, "signSGD:
  Compressed Optimisation for Non-Convex Problems", ICML 2018, arXiv:1802.04434.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import (
    check_float,
    check_float_dtype,
    check_static_ints,
    check_unit_interval,
    resolve,
)
from jaxopt_icml.optim.eigenbasis import (
    _MAX_PRECOND_DIM,
    _PRECONDITION_FREQUENCY,
    _check_eigenbasis_static,
    _ct,
    _eigenbasis_transform,
    _lr_chain,
)
from jaxopt_icml.trees import check_same_shapes, with_shape_check

__all__ = [
    "soap",
    "scale_by_soap",
    "signum",
]


def scale_by_soap(
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    *,
    precondition_frequency: int | None = None,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    max_precond_dim: int | None = None,
    shampoo_beta: float | None = None,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    """Direction of :func:`soap` (2-D leaves only); arguments (and their use under
    ``optax.inject_hyperparams``) as there."""
    check_unit_interval("b1", b1)
    check_unit_interval("b2", b2)
    check_float("eps", eps, allow_schedule=False)
    freq, dim = check_static_ints(
        "scale_by_soap",
        precondition_frequency=(precondition_frequency, _PRECONDITION_FREQUENCY),
        max_precond_dim=(max_precond_dim, _MAX_PRECOND_DIM))
    freq, dim, mu_dtype = _check_eigenbasis_static(
        freq, use_eigenbasis, dim, bias_correction, shampoo_beta, mu_dtype)

    def direction(g, m, v, t, hp):
        del t
        m = hp["b1"] * m + (1 - hp["b1"]) * g
        v = hp["b2"] * v + (1 - hp["b2"]) * g * g
        return m / (jnp.sqrt(v) + hp["eps"]), m, v

    return _eigenbasis_transform(
        "scale_by_soap", direction, dict(b1=b1, b2=b2, eps=eps), shampoo_beta,
        precondition_frequency=freq,
        use_eigenbasis=use_eigenbasis, max_precond_dim=dim, bias_correction=bias_correction,
        mu_dtype=mu_dtype)


def soap(
    learning_rate: optax.ScalarOrSchedule = 3e-3,
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    weight_decay: float = 0.01,
    *,
    precondition_frequency: int | None = None,
    use_eigenbasis: bool = True,
    max_precond_dim: int | None = None,
    shampoo_beta: float | None = None,
    adam_learning_rate: optax.ScalarOrSchedule | None = None,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""SOAP (Vyas et al., 2024): Adam in the eigenbasis of Shampoo's preconditioner; baseline.

    For 2-D leaves, :math:`\tilde G = Q_L^\top G Q_R`, :math:`m = \mathrm{EMA}_{\beta_1}(\tilde
    G)`, :math:`v = \mathrm{EMA}_{\beta_2}(\tilde G^2)`, step :math:`\eta
    \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t} Q_L \frac{m}{\sqrt v + \epsilon} Q_R^\top` plus
    decoupled weight decay, with the same eigenbasis bookkeeping as :func:`deva_schatten`
    (first update initialises the bases; refresh every ``precondition_frequency`` updates).
    Other leaves use ``optax.adamw`` with ``(b1, b2, eps, weight_decay)`` (the SOAP code
    leaves 1-D parameters unrotated by default, i.e. Adam). Arguments have the ranges of
    :func:`deva_schatten` (``precondition_frequency`` and ``max_precond_dim`` default to
    ``None``: 10 and 10000); ``adam_learning_rate`` defaults to ``learning_rate``. ``update``
    raises a ``ValueError`` naming the leaf when the updates and the params (or the state)
    disagree in tree structure or leaf shape.

    Under ``optax.inject_hyperparams`` the floats are injectable; the static ints
    ``precondition_frequency`` and ``max_precond_dim`` need nothing when left at ``None``, and
    each one passed goes in ``static_args``, e.g. ``optax.inject_hyperparams(soap,
    static_args=("precondition_frequency", "max_precond_dim"))(1e-2,
    precondition_frequency=5, max_precond_dim=512)`` (a missing one raises a ``ValueError``
    under ``jit`` naming all of them and the ``static_args`` to pass). Give ``mu_dtype`` as
    ``jnp.dtype(...)`` or in ``static_args`` (a scalar type is callable and would be taken for
    a schedule).

    References:
      Nikhil Vyas, Depen Morwani, Rosie Zhao, Itai Shapira, David Brandfonbrener, Lucas Janson,
      Sham Kakade, "SOAP: Improving and Stabilizing Shampoo using Adam", arXiv:2409.11321.
    """
    precondition_frequency, max_precond_dim = check_static_ints(
        "soap", precondition_frequency=(precondition_frequency, _PRECONDITION_FREQUENCY),
        max_precond_dim=(max_precond_dim, _MAX_PRECOND_DIM))
    check_float("learning_rate", learning_rate)
    check_float("adam_learning_rate", adam_learning_rate, allow_none=True)
    check_float("weight_decay", weight_decay, strict=False, allow_schedule=False)
    direction = scale_by_soap(b1, b2, eps, precondition_frequency=precondition_frequency,
                              use_eigenbasis=use_eigenbasis, max_precond_dim=max_precond_dim,
                              shampoo_beta=shampoo_beta, mu_dtype=mu_dtype)
    lr_adam = learning_rate if adam_learning_rate is None else adam_learning_rate
    transforms = {
        "soap": _lr_chain(direction, weight_decay, learning_rate),
        "adam": optax.adamw(lr_adam, b1, b2, eps, weight_decay=weight_decay, mu_dtype=mu_dtype),
    }
    return with_shape_check(optax.partition(
        transforms, lambda params: jax.tree.map(
            lambda p: "soap" if jnp.ndim(p) == 2 else "adam", params)), "soap")


def _scale_by_sign_momentum(b1, mu_dtype) -> optax.GradientTransformationExtraArgs:
    """``sign(m_t)`` with ``m_t = b1 m_{t-1} + (1 - b1) g_t`` kept in ``mu_dtype`` or the
    leaf's compute dtype (float32 for 16-bit leaves); the sign is cast to the gradient's dtype.
    State ``optax.EmaState`` (count, ema)."""

    def init_fn(params):
        return optax.EmaState(
            count=jnp.zeros([], jnp.int32),
            ema=jax.tree.map(lambda p: jnp.zeros(jnp.shape(p), mu_dtype or _ct(p.dtype)),
                             params))

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        check_same_shapes("updates", updates, "params", params, context="signum")
        check_same_shapes("updates", updates, "state.ema", state.ema, context="signum")

        def leaf(g, m):
            ct = _ct(jnp.promote_types(m.dtype, g.dtype))
            beta = resolve(b1, state.count, ct)
            return beta * m.astype(ct) + (1 - beta) * g.astype(ct)

        mu = jax.tree.map(leaf, updates, state.ema)
        u = jax.tree.map(lambda m, g: jnp.sign(m).astype(g.dtype), mu, updates)
        mu = jax.tree.map(lambda m, ref: m.astype(ref.dtype), mu, state.ema)
        return u, optax.EmaState(optax.safe_increment(state.count), mu)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def signum(
    learning_rate: optax.ScalarOrSchedule = 0.02,
    b1: float = 0.9,
    weight_decay: float = 0.0,
    *,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""Momentum signSGD ("Signum", Bernstein et al., 2018): the non-adaptive
    :math:`\ell_\infty` baseline of DeVA.

    :math:`m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t`, :math:`w_t = w_{t-1} - \eta_t
    (\operatorname{sign}(m_t) + \lambda w_{t-1})`; ``b1`` in [0, 1), ``weight_decay >= 0``.
    Equals :func:`deva_linf` with the variance factor :math:`\gamma` replaced by 1.
    ``mu_dtype`` (keyword-only, default ``None``): dtype of :math:`m`; ``None`` keeps it in the
    compute dtype (float32 for 16-bit params, else the param dtype). Updates keep the
    gradients' dtype; a mismatch of tree structure or leaf shape between the updates, the
    params and the state raises a ``ValueError`` naming the leaf. Under
    ``optax.inject_hyperparams`` the floats are injectable; give ``mu_dtype`` as
    ``jnp.dtype(...)`` or in ``static_args``.
    """
    check_float("learning_rate", learning_rate)
    check_unit_interval("b1", b1)
    check_float("weight_decay", weight_decay, strict=False, allow_schedule=False)
    mu_dtype = check_float_dtype("mu_dtype", mu_dtype)
    return _lr_chain(_scale_by_sign_momentum(b1, mu_dtype), weight_decay, learning_rate)
