"""Tree comparisons, the matrix's test problem and the per-case cache."""

from __future__ import annotations

import unittest
import zlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml.testing.cases import TransformationCase

_F32_TOL = {"rtol": 2e-5, "atol": 2e-6}


def _skip(reason: str):
    raise unittest.SkipTest(reason)


def _key(seed: int):
    return jax.random.key(seed)


def _as_numpy(x) -> np.ndarray:
    """A NumPy view of a leaf; PRNG keys become their key data, 16-bit floats float32."""
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    if x.dtype in (jnp.bfloat16, jnp.float16):
        x = x.astype(jnp.float32)
    return np.asarray(x)


def _assert_same_structure(a, b, what: str) -> None:
    sa, sb = jax.tree.structure(a), jax.tree.structure(b)
    assert sa == sb, f"{what}: tree structures differ:\n  {sa}\n  {sb}"


def _leaf_pairs(a, b, what: str):
    _assert_same_structure(a, b, what)
    for i, (x, y) in enumerate(zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)):
        x, y = jnp.asarray(x), jnp.asarray(y)
        assert x.dtype == y.dtype, f"{what}: leaf {i} dtype {x.dtype} != {y.dtype}"
        assert x.shape == y.shape, f"{what}: leaf {i} shape {x.shape} != {y.shape}"
        yield i, _as_numpy(x), _as_numpy(y)


def _max_diff(nx, ny) -> float:
    return float(np.nanmax(np.abs(nx.astype(np.float64) - ny.astype(np.float64)), initial=0.0))


def assert_trees_equal(a, b, what: str = "trees") -> None:
    """Same structure, shapes, dtypes and bitwise-equal values (NaNs compare equal)."""
    for i, nx, ny in _leaf_pairs(a, b, what):
        assert np.array_equal(nx, ny, equal_nan=nx.dtype.kind in "fc"), (
            f"{what}: leaf {i} values differ (max abs diff {_max_diff(nx, ny)})")


def assert_trees_close(a, b, what: str = "trees", *, rtol=_F32_TOL["rtol"],
                       atol=_F32_TOL["atol"]) -> None:
    """Same structure, shapes and dtypes; values close (NaNs compare equal)."""
    for i, nx, ny in _leaf_pairs(a, b, what):
        if nx.dtype.kind not in "fc":
            assert np.array_equal(nx, ny), f"{what}: leaf {i} values differ"
        elif not np.allclose(nx, ny, rtol=rtol, atol=atol, equal_nan=True):
            raise AssertionError(f"{what}: leaf {i} values differ (max abs diff "
                                 f"{_max_diff(nx, ny):.3g}, rtol={rtol}, atol={atol})")


def _trees_differ(a, b) -> bool:
    return any(not np.array_equal(_as_numpy(x), _as_numpy(y), equal_nan=True)
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def _assert_same_avals(a, b, what: str, *, weak_type: bool = True) -> None:
    _assert_same_structure(a, b, what)
    for i, (x, y) in enumerate(zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)):
        kx = (tuple(x.shape), x.dtype)
        ky = (tuple(y.shape), y.dtype)
        assert kx == ky, f"{what}: leaf {i} is {kx} before and {ky} after"
        if weak_type:
            wx, wy = bool(getattr(x, "weak_type", False)), bool(getattr(y, "weak_type", False))
            assert wx == wy, (f"{what}: leaf {i} weak_type {wx} before and {wy} after "
                              "(this retraces jitted loops; build the leaf with an explicit dtype)")


def _abstract(tree):
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)), tree)


def _float_leaves_finite(tree) -> bool:
    return all(bool(np.all(np.isfinite(_as_numpy(x)))) for x in jax.tree.leaves(tree)
               if jnp.issubdtype(jnp.result_type(x), jnp.inexact))


def _stack(trees):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


# --------------------------------------------------------------------------- test problem


def _param_shapes() -> dict:
    return {"w": (3, 4), "b": (4,), "s": (), "nested": ({"u": (2, 3)},)}


def make_params(dtype=jnp.float32, scale: float = 1.0) -> dict:
    """The mixed pytree of the matrix: matrix ``w``, vector ``b``, scalar ``s``, nested ``u``."""
    counter = iter(range(100))

    def leaf(shape):
        i = next(counter)
        size = int(np.prod(shape, dtype=np.int64))
        v = scale * np.sin(np.arange(size, dtype=np.float64) * 0.7 + i + 0.3)
        return jnp.asarray(v.reshape(shape), dtype)

    return jax.tree.map(leaf, _param_shapes(), is_leaf=lambda s: isinstance(s, tuple)
                        and all(isinstance(d, int) for d in s))


def _coefficients(path, shape):
    offset = zlib.crc32(jax.tree_util.keystr(path).encode()) % 97 / 13.0
    size = int(np.prod(shape, dtype=np.int64))
    t = np.arange(size, dtype=np.float64)
    a = (1.0 + 0.5 * np.abs(np.sin(t + offset))).reshape(shape)
    b = (0.5 * np.cos(1.3 * t + offset)).reshape(shape)
    return a, b


def matrix_loss(params):
    """``sum_k 0.5 ||a_k * p_k - b_k||^2`` over the leaves ``p_k`` (computed in float32, or
    float64 for float64 leaves). Leaves missing from a masked sub-tree simply drop out."""
    total = 0.0
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        ct = jnp.float64 if leaf.dtype == jnp.float64 else jnp.float32
        a, b = _coefficients(path, leaf.shape)
        r = jnp.asarray(a, ct) * leaf.astype(ct) - jnp.asarray(b, ct)
        total = total + 0.5 * jnp.sum(r * r)
    return total


# --------------------------------------------------------------------------- shared per case

# Compiling dominates the matrix's run time, so each case builds its transformation (or
# algorithm), jitted step, reference run and eager run once; checks that must construct afresh
# (determinism, wrappers) do so explicitly. Keyed by id(case), holding the case so the id stays
# unique while cached.
_CACHE: dict[int, tuple[Any, dict]] = {}


def _cached(case) -> dict:
    entry = _CACHE.get(id(case))
    if entry is None or entry[0] is not case:
        entry = _CACHE[id(case)] = (case, {})
    return entry[1]


def check_invalid(case) -> None:
    """Each declared out-of-range hyperparameter raises ``ValueError`` naming the argument."""
    kwargs = dict(case.kwargs)
    if isinstance(case, TransformationCase) and case.stochastic:
        kwargs.setdefault("key", _key(0))
    case.make(**kwargs)  # the valid hyperparameters construct
    if not case.invalid:
        _skip("the case declares no invalid hyperparameters")
    for override, arg_name in case.invalid:
        try:
            case.make(**{**kwargs, **override})
        except ValueError as e:
            assert arg_name in str(e), (
                f"ValueError for {override} does not name {arg_name!r}: {e}")
        else:
            raise AssertionError(f"make(**{override}) did not raise ValueError naming "
                                 f"{arg_name!r}")
