r"""Time-varying directed communication graphs as data: row- and column-stochastic weights.

A directed graph on ``n`` agents is an adjacency matrix ``A`` with ``A[i, j] = True`` when agent
``j`` can send to agent ``i`` (the edge :math:`j \to i`; ``i`` is an *out-neighbour* of ``j``, ``j``
an *in-neighbour* of ``i``). Push-Pull (AB) methods use two weight matrices on the same graph,
both with self-loops:

* the **pull** matrix :math:`R` is row-stochastic (:math:`R\mathbf 1 = \mathbf 1`):
  :math:`R_{ij} > 0` only for in-neighbours :math:`j` of :math:`i` (and :math:`j = i`); agent
  :math:`i` chooses its row and averages what it pulls;
* the **push** matrix :math:`C` is column-stochastic (:math:`\mathbf 1^\top C = \mathbf 1^\top`):
  :math:`C_{ij} > 0` only for out-neighbours :math:`i` of :math:`j` (and :math:`i = j`); agent
  :math:`j` chooses its column and splits what it pushes.

With uniform weights (:func:`graph_sequence`): :math:`R_{ij} = 1/(d^{\rm in}_i + 1)` and
:math:`C_{ij} = 1/(d^{\rm out}_j + 1)` on the edges and the diagonal. On an unbalanced digraph
(in-degrees :math:`\ne` out-degrees) :math:`R` is not column-stochastic and :math:`C` not
row-stochastic: consensus with :math:`R` alone weighs agents by the left Perron vector of
:math:`R` (:func:`left_perron_vector`), which is what biases row-only methods.

A :class:`GraphSequence` stores a periodic sequence :math:`(R_k, C_k)_{k=0}^{P-1}` as arrays of
shape ``(P, n, n)``; step ``t`` uses ``k = t mod P`` (:meth:`GraphSequence.at`). A sequence is
*B-strongly connected* when the union of the graphs of every window of ``B`` consecutive steps
is strongly connected (:func:`connectivity_window`), the assumption under which Push-Pull
converges on time-varying digraphs. :func:`time_varying_digraphs` guarantees it with a directed
ring backbone, present at every step (``window=1``) or one ``1/B``-th of it per step
(``window=B``: no single graph is strongly connected, every ``B`` consecutive ones are).

The checks (:func:`is_row_stochastic`, :func:`is_column_stochastic`,
:func:`is_strongly_connected`, :func:`connectivity_window`, :func:`left_perron_vector`) are
NumPy functions of concrete arrays; the generators are jittable (the key may be traced), so a
batch of random sequences (one per seed) is one ``jax.vmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxopt_icml.hyperparams import check_static_int

__all__ = [
    "GraphSequence",
    "complete_graph",
    "connectivity_window",
    "directed_ring",
    "graph_sequence",
    "is_column_stochastic",
    "is_row_stochastic",
    "is_strongly_connected",
    "left_perron_vector",
    "time_varying_digraphs",
]


class GraphSequence(struct.PyTreeNode):
    """A periodic sequence of pull (row-stochastic) and push (column-stochastic) matrices.

    Attributes:
      row: ``(P, n, n)``, ``row[k]`` = :math:`R_k`, row-stochastic, ``row[k, i, j] > 0`` only if
        ``j -> i`` is an edge at step ``k`` or ``i == j``.
      col: ``(P, n, n)``, ``col[k]`` = :math:`C_k`, column-stochastic, on the same graph.
    """

    row: jax.Array
    col: jax.Array

    @property
    def period(self) -> int:
        """``P``, the number of distinct steps (step ``t`` uses ``t mod P``)."""
        return self.row.shape[-3]

    @property
    def num_nodes(self) -> int:
        return self.row.shape[-1]

    def at(self, t):
        """``(R_t, C_t)`` at step ``t`` (an int or a traced int32 counter), ``t mod P``."""
        k = jnp.mod(jnp.asarray(t, jnp.int32), self.period)
        return self.row[k], self.col[k]

    def adjacency(self) -> np.ndarray:
        """``(P, n, n)`` bool: ``[k, i, j]`` when ``j -> i`` carries a message at step ``k``
        (a nonzero off-diagonal weight in ``R_k`` or ``C_k``). NumPy; needs concrete arrays."""
        a = (np.asarray(self.row) != 0) | (np.asarray(self.col) != 0)
        n = a.shape[-1]
        return a & ~np.eye(n, dtype=bool)


def _check_adjacency(adjacency):
    shape = np.shape(adjacency)
    if len(shape) not in (2, 3) or shape[-1] != shape[-2] or shape[-1] < 1:
        raise ValueError(f"adjacency must have shape (n, n) or (P, n, n), got {shape}")


def graph_sequence(adjacency, *, dtype=jnp.float32) -> GraphSequence:
    r"""Uniform Push-Pull weights on a sequence of digraphs.

    :math:`R_{ij} = 1/(d^{\rm in}_i + 1)` for :math:`j \in N^{\rm in}_i \cup \{i\}` and
    :math:`C_{ij} = 1/(d^{\rm out}_j + 1)` for :math:`i \in N^{\rm out}_j \cup \{j\}`, zero
    elsewhere; self-loops are always added (the diagonal of ``adjacency`` is ignored).

    Args:
      adjacency: ``(n, n)`` or ``(P, n, n)`` (boolean or 0/1), ``[k, i, j]`` true when ``j -> i``.
        May be traced.
      dtype: dtype of the weights (default float32; float64 under ``jax.enable_x64`` for exact
        stochasticity in theory checks).

    Returns:
      A :class:`GraphSequence` with ``P = 1`` for a single graph.
    """
    _check_adjacency(adjacency)
    if isinstance(adjacency, np.ndarray):  # concrete: weights in NumPy (float64), then cast
        a = adjacency[None] if adjacency.ndim == 2 else adjacency
        w = ((a != 0) | np.eye(a.shape[-1], dtype=bool)).astype(np.float64)
        return GraphSequence(row=jnp.asarray(w / w.sum(-1, keepdims=True), dtype),
                             col=jnp.asarray(w / w.sum(-2, keepdims=True), dtype))
    a = jnp.asarray(adjacency)
    if a.ndim == 2:
        a = a[None]
    n = a.shape[-1]
    eye = jnp.eye(n, dtype=bool)
    w = ((a != 0) | eye[None]).astype(dtype)
    row = w / jnp.sum(w, axis=-1, keepdims=True)
    col = w / jnp.sum(w, axis=-2, keepdims=True)
    return GraphSequence(row=row, col=col)


def directed_ring(num_nodes: int) -> np.ndarray:
    """``(n, n)`` bool adjacency of the directed ring ``i -> i + 1 (mod n)``."""
    n = check_static_int("num_nodes", num_nodes, low=2)
    a = np.zeros((n, n), bool)
    a[(np.arange(n) + 1) % n, np.arange(n)] = True
    return a


def complete_graph(num_nodes: int, *, dtype=jnp.float32) -> GraphSequence:
    """Every agent hears every other: ``R = C = 11^T / n`` (period 1). Push-Pull on it is the
    centralized method (every agent holds the average after one round)."""
    n = check_static_int("num_nodes", num_nodes, low=1)
    w = jnp.full((1, n, n), 1.0 / n, dtype)
    return GraphSequence(row=w, col=w)


def _ring_backbone(n: int, period: int, window: int) -> np.ndarray:
    """``(P, n, n)``: the ring edges ``i -> i+1`` with ``i = k (mod window)`` at step ``k``."""
    out = np.zeros((period, n, n), bool)
    src = np.arange(n)
    for k in range(period):
        active = src[src % window == k % window]
        out[k, (active + 1) % n, active] = True
    return out


def time_varying_digraphs(key, num_nodes: int, period: int, *, extra_edges: int = 4,
                          window: int = 1, dtype=jnp.float32) -> GraphSequence:
    r"""A random periodic sequence of unbalanced digraphs that is ``window``-strongly connected.

    Step ``k`` has the ring edges :math:`i \to i+1` for :math:`i \equiv k \pmod{\rm window}`
    (all of the ring when ``window = 1``) plus ``extra_edges`` distinct random directed edges
    that are neither self-loops nor backbone edges, drawn independently per step; weights are
    uniform (:func:`graph_sequence`). Every window of ``window`` consecutive steps contains the
    whole ring, so the sequence is ``window``-strongly connected whatever the random edges; the
    random edges make in- and out-degrees differ (unbalanced graphs).

    Args:
      key: a JAX PRNG key (may be traced: the generator is then jittable and vmappable over
        keys), or a ``numpy.random.Generator`` (the same distribution, drawn on the host: no
        compilation, and NumPy weights are returned as concrete arrays).
      num_nodes: ``n >= 2`` agents (static).
      period: ``P >= 1`` graphs in the sequence (static); with ``window > 1`` take ``P`` a
        multiple of ``window`` so that the cyclic sequence keeps the property across the wrap.
      extra_edges: random edges per step, an int in ``[0, n(n-1) - n]`` (static, default 4).
      window: ``B >= 1`` (static, default 1), at most ``n``.
      dtype: weight dtype.

    Returns:
      A :class:`GraphSequence` of period ``P``.

    Raises:
      ValueError: for out-of-range ``num_nodes``, ``period``, ``extra_edges`` or ``window``.
    """
    n = check_static_int("num_nodes", num_nodes, low=2)
    period = check_static_int("period", period, low=1)
    window = check_static_int("window", window, low=1)
    extra_edges = check_static_int("extra_edges", extra_edges, low=0)
    if window > n:
        raise ValueError(f"window must be an int in [1, num_nodes={n}], got {window}")
    if period % window:
        raise ValueError(f"period must be a multiple of window={window}, got {period}")
    if extra_edges > n * (n - 1) - n:
        raise ValueError(f"extra_edges must be an int in [0, {n * (n - 1) - n}] for "
                         f"num_nodes={n}, got {extra_edges}")
    backbone = _ring_backbone(n, period, window)
    blocked = (directed_ring(n) | np.eye(n, dtype=bool)).reshape(-1)
    if isinstance(key, np.random.Generator):
        extra = np.zeros((period, n * n), bool)
        allowed = np.flatnonzero(~blocked)
        for k in range(period):
            extra[k, key.choice(allowed, extra_edges, replace=False)] = True
        return graph_sequence(backbone | extra.reshape(period, n, n), dtype=dtype)

    def one(k):
        # distinct edges: top-k of random scores over the allowed (non-ring, off-diagonal) pairs
        scores = jnp.where(jnp.asarray(blocked), -jnp.inf, jax.random.uniform(k, (n * n,)))
        _, idx = jax.lax.top_k(scores, extra_edges)
        return jnp.zeros((n * n,), bool).at[idx].set(True).reshape(n, n)

    extra = jax.vmap(one)(jax.random.split(key, period)) if extra_edges else False
    return graph_sequence(jnp.asarray(backbone) | extra, dtype=dtype)


# --------------------------------------------------------------------------- checks (NumPy)


def _stack(m) -> np.ndarray:
    m = np.asarray(m, np.float64)
    return m[None] if m.ndim == 2 else m


def is_row_stochastic(matrices, *, atol: float = 1e-6) -> bool:
    """Every matrix (``(n, n)`` or ``(P, n, n)``) is nonnegative with rows summing to 1."""
    m = _stack(matrices)
    return bool(np.all(m >= 0) and np.allclose(m.sum(-1), 1.0, rtol=0, atol=atol))


def is_column_stochastic(matrices, *, atol: float = 1e-6) -> bool:
    """Every matrix is nonnegative with columns summing to 1."""
    m = _stack(matrices)
    return bool(np.all(m >= 0) and np.allclose(m.sum(-2), 1.0, rtol=0, atol=atol))


def is_strongly_connected(adjacency) -> bool:
    """Whether the digraph ``(n, n)`` (``[i, j]``: ``j -> i``) has a directed path between
    every ordered pair (reachability by repeated squaring of ``I + A``)."""
    a = np.asarray(adjacency) != 0
    n = a.shape[-1]
    reach = a | np.eye(n, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(n))))):
        reach = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
    return bool(reach.all())


def connectivity_window(sequence) -> int | None:
    """The smallest ``B`` such that the union of every ``B`` cyclically consecutive graphs is
    strongly connected (``B``-strong connectivity of the periodic sequence); ``None`` when even
    the union of the whole period is not.

    Args:
      sequence: a :class:`GraphSequence` or a ``(P, n, n)`` adjacency.
    """
    adj = sequence.adjacency() if isinstance(sequence, GraphSequence) else (
        np.asarray(sequence) != 0)
    adj = adj[None] if adj.ndim == 2 else adj
    p = adj.shape[0]
    for b in range(1, p + 1):
        if all(is_strongly_connected(np.any(adj[(k + np.arange(b)) % p], 0)) for k in range(p)):
            return b
    return None


def left_perron_vector(matrix, *, num_iters: int = 10000, tol: float = 1e-15) -> np.ndarray:
    r"""The left Perron vector :math:`\pi` of a row-stochastic primitive matrix
    (:math:`\pi^\top R = \pi^\top`, :math:`\pi \ge 0`, :math:`\sum_i\pi_i = 1`), by power
    iteration in float64. Consensus by :math:`R` alone converges to :math:`\sum_i \pi_i x_i`;
    for a column-stochastic :math:`C`, ``left_perron_vector(C.T)`` is its right Perron vector."""
    r = np.asarray(matrix, np.float64)
    pi = np.full(r.shape[0], 1.0 / r.shape[0])
    for _ in range(num_iters):
        new = pi @ r
        new /= new.sum()
        if np.max(np.abs(new - pi)) < tol:
            return new
        pi = new
    return pi
