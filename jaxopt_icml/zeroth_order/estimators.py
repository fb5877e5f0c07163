r"""Zeroth-order gradient estimators shared by the ``zeroth_order`` family, and the ZO optimizer.

An *estimator* is a pure function

.. code-block:: python

    g, info = estimate(value_fn, x, key)

where ``value_fn(x, key) -> scalar`` is a (possibly stochastic) zeroth-order oracle, ``x`` any
pytree of floating arrays, ``g`` a pytree like ``x`` (same structure, shapes and dtypes) and
``info = {"oracle_calls": int32}`` the number of ``value_fn`` evaluations made. Every estimator
here evaluates all its points in ONE batched call (``jax.vmap`` of ``value_fn``, or
``jax.lax.map`` in chunks of ``eval_batch_size`` when memory matters), each evaluation with its own
independent key, so a stochastic oracle sees independent noise per evaluation.

Directions (:func:`sample_directions`) are drawn for the WHOLE flattened pytree at once:
``"sphere"`` is uniform on the unit sphere of :math:`\mathbb R^d` (:math:`d` = total number of
elements, :math:`E[uu^\top] = I/d`, so estimators multiply by :math:`d`); ``"gaussian"`` is
:math:`N(0, I_d)` and ``"rademacher"`` uniform on :math:`\{-1, 1\}^d` (both
:math:`E[uu^\top] = I`, factor 1). :func:`normalization` returns that factor.

Constructors:

* :func:`central_difference_estimator`: the general symmetric-difference estimator
  :math:`g = \frac{c}{B}\sum_b \big(\sum_k w_k D_{b}(h_k)\big) u_b`,
  :math:`D_b(h) = [f(x + h u_b) - f(x - h u_b)]/(2h)`, with radii :math:`h_k` and weights
  :math:`w_k` (:func:`jaxopt_icml.zeroth_order.romberg_zoge.romberg_zoge` is the Romberg choice);
* :func:`two_point`: the classical two-point estimator (one radius, weight 1); with
  ``distribution="rademacher"`` this is SPSA (the inverse of a :math:`\pm1` perturbation is the
  perturbation itself), with ``"gaussian"`` Gaussian smoothing (Nesterov-Spokoiny);
* :func:`forward_difference`: :math:`\frac{c}{B}\sum_b [f(x + r u_b) - f(x)]/r\, u_b`
  (:math:`B + 1` evaluations, :math:`f(x)` shared).

:func:`zo_optimizer` turns any estimator and ANY optax transformation (``optax.sgd``,
``optax.adam``, a schedule, a chain ...) into a ``base.OracleAlgorithm``: this is how "an
estimator usable by any optax optimizer" is delivered.

Precision: points :math:`x \pm h u` are formed in each leaf's compute dtype (float32 for 16-bit
leaves, else the leaf dtype) and ``value_fn`` is called on them in that dtype; :math:`D(h)` loses
about :math:`\log_{10}(|f|/h)` digits to cancellation, so theory checks run in float64.

References:
  Y. Nesterov, V. Spokoiny, "Random gradient-free minimization of convex functions", Found.
  Comput. Math. 2017. J. C. Duchi, M. I. Jordan, M. J. Wainwright, A. Wibisono, "Optimal rates
  for zero-order convex optimization: the power of two function evaluations", IEEE Trans. Inf.
  Theory 2015. J. C. Spall, "Multivariate stochastic approximation using a simultaneous
  perturbation gradient approximation", IEEE Trans. Autom. Control 1992.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_bool, check_choice, check_float, check_static_int
from jaxopt_icml.hyperparams import compute_dtype as _leaf_compute_dtype
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "two_point",
    "forward_difference",
    "zo_optimizer",
    "sample_directions",
    "Estimator",
    "central_difference_estimator",
    "central_differences",
    "dimension",
    "normalization",
]

PyTree = Any
Estimator = Callable[[Callable, PyTree, jax.Array], tuple[PyTree, dict]]

DISTRIBUTIONS = ("sphere", "gaussian", "rademacher")


# --------------------------------------------------------------------------- directions


def _float_leaves(x) -> list:
    leaves = jax.tree.leaves(x)
    if not leaves:
        raise ValueError("x must have at least one array leaf")
    for leaf in leaves:
        if not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
            raise ValueError(f"x must have floating leaves, got a leaf of dtype "
                             f"{jnp.result_type(leaf)}")
    return leaves


def dimension(x: PyTree) -> int:
    """Total number of elements :math:`d` of the pytree ``x`` (static)."""
    return int(sum(math.prod(jnp.shape(leaf)) for leaf in _float_leaves(x)))


def _common_dtype(x) -> jnp.dtype:
    """One dtype to draw directions in: the widest compute dtype of the leaves."""
    return jnp.result_type(*(_leaf_compute_dtype(jnp.result_type(leaf))
                             for leaf in _float_leaves(x)))


def normalization(distribution: str, x: PyTree) -> float:
    """The factor :math:`c` with :math:`E[c\\, u u^\\top] = I`: :math:`d` for ``"sphere"``,
    1 for ``"gaussian"`` and ``"rademacher"``."""
    check_choice("distribution", distribution, DISTRIBUTIONS)
    return float(dimension(x)) if distribution == "sphere" else 1.0


def sample_directions(key: jax.Array, x: PyTree, num_directions: int, *,
                      distribution: str = "sphere") -> PyTree:
    r"""``num_directions`` random directions for the whole flattened pytree ``x``.

    One batched draw of shape ``(num_directions, d)`` (:math:`d` = :func:`dimension`), split
    into leaves: ``"sphere"`` normalises each Gaussian row to unit Euclidean norm over ALL
    leaves together (uniform on :math:`S^{d-1}`), ``"gaussian"`` is :math:`N(0, I_d)`,
    ``"rademacher"`` is uniform on :math:`\{-1, 1\}^d`.

    Args:
      key: a PRNG key.
      x: pytree of floating arrays (values unused; ``jax.ShapeDtypeStruct`` leaves work).
      num_directions: :math:`B \ge 1` (static int).
      distribution: ``"sphere"`` (default), ``"gaussian"`` or ``"rademacher"`` (static).

    Returns:
      A pytree like ``x`` whose leaves have a leading axis ``num_directions``. Each leaf is in
      its compute dtype (float32 for 16-bit leaves, else the leaf dtype); the draw itself is
      made in the widest of these dtypes.

    Raises:
      ValueError: for a bad ``num_directions``, ``distribution`` or non-floating leaves.

    Example:
      >>> u = sample_directions(jax.random.key(0), {"w": jnp.zeros((3, 2)), "b": jnp.zeros(2)}, 4)
      >>> jax.tree.map(jnp.shape, u)
      {'b': (4, 2), 'w': (4, 3, 2)}
    """
    num_directions = check_static_int("num_directions", num_directions)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    z = _sample_flat(key, dimension(x), num_directions, distribution, _common_dtype(x))
    return _unravel(z, x, 1)


def _sample_flat(key, d, num, distribution, dtype):
    """``(num, d)`` directions in ``dtype``: one batched draw."""
    if distribution == "rademacher":
        return jax.random.rademacher(key, (num, d), dtype)
    z = jax.random.normal(key, (num, d), dtype)
    if distribution == "sphere":
        z = z / jnp.linalg.norm(z, axis=1, keepdims=True)
    return z


# --------------------------------------------------------------------------- flat views


def _ravel(x, dtype, batch_ndim: int = 0) -> jax.Array:
    """The leaves of ``x`` (with ``batch_ndim`` leading batch axes) as one ``(..., d)`` array."""
    leaves = jax.tree.leaves(x)
    flat = [jnp.asarray(leaf).astype(dtype).reshape(jnp.shape(leaf)[:batch_ndim] + (-1,))
            for leaf in leaves]
    return flat[0] if len(flat) == 1 else jnp.concatenate(flat, axis=-1)


def _unravel(v, like, batch_ndim: int = 0, *, out_dtype: bool = False):
    """Inverse of :func:`_ravel`: ``(..., d)`` -> a pytree like ``like`` with the leading axes
    of ``v``; leaves in their compute dtype (float32 for 16-bit leaves), or in the leaf dtype
    of ``like`` with ``out_dtype``."""
    leaves, treedef = jax.tree.flatten(like)
    batch = v.shape[:batch_ndim] if batch_ndim else v.shape[:-1]
    sizes = [math.prod(jnp.shape(leaf)) for leaf in leaves]
    cuts = np.cumsum(sizes)[:-1].tolist()
    parts = jnp.split(v, cuts, axis=-1) if cuts else [v]
    out = []
    for part, leaf in zip(parts, leaves, strict=True):
        dt = jnp.result_type(leaf)
        dt = dt if out_dtype else _leaf_compute_dtype(dt)
        out.append(part.reshape(batch + tuple(jnp.shape(leaf))).astype(dt))
    return jax.tree.unflatten(treedef, out)


# --------------------------------------------------------------------------- evaluation


def _evaluate(value_fn, like, points, keys, eval_batch_size):
    """``value_fn`` at every row of the flat ``points`` (each unflattened like ``like``), in one
    vmapped call or ``lax.map`` chunks."""

    def one(p, k):
        return value_fn(_unravel(p, like), k)

    if eval_batch_size is None:
        return jax.vmap(one)(points, keys)
    return jax.lax.map(lambda pk: one(*pk), (points, keys), batch_size=eval_batch_size)


def _central_flat(value_fn, x, u, radii, key, eval_batch_size):
    """``D`` of shape ``(B, K)`` from flat directions ``u`` of shape ``(B, K, d)``."""
    ct = _common_dtype(x)
    num_dirs, num_radii = u.shape[:2]
    xf = _ravel(x, ct)
    signs = jnp.asarray([1.0, -1.0], ct)
    pts = xf[None, None, None] + (radii[None, :, None, None] * signs[None, None, :, None]
                                  * u[:, :, None, :])
    n = num_dirs * num_radii * 2
    vals = _evaluate(value_fn, x, pts.reshape(n, -1), jax.random.split(key, n),
                     eval_batch_size)
    vals = jnp.asarray(vals).astype(ct).reshape(num_dirs, num_radii, 2)
    return (vals[..., 0] - vals[..., 1]) / (2.0 * radii)[None]


def central_differences(value_fn: Callable, x: PyTree, directions: PyTree, radii, key: jax.Array,
                        *, eval_batch_size: int | None = None) -> jax.Array:
    r"""Symmetric differences :math:`D_{bk} = [f(x + h_k u_{bk}) - f(x - h_k u_{bk})]/(2h_k)`.

    All :math:`2BK` points are evaluated in one batched call of ``value_fn``, each with an
    independent key (``jax.random.split(key, 2 B K)``; point order ``(b, k, sign)`` with the
    ``+`` point first). Points are formed on the flattened pytree in the compute dtype of
    ``x`` and passed to ``value_fn`` as pytrees like ``x`` (16-bit leaves as float32).

    Args:
      value_fn: ``value_fn(x, key) -> scalar``.
      x: the base point (pytree).
      directions: pytree like ``x`` with leading axes ``(B, K)`` (one direction per radius) or
        ``(B,)`` (the same direction for every radius).
      radii: the :math:`K` radii :math:`h_k > 0`, shape ``(K,)``.
      key: PRNG key of the evaluations.
      eval_batch_size: ``None`` (default) evaluates every point in one ``jax.vmap``; an int
        evaluates them with ``jax.lax.map(..., batch_size=eval_batch_size)`` (less memory).

    Returns:
      ``D`` of shape ``(B, K)`` in the compute dtype of ``x``.
    """
    ct = _common_dtype(x)
    radii = jnp.asarray(radii, ct).reshape(-1)
    first = jax.tree.leaves(directions)[0]
    shared = jnp.ndim(first) == jnp.ndim(jax.tree.leaves(x)[0]) + 1
    u = _ravel(directions, ct, 1 if shared else 2)
    u = u[:, None] if shared else u
    u = jnp.broadcast_to(u, (u.shape[0], radii.shape[0], u.shape[-1]))
    return _central_flat(value_fn, x, u, radii, key, eval_batch_size)


def _combine(coef, u, x, scale):
    """``scale * sum_rows coef * u`` for flat ``u`` (rows, d), as a pytree like ``x``."""
    g = scale * (coef.astype(u.dtype) @ u)
    return _unravel(g, x, out_dtype=True)


# --------------------------------------------------------------------------- validation


def _check_common(radius, num_directions, distribution, eval_batch_size):
    check_float("radius", radius, allow_schedule=False)
    num_directions = check_static_int("num_directions", num_directions)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if eval_batch_size is not None:
        eval_batch_size = check_static_int("eval_batch_size", eval_batch_size)
    return num_directions, eval_batch_size


def _calls(n):
    return {"oracle_calls": jnp.asarray(n, jnp.int32)}


# --------------------------------------------------------------------------- estimators


def central_difference_estimator(radius, *, scales: Sequence[float], weights: Sequence[float],
                                 num_directions: int = 1, distribution: str = "sphere",
                                 shared_direction: bool = True,
                                 eval_batch_size: int | None = None) -> Estimator:
    r"""A weighted combination of symmetric differences at radii ``radius * scales``.

    .. math::

        g = \frac{c}{B} \sum_{b=1}^{B} \sum_{k=0}^{K-1} w_k\, D_{bk}(r s_k)\, u_{bk},\qquad
        D_{bk}(h) = \frac{f(x + h u_{bk}) - f(x - h u_{bk})}{2h},

    with :math:`c` = :func:`normalization` and, when ``shared_direction`` (default),
    :math:`u_{bk} = u_b` for every :math:`k` (the same direction at every radius). Cost:
    :math:`2BK` evaluations, all in one batched call.

    Args:
      radius: :math:`r > 0` (float, validated when concrete; a traced value is accepted).
      scales: the :math:`K \ge 1` relative radii :math:`s_k > 0` (static sequence of floats).
      weights: the :math:`K` weights :math:`w_k` (static sequence of finite floats); they should
        sum to 1 for a consistent estimator.
      num_directions: :math:`B \ge 1` (static int, default 1).
      distribution: ``"sphere"`` (default), ``"gaussian"`` or ``"rademacher"`` (static).
      shared_direction: use one direction for all radii (static bool, default ``True``);
        ``False`` draws :math:`BK` independent directions (an ablation).
      eval_batch_size: ``None`` (one ``vmap``) or a static int ``>= 1`` (``lax.map`` chunks).

    Returns:
      ``estimate(value_fn, x, key) -> (g, {"oracle_calls": 2BK})``. The directions are
      ``sample_directions(k_dir, x, B or B*K, distribution=...)`` with
      ``k_dir, k_eval = jax.random.split(key)``, so a caller can regenerate them from the key.

    Raises:
      ValueError: naming the argument, for any value out of its range.
    """
    num_directions, eval_batch_size = _check_common(radius, num_directions, distribution,
                                                    eval_batch_size)
    check_bool("shared_direction", shared_direction)
    scales = np.asarray(scales, np.float64).reshape(-1)
    weights = np.asarray(weights, np.float64).reshape(-1)
    if scales.size < 1 or not np.all(np.isfinite(scales)) or np.any(scales <= 0):
        raise ValueError(f"scales must be a non-empty sequence of finite floats > 0, got "
                         f"{scales.tolist()}")
    if weights.shape != scales.shape or not np.all(np.isfinite(weights)):
        raise ValueError(f"weights must be {scales.size} finite floats (one per scale), got "
                         f"{weights.tolist()}")
    num_radii = scales.size

    def estimate(value_fn, x, key):
        ct = _common_dtype(x)
        d = dimension(x)
        k_dir, k_eval = jax.random.split(key)
        if shared_direction:
            u = _sample_flat(k_dir, d, num_directions, distribution, ct)
            ub = jnp.broadcast_to(u[:, None], (num_directions, num_radii, d))
        else:
            u = _sample_flat(k_dir, d, num_directions * num_radii, distribution, ct)
            ub = u.reshape(num_directions, num_radii, d)
        radii = jnp.asarray(radius, ct) * jnp.asarray(scales, ct)
        diffs = _central_flat(value_fn, x, ub, radii, k_eval, eval_batch_size)
        coef = diffs * jnp.asarray(weights, ct)[None]  # (B, K)
        # shared: sum over radii per direction; independent: one row per (b, k) direction
        coef = jnp.sum(coef, axis=1) if shared_direction else coef.reshape(-1)
        scale = normalization(distribution, x) / num_directions
        return _combine(coef, u, x, scale), _calls(2 * num_directions * num_radii)

    return estimate


def two_point(radius=1e-2, *, num_directions: int = 1, distribution: str = "sphere",
              eval_batch_size: int | None = None) -> Estimator:
    r"""The two-point (central difference) random-direction estimator.

    .. math::

        g = \frac{c}{B} \sum_{b=1}^{B} \frac{f(x + r u_b) - f(x - r u_b)}{2r}\, u_b,

    :math:`c = d` for sphere directions, 1 for Gaussian / Rademacher ones. Its bias is
    :math:`O(r^2)` (the Taylor expansion of :math:`D(r)` has only even powers of :math:`r`).
    With ``distribution="rademacher"`` and ``num_directions=1`` it is SPSA with perturbation
    size ``radius``; with ``"gaussian"`` it is Gaussian smoothing.

    Args:
      radius: :math:`r > 0` (float, default ``1e-2``).
      num_directions: :math:`B \ge 1` (static int, default 1); cost :math:`2B` evaluations.
      distribution: ``"sphere"`` (default), ``"gaussian"`` or ``"rademacher"`` (static).
      eval_batch_size: ``None`` (one ``vmap``, default) or a static int ``>= 1``.

    Returns:
      ``estimate(value_fn, x, key) -> (g, {"oracle_calls": 2B})`` (see
      :func:`central_difference_estimator` for the key layout).

    Example:
      >>> est = two_point(1e-3, num_directions=8)
      >>> f = lambda x, key: jnp.sum(x ** 2)
      >>> g, info = est(f, jnp.ones(5), jax.random.key(0))
      >>> int(info["oracle_calls"])
      16

    References:
      Nesterov & Spokoiny 2017; Duchi et al. 2015; Spall 1992 (see the module docstring).
    """
    return central_difference_estimator(radius, scales=(1.0,), weights=(1.0,),
                                        num_directions=num_directions, distribution=distribution,
                                        eval_batch_size=eval_batch_size)


def forward_difference(radius=1e-2, *, num_directions: int = 1, distribution: str = "sphere",
                       eval_batch_size: int | None = None) -> Estimator:
    r"""The one-sided (forward difference) random-direction estimator.

    .. math::

        g = \frac{c}{B} \sum_{b=1}^{B} \frac{f(x + r u_b) - f(x)}{r}\, u_b,

    with one shared evaluation of :math:`f(x)`: :math:`B + 1` evaluations in one batched call
    (``f(x)`` last; each evaluation with its own key). Its bias is :math:`O(r)`.

    Args:
      radius: :math:`r > 0` (float, default ``1e-2``).
      num_directions: :math:`B \ge 1` (static int, default 1).
      distribution: ``"sphere"`` (default), ``"gaussian"`` or ``"rademacher"`` (static).
      eval_batch_size: ``None`` (one ``vmap``, default) or a static int ``>= 1``.

    Returns:
      ``estimate(value_fn, x, key) -> (g, {"oracle_calls": B + 1})``.
    """
    num_directions, eval_batch_size = _check_common(radius, num_directions, distribution,
                                                    eval_batch_size)

    def estimate(value_fn, x, key):
        ct = _common_dtype(x)
        k_dir, k_eval = jax.random.split(key)
        u = _sample_flat(k_dir, dimension(x), num_directions, distribution, ct)
        r = jnp.asarray(radius, ct)
        xf = _ravel(x, ct)
        pts = jnp.concatenate([xf[None] + r * u, xf[None]], 0)
        n = num_directions + 1
        vals = _evaluate(value_fn, x, pts, jax.random.split(k_eval, n), eval_batch_size)
        vals = jnp.asarray(vals).astype(ct)
        coef = (vals[:-1] - vals[-1]) / r
        scale = normalization(distribution, x) / num_directions
        return _combine(coef, u, x, scale), _calls(n)

    return estimate


# --------------------------------------------------------------------------- the optimizer


def zo_optimizer(estimator: Estimator, transformation: optax.GradientTransformation, *,
                 field: str = "value") -> base.OracleAlgorithm:
    r"""Any zeroth-order estimator fed to any optax transformation, as an ``OracleAlgorithm``.

    Each update draws :math:`g_t` = ``estimator(getattr(oracle, field), x_t, key)`` and applies
    ``transformation``:

    .. math:: (\Delta_t, s_{t+1}) = \text{tx.update}(g_t, s_t, x_t),\qquad
              x_{t+1} = x_t + \Delta_t.

    Args:
      estimator: ``estimate(value_fn, x, key) -> (g, info)`` (e.g. :func:`two_point`,
        :func:`jaxopt_icml.zeroth_order.romberg_zoge.romberg_zoge`).
      transformation: any ``optax.GradientTransformation`` (``optax.sgd(schedule)``,
        ``optax.adam(...)``, a chain ...); it receives ``params=x``.
      field: the oracle's zeroth-order method, called as ``value_fn(x, key) -> scalar``
        (static non-empty string, default ``"value"``).

    Returns:
      ``OracleAlgorithm`` with state ``base.TransformationState(x, inner)``; ``Step.x`` is
      :math:`x_{t+1}` (dtype of ``x0``: optax casts updates back to the parameter dtype) and
      ``Step.info`` is the estimator's info (``"oracle_calls"``: its evaluations this step).

    Raises:
      ValueError: if ``estimator`` is not callable, ``transformation`` is not an optax
        transformation, or ``field`` is not a non-empty string; when the update is traced, if
        the estimate differs from ``x`` in tree structure or leaf shape (the message names the
        leaf).

    Example:
      >>> alg = zo_optimizer(two_point(1e-3, num_directions=2), optax.sgd(0.05))
      >>> # base.run(alg, x0, oracle_with_value_method, key, num_steps)

    Paper mapping:
      Romberg-ZOGE's "ZO-SGD with any optimizer at a fixed number of evaluations per estimate"
      is ``zo_optimizer(romberg_zoge(r, levels=R), optax.sgd(schedule))``; the budget per step
      is ``info["oracle_calls"]``.
    """
    if not callable(estimator):
        raise ValueError(f"estimator must be callable estimate(value_fn, x, key), got "
                         f"{estimator!r}")
    if not isinstance(transformation, optax.GradientTransformation
                      | optax.GradientTransformationExtraArgs):
        raise ValueError("transformation must be an optax.GradientTransformation, got "
                         f"{type(transformation).__name__}")
    if not isinstance(field, str) or not field:
        raise ValueError(f"field must be a non-empty oracle method name, got {field!r}")
    tx = transformation

    def init(x0, key):
        del key
        return base.TransformationState(x=x0, inner=tx.init(x0))

    def update(state, oracle, key):
        g, info = estimator(getattr(oracle, field), state.x, key)
        check_same_shapes("estimator(value_fn, x)[0]", g, "x", state.x, context="zo_optimizer")
        updates, inner = tx.update(g, state.inner, state.x)
        x = optax.apply_updates(state.x, updates)
        info = dict(info)
        info["oracle_calls"] = jnp.asarray(info["oracle_calls"], jnp.int32)
        return base.Step(x=x, info=info), base.TransformationState(x=x, inner=inner)

    return base.OracleAlgorithm(init=init, update=update)
