"""Checks of a ``base.OracleAlgorithm``: jit, info, seed batching and sharding, determinism,
key reuse, dtypes, orbax checkpoints, and traced (swept) hyperparameters."""

from __future__ import annotations

import tempfile
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxopt_icml.testing.cases import NUM_STEPS, AlgorithmCase
from jaxopt_icml.testing.trees import (
    _abstract,
    _assert_same_avals,
    _cached,
    _float_leaves_finite,
    _key,
    _skip,
    _stack,
    _trees_differ,
    assert_trees_close,
    assert_trees_equal,
    check_invalid,
)


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
    return state, _stack(steps)


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


def _alg_eager_reference(case: AlgorithmCase):
    """The eager run (key 0) of a freshly constructed algorithm."""
    c = _cached(case)
    if "eager" not in c:
        x0, oracle = _case_alg(case)[3]
        c["eager"] = _eager_run(case.make(**case.kwargs), x0, oracle, _key(0))
    return c["eager"]


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
    assert_trees_close(_alg_reference(case), _alg_eager_reference(case),
                       "jit vs no-jit (final state, trace)")
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
    assert_trees_close(batched, _stack(singles), "run_seeds vs stacked runs")
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
    """A fresh algorithm object with the same key gives bitwise the same jitted run."""
    x0, oracle = _case_alg(case)[3]
    again = _jit_run(case.make(**case.kwargs))(x0, oracle, _key(0))
    assert_trees_equal(again, _alg_reference(case), "two runs with the same key")


def check_alg_key_reuse(case: AlgorithmCase) -> None:
    """The update never consumes the same key twice (jax.debug_key_reuse). Under jit the
    checker analyses the traced program, so tracing the run is the whole check (one call with
    a fresh key adds no runtime condition; no compilation needed)."""
    x0, oracle = _case_alg(case)[3]
    with jax.debug_key_reuse(True):
        try:
            _jit_run(case.make(**case.kwargs)).trace(x0, oracle, _key(0))
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
    """bfloat16 iterates stay bfloat16. Skipped when the case says ``bfloat16=False`` or its
    problem raises ``NotImplementedError`` for bfloat16; any other error fails the check."""
    if not case.bfloat16:
        _skip("the case declares no bfloat16 form of its problem (bfloat16=False)")
    try:
        x0, oracle = _problem(case, jnp.bfloat16)
    except NotImplementedError as e:
        _skip(f"problem(key, bfloat16) is not implemented: {e}")
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
    # The next update, jitted as a resumed run would take it, on the restored state and on
    # the saved one placed as the restored one is. Orbax returns arrays committed to their
    # device, the run's are not; under eager dispatch that difference alone recompiled every
    # op of the update (1-2.5 s per case, about half this check's time in the suite), and
    # under jit it is one more compilation. With the placements made equal, both calls run
    # one executable: bitwise comparable.
    update = jax.jit(case.make(**case.kwargs).update)
    placed = jax.tree.map(lambda x, r: jax.device_put(x, r.sharding), state, restored)
    assert_trees_equal(update(restored, oracle, _key(9)), update(placed, oracle, _key(9)),
                       "next update after restore")


def check_alg_distributed(case: AlgorithmCase) -> None:
    """Workers simulated on one device (``mesh=None``) == one worker per device
    (``mesh=make_mesh()``, ``jax.shard_map``): the same run, the same final state."""
    from jaxopt_icml import mesh as mesh_lib

    if not case.distributed:
        _skip("not a distributed algorithm (distributed=False)")
    if jax.local_device_count() < 2:
        _skip("needs several (simulated) devices")
    x0, oracle = _case_alg(case)[3]
    sharded = case.make(**case.kwargs, mesh=mesh_lib.make_mesh())
    got = _jit_run(sharded)(x0, oracle, _key(0))
    assert_trees_close(got, _alg_reference(case), "shard_map workers vs vmap-simulated workers")


def sweep_hyperparameter(case: AlgorithmCase) -> str | None:
    """The hyperparameter the ``sweep`` check traces: ``case.sweep``, where ``"auto"`` (the
    default) means the first float-valued entry of ``case.kwargs`` (``None`` if there is
    none)."""
    if case.sweep != "auto":
        return case.sweep
    return next((k for k, v in case.kwargs.items() if type(v) is float), None)


def check_alg_sweep(case: AlgorithmCase) -> None:
    """A float hyperparameter can be a traced value (CONTRIBUTING.md section 1: a sweep vmaps
    without recompiling): ``jit(vmap(run))`` over the values ``(v, v/2)`` of
    :func:`sweep_hyperparameter`, with the algorithm constructed inside the trace, equals the
    two runs built from the concrete values, which must differ beyond the comparison's
    tolerance (else an ignored traced value would pass). Skipped when the case has no float
    hyperparameter (or declares ``sweep=None``)."""
    name = sweep_hyperparameter(case)
    if name is None:
        _skip("no float hyperparameter to sweep (sweep=None or no float kwargs)")
    value = case.kwargs.get(name)
    if type(value) is not float:
        raise ValueError(f"sweep={name!r} must name a float entry of kwargs, got {value!r}")
    x0, oracle = _case_alg(case)[3]

    def run_at(v, key):
        return _run(case.make(**{**case.kwargs, name: v}), x0, oracle, key)

    reference = _alg_reference(case)
    half = _jit_run(case.make(**{**case.kwargs, name: value / 2}))(x0, oracle, _key(0))
    try:
        assert_trees_close(half, reference)
    except AssertionError:
        pass  # the two values give runs the comparison below can tell apart
    else:
        raise AssertionError(
            f"{name} = {value} and {value / 2} give the same runs (within tolerance) in "
            f"{NUM_STEPS} steps, so the sweep check could not catch an ignored traced {name}: "
            "declare sweep= a hyperparameter that matters (or None, with the reason)")
    values = jnp.asarray([value, value / 2], jnp.float32)
    try:
        swept = jax.jit(jax.vmap(run_at, in_axes=(0, None)))(values, _key(0))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError,
            jax.errors.TracerArrayConversionError) as e:
        raise AssertionError(f"the algorithm needs a concrete {name} (a Python float(), int(), "
                             f"bool or NumPy conversion of a traced value): {e}") from e
    assert_trees_close(swept, _stack([reference, half]),
                       f"vmap over {name} = ({value}, {value / 2}) vs the runs at each value")


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
    "distributed": check_alg_distributed,
    "sweep": check_alg_sweep,
    "invalid": check_invalid,
}
