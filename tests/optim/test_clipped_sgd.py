"""Tests of clipped SGD (jaxopt_icml.optim.clipped_sgd), the heavy-tailed problems
(jaxopt_icml.problems.heavy_tailed) and the experiment."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.optim.clipped_sgd import (
    clip_by_global_norm_schedule,
    clipped_sgd,
    empirical_second_moment,
    power_schedule,
    scale_by_clipped_sgd,
)
from jaxopt_icml.problems.heavy_tailed import (
    finite_sum_problem,
    heavy_tailed_dataset,
    student_t,
)
from jaxopt_icml.testing import TransformationCase


def _make(learning_rate=0.1, clip_threshold=0.5, *, per_example=False):
    return clipped_sgd(learning_rate, clip_threshold, per_example=per_example)


_INVALID = (
    ({"learning_rate": -0.1}, "learning_rate"),
    ({"learning_rate": 0.0}, "learning_rate"),
    ({"learning_rate": float("nan")}, "learning_rate"),
    ({"clip_threshold": 0.0}, "clip_threshold"),
    ({"clip_threshold": -1.0}, "clip_threshold"),
    ({"clip_threshold": float("inf")}, "clip_threshold"),
    ({"per_example": "yes"}, "per_example"),
    ({"per_example": 1}, "per_example"),
)

# clip_threshold=0.5 is below the test loss's gradient norm, so the matrix exercises clipping.
CONTRACT_CASES = (
    TransformationCase(name="clipped_sgd", make=_make,
                       kwargs={"learning_rate": 0.1, "clip_threshold": 0.5},
                       invalid=_INVALID, needs_params=False),
)


def _tree():
    return {"a": jnp.array([3.0, -4.0, 1.0]), "b": {"c": jnp.full((2, 2), 0.5)},
            "s": jnp.asarray(-2.0)}


def _loss(p):
    return (jnp.sum(jnp.exp(0.3 * p["a"])) + jnp.sum(jnp.sin(p["b"]["c"]) ** 2)
            + 2.0 * p["s"] ** 2 * jnp.sum(p["a"] ** 2))


def _np_norm(t):
    return float(np.sqrt(sum(np.sum(np.asarray(x, np.float64) ** 2) for x in jax.tree.leaves(t))))


def _run(tx, steps=5):
    upd = jax.jit(lambda g, s: tx.update(g, s))
    p, s, out = _tree(), tx.init(_tree()), []
    for _ in range(steps):
        u, s = upd(jax.grad(_loss)(p), s)
        p = optax.apply_updates(p, u)
        out.append(p)
    return out


# --------------------------------------------------------------------------- special cases


def test_huge_threshold_equals_optax_sgd_bitwise():
    for lr in (0.01, optax.linear_schedule(0.02, 0.005, 4)):
        for a, b in zip(_run(clipped_sgd(lr, 1e30)), _run(optax.sgd(lr)), strict=True):
            jax.tree.map(np.testing.assert_array_equal, a, b)


def test_constant_threshold_equals_optax_chain():
    """clip_by_global_norm then sgd, with the clip active at every step (checked)."""
    lam = 0.5
    norms = []
    ref_tx = optax.chain(optax.clip_by_global_norm(lam), optax.sgd(0.05))
    p = _tree()
    for _ in range(5):
        norms.append(_np_norm(jax.grad(_loss)(p)))
        p = optax.apply_updates(p, ref_tx.update(jax.grad(_loss)(p), ref_tx.init(p))[0])
    assert min(norms) > lam
    for a, b in zip(_run(clipped_sgd(0.05, lam)), _run(ref_tx), strict=True):
        jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-7), a, b)


def test_direction_equals_optax_clip_by_global_norm():
    assert clip_by_global_norm_schedule is scale_by_clipped_sgd
    g = jax.grad(_loss)(_tree())
    for lam in (0.3, 1e3):
        ours, _ = scale_by_clipped_sgd(lam).update(g, scale_by_clipped_sgd(lam).init(g))
        ref, _ = optax.clip_by_global_norm(lam).update(g, optax.EmptyState())
        jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6), ours, ref)
    assert abs(_np_norm(scale_by_clipped_sgd(0.3).update(g, scale_by_clipped_sgd(0.3).init(g))[0])
               - 0.3) < 1e-6


def test_threshold_schedule_matches_numpy():
    """lambda_t = lam0 (t+1)^(1/alpha), gamma_t = 1/(t+1) on f = 0.5||x - xi_t||^2 with a
    given sequence xi_t: a NumPy re-derivation of the clipped recursion in float64."""
    rng = np.random.default_rng(0)
    xis = rng.standard_t(1.5, size=(30, 3))
    lam0, alpha = 0.7, 1.5
    x = np.zeros(3)
    ref = []
    for t, xi in enumerate(xis):
        g = x - xi
        lam = lam0 * (t + 1) ** (1 / alpha)
        x = x - (1.0 / (t + 1)) * min(1.0, lam / np.linalg.norm(g)) * g
        ref.append(x.copy())
    with jax.enable_x64(True):
        tx = clipped_sgd(power_schedule(1.0, -1.0), power_schedule(lam0, 1 / alpha))
        upd = jax.jit(tx.update)
        xj = jnp.zeros(3, jnp.float64)
        s = tx.init(xj)
        for xi, r in zip(xis, ref, strict=True):
            u, s = upd(xj - jnp.asarray(xi), s)
            xj = xj + u
            assert xj.dtype == jnp.float64
            np.testing.assert_allclose(np.asarray(xj), r, rtol=1e-12, atol=1e-12)
        assert int(s.count) == len(xis)


def test_sgd_step_is_running_mean():
    """With gamma_t = 1/(t+1) and x_0 = 0, SGD (= clipped SGD with a huge threshold) on
    0.5||x - xi||^2 returns the average of the sampled points: the closed form the
    experiment's `sgd_theory` rests on."""
    rng = np.random.default_rng(1)
    xis = rng.standard_t(1.5, size=(50, 5))
    with jax.enable_x64(True):
        tx = clipped_sgd(power_schedule(1.0, -1.0), 1e30)
        x = jnp.zeros(5, jnp.float64)
        s = tx.init(x)
        for xi in xis:
            u, s = tx.update(x - jnp.asarray(xi), s)
            x = x + u
    np.testing.assert_allclose(np.asarray(x), xis.mean(0), rtol=1e-10, atol=1e-12)


def test_per_example_matches_numpy():
    rng = np.random.default_rng(2)
    grads = {"w": rng.normal(size=(6, 3)) * np.array([[0.1], [5.0], [1.0], [0.0], [3.0], [0.2]]),
             "b": rng.normal(size=(6,))}
    lam, lr = 1.2, 0.3
    ref = {"w": np.zeros(3), "b": 0.0}
    for i in range(6):
        n = np.sqrt(np.sum(grads["w"][i] ** 2) + grads["b"][i] ** 2)
        c = min(1.0, lam / n) if n > 0 else 1.0
        ref["w"] = ref["w"] - lr * c * grads["w"][i] / 6
        ref["b"] = ref["b"] - lr * c * grads["b"][i] / 6
    with jax.enable_x64(True):
        params = {"w": jnp.zeros(3, jnp.float64), "b": jnp.zeros((), jnp.float64)}
        tx = clipped_sgd(lr, lam, per_example=True)
        g = jax.tree.map(jnp.asarray, grads)
        u, s = jax.jit(tx.update)(g, tx.init(params), params)
    np.testing.assert_allclose(np.asarray(u["w"]), ref["w"], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(u["b"]), ref["b"], rtol=1e-12)
    assert u["b"].shape == () and int(s.count) == 1
    # the same as optax's per-example clip (sum) divided by the batch, times -lr
    with jax.enable_x64(True):
        clipped_sum, _ = optax.per_example_global_norm_clip([g["w"], g["b"]], lam)
        np.testing.assert_allclose(np.asarray(u["w"]), -lr * np.asarray(clipped_sum[0]) / 6,
                                   rtol=1e-6)


def test_per_example_rejects_bad_shapes():
    tx = clipped_sgd(0.1, 1.0, per_example=True)
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    with pytest.raises(ValueError, match="per_example"):
        tx.update({"w": jnp.ones((4, 3)), "b": jnp.ones((5,))}, tx.init(params), params)
    with pytest.raises(ValueError, match="per_example"):
        tx.update({"w": jnp.ones((4, 2)), "b": jnp.ones((4,))}, tx.init(params), params)


@pytest.mark.parametrize("make,lead", [(lambda: clipped_sgd(0.1, 1.0), ()),
                                       (lambda: scale_by_clipped_sgd(1.0), ()),
                                       (lambda: clipped_sgd(0.1, 1.0, per_example=True), (5,))],
                         ids=["clipped_sgd", "scale_by_clipped_sgd", "per_example"])
def test_mismatched_updates_raise_value_error_naming_the_leaf(make, lead):
    """Reported: (4,) updates for (3,) params passed silently (returning (4,) updates). With
    params given, a leaf shape (after the example axis ``lead`` in per-example mode) or a tree
    structure that differs raises a ValueError naming the leaf, also under jit."""
    tx = make()
    params = {"a": jnp.zeros(3), "b": {"c": jnp.zeros((2, 2))}}
    state = tx.init(params)
    good = jax.tree.map(lambda p: jnp.ones(lead + p.shape), params)
    bad = {**good, "a": jnp.ones(lead + (4,))}
    leaf = r"\['a'\]: shape \(4,\) vs \(3,\)"
    with pytest.raises(ValueError, match=r"and params disagree at leaf " + leaf):
        tx.update(bad, state, params)
    with pytest.raises(ValueError, match=leaf):
        jax.jit(tx.update)(bad, state, params)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**good, "extra": jnp.ones(lead + (1,))}, state, params)
    assert "'extra'" in str(err.value)
    # without params there is nothing to compare with: the updates keep their shapes
    u, _ = tx.update(bad, state)
    assert u["a"].shape == (4,)


# --------------------------------------------------------------------------- dtypes, edges


@pytest.mark.parametrize("per_example", [False, True])
def test_bf16_kept_and_zero_gradient_finite(per_example):
    p = jax.tree.map(lambda x: x.astype(jnp.bfloat16), _tree())
    tx = clipped_sgd(0.1, 0.5, per_example=per_example)
    s = tx.init(p)
    g = jax.tree.map(jnp.zeros_like, p)
    if per_example:
        g = jax.tree.map(lambda x: jnp.stack([x, x]), g)
    u, s = tx.update(g, s, p)
    assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves(u))
    assert all(np.all(np.asarray(x, np.float32) == 0) for x in jax.tree.leaves(u))
    big = jax.tree.map(lambda x: jnp.full_like(x, 100.0), g)
    u, s = tx.update(big, s, p)
    assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves(u))
    assert all(np.all(np.isfinite(np.asarray(x, np.float32))) for x in jax.tree.leaves(u))
    np.testing.assert_allclose(_np_norm(u), 0.1 * 0.5, rtol=1e-2)
    assert s.count.dtype == jnp.int32 and int(s.count) == 2


def test_zero_gradient_has_zero_derivative_not_nan():
    """d/dg of the clipped update at g = 0 is finite (the where is safe)."""
    f = lambda g: jnp.sum(clipped_sgd(0.1, 0.5).update({"g": g}, clipped_sgd(0.1, 0.5).init(
        {"g": g}))[0]["g"])
    d = jax.grad(f)(jnp.zeros(3))
    assert np.all(np.isfinite(d))


def test_invalid_arguments_name_the_argument():
    for override, arg in _INVALID:
        with pytest.raises(ValueError, match=arg):
            _make(**{"learning_rate": 0.1, "clip_threshold": 0.5, **override})
    with pytest.raises(ValueError, match="clip_threshold"):
        scale_by_clipped_sgd(-1.0)
    with pytest.raises(ValueError, match="per_example"):
        scale_by_clipped_sgd(1.0, per_example=None)
    with pytest.raises(TypeError):
        clipped_sgd(0.1, 1.0, True)  # per_example is keyword-only
    for kw, arg in (({"init_value": 0.0}, "init_value"), ({"power": float("nan")}, "power"),
                    ({"offset": 0.0}, "offset"), ({"init_value": lambda t: t}, "init_value")):
        with pytest.raises(ValueError, match=arg):
            power_schedule(**{"init_value": 1.0, "power": -1.0, **kw})
    with pytest.raises(ValueError, match="batch_size"):
        empirical_second_moment(lambda x, e: x - e, jnp.zeros(2), jnp.ones((4, 2)), batch_size=0)
    key = jax.random.PRNGKey(0)
    for kw, arg in (({"n": 0}, "n"), ({"d": 1.5}, "d"), ({"alpha": -1.0}, "alpha"),
                    ({"kind": "cauchy"}, "kind"), ({"symmetric": False}, "symmetric"),
                    ({"kind": "pareto", "symmetric": False, "alpha": 0.8}, "alpha"),
                    ({"scale": 0.0}, "scale")):
        with pytest.raises(ValueError, match=arg):
            heavy_tailed_dataset(key, **{"n": 10, "d": 2, "alpha": 1.5, **kw})
    with pytest.raises(ValueError, match="alpha"):
        finite_sum_problem(key, 10, 2, 1.0)
    with pytest.raises(ValueError, match="kind"):
        finite_sum_problem(key, 10, 2, 1.5, kind="logistic")


def test_power_schedule_values():
    s = power_schedule(3.0, 1 / 1.5)
    np.testing.assert_allclose([float(s(t)) for t in range(4)],
                               [3.0 * (t + 1) ** (2 / 3) for t in range(4)], rtol=1e-6)
    assert s(jnp.int32(2)).dtype == jnp.float32
    with jax.enable_x64(True):
        assert power_schedule(3.0, 0.5)(jnp.int32(2)).dtype == jnp.float64


# --------------------------------------------------------------------------- problems


def test_student_t_and_pareto_laws():
    import scipy.stats as st

    sample = jax.jit(lambda k, df: student_t(k, df, (20000,)))  # df traced: one compile
    for df in (0.7, 1.5, 3.0):
        x = np.asarray(sample(jax.random.PRNGKey(3), df))
        assert np.all(np.isfinite(x))
        assert st.kstest(x, st.t(df).cdf).pvalue > 1e-3
    x = np.asarray(heavy_tailed_dataset(jax.random.PRNGKey(4), 20000, 1, 1.8, kind="pareto",
                                        symmetric=False))[:, 0]
    assert st.kstest(x + 1.8 / 0.8, st.pareto(1.8).cdf).pvalue > 1e-3
    y = np.asarray(heavy_tailed_dataset(jax.random.PRNGKey(5), 20000, 1, 1.8, kind="pareto"))
    assert st.kstest(np.abs(y[:, 0]), st.pareto(1.8).cdf).pvalue > 1e-3
    assert 0.4 < np.mean(y > 0) < 0.6


def test_finite_sum_problems_constants():
    with jax.enable_x64(True):
        key = jax.random.PRNGKey(6)
        build = jax.jit(finite_sum_problem, static_argnums=(1, 2, 3),
                        static_argnames=("kind", "reg"))
        m = build(key, 2000, 4, 1.5, loc=jnp.arange(4.0))
        np.testing.assert_allclose(m.erm_solution, np.asarray(m.data, np.float64).mean(0),
                                   rtol=1e-12)
        np.testing.assert_allclose(m.grad(m.erm_solution), 0.0, atol=1e-12)
        np.testing.assert_array_equal(m.population_minimizer, np.arange(4.0))
        x = jnp.linspace(-1.0, 1.0, 4)
        np.testing.assert_allclose(jax.grad(m.value)(x), m.grad(x), rtol=1e-10)
        ref = np.mean(np.sum((np.asarray(m.data, np.float64) - np.arange(4.0)) ** 2, -1))
        got = empirical_second_moment(m.example_grad, m.population_minimizer, m.examples,
                                      batch_size=128)
        assert got.dtype == jnp.float64
        np.testing.assert_allclose(got, ref, rtol=1e-12)

        r = build(key, 3000, 3, 1.8, kind="ridge", reg=0.2)
        a, b = np.asarray(r.features, np.float64), np.asarray(r.targets, np.float64)
        erm = np.linalg.solve(a.T @ a / 3000 + 0.2 * np.eye(3), a.T @ b / 3000)
        np.testing.assert_allclose(r.erm_solution, erm, rtol=1e-9)
        np.testing.assert_allclose(r.grad(r.erm_solution), 0.0, atol=1e-10)
        np.testing.assert_allclose(r.population_minimizer, np.ones(3) / 1.2)
        np.testing.assert_allclose(jax.grad(r.value)(x[:3]), r.grad(x[:3]), rtol=1e-9)
        g = jax.jit(jax.vmap(lambda i: r.example_grad(x[:3], (r.features[i], r.targets[i]))))(
            jnp.arange(3000))
        np.testing.assert_allclose(g.mean(0), r.grad(x[:3]), rtol=1e-9)
        assert r.strong_convexity >= 0.2 and r.smoothness >= r.strong_convexity


# --------------------------------------------------------------------------- experiment


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0: every claim passes. Deterministic for the fixed key; over keys the
    QUICK claim-1 slopes hold with probability ~97% (see the experiment docstring)."""
    results = quick_results
    runner.check_quick_claims(experiment, results)
    # SGD's run-mean error agrees with its closed form Var_N / T (median over data sets, runs
    # are heavy-tailed so only loosely) and the claimed slopes are recorded in summarize.
    summary = experiment.summarize(results)
    assert 0.6 < summary["SGD measured / closed form (median)"] < 1.5
    assert summary["error slope to xhat_N/SGD"] == experiment.error_slope(results, experiment.SGD)
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"scaling", "optimization", "generalization"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (scaling, optimization, generalization) pass the readability check:
    titles, axis labels, legends that say what the shaded bands are, y-ranges fitted to the
    data, tick labels that do not overlap and no series hidden under another drawn in the same
    style (each optimization panel labels its own y axis)."""
    runner.check_quick_figures(experiment, quick_results)


def test_make_problem_is_runs_first_dataset(experiment, quick_results):
    prob = experiment.make_problem(experiment.QUICK, jax.random.PRNGKey(0))
    assert prob.data.shape == (max(experiment.QUICK.opt_ns), experiment.QUICK.d)
    res = quick_results
    with jax.enable_x64(True):
        sigma2 = float(jnp.mean(jnp.sum(prob.data.astype(jnp.float64) ** 2, -1)))
    np.testing.assert_allclose(res["opt_sigma2"][0, -1], sigma2, rtol=1e-10)
    assert set(experiment.describe_problem(prob)) >= {"N", "tail index alpha"}
