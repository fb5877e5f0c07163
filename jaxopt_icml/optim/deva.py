r"""DeVA: decoupled variance adaptation, from Adam-like (l_inf) to adaptive spectral descent.

An AdaGrad/Adam-type step factors into a *variance-adaptation* term and a *scale-invariant*
direction,

.. math:: \frac{m}{\sqrt{v}} = \underbrace{\frac{|m|}{\sqrt{v}}}_{\gamma}
          \odot \underbrace{\operatorname{sign}(m)}_{\text{l}_\infty\text{ direction}}.

DeVA keeps a variance factor :math:`\gamma` and chooses the direction from the geometry:
``sign`` (the :math:`\ell_\infty` form, :func:`deva_linf`, for any leaf) or the matrix sign /
polar factor ``msign`` (the Schatten-:math:`\infty` form, :func:`deva_schatten`, for matrices,
optionally in a SOAP eigenbasis). :func:`deva` routes 2-D leaves to the Schatten form and the
rest to the :math:`\ell_\infty` form. The transition is explicit in three places:

* :func:`scale_invariant_direction` is the one switch between the geometries (``"sign"`` or
  ``"msign"``); both forms share the variance factor "|momentum| / sqrt(EMA of its square)",
  elementwise for ``sign`` and through row/column norms for ``msign``;
* ``deva(..., matrix_form="linf")`` runs the vector form on every leaf (Adam-like everywhere);
  ``matrix_form="schatten"`` (default) moves matrices to the spectral form;
* on diagonal matrices (``use_eigenbasis=False``, exact polar factor ``orthogonalize="svd"``)
  the Schatten form *equals* the :math:`\ell_\infty` form on the diagonal up to the scalar step
  factor (tested), since row and column norms of a diagonal matrix are its entries' moduli.

The baselines live in :mod:`jaxopt_icml.optim.deva_baselines`: :func:`soap` (Adam in the
Shampoo eigenbasis, Vyas et al. 2024; optax 0.2.8 has no ``contrib.soap``) and :func:`signum`
(momentum signSGD). The machinery DeVA's Schatten form shares with SOAP, :func:`newton_schulz`
(the quintic iteration Muon uses, our own implementation), :func:`polar_svd` and the eigenbasis
bookkeeping, lives in :mod:`jaxopt_icml.optim.eigenbasis`.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import (
    check_bool,
    check_choice,
    check_float,
    check_float_dtype,
    check_static_int,
    check_static_ints,
    check_unit_interval,
    resolve,
)
from jaxopt_icml.optim.eigenbasis import (
    _MAX_PRECOND_DIM,
    _NS_STEPS,
    _PRECONDITION_FREQUENCY,
    _check_eigenbasis_static,
    _ct,
    _eigenbasis_transform,
    _lr_chain,
    newton_schulz,
    polar_svd,
)
from jaxopt_icml.trees import check_same_shapes, with_shape_check

__all__ = [
    "deva",
    "deva_linf",
    "deva_schatten",
    "scale_by_deva_linf",
    "scale_by_deva_schatten",
    "scale_invariant_direction",
    "ScaleByDevaLinfState",
]

PyTree = Any


class ScaleByDevaLinfState(NamedTuple):
    """State of :func:`scale_by_deva_linf`.

    Attributes:
      count: updates made so far, int32 scalar.
      mu: momentum :math:`m` (params-shaped, dtype ``mu_dtype`` or the compute dtype).
      nu: EMA of :math:`m^2` (params-shaped, compute dtype: float32 for 16-bit params).
    """

    count: jax.Array
    mu: PyTree
    nu: PyTree


# --------------------------------------------------------------------------- the geometry switch


def scale_invariant_direction(m: jax.Array, geometry: str = "sign", *, ns_steps: int = 5,
                              orthogonalize: str = "newton_schulz") -> jax.Array:
    r"""The scale-invariant part of a DeVA step: ``sign(m)`` or ``msign(m)``.

    ``geometry="sign"`` is steepest descent for :math:`\|\cdot\|_\infty` (the
    :math:`\ell_\infty` form); ``"msign"`` is steepest descent for the spectral norm
    (Schatten-:math:`\infty`) of a matrix, via :func:`newton_schulz` or, with
    ``orthogonalize="svd"``, :func:`polar_svd`. Both satisfy ``d(c m) = d(m)`` for ``c > 0``.
    """
    check_choice("geometry", geometry, ("sign", "msign"))
    if geometry == "sign":
        return jnp.sign(m)
    if m.ndim != 2:
        raise ValueError(f"geometry='msign' needs a matrix, got shape {m.shape}")
    check_choice("orthogonalize", orthogonalize, ("newton_schulz", "svd"))
    if orthogonalize == "svd":
        return polar_svd(m)
    return newton_schulz(m, check_static_int("ns_steps", ns_steps))


# --------------------------------------------------------------------------- l_inf form


def scale_by_deva_linf(
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-5,
    *,
    nesterov: bool = False,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""Direction of :func:`deva_linf`: :math:`\gamma_t \odot \operatorname{sign}(m_t)`.

    Arguments and equations as in :func:`deva_linf`, without learning rate and weight decay.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` with state :class:`ScaleByDevaLinfState`.
    """
    check_unit_interval("b1", b1)
    check_unit_interval("b2", b2)
    check_float("eps", eps, allow_schedule=False)
    check_bool("nesterov", nesterov)
    mu_dtype = check_float_dtype("mu_dtype", mu_dtype)

    def init_fn(params):
        def zeros(p, dt=None):
            return jnp.zeros(jnp.shape(p), dt or _ct(p.dtype))

        return ScaleByDevaLinfState(
            count=jnp.zeros([], jnp.int32),
            mu=jax.tree.map(lambda p: zeros(p, mu_dtype), params),
            nu=jax.tree.map(zeros, params))

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        check_same_shapes("updates", updates, "params", params, context="deva_linf")
        check_same_shapes("updates", updates, "state.mu", state.mu, context="deva_linf")

        def leaf(g, m, v):
            ct = v.dtype
            g32 = g.astype(ct)
            beta1, beta2, e = (resolve(x, state.count, ct) for x in (b1, b2, eps))
            m = beta1 * m.astype(ct) + (1 - beta1) * g32
            v = beta2 * v + (1 - beta2) * m * m
            gamma = jnp.sqrt(m * m / (v + e))
            d = g32 + beta1 * (m - g32) if nesterov else m
            u = gamma * jnp.sign(d)
            return u.astype(g.dtype), m, v

        out = jax.tree.map(leaf, updates, state.mu, state.nu)
        treedef = jax.tree.structure(updates)
        u, m, v = (treedef.unflatten(x) for x in zip(*treedef.flatten_up_to(out), strict=True)) \
            if treedef.num_leaves else (updates, state.mu, state.nu)
        m = jax.tree.map(lambda a, ref: a.astype(ref.dtype), m, state.mu)
        return u, ScaleByDevaLinfState(optax.safe_increment(state.count), m, v)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def deva_linf(
    learning_rate: optax.ScalarOrSchedule = 0.02,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-5,
    weight_decay: float = 0.0,
    *,
    nesterov: bool = False,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""DeVA with the :math:`\ell_\infty` geometry (``DeVAEuclideanNorm`` of the official code).

    .. math::

        m_t &= \beta_1 m_{t-1} + (1 - \beta_1) g_t, \qquad
        v_t = \beta_2 v_{t-1} + (1 - \beta_2)\, m_t^2, \\
        \gamma_t &= \sqrt{m_t^2 / (v_t + \epsilon)}, \qquad
        w_t = w_{t-1} - \eta_t \big(\gamma_t \odot \operatorname{sign}(d_t)
              + \lambda w_{t-1}\big),

    with :math:`d_t = m_t`, or :math:`d_t = (1 - \beta_1) g_t + \beta_1 m_t` with ``nesterov``.
    No bias correction (as in the official code): the first steps are up to
    :math:`1/\sqrt{1 - \beta_2}` larger than Adam's, so a warm-up helps. Note :math:`v` tracks
    the square of the *momentum*, not of the gradient.

    Args:
      learning_rate: :math:`\eta > 0`, float or optax schedule (default 0.02).
      b1: :math:`\beta_1 \in [0, 1)` (default 0.9). Float, injectable.
      b2: :math:`\beta_2 \in [0, 1)` (default 0.999). Float, injectable.
      eps: :math:`\epsilon > 0` inside the square root (default 1e-5); keeps a zero gradient
        finite. Float.
      weight_decay: decoupled weight decay :math:`\lambda \ge 0` (default 0), scaled by the
        learning rate and applied to the parameters before the step.
      nesterov: sign of the Nesterov look-ahead :math:`d_t` (default ``False``). Static bool,
        keyword-only (as the rest).
      mu_dtype: dtype of :math:`m` (default ``None``: float32 for 16-bit params, else the param
        dtype). :math:`v` is always kept in that compute dtype (bf16 turns 0.999 into 1.0).
        Under ``optax.inject_hyperparams`` give it as ``jnp.dtype(...)`` or in
        ``static_args`` (a scalar type such as ``jnp.bfloat16`` is callable and would be taken
        for a schedule); the floats are injectable.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` (a chain: direction, decayed weights,
      learning rate).

    Example:
      >>> import jax.numpy as jnp, optax
      >>> from jaxopt_icml.optim.deva import deva_linf
      >>> params = {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)}
      >>> opt = deva_linf(1e-2)
      >>> state = opt.init(params)
      >>> grads = {"w": jnp.full((2, 3), 0.5), "b": jnp.ones(3)}
      >>> updates, state = opt.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)

    Paper mapping:
      :math:`\beta_1, \beta_2` -> ``b1, b2``; the constant 1e-5 in the official
      ``snr = m^2 / (v + 1e-5)`` -> ``eps``; weight decay as in the official code
      (``p *= 1 - lr * wd`` before the step, identical to ``add_decayed_weights`` then the
      learning rate). With ``b1=0`` the update is :math:`g/\sqrt{v + \epsilon}`,
      ``optax.rmsprop(eps_in_sqrt=True)`` (tested).

    Theory:
      The variance factor improves the blockwise smoothness constant over non-adaptive
      sign descent; experimentally (trace quadratic, ``experiments/optim/deva.py``) its final
      suboptimality is compared to momentum signSGD (:func:`signum`).

    References:
      Zitao Song, Cedar Site Bai, Zhe Zhang, Brian Bullins, David F. Gleich, "Decoupling
      Variance and Scale-Invariant Updates in Adaptive Gradient Descent for Unified Vector and
      Matrix Optimization" (DeVA), ICML 2026, arXiv:2602.06880.
    """
    check_float("learning_rate", learning_rate)
    check_float("weight_decay", weight_decay, strict=False, allow_schedule=False)
    return _lr_chain(scale_by_deva_linf(b1, b2, eps, nesterov=nesterov, mu_dtype=mu_dtype),
                     weight_decay, learning_rate)


# --------------------------------------------------------------------------- Schatten form


def scale_by_deva_schatten(
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    *,
    precondition_frequency: int | None = None,
    ns_steps: int | None = None,
    nesterov: bool = True,
    rms_scale: float = 0.2,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    orthogonalize: str = "newton_schulz",
    max_precond_dim: int | None = None,
    shampoo_beta: float | None = None,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""Direction of :func:`deva_schatten` (2-D leaves only); arguments as there.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` with state :class:`ScaleByEigenbasisState`;
      ``init`` raises ``ValueError`` on a leaf that is not 2-D.
    """
    check_unit_interval("b1", b1)
    check_unit_interval("b2", b2)
    check_float("eps", eps, allow_schedule=False)
    check_float("rms_scale", rms_scale, allow_schedule=False)
    freq, steps, dim = check_static_ints(
        "scale_by_deva_schatten", precondition_frequency=(precondition_frequency,
                                                          _PRECONDITION_FREQUENCY),
        ns_steps=(ns_steps, _NS_STEPS), max_precond_dim=(max_precond_dim, _MAX_PRECOND_DIM))
    check_bool("nesterov", nesterov)
    check_choice("orthogonalize", orthogonalize, ("newton_schulz", "svd"))
    freq, dim, mu_dtype = _check_eigenbasis_static(
        freq, use_eigenbasis, dim, bias_correction, shampoo_beta, mu_dtype)

    def direction(g, m, v, t, hp):
        del t
        m = hp["b1"] * m + (1 - hp["b1"]) * g
        r = jnp.sqrt(jnp.sum(m * m, axis=1, keepdims=True))  # row norms (n, 1)
        c = jnp.sqrt(jnp.sum(m * m, axis=0, keepdims=True))  # column norms (1, m)
        v = hp["b2"] * v + (1 - hp["b2"]) * (r * c)
        d = g + hp["b1"] * (m - g) if nesterov else m
        o = scale_invariant_direction(d, "msign", ns_steps=steps, orthogonalize=orthogonalize)
        scale = hp["rms_scale"] * math.sqrt(max(g.shape))
        u = o.astype(v.dtype) * (jnp.sqrt(r) * jnp.sqrt(c)) * jax.lax.rsqrt(v + hp["eps"]) * scale
        return u, m, v

    return _eigenbasis_transform(
        "scale_by_deva_schatten", direction, dict(b1=b1, b2=b2, eps=eps, rms_scale=rms_scale),
        shampoo_beta,
        precondition_frequency=freq, use_eigenbasis=use_eigenbasis, max_precond_dim=dim,
        bias_correction=bias_correction, mu_dtype=mu_dtype)


def deva_schatten(
    learning_rate: optax.ScalarOrSchedule = 3e-3,
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    weight_decay: float = 0.01,
    *,
    precondition_frequency: int | None = None,
    ns_steps: int | None = None,
    nesterov: bool = True,
    rms_scale: float = 0.2,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    orthogonalize: str = "newton_schulz",
    max_precond_dim: int | None = None,
    shampoo_beta: float | None = None,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""DeVA with the Schatten-:math:`\infty` geometry ("adaptive spectral descent"), 2-D leaves.

    For a matrix leaf :math:`W \in \mathbb{R}^{n \times p}` with gradient :math:`G`:

    .. math::

        \tilde G &= Q_L^\top G Q_R, \qquad
        m_t = \beta_1 m_{t-1} + (1 - \beta_1)\tilde G, \\
        r_i &= \|m_{t,i:}\|_2,\quad c_j = \|m_{t,:j}\|_2, \qquad
        v_t = \beta_2 v_{t-1} + (1 - \beta_2)\, r c^\top, \\
        O_t &= \operatorname{msign}(d_t), \qquad
        U_t = O_t \odot \frac{\sqrt{r}\sqrt{c}^\top}{\sqrt{v_t + \epsilon}}
              \cdot \rho \sqrt{\max(n, p)}, \\
        W_t &= W_{t-1} - \eta_t \Big(\frac{\sqrt{1 - \beta_2^t}}{1 - \beta_1^t}
               Q_L U_t Q_R^\top + \lambda W_{t-1}\Big),

    with :math:`d_t = (1 - \beta_1)\tilde G + \beta_1 m_t` (``nesterov``) or :math:`m_t`,
    ``msign`` by :func:`newton_schulz` (``ns_steps`` quintic steps, float32), and :math:`\rho`
    = ``rms_scale``. :math:`Q_L, Q_R` are the eigenbases (SOAP) of EMAs (rate
    ``shampoo_beta``, default :math:`\beta_2`) of :math:`GG^\top` and :math:`G^\top G`: the
    first update only initialises them (eigh; a zero DeVA step, so only the weight decay
    :math:`-\eta\lambda W` moves the parameters); afterwards they are
    refreshed every ``precondition_frequency`` updates by one power-iteration step and a QR
    decomposition (under ``lax.cond``: other steps do no decomposition), the momentum is
    re-expressed in the new basis and :math:`v` is permuted with the eigenvalue order. With
    ``use_eigenbasis=False`` :math:`Q_L = Q_R = I` (no state, no decomposition; the fast path
    close to Muon's cost) and the first update takes a full step. A matrix with both sides
    above ``max_precond_dim`` is not rotated either and behaves exactly as with
    ``use_eigenbasis=False`` (first update a full step, bias correction from :math:`t = 1`).

    Args:
      learning_rate: :math:`\eta > 0`, float or schedule (default 3e-3).
      b1: :math:`\beta_1 \in [0, 1)` (default 0.95).
      b2: :math:`\beta_2 \in [0, 1)` (default 0.95).
      eps: :math:`\epsilon > 0` under the square root (default 1e-8).
      weight_decay: decoupled :math:`\lambda \ge 0` (default 0.01).
      precondition_frequency: eigenbasis refresh period, int >= 1 (default ``None``: 10).
        Static; this and all following arguments are keyword-only.
      ns_steps: Newton-Schulz steps, int >= 1 (default ``None``: 5). Static.
      nesterov: Nesterov look-ahead in ``msign`` (default ``True``). Static.
      rms_scale: :math:`\rho > 0` of the RMS alignment :math:`\rho\sqrt{\max(n,p)}` (default
        0.2). Float.
      use_eigenbasis: rotate into the SOAP eigenbasis (default ``True``). Static.
      bias_correction: the step factor :math:`\sqrt{1-\beta_2^t}/(1-\beta_1^t)` (default
        ``True``, as the official code). Static.
      orthogonalize: ``"newton_schulz"`` (default) or ``"svd"`` (exact polar factor,
        :func:`polar_svd`; slower, for checks). Static.
      max_precond_dim: sides longer than this are not rotated, int >= 1 (default ``None``:
        10000, as SOAP). Static.
      shampoo_beta: EMA rate of :math:`GG^\top, G^\top G` in [0, 1), ``None`` (default) uses
        ``b2``.
      mu_dtype: dtype of :math:`m` (default: float32 for 16-bit params, else the param dtype);
        :math:`v`, the EMAs and the bases are always in that compute dtype (float32 at least),
        as eigendecompositions and Newton-Schulz need.

    Under ``optax.inject_hyperparams``: the floats (``learning_rate``, ``b1``, ``b2``,
    ``eps``, ``weight_decay``, ``rms_scale``, ``shampoo_beta``) are injectable. The static ints
    ``precondition_frequency``, ``ns_steps`` and ``max_precond_dim`` default to ``None``, which
    the wrapper leaves alone; list every one you pass in ``static_args``, e.g.
    ``optax.inject_hyperparams(deva_schatten, static_args=("precondition_frequency",
    "ns_steps"))(1e-2, precondition_frequency=5, ns_steps=3)``. A missing one raises a
    ``ValueError`` (under ``jit``) that names all of them and the ``static_args``
    to pass. Give ``mu_dtype`` as ``jnp.dtype(jnp.bfloat16)`` or list it in ``static_args``: a
    scalar type such as ``jnp.bfloat16`` is callable and would be taken for a schedule.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; state ``(ScaleByEigenbasisState,
      EmptyState, ScaleByLearningRateState-or-EmptyState)`` of the chain. ``update`` raises a
      ``ValueError`` naming the leaf when the updates, the params and the state disagree in
      tree structure or leaf shape.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> from jaxopt_icml.optim.deva import deva_schatten
      >>> w = jnp.ones((4, 3))
      >>> opt = deva_schatten(1e-2, precondition_frequency=5)
      >>> state = opt.init(w)
      >>> for _ in range(3):
      ...     updates, state = opt.update(jnp.cos(w), state, w)
      ...     w = optax.apply_updates(w, updates)

    Paper mapping:
      ``DeVASchattenNorm`` of the official code (defaults lr 3e-3, betas (0.95, 0.95), eps
      1e-8, wd 0.01, frequency 10, Nesterov, RMS factor 0.2): :math:`r, c` = ``row_sigma``,
      ``col_sigma``; ``exp_avg_sq`` = :math:`v`; ``rms_align_factor`` =
      :math:`\rho\sqrt{\max(n,p)}`. Deviations: (1) Newton-Schulz in float32 with a Frobenius
      normalisation (the official ``msign`` runs in bfloat16 with an extra fourth-root
      normalisation in its first step; both give singular values near 1); (2) weight decay
      :math:`\lambda W_{t-1}` uses the weights before the step (AdamW/optax form; the official
      code decays after it, a difference of order :math:`\eta^2\lambda`); (3) the momentum is
      re-expressed in a new basis only when the basis changes (the official code projects it
      back and forth every step, the identity up to rounding); (4) no ``merge_dims``/1-D
      preconditioning (only 2-D leaves; :func:`deva` routes the rest).

    Theory:
      First update: :math:`v_1 = (1 - \beta_2) r c^\top`, so the variance factor is the constant
      :math:`1/\sqrt{1-\beta_2}` (up to :math:`\epsilon`) and :math:`U_1 = O_1\rho
      \sqrt{\max(n,p)}/\sqrt{1-\beta_2}`; the step is invariant to rescaling all gradients by
      :math:`c > 0` (up to :math:`\epsilon`); on the trace-quadratic benchmark it is compared to
      Muon. Checked in ``tests/optim/test_deva.py`` and ``experiments/optim/deva.py``.

    References:
      Song, Bai, Zhang, Bullins, Gleich, "Decoupling Variance and Scale-Invariant Updates in
      Adaptive Gradient Descent for Unified Vector and Matrix Optimization", ICML 2026,
      arXiv:2602.06880. Vyas et al., "SOAP: Improving and Stabilizing Shampoo using Adam",
      arXiv:2409.11321.
    """
    check_float("learning_rate", learning_rate)
    check_float("weight_decay", weight_decay, strict=False, allow_schedule=False)
    precondition_frequency, ns_steps, max_precond_dim = check_static_ints(
        "deva_schatten", precondition_frequency=(precondition_frequency, _PRECONDITION_FREQUENCY),
        ns_steps=(ns_steps, _NS_STEPS), max_precond_dim=(max_precond_dim, _MAX_PRECOND_DIM))
    direction = scale_by_deva_schatten(
        b1, b2, eps, precondition_frequency=precondition_frequency, ns_steps=ns_steps,
        nesterov=nesterov, rms_scale=rms_scale, use_eigenbasis=use_eigenbasis,
        bias_correction=bias_correction, orthogonalize=orthogonalize,
        max_precond_dim=max_precond_dim, shampoo_beta=shampoo_beta, mu_dtype=mu_dtype)
    return _lr_chain(direction, weight_decay, learning_rate)


# --------------------------------------------------------------------------- router


def deva(
    learning_rate: optax.ScalarOrSchedule = 3e-3,
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    weight_decay: float = 0.01,
    *,
    matrix_form: str = "schatten",
    precondition_frequency: int | None = None,
    ns_steps: int | None = None,
    nesterov: bool = True,
    rms_scale: float = 0.2,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    orthogonalize: str = "newton_schulz",
    max_precond_dim: int | None = None,
    shampoo_beta: float | None = None,
    linf_learning_rate: optax.ScalarOrSchedule | None = None,
    linf_b1: float = 0.9,
    linf_b2: float = 0.999,
    linf_eps: float = 1e-5,
    linf_weight_decay: float = 0.0,
    linf_nesterov: bool = False,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    r"""DeVA for a whole model: 2-D leaves take :func:`deva_schatten`, others :func:`deva_linf`.

    ``optax.partition`` on the leaves' rank (as ``optax.contrib.muon`` routes non-matrix leaves
    to AdamW). ``matrix_form="linf"`` sends the matrices to :func:`deva_linf` too, so the same
    call moves between the vector form (Adam-like everywhere) and the spectral form.

    Args:
      learning_rate, b1, b2, eps, weight_decay: of the Schatten form (see
        :func:`deva_schatten`; ``learning_rate`` may be a schedule and is injectable).
      matrix_form: ``"schatten"`` (default) or ``"linf"``. Static; keyword-only as the rest.
      precondition_frequency, ns_steps, nesterov, rms_scale, use_eigenbasis,
        bias_correction, orthogonalize, max_precond_dim, shampoo_beta: of the Schatten form.
      linf_learning_rate: step of the :math:`\ell_\infty` leaves (default ``None``: the same
        ``learning_rate``).
      linf_b1, linf_b2, linf_eps, linf_weight_decay, linf_nesterov: of :func:`deva_linf`
        (defaults 0.9, 0.999, 1e-5, 0, ``False``).
      mu_dtype: momentum dtype of both forms.

    Under ``optax.inject_hyperparams`` the floats are injectable and the static ints
    (``precondition_frequency``, ``ns_steps``, ``max_precond_dim``) follow the rule of
    :func:`deva_schatten`: left at ``None`` they need nothing; each one passed goes in
    ``static_args``, e.g. ``optax.inject_hyperparams(deva, static_args=("ns_steps",))(1e-2,
    ns_steps=3)``; ``mu_dtype`` as there.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` (``optax.partition`` state). ``update``
      raises a ``ValueError`` naming the leaf when the updates and the params (or the state)
      disagree in tree structure or leaf shape.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> from jaxopt_icml.optim.deva import deva
      >>> params = {"w": jnp.ones((4, 3)), "b": jnp.zeros(3)}
      >>> opt = deva(1e-2, use_eigenbasis=False)
      >>> state = opt.init(params)
      >>> updates, state = opt.update({"w": jnp.ones((4, 3)), "b": jnp.ones(3)}, state, params)

    Paper mapping:
      The paper trains matrices with DeVA\ :sub:`S∞` and the remaining parameters with a
      vector optimiser; here the vector optimiser is DeVA\ :sub:`ℓ∞` itself.

    References:
      Song, Bai, Zhang, Bullins, Gleich, DeVA, ICML 2026, arXiv:2602.06880.
    """
    precondition_frequency, ns_steps, max_precond_dim = check_static_ints(
        "deva", precondition_frequency=(precondition_frequency, _PRECONDITION_FREQUENCY),
        ns_steps=(ns_steps, _NS_STEPS), max_precond_dim=(max_precond_dim, _MAX_PRECOND_DIM))
    check_choice("matrix_form", matrix_form, ("schatten", "linf"))
    check_float("learning_rate", learning_rate)
    check_float("linf_learning_rate", linf_learning_rate, allow_none=True)
    check_bool("linf_nesterov", linf_nesterov)
    lr_linf = learning_rate if linf_learning_rate is None else linf_learning_rate
    transforms = {
        "schatten": deva_schatten(
            learning_rate, b1, b2, eps, weight_decay,
            precondition_frequency=precondition_frequency, ns_steps=ns_steps,
            nesterov=nesterov, rms_scale=rms_scale, use_eigenbasis=use_eigenbasis,
            bias_correction=bias_correction, orthogonalize=orthogonalize,
            max_precond_dim=max_precond_dim, shampoo_beta=shampoo_beta, mu_dtype=mu_dtype),
        "linf": deva_linf(lr_linf, linf_b1, linf_b2, linf_eps, linf_weight_decay,
                          nesterov=linf_nesterov, mu_dtype=mu_dtype),
    }

    def labels(params):
        return jax.tree.map(
            lambda p: "schatten" if matrix_form == "schatten" and jnp.ndim(p) == 2 else "linf",
            params)

    return with_shape_check(optax.partition(transforms, labels), "deva")
