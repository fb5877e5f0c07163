r"""Baseline solvers for monotone variational inequalities, as field-consuming transformations.

Every method here is an ``optax.GradientTransformationExtraArgs`` that receives the VI field
``F(z_k)`` as ``updates`` and the current point ``z_k`` as ``params`` (required), and returns
``u`` with ``optax.apply_updates(z_k, u) = z_{k+1}``. For min-max problems pass
``F(x, y) = (grad_x f, -grad_y f)``. Two-call methods (extragradient, EAG-C, FEG, DSEG) evaluate the
field at the extrapolated point through the keyword oracle ``field_fn(z, i)`` (``base.run`` passes
one; a ``ValueError`` is raised when it is missing). Single-call methods never call it.

Conventions shared by the family:
  * Step sizes are floats or optax schedules ``count -> value``; floats are validated when
    concrete, so the transformations also work inside ``optax.inject_hyperparams``.
  * Anchored methods (EAG-C, FEG, anchored Popov) store the anchor ``z_0 = params`` at ``init``.
  * Optimistic methods start from ``F(z_{-1}) := 0`` (the state's ``prev_field`` is initialised to
    zeros); this makes OGDA, Popov, anchored Popov and GOMA coincide exactly where the theory says
    they do (see ``tests/minimax/test_goma.py``).
  * Arithmetic runs per leaf in float32 for 16-bit leaves (else in the leaf's dtype) and the
    result is cast back to the leaf's dtype.
  * ``update`` checks, when it is traced, that the field, the params (when given), the trees
    the state stores and the value of ``field_fn`` agree in tree structure and leaf shapes; a
    mismatch raises a ``ValueError`` naming the first leaf that differs.

Methods (``g_k = F(z_k)``, ``b_k = 1/(k + anchor_offset)``):
  * :func:`sgda`: ``z_{k+1} = z_k - gamma_k g_k``.
  * :func:`extragradient`: ``z_{k+1/2} = z_k - eta g_k``; ``z_{k+1} = z_k - gamma F(z_{k+1/2})``.
  * :func:`ogda`: ``z_{k+1} = z_k - gamma g_k - eta (g_k - g_{k-1})``.
  * :func:`popov`: ``w_{k+1} = w_k - gamma F(z_k)``; ``z_{k+1} = w_{k+1} - gamma F(z_k)``.
  * :func:`eag_c`: ``z_{k+1/2} = z_k + b_k(z_0 - z_k) - a g_k``;
    ``z_{k+1} = z_k + b_k(z_0 - z_k) - a F(z_{k+1/2})``.
  * :func:`feg`: as EAG-C with ``(1 - b_k) a`` in the first step and ``b_k = 1/(k+1)``.
  * :func:`anchored_popov`: ``w_{k+1} = b_k z_0 + (1-b_k) w_k - gamma F(z_k)``;
    ``z_{k+1} = b_{k+1} z_0 + (1-b_{k+1}) w_{k+1} - gamma F(z_k)``.
  * :func:`dseg`: extragradient with ``eta_k = eta_0/(k+1)^{r_eta}`` (exploration) and
    ``gamma_k = gamma_0/(k+1)^{r_gamma}`` (update), ``r_eta <= r_gamma``.

In Popov-type methods the ``params`` are the points where the field is evaluated (``z_k`` above);
the auxiliary sequence ``w_k`` lives in the state.

References:
  * G. M. Korpelevich. The extragradient method for finding saddle points and other problems.
    Ekonomika i Matematicheskie Metody, 1976.
  * L. D. Popov. A modification of the Arrow-Hurwicz method for search of saddle points.
    Mathematical Notes, 1980.
  * C. Daskalakis, A. Ilyas, V. Syrgkanis, H. Zeng. Training GANs with optimism. ICLR 2018.
  * T. Yoon, E. K. Ryu. Accelerated algorithms for smooth convex-concave minimax problems with
    O(1/k^2) rate on squared gradient norm. ICML 2021 (EAG-C).
  * S. Lee, D. Kim. Fast extra gradient methods for smooth structured nonconvex-nonconcave
    minimax problems. NeurIPS 2021 (FEG).
  * Q. Tran-Dinh, Y. Luo. Halpern-type accelerated and splitting algorithms for monotone
    inclusions. arXiv:2110.08150, 2021 (past-extra-anchored gradient / anchored Popov).
  * Y.-G. Hsieh, F. Iutzeler, J. Malick, P. Mertikopoulos. Explore aggressively, update
    conservatively: stochastic extragradient methods with variable stepsize scaling. NeurIPS 2020
    (DSEG).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import cast_like
from jaxopt_icml.hyperparams import check_float as _check_scalar
from jaxopt_icml.hyperparams import compute_dtype as _compute_dtype
from jaxopt_icml.hyperparams import concrete_float as _concrete
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "extragradient",
    "ogda",
    "popov",
    "eag_c",
    "feg",
    "anchored_popov",
    "dseg",
    "sgda",
    "AnchorState",
    "AnchoredPopovState",
    "CountState",
    "OptimisticState",
    "PopovState",
]

ScalarOrSchedule = float | jax.Array | Callable[[jax.Array], jax.Array]

_NO_PARAMS = (
    "{name} requires the current point: call update(field, state, params=z). The VI field F(z) "
    "goes in as `updates`."
)


# --------------------------------------------------------------------------- shared helpers
# (private to the minimax family; goma.py imports them)


def _check_offset(name: str, value):
    """An int ``>= 1``; integer arrays are accepted (``inject_hyperparams`` turns ints into
    arrays) and checked when concrete."""
    if isinstance(value, bool) or not (
        isinstance(value, int) or (hasattr(value, "dtype")
                                   and jnp.issubdtype(jnp.asarray(value).dtype, jnp.integer))):
        raise ValueError(f"{name} must be an int >= 1 (b_k = 1/(k + {name})), got {value!r}")
    v = _concrete(value)
    if v is not None and v < 1:
        raise ValueError(f"{name} must be an int >= 1 (b_k = 1/(k + {name})), got {value!r}")
    return value


def _value_at(v: ScalarOrSchedule, count: jax.Array):
    """A step size at ``count``: schedules are called, numbers returned as arrays."""
    return jnp.asarray(v(count)) if callable(v) else jnp.asarray(v)


def _leafwise(fn: Callable, like, *trees):
    """``fn(cast, *leaves)`` per leaf in the compute dtype of ``like``'s leaf, cast back to it.

    Returned updates follow the dtype of the incoming ``updates`` (as in optax); points (the
    extrapolated ``z_{k+1/2}``, auxiliary sequences) follow ``params``.

    ``cast(x)`` converts a scalar (step size, anchor weight) to that compute dtype.
    """

    def leaf(ref, *xs):
        ref = jnp.asarray(ref)
        cd = _compute_dtype(ref.dtype)
        cast = lambda s: jnp.asarray(s).astype(cd)
        return fn(cast, *(jnp.asarray(x).astype(cd) for x in xs)).astype(ref.dtype)

    return jax.tree.map(leaf, like, *trees)


def _poly(value0, count, decay):
    """``value0 / (count + 1)^decay`` (all in one compute dtype); ``decay = 0`` returns value0."""
    if isinstance(decay, int | float) and decay == 0:
        return value0
    return value0 / (count + 1) ** jnp.asarray(decay).astype(count.dtype)


def _anchor_weight(count, offset, dtype):
    """``b_k = 1/(k + offset)`` computed directly in ``dtype`` (float64 runs stay exact)."""
    return 1 / (count.astype(dtype) + jnp.asarray(offset).astype(dtype))


def _require_params(params, name: str):
    if params is None:
        raise ValueError(_NO_PARAMS.format(name=name))


def _check_trees(name: str, updates, params=None, **state_trees) -> None:
    """Trace-time check that the field ``updates`` has the tree structure and leaf shapes of
    ``params`` (when given) and of each tree the state stores (``prev_field=...``); a mismatch
    raises a ``ValueError`` naming the first disagreeing leaf."""
    check_same_shapes("updates", updates, "params", params, context=name)
    for label, tree in state_trees.items():
        check_same_shapes("updates", updates, f"state.{label}", tree, context=name)


def _field_at(field_fn: Callable, z, params, name: str):
    """``field_fn(z, 0)`` checked against the shapes of ``params`` and cast to its dtypes."""
    g = field_fn(z, 0)
    check_same_shapes("field_fn(z)", g, "params", params, context=name)
    return cast_like(g, params)


def _require_field_fn(extra_args: dict, name: str) -> Callable:
    field_fn = extra_args.get("field_fn")
    if field_fn is None or not callable(field_fn):
        raise ValueError(
            f"{name} makes a second oracle call and needs the keyword oracle `field_fn(z, i)` "
            "(F at another point): call update(F(z), state, params=z, field_fn=F). "
            "base.run / base.run_seeds pass it automatically."
        )
    return field_fn


def _zeros_like(params):
    return jax.tree.map(lambda p: jnp.zeros(jnp.shape(p), jnp.asarray(p).dtype)
                        if not isinstance(p, jax.ShapeDtypeStruct)
                        else jnp.zeros(p.shape, p.dtype), params)


def _copy(params):
    """A real copy: the anchor must not share a buffer with ``params`` (donating the state in a
    training loop would otherwise delete the caller's parameters)."""
    return jax.tree.map(lambda p: jnp.array(p, copy=True), params)


def _count0() -> jax.Array:
    return jnp.zeros([], jnp.int32)


# --------------------------------------------------------------------------- states


class CountState(NamedTuple):
    """Iteration counter (for schedules). ``count``: int32 scalar."""

    count: jax.Array


class OptimisticState(NamedTuple):
    """``count`` (int32) and ``prev_field = F(z_{k-1})`` (zeros before the first step)."""

    count: jax.Array
    prev_field: Any


class PopovState(NamedTuple):
    """``count`` (int32) and ``base``: the auxiliary sequence ``w_k`` (``w_0 = z_0``)."""

    count: jax.Array
    base: Any


class AnchorState(NamedTuple):
    """``count`` (int32) and ``anchor = z_0``."""

    count: jax.Array
    anchor: Any


class AnchoredPopovState(NamedTuple):
    """``count`` (int32), ``anchor = z_0`` and ``base``: the auxiliary sequence ``w_k``."""

    count: jax.Array
    anchor: Any
    base: Any


# --------------------------------------------------------------------------- methods


def sgda(step_size: ScalarOrSchedule = 0.1, *, decay: float = 0.0
         ) -> optax.GradientTransformationExtraArgs:
    r"""(Stochastic) gradient descent-ascent on the VI field.

    ``z_{k+1} = z_k - gamma_k F(z_k)`` with ``gamma_k = step_size / (k+1)^decay``.

    Args:
      step_size: ``gamma_0 > 0`` or a schedule ``s`` (then ``gamma_k = s(k)/(k+1)^decay``).
      decay: polynomial decay exponent in ``[0, 1]``; 0 is the constant step. Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` (one oracle call per step).

    Example:
      >>> import jax.numpy as jnp, optax
      >>> tx = sgda(0.1)
      >>> z = jnp.ones(2); s = tx.init(z)
      >>> u, s = tx.update(jnp.array([1.0, -1.0]), s, z)
      >>> optax.apply_updates(z, u)
      Array([0.9, 1.1], dtype=float32)

    Theory: diverges on bilinear games for any constant step (the contrast in claim 3 of
    ``experiments/minimax/goma.py``).
    """
    _check_scalar("step_size", step_size)
    _check_decay("decay", decay)

    def init(params):
        return CountState(_count0())

    def update(updates, state, params=None, **extra_args):
        del extra_args
        _check_trees("sgda", updates, params)
        gamma = _value_at(step_size, state.count)
        count = state.count
        u = _leafwise(lambda c, g: -_poly(c(gamma), c(count), decay) * g, updates, updates)
        return u, CountState(optax.safe_int32_increment(state.count))

    return optax.GradientTransformationExtraArgs(init, update)


def _check_decay(name, value, high: float = 1.0):
    """A float exponent in ``[0, high]`` (checked when concrete; arrays from
    ``inject_hyperparams`` are accepted)."""
    _check_scalar(name, value, strict=False, high=_concrete(high), allow_schedule=False)


def extragradient(step_size: ScalarOrSchedule = 0.5, *,
                  extrapolation: ScalarOrSchedule | None = None
                  ) -> optax.GradientTransformationExtraArgs:
    r"""Extragradient (Korpelevich): two field evaluations per step.

    .. math::
       z_{k+1/2} = z_k - \eta F(z_k), \qquad z_{k+1} = z_k - \gamma F(z_{k+1/2}).

    ``F(z_k)`` arrives as ``updates``; ``F(z_{k+1/2})`` is obtained by calling the keyword oracle
    ``field_fn(z_{k+1/2}, 0)`` (a ``ValueError`` is raised when it is missing). With a noisy oracle
    this is stochastic extragradient (SEG).

    Args:
      step_size: update step ``gamma > 0`` (float or schedule; ``<= 1/L`` for convergence).
      extrapolation: extrapolation step ``eta > 0``; ``None`` means equal to ``step_size``.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; 2 oracle calls per step.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> F = lambda z, i=0: jnp.array([z[1], -z[0]])  # bilinear x*y
      >>> tx = extragradient(0.5); z = jnp.array([1.0, 1.0]); s = tx.init(z)
      >>> u, s = tx.update(F(z), s, z, field_fn=F)
      >>> optax.apply_updates(z, u)
      Array([0.25, 1.25], dtype=float32)

    Theory: last-iterate ``||F(z_k)||^2 = O(1/k)`` on monotone Lipschitz problems; on the bilinear
    game of ``experiments/minimax/goma.py`` it behaves like ``k^{-1.5}`` (the spec's contrast).
    """
    _check_scalar("step_size", step_size)
    if extrapolation is not None:
        _check_scalar("extrapolation", extrapolation)

    def init(params):
        return CountState(_count0())

    def update(updates, state, params=None, **extra_args):
        _require_params(params, "extragradient")
        _check_trees("extragradient", updates, params)
        field_fn = _require_field_fn(extra_args, "extragradient")
        gamma = _value_at(step_size, state.count)
        eta = gamma if extrapolation is None else _value_at(extrapolation, state.count)
        half = _leafwise(lambda c, z, g: z - c(eta) * g, params, params, updates)
        g_half = _field_at(field_fn, half, params, "extragradient")
        u = _leafwise(lambda c, g: -c(gamma) * g, updates, g_half)
        return u, CountState(optax.safe_int32_increment(state.count))

    return optax.GradientTransformationExtraArgs(init, update)


def dseg(step_size: ScalarOrSchedule = 0.1, *, extrapolation: float | None = None,
         decay: float = 2.0 / 3.0, extrapolation_decay: float = 1.0 / 3.0
         ) -> optax.GradientTransformationExtraArgs:
    r"""Double-stepsize stochastic extragradient (DSEG, Hsieh et al. 2020).

    .. math::
       z_{k+1/2} = z_k - \eta_k \tilde F(z_k), \qquad z_{k+1} = z_k - \gamma_k \tilde F(z_{k+1/2}),

    with ``eta_k = extrapolation/(k+1)^extrapolation_decay`` (explore aggressively) and
    ``gamma_k = step_size/(k+1)^decay`` (update conservatively), ``extrapolation_decay <= decay``.

    Args:
      step_size: ``gamma_0 > 0`` (float, dynamic; a schedule ``s`` gives
        ``gamma_k = s(k)/(k+1)^decay``).
      extrapolation: ``eta_0 > 0`` (float or schedule, as ``step_size``); ``None`` means equal
        to ``step_size``. Must be ``>= gamma_0`` when both are concrete floats.
      decay: ``r_gamma`` in ``[0, 1]``. Static.
      extrapolation_decay: ``r_eta`` in ``[0, decay]``. Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; 2 oracle calls per step (needs ``field_fn``).

    Example:
      >>> import jax.numpy as jnp
      >>> F = lambda z, i=0: jnp.array([z[1], -z[0]])
      >>> tx = dseg(0.1, extrapolation=0.5); z = jnp.ones(2)
      >>> u, _ = tx.update(F(z), tx.init(z), z, field_fn=F)
    """
    _check_scalar("step_size", step_size)
    if extrapolation is not None:
        _check_scalar("extrapolation", extrapolation)
        g, e = _concrete(step_size), _concrete(extrapolation)
        if g is not None and e is not None and e < g:
            raise ValueError(f"extrapolation must be >= step_size (eta_k >= gamma_k), got "
                             f"extrapolation={extrapolation!r}, step_size={step_size!r}")
    _check_decay("decay", decay)
    _check_decay("extrapolation_decay", extrapolation_decay, high=decay)

    def init(params):
        return CountState(_count0())

    def update(updates, state, params=None, **extra_args):
        _require_params(params, "dseg")
        _check_trees("dseg", updates, params)
        field_fn = _require_field_fn(extra_args, "dseg")
        count = state.count
        gamma0 = _value_at(step_size, count)
        eta0 = gamma0 if extrapolation is None else _value_at(extrapolation, count)
        half = _leafwise(lambda c, z, g: z - _poly(c(eta0), c(count), extrapolation_decay) * g,
                         params, params, updates)
        g_half = _field_at(field_fn, half, params, "dseg")
        u = _leafwise(lambda c, g: -_poly(c(gamma0), c(count), decay) * g, updates, g_half)
        return u, CountState(optax.safe_int32_increment(state.count))

    return optax.GradientTransformationExtraArgs(init, update)


def ogda(step_size: ScalarOrSchedule = 0.25, *,
         extrapolation: ScalarOrSchedule | None = None) -> optax.GradientTransformationExtraArgs:
    r"""Optimistic gradient descent-ascent (single call per step).

    .. math:: z_{k+1} = z_k - \gamma F(z_k) - \eta (F(z_k) - F(z_{k-1})),\quad F(z_{-1}) := 0.

    Args:
      step_size: ``gamma > 0`` (float or schedule; ``gamma = eta <= 1/(2L)`` is the classical
        range).
      extrapolation: ``eta >= 0``; ``None`` means equal to ``step_size`` (standard OGDA
        ``z_{k+1} = z_k - 2 gamma g_k + gamma g_{k-1}``).

    Returns:
      An ``optax.GradientTransformationExtraArgs``; state :class:`OptimisticState`.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = ogda(0.1); z = jnp.ones(2)
      >>> u, s = tx.update(jnp.array([1.0, -1.0]), tx.init(z), z)

    Theory: equals :func:`popov` evaluated at its extrapolation points, and GOMA with no anchor
    (tested). Last iterate ``O(1/k)`` on ``||F||^2``.
    """
    _check_scalar("step_size", step_size)
    if extrapolation is not None:
        _check_scalar("extrapolation", extrapolation, strict=False)

    def init(params):
        return OptimisticState(_count0(), _zeros_like(params))

    def update(updates, state, params=None, **extra_args):
        del extra_args
        _check_trees("ogda", updates, params, prev_field=state.prev_field)
        gamma = _value_at(step_size, state.count)
        eta = gamma if extrapolation is None else _value_at(extrapolation, state.count)
        u = _leafwise(lambda c, g, gp: -c(gamma) * g - c(eta) * (g - gp),
                      updates, updates, state.prev_field)
        prev = cast_like(updates, state.prev_field)
        return u, OptimisticState(optax.safe_int32_increment(state.count), prev)

    return optax.GradientTransformationExtraArgs(init, update)


def popov(step_size: ScalarOrSchedule = 0.25) -> optax.GradientTransformationExtraArgs:
    r"""Popov's past-extragradient method (single call per step).

    With ``params = z_k`` (the point where ``F`` is evaluated) and ``w_k`` in the state:

    .. math:: w_{k+1} = w_k - \gamma F(z_k), \qquad z_{k+1} = w_{k+1} - \gamma F(z_k),

    started from ``w_0 = z_0`` (i.e. ``F(z_{-1}) := 0``).

    Args:
      step_size: ``gamma > 0`` (float or schedule; ``<= 1/(2L)``).

    Returns:
      An ``optax.GradientTransformationExtraArgs``; state :class:`PopovState`.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = popov(0.1); z = jnp.ones(2)
      >>> u, s = tx.update(jnp.array([1.0, -1.0]), tx.init(z), z)
    """
    _check_scalar("step_size", step_size)

    def init(params):
        return PopovState(_count0(), _copy(params))

    def update(updates, state, params=None, **extra_args):
        del extra_args
        _require_params(params, "popov")
        _check_trees("popov", updates, params, base=state.base)
        gamma = _value_at(step_size, state.count)
        w_next = _leafwise(lambda c, w, g: w - c(gamma) * g, state.base, state.base, updates)
        u = _leafwise(lambda c, w, z, g: w - c(gamma) * g - z, updates, w_next, params, updates)
        return u, PopovState(optax.safe_int32_increment(state.count), w_next)

    return optax.GradientTransformationExtraArgs(init, update)


def _anchored_two_call(name, step_size, anchor_offset, damp_first):
    _check_scalar("step_size", step_size)
    anchor_offset = _check_offset("anchor_offset", anchor_offset)

    def init(params):
        return AnchorState(_count0(), _copy(params))

    def update(updates, state, params=None, **extra_args):
        _require_params(params, name)
        _check_trees(name, updates, params, anchor=state.anchor)
        field_fn = _require_field_fn(extra_args, name)
        a = _value_at(step_size, state.count)
        count = state.count

        def half_fn(c, z, z0, g):
            b = _anchor_weight(count, anchor_offset, z.dtype)
            first = (1 - b) * c(a) if damp_first else c(a)
            return z + b * (z0 - z) - first * g

        half = _leafwise(half_fn, params, params, state.anchor, updates)
        g_half = _field_at(field_fn, half, params, name)

        def step_fn(c, z, z0, gh):
            b = _anchor_weight(count, anchor_offset, z.dtype)
            return b * (z0 - z) - c(a) * gh

        u = _leafwise(step_fn, updates, params, state.anchor, g_half)
        return u, AnchorState(optax.safe_int32_increment(state.count), state.anchor)

    return optax.GradientTransformationExtraArgs(init, update)


def eag_c(step_size: ScalarOrSchedule = 0.125, *, anchor_offset: int = 2
          ) -> optax.GradientTransformationExtraArgs:
    r"""Extra anchored gradient with constant step (EAG-C, Yoon & Ryu 2021).

    .. math::
       z_{k+1/2} = z_k + b_k (z_0 - z_k) - a F(z_k),\qquad
       z_{k+1} = z_k + b_k (z_0 - z_k) - a F(z_{k+1/2}),\qquad b_k = \frac{1}{k + 2}.

    Args:
      step_size: ``a > 0`` (the theory needs ``a <= 1/(8L)``; float or schedule).
      anchor_offset: ``b_k = 1/(k + anchor_offset)``, int ``>= 1``. Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; 2 calls per step (needs ``field_fn``).

    Example:
      >>> import jax.numpy as jnp
      >>> F = lambda z, i=0: jnp.array([z[1], -z[0]])
      >>> tx = eag_c(0.125); z = jnp.ones(2)
      >>> u, _ = tx.update(F(z), tx.init(z), z, field_fn=F)

    Theory: ``||F(z_k)||^2 <= O(L^2 ||z_0 - z*||^2 / k^2)``.
    """
    return _anchored_two_call("eag_c", step_size, anchor_offset, damp_first=False)


def feg(step_size: ScalarOrSchedule = 1.0, *, anchor_offset: int = 1
        ) -> optax.GradientTransformationExtraArgs:
    r"""Fast extragradient (FEG, Lee & Kim 2021), monotone case.

    .. math::
       z_{k+1/2} = z_k + b_k (z_0 - z_k) - (1 - b_k) a F(z_k),\qquad
       z_{k+1} = z_k + b_k (z_0 - z_k) - a F(z_{k+1/2}),\qquad b_k = \frac{1}{k + 1}.

    Args:
      step_size: ``a > 0``; ``a = 1/L`` in the paper (float or schedule).
      anchor_offset: ``b_k = 1/(k + anchor_offset)``; 1 in the paper. Static int ``>= 1``.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; 2 calls per step (needs ``field_fn``).

    Example:
      >>> import jax.numpy as jnp
      >>> F = lambda z, i=0: jnp.array([z[1], -z[0]])
      >>> tx = feg(1.0); z = jnp.ones(2)
      >>> u, _ = tx.update(F(z), tx.init(z), z, field_fn=F)

    Theory: ``||F(z_k)||^2 <= 4 L^2 ||z_0 - z*||^2 / (k+1)^2`` (the budget comparison of claim 2).
    """
    return _anchored_two_call("feg", step_size, anchor_offset, damp_first=True)


def anchored_popov(step_size: ScalarOrSchedule = 0.3, *, anchor_offset: int = 2
                   ) -> optax.GradientTransformationExtraArgs:
    r"""Anchored Popov / past-extra-anchored gradient (Tran-Dinh & Luo 2021). One call per step.

    With ``params = z_k`` (the evaluation point, the spec's ``y_k``) and ``w_k`` in the state:

    .. math::
       w_{k+1} = b_k z_0 + (1-b_k) w_k - \gamma F(z_k),\qquad
       z_{k+1} = b_{k+1} z_0 + (1-b_{k+1}) w_{k+1} - \gamma F(z_k),

    ``b_k = 1/(k + anchor_offset)``, ``w_0 = z_0`` (so ``F(z_{-1}) := 0``).

    Args:
      step_size: ``gamma > 0`` (about ``0.1-0.5/L``; float or schedule).
      anchor_offset: int ``>= 1``. Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs``; state :class:`AnchoredPopovState`.

    Example:
      >>> import jax.numpy as jnp
      >>> tx = anchored_popov(0.3); z = jnp.ones(2)
      >>> u, s = tx.update(jnp.array([1.0, -1.0]), tx.init(z), z)

    Theory: ``||F||^2 = O(1/k^2)`` at the last iterate; it is exactly GOMA with
    ``extrapolation = step_size`` and ``anchor_offset + 1`` (see ``minimax.goma``).
    """
    _check_scalar("step_size", step_size)
    anchor_offset = _check_offset("anchor_offset", anchor_offset)

    def init(params):
        return AnchoredPopovState(_count0(), _copy(params), _copy(params))

    def update(updates, state, params=None, **extra_args):
        del extra_args
        _require_params(params, "anchored_popov")
        _check_trees("anchored_popov", updates, params, anchor=state.anchor, base=state.base)
        gamma = _value_at(step_size, state.count)
        count = state.count

        def w_fn(c, w, z0, g):
            b = _anchor_weight(count, anchor_offset, w.dtype)
            return b * z0 + (1 - b) * w - c(gamma) * g

        w_next = _leafwise(w_fn, state.base, state.base, state.anchor, updates)

        def u_fn(c, z, w1, z0, g):
            b1 = _anchor_weight(count + 1, anchor_offset, z.dtype)
            return b1 * z0 + (1 - b1) * w1 - c(gamma) * g - z

        u = _leafwise(u_fn, updates, params, w_next, state.anchor, updates)
        return u, AnchoredPopovState(optax.safe_int32_increment(count), state.anchor, w_next)

    return optax.GradientTransformationExtraArgs(init, update)
