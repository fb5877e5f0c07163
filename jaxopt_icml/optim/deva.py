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

Also here, as baselines sharing the code: :func:`soap` (Adam in the Shampoo eigenbasis,
Vyas et al. 2024; optax 0.2.8 has no ``contrib.soap``), :func:`signum` (momentum signSGD) and
:func:`newton_schulz` (the quintic iteration Muon uses, our own implementation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import (
    check_bool,
    check_choice,
    check_float,
    check_static_int,
    check_unit_interval,
    compute_dtype,
    resolve,
)

__all__ = [
    "ScaleByDevaLinfState",
    "ScaleByEigenbasisState",
    "deva",
    "deva_linf",
    "deva_schatten",
    "newton_schulz",
    "polar_svd",
    "scale_by_deva_linf",
    "scale_by_deva_schatten",
    "scale_by_soap",
    "scale_invariant_direction",
    "signum",
    "soap",
]

PyTree = Any

#: Quintic Newton-Schulz coefficients (a, b, c) of Muon (Jordan et al., 2024), also used by the
#: official DeVA code: x <- a x + (b A + c A^2) x with A = x x^T.
NS_COEFFS = (3.4445, -4.7750, 2.0315)


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


class ScaleByEigenbasisState(NamedTuple):
    """State of :func:`scale_by_deva_schatten` and :func:`scale_by_soap`.

    ``mu`` and ``nu`` live in the eigenbasis (rotated coordinates) when ``use_eigenbasis``.
    ``gg_l``/``gg_r``/``q_l``/``q_r`` hold, per matrix leaf, the EMAs of :math:`GG^\\top`,
    :math:`G^\\top G` and their eigenbases (``q_*`` are zero before the first update, which only
    initialises them); a side that is not rotated (``use_eigenbasis=False``, or a dimension above
    ``max_precond_dim``) holds ``optax.EmptyState()`` there.

    Attributes:
      count: updates made so far, int32 scalar.
      mu: momentum of the (rotated) gradient.
      nu: the second-moment accumulator (DeVA: EMA of :math:`r c^\\top`; SOAP: EMA of
        :math:`\\tilde G^2`).
      gg_l, gg_r: EMAs of :math:`G G^\\top` (rows x rows) and :math:`G^\\top G` (cols x cols).
      q_l, q_r: their eigenbases (columns by decreasing eigenvalue).
    """

    count: jax.Array
    mu: PyTree
    nu: PyTree
    gg_l: PyTree
    gg_r: PyTree
    q_l: PyTree
    q_r: PyTree


# --------------------------------------------------------------------------- validation


def _check_dtype(name, value):
    if value is None:
        return None
    try:
        dt = jnp.dtype(value)
    except TypeError:
        raise ValueError(f"{name} must be None or a floating dtype, got {value!r}") from None
    if not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"{name} must be None or a floating dtype, got {value!r}")
    return dt


# --------------------------------------------------------------------------- helpers


def _ct(dtype):
    """Compute dtype of a leaf: float32 for 16-bit floats (and ints), else the leaf's."""
    dt = compute_dtype(dtype)
    return dt if jnp.issubdtype(dt, jnp.floating) else jnp.dtype(jnp.float32)


def newton_schulz(x: jax.Array, steps: int = 5, coeffs=NS_COEFFS, eps: float = 1e-7) -> jax.Array:
    r"""Approximate polar factor ``msign(x) = U V^T`` of a matrix by quintic Newton-Schulz.

    ``x`` is divided by its Frobenius norm (so every singular value is at most 1), then
    ``steps`` times :math:`X \leftarrow aX + (bA + cA^2)X`, :math:`A = XX^\top`, on the short
    side (the matrix is transposed when it has more rows than columns). The coefficients
    :data:`NS_COEFFS` do not converge to exactly 1: after 5 steps the singular values lie in
    about [0.7, 1.2] (a "sloppy" sign, as in Muon). Computed in float32 at least; returns the
    compute dtype (float32 for 16-bit inputs). A zero matrix maps to zero.
    """
    ct = _ct(x.dtype)
    # The coefficients enter as one runtime vector, not as constants folded into each
    # matrix's loops: sharing that operand, the elementwise loops of the same step on
    # different matrices become one kernel in XLA's GPU compiler (sibling fusion, as for
    # optax's Muon, whose coefficients live in its state). deva's step on nine 1024 x 1024
    # matrices compiled for an H100: 256 launches with constants, 190 so (Muon 191); the
    # same arithmetic, the same CPU program speed.
    abc = jax.lax.optimization_barrier(jnp.asarray(coeffs, ct))
    if abc.shape != (3,):
        raise ValueError(f"coeffs must be three numbers (a, b, c), got shape {abc.shape}")
    a, b, c = abc[0], abc[1], abc[2]
    y = x.astype(ct)
    wide = y.shape[0] <= y.shape[1]
    if not wide:
        y = y.T
    y = y / (jnp.sqrt(jnp.sum(y * y)) + jnp.asarray(eps, ct))
    for _ in range(steps):
        s = y @ y.T
        y = a * y + (b * s + c * (s @ s)) @ y
    return y if wide else y.T


def polar_svd(x: jax.Array) -> jax.Array:
    """Exact ``msign(x)``: ``U V^T`` over the singular values above the rank tolerance (zero on
    the null space; a zero matrix maps to zero), by an SVD in the compute dtype."""
    ct = _ct(x.dtype)
    u, s, vt = jnp.linalg.svd(x.astype(ct), full_matrices=False)
    tol = jnp.max(s, initial=0.0) * max(x.shape) * jnp.finfo(ct).eps
    return (u * (s > tol).astype(ct)[None, :]) @ vt


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


def _lr_chain(direction, weight_decay, learning_rate):
    return optax.chain(direction, optax.add_decayed_weights(weight_decay),
                       optax.scale_by_learning_rate(learning_rate))


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
    mu_dtype = _check_dtype("mu_dtype", mu_dtype)

    def init_fn(params):
        def zeros(p, dt=None):
            return jnp.zeros(jnp.shape(p), dt or _ct(p.dtype))

        return ScaleByDevaLinfState(
            count=jnp.zeros([], jnp.int32),
            mu=jax.tree.map(lambda p: zeros(p, mu_dtype), params),
            nu=jax.tree.map(zeros, params))

    def update_fn(updates, state, params=None, **extra_args):
        del params, extra_args

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


# --------------------------------------------------------------------------- eigenbasis machinery


def _sides(shape, use_eigenbasis, max_precond_dim):
    return tuple(use_eigenbasis and n <= max_precond_dim for n in shape)


def _eigh_desc(gg):
    n = gg.shape[0]
    _, q = jnp.linalg.eigh(gg + jnp.asarray(1e-30, gg.dtype) * jnp.eye(n, dtype=gg.dtype))
    return q[:, ::-1]


def _power_qr(gg, q):
    """One power-iteration step and QR on the eigenbasis sorted by estimated eigenvalue
    (SOAP's refresh): returns ``(order, new_q)``."""
    est = jnp.sum(q * (gg @ q), axis=0)
    order = jnp.argsort(-est)
    q = q[:, order]
    return order, jnp.linalg.qr(gg @ q)[0]


def _project(x, ql, qr):
    if ql is not None:
        x = ql.T @ x
    if qr is not None:
        x = x @ qr
    return x


def _project_back(x, ql, qr):
    if ql is not None:
        x = ql @ x
    if qr is not None:
        x = x @ qr.T
    return x


def _eigenbasis_transform(
    name: str,
    direction: Callable,
    floats: dict,
    shampoo_beta, *,
    precondition_frequency: int,
    use_eigenbasis: bool,
    max_precond_dim: int,
    bias_correction: bool,
    mu_dtype,
) -> optax.GradientTransformationExtraArgs:
    """Shared SOAP-style bookkeeping; ``direction(g_rot, m_prev, v_prev, t, hp) -> (u, m, v)``
    computes the step in the rotated coordinates (``t`` is the 1-based update index, ``hp``
    the ``floats`` (``b1``, ``b2``, ``eps``, ...) resolved in the leaf's compute dtype).

    A leaf with a rotated side spends its first update on initialising the eigenbasis (zero
    step, so ``t = max(count, 1)``); a leaf with no rotated side (``use_eigenbasis=False``, or
    both sides above ``max_precond_dim``) has no such call and uses ``t = count + 1``, exactly
    the ``use_eigenbasis=False`` path."""
    empty = optax.EmptyState()

    def init_fn(params):
        treedef = jax.tree.structure(params)
        out = {k: [] for k in ScaleByEigenbasisState._fields[1:]}
        for path, p in jax.tree_util.tree_leaves_with_path(params):
            shape = jnp.shape(p)
            if len(shape) != 2:
                raise ValueError(
                    f"{name} works on 2-D leaves, got shape {shape} at "
                    f"{jax.tree_util.keystr(path)}; use deva()/optax.partition to route other "
                    "leaves to deva_linf (or adam)")
            ct = _ct(p.dtype)
            left, right = _sides(shape, use_eigenbasis, max_precond_dim)
            out["mu"].append(jnp.zeros(shape, mu_dtype or ct))
            out["nu"].append(jnp.zeros(shape, ct))
            for side, n, gg, q in ((left, shape[0], "gg_l", "q_l"),
                                   (right, shape[1], "gg_r", "q_r")):
                out[gg].append(jnp.zeros((n, n), ct) if side else empty)
                out[q].append(jnp.zeros((n, n), ct) if side else empty)
        return ScaleByEigenbasisState(jnp.zeros([], jnp.int32),
                                      *(treedef.unflatten(out[k]) for k in out))

    def update_fn(updates, state, params=None, **extra_args):
        del params, extra_args
        g_leaves, treedef = jax.tree.flatten(updates)
        fields = [treedef.flatten_up_to(getattr(state, k))
                  for k in ScaleByEigenbasisState._fields[1:]]
        k = state.count
        new_u, new = [], {f: [] for f in ScaleByEigenbasisState._fields[1:]}
        for g, m, v, ggl, ggr, ql, qr in zip(g_leaves, *fields, strict=True):
            ct = v.dtype
            hp = {name: resolve(val, k, ct) for name, val in floats.items()}
            sb = hp["b2"] if shampoo_beta is None else resolve(shampoo_beta, k, ct)
            g32 = g.astype(ct)
            left, right = _sides(g.shape, use_eigenbasis, max_precond_dim)
            ql_, qr_ = (ql if left else None), (qr if right else None)
            if left or right:
                t = jnp.maximum(k, 1).astype(ct)  # call 0 only initialises the eigenbasis
            else:  # no side rotated (use_eigenbasis=False, or both sides > max_precond_dim)
                t = (k + 1).astype(ct)
            u, m32, v = direction(_project(g32, ql_, qr_), m.astype(ct), v, t, hp)
            if bias_correction:
                u = u * (jnp.sqrt(1 - hp["b2"] ** t) / (1 - hp["b1"] ** t))
            u = _project_back(u, ql_, qr_)
            if left:
                ggl = sb * ggl + (1 - sb) * (g32 @ g32.T)
            if right:
                ggr = sb * ggr + (1 - sb) * (g32.T @ g32)
            if left or right:
                def refresh(operand, left=left, right=right):
                    m_, v_, ggl_, ggr_, ql0, qr0 = operand
                    m_orig = _project_back(m_, ql0 if left else None, qr0 if right else None)

                    def first(_, left=left, right=right):
                        return (v_, _eigh_desc(ggl_) if left else ql0,
                                _eigh_desc(ggr_) if right else qr0)

                    def power(_, left=left, right=right):
                        vv, a, b = v_, ql0, qr0
                        if left:
                            order, a = _power_qr(ggl_, ql0)
                            vv = vv[order, :]
                        if right:
                            order, b = _power_qr(ggr_, qr0)
                            vv = vv[:, order]
                        return vv, a, b

                    v_, ql1, qr1 = jax.lax.cond(k == 0, first, power, None)
                    m_ = _project(m_orig, ql1 if left else None, qr1 if right else None)
                    return m_, v_, ql1, qr1

                def keep(operand):
                    m_, v_, _, _, ql0, qr0 = operand
                    return m_, v_, ql0, qr0

                dummy = jnp.zeros((), ct)
                m32, v, ql, qr = jax.lax.cond(
                    k % precondition_frequency == 0, refresh, keep,
                    (m32, v, ggl if left else dummy, ggr if right else dummy,
                     ql if left else dummy, qr if right else dummy))
                ql = ql if left else empty
                qr = qr if right else empty
            new_u.append(u.astype(g.dtype))
            for f, val in zip(("mu", "nu", "gg_l", "gg_r", "q_l", "q_r"),
                              (m32.astype(m.dtype), v, ggl, ggr, ql, qr), strict=True):
                new[f].append(val)
        return treedef.unflatten(new_u), ScaleByEigenbasisState(
            optax.safe_increment(state.count), *(treedef.unflatten(new[f]) for f in new))

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _check_eigenbasis_static(precondition_frequency, use_eigenbasis, max_precond_dim,
                             bias_correction, shampoo_beta, mu_dtype):
    freq = check_static_int("precondition_frequency", precondition_frequency)
    check_bool("use_eigenbasis", use_eigenbasis)
    dim = check_static_int("max_precond_dim", max_precond_dim)
    check_bool("bias_correction", bias_correction)
    if shampoo_beta is not None:
        check_unit_interval("shampoo_beta", shampoo_beta)
    return freq, dim, _check_dtype("mu_dtype", mu_dtype)


# --------------------------------------------------------------------------- Schatten form


def scale_by_deva_schatten(
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    *,
    precondition_frequency: int = 10,
    ns_steps: int = 5,
    nesterov: bool = True,
    rms_scale: float = 0.2,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    orthogonalize: str = "newton_schulz",
    max_precond_dim: int = 10000,
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
    steps = check_static_int("ns_steps", ns_steps)
    check_bool("nesterov", nesterov)
    check_choice("orthogonalize", orthogonalize, ("newton_schulz", "svd"))
    freq, dim, mu_dtype = _check_eigenbasis_static(
        precondition_frequency, use_eigenbasis, max_precond_dim, bias_correction, shampoo_beta,
        mu_dtype)

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
    precondition_frequency: int = 10,
    ns_steps: int = 5,
    nesterov: bool = True,
    rms_scale: float = 0.2,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    orthogonalize: str = "newton_schulz",
    max_precond_dim: int = 10000,
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
      precondition_frequency: eigenbasis refresh period, int >= 1 (default 10). Static;
        this and all following arguments are keyword-only.
      ns_steps: Newton-Schulz steps, int >= 1 (default 5). Static.
      nesterov: Nesterov look-ahead in ``msign`` (default ``True``). Static.
      rms_scale: :math:`\rho > 0` of the RMS alignment :math:`\rho\sqrt{\max(n,p)}` (default
        0.2). Float.
      use_eigenbasis: rotate into the SOAP eigenbasis (default ``True``). Static.
      bias_correction: the step factor :math:`\sqrt{1-\beta_2^t}/(1-\beta_1^t)` (default
        ``True``, as the official code). Static.
      orthogonalize: ``"newton_schulz"`` (default) or ``"svd"`` (exact polar factor,
        :func:`polar_svd`; slower, for checks). Static.
      max_precond_dim: sides longer than this are not rotated, int >= 1 (default 10000, as
        SOAP). Static.
      shampoo_beta: EMA rate of :math:`GG^\top, G^\top G` in [0, 1), ``None`` (default) uses
        ``b2``.
      mu_dtype: dtype of :math:`m` (default: float32 for 16-bit params, else the param dtype);
        :math:`v`, the EMAs and the bases are always in that compute dtype (float32 at least),
        as eigendecompositions and Newton-Schulz need.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; state ``(ScaleByEigenbasisState,
      EmptyState, ScaleByLearningRateState-or-EmptyState)`` of the chain.

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
    precondition_frequency: int = 10,
    ns_steps: int = 5,
    nesterov: bool = True,
    rms_scale: float = 0.2,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    orthogonalize: str = "newton_schulz",
    max_precond_dim: int = 10000,
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

    Returns:
      An ``optax.GradientTransformationExtraArgs`` (``optax.partition`` state).

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

    return optax.partition(transforms, labels)


# --------------------------------------------------------------------------- baselines


def scale_by_soap(
    b1: float = 0.95,
    b2: float = 0.95,
    eps: float = 1e-8,
    *,
    precondition_frequency: int = 10,
    use_eigenbasis: bool = True,
    bias_correction: bool = True,
    max_precond_dim: int = 10000,
    shampoo_beta: float | None = None,
    mu_dtype=None,
) -> optax.GradientTransformationExtraArgs:
    """Direction of :func:`soap` (2-D leaves only); arguments as there."""
    check_unit_interval("b1", b1)
    check_unit_interval("b2", b2)
    check_float("eps", eps, allow_schedule=False)
    freq, dim, mu_dtype = _check_eigenbasis_static(
        precondition_frequency, use_eigenbasis, max_precond_dim, bias_correction, shampoo_beta,
        mu_dtype)

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
    precondition_frequency: int = 10,
    use_eigenbasis: bool = True,
    max_precond_dim: int = 10000,
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
    :func:`deva_schatten`; ``adam_learning_rate`` defaults to ``learning_rate``.

    References:
      Nikhil Vyas, Depen Morwani, Rosie Zhao, Itai Shapira, David Brandfonbrener, Lucas Janson,
      Sham Kakade, "SOAP: Improving and Stabilizing Shampoo using Adam", arXiv:2409.11321.
    """
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
    return optax.partition(
        transforms, lambda params: jax.tree.map(
            lambda p: "soap" if jnp.ndim(p) == 2 else "adam", params))


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
        del params, extra_args

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
    gradients' dtype.
    """
    check_float("learning_rate", learning_rate)
    check_unit_interval("b1", b1)
    check_float("weight_decay", weight_decay, strict=False, allow_schedule=False)
    mu_dtype = _check_dtype("mu_dtype", mu_dtype)
    return _lr_chain(_scale_by_sign_momentum(b1, mu_dtype), weight_decay, learning_rate)
