"""Checks of a ``GradientTransformation`` inside optax's wrappers: chain, inject_hyperparams,
MultiSteps, masked, apply_if_finite, schedules, and a call under ``pmap``."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxopt_icml.testing.cases import NUM_STEPS, TransformationCase
from jaxopt_icml.testing.transformations import (
    _case_step,
    _eager_steps,
    _extra,
    _make,
    _reference,
    _run_steps,
    _step_fn,
)
from jaxopt_icml.testing.trees import (
    _abstract,
    _as_numpy,
    _assert_same_avals,
    _key,
    _skip,
    _trees_differ,
    assert_trees_close,
    assert_trees_equal,
    make_params,
    matrix_loss,
)


def _lr(case: TransformationCase) -> float:
    if case.lr_name is None:
        _skip("the case declares no learning-rate-like argument (lr_name=None)")
    if case.lr_name not in case.kwargs:
        raise AssertionError(f"lr_name={case.lr_name!r} is not in the case's kwargs")
    lr = case.kwargs[case.lr_name]
    if isinstance(lr, bool) or not isinstance(lr, int | float):
        raise AssertionError(f"kwargs[{case.lr_name!r}] must be a Python float, got {lr!r}")
    return float(lr)


def check_chain(case: TransformationCase) -> None:
    """Inside ``optax.chain`` with identity/scale(1.0) around it: same trajectory."""
    chained = optax.chain(optax.identity(), _make(case), optax.scale(1.0))
    got = _run_steps(chained, case)[-1][0]
    assert_trees_close(got, _reference(case)[-1][0], "chain(identity, tx, scale(1)) vs tx")


def check_inject_hyperparams(case: TransformationCase) -> None:
    """``optax.inject_hyperparams`` over every float hyperparameter of the case (what a user
    would sweep: the learning-rate-like argument and every other float in ``kwargs``), with
    the case's other arguments fixed: same trajectory as the plain transformation, and the
    injected learning rate is the one used."""
    lr = _lr(case)
    name = case.lr_name
    swept = {k: v for k, v in case.kwargs.items() if type(v) is float}
    swept[name] = lr
    fixed = {k: v for k, v in case.kwargs.items() if k not in swept}
    if case.stochastic:
        fixed["key"] = _key(0)

    def factory(**hp):
        return case.make(**fixed, **hp)

    # inject_hyperparams binds arguments by signature: expose exactly the swept arguments.
    factory.__signature__ = inspect.Signature(
        [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY) for k in swept])
    injected = optax.inject_hyperparams(factory)(**swept)
    step = jax.jit(_step_fn(injected, case))
    params = make_params()
    state0 = injected.init(params)
    missing = [k for k in swept if k not in state0.hyperparams]
    assert not missing, f"{missing} are not among the injected hyperparameters"
    p, s = params, state0
    try:
        for _ in range(NUM_STEPS):
            p, s, _ = step(p, s)
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
            jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError) as e:
        raise AssertionError(f"a float hyperparameter among {sorted(swept)} cannot be injected "
                             f"(a Python bool(), float() or comparison of a traced value): {e}"
                             ) from e
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
    p = _run_steps(tx, case)[-1][0]
    assert_trees_equal(p["b"], params["b"], "the masked-out leaf")
    sub = {k: v for k, v in params.items() if k != "b"}
    ref = _eager_steps(_make(case), case, sub)[-1][0]
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
    """A non-constant schedule ``s`` as the learning-rate-like argument (linear from ``lr`` down
    to ``lr / 2`` over the run, so every step's value differs and stays in any range that holds
    ``lr``): update ``k`` (from 0) must use ``s(k)``.

    Reference: step ``k`` is taken by a fresh transformation built with the float ``s(k)``
    (exactly the float32 value the schedule returns), the same state threaded through from
    ``init`` of the ``s(0)`` one, eagerly. Valid when ``init``'s state does not depend on the
    float (checked; otherwise skipped). Parameters and updates are compared after every step
    (the state may legitimately differ in layout, e.g. optax keeps a count only for
    schedules). A transformation that evaluates the schedule at ``count + 1``, or never
    advances its count, fails at the first or second step.
    """
    lr = _lr(case)
    name = case.lr_name
    sched = optax.linear_schedule(lr, 0.5 * lr, transition_steps=NUM_STEPS - 1)
    values = [float(sched(k)) for k in range(NUM_STEPS)]
    params = make_params()
    floats = [_make(case, **{name: v}) for v in values]
    state = floats[0].init(params)
    for v, tx in zip(values[1:], floats[1:], strict=True):
        if _trees_differ(tx.init(params), state):
            _skip(f"init's state depends on the value of {name} ({values[0]} vs {v}): a "
                  "per-step float reference cannot share it")
    ref = []
    p = params
    for tx in floats:
        ((p, state, u),) = _eager_steps(tx, case, p, num_steps=1, state=state)
        ref.append((p, state, u))
    try:
        scheduled = _make(case, **{name: sched})
    except (TypeError, ValueError) as e:
        raise AssertionError(f"make rejects an optax schedule as {name}: "
                             f"{type(e).__name__}: {e}") from e
    got = _run_steps(scheduled, case)
    for k, ((gp, _, gu), (rp, _, ru)) in enumerate(zip(got, ref, strict=True)):
        assert_trees_close((gp, gu), (rp, ru), f"update {k} with a linear schedule vs the "
                           f"float {name}={values[k]} (params, updates)")


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
