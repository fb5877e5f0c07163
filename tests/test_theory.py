"""theory: power-law fits with bootstrap intervals, Wilson/binomial/z tests, claims."""

import math

import jax
import numpy as np
import pytest

from jaxopt_icml import theory

# --------------------------------------------------------------------------- power laws


def test_fit_power_law_exact_slope_without_noise():
    ks = theory.geometric_grid(1, 1000, 12)
    values = np.tile(3.0 * ks.astype(float) ** -1.5, (5, 1))
    fit = theory.fit_power_law(ks, values)
    assert fit.slope == pytest.approx(-1.5, abs=1e-10)
    assert fit.intercept == pytest.approx(math.log(3.0), abs=1e-10)
    # identical seeds: every bootstrap replicate is the same fit
    assert fit.ci_low == pytest.approx(-1.5, abs=1e-10)
    assert fit.ci_high == pytest.approx(-1.5, abs=1e-10)


def test_fit_power_law_recovers_slope_and_ci_covers_it():
    rng = np.random.default_rng(0)
    ks = theory.geometric_grid(2, 2000, 15)
    seeds = 32
    noise = np.exp(0.3 * rng.standard_normal((seeds, ks.size)))
    values = 0.5 * ks.astype(float) ** -1.0 * noise
    fit = theory.fit_power_law(ks, values, key=jax.random.key(1), num_bootstrap=2000)
    assert fit.ci_low < -1.0 < fit.ci_high
    assert fit.ci_low < fit.slope < fit.ci_high
    assert abs(fit.slope + 1.0) < 0.05
    assert fit.ci_high - fit.ci_low < 0.2
    # a tighter confidence level gives a narrower interval
    narrow = theory.fit_power_law(ks, values, key=jax.random.key(1), num_bootstrap=2000,
                                  confidence=0.5)
    assert fit.ci_low <= narrow.ci_low <= narrow.ci_high <= fit.ci_high


def test_fit_power_law_single_seed_ci_is_the_point():
    ks = np.array([1, 2, 4, 8])
    fit = theory.fit_power_law(ks, 2.0 / ks)
    assert fit.slope == pytest.approx(-1.0) and fit.ci_low == fit.slope == fit.ci_high


@pytest.mark.parametrize("kwargs,name", [({"confidence": 1.0}, "confidence"),
                                         ({"confidence": 0.0}, "confidence"),
                                         ({"num_bootstrap": 0}, "num_bootstrap")])
def test_fit_power_law_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        theory.fit_power_law([1, 2, 3], np.ones((2, 3)), **kwargs)


def test_power_law_slopes_per_seed():
    ks = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    values = np.stack([ks ** -0.5, 7 * ks ** -2.0, ks ** 1.0])
    np.testing.assert_allclose(theory.power_law_slopes(ks, values), [-0.5, -2.0, 1.0],
                               rtol=1e-5)
    assert theory.power_law_slopes(ks, ks ** -1.0).shape == ()


def test_geometric_grid():
    grid = theory.geometric_grid(1, 100, 10)
    assert grid[0] == 1 and grid[-1] == 100
    assert np.all(np.diff(grid) > 0)
    with pytest.raises(ValueError, match="start"):
        theory.geometric_grid(0, 10, 3)
    with pytest.raises(ValueError, match="start"):
        theory.geometric_grid(5, 5, 3)


# --------------------------------------------------------------------------- win rates


def test_normal_cdf_and_quantile():
    assert theory.normal_cdf(0.0) == pytest.approx(0.5)
    assert theory.normal_cdf(1.959963985) == pytest.approx(0.975, abs=1e-9)
    assert theory._normal_quantile(0.975) == pytest.approx(1.959963985, abs=1e-8)


@pytest.mark.parametrize("successes,trials,low,high", [
    # hand computation: z = 1.959964, p = 0.8, n = 10:
    #   centre = (p + z^2/2n) / (1 + z^2/n) = 0.99207 / 1.38415 = 0.71674
    #   half   = z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n) = 0.31362 / 1.38415 = 0.22658
    (8, 10, 0.49016, 0.94331),
    # p = 0: the interval is [0, z^2 / (n + z^2)] = [0, 3.84146 / 13.84146]
    (0, 10, 0.0, 0.27753),
    # p = 1/2, n = 100: centre 0.5, half = z * 0.05 / sqrt(1 + z^2/100) ...
    (50, 100, 0.40383, 0.59617),
])
def test_wilson_interval_hand_values(successes, trials, low, high):
    lo, hi = theory.wilson_interval(successes, trials)
    assert lo == pytest.approx(low, abs=5e-5)
    assert hi == pytest.approx(high, abs=5e-5)


def test_wilson_interval_validation():
    with pytest.raises(ValueError, match="trials"):
        theory.wilson_interval(0, 0)
    with pytest.raises(ValueError, match="successes"):
        theory.wilson_interval(11, 10)


def test_win_rate_counts_ties_as_losses():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([2.0, 2.0, 1.0, 5.0])
    wr = theory.win_rate(a, b)
    assert (wr.wins, wr.trials, wr.rate) == (2, 4, 0.5)
    assert (wr.low, wr.high) == pytest.approx(theory.wilson_interval(2, 4))
    assert theory.win_rate(a, b, lower_is_better=False).wins == 1
    with pytest.raises(ValueError, match="shape"):
        theory.win_rate(a, b[:3])


def test_binomial_test_against_direct_sum():
    # P[Bin(10, 1/2) >= 8] = (C(10,8) + C(10,9) + C(10,10)) / 2^10 = 56 / 1024
    assert theory.binomial_test(8, 10) == pytest.approx(56 / 1024, rel=1e-12)
    direct = sum(math.comb(20, i) * 0.3**i * 0.7 ** (20 - i) for i in range(9, 21))
    assert theory.binomial_test(9, 20, 0.3) == pytest.approx(direct, rel=1e-12)
    assert theory.binomial_test(0, 7, 0.2) == pytest.approx(1.0)
    assert theory.binomial_test(7, 7, 0.2) == pytest.approx(0.2**7)
    with pytest.raises(ValueError, match="p0"):
        theory.binomial_test(1, 2, 1.0)
    with pytest.raises(ValueError, match="successes"):
        theory.binomial_test(3, 2)


# --------------------------------------------------------------------------- z-tests


def test_clt_ztest_hand_computation():
    # mean 3, sample sd sqrt(2.5), stderr sqrt(2.5 / 5) = sqrt(0.5); z = (3 - 2) / sqrt(0.5)
    t = theory.clt_ztest([1.0, 2.0, 3.0, 4.0, 5.0], mean0=2.0)
    assert t.mean == pytest.approx(3.0)
    assert t.stderr == pytest.approx(math.sqrt(0.5))
    assert t.z == pytest.approx(math.sqrt(2.0))
    assert t.p_greater == pytest.approx(0.0786496, abs=1e-6)
    assert t.p_two_sided == pytest.approx(0.1572992, abs=1e-6)


def test_clt_ztest_degenerate_cases():
    assert theory.clt_ztest([2.0, 2.0], 2.0).z == 0.0
    assert theory.clt_ztest([2.0, 2.0], 1.0).z == math.inf
    assert theory.clt_ztest([2.0, 2.0], 3.0).z == -math.inf
    with pytest.raises(ValueError, match="2 samples"):
        theory.clt_ztest([1.0])


# --------------------------------------------------------------------------- claims


def test_check_pass_fail_and_nan():
    results = {"slope": -1.02, "rate": 0.4, "bad": float("nan")}
    claims = [
        theory.Claim("slope_ok", lambda r: r["slope"], "<=", -0.9, "Thm 1"),
        theory.Claim("rate_fails", lambda r: r["rate"], ">", 0.5),
        theory.Claim("nan_fails", lambda r: r["bad"], "<", 1.0),
        theory.Claim("nan_fails_too", lambda r: r["bad"], ">=", 1.0),
        theory.Claim("strict_edge", lambda r: 0.5, "<", 0.5),
    ]
    out = theory.check(claims, results)
    assert [r.passed for r in out] == [True, False, False, False, False]
    assert out[0].value == pytest.approx(-1.02) and out[0].source == "Thm 1"
    assert math.isnan(out[2].value)
    assert out[0].as_dict()["passed"] is True


def test_check_rejects_unknown_op():
    with pytest.raises(ValueError, match="op"):
        theory.check([theory.Claim("x", lambda r: 1.0, "==", 1.0)], None)


def test_format_claims_table():
    out = theory.check([theory.Claim("first_claim", lambda r: 0.123456, "<=", 1.0),
                        theory.Claim("b", lambda r: 2.0, "<", 1.0)], None)
    table = theory.format_claims(out)
    lines = table.splitlines()
    assert lines[0].split() == ["claim", "measured", "op", "threshold", "result"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert "first_claim" in lines[2] and "0.1235" in lines[2] and lines[2].endswith("PASS")
    assert lines[3].startswith("b ") and lines[3].endswith("FAIL")
    # columns line up: every value starts where its header starts
    assert lines[2].index("0.1235") == lines[0].index("measured")
