"""Core checks of a ``GradientTransformation``: jit, extra args, vmap, pytrees, dtypes,
determinism, key reuse and orbax checkpoints (the optax wrappers are in ``wrappers.py``)."""

from __future__ import annotations

import tempfile

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml.testing.cases import NUM_STEPS, TransformationCase
from jaxopt_icml.testing.trees import (
    _abstract,
    _assert_same_avals,
    _assert_same_structure,
    _cached,
    _float_leaves_finite,
    _key,
    _skip,
    _stack,
    _trees_differ,
    assert_trees_close,
    assert_trees_equal,
    make_params,
    matrix_loss,
)

# --------------------------------------------------------------------------- driving a case


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


def _eager_steps(tx, case, params, num_steps=NUM_STEPS, state=None, **kw):
    """``(params, state, updates)`` after each of ``num_steps`` updates, op by op in a Python
    loop: the update is never traced, so Python-side state read by ``update`` shows up as a
    difference from a jitted run. Cheap once the ops' shapes have been seen."""
    step = _step_fn(tx, case, **kw)
    state = tx.init(params) if state is None else state
    out = []
    for _ in range(num_steps):
        params, state, updates = step(params, state)
        out.append((params, state, updates))
    return out


def _run_steps(tx, case, num_steps=NUM_STEPS, state=None, **kw):
    """``num_steps`` jitted steps of ``tx`` from ``make_params()``: ``(params, state, updates)``
    after each step. (One compiled step called repeatedly compiles faster than a scan.)"""
    step = jax.jit(_step_fn(tx, case, **kw))
    p = make_params()
    s = tx.init(p) if state is None else state
    out = []
    for _ in range(num_steps):
        p, s, u = step(p, s)
        out.append((p, s, u))
    return out


def _case_step(case: TransformationCase):
    """``(tx, jitted_step, trace_counter)`` for ``case``; the step is only ever called with
    float32 :func:`make_params`-shaped trees, so any retrace is a defect of the
    transformation."""
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


def _eager_reference(case: TransformationCase):
    """The eager run of a freshly constructed transformation (see :func:`_eager_steps`)."""
    c = _cached(case)
    if "eager" not in c:
        c["eager"] = _eager_steps(_make(case), case, make_params())
    return c["eager"]


# --------------------------------------------------------------------------- checks


def check_jit(case: TransformationCase) -> None:
    """jit == no-jit for a few steps; the jitted step is traced once across repeated calls."""
    eager = _eager_reference(case)
    ref = _reference(case)
    traces = _case_step(case)[2][0]
    assert traces == 1, (
        f"the jitted update was traced {traces} times in {NUM_STEPS} calls: the state's "
        "shapes, dtypes or weak types change across updates, or the update reads Python state")
    assert_trees_close(ref[-1], eager[-1], "jit vs no-jit (params, state, updates)")
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
    """vmap of init and update == stacked single runs: over construction keys for stochastic
    cases (whose runs must differ), else over a batch of initial parameters."""
    if case.stochastic:
        params = make_params()
        keys = jax.random.split(_key(7), 3)
        singles = [_eager_steps(_make(case, key=k), case, params)[-1] for k in keys]
        p = _stack([params] * len(singles))
        s = jax.vmap(lambda k, q: _make(case, key=k).init(q))(keys, p)
        vstep = jax.jit(jax.vmap(lambda k, q, t: _step_fn(_make(case, key=k), case)(q, t)))
        for _ in range(NUM_STEPS):
            p, s, u = vstep(keys, p, s)
    else:
        inputs = [make_params(), make_params(scale=-1.5)]
        tx, jstep, _ = _case_step(case)
        singles = []  # through the cached jitted step (no extra compilation)
        for p in inputs:
            s = tx.init(p)
            for _ in range(NUM_STEPS):
                p, s, u = jstep(p, s)
            singles.append((p, s, u))
        p = _stack(inputs)
        s = jax.vmap(tx.init)(p)
        vstep = jax.jit(jax.vmap(_step_fn(tx, case)))
        for _ in range(NUM_STEPS):
            p, s, u = vstep(p, s)
    assert_trees_close((p, s, u), _stack(singles), "vmap vs stacked single runs")
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
    jitted run as the cached one (params, state and updates after every step)."""
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


def _grow_last_axis(leaf):
    return jnp.zeros(leaf.shape[:-1] + (leaf.shape[-1] + 1,), leaf.dtype)


def check_shapes(case: TransformationCase) -> None:
    """``update`` refuses updates that disagree with the params (CONTRIBUTING.md section 1): a
    leaf one element longer, and an extra leaf, each raise ``ValueError`` naming the leaf's
    path (``jaxopt_icml.trees.check_same_shapes``), eagerly and at trace time, instead of
    broadcasting or failing inside JAX."""
    tx = _make(case)
    params = make_params()
    state = tx.init(params)
    extra = _extra(case)
    grads = jax.grad(matrix_loss)(params)
    paths = jax.tree_util.tree_flatten_with_path(grads)[0]
    path, _ = next((p, leaf) for p, leaf in paths if jnp.ndim(leaf) >= 1)
    where = jax.tree_util.keystr(path)
    longer = jax.tree_util.tree_map_with_path(
        lambda p, leaf: _grow_last_axis(leaf) if p == path else leaf, grads)
    extra_leaf = {**grads, "unexpected": jnp.zeros(2, jnp.float32)}
    for label, bad, name in (("a longer leaf", longer, where),
                             ("an extra leaf", extra_leaf, "['unexpected']")):
        for mode, update in (("eager", tx.update), ("jit", jax.jit(
                lambda u, s, p: tx.update(u, s, p, **extra)))):
            try:
                if mode == "eager":
                    update(bad, state, params, **extra)
                else:
                    update(bad, state, params)
            except ValueError as e:
                assert name in str(e), (
                    f"{mode}: updates with {label} raised ValueError without naming {name}: {e}")
            except Exception as e:  # noqa: BLE001 - JAX internals instead of a clear message
                raise AssertionError(f"{mode}: updates with {label} ({name}) raised "
                                     f"{type(e).__name__} instead of a ValueError naming the "
                                     f"leaf: {str(e)[:200]}") from e
            else:
                raise AssertionError(f"{mode}: updates with {label} ({name}) were accepted "
                                     "(silently broadcast or ignored)")
