"""The property matrix (CONTRIBUTING.md section 5) over every registered algorithm.

Cases come from the ``CONTRACT_CASES`` tuple of each per-paper test module the catalog lists
(:func:`contract_modules`), plus self-test cases defined here: optax's own transforms (the
matrix must pass on them, except where optax itself breaks a convention, marked ``xfail``), a
small reference transformation and algorithm written to the conventions, and deliberately
broken variants that the relevant checks must reject (so the matrix cannot silently pass).
"""

from __future__ import annotations

import importlib.util
import sys
import unittest
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxopt_icml import base, problems
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml.hyperparams import check_float, check_unit_interval, concrete_float
from jaxopt_icml.testing import (
    AlgorithmCase,
    TransformationCase,
    algorithm_checks,
    checks_for,
    transformation_checks,
)
from jaxopt_icml.trees import check_same_shapes

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- discovery


def contract_modules() -> list[Path]:
    """Per-paper test files that may declare ``CONTRACT_CASES``: the test file of every catalog
    row (``tests/<family>/test_<slug>.py``); only files mentioning ``CONTRACT_CASES`` are
    imported.
    """
    from experiments import runner
    from jaxopt_icml import catalog

    paths = [ROOT / runner.test_path(row) for row in catalog.papers()]
    return [p for p in paths if p.is_file() and "CONTRACT_CASES" in p.read_text("utf-8")]


def _load(path: Path):
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) and Path(module.__file__).resolve() == path:
            return module
    rel = path.relative_to(ROOT).with_suffix("")
    name = "_contract_cases." + ".".join(rel.parts)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _import_error_check(error: str):
    def check(case):
        raise AssertionError(error)

    return check


def collect_cases() -> list[tuple[str, object]]:
    """``(module label, case)`` for every registered case; an import failure becomes one
    failing pseudo-case instead of breaking collection of the whole matrix."""
    out = []
    for path in contract_modules():
        label = str(path.relative_to(ROOT))
        try:
            module = _load(path)
            cases = tuple(module.CONTRACT_CASES)
        except Exception as e:  # noqa: BLE001 - reported as a failing test below
            out.append((label, f"{type(e).__name__}: {e}"))
            continue
        out.extend((label, case) for case in cases)
    return out


def _params(cases, expected_failures=None):
    """pytest params over ``case x check``; known, documented failures become strict xfails."""
    expected_failures = expected_failures or {}
    out = []
    for label, case in cases:
        if isinstance(case, str):  # import error
            out.append(pytest.param(case, _import_error_check(case), id=f"{label}-import"))
            continue
        for check_name, fn in checks_for(case).items():
            marks = ()
            reason = expected_failures.get((case.name, check_name))
            if reason:
                marks = (pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason),)
            out.append(pytest.param(case, fn, id=f"{case.name}-{check_name}", marks=marks))
    return out


# --------------------------------------------------------------------------- reference cases


def _check_positive(name, value):
    if isinstance(value, int | float) and not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")


def reference_momentum(learning_rate, momentum: float = 0.5, *, key=None, noise: float = 0.0):
    """Heavy-ball SGD written to the conventions (validated hyperparameters in float32 state,
    compute in float32 for 16-bit leaves, dtype kept, key kept in state and split each step)."""
    if not callable(learning_rate):
        _check_positive("learning_rate", learning_rate)
    # floats are checked when concrete and may be traced (optax.inject_hyperparams, a sweep)
    check_unit_interval("momentum", momentum)
    check_float("noise", noise, strict=False, allow_schedule=False)
    if key is None and (concrete_float(noise) is None or concrete_float(noise) > 0.0):
        raise ValueError("key is required when noise > 0 (or traced)")
    sched = learning_rate if callable(learning_rate) else (lambda _: learning_rate)

    def init(params):
        return {
            "count": jnp.zeros((), jnp.int32),
            "trace": jax.tree.map(jnp.zeros_like, params),
            "key": jax.random.key(0) if key is None else key,
        }

    def update(updates, state, params=None, **extra):
        del extra
        check_same_shapes("updates", updates, "params", params, context="reference_momentum")
        check_same_shapes("updates", updates, "state.trace", state["trace"],
                          context="reference_momentum")
        lr = jnp.asarray(sched(state["count"]), jnp.float32)
        leaves, treedef = jax.tree.flatten(updates)
        key = state["key"]
        # static: deterministic runs draw nothing; a traced noise always draws
        if concrete_float(noise) is None or concrete_float(noise) > 0.0:
            key, sub = jax.random.split(key)
            noises = list(jax.random.split(sub, len(leaves)))
        else:
            noises = [None] * len(leaves)

        def one(g, m, k):
            ct = jnp.promote_types(g.dtype, jnp.float32)
            g32 = g.astype(ct)
            if k is not None:
                g32 = g32 + noise * jax.random.normal(k, g.shape, ct)
            m_new = (momentum * m.astype(ct) + g32).astype(m.dtype)
            return (-lr * m_new.astype(ct)).astype(g.dtype), m_new

        trace_leaves = treedef.flatten_up_to(state["trace"])
        out = [one(g, m, k) for g, m, k in zip(leaves, trace_leaves, noises, strict=True)]
        new_updates = treedef.unflatten([u for u, _ in out])
        trace = treedef.unflatten([m for _, m in out])
        count = optax.safe_increment(state["count"])
        return new_updates, {"count": count, "trace": trace, "key": key}

    return optax.GradientTransformationExtraArgs(init, update)


# Stochastic positive control (optax_adam below is the deterministic one).
REFERENCE_NOISY = TransformationCase(
    "reference_momentum_noisy", reference_momentum,
    {"learning_rate": 0.1, "momentum": 0.5, "noise": 0.1}, stochastic=True,
    invalid=(({"learning_rate": -1.0}, "learning_rate"), ({"momentum": 1.0}, "momentum"),
             ({"noise": -1.0}, "noise")),
)


def _sam(learning_rate, rho=0.05):
    adv = optax.chain(optax.contrib.normalize(), optax.sgd(rho))
    return optax.contrib.sam(optax.sgd(learning_rate), adv, opaque_mode=True)


def _sam_extra_args(loss):
    return {"grad_fn": lambda params, i: jax.grad(loss)(params)}


OPTAX_CASES = (
    TransformationCase("optax_adam", optax.adam, {"learning_rate": 1e-2}),
    TransformationCase("optax_sam_opaque", _sam, {"learning_rate": 0.1, "rho": 0.05},
                       extra_args=_sam_extra_args),
)
OPTAX_EXPECTED_FAILURES = {
    ("optax_sam_opaque", "unknown_extra_args"):
        "optax.contrib.sam(opaque_mode=True).update takes only grad_fn as keyword",
    ("optax_adam", "shapes"): "optax does not check updates against params (ours do)",
    ("optax_sam_opaque", "shapes"): "optax does not check updates against params (ours do)",
}


_bilinear_game_f32 = jax.jit(lambda key: problems.bilinear_game(key, 2))


def _noisy_game(key, dtype):
    """A 2x2 bilinear game with multiplicative and additive noise, cast to ``dtype``."""
    game = _bilinear_game_f32(key)
    game = jax.tree.map(lambda a: a.astype(dtype), game)
    noisy = problems.NoisyOperator(game, jnp.asarray(0.3, dtype), jnp.asarray(0.1, dtype))
    return jnp.ones((4,), dtype), noisy


def reference_extragradient(step_size: float = 0.2):
    """Stochastic extragradient as an ``OracleAlgorithm`` written to the conventions."""
    check_float("step_size", step_size, allow_schedule=False)

    def init(x0, key):
        del key
        return {"x": x0, "count": jnp.zeros((), jnp.int32)}

    def update(state, oracle, key):
        k1, k2 = jax.random.split(key)
        x = state["x"]
        eta = jnp.asarray(step_size, jnp.float32)
        ct = jnp.promote_types(x.dtype, jnp.float32)
        half = (x.astype(ct) - eta * oracle.operator(x, k1).astype(ct)).astype(x.dtype)
        new = (x.astype(ct) - eta * oracle.operator(half, k2).astype(ct)).astype(x.dtype)
        info = {"oracle_calls": jnp.asarray(2, jnp.int32)}
        return base.Step(new, info), {"x": new, "count": state["count"] + 1}

    return base.OracleAlgorithm(init, update)


class _WorkerQuadratics(NamedTuple):
    """Worker ``i`` holds ``f_i(x) = 0.5 ||x - b_i||^2`` and a noisy gradient oracle."""

    b: jax.Array

    def grad(self, x, key):
        noise = 0.1 * jax.random.normal(key, x.shape, jnp.float32)
        return (x.astype(jnp.float32) - self.b.astype(jnp.float32) + noise).astype(x.dtype)


def _worker_quadratics(key, dtype):
    """One quadratic per local device (8 simulated CPU devices in tests)."""
    n = jax.local_device_count()
    b = jax.random.normal(key, (n, 3), jnp.float32).astype(dtype)
    return jnp.zeros((3,), dtype), _WorkerQuadratics(b)


def reference_parallel_sgd(step_size: float = 0.5, *, num_workers: int = 8, mesh=None,
                           _shard_bug: bool = False):
    """Parallel SGD written once per worker: local noisy gradient, ``pmean``, a step."""
    check_float("step_size", step_size, allow_schedule=False)

    def init(x0, key):
        del key
        return {"x": x0}

    def update(state, oracle, key):
        x = state["x"]
        g = oracle.grad(x, key)
        # the broken variant skips the average when sharded: it must fail the distributed check
        avg = g if (_shard_bug and mesh is not None) else jax.lax.pmean(g, "workers")
        new = (x.astype(jnp.float32) - step_size * avg.astype(jnp.float32)).astype(x.dtype)
        bits = jnp.asarray(32 * x.size, jnp.float32)
        return base.Step(new, {"oracle_calls": jnp.int32(1), "bits_sent": bits}), {"x": new}

    return mesh_lib.across_workers(base.OracleAlgorithm(init, update), num_workers, mesh=mesh)


ALGORITHM_CASES = (
    AlgorithmCase("reference_parallel_sgd", reference_parallel_sgd,
                  {"step_size": 0.5, "num_workers": jax.local_device_count()},
                  _worker_quadratics, invalid=(({"step_size": 0.0}, "step_size"),),
                  stochastic=True, distributed=True),
    AlgorithmCase("reference_extragradient", reference_extragradient, {"step_size": 0.2},
                  _noisy_game, invalid=(({"step_size": 0.0}, "step_size"),), stochastic=True),
    AlgorithmCase("adapter_optax_ogda",
                  lambda learning_rate: base.from_transformation(
                      optax.optimistic_gradient_descent(learning_rate)),
                  {"learning_rate": 0.1}, _noisy_game, stochastic=True),
)

SELF_CASES = [("self", c) for c in (REFERENCE_NOISY, *OPTAX_CASES, *ALGORITHM_CASES)]


# --------------------------------------------------------------------------- the matrix


@pytest.mark.parametrize("case,check", _params(SELF_CASES, OPTAX_EXPECTED_FAILURES))
def test_self_matrix(case, check):
    check(case)


@pytest.mark.parametrize("case,check", _params(collect_cases()))
def test_contract(case, check):
    check(case)


def test_cases_have_unique_names():
    names = [c.name for _, c in collect_cases() + SELF_CASES if not isinstance(c, str)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"duplicate case names: {duplicates}"


def test_every_module_with_cases_is_in_the_catalog():
    registered = {p.resolve() for p in contract_modules()}
    on_disk = {p.resolve() for p in (ROOT / "tests").glob("*/test_*.py")
               if "CONTRACT_CASES" in p.read_text("utf-8")}
    missing = sorted(str(p.relative_to(ROOT)) for p in on_disk - registered)
    assert not missing, f"modules with CONTRACT_CASES that the catalog does not list: {missing}"


# --------------------------------------------------------------------------- the matrix bites


def _dtype_changing(learning_rate):
    """Returns float32 updates whatever the parameters' dtype."""
    def update(g, s, p=None, **extra):
        return jax.tree.map(lambda x: -learning_rate * x.astype(jnp.float32), g), s
    return optax.GradientTransformationExtraArgs(lambda p: optax.EmptyState(), update)


def _python_counter(learning_rate):
    """Reads a step counter kept in Python instead of in the state."""
    calls = [0]

    def update(g, s, p=None, **extra):
        calls[0] += 1
        return jax.tree.map(lambda x: -learning_rate * calls[0] * x, g), s
    return optax.GradientTransformationExtraArgs(lambda p: optax.EmptyState(), update)


def _state_changing(learning_rate):
    """Starts with an int32 counter and returns a float32 one."""
    def update(g, s, p=None, **extra):
        return jax.tree.map(lambda x: -learning_rate * x, g), s.astype(jnp.float32) + 1
    return optax.GradientTransformationExtraArgs(lambda p: jnp.zeros((), jnp.int32), update)


def _weak_state(learning_rate):
    """A weakly typed float state that the update returns strongly typed."""
    def update(g, s, p=None, **extra):
        return jax.tree.map(lambda x: -learning_rate * x, g), s + jnp.float32(1)
    return optax.GradientTransformationExtraArgs(lambda p: jnp.asarray(0.0), update)


def _rejects_extras(learning_rate):
    """A plain GradientTransformation: ``update`` takes no keyword extras."""
    def update(g, s, p=None):
        return jax.tree.map(lambda x: -learning_rate * x, g), s
    return optax.GradientTransformation(lambda p: optax.EmptyState(), update)


def _unvalidated(learning_rate):
    return optax.sgd(learning_rate)


def _key_reusing(learning_rate, key):
    """Draws noise from the stored key and stores the same key back."""
    def update(g, s, p=None, **extra):
        noisy = {**g, "w": g["w"] + jax.random.normal(s, g["w"].shape, g["w"].dtype)}
        return jax.tree.map(lambda x: -learning_rate * x, noisy), s
    return optax.GradientTransformationExtraArgs(lambda p: key, update)


def _ignores_key(learning_rate, key):
    """Claims to be stochastic but never uses its key."""
    del key
    return optax.sgd(learning_rate)


def _float_schedule_only(learning_rate):
    if callable(learning_rate):
        raise TypeError("learning_rate must be a float")
    return optax.sgd(learning_rate)


def _scheduled_sgd(learning_rate, *, offset: int = 0, advance: bool = True):
    """SGD on a step-size schedule evaluated at ``count + offset``; ``advance=False`` never
    increments the count. A float step size hides both defects."""
    sched = learning_rate if callable(learning_rate) else (lambda _: learning_rate)

    def update(g, s, p=None, **extra):
        lr = jnp.asarray(sched(s + offset), jnp.float32)
        return jax.tree.map(lambda x: (-lr * x).astype(x.dtype), g), s + int(advance)
    return optax.GradientTransformationExtraArgs(lambda p: jnp.zeros((), jnp.int32), update)


def _schedule_ahead(learning_rate):
    """Evaluates the schedule at ``count + 1`` (one step ahead)."""
    return _scheduled_sgd(learning_rate, offset=1)


def _schedule_frozen(learning_rate):
    """Never advances its count: every update uses ``s(0)``."""
    return _scheduled_sgd(learning_rate, advance=False)


def _unseeded(learning_rate):
    """Draws a fixed perturbation from an unseeded NumPy generator at construction."""
    shift = float(np.random.default_rng().normal())

    def update(g, s, p=None, **extra):
        return jax.tree.map(lambda x: -learning_rate * (x + shift), g), s
    return optax.GradientTransformationExtraArgs(lambda p: optax.EmptyState(), update)


def _concrete_momentum(learning_rate, momentum=0.9):
    """Validates its momentum with a Python comparison: it cannot be injected or swept."""
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    return optax.sgd(learning_rate, momentum=momentum)


def _broken(name, make, **kw):
    return TransformationCase(name, make, {"learning_rate": 0.1}, **kw)


def _bad_alg_dtype(step_size=0.1):
    """Promotes the iterate to float32 (and float64 inputs lose precision)."""
    def init(x0, key):
        return x0.astype(jnp.float32)

    def update(x, oracle, key):
        new = x - step_size * oracle.operator(x, key).astype(jnp.float32)
        return base.Step(new, {"oracle_calls": jnp.int32(1)}), new
    return base.OracleAlgorithm(init, update)


def _bad_alg_key_reuse(step_size=0.1):
    """Uses the step key for two oracle calls."""
    def init(x0, key):
        return x0

    def update(x, oracle, key):
        new = x - step_size * oracle.operator(x - step_size * oracle.operator(x, key), key)
        return base.Step(new, {"oracle_calls": jnp.int32(2)}), new
    return base.OracleAlgorithm(init, update)


def _bad_alg_no_info(step_size=0.1):
    def init(x0, key):
        return x0

    def update(x, oracle, key):
        new = x - step_size * oracle.operator(x, key)
        return base.Step(new, {}), new
    return base.OracleAlgorithm(init, update)


def _bad_alg_python_state(step_size=0.1):
    calls = [0]

    def init(x0, key):
        return x0

    def update(x, oracle, key):
        calls[0] += 1
        new = x - step_size * calls[0] * oracle.operator(x, key)
        return base.Step(new, {"oracle_calls": jnp.int32(1)}), new
    return base.OracleAlgorithm(init, update)


def _bad_alg_deterministic(step_size=0.1):
    """Declared stochastic, but ignores the key (uses the exact operator)."""
    def init(x0, key):
        return x0

    def update(x, oracle, key):
        new = x - step_size * oracle.base.operator(x)
        return base.Step(new, {"oracle_calls": jnp.int32(1)}), new
    return base.OracleAlgorithm(init, update)


def _fixed_step_alg(eta):
    """``x <- x - eta F(x, key)`` with ``eta`` as given (the broken sweep cases below)."""
    def init(x0, key):
        return x0

    def update(x, oracle, key):
        new = x - eta * oracle.operator(x, key)
        return base.Step(new, {"oracle_calls": jnp.int32(1)}), new
    return base.OracleAlgorithm(init, update)


def _bad_alg_float_closure(step_size=0.1):
    """Turns its step size into a Python float: it cannot be built inside a vmapped sweep."""
    return _fixed_step_alg(float(step_size))


def _bad_alg_sweep_fallback(step_size=0.1):
    """Falls back to 0.1 when its step size is traced: a sweep silently runs one value."""
    return _fixed_step_alg(step_size if isinstance(step_size, float) else 0.1)


def _bad_alg_ignores_step_size(step_size=0.1):
    """Ignores its step size: a sweep over it cannot tell a traced value from a constant."""
    del step_size
    return _fixed_step_alg(0.1)


def _bad_alg(name, make, **kw):
    return AlgorithmCase(name, make, {"step_size": 0.1}, _noisy_game, stochastic=True, **kw)


BROKEN = [
    (_broken("dtype_changing", _dtype_changing), "dtypes"),
    (_broken("python_counter", _python_counter), "jit"),
    (_broken("unseeded", _unseeded), "determinism"),
    (_broken("state_changing", _state_changing), "jit"),
    (_broken("state_changing", _state_changing), "dtypes"),
    (_broken("weak_state", _weak_state), "jit"),
    (_broken("rejects_extras", _rejects_extras), "unknown_extra_args"),
    (_broken("unvalidated", _unvalidated, invalid=(({"learning_rate": -1.0}, "learning_rate"),)),
     "invalid"),
    (_broken("key_reusing", _key_reusing, stochastic=True), "key_reuse"),
    (_broken("ignores_key", _ignores_key, stochastic=True), "vmap"),
    (_broken("float_schedule_only", _float_schedule_only), "schedule"),
    (_broken("schedule_ahead", _schedule_ahead), "schedule"),
    (_broken("schedule_frozen", _schedule_frozen), "schedule"),
    (_broken("unchecked_shapes", optax.sgd), "shapes"),
    (TransformationCase("concrete_momentum", _concrete_momentum,
                        {"learning_rate": 0.1, "momentum": 0.9}), "inject_hyperparams"),
    (_bad_alg("alg_dtype", _bad_alg_dtype), "dtypes"),
    (_bad_alg("alg_key_reuse", _bad_alg_key_reuse), "key_reuse"),
    (_bad_alg("alg_no_info", _bad_alg_no_info), "info"),
    (_bad_alg("alg_python_state", _bad_alg_python_state), "jit"),
    (_bad_alg("alg_deterministic", _bad_alg_deterministic), "vmap_seeds"),
    (AlgorithmCase("alg_shard_bug", reference_parallel_sgd,
                   {"num_workers": jax.local_device_count(), "_shard_bug": True},
                   _worker_quadratics, distributed=True), "distributed"),
    (_bad_alg("alg_unvalidated", _bad_alg_no_info, invalid=(({"step_size": -1.0}, "step_size"),)),
     "invalid"),
    (_bad_alg("alg_float_closure", _bad_alg_float_closure), "sweep"),
    (_bad_alg("alg_sweep_fallback", _bad_alg_sweep_fallback), "sweep"),
    (_bad_alg("alg_ignores_step_size", _bad_alg_ignores_step_size), "sweep"),
]


@pytest.mark.parametrize("case,check_name", BROKEN,
                         ids=[f"{c.name}-{n}" for c, n in BROKEN])
def test_matrix_rejects_broken(case, check_name):
    check = (transformation_checks if isinstance(case, TransformationCase)
             else algorithm_checks)[check_name]
    try:
        check(case)
    except unittest.SkipTest as e:
        pytest.fail(f"{check_name} skipped a broken case instead of failing it: {e}")
    except AssertionError:  # the check's verdict; any other exception is a bug and propagates
        return
    pytest.fail(f"{check_name} passed the deliberately broken case {case.name!r}")


def test_schedule_positive_control():
    """The scheduled SGD behind the broken cases passes when its count is right."""
    transformation_checks["schedule"](_broken("schedule_sgd", _scheduled_sgd))


def _bf16_typo_problem(key, dtype):
    """A problem whose bfloat16 construction has a bug (not a missing bf16 form)."""
    if dtype == jnp.bfloat16:
        raise TypeError("unsupported operand (a bug, not a missing bf16 form)")
    return _noisy_game(key, dtype)


def test_bfloat16_check_skips_only_declared_cases():
    """bfloat16: a problem's ``TypeError`` surfaces; ``NotImplementedError`` or
    ``bfloat16=False`` skip."""
    check = algorithm_checks["bfloat16"]
    buggy = AlgorithmCase("bf16_buggy", reference_extragradient, {}, _bf16_typo_problem)
    with pytest.raises(TypeError, match="unsupported operand"):
        check(buggy)
    with pytest.raises(unittest.SkipTest):
        check(buggy._replace(bfloat16=False))

    def no_bf16(key, dtype):
        raise NotImplementedError("no bfloat16 form")

    with pytest.raises(unittest.SkipTest, match="not implemented"):
        check(buggy._replace(problem=no_bf16))
