r"""Orbit decomposition of an optimal transport problem from its cost matrix alone.

A symmetry of the problem ``(C, a, b)`` is a pair of permutations ``(s, t)`` of rows and columns
with ``C[s(i), t(j)] = C[i, j]``, ``a[s(i)] = a[i]`` and ``b[t(j)] = b[j]``. No group is given:
:func:`detect_orbits` recovers row classes ``R_1..R_p`` and column classes ``S_1..S_q`` by colour
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

Implementation: :func:`detect_orbits` is one jitted JAX program with fixed output shapes (it
runs on the device, inside ``jit`` and ``vmap``, with or without 64-bit mode):

* costs become integer codes (the offsets ``rint(C / tol) - min``, or the bits of the float
  code when those are not exact), computed once, ``O(nm)``;
* a colour is a pair of 32-bit hashes (two lanes with independent salts, 64 bits in all); a
  multiset is hashed as ``sum_j h(code(C_ij) XOR salt(colour(j)))`` with wrap-around
  ``uint32`` sums, which do not depend on the order of the sum; ``h`` is MurmurHash3's 32-bit
  finaliser (a bijection). One round is two fused ``O(nm)`` integer reductions (rows and
  columns), rounds run in a ``lax.while_loop`` until the numbers of distinct colours stop
  growing on both sides (one sort of the ``n + m`` colours per round) or ``max_rounds``;
* canonical labels: classes are numbered by their first row (column), from one more sort;
* ``verify=True`` (default) then checks equitability exactly, without hashes: every row's
  sorted list of ``(label(j), code_ij)`` equals its class's first row's (columns alike), one
  batched integer sort of the matrix per side, the pair packed into one integer key when it
  fits (two sort keys otherwise), a side of singleton classes skipped; and the weights are
  constant on classes. XLA sorts on accelerators; on the CPU backend NumPy sorts, through
  ``pure_callback`` (XLA's CPU sort is more than ten times slower than NumPy's). If the check
  fails (a hash collision, probability about ``n^2 2^-64``), the discrete partition (every
  point its own class, i.e. the full problem) is returned with a nonzero ``status``.

The output, :class:`OrbitLabels`, has fixed shapes (label vectors of length ``n`` and ``m``,
scalar counts). The reduced problem's shapes depend on the class counts and the largest class
sizes, so :func:`partition_from_labels` reads those four integers from the device (the one host
synchronisation of the pipeline) and builds the :class:`OrbitPartition` that the reductions
take, in a second small jitted program with those sizes static; pass ``sizes`` to keep
everything inside an outer ``jit``.

Quantisation (``quantize="round"``): ``code = rint(C / tol)``, computed in ``C``'s dtype
(float32 for 16-bit costs). Costs equal up to round-off land in one code except when a grid
point falls between them (probability about round-off / tol per class); such a split only
refines the partition, which stays exact. For noisy (approximate) symmetries rounding cuts
noisy clusters at grid points and the partition collapses to the trivial one;
``quantize="cluster"`` (single linkage at gap ``tol``, one sort of the ``nm`` costs) keeps them
together. Weights are quantised relative to their mean with ``weight_tol``. The host wrapper
:func:`orbit_partition` quantises a NumPy float64 cost in float64 even with 64-bit mode off.

References:
  * Optimal Transport with Symmetry Groups. ICML 2026 (poster 65591; no arXiv id found).
  * M. Grohe, K. Kersting, M. Mladenov, E. Selman. Dimension Reduction via Colour Refinement.
    ESA 2014.
"""

from __future__ import annotations

import contextlib
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml import hyperparams
from jaxopt_icml.hyperparams import check_bool, check_choice, check_float, check_static_int

__all__ = [
    "orbit_partition",
    "OrbitPartition",
    "trivial_partition",
    "detect_orbits",
    "OrbitLabels",
    "partition_from_labels",
]

# OrbitLabels.status codes (module constants, not exported to the family namespace)
STATUS_OK = 0  # refinement stable and (when verified) equitable
STATUS_NOT_STABLE = 1  # not stable after max_rounds: discrete partition returned
STATUS_NOT_EQUITABLE = 2  # the exact check failed (a hash collision): discrete partition
STATUS_BAD_COST = 3  # a non-finite cost code (C not finite or C / tol overflows): discrete
STATUS_BAD_WEIGHTS = 4  # a or b not finite, negative somewhere, or of zero mass: discrete


class OrbitLabels(NamedTuple):
    """What :func:`detect_orbits` returns: fixed shapes, usable inside ``jit`` and ``vmap``.

    Attributes:
      row_labels: ``(n,)`` int32 class of each row in ``0..p-1``, canonical: classes are
        numbered in the order of their first row (so ``row_labels[0] = 0`` and a new class
        takes the next number).
      col_labels: ``(m,)`` int32, the same for columns (``0..q-1``).
      num_row_classes: int32 scalar ``p``.
      num_col_classes: int32 scalar ``q``.
      max_row_size: int32 scalar ``max_s |R_s|``.
      max_col_size: int32 scalar ``max_t |S_t|``.
      rounds: int32 scalar, refinement rounds run.
      status: int32 scalar, :data:`STATUS_OK` (0) or the reason the discrete partition was
        returned (:data:`STATUS_NOT_STABLE`, :data:`STATUS_NOT_EQUITABLE`,
        :data:`STATUS_BAD_COST`, :data:`STATUS_BAD_WEIGHTS`).
    """

    row_labels: jax.Array
    col_labels: jax.Array
    num_row_classes: jax.Array
    num_col_classes: jax.Array
    max_row_size: jax.Array
    max_col_size: jax.Array
    rounds: jax.Array
    status: jax.Array

    @property
    def fallback(self) -> jax.Array:
        """``status != 0``: the discrete partition was returned."""
        return self.status != STATUS_OK


class OrbitPartition(NamedTuple):
    """Row and column classes of an equitable partition (JAX arrays; the reductions' input).

    Its shapes depend on ``p``, ``q`` and the largest class sizes (built by
    :func:`partition_from_labels`); a jitted reduction compiles once per such shape.

    Attributes:
      row_labels: ``(n,)`` int32, class of each row, in ``0..p-1`` (classes numbered by their
        first row).
      col_labels: ``(m,)`` int32, class of each column, in ``0..q-1``.
      row_sizes: ``(p,)`` int32, ``r_s = |R_s|``.
      col_sizes: ``(q,)`` int32, ``s_t = |S_t|``.
      row_reps: ``(p,)`` int32, the first row of each class.
      col_reps: ``(q,)`` int32, the first column of each class.
      rounds: int32 scalar, refinement rounds run (0 for a partition not built by detection).
      fallback: bool scalar, ``True`` when refinement did not stabilise within ``max_rounds``
        or the exact check failed (a hash collision); the discrete partition was then returned.
      row_members: ``(p, max r_s)`` int32, the rows of each class in increasing order, padded
        with ``-1`` (lets reductions sum a class with a vectorised reduce instead of a
        sequential scatter, which loses float32 accuracy on classes of hundreds of points).
      col_members: ``(q, max s_t)`` int32, the columns of each class, padded with ``-1``.
    """

    row_labels: jax.Array
    col_labels: jax.Array
    row_sizes: jax.Array
    col_sizes: jax.Array
    row_reps: jax.Array
    col_reps: jax.Array
    rounds: jax.Array
    fallback: jax.Array
    row_members: jax.Array
    col_members: jax.Array

    @property
    def num_row_classes(self) -> int:
        return int(self.row_sizes.shape[0])

    @property
    def num_col_classes(self) -> int:
        return int(self.col_sizes.shape[0])


# --------------------------------------------------------------------------- hashing

_F1 = 0x85EBCA6B  # MurmurHash3's fmix32 multipliers
_F2 = 0xC2B2AE35


def _mix32(x):
    """MurmurHash3's 32-bit finaliser on uint32 arrays (a bijection; wrap-around products)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(_F1)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(_F2)
    return x ^ (x >> 16)


def _words(x):
    """The bits of ``x`` as ``(..., w)`` uint32 words (``w = 2`` for 64-bit dtypes)."""
    if jnp.dtype(x.dtype).itemsize == 8:
        return jax.lax.bitcast_convert_type(x, jnp.uint32)
    return jax.lax.bitcast_convert_type(x, jnp.uint32)[..., None]


def _lanes(x, seeds):
    """Two 32-bit hash lanes of the values ``x`` (shape ``(2,) + x.shape``), injective per lane
    for 32-bit values: ``h_k = mix(w_last ^ ... mix(w_0 ^ seed_k))``."""
    words = _words(x)
    out = []
    for seed in seeds:
        h = _mix32(words[..., 0] ^ jnp.uint32(seed))
        for k in range(1, words.shape[-1]):
            h = _mix32(words[..., k] ^ h)
        out.append(h)
    return jnp.stack(out)


def _code_lanes(codes, seeds):
    """The code of each entry as two 32-bit lanes, injective per lane: the code itself for
    32-bit codes (the salts XORed in next differ per lane), :func:`_lanes` for 64-bit ones."""
    if jnp.dtype(codes.dtype).itemsize == 8:
        return _lanes(codes, seeds)
    bits = jax.lax.bitcast_convert_type(codes, jnp.uint32)
    return jnp.stack([bits, bits])


def _round_hashes(codes, code_seeds, row_salt, col_salt):
    """One refinement round: per lane ``k``, ``sum_j mix(h_k(code_ij) ^ salt_k(colour(j)))`` per
    row and ``sum_i mix(h_k(code_ij) ^ salt'_k(colour(i)))`` per column (mod 2^32), with the
    code lanes ``h_k`` (:func:`_code_lanes`) recomputed inside the two fused reductions (no
    ``(2, n, m)`` buffer).

    Args: ``codes`` ``(n, m)`` integers, ``code_seeds`` ``(2,)``, ``row_salt`` ``(2, n)``,
    ``col_salt`` ``(2, m)``. Returns ``(2, n)`` and ``(2, m)`` uint32.
    """
    lanes = _code_lanes(codes, code_seeds)
    row_hash = jnp.sum(_mix32(lanes ^ col_salt[:, None, :]), axis=2, dtype=jnp.uint32)
    col_hash = jnp.sum(_mix32(lanes ^ row_salt[:, :, None]), axis=1, dtype=jnp.uint32)
    return row_hash, col_hash


def _sorted_colours(row, col):
    """Row and column colour pairs (``(2, n)``, ``(2, m)``) sorted together by
    ``(side, lane 0, lane 1)`` (stable): returns the permutation and where a new colour starts."""
    n, m = row.shape[1], col.shape[1]
    side = jnp.concatenate([jnp.zeros(n, jnp.int32), jnp.ones(m, jnp.int32)])
    lanes = jnp.concatenate([row, col], axis=1)
    idx = jnp.arange(n + m, dtype=jnp.int32)
    s, l0, l1, perm = jax.lax.sort((side, lanes[0], lanes[1], idx), num_keys=3,
                                   is_stable=True)
    new = jnp.concatenate([jnp.ones(1, bool),
                           (s[1:] != s[:-1]) | (l0[1:] != l0[:-1]) | (l1[1:] != l1[:-1])])
    return perm, new, s


def _num_distinct(row, col):
    """Numbers of distinct row and column colours (one sort of the ``n + m`` pairs)."""
    _, new, side = _sorted_colours(row, col)
    return (jnp.sum(new & (side == 0), dtype=jnp.int32),
            jnp.sum(new & (side == 1), dtype=jnp.int32))


def _canonical(row, col):
    """Canonical labels of the row and column colours, classes numbered by first occurrence.

    Returns ``(row_labels, row_first, p, col_labels, col_first, q)``: ``row_first[i]`` is the
    first row with ``i``'s colour.
    """
    n = row.shape[1]
    perm, new, _ = _sorted_colours(row, col)
    idx = jnp.arange(perm.shape[0], dtype=jnp.int32)
    start = jax.lax.cummax(jnp.where(new, idx, 0), axis=0)  # sorted position of group start
    first = jnp.zeros_like(idx).at[perm].set(perm[start], unique_indices=True)
    leader = first == idx  # rows come first in index order, so row classes rank first
    rank = jnp.cumsum(leader, dtype=jnp.int32) - 1
    labels = rank[first]
    p = jnp.sum(leader[:n], dtype=jnp.int32)
    return (labels[:n], first[:n], p, labels[n:] - p, first[n:] - n,
            jnp.sum(leader[n:], dtype=jnp.int32))


# --------------------------------------------------------------------------- codes


def _float_dtype(x):
    dtype = jnp.dtype(x.dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        return hyperparams.compute_dtype(dtype)
    return jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))


def _no_negative_zero(x):
    return jnp.where(x == 0, jnp.zeros((), x.dtype), x)


def _sortable(x):
    """An integer key with the order of the floats ``x`` (sign-magnitude to two's complement)."""
    itype = jnp.int64 if jnp.dtype(x.dtype).itemsize == 8 else jnp.int32
    i = jax.lax.bitcast_convert_type(x, itype)
    return jnp.where(i < 0, i ^ jnp.iinfo(itype).max, i)


def _round_codes(C, tol):
    """``code = rint(C / tol)`` as integers (equal iff the codes are): the offsets
    ``code - min(code)`` when every ``|code| < 2^nmant`` (then exact), else the bits of the
    float ``code``. Returns ``(codes, offsets_exact, all_finite)``."""
    dtype = C.dtype
    code = _no_negative_zero(jnp.rint(C * (1 / tol)))
    itype = jnp.int64 if dtype.itemsize == 8 else jnp.int32
    exact = jnp.max(jnp.abs(code)) < 2.0 ** jnp.finfo(dtype).nmant
    codes = jnp.where(exact, (code - jnp.min(code)).astype(itype),
                      jax.lax.bitcast_convert_type(code, itype))
    return codes, exact, jnp.all(jnp.isfinite(code))


def _cluster_codes(C, tol):
    """Single-linkage codes: sort all costs, start a new code where the gap exceeds ``tol``
    (int32, ``0..K-1`` in increasing cost order)."""
    flat = C.reshape(-1)
    idx = jnp.arange(flat.shape[0], dtype=jnp.int32)
    _, order = jax.lax.sort((_sortable(flat), idx), num_keys=1, is_stable=True)
    values = flat[order]
    ids = jnp.concatenate([jnp.zeros(1, jnp.int32),
                           jnp.cumsum(jnp.diff(values) > tol, dtype=jnp.int32)])
    return jnp.zeros_like(idx).at[order].set(ids, unique_indices=True).reshape(C.shape)


# --------------------------------------------------------------------------- the exact check


def _words32(x):
    """Integer arrays as 32-bit words, most significant first (the same equality)."""
    if jnp.dtype(x.dtype).itemsize == 8:
        return (x >> 32).astype(jnp.int32), (x & 0xFFFFFFFF).astype(jnp.uint32)
    return (x,)


def _np_transpose(x, block: int = 64):
    """Cache-blocked transpose (NumPy's strided copy is a few times slower on large arrays)."""
    n, m = x.shape
    out = np.empty((m, n), x.dtype)
    for i in range(0, n, block):
        for j in range(0, m, block):
            out[j:j + block, i:i + block] = x[i:i + block, j:j + block].T
    return out


def _np_same_lists(code, labels, first):
    """Every row of ``code`` (int32 or int64), as a multiset of ``(labels[j], code[i, j])``
    pairs, equals row ``first[i]``'s: one integer key per entry (int32 when it fits), rows
    sorted, compared; two keys (``lexsort``) when the codes span too much."""
    labels = np.asarray(labels)[None, :]
    low, high = int(code.min()), int(code.max())
    span = high - low + 1
    width = span * (int(labels.max()) + 1)
    if width < 2**31:
        key = labels.astype(np.int32) * np.int32(span) + (code - code.dtype.type(low)).astype(
            np.int32)
    elif width < 2**62:
        key = labels.astype(np.int64) * span + (code.astype(np.int64) - low)
    else:
        labels = np.broadcast_to(labels, code.shape)
        order = np.lexsort((code, labels), axis=-1)
        return all(np.array_equal(k, k[first]) for k in
                   (np.take_along_axis(labels, order, -1), np.take_along_axis(code, order, -1)))
    key.sort(axis=-1)
    return np.array_equal(key, key[first])


def _np_equitable(row_first, col_first, row_labels, col_labels, skip_rows, skip_cols, *words):
    """Host side of :func:`_equitable_exact` (one problem; vmapped calls run one by one)."""
    code = np.asarray(words[0])
    if len(words) == 2:  # 64-bit codes: (signed high word, unsigned low word)
        code = (code.astype(np.int64) << 32) | np.asarray(words[1]).view(np.uint32).astype(
            np.int64)
    ok = bool(np.asarray(skip_rows)) or _np_same_lists(code, col_labels, np.asarray(row_first))
    ok = ok and (bool(np.asarray(skip_cols))
                 or _np_same_lists(_np_transpose(code), row_labels, np.asarray(col_first)))
    return np.asarray(ok)


def _equitable_sorted(codes, row_labels, col_labels, row_first, col_first, span, packable,
                      skip_rows, skip_cols):
    """XLA version of :func:`_equitable_exact` (used on accelerators): batched ``lax.sort`` of
    the rows and of the columns, one packed key when ``packable``, two keys otherwise."""
    kt = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.int64))

    def side(labels, first, axis):
        lab = jnp.expand_dims(labels, 1 - axis)

        def same(*keys):
            out = jax.lax.sort(keys, dimension=axis, num_keys=len(keys))
            return jnp.all(jnp.stack([jnp.all(k == jnp.take(k, first, axis=1 - axis))
                                      for k in out]))

        def one_key():
            return same(lab.astype(kt) * span.astype(kt) + codes.astype(kt))

        def two_keys():
            return same(jnp.broadcast_to(lab, codes.shape), codes)

        return jax.lax.cond(packable, one_key, two_keys)

    ok_r = jax.lax.cond(skip_rows, lambda: jnp.ones((), bool),
                        lambda: side(col_labels, row_first, 1))
    ok_c = jax.lax.cond(skip_cols, lambda: jnp.ones((), bool),
                        lambda: side(row_labels, col_first, 0))
    return ok_r & ok_c


def _equitable_host(codes, row_labels, col_labels, row_first, col_first, span, packable,
                    skip_rows, skip_cols):
    """Host version of :func:`_equitable_exact` (used on the CPU backend): one
    ``pure_callback`` to :func:`_np_equitable`."""
    del span, packable  # the host picks its own key width
    return jax.pure_callback(_np_equitable, jax.ShapeDtypeStruct((), bool), row_first,
                             col_first, row_labels, col_labels, skip_rows, skip_cols,
                             *_words32(codes), vmap_method="sequential")


def _equitable_exact(codes, row_labels, col_labels, row_first, col_first, span, packable,
                     skip_rows, skip_cols):
    """Exact equitability of the labels, without hashing: for every row ``i`` the multiset of
    pairs ``(col_label(j), codes[i, j])`` equals that of its class's first row ``row_first[i]``
    (rows sorted by the pair, then compared), and for every column likewise with the row
    labels. A side is skipped (``skip_rows`` / ``skip_cols``) when its classes are singletons.

    ``packable``: the codes lie in ``[0, span)`` and ``label * span + code`` fits the widest
    integer type, so one sort key suffices (else the pairs are sorted with two keys).

    XLA's sort on accelerators (:func:`_equitable_sorted`). On the CPU backend one
    ``pure_callback`` sorts with NumPy (:func:`_equitable_host`): the data is already in host
    memory, and XLA's CPU sort, which calls a compiled comparator for each comparison, is more
    than ten times slower than NumPy's vectorised integer sort. Only 32-bit words cross the
    callback (so it does not depend on the 64-bit mode of the thread that runs it), and no
    ``lax.cond`` or transposed copy wraps the matrix on that path (XLA's CPU conditionals copy
    their operands).
    """
    return jax.lax.platform_dependent(codes, row_labels, col_labels, row_first, col_first, span,
                                      packable, skip_rows, skip_cols, cpu=_equitable_host,
                                      default=_equitable_sorted)


# --------------------------------------------------------------------------- detection


def _seeds(seed: int) -> np.ndarray:
    """Two uint32 lane seeds for each of: codes, row and column weights, row and column salts,
    row and column colour updates (``(7, 2)``), from ``seed``."""
    return np.random.default_rng(seed).integers(0, 2**32, size=(7, 2), dtype=np.uint32)


def _class_sizes(labels):
    return jnp.zeros(labels.shape[0], jnp.int32).at[labels].add(1)


@functools.partial(jax.jit, static_argnames=("verify", "quantize", "seed"))
def _detect(C, a, b, tol, weight_tol, max_rounds, verify, quantize, seed) -> OrbitLabels:
    n, m = C.shape
    dtype = _float_dtype(C)
    C = C.astype(dtype)
    seeds = _seeds(seed)
    tol = jnp.asarray(tol, dtype)
    # integer codes, equal iff the costs are treated as equal; exact: they are offsets >= 0
    if quantize == "round":
        codes, exact, cost_ok = _round_codes(C, tol)
    else:
        codes, exact, cost_ok = _cluster_codes(C, tol), True, jnp.all(jnp.isfinite(C))

    def weight_code(w):
        w = w.astype(_float_dtype(w))
        ok = jnp.all(jnp.isfinite(w)) & jnp.all(w >= 0) & (jnp.sum(w) > 0)
        wt = jnp.asarray(weight_tol, w.dtype)
        return _no_negative_zero(jnp.rint(w / (wt * jnp.mean(w)))), ok

    wa, ok_a = weight_code(a)
    wb, ok_b = weight_code(b)
    row0, col0 = _lanes(wa, seeds[1]), _lanes(wb, seeds[2])
    salt_r, salt_c, upd_r, upd_c = (jnp.asarray(seeds[k]) for k in (3, 4, 5, 6))

    def body(state):
        row, col, nr, nc, rounds, _ = state
        row_hash, col_hash = _round_hashes(codes, seeds[0], _mix32(row ^ salt_r[:, None]),
                                           _mix32(col ^ salt_c[:, None]))
        # new colour = hash of (old colour, multiset hash): classes only split
        new_row = _mix32(_mix32(row ^ upd_r[:, None]) + row_hash)
        new_col = _mix32(_mix32(col ^ upd_c[:, None]) + col_hash)
        new_nr, new_nc = _num_distinct(new_row, new_col)
        stable = (new_nr == nr) & (new_nc == nc)
        return new_row, new_col, new_nr, new_nc, rounds + 1, stable

    def cond(state):
        return (~state[-1]) & (state[4] < max_rounds)

    init = (row0, col0, *_num_distinct(row0, col0), jnp.zeros((), jnp.int32),
            jnp.zeros((), bool))
    row, col, _, _, rounds, stable = jax.lax.while_loop(cond, body, init)
    row_labels, row_first, p, col_labels, col_first, q = _canonical(row, col)

    status = jnp.where(stable, STATUS_OK, STATUS_NOT_STABLE)
    if verify:
        kbits = 8 * jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.int64)).itemsize
        span = jnp.max(codes) + 1
        packable = exact & (span.astype(jnp.float32) * jnp.maximum(p, q).astype(jnp.float32)
                            < 2.0 ** (kbits - 2))
        skip = ~stable | ~cost_ok  # nothing to check: the discrete partition is returned
        equitable = (_equitable_exact(codes, row_labels, col_labels, row_first, col_first,
                                      span, packable, skip | (p == n), skip | (q == m))
                     & jnp.all(wa == wa[row_first]) & jnp.all(wb == wb[col_first]))
        status = jnp.where((status == STATUS_OK) & ~equitable, STATUS_NOT_EQUITABLE, status)
    status = jnp.where(cost_ok, status, STATUS_BAD_COST)
    status = jnp.where(ok_a & ok_b, status, STATUS_BAD_WEIGHTS).astype(jnp.int32)

    fall = status != STATUS_OK
    row_labels = jnp.where(fall, jnp.arange(n, dtype=jnp.int32), row_labels)
    col_labels = jnp.where(fall, jnp.arange(m, dtype=jnp.int32), col_labels)
    p, q = jnp.where(fall, n, p), jnp.where(fall, m, q)
    return OrbitLabels(row_labels, col_labels, p.astype(jnp.int32), q.astype(jnp.int32),
                       jnp.max(_class_sizes(row_labels)), jnp.max(_class_sizes(col_labels)),
                       rounds, status)


def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def detect_orbits(C, a, b, *, tol: float = 1e-9, max_rounds: int = 50, verify: bool = True,
                  quantize: str = "round", weight_tol: float = 1e-9,
                  seed: int = 0) -> OrbitLabels:
    r"""Equitable row/column partition of ``(C, a, b)`` by colour refinement, on the device.

    Rule: colours start from ``a`` and ``b``; each round replaces a row's colour by
    ``(colour(i), H_i)`` with ``H_i = sum_j h(code(C_ij), colour(j))`` (two 32-bit lanes, sums
    mod ``2^32``; columns alike), ``code = rint(C / tol)``, until no class splits; then (with
    ``verify``) an exact sort-based equitability check (module docstring). Every orbit of every
    symmetry ``(s, t)`` of the problem lies in one class. Cost per round ``O(nm)``, plus one
    row-wise and one column-wise integer sort of the ``n x m`` codes for the check.

    One jitted program, compiled once per shape, dtype, ``verify``, ``quantize`` and ``seed``;
    it can be called inside ``jit`` or ``vmap`` (``tol`` and ``weight_tol`` may be traced).
    Failures are reported in ``status`` (the discrete partition, i.e. the full problem, is then
    returned), never raised: :func:`partition_from_labels` raises for invalid input.

    Args:
      C: ``(n, m)`` cost matrix (codes are computed in its dtype; 16-bit costs in float32).
      a: ``(n,)`` source weights.
      b: ``(m,)`` target weights.
      tol: quantisation step of the costs (``> 0``, default ``1e-9``); costs closer than ``tol``
        are treated as equal (a larger ``tol`` gives an approximate symmetry).
      max_rounds: maximum refinement rounds (int ``>= 1``, default 50; the while loop's bound,
        passed as data, so another value does not recompile).
      verify: check equitability exactly after refinement (static bool, default ``True``).
      quantize: ``"round"`` (default): ``code = rint(C / tol)``, for exact symmetries up to
        round-off; ``"cluster"``: single-linkage codes (sort all costs, a new code wherever two
        consecutive values differ by more than ``tol``; one sort of the matrix), which keeps a
        noisy cluster of width below ``tol`` together where rounding would cut it at grid
        points (approximate symmetries).
      weight_tol: quantisation of the weights relative to their mean (``> 0``, default
        ``1e-9``): the initial colours are ``rint(a / (weight_tol mean(a)))``.
      seed: seed of the hash lanes (static int; results do not depend on it unless a hash
        collides).

    Returns:
      An :class:`OrbitLabels` (fixed shapes: labels ``(n,)`` and ``(m,)``, scalar counts).

    Example:
      >>> import numpy as np
      >>> C = np.array([[0., 1., 1.], [1., 0., 1.], [1., 1., 0.]])
      >>> lab = jax.jit(detect_orbits)(C, np.ones(3) / 3, np.ones(3) / 3)
      >>> int(lab.num_row_classes), lab.row_labels.tolist()
      (1, [0, 0, 0])

    Paper mapping: the paper recovers "the orbit decomposition and the associated algebraic
    structure directly from the cost matrix"; its procedure was not available. This is colour
    refinement (Grohe et al. 2014), which returns the coarsest equitable partition refining the
    weight classes: the orbits of the automorphism group, or coarser classes on which the
    reductions are still exact.

    Theory: equitability (checked exactly when ``verify``) is what the reductions of
    :mod:`jaxopt_icml.transport.symmetric` need; ``tests/transport/test_symmetric_ot.py``
    compares the labels with an exact (hash-free) NumPy colour refinement, the known orbits of
    group actions and a NumPy brute-force equitability check.
    """
    check_float("tol", tol, allow_schedule=False)
    max_rounds = check_static_int("max_rounds", max_rounds)
    verify = check_bool("verify", verify)
    quantize = check_choice("quantize", quantize, ("round", "cluster"))
    check_float("weight_tol", weight_tol, allow_schedule=False)
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {seed!r}")
    C = C if _is_tracer(C) else jnp.asarray(C)
    a = (a if _is_tracer(a) else jnp.asarray(a)).reshape(-1)
    b = (b if _is_tracer(b) else jnp.asarray(b)).reshape(-1)
    if C.ndim != 2 or C.shape != (a.shape[0], b.shape[0]):
        raise ValueError(f"C must have shape (len(a), len(b)) = ({a.shape[0]}, {b.shape[0]}), "
                         f"got {C.shape}")
    return _detect(C, a, b, tol, weight_tol, max_rounds=max_rounds, verify=verify,
                   quantize=quantize, seed=int(seed))


# --------------------------------------------------------------------------- partitions


def _side(labels, k: int, width: int):
    """Sizes ``(k,)``, first members ``(k,)`` and members ``(k, width)`` (padded with -1)."""
    n = labels.shape[0]
    order = jnp.argsort(labels, stable=True).astype(jnp.int32)
    sizes = jnp.zeros(k, jnp.int32).at[labels].add(1, mode="drop")
    starts = jnp.cumsum(sizes) - sizes
    sorted_labels = labels[order]
    pos = jnp.arange(n, dtype=jnp.int32) - starts[sorted_labels]
    members = jnp.full((k, width), -1, jnp.int32).at[sorted_labels, pos].set(order, mode="drop")
    return sizes, members[:, 0], members


@functools.partial(jax.jit, static_argnames=("p", "q", "max_r", "max_s"))
def _materialize(row_labels, col_labels, rounds, fallback, p, q, max_r, max_s):
    rs, rr, rm = _side(row_labels, p, max_r)
    cs, cr, cm = _side(col_labels, q, max_s)
    return OrbitPartition(row_labels, col_labels, rs, cs, rr, cr, rounds, fallback, rm, cm)


_MESSAGES = {
    STATUS_BAD_COST: "C must be finite and C / tol must not overflow its dtype (a non-finite "
                     "cost code): use a larger tol",
    STATUS_BAD_WEIGHTS: "a and b must be finite and nonnegative with positive mass",
}


def partition_from_labels(labels: OrbitLabels, *, sizes=None) -> OrbitPartition:
    """The :class:`OrbitPartition` (class sizes, representatives, padded member lists) of
    detected labels, built by a jitted program whose shapes are static.

    Args:
      labels: an :class:`OrbitLabels` from :func:`detect_orbits`.
      sizes: ``None`` (default): read ``(p, q, max r_s, max s_t)`` and the status from the
        device (one host synchronisation; a status of invalid input raises ``ValueError``).
        Or the tuple ``(p, q, max_row_size, max_col_size)`` as static ints, e.g. known in
        advance, to build the partition inside an outer ``jit``; it must equal the detected
        values (checked when ``labels`` is concrete).

    Returns:
      An :class:`OrbitPartition` (JAX arrays).
    """
    concrete = not any(_is_tracer(x) for x in jax.tree.leaves(labels))
    if sizes is None and not concrete:
        raise ValueError("partition_from_labels: inside jit, pass sizes=(p, q, max_row_size, "
                         "max_col_size) as static ints (the reduced shapes)")
    if concrete:
        got = tuple(int(v) for v in jax.device_get(
            (labels.num_row_classes, labels.num_col_classes, labels.max_row_size,
             labels.max_col_size, labels.status)))
        if got[4] in _MESSAGES:
            raise ValueError(_MESSAGES[got[4]])
        if sizes is not None and tuple(sizes) != got[:4]:
            raise ValueError(f"sizes must equal the detected (p, q, max_row_size, "
                             f"max_col_size) = {got[:4]}, got {tuple(sizes)}")
        sizes = got[:4]
    elif len(sizes) != 4:
        raise ValueError(f"sizes must be (p, q, max_row_size, max_col_size), got {sizes!r}")
    p, q, max_r, max_s = (check_static_int(name, v) for name, v in
                          zip(("p", "q", "max_row_size", "max_col_size"), sizes, strict=True))
    return _materialize(labels.row_labels, labels.col_labels, labels.rounds,
                        labels.status != STATUS_OK, p=p, q=q, max_r=max_r, max_s=max_s)


def orbit_partition(C, a, b, *, tol: float = 1e-9, max_rounds: int = 50,
                    verify: bool = True, quantize: str = "round",
                    weight_tol: float = 1e-9, seed: int = 0) -> OrbitPartition:
    r"""Equitable row/column partition of ``(C, a, b)``: :func:`detect_orbits` (on the device)
    then :func:`partition_from_labels` (one read of four integers and the status).

    Arguments as :func:`detect_orbits`. A NumPy float64 ``C`` is quantised in float64 even when
    JAX's 64-bit mode is off (the mode is enabled for the detection call). Raises
    ``ValueError`` for invalid arguments, a non-finite ``C`` (or ``C / tol`` overflowing), and
    weights that are not finite, nonnegative and of positive mass.

    Returns:
      An :class:`OrbitPartition`; ``fallback`` is ``True`` when refinement did not stabilise
      within ``max_rounds`` or the exact check failed (the discrete partition is returned).

    Example:
      >>> import numpy as np
      >>> C = np.array([[0., 1., 1.], [1., 0., 1.], [1., 1., 0.]])
      >>> part = orbit_partition(C, np.ones(3) / 3, np.ones(3) / 3)
      >>> part.num_row_classes, part.num_col_classes
      (1, 1)
    """
    wide = (isinstance(C, np.ndarray) and C.dtype == np.float64
            and jax.dtypes.canonicalize_dtype(jnp.float64) != jnp.float64)
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        labels = detect_orbits(C, a, b, tol=tol, max_rounds=max_rounds, verify=verify,
                               quantize=quantize, weight_tol=weight_tol, seed=seed)
    return partition_from_labels(labels)


def trivial_partition(n: int, m: int) -> OrbitPartition:
    """The discrete partition (every row and column its own class): the full problem."""
    n = check_static_int("n", n)
    m = check_static_int("m", m)
    return _materialize(jnp.arange(n, dtype=jnp.int32), jnp.arange(m, dtype=jnp.int32),
                        jnp.zeros((), jnp.int32), jnp.zeros((), bool), p=n, q=m, max_r=1,
                        max_s=1)
