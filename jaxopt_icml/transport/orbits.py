r"""Orbit decomposition of an optimal transport problem from its cost matrix alone.

A symmetry of the problem ``(C, a, b)`` is a pair of permutations ``(s, t)`` of rows and columns
with ``C[s(i), t(j)] = C[i, j]``, ``a[s(i)] = a[i]`` and ``b[t(j)] = b[j]``. No group is given:
:func:`orbit_partition` recovers row classes ``R_1..R_p`` and column classes ``S_1..S_q`` by colour
refinement (1-dimensional Weisfeiler-Leman) on the weighted bipartite graph of ``C``:

* initial colours: the (quantised) weight ``a_i`` of each row, ``b_j`` of each column;
* one round: the new colour of row ``i`` is its old colour together with the multiset
  ``{(code(C_ij), colour(j))}_j`` (columns symmetrically), where ``code`` rounds ``C / tol``;
* stop when neither side splits further (at most ``max_rounds`` rounds).

The stable partition is *equitable*: for every ``i`` in ``R_s`` the multiset
``{code(C_ij) : j in S_t}`` depends on ``(s, t)`` only, and for every ``j`` in ``S_t`` the multiset
``{code(C_ij) : i in R_s}`` too. Every orbit of every symmetry group lies inside one class;
a class may merge several orbits, and the reductions of
:mod:`jaxopt_icml.transport.symmetric` stay exact because they only use equitability.

Implementation (once per problem, outside ``jit``: the partition has data-dependent sizes). The
passes over the matrix (codes, hashes, one fused pass per round, the check's sort keys) are small
jitted JAX programs run in 64-bit mode; relabelling, the sorts and comparisons of the exact check
run on the host in NumPy:

* multisets are compared through a hash: ``sum_j h(code(C_ij), colour(j))`` with a 64-bit mixing
  function ``h`` (splitmix64's finaliser) and wrap-around integer sums, which are exact and do
  not depend on the order of the sum; one round costs ``O(nm)`` integer operations;
* ``verify=True`` (default) then checks equitability exactly, without hashes: every row's
  sorted list of ``(colour(j), code(C_ij))`` equals its class representative's (columns alike),
  one integer sort of the matrix per side. If the check fails (a hash collision, probability
  about ``nm 2^-64``), the discrete partition (every point its own class, i.e. the full problem)
  is returned with ``fallback=True``.

Quantisation (``quantize="round"``): ``code = rint(C / tol)``. Costs equal up to round-off land
in one code except when a grid point falls between them (probability about round-off / tol per
class); such a split only refines the partition, which stays exact. For noisy (approximate)
symmetries rounding cuts noisy clusters at grid points and the partition collapses to the
trivial one; ``quantize="cluster"`` (single linkage at gap ``tol``) keeps them together. Weights
are quantised relative to their mean with ``weight_tol``.

References:
  * Optimal Transport with Symmetry Groups. ICML 2026 (poster 65591; no arXiv id found).
  * M. Grohe, K. Kersting, M. Mladenov, E. Selman. Dimension Reduction via Colour Refinement.
    ESA 2014.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml.hyperparams import check_bool, check_choice, check_float, check_static_int

__all__ = [
    "orbit_partition",
    "OrbitPartition",
    "trivial_partition",
]


class OrbitPartition(NamedTuple):
    """Row and column classes of an equitable partition (NumPy arrays, host data).

    Attributes:
      row_labels: ``(n,)`` int32, class of each row, in ``0..p-1`` (classes numbered by their
        first row).
      col_labels: ``(m,)`` int32, class of each column, in ``0..q-1``.
      row_sizes: ``(p,)`` int32, ``r_s = |R_s|``.
      col_sizes: ``(q,)`` int32, ``s_t = |S_t|``.
      row_reps: ``(p,)`` int32, the first row of each class.
      col_reps: ``(q,)`` int32, the first column of each class.
      rounds: refinement rounds run.
      fallback: ``True`` when refinement did not stabilise within ``max_rounds`` or the exact
        check failed (a hash collision); the discrete partition was then returned.
      row_members: ``(p, max r_s)`` int32, the rows of each class, padded with ``-1`` (lets
        reductions sum a class with a vectorised reduce instead of a sequential scatter, which
        loses float32 accuracy on classes of hundreds of points).
      col_members: ``(q, max s_t)`` int32, the columns of each class, padded with ``-1``.
    """

    row_labels: np.ndarray
    col_labels: np.ndarray
    row_sizes: np.ndarray
    col_sizes: np.ndarray
    row_reps: np.ndarray
    col_reps: np.ndarray
    rounds: int = 0
    fallback: bool = False
    row_members: np.ndarray | None = None
    col_members: np.ndarray | None = None

    @property
    def num_row_classes(self) -> int:
        return int(self.row_sizes.shape[0])

    @property
    def num_col_classes(self) -> int:
        return int(self.col_sizes.shape[0])


_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _mix(x):
    """splitmix64's finaliser on uint64 arrays (wrap-around arithmetic)."""
    x = x ^ (x >> 30)
    x = x * jnp.uint64(_M1)
    x = x ^ (x >> 27)
    x = x * jnp.uint64(_M2)
    return x ^ (x >> 31)


@jax.jit
def _round_codes(C, inv_tol):
    """``code = rint(C / tol)`` shifted to start at 0 (int64, computed in float64; x64 only)."""
    codes = jnp.rint(C.astype(jnp.float64) * inv_tol).astype(jnp.int64)
    return codes - jnp.min(codes)


def _cluster_codes(C: np.ndarray, tol: float) -> np.ndarray:
    """Single-linkage codes: sort all costs, start a new code where the gap exceeds ``tol``."""
    flat = C.reshape(-1)
    order = np.argsort(flat, kind="stable")
    ids = np.concatenate([[0], np.cumsum(np.diff(flat[order]) > tol)])
    codes = np.empty(flat.size, np.int64)
    codes[order] = ids
    return codes.reshape(C.shape)


@jax.jit
def _hash_base(codes, salt):
    """``mix(code + salt)`` (uint64; x64 only)."""
    return _mix(codes.astype(jnp.uint64) + salt)


@jax.jit
def _round_hashes(base, row_salt, col_salt):
    """One refinement round: ``sum_j mix(base_ij ^ salt(colour(j)))`` per row (mod 2^64) and
    ``sum_i mix(base_ij ^ salt'(colour(i)))`` per column; one fused pass over the matrix."""
    row_hash = jnp.sum(_mix(base ^ col_salt[None, :]), axis=1, dtype=jnp.uint64)
    col_hash = jnp.sum(_mix(base ^ row_salt[:, None]), axis=0, dtype=jnp.uint64)
    return row_hash, col_hash


def _relabel(*keys: np.ndarray) -> np.ndarray:
    """Dense labels of the tuples ``keys[.][i]``, numbered by first occurrence."""
    stacked = np.stack([np.asarray(k).astype(np.uint64) for k in keys], axis=1)
    _, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)  # class k of np.unique -> rank of its first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.reshape(-1)].astype(np.int32)


def _partition(row_labels, col_labels, rounds=0, fallback=False) -> OrbitPartition:
    def side(labels):
        sizes = np.bincount(labels).astype(np.int32)
        _, reps = np.unique(labels, return_index=True)
        order = np.argsort(labels, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        members = np.full((sizes.size, int(sizes.max())), -1, np.int32)
        members[labels[order], np.arange(order.size) - starts[labels[order]]] = order
        return sizes, reps.astype(np.int32), members

    rs, rr, rm = side(row_labels)
    cs, cr, cm = side(col_labels)
    return OrbitPartition(row_labels.astype(np.int32), col_labels.astype(np.int32), rs, cs, rr,
                          cr, int(rounds), bool(fallback), rm, cm)


def _with_x64(fn, *args):
    with jax.enable_x64(True):
        return fn(*args)


def trivial_partition(n: int, m: int) -> OrbitPartition:
    """The discrete partition (every row and column its own class): the full problem."""
    n = check_static_int("n", n)
    m = check_static_int("m", m)
    return _partition(np.arange(n), np.arange(m))


@jax.jit
def _check_keys(codes, row_colour, col_colour):
    """Sort keys ``colour(j) * span + code_ij`` per row and ``colour(i) * span + code_ij`` per
    column (transposed), int32 (the caller checks they fit), in one fused pass each."""
    span = jnp.max(codes) + 1
    row_key = codes + col_colour.astype(jnp.int64)[None, :] * span
    col_key = codes.T + row_colour.astype(jnp.int64)[None, :] * span
    return row_key.astype(jnp.int32), col_key.astype(jnp.int32)


def _equitable(codes, part: OrbitPartition) -> bool:
    """Exact check: each row's sorted ``(colour(j), code)`` list equals its representative's,
    and each column's sorted ``(colour(i), code)`` list too (one integer sort per side; keys
    are built by XLA and sorted in int32 when they fit, about twice as fast as int64)."""
    span = int(np.asarray(jnp.max(codes))) + 1
    width = max(part.num_row_classes, part.num_col_classes)
    if span * width < 2**31:
        keys = [np.array(k) for k in _check_keys(codes, part.row_labels, part.col_labels)]
    else:  # wide codes: dense ranks in int64 on the host
        dense = np.unique(np.asarray(codes), return_inverse=True)[1].reshape(codes.shape)
        span = int(dense.max()) + 1
        keys = [dense + part.col_labels.astype(np.int64)[None, :] * span,
                dense.T + part.row_labels.astype(np.int64)[None, :] * span]
    for key, labels, reps in ((keys[0], part.row_labels, part.row_reps),
                              (keys[1], part.col_labels, part.col_reps)):
        key.sort(axis=1)
        order = np.argsort(labels, kind="stable")
        bounds = np.cumsum(np.bincount(labels))[:-1]
        for s, members in enumerate(np.split(order, bounds)):
            if not (key[members] == key[reps[s]][None, :]).all():
                return False
    return True


def orbit_partition(C, a, b, *, tol: float = 1e-9, max_rounds: int = 50,
                    verify: bool = True, quantize: str = "round",
                    weight_tol: float = 1e-9, seed: int = 0) -> OrbitPartition:
    r"""Equitable row/column partition of ``(C, a, b)`` by colour refinement (host, NumPy).

    Rule: colours start from ``a`` and ``b``; each round replaces a row's colour by
    ``(colour(i), H_i)`` with ``H_i = sum_j h(code(C_ij), colour(j))`` mod ``2^64`` (columns
    alike), ``code = rint(C / tol)``, until no class splits. Every orbit of every symmetry
    ``(s, t)`` of the problem lies in one class.

    Args:
      C: ``(n, m)`` cost matrix (NumPy or JAX array; read on the host).
      a: ``(n,)`` source weights.
      b: ``(m,)`` target weights.
      tol: quantisation step of the costs (``> 0``, default ``1e-9``); costs closer than ``tol``
        are treated as equal (a larger ``tol`` gives an approximate symmetry).
      max_rounds: maximum refinement rounds (static int ``>= 1``, default 50).
      verify: check equitability exactly after refinement; on failure return the discrete
        partition with ``fallback=True`` (default ``True``).
      quantize: ``"round"`` (default): ``code = rint(C / tol)``, one fused pass, for exact
        symmetries up to round-off; ``"cluster"``: single-linkage codes (sort all costs, a new
        code wherever two consecutive values differ by more than ``tol``; one sort of the
        matrix), which keeps a noisy cluster of width below ``tol`` together where rounding
        would cut it at grid points (approximate symmetries).
      weight_tol: quantisation of the weights relative to their mean (``> 0``, default
        ``1e-9``): the initial colours are ``rint(a / (weight_tol mean(a)))``.
      seed: seed of the random colour hashes (any int; results do not depend on it unless a
        hash collides).

    Returns:
      An :class:`OrbitPartition`.

    Example:
      >>> import numpy as np
      >>> C = np.array([[0., 1., 1.], [1., 0., 1.], [1., 1., 0.]])
      >>> part = orbit_partition(C, np.ones(3) / 3, np.ones(3) / 3)
      >>> part.num_row_classes, part.num_col_classes
      (1, 1)

    Paper mapping: the paper recovers "the orbit decomposition and the associated algebraic
    structure directly from the cost matrix"; its procedure was not available. This is colour
    refinement (Grohe et al. 2014), which returns the coarsest equitable partition refining the
    weight classes: the orbits of the automorphism group, or coarser classes on which the
    reductions are still exact.

    Theory: equitability (checked exactly when ``verify``) is what the reductions of
    :mod:`jaxopt_icml.transport.symmetric` need; ``tests/transport/test_symmetric_ot.py``
    compares the classes with the known orbits of rotation-symmetric point sets and a NumPy
    brute-force equitability check.
    """
    check_float("tol", tol, allow_schedule=False)
    max_rounds = check_static_int("max_rounds", max_rounds)
    check_bool("verify", verify)
    check_choice("quantize", quantize, ("round", "cluster"))
    check_float("weight_tol", weight_tol, allow_schedule=False)
    C = np.asarray(C)
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if C.ndim != 2 or C.shape != (a.size, b.size):
        raise ValueError(f"C must have shape (len(a), len(b)) = ({a.size}, {b.size}), "
                         f"got {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ValueError("C must be finite")
    if not (np.all(a >= 0) and np.all(b >= 0) and a.sum() > 0 and b.sum() > 0):
        raise ValueError("a and b must be nonnegative with positive mass")
    if quantize == "round" and (float(C.max()) - float(C.min())) / tol >= 2.0 ** 62:
        # the int64 codes rint(C / tol) would saturate and every cost would look equal
        raise ValueError(f"cost range / tol = {(float(C.max()) - float(C.min())) / tol:.3g} "
                         "overflows the int64 cost codes: use a larger tol (or quantize="
                         "'cluster')")
    n, m = C.shape
    rng = np.random.default_rng(seed)
    with jax.enable_x64(True):
        codes = (_round_codes(C, 1.0 / tol) if quantize == "round"
                 else _cluster_codes(C.astype(np.float64), tol))
        base = _hash_base(codes, rng.integers(0, 2**63, dtype=np.uint64))
    row = _relabel(np.rint(a / (weight_tol * a.mean())).astype(np.int64))
    col = _relabel(np.rint(b / (weight_tol * b.mean())).astype(np.int64))
    rounds, stable = 0, False
    for rounds in range(1, max_rounds + 1):  # noqa: B007 - rounds is reported
        salt_c = rng.integers(0, 2**63, size=int(col.max()) + 1, dtype=np.uint64)
        salt_r = rng.integers(0, 2**63, size=int(row.max()) + 1, dtype=np.uint64)
        with jax.enable_x64(True):
            row_hash, col_hash = _round_hashes(base, salt_r[row], salt_c[col])
        new_row = _relabel(row, np.asarray(row_hash))
        new_col = _relabel(col, np.asarray(col_hash))
        stable = new_row.max() == row.max() and new_col.max() == col.max()
        row, col = new_row, new_col
        if stable:
            break
    part = _partition(row, col, rounds)
    # Not stable after max_rounds (1-WL can need up to ~n rounds, e.g. on a path) or not
    # equitable (a hash collision): the partition may be wrong, so fall back to the full problem.
    if not stable or (verify and not _with_x64(_equitable, codes, part)):
        return _partition(np.arange(n), np.arange(m), rounds, fallback=True)
    return part
