"""The property matrix every algorithm passes (CONVENTIONS section 6).

A paper's test module declares ``CONTRACT_CASES``: a tuple of :class:`TransformationCase` (for
``optax.GradientTransformation``s) and :class:`AlgorithmCase` (for ``base.OracleAlgorithm``s).
``tests/test_contract.py`` collects them for every catalog row that has code and runs the checks
below on each.

The checks are plain functions ``check(case) -> None`` collected in the ordered dicts
:data:`transformation_checks` and :data:`algorithm_checks` (name -> function), so a test module
parametrizes over ``case x check``. A check raises ``AssertionError`` (with the reason) when the
property fails and ``unittest.SkipTest`` when it does not apply to the case (pytest reports it as
skipped). This module imports no test framework.

Transformation checks: ``jit`` (jit == eager, one trace for repeated calls), ``unknown_extra_args``,
``vmap`` (over construction keys, or over parameters), ``pytree`` (mixed tree, ``eval_shape``
init), ``dtypes`` (bf16/f32 kept, state avals stable), ``float64``, ``determinism``,
``key_reuse``, ``checkpoint`` (orbax), ``chain``, ``inject_hyperparams``, ``multi_steps``,
``masked``, ``apply_if_finite``, ``schedule``, ``pmap``, ``invalid``. Algorithm checks: ``jit``
(including no retrace in ``run``/``run_seeds``), ``info``, ``vmap_seeds``, ``shard_seeds``,
``determinism``, ``key_reuse``, ``dtypes`` (f32, f64), ``bfloat16``, ``checkpoint``,
``invalid``. Each case's object, jitted step and reference run are built once per process and
shared by its checks, since compilation dominates the run time.

Transformations are driven by a separable smooth test loss over a mixed pytree
(:func:`make_params`, :func:`matrix_loss`): every leaf ``p`` with path ``k`` contributes
``0.5 * ||a_k * p - b_k||^2`` with fixed coefficients that depend on the path only, so the loss
of a sub-tree (as ``optax.masked`` sees it) is the same function restricted to those leaves.
"""

from __future__ import annotations

import inspect
import tempfile
import unittest
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

__all__ = [
    "AlgorithmCase",
    "TransformationCase",
    "algorithm_checks",
    "assert_trees_close",
    "assert_trees_equal",
    "checks_for",
    "make_params",
    "matrix_loss",
    "transformation_checks",
]


class TransformationCase(NamedTuple):
    """How to build and drive one ``GradientTransformation`` in the property matrix.

    Attributes:
      name: unique case id, e.g. ``"goma"``.
      make: ``make(**kwargs) -> optax.GradientTransformation(ExtraArgs)``.
      kwargs: valid hyperparameters for ``make`` (may include a float ``learning_rate`` or
        ``step_size`` that the matrix also replaces by a schedule / injects).
      invalid: tuple of ``(kwargs_override, argument_name)``: each override must make ``make``
        raise ``ValueError`` whose message names ``argument_name``.
      extra_args: ``extra_args(loss_fn) -> dict`` of keyword oracles passed to ``update`` (e.g.
        ``{"grad_fn": ...}`` for SAM, ``{"field_fn": ...}`` for extragradient), built from the
        test's loss; ``None`` when the update needs none.
      needs_params: whether ``update`` requires ``params``.
      stochastic: whether results depend on a key given at construction (``make(key=...)``).
      lr_name: name of the learning-rate-like float argument the optax wrappers act on (``None``
        when there is none).
    """

    name: str
    make: Callable[..., Any]
    kwargs: dict
    invalid: tuple = ()
    extra_args: Callable[[Callable], dict] | None = None
    needs_params: bool = True
    stochastic: bool = False
    lr_name: str | None = "learning_rate"


class AlgorithmCase(NamedTuple):
    """How to build and drive one ``base.OracleAlgorithm`` in the property matrix.

    Attributes:
      name: unique case id.
      make: ``make(**kwargs) -> OracleAlgorithm``.
      kwargs: valid hyperparameters.
      problem: ``problem(key, dtype) -> (x0, oracle)`` small problem for the matrix.
      invalid: as in :class:`TransformationCase`.
      stochastic: whether different keys must give different results.
    """

    name: str
    make: Callable[..., Any]
    kwargs: dict
    problem: Callable[[Any, Any], tuple[Any, Any]]
    invalid: tuple = ()
    stochastic: bool = False


NUM_STEPS = 3
_F32_TOL = {"rtol": 2e-5, "atol": 2e-6}


# --------------------------------------------------------------------------- tree helpers


def _skip(reason: str):
    raise unittest.SkipTest(reason)


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


def assert_trees_equal(a, b, what: str = "trees") -> None:
    """Same structure, shapes, dtypes and bitwise-equal values (NaNs compare equal)."""
    _assert_same_structure(a, b, what)
    for i, (x, y) in enumerate(zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)):
        x, y = jnp.asarray(x), jnp.asarray(y)
        assert x.dtype == y.dtype, f"{what}: leaf {i} dtype {x.dtype} != {y.dtype}"
        assert x.shape == y.shape, f"{what}: leaf {i} shape {x.shape} != {y.shape}"
        nx, ny = _as_numpy(x), _as_numpy(y)
        equal_nan = nx.dtype.kind in "fc"
        assert np.array_equal(nx, ny, equal_nan=equal_nan), (
            f"{what}: leaf {i} values differ (max abs diff "
            f"{np.max(np.abs(nx.astype(np.float64) - ny.astype(np.float64)))})"
        )


def assert_trees_close(a, b, what: str = "trees", *, rtol=_F32_TOL["rtol"],
                       atol=_F32_TOL["atol"]) -> None:
    """Same structure, shapes and dtypes; values close (NaNs compare equal)."""
    _assert_same_structure(a, b, what)
    for i, (x, y) in enumerate(zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)):
        x, y = jnp.asarray(x), jnp.asarray(y)
        assert x.dtype == y.dtype, f"{what}: leaf {i} dtype {x.dtype} != {y.dtype}"
        assert x.shape == y.shape, f"{what}: leaf {i} shape {x.shape} != {y.shape}"
        nx, ny = _as_numpy(x), _as_numpy(y)
        if nx.dtype.kind not in "fc":
            assert np.array_equal(nx, ny), f"{what}: leaf {i} values differ"
            continue
        if not np.allclose(nx, ny, rtol=rtol, atol=atol, equal_nan=True):
            diff = np.nanmax(np.abs(nx.astype(np.float64) - ny.astype(np.float64)))
            raise AssertionError(f"{what}: leaf {i} values differ (max abs diff {diff:.3g}, "
                                 f"rtol={rtol}, atol={atol})")


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




def _key(seed: int):
    return jax.random.key(seed)


# --------------------------------------------------------------------------- transformations


def _make(case: TransformationCase, *, key=None, **override):
    kwargs = {**case.kwargs, **override}
    if case.stochastic:
        kwargs.setdefault("key", _key(0) if key is None else key)
    return case.make(**kwargs)


def _extra(case: TransformationCase, loss=matrix_loss) -> dict:
    return {} if case.extra_args is None else dict(case.extra_args(loss))


def _step_fn(tx, case: TransformationCase, *, loss=matrix_loss, extra=None):
    extra = _extra(case, loss) if extra is None else extra

    def step(params, state):
        grads = jax.grad(loss)(params)
        updates, state = tx.update(grads, state, params, **extra)
        return optax.apply_updates(params, updates), state, updates

    return step


def _trajectory(tx, case, params, num_steps=NUM_STEPS, **kw):
    """``num_steps`` updates from ``tx.init(params)`` as one ``lax.scan`` (pure: jit/vmap it).

    Returns ``(params, state, last_updates)``.
    """
    step = _step_fn(tx, case, **kw)

    def body(carry, _):
        p, s, u = step(*carry)
        return (p, s), u

    (params, state), updates = jax.lax.scan(body, (params, tx.init(params)), None,
                                            length=num_steps)
    return params, state, jax.tree.map(lambda u: u[-1], updates)


def _eager_trajectory(tx, case, params, num_steps=NUM_STEPS):
    """The same updates op by op in a Python loop: the update is never traced, so Python-side
    state read by ``update`` shows up as a difference from the jitted run."""
    step = _step_fn(tx, case)
    state = tx.init(params)
    updates = None
    for _ in range(num_steps):
        params, state, updates = step(params, state)
    return params, state, updates


# Compiling dominates the matrix's run time, so each case builds its transformation (or
# algorithm), jitted step and reference run once; checks that must construct afresh
# (determinism, wrappers) do so explicitly. Keyed by id(case), holding the case so the id stays
# unique while cached.
_CACHE: dict[int, tuple[Any, dict]] = {}


def _cached(case) -> dict:
    entry = _CACHE.get(id(case))
    if entry is None or entry[0] is not case:
        entry = _CACHE[id(case)] = (case, {})
    return entry[1]


def _case_step(case: TransformationCase):
    """``(tx, jitted_step, trace_counter)`` for ``case``; the step is only ever called with
    float32 :func:`make_params`, so any retrace is a defect of the transformation."""
    c = _cached(case)
    if "step" not in c:
        tx = _make(case)
        step = _step_fn(tx, case)
        traces = [0]

        def counted(p, s):
            traces[0] += 1
            return step(p, s)

        c["step"] = (tx, jax.jit(counted), traces)
    return c["step"]


def _reference(case: TransformationCase):
    """The plain jitted run: a list of ``(params, state, updates)`` after each of ``NUM_STEPS``
    steps from ``(make_params(), init)``."""
    c = _cached(case)
    if "reference" not in c:
        tx, jstep, _ = _case_step(case)
        p = make_params()
        s = tx.init(p)
        out = []
        for _ in range(NUM_STEPS):
            p, s, u = jstep(p, s)
            out.append((p, s, u))
        c["reference"] = out
    return c["reference"]


def check_jit(case: TransformationCase) -> None:
    """jit == no-jit for a few steps; the jitted step is traced once across repeated calls."""
    eager = _eager_trajectory(_make(case), case, make_params())
    ref = _reference(case)
    traces = _case_step(case)[2][0]
    assert traces == 1, (
        f"the jitted update was traced {traces} times in {NUM_STEPS} calls: the state's "
        "shapes, dtypes or weak types change across updates, or the update reads Python state")
    assert_trees_close(ref[-1], eager, "jit vs no-jit (params, state, updates)")
    assert _float_leaves_finite(ref[-1][0]), "non-finite parameters after a few steps"


def check_unknown_extra_args(case: TransformationCase) -> None:
    """``update`` accepts keyword extras it does not use (optax's ExtraArgs contract), and
    ``params=None`` when the case says it does not need them."""
    params = make_params()
    tx = _make(case)
    state = tx.init(params)
    grads = jax.grad(matrix_loss)(params)
    extra = {**_extra(case), "unexpected_extra_arg_for_this_optimizer": 1}
    given = params if case.needs_params else None
    try:
        updates, _ = tx.update(grads, state, given, **extra)
    except TypeError as e:
        raise AssertionError(f"update rejects an unknown keyword extra: {e}") from e
    _assert_same_structure(updates, params, "updates vs params")


def check_vmap(case: TransformationCase) -> None:
    """vmap == stacked single runs: over construction keys for stochastic cases (which must
    differ), else over a batch of initial parameters."""
    if case.stochastic:
        params = make_params()
        inputs = list(jax.random.split(_key(7), 3))
        run = lambda k: _trajectory(_make(case, key=k), case, params)  # noqa: E731
        single = jax.jit(run)
        singles = [single(x) for x in inputs]
    else:
        inputs = [make_params(), make_params(scale=-1.5)]
        tx = _make(case)
        run = lambda p: _trajectory(tx, case, p)  # noqa: E731
        # single runs through the cached jitted step (no extra compilation)
        _, jstep, _ = _case_step(case)
        singles = []
        for p in inputs:
            s = tx.init(p)
            for _ in range(NUM_STEPS):
                p, s, u = jstep(p, s)
            singles.append((p, s, u))
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *inputs)
    batched = jax.jit(jax.vmap(run))(batch)
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *singles)
    assert_trees_close(batched, stacked, "vmap vs stacked single runs")
    if case.stochastic:
        assert _trees_differ(singles[0][0], singles[1][0]), (
            "a stochastic transformation gave identical parameters for two different keys")


def check_pytree(case: TransformationCase) -> None:
    """Mixed pytrees (matrix, vector, scalar, nested dict/tuple) keep their structure and
    shapes; ``init`` traces on ``jax.ShapeDtypeStruct`` leaves (``jax.eval_shape``) and agrees
    with the concrete state."""
    params = make_params()
    tx = _make(case)
    abstract_state = jax.eval_shape(tx.init, _abstract(params))
    _assert_same_avals(abstract_state, tx.init(params), "eval_shape(init) vs init",
                       weak_type=False)
    p, _, u = _reference(case)[-1]
    _assert_same_avals(_abstract(p), _abstract(params), "params after updates", weak_type=False)
    _assert_same_avals(_abstract(u), _abstract(params), "updates vs params", weak_type=False)
    assert _float_leaves_finite(p), "non-finite parameters"
    assert _trees_differ(p, params), f"{NUM_STEPS} updates left every parameter unchanged"


def _check_dtype(case: TransformationCase, dtype, tx=None, step=None) -> None:
    params = make_params(dtype)
    if tx is None:
        tx = _make(case)
        step = jax.jit(_step_fn(tx, case))
    state = tx.init(params)
    abstract_out = jax.eval_shape(step, params, state)
    _assert_same_avals(abstract_out[1], state, f"{jnp.dtype(dtype).name} state across an update")
    p, s = params, state
    for _ in range(2):
        p, s, u = step(p, s)
    for path, leaf in jax.tree_util.tree_leaves_with_path(u):
        assert leaf.dtype == jnp.dtype(dtype), (
            f"update {jax.tree_util.keystr(path)} has dtype {leaf.dtype}, params {dtype}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(p):
        assert leaf.dtype == jnp.dtype(dtype), (
            f"param {jax.tree_util.keystr(path)} became {leaf.dtype}, was {dtype}")
    _assert_same_avals(s, state, f"{jnp.dtype(dtype).name} state after two updates")
    assert _float_leaves_finite(p), f"non-finite {jnp.dtype(dtype).name} parameters"


def check_dtypes(case: TransformationCase) -> None:
    """bf16 and f32 parameters keep their dtype through updates; the state's shapes, dtypes
    (and weak types) are the same before and after an update."""
    tx, jstep, _ = _case_step(case)
    _check_dtype(case, jnp.float32, tx, jstep)
    _check_dtype(case, jnp.bfloat16)


def check_float64(case: TransformationCase) -> None:
    """A float64 run works under ``jax.enable_x64`` and stays float64."""
    with jax.enable_x64(True):
        _check_dtype(case, jnp.float64)


def check_determinism(case: TransformationCase) -> None:
    """A fresh construction from the same hyperparameters (and key) gives bitwise the same
    run as the cached one."""
    tx = _make(case)
    step = jax.jit(_step_fn(tx, case))
    p = make_params()
    s = tx.init(p)
    for i, ref in enumerate(_reference(case)):
        p, s, u = step(p, s)
        assert_trees_equal((p, s, u), ref, f"two runs with the same key, step {i + 1}")


def check_key_reuse(case: TransformationCase) -> None:
    """A stochastic transformation never consumes the same key twice (jax.debug_key_reuse)."""
    if not case.stochastic:
        _skip("deterministic case")
    params = make_params()
    with jax.debug_key_reuse(True):
        tx = _make(case, key=_key(3))
        step = jax.jit(_step_fn(tx, case))
        p, s = params, tx.init(params)
        try:
            for _ in range(NUM_STEPS):
                p, s, _ = step(p, s)
        except jax.errors.KeyReuseError as e:
            raise AssertionError(f"key reuse: {e}") from e


def check_checkpoint(case: TransformationCase) -> None:
    """Orbax round trip of the state against ``jax.eval_shape(init, params)``: same structure,
    types, dtypes and values, and the next update is bitwise identical."""
    from jaxopt_icml import checkpoint

    tx, jstep, _ = _case_step(case)
    params = make_params()
    p, s, _ = _reference(case)[1]
    with tempfile.TemporaryDirectory() as d:
        checkpoint.save(d, 2, s)
        restored = checkpoint.restore(d, jax.eval_shape(tx.init, params))
    assert_trees_equal(restored, s, "restored state vs saved state")
    for x, y in zip(jax.tree.leaves(restored), jax.tree.leaves(s), strict=True):
        assert type(x) is type(y), f"restored leaf type {type(x)} != {type(y)}"
    assert_trees_equal(jstep(p, restored), jstep(p, s), "next update after restore")


def _lr(case: TransformationCase) -> float:
    if case.lr_name is None:
        _skip("the case declares no learning-rate-like argument (lr_name=None)")
    if case.lr_name not in case.kwargs:
        raise AssertionError(f"lr_name={case.lr_name!r} is not in the case's kwargs")
    lr = case.kwargs[case.lr_name]
    if isinstance(lr, bool) or not isinstance(lr, int | float):
        raise AssertionError(f"kwargs[{case.lr_name!r}] must be a Python float, got {lr!r}")
    return float(lr)


def _run_steps(tx, case, num_steps=NUM_STEPS, state=None, **kw):
    """``num_steps`` jitted steps of ``tx`` from ``make_params()``: ``(params, state, updates)``
    after each step."""
    step = jax.jit(_step_fn(tx, case, **kw))
    p = make_params()
    s = tx.init(p) if state is None else state
    out = []
    for _ in range(num_steps):
        p, s, u = step(p, s)
        out.append((p, s, u))
    return out


def check_chain(case: TransformationCase) -> None:
    """Inside ``optax.chain`` with identity/scale(1.0) around it: same trajectory."""
    chained = optax.chain(optax.identity(), _make(case), optax.scale(1.0))
    got = _run_steps(chained, case)[-1][0]
    assert_trees_close(got, _reference(case)[-1][0], "chain(identity, tx, scale(1)) vs tx")


def check_inject_hyperparams(case: TransformationCase) -> None:
    """``optax.inject_hyperparams`` over the learning-rate-like argument: same trajectory as the
    plain transformation, and the injected value is the one used."""
    lr = _lr(case)
    name = case.lr_name
    fixed = {k: v for k, v in case.kwargs.items() if k != name}
    if case.stochastic:
        fixed["key"] = _key(0)

    def factory(**hp):
        return case.make(**fixed, **hp)

    # inject_hyperparams binds arguments by signature: expose exactly one keyword argument.
    factory.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY)])
    injected = optax.inject_hyperparams(factory)(**{name: lr})
    step = jax.jit(_step_fn(injected, case))
    params = make_params()
    state0 = injected.init(params)
    assert name in state0.hyperparams, f"{name} is not among the injected hyperparameters"
    p, s = params, state0
    for _ in range(NUM_STEPS):
        p, s, _ = step(p, s)
    assert_trees_close(p, _reference(case)[-1][0], f"inject_hyperparams({name}) vs plain")
    doubled = state0._replace(hyperparams={**state0.hyperparams,
                                           name: 2 * state0.hyperparams[name]})
    _, _, u1 = step(params, state0)
    _, _, u2 = step(params, doubled)
    assert _trees_differ(u1, u2), f"changing the injected {name} did not change the update"


def check_multi_steps(case: TransformationCase) -> None:
    """``optax.MultiSteps(every_k_schedule=2)``: zero updates on the first micro-step (state
    avals stable), then the transformation's own first update on the mean gradient."""
    ms = optax.MultiSteps(_make(case), every_k_schedule=2)
    params = make_params()
    state = ms.init(params)
    (p1, s1, u1), (_, _, u2) = _run_steps(ms, case, 2)
    _assert_same_avals(_abstract(u1), _abstract(params), "MultiSteps updates vs params",
                       weak_type=False)
    for path, leaf in jax.tree_util.tree_leaves_with_path(u1):
        assert not np.any(_as_numpy(leaf)), (
            f"MultiSteps' first micro-step is not zero at {jax.tree_util.keystr(path)}")
    _assert_same_avals(s1, state, "MultiSteps state across an update")
    assert_trees_equal(p1, params, "params after the first micro-step")
    # Parameters did not move on the first micro-step, so both gradients are equal and the
    # accumulated update is the plain first update.
    assert_trees_close(u2, _reference(case)[0][2],
                       "MultiSteps(k=2) second call vs plain first update")


def check_masked(case: TransformationCase) -> None:
    """``optax.masked`` with one leaf masked out (and zeroed by the complementary mask): that
    leaf never changes and the others follow the transformation run on the sub-tree."""
    params = make_params()
    mask = {"w": True, "b": False, "s": True, "nested": ({"u": True},)}
    inverse = jax.tree.map(lambda m: not m, mask)
    tx = optax.chain(optax.masked(_make(case), mask),
                     optax.masked(optax.set_to_zero(), inverse))
    p = jax.jit(lambda p: _trajectory(tx, case, p)[0])(params)
    assert_trees_equal(p["b"], params["b"], "the masked-out leaf")
    sub = {k: v for k, v in params.items() if k != "b"}
    ref = jax.jit(lambda q: _trajectory(_make(case), case, q)[0])(sub)
    assert_trees_close({k: v for k, v in p.items() if k != "b"}, ref,
                       "masked leaves vs the transformation on the sub-tree")


def check_apply_if_finite(case: TransformationCase) -> None:
    """``optax.apply_if_finite``: a NaN gradient leaves params and inner state unchanged, and
    the next finite step continues exactly as if it had not happened."""
    params = make_params()
    tx = optax.apply_if_finite(_make(case), max_consecutive_errors=3)
    extra = _extra(case)

    def step(p, s, poison):
        g = jax.grad(matrix_loss)(p)
        g = {**g, "w": jnp.where(poison, jnp.nan, g["w"])}
        u, s = tx.update(g, s, p, **extra)
        return optax.apply_updates(p, u), s

    step = jax.jit(step)
    s0 = tx.init(params)
    p1, s1 = step(params, s0, False)
    p2, s2 = step(p1, s1, True)
    assert_trees_equal(p2, p1, "params after a NaN gradient")
    assert_trees_equal(s2.inner_state, s1.inner_state, "inner state after a NaN gradient")
    assert int(s2.notfinite_count) == 1, "apply_if_finite did not register the NaN gradient"
    p3, _ = step(p2, s2, False)
    assert_trees_close(p3, _reference(case)[1][0],
                       "finite steps around a skipped NaN step vs plain run")


def check_schedule(case: TransformationCase) -> None:
    """A constant schedule as the learning-rate-like argument equals the float."""
    lr = _lr(case)
    sched = _make(case, **{case.lr_name: optax.constant_schedule(lr)})
    got = _run_steps(sched, case)[-1][0]
    assert_trees_close(got, _reference(case)[-1][0], f"constant_schedule({case.lr_name}) vs float")


def check_pmap(case: TransformationCase) -> None:
    """A user can still call the transformation under ``jax.pmap`` (replicated parameters)."""
    n = min(2, jax.local_device_count())
    if n < 2:
        _skip("needs at least 2 devices")
    tx, _, _ = _case_step(case)
    params = make_params()
    rep = jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *jnp.shape(a))), params)
    step = _step_fn(tx, case)
    got = jax.pmap(lambda p: step(p, tx.init(p))[0], axis_name="batch")(rep)
    assert_trees_close(jax.tree.map(lambda a: a[0], got), _reference(case)[0][0], "pmap vs jit")


def _check_invalid(case) -> None:
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


def check_invalid(case) -> None:
    """Each declared out-of-range hyperparameter raises ``ValueError`` naming the argument."""
    _check_invalid(case)


transformation_checks: dict[str, Callable[[TransformationCase], None]] = {
    "jit": check_jit,
    "unknown_extra_args": check_unknown_extra_args,
    "vmap": check_vmap,
    "pytree": check_pytree,
    "dtypes": check_dtypes,
    "float64": check_float64,
    "determinism": check_determinism,
    "key_reuse": check_key_reuse,
    "checkpoint": check_checkpoint,
    "chain": check_chain,
    "inject_hyperparams": check_inject_hyperparams,
    "multi_steps": check_multi_steps,
    "masked": check_masked,
    "apply_if_finite": check_apply_if_finite,
    "schedule": check_schedule,
    "pmap": check_pmap,
    "invalid": check_invalid,
}


# --------------------------------------------------------------------------- oracle algorithms


def _trace_step(step, state, oracle):
    """Trace function recording the whole Step (module level, so jit caches stay warm)."""
    del state, oracle
    return step


def _problem(case: AlgorithmCase, dtype=jnp.float32):
    return case.problem(_key(1234), dtype)


def _run(alg, x0, oracle, key, num_steps=NUM_STEPS):
    from jaxopt_icml import base

    return base.run(alg, x0, oracle, key, num_steps, trace_fn=_trace_step)


def _eager_run(alg, x0, oracle, key, num_steps=NUM_STEPS):
    """What ``base.run`` computes, as a Python loop of eager updates (the same key schedule:
    ``init_key, update_key = split(key)``, step ``t`` uses ``fold_in(update_key, t)``)."""
    init_key, update_key = jax.random.split(key)
    state = alg.init(x0, init_key)
    steps = []
    for t in range(num_steps):
        step, state = alg.update(state, oracle, jax.random.fold_in(update_key, jnp.int32(t)))
        steps.append(step)
    return state, jax.tree.map(lambda *xs: jnp.stack(xs), *steps)


def _jit_run(alg, num_steps=NUM_STEPS):
    return jax.jit(lambda x0, oracle, key: _run(alg, x0, oracle, key, num_steps))


def _case_alg(case: AlgorithmCase):
    """``(alg, jitted_run, trace_counter, (x0, oracle))`` for ``case``, built once: ``alg``
    counts how often its update is traced."""
    from jaxopt_icml import base

    c = _cached(case)
    if "alg" not in c:
        inner = case.make(**case.kwargs)
        traces = [0]

        def update(state, oracle, key):
            traces[0] += 1
            return inner.update(state, oracle, key)

        alg = base.OracleAlgorithm(inner.init, update)
        c["alg"] = (alg, _jit_run(alg), traces, _problem(case))
    return c["alg"]


def _alg_reference(case: AlgorithmCase):
    """``(final_state, trace)`` of the cached jitted run with key 0."""
    c = _cached(case)
    if "reference" not in c:
        _, run, _, (x0, oracle) = _case_alg(case)
        c["reference"] = run(x0, oracle, _key(0))
    return c["reference"]


def _seed_keys(seed: int):
    """One key per local device (at least 2), so every seed-batched check shares one compiled
    ``run_seeds`` program and ``shard=True`` divides evenly."""
    n = jax.local_device_count()
    return jax.random.split(_key(seed), n if n > 1 else 2)


def check_alg_jit(case: AlgorithmCase) -> None:
    """``base.run`` under jit == an eager Python loop of updates; repeated jitted calls and
    repeated ``run_seeds`` calls with the same algorithm object do not retrace the update."""
    from jaxopt_icml import base

    alg, run, traces, (x0, oracle) = _case_alg(case)
    ref = _eager_run(case.make(**case.kwargs), x0, oracle, _key(0))
    assert_trees_close(_alg_reference(case), ref, "jit vs no-jit (final state, trace)")
    first = traces[0]
    run(x0, oracle, _key(1))
    assert traces[0] == first, "a second jitted run with a new key retraced the update"
    base.run_seeds(alg, x0, oracle, _seed_keys(2), NUM_STEPS, trace_fn=_trace_step)
    first = traces[0]
    base.run_seeds(alg, x0, oracle, _seed_keys(3), NUM_STEPS, trace_fn=_trace_step)
    assert traces[0] == first, "run_seeds retraced on a second call with the same algorithm"


def check_alg_info(case: AlgorithmCase) -> None:
    """``Step.info`` is a dict of scalars holding ``"oracle_calls"``; the iterate keeps x0's
    structure; the state's shapes and dtypes survive an update."""
    alg = case.make(**case.kwargs)
    x0, oracle = _case_alg(case)[3]
    state = alg.init(x0, _key(0))
    step, new_state = jax.eval_shape(alg.update, state, oracle, _key(1))
    _assert_same_avals(new_state, state, "algorithm state across an update")
    assert isinstance(step.info, dict), f"Step.info must be a dict, got {type(step.info)}"
    assert "oracle_calls" in step.info, "Step.info lacks 'oracle_calls'"
    for k, v in step.info.items():
        assert v.shape == (), f"info[{k!r}] is not a scalar (shape {v.shape})"
    _assert_same_avals(step.x, _abstract(x0), "Step.x vs x0", weak_type=False)


def check_alg_vmap_seeds(case: AlgorithmCase) -> None:
    """``run_seeds`` == the stacked single runs; different seeds differ when stochastic."""
    from jaxopt_icml import base

    alg, run, _, (x0, oracle) = _case_alg(case)
    keys = _seed_keys(2)
    batched = base.run_seeds(alg, x0, oracle, keys, NUM_STEPS, trace_fn=_trace_step)
    singles = [run(x0, oracle, k) for k in keys]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *singles)
    assert_trees_close(batched, stacked, "run_seeds vs stacked runs")
    if case.stochastic:
        assert _trees_differ(singles[0][1].x, singles[1][1].x), (
            "a stochastic algorithm gave identical iterates for two different seeds")


def check_alg_shard_seeds(case: AlgorithmCase) -> None:
    """``run_seeds(shard=True)`` over all local devices == ``shard=False``."""
    from jaxopt_icml import base

    alg, _, _, (x0, oracle) = _case_alg(case)
    keys = _seed_keys(6)
    a = base.run_seeds(alg, x0, oracle, keys, NUM_STEPS, trace_fn=_trace_step)
    b = base.run_seeds(alg, x0, oracle, keys, NUM_STEPS, trace_fn=_trace_step, shard=True)
    assert_trees_close(b, a, "run_seeds shard=True vs shard=False")


def check_alg_determinism(case: AlgorithmCase) -> None:
    """A fresh algorithm object with the same key gives bitwise the same run."""
    x0, oracle = _case_alg(case)[3]
    again = _jit_run(case.make(**case.kwargs))(x0, oracle, _key(0))
    assert_trees_equal(again, _alg_reference(case), "two runs with the same key")


def check_alg_key_reuse(case: AlgorithmCase) -> None:
    """The update never consumes the same key twice (jax.debug_key_reuse)."""
    x0, oracle = _case_alg(case)[3]
    with jax.debug_key_reuse(True):
        try:
            _jit_run(case.make(**case.kwargs))(x0, oracle, _key(0))
        except jax.errors.KeyReuseError as e:
            raise AssertionError(f"key reuse: {e}") from e


def _check_alg_dtype(alg, run, x0, oracle, dtype) -> None:
    state, trace = run(x0, oracle, _key(0))
    for path, leaf in jax.tree_util.tree_leaves_with_path(trace.x):
        assert leaf.dtype == jnp.dtype(dtype), (
            f"iterate {jax.tree_util.keystr(path)} has dtype {leaf.dtype}, x0 {dtype}")
    _assert_same_avals(_abstract(state), jax.eval_shape(alg.init, x0, _key(0)),
                       f"{jnp.dtype(dtype).name} state after the run", weak_type=False)
    assert _float_leaves_finite(trace.x), f"non-finite {jnp.dtype(dtype).name} iterates"


def check_alg_dtypes(case: AlgorithmCase) -> None:
    """float32 iterates stay float32, and a float64 run (``jax.enable_x64``) stays float64."""
    alg, run, _, (x0, oracle) = _case_alg(case)
    _check_alg_dtype(alg, run, x0, oracle, jnp.float32)
    with jax.enable_x64(True):
        alg = case.make(**case.kwargs)
        _check_alg_dtype(alg, _jit_run(alg), *_problem(case, jnp.float64), jnp.float64)


def check_alg_bfloat16(case: AlgorithmCase) -> None:
    """bfloat16 iterates stay bfloat16 (skipped when the case's problem has no bf16 form)."""
    try:
        x0, oracle = _problem(case, jnp.bfloat16)
    except Exception as e:  # noqa: BLE001 - the problem, not the algorithm, lacks bf16
        _skip(f"problem(key, bfloat16) failed: {type(e).__name__}: {e}")
    alg = case.make(**case.kwargs)
    _check_alg_dtype(alg, _jit_run(alg), x0, oracle, jnp.bfloat16)


def check_alg_checkpoint(case: AlgorithmCase) -> None:
    """Orbax round trip of the run state against ``jax.eval_shape(init, x0, key)``; the next
    update is bitwise identical."""
    from jaxopt_icml import checkpoint

    alg, _, _, (x0, oracle) = _case_alg(case)
    state, _ = _alg_reference(case)
    with tempfile.TemporaryDirectory() as d:
        checkpoint.save(d, NUM_STEPS, state)
        restored = checkpoint.restore(d, jax.eval_shape(alg.init, x0, _key(0)))
    assert_trees_equal(restored, state, "restored state vs saved state")
    update = jax.jit(alg.update)
    assert_trees_equal(update(restored, oracle, _key(9)), update(state, oracle, _key(9)),
                       "next update after restore")


algorithm_checks: dict[str, Callable[[AlgorithmCase], None]] = {
    "jit": check_alg_jit,
    "info": check_alg_info,
    "vmap_seeds": check_alg_vmap_seeds,
    "shard_seeds": check_alg_shard_seeds,
    "determinism": check_alg_determinism,
    "key_reuse": check_alg_key_reuse,
    "dtypes": check_alg_dtypes,
    "bfloat16": check_alg_bfloat16,
    "checkpoint": check_alg_checkpoint,
    "invalid": check_invalid,
}


def checks_for(case) -> dict[str, Callable]:
    """The checks that apply to ``case``'s type."""
    if isinstance(case, TransformationCase):
        return transformation_checks
    if isinstance(case, AlgorithmCase):
        return algorithm_checks
    raise TypeError(f"not a contract case: {type(case).__name__}")
