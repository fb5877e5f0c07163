r"""EF and EF21 with compressed messages, their tight step sizes and Lyapunov bounds.

Problem: :math:`\min_x f(x) = \frac1n\sum_{i=1}^n f_i(x)`, worker :math:`i` holding
:math:`f_i` (:math:`\mu`-strongly convex, :math:`L`-smooth) and a compressor :math:`C` with
:math:`\|C(v) - v\|^2 \le (1-\delta)\|v\|^2` (``compressor.alpha(d)`` is :math:`\delta`). With
:math:`s = \sqrt{1-\delta}`:

**EF** (classic error feedback; the step size is inside the compressed quantity)

.. math:: v_i = \eta\nabla f_i(x_k) + e_i,\quad m_i = C(v_i),\quad e_i \leftarrow v_i - m_i,
   \quad x_{k+1} = x_k - \tfrac1n\textstyle\sum_i m_i.

**EF21** (the step size is outside)

.. math:: x_{k+1} = x_k - \eta\,\bar c,\quad m_i = C(\nabla f_i(x_{k+1}) - c_i),\quad
   c_i \leftarrow c_i + m_i,\quad \bar c \leftarrow \bar c + \tfrac1n\textstyle\sum_i m_i.

Workers send only :math:`m_i`; the mean is ``lax.pmean`` over the ``"workers"`` axis (the
simulation moves dense arrays, ``info["bits_sent"]`` counts the compressed message exactly).

**Tight step and rate** (both methods, Berg Thomsen, Taylor, Dieuleveut, ICML 2026, with
:math:`\mu + L` replaced by the mean of :math:`\mu_i + L_i` over agents):

.. math:: \eta^\star = \frac{2}{\mu + L}\,\frac{1 - s}{1 + s},\qquad
   \rho = s + \tfrac14(1+s)(L-\mu)\,\lambda,\quad
   \lambda = \frac{\eta^\star}{\mu+L}\Big[(1-s)(L-\mu) + (1+s)\sqrt{(L-\mu)^2
   + \tfrac{16 L\mu s}{(1+s)^2}}\Big],

and :math:`V_{k+1} \le \rho V_k` for the Lyapunov functions (per agent average)

.. math:: V^{\rm EF21} = \tfrac1n\textstyle\sum_i\|\nabla f_i(x) - c_i\|^2 + s\|\nabla f(x)\|^2,
   \qquad V^{\rm EF} = \tfrac1n\sum_i\|x - x^\star - e_i\|^2 + \tfrac1s\|\bar e\|^2,

so :math:`\|\nabla f(x_k)\|^2 \le \rho^k V^{\rm EF21}_0/s` and
:math:`\|x_k - x^\star\|^2 \le (1 + s)\rho^k V^{\rm EF}_0`, independently of :math:`n`. At
:math:`\delta = 1` this is gradient descent's :math:`((L-\mu)/(L+\mu))^2`.

The oracle's gradient must have the tree structure and leaf shapes of ``x`` (checked when the
update is traced: a mismatch raises a ``ValueError`` naming the leaf instead of being flattened
into a vector of the right length by accident).

References:
  Daniel Berg Thomsen, Adrien Taylor, Aymeric Dieuleveut, *A Tight Theory of Error Feedback
  Algorithms in Distributed Optimization*, ICML 2026, arXiv:2605.31594; single-agent
  predecessor *Tight analyses of first-order methods with error feedback*, arXiv:2506.05271.
  Seide et al. 2014 / Stich et al. 2018 (EF); Richtarik, Sokolov, Fatkhullin 2021 (EF21).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml import base
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml.distributed.compressors import Compressor
from jaxopt_icml.hyperparams import check_choice, check_float, compute_dtype
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "ef",
    "ef21",
    "optimal_step_size",
    "tight_rate",
    "lyapunov_ef",
    "lyapunov_ef21",
    "rotation_spectral_radius",
    "EFState",
    "EF21State",
    "ef_worker",
    "ef21_worker",
]

PyTree = Any
METHODS = ("ef", "ef21", "cgd")


class EFState(NamedTuple):
    """One EF worker: the (replicated) iterate and its error memory ``e_i`` (flat, in the
    compute dtype: float32 for 16-bit leaves)."""

    x: PyTree
    error: jax.Array


class EF21State(NamedTuple):
    """One EF21 worker: the iterate, its gradient estimate ``c_i`` and the server average
    ``c_bar`` (flat, compute dtype)."""

    x: PyTree
    memory: jax.Array
    mean_memory: jax.Array


# --------------------------------------------------------------------------- flat vectors


def _compute_dtype(x):
    leaves = jax.tree.leaves(x)
    return jnp.result_type(*[compute_dtype(jnp.asarray(a).dtype) for a in leaves])


def _flatten(tree, dtype):
    leaves = jax.tree.leaves(tree)
    return jnp.concatenate([jnp.ravel(a).astype(dtype) for a in leaves])


def _unflatten(flat, like):
    leaves, treedef = jax.tree.flatten(like)
    out, start = [], 0
    for a in leaves:
        size = int(np.prod(jnp.shape(a), dtype=np.int64))
        out.append(flat[start:start + size].reshape(jnp.shape(a)).astype(a.dtype))
        start += size
    return treedef.unflatten(out)


def _size(x) -> int:
    return int(sum(np.prod(jnp.shape(a), dtype=np.int64) for a in jax.tree.leaves(x)))


def _check_args(compressor, learning_rate, axis_name):
    if not isinstance(compressor, Compressor):
        raise ValueError(f"compressor must be a compressors.Compressor, got {compressor!r}")
    check_float("learning_rate", learning_rate, allow_schedule=False)
    if not isinstance(axis_name, str) or not axis_name:
        raise ValueError(f"axis_name must be a non-empty str, got {axis_name!r}")


def _info(bits):
    return {"oracle_calls": jnp.asarray(1, jnp.int32), "bits_sent": jnp.asarray(bits, jnp.float32)}


# --------------------------------------------------------------------------- algorithms


def ef_worker(compressor: Compressor, learning_rate: float, *,
              axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""One EF worker (collectives over ``axis_name``); see :func:`ef`."""
    _check_args(compressor, learning_rate, axis_name)
    lr = learning_rate  # a float, or a tracer in a vmapped sweep

    def init(x0, key):
        del key
        return EFState(x=x0, error=jnp.zeros((_size(x0),), _compute_dtype(x0)))

    def update(state, oracle, key):
        ct = state.error.dtype
        k_grad, k_comp = jax.random.split(key)
        g = oracle.grad(state.x, k_grad)
        check_same_shapes("oracle.grad(x)", g, "x", state.x, context="ef")
        g = _flatten(g, ct)
        v = jnp.asarray(lr, ct) * g + state.error
        m, bits = compressor.compress(v, k_comp)
        x = _flatten(state.x, ct) - jax.lax.pmean(m, axis_name)
        x = _unflatten(x, state.x)
        return base.Step(x, _info(bits)), EFState(x=x, error=v - m)

    return base.OracleAlgorithm(init, update)


def ef21_worker(compressor: Compressor, learning_rate: float, *,
                axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""One EF21 worker (collectives over ``axis_name``); see :func:`ef21`."""
    _check_args(compressor, learning_rate, axis_name)
    lr = learning_rate  # a float, or a tracer in a vmapped sweep

    def init(x0, key):
        del key
        zeros = jnp.zeros((_size(x0),), _compute_dtype(x0))
        return EF21State(x=x0, memory=zeros, mean_memory=zeros)

    def update(state, oracle, key):
        ct = state.memory.dtype
        k_grad, k_comp = jax.random.split(key)
        x = _unflatten(_flatten(state.x, ct) - jnp.asarray(lr, ct) * state.mean_memory, state.x)
        g = oracle.grad(x, k_grad)
        check_same_shapes("oracle.grad(x)", g, "x", x, context="ef21")
        g = _flatten(g, ct)
        m, bits = compressor.compress(g - state.memory, k_comp)
        new = EF21State(x=x, memory=state.memory + m,
                        mean_memory=state.mean_memory + jax.lax.pmean(m, axis_name))
        return base.Step(x, _info(bits)), new

    return base.OracleAlgorithm(init, update)


def ef(compressor: Compressor, learning_rate: float, *, num_workers: int, mesh=None,
       axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""Classic error feedback (EF) over ``num_workers`` workers.

    Per update (one gradient per worker, at the current iterate):
    :math:`v_i = \eta\nabla f_i(x) + e_i`, :math:`m_i = C(v_i)`, :math:`e_i \leftarrow v_i -
    m_i`, :math:`x \leftarrow x - \frac1n\sum_i m_i` (``lax.pmean``). :math:`e_i^0 = 0`.

    Args:
      compressor: a :class:`~jaxopt_icml.distributed.compressors.Compressor` applied to each
        worker's flattened message (all leaves concatenated).
      learning_rate: :math:`\eta > 0` (float, or a traced scalar when sweeping under
        ``vmap``; :func:`optimal_step_size` gives the tight :math:`\eta^\star`).
      num_workers: number of workers (static int >= 1).
      mesh: ``None`` (vmap simulation on one device) or a mesh with axis ``axis_name`` of size
        ``num_workers`` (``jax.shard_map``).
      axis_name: collective axis name (default ``"workers"``).

    Returns:
      ``mesh.across_workers`` of :func:`ef_worker`: ``init(x0, key)``, ``update(state, oracle,
      key)`` where the oracle has a leading worker axis and a method ``grad(x, key)``.
      ``Step.x`` is the new iterate; ``info`` has ``oracle_calls`` (= n) and ``bits_sent``
      (summed over workers). The error memory is kept in the compute dtype.

    Example:
      >>> from jaxopt_icml.distributed import compressors, error_feedback as efm
      >>> eta = efm.optimal_step_size(0.5, 1.0, 0.25, "ef")
      >>> alg = efm.ef(compressors.top_k(1), eta, num_workers=4)

    **Paper mapping**: :math:`\eta` -> ``learning_rate``, :math:`C` -> ``compressor``,
    :math:`\delta` -> ``compressor.alpha(d)``, agents -> workers; exactly the official PEP
    recurrence (``pepit_helpers.py``). **Theory**: :math:`V^{\rm EF}_{k+1} \le \rho V^{\rm
    EF}_k` at :math:`\eta^\star` for every :math:`n` (:func:`tight_rate`, :func:`lyapunov_ef`),
    checked step by step in ``tests/distributed/test_error_feedback.py`` and in the experiment.
    With heterogeneous minimisers EF does not converge linearly in general; the bound assumes a
    common minimiser.
    """
    return mesh_lib.across_workers(ef_worker(compressor, learning_rate, axis_name=axis_name),
                                   num_workers, mesh=mesh, axis_name=axis_name)


def ef21(compressor: Compressor, learning_rate: float, *, num_workers: int, mesh=None,
         axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""EF21 over ``num_workers`` workers.

    Per update: :math:`x \leftarrow x - \eta\bar c`, then one gradient per worker at the new
    :math:`x`, :math:`m_i = C(\nabla f_i(x) - c_i)`, :math:`c_i \leftarrow c_i + m_i`,
    :math:`\bar c \leftarrow \bar c + \frac1n\sum_i m_i` (``lax.pmean`` of the messages).
    :math:`c_i^0 = 0`, so the first update leaves :math:`x_0` in place and sets
    :math:`c_i^1 = C(\nabla f_i(x_0))`, the usual EF21 initialisation.

    Args:
      compressor, learning_rate, num_workers, mesh, axis_name: as in :func:`ef`.

    Returns:
      As :func:`ef`; the state holds ``memory`` (:math:`c_i`) and ``mean_memory``
      (:math:`\bar c`) per worker. With :func:`compressors.identity` this is gradient descent
      (tested).

    Example:
      >>> from jaxopt_icml.distributed import compressors, error_feedback as efm
      >>> eta = efm.optimal_step_size(0.5, 1.0, 0.1, "ef21")
      >>> alg = efm.ef21(compressors.top_k(5), eta, num_workers=8)

    **Paper mapping**: as :func:`ef` (:math:`c_i` -> ``memory``). **Theory**:
    :math:`V^{\rm EF21}_{k+1} \le \rho V^{\rm EF21}_k` at :math:`\eta^\star`, independent of
    :math:`n` and of heterogeneous minimisers (:func:`lyapunov_ef21`), checked step by step in
    the tests and on ridge regression over 1-8 agents in
    ``experiments/distributed/error_feedback.py``.
    """
    return mesh_lib.across_workers(ef21_worker(compressor, learning_rate, axis_name=axis_name),
                                   num_workers, mesh=mesh, axis_name=axis_name)


# --------------------------------------------------------------------------- theory


def _check_delta(delta):
    check_float("delta", delta, high=1.0, allow_schedule=False)
    return float(delta)


def _mean_sum(mu, L):
    mu, L = np.atleast_1d(np.asarray(mu, np.float64)), np.atleast_1d(np.asarray(L, np.float64))
    if mu.shape != L.shape or np.any(mu <= 0) or np.any(L < mu):
        raise ValueError(f"mu and L must be aligned with 0 < mu <= L, got mu={mu}, L={L}")
    return float(np.mean(mu + L))


def optimal_step_size(mu, L, delta: float, method: str = "ef21") -> float:
    r"""The tight step size :math:`\eta^\star`.

    EF and EF21: :math:`\frac{2}{\overline{\mu + L}}\frac{\delta}{(1+\sqrt{1-\delta})^2}`
    (:math:`= \frac{2}{\overline{\mu+L}}\frac{1-s}{1+s}`); CGD (:math:`x \leftarrow x -
    \eta C(\nabla f(x))`): :math:`\frac{2}{(1+s)(\mu+L)}`.

    Args:
      mu, L: strong convexity and smoothness (floats, or per-agent sequences: the mean of
        :math:`\mu_i + L_i` is used), ``0 < mu <= L``.
      delta: contraction parameter in ``(0, 1]``.
      method: ``"ef"``, ``"ef21"`` or ``"cgd"``.

    Returns:
      A Python float.
    """
    check_choice("method", method, METHODS)
    d = _check_delta(delta)
    total = _mean_sum(mu, L)
    s = math.sqrt(1.0 - d)
    if method == "cgd":
        return 2.0 / ((1.0 + s) * total)
    return 2.0 / total * d / (1.0 + s) ** 2


def tight_rate(mu: float, L: float, delta: float) -> float:
    r"""The tight Lyapunov contraction :math:`\rho` of EF and EF21 at :math:`\eta^\star`.

    :math:`V_{k+1} \le \rho V_k` (squared norms; the iterates contract like
    :math:`\sqrt\rho` per step). The formula is the one certified in the official symbolic
    proof (``certificates/EF21/upper_bound_CAS.wls``), see the module docstring.

    Args:
      mu, L: ``0 < mu <= L`` (the class bounds of every agent; scalars).
      delta: contraction parameter in ``(0, 1]``.

    Raises:
      ValueError: out-of-range ``mu``, ``L`` or ``delta``, or per-agent sequences.
    """
    d = _check_delta(delta)
    _mean_sum(mu, L)
    if np.ndim(mu) or np.ndim(L):  # the certified rate is for one (mu, L) class
        raise ValueError(f"tight_rate takes scalar mu and L (the class bounds), got mu={mu!r}, "
                         f"L={L!r}")
    mu, L = float(mu), float(L)
    s = math.sqrt(1.0 - d)
    eta = 2.0 / (L + mu) * (1.0 - s) / (1.0 + s)
    root = math.sqrt((L - mu) ** 2 + 16.0 * L * mu * s / (1.0 + s) ** 2)
    lam = eta / (L + mu) * ((1.0 - s) * (L - mu) + (1.0 + s) * root)
    return s + 0.25 * (1.0 + s) * (L - mu) * lam


def lyapunov_ef21(grads, memories, delta: float):
    r""":math:`V^{\rm EF21} = \frac1n\sum_i\|g_i - c_i\|^2 + \sqrt{1-\delta}\,\|\bar g\|^2`.

    Args:
      grads: :math:`\nabla f_i(x)`, shape ``(n, d)``.
      memories: :math:`c_i`, shape ``(n, d)``.
      delta: contraction parameter.
    """
    s = math.sqrt(1.0 - _check_delta(delta))
    gbar = jnp.mean(grads, axis=0)
    return jnp.mean(jnp.sum((grads - memories) ** 2, -1)) + s * jnp.sum(gbar ** 2)


def lyapunov_ef(x_minus_opt, errors, delta: float):
    r""":math:`V^{\rm EF} = \frac1n\sum_i\|x - x^\star - e_i\|^2 + \frac{1}{\sqrt{1-\delta}}
    \|\bar e\|^2` (``delta < 1``).

    Args:
      x_minus_opt: :math:`x - x^\star`, shape ``(d,)``.
      errors: :math:`e_i`, shape ``(n, d)``.
      delta: contraction parameter in ``(0, 1)``.
    """
    d = _check_delta(delta)
    if d >= 1.0:
        raise ValueError(f"delta must be < 1 for the EF Lyapunov function, got {delta!r}")
    s = math.sqrt(1.0 - d)
    ebar = jnp.mean(errors, axis=0)
    return (jnp.mean(jnp.sum((x_minus_opt[None] - errors) ** 2, -1))
            + jnp.sum(ebar ** 2) / s)


def rotation_spectral_radius(method: str, step_size: float, delta: float, lams, thetas):
    r"""Spectral radius of EF / EF21 / CGD on :math:`f_i = \frac{\lambda_i}2\|x\|^2`,
    :math:`x \in \mathbb R^2`, with the compressors :math:`C_i(v) = v - s R_{\theta_i} v`.

    The iteration is linear and every map is a polynomial in the commuting rotations, so it
    reduces to complex scalars :math:`z_i = e^{i\theta_i}`: EF21 on :math:`(x, c_1..c_n)`,
    EF on :math:`(x, e_1..e_n)`, CGD on :math:`x` (single agent). NumPy, float64.

    Args:
      method: ``"ef"``, ``"ef21"`` or ``"cgd"``.
      step_size: :math:`\eta`.
      delta: contraction parameter in ``(0, 1]``.
      lams, thetas: arrays of shape ``(..., n)`` (curvatures and angles per agent).

    Returns:
      The spectral radii, shape ``(...)``.
    """
    check_choice("method", method, METHODS)
    s = math.sqrt(1.0 - _check_delta(delta))
    lams = np.asarray(lams, np.float64)
    z = np.exp(1j * np.asarray(thetas, np.float64))
    lams, z = np.broadcast_arrays(lams, z)
    n = lams.shape[-1]
    eta = float(step_size)
    if method == "cgd":
        if n != 1:
            raise ValueError(f"cgd is single-agent here, got {n} agents")
        return np.abs(1.0 - eta * lams[..., 0] * (1.0 - s * z[..., 0]))
    batch = lams.shape[:-1]
    M = np.zeros(batch + (n + 1, n + 1), np.complex128)
    if method == "ef21":
        # x+ = x - (eta/n) sum c ;  c_i+ = s z_i c_i + (1 - s z_i) lam_i x+
        row_x = np.concatenate([np.ones(batch + (1,)), np.full(batch + (n,), -eta / n)], -1)
        M[..., 0, :] = row_x
        for i in range(n):
            a = (1.0 - s * z[..., i]) * lams[..., i]
            M[..., i + 1, :] = a[..., None] * row_x
            M[..., i + 1, i + 1] += s * z[..., i]
    else:
        # v_i = eta lam_i x + e_i ;  e_i+ = s z_i v_i ;  x+ = x - (1/n) sum (1 - s z_i) v_i
        M[..., 0, 0] = 1.0
        for i in range(n):
            w = (1.0 - s * z[..., i]) / n
            M[..., 0, 0] -= w * eta * lams[..., i]
            M[..., 0, i + 1] = -w
            M[..., i + 1, 0] = s * z[..., i] * eta * lams[..., i]
            M[..., i + 1, i + 1] = s * z[..., i]
    return np.max(np.abs(np.linalg.eigvals(M)), axis=-1)
