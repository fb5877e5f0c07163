"""APUB (paper 53): bootstrap weights against the multinomial law; upper CVaR against the
Rockafellar-Uryasev minimum by brute force; Efron against NumPy's inverted-CDF quantile; the
exact N=5 law against the closed-form bootstrap variance; CLT bound and newsvendor true cost
against scipy; golden-section APUB-M against a grid; the scenario reweighter against golden
section; restarted PDHG, the APUB-M extensive form and L-shaped against scipy's HiGHS; the
product-mix recourse enumeration against HiGHS; contract cases; errors; claims."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import integrate, optimize, stats

from experiments import runner
from jaxopt_icml.robust import apub
from jaxopt_icml.robust import lp as lp_lib
from jaxopt_icml.robust import two_stage as ts
from jaxopt_icml.testing import AlgorithmCase


def _box(x):
    return jnp.clip(x, 0.0, jnp.asarray(ts.CAPACITY, x.dtype))


def _product_mix_problem(key, dtype):
    hours, demand = ts.sample_product_mix(key, 4, jnp.float32)
    scen = ts.ProductMixScenarios(hours.astype(dtype), demand.astype(dtype))
    return (0.5 * jnp.asarray(ts.CAPACITY, jnp.float32)).astype(dtype), scen


def _small_lp(key, dtype):
    if dtype == jnp.bfloat16:
        raise NotImplementedError("no bfloat16 LP")
    k1, k2 = jax.random.split(key)
    A = jax.random.normal(k1, (2, 4))
    x_feas = jnp.ones(4)
    G = jax.random.normal(k2, (3, 4))
    lp = lp_lib.LinearProgram(jnp.array([1.0, 2.0, 0.5, 1.5]), A, A @ x_feas, G,
                              G @ x_feas - 1.0, jnp.zeros(4), jnp.full(4, 3.0))
    lp = jax.tree.map(lambda a: a.astype(dtype), lp)
    return (jnp.zeros(4, dtype), jnp.zeros(5, dtype)), lp_lib.prepare_lp(lp)


CONTRACT_CASES = (
    AlgorithmCase(
        "apub_scenario_reweighter", apub.scenario_reweighter,
        {"optimizer": optax.adam(10.0), "alpha": 0.3, "num_boot": 10, "num_scenarios": 4,
         "projection": _box},
        _product_mix_problem, stochastic=True,
        invalid=(({"alpha": 0.0}, "alpha"), ({"alpha": 1.5}, "alpha"),
                 ({"num_boot": 0}, "num_boot"), ({"num_scenarios": 2.0}, "num_scenarios"),
                 ({"optimizer": None}, "optimizer"), ({"projection": 3}, "projection"))),
    AlgorithmCase(
        "robust_pdhg", lp_lib.pdhg_lp, {"inner_iters": 8}, _small_lp, bfloat16=False,
        invalid=(({"inner_iters": 0}, "inner_iters"), ({"step_scale": 1.0}, "step_scale"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# jitted once (eager op-by-op dispatch in x64 compiles every primitive: slow on CI's CPU)
_cvar = jax.jit(apub.upper_cvar)
_tail = jax.jit(apub.tail_weights)
_efron = jax.jit(apub.efron_bound)


def np_ru_cvar(v, alpha, p=None):
    """Brute force: min over t in the support of t + E(X - t)_+ / alpha (the minimum of the
    piecewise-linear convex function is at an atom)."""
    v = np.asarray(v, np.float64)
    p = np.full(v.shape, 1.0 / v.size) if p is None else np.asarray(p)
    return min(t + np.sum(p * np.maximum(v - t, 0)) / alpha for t in v)


# --------------------------------------------------------------------------- bootstrap / CVaR


def test_bootstrap_weights_follow_the_multinomial_law():
    n, m = 7, 20000
    W = np.asarray(jax.jit(apub.bootstrap_weights, static_argnums=(1, 2, 3))(
        jax.random.PRNGKey(0), n, m, jnp.float64))
    assert W.shape == (m, n)
    np.testing.assert_allclose(W.sum(1), 1.0, atol=1e-12)
    counts = np.rint(W * n).astype(int)
    np.testing.assert_allclose(W * n, counts, atol=1e-9)
    # each count is Binomial(n, 1/n); pairs are negatively correlated with cov -1/n
    freq = np.bincount(counts.ravel(), minlength=n + 1)[: n + 1] / counts.size
    np.testing.assert_allclose(freq, stats.binom.pmf(np.arange(n + 1), n, 1 / n), atol=6e-3)
    cov = np.cov(counts[:, 0], counts[:, 1])[0, 1]
    assert abs(cov + 1 / n) < 0.02


def test_upper_cvar_matches_rockafellar_uryasev_and_subgradient():
    rng = np.random.default_rng(0)
    cvar = _cvar
    for alpha in (0.05, 0.1, 0.37, 1.0):
        v = rng.standard_normal(50)
        np.testing.assert_allclose(float(cvar(jnp.asarray(v), alpha)), np_ru_cvar(v, alpha),
                                   rtol=1e-12, atol=1e-12)
        p = rng.uniform(0.1, 1.0, 50)
        p /= p.sum()
        np.testing.assert_allclose(float(cvar(jnp.asarray(v), alpha, jnp.asarray(p))),
                                   np_ru_cvar(v, alpha, p), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(float(cvar(jnp.asarray(v), 1.0)), v.mean(), rtol=1e-13)
    # ties and a fractional VaR atom: 10 atoms, alpha = 0.25 -> 2.5 atoms in the tail
    v = np.array([3.0, 3.0, 3.0, 1.0, 0.0, 0.0, -1.0, 2.0, 2.5, 0.5])
    lam = np.asarray(_tail(jnp.asarray(v), 0.25))
    np.testing.assert_allclose(lam.sum(), 1.0, rtol=1e-14)
    assert np.all(lam >= 0) and np.all(lam <= 1 / 2.5 + 1e-15)
    np.testing.assert_allclose(lam @ v, 3.0)
    # float32, M = 20000, alpha = 0.1: exactly the top 2000 atoms, weight 1/2000 each (a float32
    # cumsum of 1/M used to leak ~1e-3 relative weight onto the 2001st atom)
    v32 = jnp.asarray(rng.standard_normal(20000), jnp.float32)
    lam32 = np.asarray(_tail(v32, 0.1), np.float64)
    assert np.count_nonzero(lam32) == 2000
    np.testing.assert_allclose(lam32[np.argsort(-np.asarray(v32))[:2000]], 1 / 2000, rtol=1e-6)
    # subgradient: directional derivative by finite differences (no ties)
    v = rng.standard_normal(30)
    d = rng.standard_normal(30)
    lam = np.asarray(_tail(jnp.asarray(v), 0.2))
    h = 1e-7
    fd = (np_ru_cvar(v + h * d, 0.2) - np_ru_cvar(v - h * d, 0.2)) / (2 * h)
    np.testing.assert_allclose(lam @ d, fd, rtol=1e-6)


def test_efron_is_the_inverted_cdf_quantile_and_below_apub():
    rng = np.random.default_rng(1)
    for alpha in (0.05, 0.1, 0.3):
        v = rng.standard_normal(1000)
        e = float(_efron(jnp.asarray(v), alpha))
        np.testing.assert_allclose(e, np.quantile(v, 1 - alpha, method="inverted_cdf"))
        assert float(_cvar(jnp.asarray(v), alpha)) >= e


def test_exact_law_and_clt_bound():
    W, p = apub.exact_bootstrap_law(5)
    assert W.shape == (126, 5) and math.comb(9, 5) == 126
    np.testing.assert_allclose(p.sum(), 1.0, rtol=1e-14)
    np.testing.assert_allclose(p @ W, np.full(5, 0.2), rtol=1e-13)
    x = np.array([0.3, 1.2, 2.5, 0.7, 4.0])
    means = W @ x
    # bootstrap variance of the mean = plug-in variance / n (closed form)
    np.testing.assert_allclose(p @ (means - x.mean()) ** 2, x.var() / 5, rtol=1e-12)
    np.testing.assert_allclose(float(_cvar(jnp.asarray(means), 1.0, jnp.asarray(p))),
                               x.mean(), rtol=1e-13)
    np.testing.assert_allclose(float(_cvar(jnp.asarray(means), 0.1, jnp.asarray(p))),
                               np_ru_cvar(means, 0.1, p), rtol=1e-12)
    ref = x.mean() + stats.norm.ppf(0.95) * x.std(ddof=1) / math.sqrt(5)
    np.testing.assert_allclose(float(jax.jit(apub.clt_bound)(jnp.asarray(x), 0.05)), ref,
                               rtol=1e-12)


# --------------------------------------------------------------------------- newsvendor


def test_newsvendor_true_cost_matches_quadrature():
    mu, sigma, c, p = 3.0, 0.6, 1.0, 2.0
    qs = (5.0, 20.0, 60.0)
    got = jax.jit(apub.newsvendor_lognormal_expected_cost)(jnp.asarray(qs), mu, sigma, c, p)
    dist = stats.lognorm(s=sigma, scale=math.exp(mu))
    for q, g in zip(qs, np.asarray(got), strict=True):
        emin = integrate.quad(lambda t: dist.sf(t), 0, q)[0]  # E min(q, D)
        np.testing.assert_allclose(g, c * q - p * emin, rtol=1e-8)


class _Newsvendor(NamedTuple):
    demand: jax.Array

    def scenario_value_and_grad(self, q):
        f = lambda q, d: apub.newsvendor_cost(q, d)
        return jax.vmap(jax.value_and_grad(f), in_axes=(None, 0))(q, self.demand)


def test_golden_section_and_reweighter_reach_the_apub_m_optimum():
    n, m, alpha, steps = 20, 100, 0.1, 1500
    kd, kw = jax.random.split(jax.random.PRNGKey(2))
    d = jnp.exp(3.0 + 0.6 * jax.random.normal(kd, (n,)))
    alg = apub.scenario_reweighter(optax.sgd(optax.cosine_decay_schedule(2.0, steps)),
                                   alpha=alpha, num_boot=m, num_scenarios=n)

    @jax.jit
    def run(d, key):
        prob = _Newsvendor(d)
        state = alg.init(jnp.median(d), key)
        state, _ = jax.lax.scan(lambda s, _: (alg.update(s, prob, key)[1], None), state,
                                None, length=steps)
        W = state.W.astype(d.dtype)
        return state.x, W, apub.newsvendor_apub_m(d, W, alpha)

    x_rw, W, (q_gs, v_gs) = run(d, kw)
    W, dn = np.asarray(W), np.asarray(d)
    obj = lambda q: np_ru_cvar(W @ (q - 2 * np.minimum(q, dn)), alpha)
    grid = np.linspace(dn.min(), dn.max(), 4001)
    vals = np.array([obj(q) for q in grid])
    assert float(v_gs) <= vals.min() + 1e-9
    np.testing.assert_allclose(float(v_gs), obj(float(q_gs)), rtol=1e-12)
    assert vals.min() - float(v_gs) < 1e-3 * abs(float(v_gs))
    assert obj(float(x_rw)) - float(v_gs) < 2e-3 * abs(float(v_gs))


# --------------------------------------------------------------------------- LP


def _linprog(lp):
    c, A, b, G, h, lb, ub = (np.asarray(a, np.float64) for a in lp)
    bounds = [(None if np.isinf(lo) else lo, None if np.isinf(hi) else hi)
              for lo, hi in zip(lb, ub, strict=True)]
    return optimize.linprog(c, A_ub=-G if G.size else None, b_ub=-h if G.size else None,
                            A_eq=A if A.size else None, b_eq=b if A.size else None,
                            bounds=bounds, method="highs")


def test_pdhg_matches_linprog_and_flags_an_infeasible_lp():
    rng = np.random.default_rng(3)
    lps = []
    for i in range(4):
        A = rng.standard_normal((3, 8))
        G = rng.standard_normal((4, 8))
        x0 = rng.uniform(0.5, 1.5, 8)
        lb, ub = np.zeros(8), np.full(8, 3.0)
        ub[0], lb[1] = np.inf, -np.inf
        b = A @ x0 if i < 3 else A @ x0 + 100.0  # the last one is infeasible within bounds
        lps.append(lp_lib.LinearProgram(rng.standard_normal(8) + 0.5, A, b, G,
                                        G @ x0 - rng.uniform(0, 1, 4), lb, ub))
    batch = jax.tree.map(lambda *a: jnp.asarray(np.stack(a)), *lps)
    sols = jax.jit(jax.vmap(lambda p: lp_lib.solve_lp(p, tol=1e-9, max_iters=20000)))(batch)
    for i in range(3):
        ref = _linprog(lps[i])
        assert ref.status == 0 and int(sols.status[i]) == lp_lib.STATUS_OPTIMAL
        np.testing.assert_allclose(float(sols.primal_obj[i]), ref.fun, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(float(sols.dual_obj[i]), ref.fun, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(np.asarray(sols.x[i]), ref.x, atol=1e-5)
    assert _linprog(lps[3]).status == 2
    assert int(sols.status[3]) == lp_lib.STATUS_ITERATION_LIMIT


def test_product_mix_recourse_enumeration_matches_highs():
    rng = np.random.default_rng(4)
    xs = jnp.asarray(rng.uniform(0, 1, (6, 2)) * np.asarray(ts.CAPACITY) * 0.5)

    @jax.jit
    def build(key, xs):
        hours, demand = ts.sample_product_mix(key, 6, jnp.float64)
        prob = ts.product_mix(hours, demand)
        per = ts.TwoStageLP(*(jnp.broadcast_to(a, (6,) + a.shape) for a in prob[:3]), *prob[3:])
        subs = jax.vmap(ts._recourse_lp)(per, xs)
        return jax.vmap(ts.product_mix_recourse)(xs, hours, demand), subs

    (Qs, gs), subs = build(jax.random.PRNGKey(4), xs)
    for i in range(6):
        Q, g = Qs[i], gs[i]
        ref = _linprog(jax.tree.map(lambda a, i=i: a[i], subs))
        np.testing.assert_allclose(float(Q), ref.fun, rtol=1e-10)
        # the subgradient is -lambda*: the HiGHS marginals of the resource rows
        np.testing.assert_allclose(np.asarray(g), ref.eqlin.marginals[:2], atol=1e-8)


def test_extensive_form_and_l_shaped_reach_the_highs_optimum(experiment, quick_results):
    """The QUICK claims run's L-shaped results (shared with ``test_claims_quick``: no second
    compile) on its two product-mix instances; the extensive form solved by HiGHS is the
    reference, and the extensive form solved by PDHG must match it too."""
    cfg = experiment.QUICK
    out = quick_results["lshaped"]
    hours, demand, W = (jnp.asarray(out[k], jnp.float64) for k in ("hours", "demand", "W"))
    solve_ef = jax.jit(lambda p: lp_lib.solve_lp(p, tol=1e-7, max_iters=50_000))
    build = jax.jit(lambda h, d, w: ts.extensive_form(ts.product_mix(h, d), w, cfg.pm_alpha))
    objective = jax.jit(lambda x, h, d, w: ts.apub_objective(
        x, ts.product_mix(h, d), w, cfg.pm_alpha,
        jax.vmap(ts.product_mix_recourse, in_axes=(None, 0, 0))(x, h, d)[0]))
    for i in range(cfg.ls_reps):
        ef = build(hours[i], demand[i], W[i])
        ref = _linprog(ef)
        assert ref.status == 0
        # 16 iterations with PDHG at relative tolerance 1e-6 (master) / 1e-7 (recourse): the
        # best "upper" bound may sit slightly BELOW HiGHS (its recourse values are PDHG primal
        # objectives, feasible only to 1e-7), hence a two-sided tolerance
        np.testing.assert_allclose(float(out["ls_value"][i]), ref.fun, rtol=5e-6)
        assert float(out["ls_lower"][i, -1]) <= ref.fun + 1e-6 * abs(ref.fun)
        np.testing.assert_allclose(np.asarray(out["ls_x"][i]), ref.x[:2], rtol=1e-3)
        # the HiGHS solution's exact APUB-M objective (dual-vertex recourse) is its optimum
        np.testing.assert_allclose(
            float(objective(jnp.asarray(ref.x[:2]), hours[i], demand[i], W[i])), ref.fun,
            rtol=1e-9)
        if i == 0:
            sol = solve_ef(ef)
            assert int(sol.status) == lp_lib.STATUS_OPTIMAL
            np.testing.assert_allclose(float(sol.primal_obj), ref.fun, rtol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="alpha"):
        apub.upper_cvar(jnp.zeros(3), 0.0)
    with pytest.raises(ValueError, match="alpha"):
        apub.efron_bound(jnp.zeros(3), 1.2)
    with pytest.raises(ValueError, match="num_boot"):
        apub.bootstrap_weights(jax.random.PRNGKey(0), 3, 0)
    with pytest.raises(ValueError, match="n"):
        apub.exact_bootstrap_law(9)
    with pytest.raises(ValueError, match="tol"):
        lp_lib.solve_lp(None, tol=0.0)
    with pytest.raises(ValueError, match="max_iters"):
        lp_lib.solve_lp(None, max_iters=10)
    with pytest.raises(ValueError, match="num_iters"):
        ts.l_shaped(None, None, 0.1, num_iters=0)
    with pytest.raises(ValueError, match="ruiz_iters"):
        lp_lib.prepare_lp(None, ruiz_iters=-1)


def test_reweighter_rejects_scenario_gradients_of_another_shape():
    """Scenario gradients must be x's pytree with a leading scenario axis: a (N, 4) leaf for a
    (3,) x raises a ValueError naming the leaf (a broadcasting error leaked from the step)."""

    class _Wrong(NamedTuple):
        n: int

        def scenario_value_and_grad(self, x):
            return jnp.zeros(self.n), {**x, "a": jnp.ones((self.n, 4))}

    alg = apub.scenario_reweighter(optax.sgd(0.1), num_boot=4, num_scenarios=3)
    key = jax.random.PRNGKey(0)
    state = alg.init({"a": jnp.zeros(3), "b": jnp.zeros(())}, key)
    with pytest.raises(ValueError, match=r"scenario_reweighter: .*after the scenario axis\) and x "
                       r"disagree at leaf \['a'\]: shape \(4,\) vs \(3,\)"):
        alg.update(state, _Wrong(3), key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0: every claim passes except the documented non-reproductions
    ``exp.KNOWN_FAILING`` (less ``exp.FULL_ONLY_FAILING``)."""
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (coverage, consistency with plain N tick labels, product_mix) pass the
    readability check: titles, axis labels, legends that say what the shaded bands are,
    y-ranges fitted to the data, tick labels that do not overlap and no series hidden under
    another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
