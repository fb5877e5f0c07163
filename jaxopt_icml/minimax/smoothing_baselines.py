r"""Projection-based baselines for constrained saddle points, with the oracle protocol of
:mod:`jaxopt_icml.minimax.dual_smoothing` (``oracle.grads(x, y, key) -> (grad_x f, grad_y f)``).

* :func:`projected_extragradient` (Euclidean mirror-prox): with ``F(z) = (grad_x f, -grad_y f)``,
  ``w_k = P(z_k - eta F(z_k))``, ``z_{k+1} = P(z_k - eta F(w_k))``; the averages are over the
  extrapolated points ``w_k`` (the ones the ``O(1/k)`` ergodic gap bound is about).
  ``minimax.extragradient`` (an optax transformation) has no projection, hence this one.
* :func:`smoothed_agda` (Zhang et al. 2020): gradient descent-ascent on
  ``f(x, y) + (p/2)||x - z||^2`` with a slowly moving proximal centre ``z``:
  ``x_{k+1} = P_X(x_k - c (grad_x f(x_k, y_k) + p (x_k - z_k)))``,
  ``y_{k+1} = P_Y(y_k + alpha grad_y f(x_{k+1}, y_k))``,
  ``z_{k+1} = z_k + beta (x_{k+1} - z_k)``.

Alternating projected GDA and the naive FW-GDA are
:func:`~jaxopt_icml.minimax.dual_smoothing.projected_gda` and
:func:`~jaxopt_icml.minimax.dual_smoothing.fw_gda` (special cases of the dual smoothing method).

Both keep uniform running averages ``x_avg``, ``y_avg`` for duality gaps, and raise a
``ValueError`` naming the leaf when an oracle gradient's shape differs from its variable's
(checked when the update is traced).

References:
  * A. Nemirovski. Prox-method with rate of convergence O(1/t) for variational inequalities with
    Lipschitz continuous monotone operators and smooth convex-concave saddle point problems.
    SIAM J. Optim., 2004.
  * J. Zhang, P. Xiao, R. Sun, Z.-Q. Luo. A single-loop smoothed gradient descent-ascent
    algorithm for nonconvex-concave min-max problems. NeurIPS 2020.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_float, compute_dtype, resolve, to_compute
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "projected_extragradient",
    "smoothed_agda",
    "ProjectedEGState",
    "SmoothedAGDAState",
]


class ProjectedEGState(NamedTuple):
    """State of :func:`projected_extragradient`: iterates, int32 ``count`` and the uniform
    averages of the extrapolated points."""

    x: Any
    y: Any
    count: jax.Array
    x_avg: Any
    y_avg: Any


class SmoothedAGDAState(NamedTuple):
    """State of :func:`smoothed_agda`: iterates, the proximal centre ``z``, int32 ``count`` and
    uniform averages of ``x_1..``, ``y_1..``."""

    x: Any
    y: Any
    z: Any
    count: jax.Array
    x_avg: Any
    y_avg: Any


def _check_projections(proj_x, proj_y):
    for name, p in (("proj_x", proj_x), ("proj_y", proj_y)):
        if not callable(p):
            raise ValueError(f"{name} must be a callable projection, got {p!r}")


def _grads(oracle, x, y, key, name):
    """``oracle.grads(x, y, key)``, each part checked against the shape of its variable."""
    gx, gy = oracle.grads(x, y, key)
    check_same_shapes("oracle.grads(x, y)[0]", gx, "x", x, context=name)
    check_same_shapes("oracle.grads(x, y)[1]", gy, "y", y, context=name)
    return gx, gy


def _avg(old, new, count):
    """Uniform running average after ``count + 1`` points (compute dtype, cast back)."""
    def leaf(o, n):
        c = compute_dtype(o.dtype)
        r = 1.0 / (count.astype(c) + 1.0)
        return (o.astype(c) + r * (n.astype(c) - o.astype(c))).astype(o.dtype)
    return jax.tree.map(leaf, old, new)


def projected_extragradient(step_size: float | Callable = 0.1, *, proj_x: Callable,
                            proj_y: Callable) -> base.OracleAlgorithm:
    """Projected extragradient (Euclidean mirror-prox) as an ``OracleAlgorithm``.

    Args:
      step_size: ``eta > 0`` (float or schedule); ``eta < 1/L`` for ``L``-smooth ``f``.
      proj_x, proj_y: projections onto ``X`` and ``Y``. Static.

    Returns:
      ``OracleAlgorithm``: ``init((x0, y0), key)`` -> :class:`ProjectedEGState`; ``update``
      returns ``Step((x_{k+1}, y_{k+1}), {"oracle_calls": 2})``.

    Example:
      >>> from jaxopt_icml.minimax import lmo
      >>> alg = projected_extragradient(0.1, proj_x=lmo.simplex_projection(),
      ...                               proj_y=lmo.simplex_projection())
    """
    check_float("step_size", step_size)
    _check_projections(proj_x, proj_y)

    def init(z0, key):
        del key
        x0, y0 = z0
        return ProjectedEGState(x0, y0, jnp.zeros([], jnp.int32), x0, y0)

    def update(state, oracle, key):
        x, y, k = state.x, state.y, state.count
        k1, k2 = jax.random.split(key)
        xc, yc = to_compute(x), to_compute(y)
        eta = resolve(step_size, k, xc.dtype)
        gx, gy = _grads(oracle, x, y, k1, "projected_extragradient")
        wx = proj_x(xc - eta * gx.astype(xc.dtype)).astype(x.dtype)
        wy = proj_y(yc + eta * gy.astype(yc.dtype)).astype(y.dtype)
        hx, hy = _grads(oracle, wx, wy, k2, "projected_extragradient")
        x_new = proj_x(xc - eta * hx.astype(xc.dtype)).astype(x.dtype)
        y_new = proj_y(yc + eta * hy.astype(yc.dtype)).astype(y.dtype)
        new = ProjectedEGState(x_new, y_new, k + 1, _avg(state.x_avg, wx, k),
                               _avg(state.y_avg, wy, k))
        return base.Step((x_new, y_new), {"oracle_calls": jnp.asarray(2, jnp.int32)}), new

    return base.OracleAlgorithm(init, update)


def smoothed_agda(step_x: float | Callable = 0.1, step_y: float | Callable = 0.1, *,
                  proj_x: Callable, proj_y: Callable, prox: float = 1.0,
                  beta: float = 0.5) -> base.OracleAlgorithm:
    """Smoothed alternating GDA (Zhang et al., NeurIPS 2020) as an ``OracleAlgorithm``.

    Args:
      step_x: ``c > 0`` (float or schedule). step_y: ``alpha > 0``.
      proj_x, proj_y: projections onto ``X`` and ``Y``. Static.
      prox: ``p > 0``, the weight of ``(p/2)||x - z||^2`` (the paper takes ``p`` about ``2L``).
      beta: ``beta`` in ``(0, 1]``, the speed of the centre ``z``.

    Returns:
      ``OracleAlgorithm``: ``init((x0, y0), key)`` -> :class:`SmoothedAGDAState` (``z_0 =
      x_0``); ``update`` returns ``Step((x_{k+1}, y_{k+1}), {"oracle_calls": 2})``.

    Example:
      >>> from jaxopt_icml.minimax import lmo
      >>> alg = smoothed_agda(0.1, 0.1, proj_x=lmo.l1_ball_projection(5.0),
      ...                     proj_y=lmo.simplex_projection())
    """
    check_float("step_x", step_x)
    check_float("step_y", step_y)
    check_float("prox", prox, allow_schedule=False)
    check_float("beta", beta, high=1.0, allow_schedule=False)
    _check_projections(proj_x, proj_y)

    def init(z0, key):
        del key
        x0, y0 = z0
        return SmoothedAGDAState(x0, y0, x0, jnp.zeros([], jnp.int32), x0, y0)

    def update(state, oracle, key):
        x, y, z, k = state.x, state.y, state.z, state.count
        k1, k2 = jax.random.split(key)
        xc, yc, zc = to_compute(x), to_compute(y), to_compute(z)
        c, a = resolve(step_x, k, xc.dtype), resolve(step_y, k, yc.dtype)
        p, b = jnp.asarray(prox, xc.dtype), jnp.asarray(beta, xc.dtype)
        gx, _ = _grads(oracle, x, y, k1, "smoothed_agda")
        x_new = proj_x(xc - c * (gx.astype(xc.dtype) + p * (xc - zc))).astype(x.dtype)
        _, gy = _grads(oracle, x_new, y, k2, "smoothed_agda")
        y_new = proj_y(yc + a * gy.astype(yc.dtype)).astype(y.dtype)
        z_new = (zc + b * (x_new.astype(zc.dtype) - zc)).astype(z.dtype)
        new = SmoothedAGDAState(x_new, y_new, z_new, k + 1, _avg(state.x_avg, x_new, k),
                                _avg(state.y_avg, y_new, k))
        return base.Step((x_new, y_new), {"oracle_calls": jnp.asarray(2, jnp.int32)}), new

    return base.OracleAlgorithm(init, update)
