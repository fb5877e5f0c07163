"""Tests of Romberg-ZOGE (``jaxopt_icml.zeroth_order.romberg_zoge``) and its experiment.

Independent references: the spec's printed weights and the recursive Romberg tableau (NumPy),
polynomials whose symmetric differences are known exactly (a degree-n polynomial along u has
finitely many Taylor terms), the classical 4-point stencil (= R = 1), automatic
differentiation for the test function's derivatives, a NumPy re-evaluation of the estimator
from its documented key layout, and Monte Carlo for the noise amplification factor.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.testing import AlgorithmCase
from jaxopt_icml.zeroth_order.estimators import sample_directions, two_point, zo_optimizer
from jaxopt_icml.zeroth_order.romberg_zoge import (
    SmoothTestFunction,
    leading_bias_coefficient,
    noise_amplification,
    romberg_directional_derivative,
    romberg_weights,
    romberg_zoge,
    smooth_test_function,
)

# --------------------------------------------------------------------------- contract cases


def _case_problem(key, dtype):
    # deterministic oracle (the directions make the method stochastic): fewer random kernels to
    # compile in the matrix; noisy oracles are tested below
    x0 = {"w": jnp.full((2, 3), 0.3, dtype), "b": jnp.asarray([-0.2, 0.1, 0.4], dtype),
          "s": jnp.asarray(0.5, dtype)}
    return x0, smooth_test_function(key, x0, dtype=dtype)


def _make_romberg_sgd(learning_rate=0.01, **kw):
    return zo_optimizer(romberg_zoge(**kw), optax.sgd(learning_rate))


# two_point and zo_optimizer with other optax transformations are tested in
# tests/zeroth_order/test_estimators.py; a second matrix case would double the matrix's CI time
# for the same zo_optimizer code.
_INVALID = (
    ({"radius": 0.0}, "radius"), ({"radius": -0.1}, "radius"),
    ({"radius": float("nan")}, "radius"), ({"radius": float("inf")}, "radius"),
    ({"levels": -1}, "levels"), ({"levels": 1.0}, "levels"), ({"levels": False}, "levels"),
    ({"num_directions": 0}, "num_directions"), ({"num_directions": 1.5}, "num_directions"),
    ({"num_directions": True}, "num_directions"), ({"distribution": "uniform"}, "distribution"),
    ({"shared_direction": 1}, "shared_direction"), ({"eval_batch_size": 0}, "eval_batch_size"),
)

CONTRACT_CASES = (
    AlgorithmCase(
        "romberg_zoge_sgd", _make_romberg_sgd,
        {"radius": 0.1, "levels": 2, "num_directions": 2, "learning_rate": 0.01},
        _case_problem, stochastic=True, invalid=_INVALID,
        # Romberg extrapolation cancels the radius to high order on this problem (runs at
        # radius 0.1 and 0.05 agree to 3.5e-6): the sweep check traces the step size instead
        sweep="learning_rate"),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# --------------------------------------------------------------------------- weights


SPEC_WEIGHTS = {
    0: [1.0],
    1: [-1 / 3, 4 / 3],
    2: [1 / 45, -20 / 45, 64 / 45],
    3: [-1 / 2835, 84 / 2835, -1344 / 2835, 4096 / 2835],
}


def _tableau_weights(levels):
    """The recursive Romberg tableau T_{k,j} = T_{k,j-1} + (T_{k,j-1} - T_{k-1,j-1})/(4^j - 1)
    is linear in T_{.,0}: applied to the unit vectors it gives the weights of T_{R,R}."""
    n = levels + 1
    T = [[np.eye(n)[k]] for k in range(n)]
    for j in range(1, n):
        for k in range(j, n):
            T[k].append(T[k][j - 1] + (T[k][j - 1] - T[k - 1][j - 1]) / (4**j - 1))
    return T[levels][levels]


@pytest.mark.parametrize("levels", [0, 1, 2, 3])
def test_weights_match_the_spec_and_the_tableau(levels):
    w = romberg_weights(levels)
    assert w.dtype == np.float64 and w.shape == (levels + 1,)
    np.testing.assert_allclose(w, SPEC_WEIGHTS[levels], rtol=1e-14)
    np.testing.assert_allclose(w, _tableau_weights(levels), rtol=1e-12)


@pytest.mark.parametrize("levels", range(7))
def test_weights_moment_conditions(levels):
    w = romberg_weights(levels)
    k = np.arange(levels + 1)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    for j in range(1, levels + 1):
        assert abs(np.sum(w * 4.0 ** (-j * k))) < 1e-12
    np.testing.assert_allclose(w, _tableau_weights(levels), rtol=1e-10)
    # the leading bias coefficient sum_k w_k 4^{-(R+1)k} = (-1)^R 4^{-R(R+1)/2}
    beta = (-1) ** levels * 4.0 ** (-levels * (levels + 1) / 2)
    assert leading_bias_coefficient(levels) == pytest.approx(beta, rel=1e-12)
    assert np.sum(w * 4.0 ** (-(levels + 1) * k)) == pytest.approx(beta, rel=1e-9)


def test_noise_amplification_values():
    for levels, a in zip(range(4), (1.0, 2.687, 5.758, 11.71), strict=True):
        assert noise_amplification(levels) == pytest.approx(a, abs=6e-3)
        w = np.asarray(SPEC_WEIGHTS[levels])
        assert noise_amplification(levels) == pytest.approx(
            np.sqrt(np.sum(w**2 * 4.0 ** np.arange(levels + 1))), rel=1e-12)


# --------------------------------------------------------------------------- directional


def _poly(coef, n):
    """f(x) = sum_i coef_i x_i^n + 0.3 sum_i x_i^2 (a degree-n polynomial)."""

    def f(x, key=None):
        return jnp.sum(jnp.asarray(coef) * x**n) + 0.3 * jnp.sum(x**2)

    return f


def test_exact_on_polynomials_and_leading_error_on_the_next_degree():
    """Degree <= 2R+2: sum_k w_k D(r/2^k) is exact. Degree 2R+3: D(h) has the terms
    c_2 h^2 .. c_{2R+2} h^{2R+2}; Romberg leaves exactly beta_R c_{2R+2} r^{2R+2} with
    c_{2R+2} = sum_i coef_i u_i^{2R+3}. R = 0..3, every degree, one compiled program."""
    rng = np.random.default_rng(0)
    d, r = 5, 0.5
    coef = rng.normal(size=d)
    x = rng.normal(size=d) * 0.5
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    cases = [(lv, n) for lv in range(4) for n in range(2, 2 * lv + 4)]

    @jax.jit
    def estimates(x, u):
        return [romberg_directional_derivative(_poly(coef, n), x, u, r, levels=lv)
                for lv, n in cases]

    for (lv, n), est in zip(cases, estimates(jnp.asarray(x), jnp.asarray(u)), strict=True):
        exact = float(np.sum(coef * n * x ** (n - 1) * u) + 0.6 * x @ u)
        if n <= 2 * lv + 2:
            assert float(est) == pytest.approx(exact, abs=1e-11), (lv, n)
        else:
            lead = leading_bias_coefficient(lv) * np.sum(coef * u**n) * r ** (n - 1)
            # round-off of D at the smallest radius r/2^R is ~1e-13 here
            assert float(est) - exact == pytest.approx(lead, rel=1e-7, abs=2e-11), (lv, n)


def test_r1_is_the_four_point_stencil():
    """[-f(2h) + 8 f(h) - 8 f(-h) + f(-2h)] / (12 h) along u, h = r/2."""
    f = smooth_test_function(jax.random.key(0), 6, dtype=jnp.float64)
    x = np.linspace(-0.5, 0.5, 6)
    u = np.ones(6) / np.sqrt(6.0)
    r = 0.3
    h = r / 2
    g = lambda s: _np_f(np.asarray(f.a), x + s * u)
    stencil = (-g(2 * h) + 8 * g(h) - 8 * g(-h) + g(-2 * h)) / (12 * h)
    est = jax.jit(lambda x, u: romberg_directional_derivative(f.value, x, u, r, levels=1))(
        jnp.asarray(x), jnp.asarray(u))
    assert float(est) == pytest.approx(stencil, rel=1e-12)


def test_vector_radii_and_all_levels():
    """A vector of radii gives one estimate per radius; all_levels gives the Romberg diagonal
    T_0..T_R from the same evaluations (T_0 = D(r), T_1 = (4 D(r/2) - D(r))/3)."""
    f = smooth_test_function(jax.random.key(1), 4, dtype=jnp.float64)
    x, u = np.full(4, 0.2), np.asarray([0.5, -0.5, 0.5, 0.5])

    @jax.jit
    def run(x, u):
        table = romberg_directional_derivative(f.value, x, u, jnp.asarray([0.4, 0.1]),
                                               levels=2, all_levels=True)
        singles = [romberg_directional_derivative(f.value, x, u, r, levels=2)
                   for r in (0.4, 0.1)]
        return table, singles

    table, singles = run(jnp.asarray(x), jnp.asarray(u))
    assert table.shape == (2, 3)
    a = np.asarray(f.a)

    def D(h):
        return (_np_f(a, x + h * u) - _np_f(a, x - h * u)) / (2 * h)

    for i, r in enumerate((0.4, 0.1)):
        assert float(table[i, 0]) == pytest.approx(D(r), rel=1e-12)
        assert float(table[i, 1]) == pytest.approx((4 * D(r / 2) - D(r)) / 3, rel=1e-11)
        assert singles[i].shape == ()
        assert float(singles[i]) == pytest.approx(float(table[i, 2]), rel=1e-13)


def test_leading_bias_term_on_the_spec_function():
    """bias / (beta_R D^{2R+3}f[u^{2R+3}] / (2R+3)! r^{2R+2}) -> 1 as r -> 0, with the
    derivatives from nested jvps (autodiff, independent of the closed form); R = 0, 1, 2."""
    f = smooth_test_function(jax.random.key(3), 10, dtype=jnp.float64)
    x = 0.5 * jax.random.normal(jax.random.key(4), (10,))
    u = jax.random.normal(jax.random.key(5), (10,))
    u = u / jnp.linalg.norm(u)
    radius = {0: 0.01, 1: 0.05, 2: 0.2}

    def nth(fun, n):
        for _ in range(n):
            fun = (lambda g: lambda y: jax.jvp(g, (y,), (u,))[1])(fun)
        return fun

    @jax.jit
    def run(x):
        out = {"d1": nth(f.value, 1)(x), "d1_closed": f.directional_derivative(x, u)}
        for lv, r in radius.items():
            m = 2 * lv + 3
            out[f"dm{lv}"] = nth(f.value, m)(x)
            out[f"dm_closed{lv}"] = f.directional_derivative(x, u, m)
            out[f"est{lv}"] = romberg_directional_derivative(f.value, x, u, r, levels=lv)
        return out

    out = jax.tree.map(float, run(x))
    assert out["d1"] == pytest.approx(out["d1_closed"], rel=1e-12)
    for lv, r in radius.items():
        m = 2 * lv + 3
        assert out[f"dm{lv}"] == pytest.approx(out[f"dm_closed{lv}"], rel=1e-10)
        lead = leading_bias_coefficient(lv) * out[f"dm{lv}"] / math.factorial(m) * r ** (m - 1)
        assert (out[f"est{lv}"] - out["d1"]) / lead == pytest.approx(1.0, abs=0.02), lv


def test_noise_amplification_monte_carlo():
    """Oracle noise N(0, s^2) per evaluation: std of T_R = A_R s / (sqrt2 r) (20000 draws per
    level; relative standard error of a std 0.5%, tolerance 3%)."""
    s, r, n = 1e-2, 0.2, 20000
    f = smooth_test_function(jax.random.key(0), 5, noise_std=s, dtype=jnp.float64)
    x, u = jnp.full(5, 0.1), jnp.ones(5) / jnp.sqrt(5.0)
    keys = jax.random.split(jax.random.key(1), n)

    @jax.jit
    def draws(keys):
        return jax.vmap(lambda k: romberg_directional_derivative(
            f.value, x, u, r, levels=3, key=k, all_levels=True))(keys)

    std = np.asarray(draws(keys)).std(0, ddof=1)
    for levels in range(4):
        assert std[levels] / (s / (np.sqrt(2) * r)) == pytest.approx(
            noise_amplification(levels), rel=0.03)


# --------------------------------------------------------------------------- the estimator


def _np_f(a, v):
    return np.sum(np.exp(a * v) - a * v + 0.5 * np.sin(v) ** 2)


def test_estimator_matches_numpy():
    """g = c/B sum_b (sum_k w_k D_b(r/2^k)) u_b with the spec's weights, evaluated in NumPy;
    the directions come from the documented layout (k_dir = split(key)[0])."""
    d, B, r = 7, 3, 0.3
    f = smooth_test_function(jax.random.key(2), d, dtype=jnp.float64)
    a = np.asarray(f.a)
    x = np.linspace(-0.4, 0.6, d)
    key = jax.random.key(9)
    cases = ((1, "sphere"), (2, "gaussian"), (3, "rademacher"))

    @jax.jit
    def run(x, key):
        out = []
        for levels, distribution in cases:
            est = romberg_zoge(r, levels=levels, num_directions=B, distribution=distribution)
            u = sample_directions(jax.random.split(key)[0], x, B, distribution=distribution)
            out.append((est(f.value, x, key), u))
        return out

    for (levels, distribution), ((g, info), u) in zip(cases, run(jnp.asarray(x), key),
                                                      strict=True):
        assert int(info["oracle_calls"]) == 2 * B * (levels + 1)
        u = np.asarray(u)
        w = SPEC_WEIGHTS[levels]
        c = d if distribution == "sphere" else 1.0
        ref = np.zeros(d)
        for b in range(B):
            t = sum(wk * (_np_f(a, x + r / 2**k * u[b]) - _np_f(a, x - r / 2**k * u[b]))
                    / (2 * r / 2**k) for k, wk in enumerate(w))
            ref += c / B * t * u[b]
        np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-9)


def test_levels_zero_is_two_point_and_shared_direction_matters():
    f = smooth_test_function(jax.random.key(2), 6, dtype=jnp.float64)
    x, key = jnp.full(6, 0.3), jax.random.key(0)

    @jax.jit
    def run(x, key):
        return (romberg_zoge(0.2, levels=0, num_directions=2)(f.value, x, key),
                two_point(0.2, num_directions=2)(f.value, x, key),
                romberg_zoge(0.2, levels=1, shared_direction=False)(f.value, x, key)[0],
                sample_directions(jax.random.split(key)[0], x, 2))

    (a, ia), (b, ib), g, v = run(x, key)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-15)
    assert int(ia["oracle_calls"]) == int(ib["oracle_calls"]) == 4
    # independent directions: B*K directions, one per radius
    v = np.asarray(v)
    w = SPEC_WEIGHTS[1]
    an, xn = np.asarray(f.a), np.asarray(x)
    ref = sum(6 * wk * (_np_f(an, xn + h * v[k]) - _np_f(an, xn - h * v[k])) / (2 * h) * v[k]
              for k, (wk, h) in enumerate(zip(w, (0.2, 0.1), strict=True)))
    np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-9)


def test_pytree_bf16_and_traced_radius():
    """Pytrees of mixed dtypes keep their dtypes; a traced radius (vmap over radii) works."""
    x = {"h": jnp.full((3,), 0.25, jnp.bfloat16), "f": jnp.full((2, 2), -0.1, jnp.float32)}
    f = smooth_test_function(jax.random.key(0), x, dtype=jnp.float32)
    g, _ = jax.jit(lambda x, k: romberg_zoge(0.1, levels=2)(f.value, x, k))(x, jax.random.key(1))
    assert g["h"].dtype == jnp.bfloat16 and g["f"].dtype == jnp.float32
    xs = jnp.full(4, 0.2)
    f64 = smooth_test_function(jax.random.key(0), 4, dtype=jnp.float64)

    @jax.jit
    def run(radii):
        est = lambda r: romberg_zoge(r, levels=1)(f64.value, xs, jax.random.key(3))[0]
        return jax.vmap(est)(radii), [est(r) for r in (0.1, 0.2)]

    gs, refs = run(jnp.asarray([0.1, 0.2]))
    for i in range(2):
        np.testing.assert_allclose(np.asarray(gs[i]), np.asarray(refs[i]), rtol=1e-12)


# --------------------------------------------------------------------------- test function


def test_smooth_test_function_against_autodiff():
    x = {"a": jnp.linspace(-1.0, 1.0, 5), "b": jnp.asarray([[0.3, -0.7]])}
    f = smooth_test_function(jax.random.key(0), x, dtype=jnp.float64)
    g, ref = jax.jit(lambda x: (f.grad(x), jax.grad(f.value)(x)))(x)
    jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-12), g, ref)
    assert f.min_value == 7.0
    assert float(jax.jit(f.value)(f.optimum)) == pytest.approx(7.0, rel=1e-14)
    flat = np.concatenate([np.ravel(np.asarray(v)) for v in jax.tree.leaves(f.a)])
    assert np.all((flat >= 0.5) & (flat <= 1.5))
    # noise: value(x, key) - value(x) has std noise_std; key None or sigma = 0: deterministic
    noisy = smooth_test_function(jax.random.key(0), x, noise_std=0.1, dtype=jnp.float64)
    draws = jax.jit(jax.vmap(lambda k: noisy.value(x, k)))(jax.random.split(jax.random.key(1),
                                                                            4000))
    assert float(jnp.std(draws)) == pytest.approx(0.1, rel=0.05)
    fx = float(jax.jit(f.value)(x))
    assert float(jnp.mean(draws)) == pytest.approx(fx, abs=5 * 0.1 / 60)
    assert float(jax.jit(f.value)(x, jax.random.key(2))) == fx
    assert isinstance(f, SmoothTestFunction) and len(jax.tree.leaves(f)) == 2


@pytest.mark.parametrize("call,name", [
    (lambda: romberg_zoge(0.0), "radius"),
    (lambda: romberg_zoge(0.1, levels=-1), "levels"),
    (lambda: romberg_zoge(0.1, levels=1.0), "levels"),
    (lambda: romberg_zoge(0.1, num_directions=0), "num_directions"),
    (lambda: romberg_zoge(0.1, distribution="cube"), "distribution"),
    (lambda: romberg_zoge(0.1, shared_direction="yes"), "shared_direction"),
    (lambda: romberg_zoge(0.1, eval_batch_size=-2), "eval_batch_size"),
    (lambda: romberg_weights(-1), "levels"),
    (lambda: noise_amplification(2.5), "levels"),
    (lambda: leading_bias_coefficient(None), "levels"),
    (lambda: romberg_directional_derivative(lambda x, k: 0.0, jnp.ones(2), jnp.ones(2),
                                            jnp.ones((2, 2)), levels=1), "radius"),
    (lambda: romberg_directional_derivative(lambda x, k: 0.0, jnp.ones(2), jnp.ones(2), 0.1,
                                            levels=1, all_levels=1), "all_levels"),
    (lambda: romberg_directional_derivative(lambda x, k: 0.0, jnp.ones(2), jnp.ones(2),
                                            np.array([0.1, 0.0]), levels=1), "radius"),
    (lambda: smooth_test_function(jax.random.key(0), 3, noise_std=-1.0), "noise_std"),
    (lambda: smooth_test_function(jax.random.key(0), 3, low=0.0), "low"),
    (lambda: smooth_test_function(jax.random.key(0), 3, low=2.0, high=1.0), "high"),
    (lambda: smooth_test_function(jax.random.key(0), 0), "shape_or_x"),
])
def test_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --------------------------------------------------------------------------- claims


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0: every claim passes (fixed seeds: deterministic). Margins: slopes
    within 0.05 of 2R+2 (tolerances 0.2-0.5), variance ratios 1 + 2e-7 (tolerance 0.02),
    sum w^2 inflation within 0.3% (5%), noise within 0.4% (1.5%), ZO-SGD 16/16 seeds (12)."""
    runner.check_quick_claims(experiment, quick_results)
    assert not getattr(experiment, "KNOWN_FAILING", {})
    summary = experiment.summarize(quick_results)
    # the two-point trace covariance is (d - 1) |grad f|^2 (sphere, r -> 0): 20000 draws per
    # seed over 16 seeds, relative standard error ~0.3%
    assert summary["two_point_trace_cov_over_(d-1)|grad|^2"] == pytest.approx(1.0, abs=0.015)
    for lv in range(3):
        assert summary[f"bias_over_leading_term_median/R={lv}"] == pytest.approx(1.0, abs=0.05)
    runner.check_figures(experiment, quick_results, experiment.QUICK,
                         names={"bias_order", "zo_sgd", "noise_and_variance"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (bias_order, zo_sgd and noise_and_variance) pass the readability check:
    titles, axis labels, legends that say what the shaded bands are, y-ranges fitted to the data,
    tick labels that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)


def test_benchmark_smoke(experiment):
    out = experiment.benchmark(dim=256, repeats=2, inner=2)
    assert out["evaluations"] == 6 and out["dim"] == 256
    assert np.isfinite(out["ratio_median"]) and out["ratio_median"] > 0
