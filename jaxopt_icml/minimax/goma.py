r"""GOMA: generalized optimistic methods with anchoring for monotone variational inequalities.

Find ``z*`` with ``F(z*) = 0`` for a monotone, ``L``-Lipschitz field ``F`` (for
``min_x max_y f``, ``F(x, y) = (grad_x f, -grad_y f)``) with ONE field evaluation per iteration,
an anchor toward the starting point (Halpern) and two step sizes (optimistic "two time scales"):

.. math::
   z_{k+1} = b_k z_0 + (1 - b_k) z_k - \gamma_k F(z_k)
             - (1 - b_k)\, \eta_k \big(F(z_k) - F(z_{k-1})\big),
   \qquad b_k = \frac{1}{k + \text{anchor\_offset}},\quad F(z_{-1}) := 0.

The transformations consume the field ``F(z_k)`` as ``updates``, require ``params = z_k`` and
return ``u`` with ``optax.apply_updates(z_k, u) = z_{k+1}``. They never call a second oracle: one
call per iteration.

Paper mapping (arXiv 2606.21528; only the abstract and third-party summaries were readable, so
the coupling below is derived, not copied):
  * ``z_0`` (anchor) -> ``GomaState.anchor``, taken from ``params`` at ``init``;
    ``F(z_{k-1})`` -> carried by ``GomaState.base`` and ``GomaState.scale`` (below);
    ``gamma_k`` -> ``step_size``; ``eta_k`` -> ``extrapolation``;
    ``b_k`` -> ``1/(k + anchor_offset)``.
  * The ``(1 - b_k)`` factor on the optimistic correction (``damp_correction=True``) is chosen so
    that the family contains the past-extra-anchored gradient / anchored Popov method of Tran-Dinh
    & Luo (2021) *exactly*: writing anchored Popov at its evaluation points ``y_k`` gives
    ``y_{k+1} = b_{k+1} z_0 + (1-b_{k+1}) y_k - gamma F(y_k)
    - (1-b_{k+1}) gamma (F(y_k) - F(y_{k-1}))``, i.e. GOMA with ``extrapolation = step_size``
    and ``anchor_offset`` one larger. With
    ``damp_correction=False`` and ``extrapolation = step_size`` it is anchored OGDA; with
    ``anchor="none"`` it is OGDA (``eta = gamma``); with ``extrapolation = 0`` it is the anchored
    forward (Halpern-GDA) step. ``tests/minimax/test_goma.py`` checks these identities.
  * Step sizes: on the bilinear game of ``experiments/minimax/goma.py`` (``L = 1``) the
    eta/gamma sweep (reported by ``summarize`` as ``sweep gamma=G eta/gamma=R median slope``)
    shows that ``eta/gamma = 0.5`` diverges, ``eta/gamma`` in ``[1, 1.5]`` keeps the
    ``k^{-2}`` slope of ``||F(z_k)||^2`` while ``gamma + eta <= 1/L``, and larger sums
    (``gamma + eta = 1.25/L``) diverge. The experiment's default is ``gamma = eta = 0.4/L``.
  * Stochastic variant (:func:`goma_stochastic`, the "simplified single-call variant"): the same
    recursion with ``gamma_k = gamma_0/(k+1)^decay`` and
    ``eta_k = extrapolation_ratio * gamma_0/(k+1)^extrapolation_decay`` (``extrapolation_decay``
    defaults to ``decay``: one time scale; a slower decay of ``eta`` gives two time scales).

State layout: with ``c_k`` the correction's coefficient (``(1 - b_k) eta_k`` or ``eta_k``), the
state stores the auxiliary point ``w_k = z_k + a_{k-1} F(z_{k-1})`` (``w_0 = z_0``) and the
scalar ``a_{k-1}``, not the previous field itself. With ``r_k = c_k / a_{k-1}``,

.. math::
   z_{k+1} = b_k z_0 + (1 - b_k - r_k) z_k + r_k w_k - (\gamma_k + c_k) F(z_k),\qquad
   w_{k+1} = z_{k+1} + a_k F(z_k),

which is the recursion above because ``r_k (w_k - z_k) = c_k F(z_{k-1})``. Each update picks
``a_k = c_{k+1} / (1 - b_{k+1})`` (``= eta_{k+1}`` with ``damp_correction``; ``gamma_{k+1}``, or
1, when that is zero or not finite), so that ``r_{k+1} = 1 - b_{k+1}`` and the next step reads
``w`` and not ``z`` (``z_{k+2} = b z_0 + (1 - b) w_{k+1} - ...``, the two-sequence form of anchored
Popov; a hyperparameter changed between calls stays exact through the stored ``a``). The update
computes ``w_{k+1}`` first and the displacement ``u = w_{k+1} - a_k F(z_k) - z_k`` from it, so
no value is read after the buffer holding it has been overwritten: a step that donates
``params`` and state (``jax.jit(..., donate_argnums=...)``) updates both in place, with no
buffer copies (``tests/minimax/test_goma.py`` checks the compiled step). Storing ``F(z_{k-1})``
instead makes the new state depend on ``z_k`` while ``z_{k+1}`` depends on the old state, a
cycle that XLA can only break with copies.

Theory (checked in ``experiments/minimax/goma.py``, claims run by ``tests/minimax/test_goma.py``):
  * deterministic: ``||F(z_k)||^2 = O(L^2 ||z_0 - z*||^2 / k^2)`` at the last iterate;
  * stochastic, variance growing like ``||z||^2``: ``E||F(z_k)||^2 = O(1/sqrt(k))`` with
    ``decay = 1/2``, no variance reduction and batch size 1.

References:
  * Accelerated and Stable Convergence with Anchored Optimistic Method. ICML 2026,
    arXiv 2606.21528.
  * Q. Tran-Dinh, Y. Luo. Halpern-type accelerated and splitting algorithms for monotone
    inclusions. arXiv 2110.08150, 2021.
  * T. Yoon, E. K. Ryu. Accelerated algorithms for smooth convex-concave minimax problems with
    O(1/k^2) rate on squared gradient norm. ICML 2021.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import compute_dtype as _compute_dtype
from jaxopt_icml.hyperparams import leaf_dtype
from jaxopt_icml.minimax.baselines import (
    ScalarOrSchedule,
    _anchor_weight,
    _check_decay,
    _check_offset,
    _check_scalar,
    _check_trees,
    _copy,
    _count0,
    _leafwise,
    _poly,
    _require_params,
    _value_at,
)

__all__ = [
    "goma",
    "scale_by_goma",
    "goma_stochastic",
    "GomaState",
]

_ANCHORS = ("harmonic", "none")


class GomaState(NamedTuple):
    """State of GOMA (see "State layout" in the module docstring).

    Attributes:
      count: int32 iteration counter ``k``.
      anchor: ``z_0`` (same pytree/dtypes as params); never reset.
      base: ``w_k = z_k + a_{k-1} F(z_{k-1})`` in the params' dtypes; ``w_0 = z_0``.
      scale: ``a_{k-1}``, a scalar (float32, or float64 when a leaf is float64); 1 at ``init``.
    """

    count: jax.Array
    anchor: Any
    base: Any
    scale: jax.Array


def _scale_dtype(params):
    """float64 when a leaf computes in float64, else float32."""
    wide = any(_compute_dtype(leaf_dtype(p)) == jnp.float64 for p in jax.tree.leaves(params))
    return jnp.float64 if wide else jnp.float32


def _goma_core(gamma_fn, eta_fn, *, anchor: str, anchor_offset: int, damp_correction: bool,
               name: str) -> optax.GradientTransformationExtraArgs:
    """The GOMA recursion; ``gamma_fn(count, dtype)``, ``eta_fn(count, dtype)`` give the steps."""
    anchored = anchor == "harmonic"

    def weight(k, dtype):  # b_k
        return _anchor_weight(k, anchor_offset, dtype) if anchored else jnp.zeros([], dtype)

    def correction(k, dtype):  # c_k, the coefficient of F(z_{k-1})
        eta = eta_fn(k, dtype)
        return (1 - weight(k, dtype)) * eta if damp_correction else eta

    def next_scale(k, dtype):
        """``a_{k-1} = c_k / (1 - b_k)``, or ``gamma_k`` (or 1) when that is 0 or not finite."""
        eta = eta_fn(k, dtype)
        a = eta if damp_correction else eta / (1 - weight(k, dtype))
        gamma = gamma_fn(k, dtype)
        usable = lambda v: jnp.isfinite(v) & (v != 0)
        return jnp.where(usable(a), a, jnp.where(usable(gamma), gamma, 1)).astype(dtype)

    def init(params):
        return GomaState(_count0(), _copy(params), _copy(params),
                         jnp.ones([], _scale_dtype(params)))

    def update(updates, state, params=None, **extra_args):
        del extra_args
        _require_params(params, name)
        _check_trees(name, updates, params, anchor=state.anchor, base=state.base)
        count = state.count
        following = optax.safe_int32_increment(count)
        scale = next_scale(following, state.scale.dtype)  # a_k

        def base_leaf(c, z, z0, w, g):
            b, corr = weight(count, z.dtype), correction(count, z.dtype)
            r = corr / c(state.scale)
            return (b * z0 + (1 - b - r) * z + r * w
                    - (gamma_fn(count, z.dtype) + corr - c(scale)) * g)

        base = _leafwise(base_leaf, params, params, state.anchor, state.base, updates)
        u = _leafwise(lambda c, w, g, z: w - c(scale) * g - z, updates, base, updates, params)
        return u, GomaState(following, state.anchor, base, scale)

    return optax.GradientTransformationExtraArgs(init, update)


def _check_static(anchor, anchor_offset, damp_correction) -> int:
    if anchor not in _ANCHORS:
        raise ValueError(f"anchor must be one of {_ANCHORS}, got {anchor!r}")
    if not isinstance(damp_correction, bool):
        raise ValueError(f"damp_correction must be a bool, got {damp_correction!r}")
    return _check_offset("anchor_offset", anchor_offset)


def scale_by_goma(step_size: ScalarOrSchedule = 0.1, *,
                  extrapolation: ScalarOrSchedule | None = None, anchor: str = "harmonic",
                  anchor_offset: int = 2, damp_correction: bool = True
                  ) -> optax.GradientTransformationExtraArgs:
    r"""GOMA's update ``u = z_{k+1} - z_k`` from the field ``g_k = F(z_k)``.

    .. math::
       u_k = b_k (z_0 - z_k) - \gamma_k g_k - c_k \eta_k (g_k - g_{k-1}),\quad
       c_k = 1 - b_k \text{ (damp\_correction) or } 1,\quad b_k = 1/(k + \text{anchor\_offset}).

    Unlike ``optax.scale_by_adam``, the step size cannot be factored into a trailing
    ``scale_by_learning_rate``: the anchor term ``b_k (z_0 - z_k)`` is not proportional to the
    step. So this "direction" takes the step size and returns the full displacement (already
    signed: add it with ``optax.apply_updates``); :func:`goma` is the user-facing alias.

    Args:
      step_size: ``gamma > 0``, float or optax schedule of the iteration count (dynamic;
        about ``0.3-0.45/L``).
      extrapolation: ``eta >= 0``, float or schedule; ``None`` means equal to ``step_size``
        (dynamic). Keep ``gamma + eta <= 1/L`` and ``eta >= gamma``.
      anchor: ``"harmonic"`` (``b_k = 1/(k + anchor_offset)``) or ``"none"`` (``b_k = 0``:
        OGDA-type). Static.
      anchor_offset: int ``>= 1``, default 2 (``b_k = 1/(k+2)``, Halpern). Static.
      damp_correction: multiply the optimistic correction by ``(1 - b_k)`` (default, makes
        ``eta = gamma`` equal anchored Popov). Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` with state :class:`GomaState`; ``update``
      requires ``params`` and ignores unknown keyword extras.

    Example:
      >>> import jax.numpy as jnp, optax
      >>> F = lambda z: jnp.array([z[1], -z[0]])  # min_x max_y x*y
      >>> tx = scale_by_goma(0.4); z = jnp.array([1.0, 1.0]); s = tx.init(z)
      >>> for _ in range(3):
      ...   u, s = tx.update(F(z), s, z); z = optax.apply_updates(z, u)

    Paper mapping and theory: see the module docstring (arXiv 2606.21528).
    """
    _check_scalar("step_size", step_size)
    if extrapolation is not None:
        _check_scalar("extrapolation", extrapolation, strict=False)
    anchor_offset = _check_static(anchor, anchor_offset, damp_correction)
    gamma_fn = lambda k, dtype: _value_at(step_size, k).astype(dtype)
    eta_fn = gamma_fn if extrapolation is None else (
        lambda k, dtype: _value_at(extrapolation, k).astype(dtype))
    return _goma_core(gamma_fn, eta_fn, anchor=anchor, anchor_offset=anchor_offset,
                      damp_correction=damp_correction, name="goma")


def goma(step_size: ScalarOrSchedule = 0.1, extrapolation: ScalarOrSchedule | None = None, *,
         anchor: str = "harmonic", anchor_offset: int = 2, damp_correction: bool = True
         ) -> optax.GradientTransformationExtraArgs:
    r"""GOMA (deterministic), one field evaluation per iteration.

    .. math::
       z_{k+1} = b_k z_0 + (1 - b_k) z_k - \gamma F(z_k) - (1-b_k)\,\eta\,(F(z_k) - F(z_{k-1})),
       \qquad b_k = \frac{1}{k+2}.

    Pass the field ``F(z_k)`` as ``updates`` and ``z_k`` as ``params``.

    Args:
      step_size: ``gamma > 0`` (float or optax schedule; dynamic). ``0.4/L`` is a good choice.
      extrapolation: ``eta >= 0`` (float or schedule); ``None`` = ``step_size``.
      anchor: ``"harmonic"`` or ``"none"``. Static.
      anchor_offset: int ``>= 1`` (``b_k = 1/(k + anchor_offset)``). Static.
      damp_correction: the ``(1 - b_k)`` factor on the correction. Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` (state :class:`GomaState`).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxopt_icml import base, problems
      >>> game = problems.bilinear_game(jax.random.PRNGKey(0), 5)
      >>> _, trace = base.run(goma(0.4), jnp.zeros(10), game, jax.random.PRNGKey(1), 100,
      ...                     trace_fn=lambda step, s, o: o.residual_sq(step.x))

    Paper mapping: ``gamma_k = step_size``, ``eta_k = extrapolation``, ``b_k = 1/(k+2)``; the
    ``(1 - b_k)`` coupling and the step sizes are derived (see the module docstring).

    Theory: ``||F(z_k)||^2 = O(1/k^2)`` (claim ``goma_slope_all_seeds`` and
    ``goma_max_normalised_ratio`` in ``experiments/minimax/goma.py``); exactly one oracle call per
    iteration (``tests/minimax/test_goma.py``).

    References: Accelerated and Stable Convergence with Anchored Optimistic Method, ICML 2026,
    arXiv 2606.21528.
    """
    return scale_by_goma(step_size, extrapolation=extrapolation, anchor=anchor,
                         anchor_offset=anchor_offset, damp_correction=damp_correction)


def goma_stochastic(step_size0: float = 0.1, *, decay: float = 0.5,
                    extrapolation_ratio: float = 1.0, extrapolation_decay: float | None = None,
                    anchor_offset: int = 2, damp_correction: bool = True
                    ) -> optax.GradientTransformationExtraArgs:
    r"""Single-call stochastic GOMA with decaying steps, for noisy fields ``F~(z; xi)``.

    .. math::
       z_{k+1} = b_k z_0 + (1 - b_k) z_k - \gamma_k \tilde g_k
                 - (1-b_k)\,\eta_k (\tilde g_k - \tilde g_{k-1}),\qquad
       \gamma_k = \frac{\gamma_0}{(k+1)^{\text{decay}}},\
       \eta_k = \frac{\rho\,\gamma_0}{(k+1)^{\text{extrapolation\_decay}}},\ b_k = \frac{1}{k+2}.

    Args:
      step_size0: ``gamma_0 > 0`` (float; dynamic, so ``inject_hyperparams`` works). A schedule
        ``s`` is also accepted: ``gamma_k = s(k)/(k+1)^decay``.
      decay: exponent in ``[0, 1]``; ``1/2`` gives the ``O(1/sqrt(k))`` rate. Static.
      extrapolation_ratio: ``rho >= 0`` (``eta_0 = rho gamma_0``). Dynamic.
      extrapolation_decay: exponent in ``[0, decay]``; ``None`` means ``decay``. Static.
      anchor_offset: int ``>= 1``. Static.
      damp_correction: the ``(1 - b_k)`` factor on the correction. Static.

    Returns:
      An ``optax.GradientTransformationExtraArgs`` with state :class:`GomaState`.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxopt_icml import base, problems
      >>> game = problems.bilinear_game(jax.random.PRNGKey(0), 5)
      >>> noisy = problems.NoisyOperator(game, jnp.asarray(0.3), jnp.asarray(0.0))
      >>> _, tr = base.run(goma_stochastic(0.3), jnp.zeros(10), noisy, jax.random.PRNGKey(1),
      ...                  100, trace_fn=lambda step, s, o: o.residual_sq(step.x))

    Paper mapping: the abstract's "simplified single-call variant"; the exact schedule is not
    public. ``experiments/minimax/goma.py`` runs it with ``gamma_0 = 0.3``, ``rho = 1`` on a
    noisy bilinear game (noise ``0.3 ||z||``); other values of ``gamma_0``, ``rho`` and
    ``extrapolation_decay`` are not swept there. The noise floor grows with ``gamma_0``, so
    keep ``gamma_0`` around ``0.3/L``.

    Theory: ``E||F(z_k)||^2 = O(1/sqrt(k))`` under variance ``<= s^2 + c ||z||^2``
    (claim ``goma_stochastic_slope`` in ``experiments/minimax/goma.py``).

    References: arXiv 2606.21528 (ICML 2026).
    """
    _check_scalar("step_size0", step_size0)
    _check_decay("decay", decay)
    _check_scalar("extrapolation_ratio", extrapolation_ratio, strict=False)
    if callable(extrapolation_ratio):
        raise ValueError(f"extrapolation_ratio must be a float, got {extrapolation_ratio!r}")
    if extrapolation_decay is None:
        extrapolation_decay = decay
    _check_decay("extrapolation_decay", extrapolation_decay, high=decay)
    anchor_offset = _check_static("harmonic", anchor_offset, damp_correction)

    def gamma_fn(k, dtype):
        return _poly(_value_at(step_size0, k).astype(dtype), k.astype(dtype), decay)

    def eta_fn(k, dtype):
        eta0 = (jnp.asarray(extrapolation_ratio).astype(dtype)
                * _value_at(step_size0, k).astype(dtype))
        return _poly(eta0, k.astype(dtype), extrapolation_decay)

    return _goma_core(gamma_fn, eta_fn, anchor="harmonic", anchor_offset=anchor_offset,
                      damp_correction=damp_correction, name="goma_stochastic")
