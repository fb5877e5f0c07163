r"""Shared machinery of DeVA's Schatten form and the SOAP baseline: the matrix sign and the
eigenbasis bookkeeping.

* :func:`newton_schulz`: the quintic Newton-Schulz iteration Muon uses (our own
  implementation, coefficients :data:`NS_COEFFS`), an approximate polar factor
  :math:`\operatorname{msign}(X) = UV^\top`; :func:`polar_svd` is the exact one by an SVD.
* The SOAP-style eigenbasis transform (Vyas et al., 2024): per matrix leaf, EMAs of
  :math:`GG^\top` and :math:`G^\top G`, their eigenbases :math:`Q_L, Q_R` (initialised by
  ``eigh`` on the first update, refreshed every ``precondition_frequency`` updates by one power
  step and a QR), and a per-optimizer direction computed on the rotated gradient
  :math:`Q_L^\top G Q_R` and rotated back. :func:`~jaxopt_icml.optim.deva.scale_by_deva_schatten`
  and :func:`~jaxopt_icml.optim.deva_baselines.scale_by_soap` differ only in that direction; both
  carry :class:`ScaleByEigenbasisState`.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxopt_icml.optim.eigenbasis import polar_svd
  >>> polar_svd(jnp.diag(jnp.array([2.0, -3.0]))).tolist()
  [[1.0, 0.0], [0.0, -1.0]]

References:
  Keller Jordan et al., "Muon: An optimizer for hidden layers in neural networks", 2024.
  Nikhil Vyas et al., "SOAP: Improving and Stabilizing Shampoo using Adam", arXiv:2409.11321.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.hyperparams import (
    check_bool,
    check_float_dtype,
    check_static_int,
    check_unit_interval,
    compute_dtype,
    resolve,
)
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "newton_schulz",
    "ScaleByEigenbasisState",
    "polar_svd",
]

PyTree = Any

#: Quintic Newton-Schulz coefficients (a, b, c) of Muon (Jordan et al., 2024), also used by the
#: official DeVA code: x <- a x + (b A + c A^2) x with A = x x^T.
NS_COEFFS = (3.4445, -4.7750, 2.0315)

# Defaults of the static ints of DeVA's Schatten form and SOAP. The constructors take ``None``
# for "the default", so that ``optax.inject_hyperparams`` (which turns every int it is given
# into a traced array) leaves them alone unless the caller sets them.
_PRECONDITION_FREQUENCY = 10
_MAX_PRECOND_DIM = 10000
_NS_STEPS = 5


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
    # optax's Muon, whose coefficients live in its state). The arithmetic is the same either
    # way.
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


def _lr_chain(direction, weight_decay, learning_rate):
    return optax.chain(direction, optax.add_decayed_weights(weight_decay),
                       optax.scale_by_learning_rate(learning_rate))


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
        del extra_args
        check_same_shapes("updates", updates, "params", params, context=name)
        check_same_shapes("updates", updates, "state.mu", state.mu, context=name)
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
    return freq, dim, check_float_dtype("mu_dtype", mu_dtype)
