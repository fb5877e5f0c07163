r"""Linear minimization oracles and Euclidean projections onto simple compact convex sets.

A linear minimization oracle (LMO) of a compact convex set ``C`` returns a minimiser of a linear
function over it, :math:`\mathrm{LMO}_C(g) \in \arg\min_{s \in C} \langle g, s\rangle`; a
projection returns :math:`P_C(z) = \arg\min_{s \in C} \|s - z\|_2`. Projection-free methods
(Frank-Wolfe, :func:`~jaxopt_icml.minimax.dual_smoothing.dual_dynamic_smoothing`) call the first,
projected-gradient methods the second.

Every constructor returns a pure, jittable and vmappable function of one array:

* ``lmo(g, key=None) -> s`` (same shape and dtype as ``g``). Only :func:`nuclear_ball_lmo` reads
  the key (the start of its power iteration); the others are exact and deterministic: ties are
  broken by the first index (``jnp.argmin``/``jnp.argmax``), so vmapped runs are reproducible
  and do not zig-zag between equally good vertices at random.
* ``proj(z) -> P_C(z)`` (same shape and dtype).

Arithmetic runs in float32 for 16-bit inputs (``hyperparams.compute_dtype``) and the result is cast
back.

=====================  ==============================================  ===========================
set                    LMO (exact unless noted)                        projection
=====================  ==============================================  ===========================
simplex (sum = s)      ``s e_i``, ``i = argmin g`` (first on ties)     sort-based (Held et al.)
l1 ball (radius r)     ``-r sign(g_i) e_i``, ``i = argmax |g|``        simplex of ``|z|``, signs
l2 ball (radius r)     ``-r g / ||g||`` (``0`` for ``g = 0``)          ``z min(1, r/||z||)``
box ``[lo, hi]``       ``lo`` where ``g > 0``, else ``hi``             ``clip``
nuclear ball (r)       ``-r u v^T``, top pair by power iteration       SVD, singular values onto
                                                                       ``{s >= 0, sum s <= r}``
=====================  ==============================================  ===========================

References:
  * M. Jaggi. Revisiting Frank-Wolfe: projection-free sparse convex optimization. ICML 2013.
  * M. Held, P. Wolfe, H. Crowder. Validation of subgradient optimization. Math. Programming,
    1974 (the sort-based simplex projection); J. Duchi, S. Shalev-Shwartz, Y. Singer,
    T. Chandra. Efficient projections onto the l1-ball for learning in high dimensions.
    ICML 2008.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxopt_icml.hyperparams import (
    check_float,
    check_static_int,
    concrete_float,
    to_compute,
)

# the library's one sort-based simplex projection, re-exported here (minimax's public name)
from jaxopt_icml.projections import project_simplex

__all__ = [
    "simplex_lmo",
    "simplex_projection",
    "project_simplex",
    "l1_ball_lmo",
    "l1_ball_projection",
    "l2_ball_lmo",
    "l2_ball_projection",
    "box_lmo",
    "box_projection",
    "nuclear_ball_lmo",
    "nuclear_ball_projection",
]


def _radius(name: str, value) -> float:
    check_float(name, value, allow_schedule=False)
    return value


# --------------------------------------------------------------------------- simplex


def simplex_lmo(scale: float = 1.0) -> Callable:
    """LMO of the simplex ``{x >= 0, sum x = scale}``: the vertex ``scale e_i`` at
    ``i = argmin g`` (the first minimiser on ties).

    Args:
      scale: total mass ``> 0``.

    Returns:
      ``lmo(g, key=None)`` for 1-D ``g`` (the key is ignored).

    Example:
      >>> import jax.numpy as jnp
      >>> simplex_lmo()(jnp.array([0.3, -1.0, -1.0]))
      Array([0., 1., 0.], dtype=float32)
    """
    _radius("scale", scale)

    def lmo(g, key=None):
        del key
        g = jnp.asarray(g)
        i = jnp.argmin(g)
        return (jnp.asarray(scale, g.dtype) * jax.nn.one_hot(i, g.shape[-1], dtype=g.dtype))

    return lmo


def simplex_projection(scale: float = 1.0) -> Callable:
    """Projection onto ``{x >= 0, sum x = scale}`` (:func:`project_simplex`).

    Example:
      >>> import jax.numpy as jnp
      >>> simplex_projection(2.0)(jnp.array([1.0, 1.0]))
      Array([1., 1.], dtype=float32)
    """
    _radius("scale", scale)
    return lambda z: project_simplex(z, scale)


# --------------------------------------------------------------------------- l1 / l2 balls


def l1_ball_lmo(radius: float = 1.0) -> Callable:
    """LMO of ``{||x||_1 <= radius}``: ``-radius sign(g_i) e_i`` at ``i = argmax |g_i|``
    (first on ties; ``0`` when ``g = 0``). Works on arrays of any shape (flattened).

    Example:
      >>> import jax.numpy as jnp
      >>> l1_ball_lmo(2.0)(jnp.array([0.5, -3.0, 1.0]))
      Array([0., 2., 0.], dtype=float32)
    """
    _radius("radius", radius)

    def lmo(g, key=None):
        del key
        g = jnp.asarray(g)
        flat = g.reshape(-1)
        i = jnp.argmax(jnp.abs(flat))
        s = -jnp.asarray(radius, g.dtype) * jnp.sign(flat[i])
        return (s * jax.nn.one_hot(i, flat.shape[0], dtype=g.dtype)).reshape(g.shape)

    return lmo


def l1_ball_projection(radius: float = 1.0) -> Callable:
    """Projection onto ``{||x||_1 <= radius}``: ``z`` itself inside the ball, else
    ``sign(z) * P_simplex(|z|, radius)`` (Duchi et al. 2008). Any shape (flattened).

    Example:
      >>> import jax.numpy as jnp
      >>> l1_ball_projection(1.0)(jnp.array([2.0, -0.5, 0.0]))
      Array([ 1., -0.,  0.], dtype=float32)
    """
    _radius("radius", radius)

    def proj(z):
        z = jnp.asarray(z)
        flat = to_compute(z).reshape(-1)
        r = jnp.asarray(radius, flat.dtype)
        out = jnp.sign(flat) * project_simplex(jnp.abs(flat), r)
        out = jnp.where(jnp.sum(jnp.abs(flat)) <= r, flat, out)
        return out.reshape(z.shape).astype(z.dtype)

    return proj


def l2_ball_lmo(radius: float = 1.0) -> Callable:
    """LMO of ``{||x||_2 <= radius}`` (Frobenius for matrices): ``-radius g / ||g||``,
    ``0`` when ``g = 0``.

    Example:
      >>> import jax.numpy as jnp
      >>> l2_ball_lmo(5.0)(jnp.array([3.0, 4.0]))
      Array([-3., -4.], dtype=float32)
    """
    _radius("radius", radius)

    def lmo(g, key=None):
        del key
        g = jnp.asarray(g)
        gc = to_compute(g)
        n = jnp.sqrt(jnp.sum(gc * gc))
        safe = jnp.where(n > 0, n, 1.0)
        return jnp.where(n > 0, -jnp.asarray(radius, gc.dtype) * gc / safe, 0.0).astype(g.dtype)

    return lmo


def l2_ball_projection(radius: float = 1.0) -> Callable:
    """Projection onto ``{||x||_2 <= radius}``: ``z min(1, radius / ||z||)``.

    Example:
      >>> import jax.numpy as jnp
      >>> l2_ball_projection(1.0)(jnp.array([3.0, 4.0]))
      Array([0.6, 0.8], dtype=float32)
    """
    _radius("radius", radius)

    def proj(z):
        z = jnp.asarray(z)
        zc = to_compute(z)
        n = jnp.sqrt(jnp.sum(zc * zc))
        r = jnp.asarray(radius, zc.dtype)
        scale = jnp.where(n > r, r / jnp.where(n > 0, n, 1.0), 1.0)
        return (zc * scale).astype(z.dtype)

    return proj


# --------------------------------------------------------------------------- box


def _bounds(lower, upper):
    lo, hi = concrete_float(lower), concrete_float(upper)
    if lo is None or hi is None:
        raise ValueError(f"lower and upper must be finite floats, got {lower!r}, {upper!r}")
    check_float("lower", lo, low=-float("inf"), strict=False, allow_schedule=False)
    check_float("upper", hi, low=-float("inf"), strict=False, allow_schedule=False)
    if lo > hi:
        raise ValueError(f"need lower <= upper, got lower={lower!r}, upper={upper!r}")
    return lo, hi


def box_lmo(lower: float = -1.0, upper: float = 1.0) -> Callable:
    """LMO of the box ``[lower, upper]^n``: ``lower`` where ``g > 0``, else ``upper``.

    Example:
      >>> import jax.numpy as jnp
      >>> box_lmo(0.0, 2.0)(jnp.array([1.0, -1.0, 0.0]))
      Array([0., 2., 2.], dtype=float32)
    """
    lo, hi = _bounds(lower, upper)

    def lmo(g, key=None):
        del key
        g = jnp.asarray(g)
        return jnp.where(g > 0, jnp.asarray(lo, g.dtype), jnp.asarray(hi, g.dtype))

    return lmo


def box_projection(lower: float = -1.0, upper: float = 1.0) -> Callable:
    """Projection onto the box ``[lower, upper]^n``: ``clip``.

    Example:
      >>> import jax.numpy as jnp
      >>> box_projection(0.0, 1.0)(jnp.array([-1.0, 0.5, 3.0]))
      Array([0. , 0.5, 1. ], dtype=float32)
    """
    lo, hi = _bounds(lower, upper)
    return lambda z: jnp.clip(jnp.asarray(z), lo, hi).astype(jnp.asarray(z).dtype)


# --------------------------------------------------------------------------- nuclear ball


def nuclear_ball_lmo(radius: float = 1.0, *, num_iters: int = 30) -> Callable:
    r"""LMO of the nuclear-norm ball ``{||X||_* <= radius}``: ``-radius u v^T`` with
    ``(u, v)`` the top singular pair of ``G``, by ``num_iters`` power iterations on ``G^T G``.

    The start ``v_0`` is Gaussian from ``key`` (a fixed key when ``key`` is ``None``). Power
    iteration converges like ``(s_2/s_1)^{2 t}``; with too few iterations the LMO is inexact
    (``<G, S>`` above its minimum ``-radius s_1``), which shows as a Frank-Wolfe gap that can go
    negative. Cost ``O(num_iters m n)`` against ``O(m n min(m, n))`` for a full SVD.

    Args:
      radius: ``> 0``.
      num_iters: static int ``>= 1``.

    Returns:
      ``lmo(G, key=None)`` for 2-D ``G``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> S = nuclear_ball_lmo(1.0)(jnp.diag(jnp.array([3.0, 1.0])), jax.random.key(0))
      >>> bool(jnp.allclose(jnp.abs(S), jnp.array([[1.0, 0.0], [0.0, 0.0]]), atol=1e-5))
      True
    """
    _radius("radius", radius)
    num_iters = check_static_int("num_iters", num_iters, low=1)

    def lmo(g, key=None):
        g = jnp.asarray(g)
        if g.ndim != 2:
            raise ValueError(f"nuclear_ball_lmo needs a matrix, got shape {g.shape}")
        gc = to_compute(g)
        key = jax.random.key(0) if key is None else key
        v = jax.random.normal(key, (gc.shape[1],), gc.dtype)

        def body(_, v):
            w = (gc @ v) @ gc  # = G^T G v; 3x faster on CPU than gc.T @ (gc @ v)
            return w / jnp.maximum(jnp.linalg.norm(w), jnp.finfo(gc.dtype).tiny)

        v = jax.lax.fori_loop(0, num_iters, body, v / jnp.linalg.norm(v))
        u = gc @ v
        un = jnp.linalg.norm(u)
        u = jnp.where(un > 0, u / jnp.where(un > 0, un, 1.0), 0.0)
        return (-jnp.asarray(radius, gc.dtype) * jnp.outer(u, v)).astype(g.dtype)

    return lmo


def nuclear_ball_projection(radius: float = 1.0) -> Callable:
    """Projection onto ``{||X||_* <= radius}``: ``U diag(P(s)) V^T`` with ``X = U diag(s) V^T``
    (full SVD) and ``P`` the projection of ``s >= 0`` onto ``{t >= 0, sum t <= radius}``.

    Example:
      >>> import jax.numpy as jnp
      >>> P = nuclear_ball_projection(1.0)(jnp.diag(jnp.array([3.0, 1.0])))
      >>> bool(jnp.allclose(P, jnp.diag(jnp.array([1.0, 0.0])), atol=1e-6))
      True
    """
    _radius("radius", radius)

    def proj(z):
        z = jnp.asarray(z)
        zc = to_compute(z)
        U, s, Vt = jnp.linalg.svd(zc, full_matrices=False)
        r = jnp.asarray(radius, zc.dtype)
        t = jnp.where(jnp.sum(s) <= r, s, project_simplex(s, r))
        return ((U * t[None, :]) @ Vt).astype(z.dtype)

    return proj
