"""Shared helpers for hyperparameters: validation of floats and schedules, and compute dtypes.

Every algorithm validates its hyperparameters eagerly and the same way (CONTRIBUTING.md,
section 1):

* a float (or an optax schedule) is checked when it is concrete, with a ``ValueError`` that names
  the argument, the value and the allowed range; tracers (``optax.inject_hyperparams``, ``jit``)
  and schedules pass, since their values are only known inside the update;
* arithmetic on 16-bit leaves happens in float32 (:func:`compute_dtype`), then casts back.

Example::

    from jaxopt_icml.hyperparams import check_float, compute_dtype, concrete_float

    check_float("learning_rate", 0.1)                   # > 0, a float or a schedule
    check_float("momentum", 0.9, strict=False, high=1)  # in [0, 1]
    check_float("eps", 1e-8, allow_schedule=False)      # a float only
    check_float("inner_lr", None, allow_none=True)      # None means "use the default"
    check_unit_interval("b1", 0.9)                      # in [0, 1): decay rates
    check_static_int("ns_steps", 5, low=1)              # loop counts and shapes: static ints
    check_static_ints("deva", ns_steps=(None, 5))       # all of a constructor's, None = default
    check_float_dtype("mu_dtype", jnp.bfloat16)         # a floating dtype (or None)
    check_bool("nesterov", True)
    check_choice("form", "combined", ("combined", "mantissa_exponent"))
    resolve(schedule_or_float, count, jnp.float32)       # the value at update ``count``
    compute_dtype(jnp.bfloat16)                          # float32
    concrete_float(jnp.asarray(0.5))                     # 0.5; None under jit or for schedules
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "check_bool",
    "check_choice",
    "check_float",
    "check_float_dtype",
    "check_static_int",
    "check_static_ints",
    "check_unit_interval",
    "cast_like",
    "compute_dtype",
    "concrete_float",
    "leaf_dtype",
    "resolve",
    "to_compute",
]


def compute_dtype(dtype) -> jnp.dtype:
    """The dtype to compute in for leaves of ``dtype``.

    float32 for floating dtypes narrower than 32 bits (bfloat16, float16, float8 ...), so that
    updates do not lose their small terms; otherwise ``dtype`` itself (float32, float64, ints,
    complex). Cast results back to the leaf's dtype afterwards.
    """
    dtype = jnp.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits < 32:
        return jnp.dtype(jnp.float32)
    return dtype


def leaf_dtype(x) -> jnp.dtype:
    """The dtype of a leaf: ``x.dtype``, or that of ``jnp.asarray(x)`` for Python scalars."""
    return x.dtype if hasattr(x, "dtype") else jnp.asarray(x).dtype


def to_compute(tree):
    """Every leaf of ``tree`` as an array in its compute dtype (:func:`compute_dtype`)."""
    return jax.tree.map(lambda x: jnp.asarray(x).astype(compute_dtype(leaf_dtype(x))), tree)


def cast_like(tree, like):
    """Every leaf of ``tree`` cast to the dtype of the matching leaf of ``like``."""
    return jax.tree.map(lambda t, p: jnp.asarray(t).astype(leaf_dtype(p)), tree, like)


def concrete_float(value: Any) -> float | None:
    """``float(value)`` when ``value`` is a concrete real scalar, else ``None``.

    ``None`` for schedules (callables), tracers (under ``jit``, ``vmap`` or
    ``optax.inject_hyperparams``), strings, non-scalar arrays and anything else ``float`` cannot
    convert, so callers validate what they can and defer the rest to the update.
    """
    if value is None or callable(value) or isinstance(value, str | bytes):
        return None
    if isinstance(value, jax.core.Tracer):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _is_number_like(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    try:
        return bool(jnp.issubdtype(dtype, jnp.integer) or jnp.issubdtype(dtype, jnp.floating))
    except TypeError:
        return False


def _range(low: float, strict: bool, high: float | None) -> str:
    left = "(" if strict else "["
    right = f"{high:g}]" if high is not None else "inf)"
    return f"{left}{low:g}, {right}"


def check_float(name: str, value: Any, *, low: float = 0.0, strict: bool = True,
                high: float | None = None, allow_schedule: bool = True,
                allow_none: bool = False) -> Any:
    """Validates a float hyperparameter when it is concrete; returns ``value`` unchanged.

    Accepted: Python ints and floats, and real scalar arrays (including tracers from
    ``optax.inject_hyperparams``, which pass unchecked); a schedule (any callable, checked only
    when evaluated) if ``allow_schedule``; ``None`` if ``allow_none``. A concrete value must be
    finite and lie in ``(low, high]`` (``strict=True``) or ``[low, high]`` (``strict=False``),
    with no upper bound when ``high`` is ``None``.

    Args:
      name: the argument's name, used in the error message.
      value: the value to check.
      low: lower bound (default 0).
      strict: exclude ``low`` itself (default ``True``: e.g. a step size ``> 0``).
      high: inclusive upper bound, or ``None`` (default) for none.
      allow_schedule: accept callables (default ``True``).
      allow_none: accept ``None`` (default ``False``).

    Returns:
      ``value``, unchanged (so ``x = check_float("x", x)`` reads naturally).

    Raises:
      ValueError: naming ``name``, the value and the allowed range, for ``bool``s, strings and
        other non-numbers, non-scalar arrays, NaN, infinities and out-of-range values (and for
        ``None`` or schedules when not allowed).
    """
    kind = "a finite float in " + _range(low, strict, high)
    if allow_schedule:
        kind += " or an optax schedule"
    if allow_none:
        kind += " or None"
    if value is None:
        if allow_none:
            return value
        raise ValueError(f"{name} must be {kind}, got None")
    if callable(value) and not hasattr(value, "dtype"):
        if allow_schedule:
            return value
        raise ValueError(f"{name} must be {kind} (schedules are not supported here), "
                         f"got {value!r}")
    if not _is_number_like(value):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if getattr(value, "ndim", 0) != 0:
        raise ValueError(f"{name} must be a scalar, {kind}, got an array of shape "
                         f"{tuple(value.shape)}")
    v = concrete_float(value)
    if v is None:  # a tracer: its value is only known inside the update
        return value
    bad = (not math.isfinite(v) or v < low or (strict and v == low)
           or (high is not None and v > high))
    if bad:
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    return value


def check_unit_interval(name: str, value: Any) -> Any:
    """Validates a decay rate or momentum in ``[0, 1)`` (a float, not a schedule).

    Tracers pass unchecked (``optax.inject_hyperparams``); returns ``value`` unchanged.

    Raises:
      ValueError: naming ``name`` and the value when it is not a finite float in ``[0, 1)``.
    """
    check_float(name, value, strict=False, high=1.0, allow_schedule=False)
    v = concrete_float(value)
    if v is not None and v >= 1.0:
        raise ValueError(f"{name} must be a finite float in [0, 1), got {value!r}")
    return value


def check_static_int(name: str, value: Any, *, low: int = 1) -> int:
    """Validates a static integer (a loop count, a period, a shape) ``>= low``; returns it as int.

    Python and NumPy integers are accepted; bools, floats (even ``50.0``), strings and tracers
    are not. A tracer usually means ``optax.inject_hyperparams`` injected the int: the message
    says to pass it in ``static_args``.

    Raises:
      ValueError: naming ``name``, the value and the allowed range.
    """
    if isinstance(value, jax.core.Tracer):
        raise ValueError(f"{name} must be a static int >= {low} (it fixes a loop count or a "
                         f"shape); under optax.inject_hyperparams pass static_args=({name!r},)")
    integral = isinstance(value, int) or (hasattr(value, "dtype") and getattr(value, "ndim", 1)
                                          == 0 and jnp.issubdtype(value.dtype, jnp.integer))
    if isinstance(value, bool) or not integral or int(value) < low:
        raise ValueError(f"{name} must be a static int >= {low}, got {value!r}")
    return int(value)


def check_static_ints(context: str, **values: tuple[Any, int]) -> tuple[int, ...]:
    """Validates all the static ints of the constructor ``context`` at once.

    ``values`` maps each argument name to ``(value, default)``; ``None`` means the default.
    Constructors give their static ints the default ``None`` so that ``optax.inject_hyperparams``
    (which turns every int it is given into an array, traced under ``jit``) leaves them alone
    unless the caller sets them; every one that arrives traced is named in ONE ``ValueError``
    with the exact ``static_args`` to pass.

    Returns:
      the ints, in the order of ``values``.

    Example:
      >>> check_static_ints("deva", ns_steps=(None, 5), max_precond_dim=(64, 10000))
      (5, 64)
    """
    traced = tuple(n for n, (v, _) in values.items() if isinstance(v, jax.core.Tracer))
    if traced:
        raise ValueError(
            f"{context}: {', '.join(traced)} must be static ints (they fix loop counts and "
            f"shapes), got traced arrays; optax.inject_hyperparams turns every int it is "
            f"given into one: pass optax.inject_hyperparams({context}, "
            f"static_args={traced!r}), or leave them out (their defaults are static). The "
            f"static ints of {context} are {', '.join(values)}.")
    return tuple(check_static_int(n, d if v is None else v) for n, (v, d) in values.items())


def check_float_dtype(name: str, value: Any, *, allow_none: bool = True):
    """Validates a floating dtype argument (``jnp.bfloat16``, ``"float32"``, ``jnp.dtype``);
    returns it as a ``jnp.dtype`` (or ``None``).

    An array is refused with its own message: it is what ``optax.inject_hyperparams`` makes of
    a scalar type such as ``jnp.bfloat16`` (a type is callable, so it is taken for a schedule
    and evaluated), whose dtype would otherwise be used silently.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, jax.Array | np.ndarray | np.generic):
        raise ValueError(f"{name} must be None or a floating dtype, got an array {value!r}; "
                         f"under optax.inject_hyperparams pass static_args=({name!r},) or "
                         "give it as jnp.dtype(...), which is not callable")
    try:
        dt = None if value is None else jnp.dtype(value)  # (jnp.dtype(None) is float64)
    except TypeError:
        dt = None
    if dt is None or not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"{name} must be {'None or ' if allow_none else ''}a floating dtype, "
                         f"got {value!r}")
    return dt


def check_bool(name: str, value: Any) -> bool:
    """Validates a static flag: a Python ``bool`` (not ``0``/``1``, not a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices) -> str:
    """Validates a static string option: one of ``choices``."""
    if not isinstance(value, str) or value not in tuple(choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def resolve(value: Any, count: jax.Array, dtype) -> jax.Array:
    """The value of a float-or-schedule hyperparameter at update ``count``, as a ``dtype``
    scalar (a schedule is called with the count; a float or an injected tracer is cast)."""
    value = value(count) if callable(value) else value
    return jnp.asarray(value).astype(dtype)
