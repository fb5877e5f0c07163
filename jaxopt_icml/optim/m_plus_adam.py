r"""M+Adam: additive plus multiplicative Adam steps with low-precision master weights.

Weights and optimizer state live in a low-precision format (BF16, FP8 e4m3/e5m2, FP4 e2m1) with
no FP32 copy. An additive Adam step :math:`\eta_A u_A` is lost to rounding wherever it is below
half a unit in the last place (ulp) of the weight, so large weights freeze; a multiplicative
(Madam-like) step :math:`w\,2^{-\eta_M u_M}` moves every weight by a fixed *relative* amount but
can never cross zero. M+Adam applies both in one step and rounds once:

.. math:: w_{t+1} = Q\big(w_t\, 2^{-\eta_M u_M} - \eta_A u_A\big).

This module also holds the multiplicative-only baseline :func:`madam`. The rounding onto a
storage format (nearest-even or stochastic, per-tensor power-of-two scales for FP8/FP4) is in
:mod:`jaxopt_icml.optim.formats` (:func:`~jaxopt_icml.optim.formats.round_to_format`,
:func:`~jaxopt_icml.optim.formats.quantize`, :func:`~jaxopt_icml.optim.formats.dequantize`,
:func:`~jaxopt_icml.optim.formats.tensor_scale`).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_dtypes
import optax

from jaxopt_icml.hyperparams import (
    check_float,
    check_float_dtype,
    check_unit_interval,
    compute_dtype,
    resolve,
)
from jaxopt_icml.optim.formats import (
    FORMATS,
    _as_stored,
    _format,
    _holds,
    _random_bits,
    _round_values,
    tensor_scale,
)
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "m_plus_adam",
    "madam",
    "MPlusAdamState",
    "MadamState",
]

PyTree = Any
_LN2 = math.log(2.0)

# --------------------------------------------------------------------------- validation


def _check_common(eps, w_max, param_dtype, state_dtype, rounding, per_tensor_scale, key):
    check_float("eps", eps, allow_schedule=False)
    check_float("w_max", w_max, allow_none=True, allow_schedule=False)
    for name, value in (("param_dtype", param_dtype), ("state_dtype", state_dtype)):
        check_float_dtype(name, value)  # refuses the array inject_hyperparams makes of a type
    fmt = None if param_dtype is None else _format(param_dtype, "param_dtype")
    sdt = None
    if state_dtype is not None:
        try:
            sdt = jnp.dtype(state_dtype)
        except TypeError:
            sdt = None
        if sdt is None or sdt not in FORMATS or ml_dtypes.finfo(sdt).bits < 16:
            raise ValueError("state_dtype must be None or a float dtype of at least 16 bits "
                             f"(bfloat16, float16, float32, float64), got {state_dtype!r}")
    if rounding not in ("nearest", "stochastic"):
        raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {rounding!r}")
    if per_tensor_scale is not None and not isinstance(per_tensor_scale, bool):
        raise ValueError(f"per_tensor_scale must be None or a bool, got {per_tensor_scale!r}")
    if rounding == "stochastic":
        if key is None:
            raise ValueError("key is required with rounding='stochastic' (a jax.random.key)")
        dt = getattr(key, "dtype", None)
        typed = dt is not None and jnp.issubdtype(dt, jax.dtypes.prng_key)
        raw = dt == jnp.uint32 and tuple(getattr(key, "shape", ())) == (2,)
        if not (typed or raw):
            raise ValueError(f"key must be a PRNG key (jax.random.key or PRNGKey), got {key!r}")
    return fmt, sdt


# --------------------------------------------------------------------------- shared machinery


class _Leaf(NamedTuple):
    """Static per-leaf storage plan."""

    fmt: jnp.dtype      # the grid the stored weight lies on
    scaled: bool        # per-tensor power-of-two scale
    state: jnp.dtype    # moment dtype


def _plan(p, fmt, sdt, per_tensor_scale) -> _Leaf:
    leaf = jnp.dtype(p.dtype)
    if not jnp.issubdtype(leaf, jnp.floating) or leaf not in FORMATS:
        raise ValueError(f"m_plus_adam/madam need floating-point parameters of a dtype in "
                         f"FORMATS, got a leaf of dtype {leaf}")
    f = leaf if fmt is None else fmt
    if f != leaf and not _holds(leaf, f):
        raise ValueError(f"param_dtype={f.name} is wider than a parameter leaf of dtype "
                         f"{leaf.name}: the stored weight would not fit in the leaf")
    if f == leaf and ml_dtypes.finfo(leaf).bits <= 8:
        scaled = False  # the leaf holds the codes themselves: no room for a scale
    elif per_tensor_scale is None:
        scaled = ml_dtypes.finfo(f).bits <= 8
    else:
        scaled = per_tensor_scale
    s = sdt if sdt is not None else (leaf if ml_dtypes.finfo(leaf).bits >= 16
                                     else jnp.dtype(jnp.bfloat16))
    return _Leaf(jnp.dtype(f), bool(scaled and f != compute_dtype(leaf)), jnp.dtype(s))


def _store(new, w, plan: _Leaf, w_max, rbits):
    """Rounds the exact new weight ``new`` (compute dtype) onto the storage grid and returns
    the update ``Q(new) - w`` in the leaf dtype of ``w``."""
    ct = new.dtype
    if w_max is not None:
        wm = jnp.asarray(w_max, ct)
        new = jnp.clip(new, -wm, wm)
    if plan.fmt == ct:
        stored = new
    elif plan.scaled:
        s = tensor_scale(new, plan.fmt)
        stored = _round_values(new / s, plan.fmt, rbits) * s
    else:
        stored = _round_values(new, plan.fmt, rbits)
    return (stored - w.astype(ct)).astype(w.dtype)


def _leaf_keys(key, n):
    if key is None:
        return None, [None] * n
    key, sub = jax.random.split(key)
    return key, list(jax.random.split(sub, n)) if n else []


def _flatten_like(treedef, *trees):
    return [treedef.flatten_up_to(t) for t in trees]


# --------------------------------------------------------------------------- M+Adam


class MPlusAdamState(NamedTuple):
    """State of :func:`m_plus_adam`.

    Attributes:
      count: number of updates made so far, int32 scalar.
      mu_add, nu_add: first and second moments of the additive path's gradient (``g``; in the
        mantissa/exponent form ``2^e g``), params-shaped, in each leaf's state dtype.
      mu_mul, nu_mul: moments of the multiplicative path's gradient ``g_e = w ln2 g``.
      key: PRNG key for stochastic rounding (``None`` with ``rounding="nearest"``).
    """

    count: jax.Array
    mu_add: PyTree
    nu_add: PyTree
    mu_mul: PyTree
    nu_mul: PyTree
    key: jax.Array | None


@functools.partial(jax.jit, static_argnames=("plan", "form", "caps"))
def _m_plus_adam_leaf(g, w, m_a, v_a, m_m, v_m, key, hp, *, plan, form, caps):
    """One leaf of :func:`m_plus_adam` (jitted once per shape and static plan, so eager use and
    fresh transformations reuse the compiled kernel). ``hp`` = (eta_A, eta_M, b1, b2, eps, t,
    max_abs_step, max_rel_step, w_max) in the compute dtype; ``caps`` flags the last three."""
    ct = hp.dtype
    eta_a, eta_m, beta1, beta2, epsilon, tc = (hp[i] for i in range(6))
    # bias corrections as scalar reciprocals: one vector division per path, not two (the
    # update loop is compute-bound on CPUs; rounding differs from m/bc1 by <= 1 ulp)
    inv_bc1, inv_bc2 = 1 / (1 - beta1 ** tc), 1 / (1 - beta2 ** tc)
    g32, w32 = g.astype(ct), w.astype(ct)
    if form == "mantissa_exponent":
        mant, ex = jnp.frexp(w32)
        g_add = jnp.ldexp(g32, ex)
    else:
        g_add = g32
    g_mul = w32 * jnp.asarray(_LN2, ct) * g32

    def adam(x, m, v):
        # the direction reads the moments as stored (rounded to the state dtype): the state
        # is the optimizer's only memory, and the update loop then reads the new moments
        # instead of recomputing them from the old ones (which, when the step donates its
        # state, makes XLA:CPU copy every moment before overwriting it)
        m = _as_stored(beta1 * m.astype(ct) + (1 - beta1) * x, plan.state)
        v = _as_stored(beta2 * v.astype(ct) + (1 - beta2) * x * x, plan.state)
        u = (m.astype(ct) * inv_bc1) / (jnp.sqrt(v.astype(ct) * inv_bc2) + epsilon)
        return u, m, v

    u_a, m_a, v_a = adam(g_add, m_a, v_a)
    u_m, m_m, v_m = adam(g_mul, m_m, v_m)
    step_a, step_m = eta_a * u_a, eta_m * u_m
    if caps[0]:
        step_a = jnp.clip(step_a, -hp[6], hp[6])
    if caps[1]:
        step_m = jnp.clip(step_m, -hp[7], hp[7])
    if form == "mantissa_exponent":
        new = jnp.ldexp(mant - step_a, ex) * jnp.exp2(-step_m)
    else:
        new = w32 * jnp.exp2(-step_m) - step_a
    rbits = None if key is None else _random_bits(key, jnp.shape(w), ct)
    return _store(new, w, plan, hp[8] if caps[2] else None, rbits), m_a, v_a, m_m, v_m


def m_plus_adam(
    learning_rate_add: optax.ScalarOrSchedule = 3e-3,
    learning_rate_mul: optax.ScalarOrSchedule = 1e-2,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    *,
    max_abs_step: float | None = None,
    max_rel_step: float | None = None,
    w_max: float | None = None,
    param_dtype=None,
    state_dtype=None,
    rounding: str = "nearest",
    per_tensor_scale: bool | None = None,
    form: str = "combined",
    key: jax.Array | None = None,
) -> optax.GradientTransformationExtraArgs:
    r"""M+Adam (Liang, Loeschcke, Toftrup, Anandkumar, ICML 2026) with low-precision weights.

    With :math:`g = \nabla l(w_t)` and :math:`g_e = w_t \ln 2\, g` (the gradient with respect to
    the exponent :math:`e` of :math:`w = m 2^e`), two Adam directions share ``b1, b2, eps``:

    .. math::

        \mu \leftarrow \beta_1 \mu + (1-\beta_1) x, \quad
        \nu \leftarrow \beta_2 \nu + (1-\beta_2) x^2, \quad
        u = \frac{\mu / (1-\beta_1^t)}{\sqrt{\nu / (1-\beta_2^t)} + \epsilon}

    (:math:`x = g` gives :math:`u_A`, :math:`x = g_e` gives :math:`u_M`), optionally capped,
    :math:`|\eta_A u_A| \le` ``max_abs_step``, :math:`|\eta_M u_M| \le` ``max_rel_step``. Then

    .. math::

        \texttt{combined:}\quad & w_{t+1} = Q\big(\mathrm{clip}_{w_{\max}}(
            w_t\, 2^{-\eta_M u_M} - \eta_A u_A)\big), \\
        \texttt{mantissa\_exponent:}\quad & w_{t+1} = Q\big(\mathrm{clip}_{w_{\max}}(
            (m - \eta_A u_A)\, 2^{e - \eta_M u_M})\big),

    where in the second form :math:`w_t = m 2^e` with the frexp exponent :math:`e` (so
    :math:`m \in [\tfrac12, 1)`) and :math:`u_A` is the Adam direction of :math:`g_m = 2^e g`.
    :math:`Q` rounds once onto the storage grid (nearest-even or stochastic): the leaf's own
    dtype, or ``param_dtype`` times a per-tensor power-of-two scale. The additive step moves
    zero and crosses signs; the multiplicative step moves large weights by a fixed relative
    amount where :math:`\eta_A |u_A|` is below half an ulp and rounds away.

    **Storage.** With ``param_dtype=None`` the weights are stored in the parameter leaves' own
    dtype: bfloat16 leaves ARE BF16 master weights (no float32 copy anywhere, the state is in
    ``state_dtype``), float8/float4 leaves hold the codes directly (unscaled). With a narrower
    ``param_dtype`` (e.g. ``jnp.float8_e4m3fn`` with bfloat16 or float32 leaves) every stored
    value is :math:`s\,c` with :math:`c` in the format and :math:`s = 2^k` the per-tensor scale of
    :func:`~jaxopt_icml.optim.formats.tensor_scale` (recomputed at every step from the new
    weights: it is part of the master weight, one integer per tensor), and the leaf is only a
    container: :func:`~jaxopt_icml.optim.formats.quantize` with
    :func:`~jaxopt_icml.optim.formats.tensor_scale` turns it into one-byte (FP8) or half-byte
    (FP4) codes and :func:`~jaxopt_icml.optim.formats.dequantize` back, losslessly (tested).
    FP8/FP4 without the scale underflow.

    **Exactness of ``optax.apply_updates``.** The update returned is ``Q(new) - w`` computed in
    float32 (float64 for float64 leaves) and cast to the leaf dtype; ``apply_updates`` adds it
    in the leaf dtype. The result is exactly ``Q(new)`` whenever ``Q(new) - w`` is
    representable in the leaf dtype: always when ``Q(new)`` and ``w`` have the same sign and
    lie within a factor 2 of each other (Sterbenz) or either is 0, i.e. for every step with
    :math:`|\eta_A u_A| \le |w|/2` and :math:`\eta_M |u_M| \le 1`, and for emulated formats
    (``param_dtype`` narrower than the leaf) whenever the exponents of ``w`` and ``Q(new)``
    differ by at most the leaf's spare mantissa bits (16 for BF16 in float32). Otherwise (a
    weight crossing zero or shrinking by more than half in one step) the stored weight is
    within one ulp of ``max(|w|, |Q(new)|)`` of ``Q(new)``. Both are tested.

    Args:
      learning_rate_add: :math:`\eta_A \ge 0`, the additive step (float or optax schedule of
        the update count; injectable). Default 3e-3. ``0`` gives Madam-style multiplicative-only
        updates with Adam momentum.
      learning_rate_mul: :math:`\eta_M \ge 0`, the multiplicative step in base-2 log units
        (float or schedule; injectable). Default 1e-2. ``0`` gives Adam with rounding
        (``optax.adam`` exactly for float32 leaves, state and storage; tested).
      b1: :math:`\beta_1 \in [0, 1)`, default 0.9 (float; injectable).
      b2: :math:`\beta_2 \in [0, 1)`, default 0.999 (float; injectable). With a bfloat16 state
        :math:`\nu` moves only when :math:`g^2` differs from it by more than about 2x (its
        increments are below half an ulp): a pure-BF16 optimizer state; use
        ``state_dtype=jnp.float32`` for exact moments.
      eps: :math:`\epsilon > 0` (default 1e-8); zero gradients give :math:`u = 0`, never NaN.
        Float, not a schedule.
      max_abs_step: ``None`` (default) or a cap :math:`> 0` on :math:`\eta_A |u_A|`. Float,
        keyword-only (as are all following arguments).
      max_rel_step: ``None`` (default) or a cap :math:`> 0` on :math:`\eta_M |u_M|` (the base-2
        logarithm of the per-step factor).
      w_max: ``None`` (default) or :math:`w_{\max} > 0`, clipping :math:`|w|` before rounding.
      param_dtype: the storage format, ``None`` (default: each leaf's own dtype) or one of
        :data:`~jaxopt_icml.optim.formats.FORMATS` no wider than the leaves (static;
        ``ValueError`` at ``init`` otherwise).
      state_dtype: dtype of the four moments: ``None`` (default: the leaf dtype, bfloat16 for
        8-bit and narrower leaves) or a float dtype of at least 16 bits. Static.
      rounding: ``"nearest"`` (default, ties to even) or ``"stochastic"`` (needs ``key``).
        Applies to the weights; the moments are always rounded to nearest. Static.
      per_tensor_scale: ``None`` (default: on for 8-bit and narrower formats stored in a wider
        leaf), ``True`` or ``False``. Static bool.
      form: ``"combined"`` (default) or ``"mantissa_exponent"`` (the workshop paper's
        decomposition; its additive step scales with :math:`2^e`). Static.
      key: PRNG key for ``rounding="stochastic"``, kept in the state and split at every update.

    Wrappers: under ``optax.inject_hyperparams`` the floats (``learning_rate_add``,
    ``learning_rate_mul``, ``b1``, ``b2``, ``eps`` and the caps) are injectable and nothing
    needs ``static_args``, except ``param_dtype``/``state_dtype`` when given as scalar types
    such as ``jnp.bfloat16``: a type is callable and the wrapper would take it for a schedule,
    so give ``jnp.dtype(jnp.bfloat16)`` or list it in ``static_args``.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; ``update(grads, state, params, **extra)``
      requires ``params`` and returns updates in each leaf's dtype; it raises a
      ``ValueError`` naming the leaf when the updates, the params and the state disagree in
      tree structure or leaf shape. State: :class:`MPlusAdamState`.

    Example:
      >>> import jax, jax.numpy as jnp, optax
      >>> from jaxopt_icml.optim.m_plus_adam import m_plus_adam
      >>> w = jnp.array([40.0, -0.004, 3.0], jnp.bfloat16)
      >>> loss = lambda p: 0.5 * jnp.sum((p.astype(jnp.float32) - jnp.array([30., 0.01, 3.])) ** 2)
      >>> opt = m_plus_adam(1e-2, 1e-2)
      >>> state = opt.init(w)
      >>> for _ in range(3):
      ...     u, state = opt.update(jax.grad(loss)(w), state, w)
      ...     w = optax.apply_updates(w, u)
      >>> w.dtype, bool(w[0] < 40.0), bool(w[1] > -0.004)  # 40 moves; Adam alone keeps 40
      (dtype(bfloat16), True, True)

    Paper mapping:
      :math:`\eta_A, \eta_M` -> ``learning_rate_add``, ``learning_rate_mul``;
      :math:`\beta_1, \beta_2, \epsilon` -> ``b1, b2, eps`` (shared by both paths);
      :math:`\eta^*_m/\eta_m`, :math:`\eta^*_e/\eta_e` clamps -> ``max_abs_step``,
      ``max_rel_step`` (caps on the step, equivalent to the paper's clamp of the direction);
      :math:`w_{\max}` -> ``w_max``; :math:`Q` -> ``param_dtype`` + ``rounding``. The ICML
      paper's combined equation is not public: the default ``form="combined"`` is our reading
      of its abstract (additive and multiplicative steps applied together, rounded once), and
      ``form="mantissa_exponent"`` is the workshop paper's update of :math:`m` and :math:`e`
      (equations from a third-party summary). Per-tensor power-of-two scaling for FP8/FP4 is our
      choice (the paper's scaling scheme is not public). The direction uses the moments as
      stored, rounded to ``state_dtype`` (a pure low-precision state: nothing wider survives
      the step; ``optax.adam`` with ``mu_dtype`` instead uses the unrounded new moment);
      reading the stored moments also lets a donated step update them in place, with no copy.

    Theory:
      (1) Stagnation: in BF16 an additive step below half an ulp rounds away (``optax.adam``
      with :math:`\eta = 10^{-2}` never changes a weight with :math:`|w| \ge 16`), while M+Adam
      moves them; (2) complementarity: M+Adam reaches a far lower loss than BF16 Adam, and
      Madam, which never changes a sign, plateaus; (3) monotone descent for small steps on a
      smooth objective; (4) the same in FP8. Checked by ``experiments/optim/m_plus_adam.py``
      (``CLAIMS``) and ``tests/optim/test_m_plus_adam.py``.

    References:
      Xiaoyuan Liang, Sebastian Loeschcke, Mads Toftrup, Anima Anandkumar, "M+Adam: additive
      plus multiplicative updates for low-precision training", ICML 2026; workshop version
      "M+Adam: Stable Low-Precision Training with Combined Adam-Madam Updates", OPT 2025.
      Jeremy Bernstein, Jiawei Zhao, Markus Meister, Ming-Yu Liu, Anima Anandkumar, Yisong Yue,
      "Learning compositional functions via multiplicative weight updates", NeurIPS 2020,
      arXiv:2006.14560.
    """
    check_float("learning_rate_add", learning_rate_add, strict=False)
    check_float("learning_rate_mul", learning_rate_mul, strict=False)
    check_unit_interval("b1", b1)
    check_unit_interval("b2", b2)
    check_float("max_abs_step", max_abs_step, allow_none=True, allow_schedule=False)
    check_float("max_rel_step", max_rel_step, allow_none=True, allow_schedule=False)
    fmt, sdt = _check_common(eps, w_max, param_dtype, state_dtype, rounding, per_tensor_scale,
                             key)
    if form not in ("combined", "mantissa_exponent"):
        raise ValueError(f"form must be 'combined' or 'mantissa_exponent', got {form!r}")
    stochastic = rounding == "stochastic"

    def init_fn(params):
        plans = jax.tree.map(lambda p: _plan(p, fmt, sdt, per_tensor_scale), params)
        zeros = lambda: jax.tree.map(lambda p, pl: jnp.zeros(jnp.shape(p), pl.state),
                                     params, plans)
        return MPlusAdamState(count=jnp.zeros([], jnp.int32), mu_add=zeros(), nu_add=zeros(),
                              mu_mul=zeros(), nu_mul=zeros(),
                              key=key if stochastic else None)

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        if params is None:
            raise ValueError("m_plus_adam needs params: call update(grads, state, params)")
        check_same_shapes("updates", updates, "params", params, context="m_plus_adam")
        check_same_shapes("updates", updates, "state.mu_add", state.mu_add,
                          context="m_plus_adam")
        leaves, treedef = jax.tree.flatten(updates)
        ws, ma, va, mm, vm = _flatten_like(treedef, params, state.mu_add, state.nu_add,
                                           state.mu_mul, state.nu_mul)
        new_key, keys = _leaf_keys(state.key, len(leaves))
        t = optax.safe_increment(state.count)
        caps = (max_abs_step is not None, max_rel_step is not None, w_max is not None)
        outs = []
        for g, w, m_a, v_a, m_m, v_m, k in zip(leaves, ws, ma, va, mm, vm, keys, strict=True):
            plan = _plan(w, fmt, sdt, per_tensor_scale)
            ct = compute_dtype(jnp.dtype(w.dtype))
            hp = jnp.stack([resolve(v, state.count, ct) for v in (
                learning_rate_add, learning_rate_mul, b1, b2, eps, t,
                *(0.0 if c is None else c for c in (max_abs_step, max_rel_step, w_max)))])
            outs.append(_m_plus_adam_leaf(g, w, m_a, v_a, m_m, v_m, k, hp, plan=plan,
                                          form=form, caps=caps))
        col = lambda i: treedef.unflatten([o[i] for o in outs])
        return col(0), MPlusAdamState(count=t, mu_add=col(1), nu_add=col(2), mu_mul=col(3),
                                      nu_mul=col(4), key=new_key)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


# --------------------------------------------------------------------------- Madam


class MadamState(NamedTuple):
    """State of :func:`madam`: ``count`` (int32), the second moment ``nu`` of ``g`` and the
    stochastic-rounding ``key`` (``None`` for nearest rounding)."""

    count: jax.Array
    nu: PyTree
    key: jax.Array | None


@functools.partial(jax.jit, static_argnames=("plan", "caps"))
def _madam_leaf(g, w, v, key, hp, *, plan, caps):
    """One leaf of :func:`madam`; ``hp`` = (eta, b2, eps, t, max_rel_step, w_max)."""
    ct = hp.dtype
    eta, beta2, epsilon, tc = (hp[i] for i in range(4))
    g32, w32 = g.astype(ct), w.astype(ct)
    v = _as_stored(beta2 * v.astype(ct) + (1 - beta2) * g32 * g32, plan.state)
    gstar = g32 / (jnp.sqrt(v.astype(ct) * (1 / (1 - beta2 ** tc))) + epsilon)
    step = eta * jnp.sign(w32) * gstar
    if caps[0]:
        step = jnp.clip(step, -hp[4], hp[4])
    new = w32 * jnp.exp(-step)
    rbits = None if key is None else _random_bits(key, jnp.shape(w), ct)
    return _store(new, w, plan, hp[5] if caps[1] else None, rbits), v


def madam(
    learning_rate: optax.ScalarOrSchedule = 1e-2,
    b2: float = 0.999,
    eps: float = 1e-8,
    *,
    max_rel_step: float | None = None,
    w_max: float | None = None,
    param_dtype=None,
    state_dtype=None,
    rounding: str = "nearest",
    per_tensor_scale: bool | None = None,
    key: jax.Array | None = None,
) -> optax.GradientTransformationExtraArgs:
    r"""Madam (Bernstein et al., NeurIPS 2020): multiplicative updates, here in low precision.

    .. math::

        \nu \leftarrow \beta_2 \nu + (1-\beta_2) g^2, \qquad
        g^* = \frac{g}{\sqrt{\nu/(1-\beta_2^t)} + \epsilon}, \qquad
        w_{t+1} = Q\big(\mathrm{clip}_{w_{\max}}(w_t \exp(-\eta\, \mathrm{sign}(w_t)\, g^*))\big),

    with :math:`\eta |g^*|` optionally capped at ``max_rel_step``. Every step multiplies a weight
    by a positive factor, so signs never change and 0 is a fixed point: the failure mode M+Adam's
    additive path repairs. Storage, rounding and the exactness of ``optax.apply_updates`` are
    as in :func:`m_plus_adam` (same arguments).

    Args:
      learning_rate: :math:`\eta > 0` (float or schedule; injectable). Default 1e-2.
      b2: :math:`\beta_2 \in [0, 1)`, default 0.999.
      eps: :math:`\epsilon > 0`, default 1e-8 (the original divides by :math:`\sqrt{\nu}` and
        zeroes NaNs; the floor gives the same zero for zero gradients).
      max_rel_step, w_max, param_dtype, state_dtype, rounding, per_tensor_scale, key: as in
        :func:`m_plus_adam` (``max_rel_step`` caps :math:`\eta|g^*|`, natural-log units).

    Returns:
      An ``optax.GradientTransformationExtraArgs`` (needs ``params``; the same shape checks
      and use under ``optax.inject_hyperparams`` as :func:`m_plus_adam`) with state
      :class:`MadamState`.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> from jaxopt_icml.optim.m_plus_adam import madam
      >>> opt = madam(0.1)
      >>> w = jnp.array([2.0, -1.0])
      >>> u, s = opt.update(jnp.array([1.0, 1.0]), opt.init(w), w)
      >>> [round(float(x), 4) for x in optax.apply_updates(w, u)]  # 2 e^-0.1, -e^0.1
      [1.8097, -1.1052]

    Paper mapping:
      Bernstein et al.'s Madam without their default clamp at 3x the initial RMS of each tensor
      (``w_max`` is an absolute clamp, off by default) and with :math:`\epsilon` in the
      denominator. It is the multiplicative-only baseline of the M+Adam paper.

    References:
      Jeremy Bernstein, Jiawei Zhao, Markus Meister, Ming-Yu Liu, Anima Anandkumar, Yisong Yue,
      "Learning compositional functions via multiplicative weight updates", NeurIPS 2020,
      arXiv:2006.14560.
    """
    check_float("learning_rate", learning_rate)
    check_unit_interval("b2", b2)
    check_float("max_rel_step", max_rel_step, allow_none=True, allow_schedule=False)
    fmt, sdt = _check_common(eps, w_max, param_dtype, state_dtype, rounding, per_tensor_scale,
                             key)
    stochastic = rounding == "stochastic"

    def init_fn(params):
        nu = jax.tree.map(lambda p: jnp.zeros(jnp.shape(p),
                                              _plan(p, fmt, sdt, per_tensor_scale).state), params)
        return MadamState(count=jnp.zeros([], jnp.int32), nu=nu,
                          key=key if stochastic else None)

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        if params is None:
            raise ValueError("madam needs params: call update(grads, state, params)")
        check_same_shapes("updates", updates, "params", params, context="madam")
        check_same_shapes("updates", updates, "state.nu", state.nu, context="madam")
        leaves, treedef = jax.tree.flatten(updates)
        ws, vs = _flatten_like(treedef, params, state.nu)
        new_key, keys = _leaf_keys(state.key, len(leaves))
        t = optax.safe_increment(state.count)
        caps = (max_rel_step is not None, w_max is not None)
        outs = []
        for g, w, v, k in zip(leaves, ws, vs, keys, strict=True):
            plan = _plan(w, fmt, sdt, per_tensor_scale)
            ct = compute_dtype(jnp.dtype(w.dtype))
            hp = jnp.stack([resolve(x, state.count, ct) for x in (
                learning_rate, b2, eps, t, *(0.0 if c is None else c for c in (max_rel_step,
                                                                              w_max)))])
            outs.append(_madam_leaf(g, w, v, k, hp, plan=plan, caps=caps))
        col = lambda i: treedef.unflatten([o[i] for o in outs])
        return col(0), MadamState(count=t, nu=col(1), key=new_key)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)
