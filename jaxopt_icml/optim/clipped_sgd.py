r"""Clipped SGD with a schedule of the clipping threshold, per-step or per-example.

Stochastic gradient descent on a finite sum :math:`F_N(x) = \frac1N\sum_i f(x, \xi_i)` whose
stochastic gradient is clipped to the ball of radius :math:`\lambda_t` before the step:

.. math::

    x_{t+1} = x_t - \gamma_t\,\mathrm{clip}(g_t, \lambda_t), \qquad
    \mathrm{clip}(g, \lambda) = \min\Big(1, \frac{\lambda}{\|g\|}\Big)\, g,

with :math:`\|\cdot\|` the global Euclidean norm over every leaf of the gradient pytree. Under
heavy-tailed data the empirical second moment of the per-sample gradients at the optimum grows
with the dataset size :math:`N` (like :math:`N^{2/\alpha - 1}` for tail index
:math:`\alpha \in (1, 2)`), and so do the guarantees of plain SGD; the clipped step has second
moment at most :math:`\lambda_t^2` whatever the data (see :func:`empirical_second_moment` and
``experiments/optim/clipped_sgd.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import check_float, compute_dtype, resolve
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "clipped_sgd",
    "scale_by_clipped_sgd",
    "clip_by_global_norm_schedule",
    "power_schedule",
    "empirical_second_moment",
    "ClippedSGDState",
]

PyTree = Any


class ClippedSGDState(NamedTuple):
    """State of :func:`clipped_sgd` and :func:`scale_by_clipped_sgd`.

    Attributes:
      count: number of updates made so far, int32 scalar; schedules of the step size and of the
        threshold are evaluated at it.
    """

    count: jax.Array


# --------------------------------------------------------------------------- helpers


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else jnp.asarray(x).dtype


def _ct(x):
    return compute_dtype(_dtype(x))


def _norm_dtype(leaves):
    """float32, or float64 when some leaf is float64 (x64 mode)."""
    dt = jnp.dtype(jnp.float32)
    for x in leaves:
        dt = jnp.promote_types(dt, _ct(x))
    return dt


def _sq_norm(leaves, dt, axis_from: int = 0):
    """Sum of squares of every leaf in ``dt``, over the axes ``>= axis_from``."""
    total = jnp.zeros((), dt)
    for x in leaves:
        x = jnp.asarray(x).astype(dt)
        axes = tuple(range(axis_from, x.ndim))
        total = total + jnp.sum(jnp.square(x), axis=axes)
    return total


def _safe_norm(sq):
    """``sqrt(sq)`` with a finite derivative at 0 (so gradients through a zero update exist)."""
    pos = sq > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, jnp.ones_like(sq))), jnp.zeros_like(sq))


def _clip_factor(norm, lam):
    """``min(1, lam / norm)`` without division by zero (a zero gradient gives 1)."""
    over = norm > lam
    return jnp.where(over, lam / jnp.where(over, norm, jnp.ones_like(norm)), jnp.ones_like(norm))


def _check_static(per_example):
    if not isinstance(per_example, bool):
        raise ValueError(f"per_example must be a bool, got {per_example!r}")


def _check_per_example(updates, leaves, params):
    shapes = [jnp.shape(x) for x in leaves]
    if leaves and (any(len(s) < 1 for s in shapes) or len({s[0] for s in shapes}) != 1):
        raise ValueError(
            "per_example=True expects every gradient leaf to carry the same leading example "
            f"axis, got shapes {shapes}")
    # each leaf must be (batch, *param.shape): compare what follows the example axis
    per_example = jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x)[1:], _dtype(x)),
                               updates)
    check_same_shapes("updates (per_example=True: the shapes after the leading axis)",
                      per_example, "params", params, context="clipped_sgd")


def _make_update(learning_rate, clip_threshold, per_example):
    """The shared update: one norm, then one scaled pass over the leaves."""

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        leaves, treedef = jax.tree.flatten(updates)
        if not per_example:  # trace-time check (shapes are static)
            check_same_shapes("updates", updates, "params", params, context="clipped_sgd")
        dt = _norm_dtype(leaves)
        lam = resolve(clip_threshold, state.count, dt)
        scale = None if learning_rate is None else -resolve(learning_rate, state.count, dt)
        if per_example:
            _check_per_example(updates, leaves, params)
            batch = leaves[0].shape[0] if leaves else 1
            norms = _safe_norm(_sq_norm(leaves, dt, axis_from=1))  # (batch,)
            weights = _clip_factor(norms, lam) / jnp.asarray(batch, dt)
            if scale is not None:
                weights = weights * scale
            out = [jnp.tensordot(weights.astype(_ct(x)), jnp.asarray(x).astype(_ct(x)),
                                 axes=1).astype(_dtype(x)) for x in leaves]
        else:
            factor = _clip_factor(_safe_norm(_sq_norm(leaves, dt)), lam)
            if scale is not None:
                factor = scale * factor
            out = [(jnp.asarray(x).astype(_ct(x)) * factor.astype(_ct(x))).astype(_dtype(x))
                   for x in leaves]
        return treedef.unflatten(out), ClippedSGDState(count=optax.safe_increment(state.count))

    return update_fn


def _init_fn(params):
    del params
    return ClippedSGDState(count=jnp.zeros([], jnp.int32))


# --------------------------------------------------------------------------- direction form


def scale_by_clipped_sgd(
    clip_threshold: optax.ScalarOrSchedule = 1.0,
    *,
    per_example: bool = False,
) -> optax.GradientTransformationExtraArgs:
    r"""Clips the gradient to global norm :math:`\lambda_t` (the direction of clipped SGD).

    Returns :math:`\mathrm{clip}(g, \lambda_t) = \min(1, \lambda_t/\|g\|)\,g` (not yet a descent
    step), with :math:`\lambda_t` = ``clip_threshold`` evaluated at the update count when it is
    a schedule. With a float threshold and ``per_example=False`` this is
    ``optax.clip_by_global_norm(clip_threshold)`` (equal up to rounding, tested); what it adds is
    the schedule of :math:`\lambda_t` (optax's has no count in its state) and the per-example
    mode. ``clip_by_global_norm_schedule`` is another name for this function. Arguments are
    those of :func:`clipped_sgd`.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` with state :class:`ClippedSGDState`.
    """
    check_float("clip_threshold", clip_threshold)
    _check_static(per_example)
    return optax.GradientTransformationExtraArgs(
        _init_fn, _make_update(None, clip_threshold, per_example))


clip_by_global_norm_schedule = scale_by_clipped_sgd


# --------------------------------------------------------------------------- alias


def clipped_sgd(
    learning_rate: optax.ScalarOrSchedule,
    clip_threshold: optax.ScalarOrSchedule = 1.0,
    *,
    per_example: bool = False,
) -> optax.GradientTransformationExtraArgs:
    r"""Clipped SGD (Shestakov, Takac and Gorbunov, ICML 2026): a step on the clipped gradient.

    .. math::

        u_t = -\gamma_t \min\Big(1, \frac{\lambda_t}{\|g_t\|}\Big)\, g_t, \qquad
        \text{(per example)}\quad
        u_t = -\frac{\gamma_t}{B}\sum_{b=1}^{B} \min\Big(1, \frac{\lambda_t}{\|g_{t,b}\|}\Big)
            g_{t,b},

    where :math:`\gamma_t` = ``learning_rate`` and :math:`\lambda_t` = ``clip_threshold`` (floats,
    or schedules of the update count ``t = 0, 1, ...``, e.g. :func:`power_schedule`) and the norm
    is the global Euclidean norm over all leaves. The default mode clips the gradient handed to
    ``update`` (a minibatch mean); ``per_example=True`` expects per-example gradients, each leaf
    with a leading batch axis of the same size ``B`` (e.g. from ``jax.vmap(jax.grad(loss))``),
    clips every example by its own global norm and returns the mean (params-shaped updates).

    One norm and one scaled pass over the leaves: ``clipped_sgd(lr, lam)`` equals
    ``optax.chain(optax.clip_by_global_norm(lam), optax.sgd(lr))`` up to rounding, and
    ``optax.sgd(lr)`` bitwise when no gradient exceeds :math:`\lambda` (both tested). A zero
    gradient gives a zero update (no division by zero).

    Wrappers: works inside ``optax.chain``, ``inject_hyperparams`` (both floats are injectable),
    ``MultiSteps``, ``masked`` and ``apply_if_finite``. In per-example mode the incoming updates
    are not params-shaped, so put it first in a chain and do not wrap it in ``MultiSteps`` or
    ``masked`` (which expect params-shaped gradients); clip first, then accumulate.

    Args:
      learning_rate: step size :math:`\gamma_t > 0`; a float (injectable) or a schedule of the
        update count (e.g. ``power_schedule(1.0, -1.0)`` for :math:`1/(t+1)`).
      clip_threshold: clipping level :math:`\lambda_t > 0` (default 1.0); a float or a schedule
        (e.g. ``power_schedule(lam0, 1 / alpha)`` for :math:`\lambda_0 (t+1)^{1/\alpha}`). A
        huge value disables clipping (plain SGD).
      per_example: clip each example's gradient separately and average (default ``False``:
        clip the given gradient). Static bool, keyword-only.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; ``update(grads, state, params=None,
      **extra)`` ignores unknown keywords. ``params`` is only used to check shapes: when it is
      given, the updates (after the leading example axis in per-example mode) must have its
      tree structure and leaf shapes, or a ``ValueError`` names the first leaf that differs.
      State :class:`ClippedSGDState` ``(count,)``. Arithmetic happens in float32 for 16-bit
      leaves (the norm is accumulated in float32, or float64 under x64) and the updates keep
      each leaf's dtype.

    Example:
      >>> import jax, jax.numpy as jnp, optax
      >>> from jaxopt_icml.optim.clipped_sgd import clipped_sgd, power_schedule
      >>> opt = clipped_sgd(power_schedule(1.0, -1.0), clip_threshold=3.0)
      >>> x = jnp.zeros(2)
      >>> state = opt.init(x)
      >>> u, state = opt.update(jnp.array([30.0, 40.0]), state)   # norm 50 -> clipped to 3
      >>> [round(float(v), 4) for v in u]
      [-1.8, -2.4]

    Paper mapping:
      The paper (abstract only public) analyses SGD with clipping on finite sums of heavy-tailed
      data "for broad step-size and clipping schedules"; its exact schedules are not public.
      :math:`\gamma_t` -> ``learning_rate``, :math:`\lambda_t` -> ``clip_threshold``; our
      defaults in the experiment are :math:`\gamma_t = 1/(t+1)` (:math:`\mu = 1`) and a
      constant :math:`\lambda = 3` or :math:`\lambda_t = 3 (t+1)^{1/\alpha}`. The clipped
      quantity is one sampled gradient :math:`\nabla f(x_t, \xi_{i_t})` (``per_example=False``
      with batch size 1); the per-example mode is the minibatch generalisation (clip, then
      average), as in ``optax.contrib.differentially_private_aggregate`` without noise.

    Theory:
      With tail index :math:`\alpha \in (1, 2)` the empirical second moment
      :math:`\frac1N\sum_i\|\nabla f(x_\star, \xi_i)\|^2` grows like :math:`N^{2/\alpha-1}`, and
      with it the error of SGD to the ERM solution, while clipped SGD's does not grow; the tail
      of :math:`\|x_T - x_\star\|^2` over datasets is lighter with clipping. Checked by
      ``experiments/optim/clipped_sgd.py`` (``CLAIMS``) and ``tests/optim/test_clipped_sgd.py``.

    References:
      Aleksandr Shestakov, Martin Takac, Eduard Gorbunov, "From Optimization to Generalization
      under Heavy-Tailed Data: The Role of Gradient Clipping", ICML 2026.
      Eduard Gorbunov, Marina Danilova, Alexander Gasnikov, "Stochastic Optimization with
      Heavy-Tailed Noise via Accelerated Gradient Clipping", NeurIPS 2020, arXiv:2005.10785.
    """
    check_float("learning_rate", learning_rate)
    check_float("clip_threshold", clip_threshold)
    _check_static(per_example)
    return optax.GradientTransformationExtraArgs(
        _init_fn, _make_update(learning_rate, clip_threshold, per_example))


# --------------------------------------------------------------------------- schedules


def power_schedule(init_value: float, power: float, *, offset: float = 1.0) -> Callable:
    r"""The schedule :math:`t \mapsto v_0 (t + c)^{p}` (``init_value``, ``power``, ``offset``).

    ``power_schedule(1 / mu, -1.0)`` is the step size :math:`1/(\mu(t+1))`;
    ``power_schedule(lam0, 1 / alpha)`` the growing threshold :math:`\lambda_0(t+1)^{1/\alpha}`.

    Args:
      init_value: :math:`v_0 > 0`.
      power: any finite float :math:`p`.
      offset: :math:`c > 0` (default 1), so the value at ``t = 0`` is :math:`v_0 c^p`.

    Returns:
      ``schedule(count) -> array`` in JAX's default float dtype (float32; float64 under x64).
    """
    check_float("init_value", init_value, allow_schedule=False)
    check_float("power", power, low=-float("inf"), strict=False, allow_schedule=False)
    check_float("offset", offset, allow_schedule=False)

    v0, p, c = float(init_value), float(power), float(offset)

    def schedule(count):
        # Python floats with an int32 count give JAX's default float: float32, or float64
        # under x64 (so float64 runs are not rounded through float32 hyperparameters).
        return v0 * (jnp.asarray(count) + c) ** p

    return schedule


# --------------------------------------------------------------------------- statistics


def empirical_second_moment(grad_fn: Callable, x: PyTree, examples: PyTree, *,
                            batch_size: int | None = None) -> jax.Array:
    r"""Empirical second moment :math:`\sigma_N^2 = \frac1N\sum_i\|\nabla f(x, \xi_i)\|^2`.

    At :math:`x = x_\star` (or the ERM solution) this is the variance-like constant that enters
    finite-sum SGD bounds; under heavy tails it grows with :math:`N`.

    Args:
      grad_fn: ``grad_fn(x, example) -> gradient pytree`` for ONE example.
      x: the point, a pytree.
      examples: a pytree whose leaves share a leading axis of size :math:`N` (e.g. an
        ``(N, d)`` array, or the ``examples`` of a ``problems.heavy_tailed`` problem).
      batch_size: examples per vectorised chunk (``jax.lax.map``'s ``batch_size``), to bound
        memory for large :math:`N`; ``None`` (default) vectorises all at once. Static int >= 1.

    Returns:
      A scalar, accumulated in float64 under ``jax.enable_x64`` (float32 otherwise): with
      :math:`N = 10^6` float32 sums of heavy-tailed squares lose visible precision.
    """
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise ValueError(f"batch_size must be None or an int >= 1, got {batch_size!r}")
    if not callable(grad_fn):
        raise ValueError(f"grad_fn must be callable, got {grad_fn!r}")
    dt = jnp.dtype(jnp.float64) if jax.config.jax_enable_x64 else jnp.dtype(jnp.float32)

    def one(example):
        return _sq_norm(jax.tree.leaves(grad_fn(x, example)), dt)

    sq = jax.lax.map(one, examples, batch_size=batch_size)
    return jnp.mean(sq)
