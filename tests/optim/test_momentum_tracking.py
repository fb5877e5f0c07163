"""Momentum under drift (jaxopt_icml.optim.momentum_tracking, problems.drifting): the contract
case, the paper's recurrences in NumPy, independent closed forms of the tracking error, and the
claims at quick size."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.optim.momentum_tracking import (
    linear_error_dynamics,
    stationary_tracking_mse,
    steady_state_lag,
    tracker,
    tracking_error_decomposition,
    tracking_mse_curve,
    tracking_optimizer,
    tracking_run,
)
from jaxopt_icml.problems.drifting import DriftState, drifting_quadratic
from jaxopt_icml.testing import AlgorithmCase


def _make(**kw):
    return tracker(tracking_optimizer(**kw))


def _case_problem(key, dtype):
    del key
    prob = drifting_quadratic(4, 1.0, 4.0, drift="random_walk", drift_scale=0.1, noise_std=0.5,
                              dtype=dtype)
    return jnp.ones((4,), dtype), prob


CONTRACT_CASES = (
    AlgorithmCase(
        "momentum_tracking_nesterov", _make,
        {"method": "nesterov", "learning_rate": 0.05, "momentum": 0.9, "matched_step": True},
        _case_problem, stochastic=True,
        invalid=(({"method": "adam"}, "method"), ({"learning_rate": 0.0}, "learning_rate"),
                 ({"learning_rate": -1.0}, "learning_rate"), ({"momentum": 1.0}, "momentum"),
                 ({"momentum": -0.1}, "momentum"), ({"momentum": float("nan")}, "momentum"),
                 ({"matched_step": 1}, "matched_step"))),
)

EIGS = np.linspace(1.0, 10.0, 10)
ETA_EFF = 0.05


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


def _eta(method, beta):
    return ETA_EFF if method == "sgd" else ETA_EFF * (1 - beta)


# --------------------------------------------------------------------------- NumPy references


def _np_augmented(method, eta, beta, h, point):
    """The paper's recurrences as a linear system in ``s_t = (e_t, e_{t-1}, delta_{t-1})`` with
    ``e_t = theta_t - theta*_t`` (the Polyak / Nesterov iterate), inputs ``(eps_t, delta_t)``.

    Heavy ball: ``theta_{t+1} = theta_t - eta g(theta_t) + beta (theta_t - theta_{t-1})``;
    Nesterov: ``y_t = theta_t + beta (theta_t - theta_{t-1})``, ``theta_{t+1} = y_t - eta g(y_t)``;
    ``theta_t - theta_{t-1} = e_t - e_{t-1} + delta_{t-1}``. Returns ``(F, G, c)``."""
    b = 0.0 if method == "sgd" else beta
    # velocity term  beta * (theta_t - theta_{t-1}) = beta * (e_t - e_{t-1} + delta_{t-1})
    vel = np.array([b, -b, b])
    if method == "nesterov":
        look = np.array([1.0, 0.0, 0.0]) + vel  # y_t - theta*_t
        row = look - eta * h * look
        g_eps = -eta
    else:
        row = np.array([1.0, 0.0, 0.0]) - eta * h * np.array([1.0, 0.0, 0.0]) + vel
        g_eps = -eta
    F = np.array([row, [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    G = np.array([[g_eps, -1.0], [0.0, 0.0], [0.0, 1.0]])
    if method == "nesterov" and point == "params":
        c = np.array([1.0, 0.0, 0.0]) + vel  # optax's parameters are y_t
    else:
        c = np.array([1.0, 0.0, 0.0])
    return F, G, c


def _np_curve(method, eta, beta, eigs, sigma, drift, x0, num_steps, point="iterate"):
    """Exact E||c^T s_t||^2 for t = 0..num_steps by propagating mean and covariance."""
    d = len(eigs)
    W = np.diag([sigma**2, drift**2 / d])
    out = np.zeros(num_steps + 1)
    for h, e0 in zip(eigs, x0, strict=True):
        F, G, c = _np_augmented(method, eta, beta, h, point)
        mean = np.array([e0, e0, 0.0])  # theta_{-1} = theta_0, no drift before t = 0
        cov = np.zeros((3, 3))
        for t in range(num_steps + 1):
            out[t] += (c @ mean) ** 2 + c @ cov @ c
            mean, cov = F @ mean, F @ cov @ F.T + G @ W @ G.T
    return out


def _np_stationary(method, eta, beta, eigs, sigma, drift, point="iterate"):
    """Stationary E||c^T s||^2 by the doubling iteration P <- P + A_k P A_k^T, A_{k+1} = A_k^2."""
    d = len(eigs)
    W = np.diag([sigma**2, drift**2 / d])
    total = 0.0
    for h in eigs:
        F, G, c = _np_augmented(method, eta, beta, h, point)
        P, Ak = G @ W @ G.T, F.copy()
        for _ in range(40):
            P = P + Ak @ P @ Ak.T
            Ak = Ak @ Ak
        total += c @ P @ c
    return total


# --------------------------------------------------------------------------- optax mapping


def _deterministic_problem():
    """No noise, deterministic drift: a constant velocity plus a sinusoid."""
    prob = drifting_quadratic(6, 0.5, 3.0, drift="linear", drift_scale=0.02,
                              noise_std=0.0, dtype=jnp.float64)
    return prob.replace(amplitude=jnp.float64(0.3), frequency=jnp.float64(0.07))


def _np_optimum(prob, t):
    d = prob.dim
    return (np.asarray(prob.velocity) * t
            + float(prob.amplitude) * np.sin(float(prob.frequency) * t) * np.ones(d) / np.sqrt(d))


def _recorder(method):
    def record(step, state, problem):
        m = (jnp.zeros_like(step.x) if method == "sgd"
             else optax.tree.get(state.inner, "trace"))
        return step.x, state.drift.theta_star, m

    return record


@pytest.mark.parametrize("method", ["sgd", "heavy_ball", "nesterov"])
def test_optax_forms_equal_the_papers_recurrences(method):
    """SGD / heavy ball / Nesterov through the tracker equal the paper's recurrences in NumPy:
    optax's heavy-ball parameters are the Polyak iterates (same eta); optax's Nesterov
    parameters are the look-ahead points y_t and theta_t = y_t + beta * eta * m_t; the gradient
    uses f_t and the optimum moves after the step."""
    beta, T = 0.8, 60
    eta = _eta(method, beta)
    prob = _deterministic_problem()
    h = np.asarray(prob.hessian_eigs)
    x0 = np.linspace(-1.0, 1.0, prob.dim)
    tx = tracking_optimizer(method, ETA_EFF, beta, matched_step=True)
    _, (xs, stars, traces) = tracking_run(tx, prob, jnp.asarray(x0), jax.random.PRNGKey(0), T,
                                          trace_fn=_recorder(method))
    b = 0.0 if method == "sgd" else beta
    theta, theta_prev = x0.copy(), x0.copy()
    for t in range(T):
        star = _np_optimum(prob, t)
        if method == "nesterov":
            y = theta + b * (theta - theta_prev)
            new = y - eta * h * (y - star)
        else:
            new = theta - eta * h * (theta - star) + b * (theta - theta_prev)
        theta_prev, theta = theta, new
        np.testing.assert_allclose(np.asarray(stars[t]), _np_optimum(prob, t + 1), atol=1e-13)
        if method == "nesterov":
            y_next = theta + b * (theta - theta_prev)
            np.testing.assert_allclose(np.asarray(xs[t]), y_next, rtol=1e-12, atol=1e-12)
            iterate = np.asarray(xs[t]) + b * eta * np.asarray(traces[t])
            np.testing.assert_allclose(iterate, theta, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_allclose(np.asarray(xs[t]), theta, rtol=1e-12, atol=1e-12)


def test_tracking_optimizer_is_optax_sgd():
    """The factory returns optax's own transforms with eta = eta_eff (1 - beta) when matched,
    for floats and schedules (bitwise equal updates)."""
    g = {"a": jnp.asarray([0.3, -1.2]), "b": jnp.asarray(2.0)}
    sched = optax.linear_schedule(0.1, 0.02, 5)
    pairs = [
        (tracking_optimizer("sgd", 0.1), optax.sgd(0.1)),
        (tracking_optimizer("heavy_ball", 0.1, 0.9, matched_step=True),
         optax.sgd(0.1 * (1 - 0.9), momentum=0.9)),
        (tracking_optimizer("nesterov", 0.1, 0.5), optax.sgd(0.1, momentum=0.5, nesterov=True)),
        (tracking_optimizer("heavy_ball", sched, 0.75, matched_step=True),
         optax.sgd(lambda c: sched(c) * 0.25, momentum=0.75)),
    ]
    for ours, ref in pairs:
        s1, s2 = ours.init(g), ref.init(g)
        for k in range(4):
            gk = jax.tree.map(lambda x, k=k: x * (k + 1.0), g)
            u1, s1 = ours.update(gk, s1)
            u2, s2 = ref.update(gk, s2)
            jax.tree.map(np.testing.assert_array_equal, u1, u2)


@pytest.mark.parametrize("method", ["sgd", "heavy_ball", "nesterov"])
def test_tracking_optimizer_rejects_mismatched_updates_naming_the_leaf(method):
    """With params given, updates whose leaf shape or tree structure differs raise a
    ValueError naming the leaf (trace time, also under jit), where optax's sgd broadcast or
    returned (4,) updates for (3,) params."""
    tx = tracking_optimizer(method, 0.1, 0.9)
    params = {"x": jnp.zeros(3), "y": jnp.zeros((2, 2))}
    state = tx.init(params)
    good = jax.tree.map(jnp.ones_like, params)
    bad = {**good, "x": jnp.ones(4)}
    leaf = r"\['x'\]: shape \(4,\) vs \(3,\)"
    with pytest.raises(ValueError, match=r"updates and params disagree at leaf " + leaf):
        tx.update(bad, state, params)
    with pytest.raises(ValueError, match=leaf):
        jax.jit(tx.update)(bad, state, params)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**good, "extra": jnp.ones(1)}, state, params)
    assert "'extra'" in str(err.value)


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("method,point", [("sgd", "iterate"), ("heavy_ball", "iterate"),
                                          ("nesterov", "iterate"), ("nesterov", "params")])
@pytest.mark.parametrize("beta", [0.5, 0.95])
def test_curve_matches_numpy_covariance_propagation(method, point, beta):
    """tracking_mse_curve (transient + noise + drift, optax-state parameterisation) == the
    mean/covariance propagation of the paper's recurrences in (e_t, e_{t-1}, delta_{t-1})."""
    eigs, T = np.array([1.0, 2.5, 7.0]), 80
    eta, sigma, drift = _eta(method, beta), 0.7, 0.3
    x0 = np.array([1.0, -0.5, 2.0])
    c = tracking_mse_curve(method, eta, beta, jnp.asarray(eigs), sigma, drift, jnp.asarray(x0),
                           T, point=point)
    ref = _np_curve(method, eta, beta, eigs, sigma, drift, x0, T, point)
    np.testing.assert_allclose(np.asarray(c.total), ref, rtol=1e-10)
    # the parts: transient alone (no noise, no drift), noise alone, drift alone
    for part, s, dr, z in (("transient", 0.0, 0.0, x0), ("noise", sigma, 0.0, 0 * x0),
                           ("drift", 0.0, drift, 0 * x0)):
        np.testing.assert_allclose(np.asarray(getattr(c, part)),
                                   _np_curve(method, eta, beta, eigs, s, dr, z, T, point),
                                   rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(float(c.transient[0]), np.sum(x0**2), rtol=1e-14)
    assert float(c.noise[0]) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("method,point", [("sgd", "iterate"), ("heavy_ball", "iterate"),
                                          ("nesterov", "iterate"), ("nesterov", "params")])
def test_stationary_matches_numpy_series(method, point):
    for beta in (0.3, 0.9, 0.99):
        eta = _eta(method, beta)
        dec = tracking_error_decomposition(method, eta, beta, jnp.asarray(EIGS), 1.3, 0.05,
                                           point=point)
        np.testing.assert_allclose(float(dec.noise),
                                   _np_stationary(method, eta, beta, EIGS, 1.3, 0.0, point),
                                   rtol=1e-9)
        np.testing.assert_allclose(float(dec.drift),
                                   _np_stationary(method, eta, beta, EIGS, 0.0, 0.05, point),
                                   rtol=1e-9)
        assert float(stationary_tracking_mse(method, eta, beta, jnp.asarray(EIGS), 1.3, 0.05,
                                             point=point)) == pytest.approx(
            float(dec.noise + dec.drift), rel=1e-14)


def test_sgd_scalar_closed_form():
    """SGD is an AR(1) per direction: noise sigma^2 eta^2 / (1 - (1 - eta h)^2), drift
    (Delta^2/d) / (1 - (1 - eta h)^2)."""
    eta, sigma, drift = 0.05, 0.8, 0.2
    q = 1 - (1 - eta * EIGS) ** 2
    dec = tracking_error_decomposition("sgd", eta, 0.0, jnp.asarray(EIGS), sigma, drift)
    np.testing.assert_allclose(np.asarray(dec.noise_per_direction), sigma**2 * eta**2 / q,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(dec.drift_per_direction), drift**2 / 10 / q, rtol=1e-12)
    assert float(dec.spectral_radius) == pytest.approx(1 - eta * EIGS[0], rel=1e-12)


def test_heavy_ball_noise_part_is_the_ar2_variance():
    """Noise-only heavy ball is the AR(2) e_{t+1} = (1+beta-eta h) e_t - beta e_{t-1} - eta
    sigma eps: gamma_0 = (1 - phi2) s^2 / ((1 + phi2)((1 - phi2)^2 - phi1^2))."""
    for beta in (0.5, 0.9, 0.99):
        eta, sigma = ETA_EFF * (1 - beta), 1.0
        phi1, phi2 = 1 + beta - eta * EIGS, -beta
        ref = (1 - phi2) * (eta * sigma) ** 2 / ((1 + phi2) * ((1 - phi2) ** 2 - phi1**2))
        dec = tracking_error_decomposition("heavy_ball", eta, beta, jnp.asarray(EIGS), sigma, 0.)
        np.testing.assert_allclose(np.asarray(dec.noise_per_direction), ref, rtol=1e-10)
        # the heavy-ball characteristic roots have modulus sqrt(beta) when complex
        assert float(dec.spectral_radius) <= np.sqrt(beta) + 1e-12 or beta < 0.6


def test_unstable_step_gives_inf():
    dec = tracking_error_decomposition("sgd", 0.25, 0.0, jnp.asarray(EIGS), 1.0, 0.1)
    assert float(dec.spectral_radius) > 1 and not bool(dec.stable)
    assert np.isinf(float(dec.total))


def test_steady_state_lag_under_constant_velocity():
    v = np.linspace(-0.02, 0.03, 10)
    target = -v / EIGS / ETA_EFF
    for method, point in (("sgd", "iterate"), ("heavy_ball", "iterate"), ("nesterov", "params")):
        lag = steady_state_lag(method, _eta(method, 0.9), 0.9, jnp.asarray(EIGS), jnp.asarray(v),
                               point=point)
        np.testing.assert_allclose(np.asarray(lag), target, rtol=1e-12)
    lag = steady_state_lag("nesterov", _eta("nesterov", 0.9), 0.9, jnp.asarray(EIGS),
                           jnp.asarray(v))
    np.testing.assert_allclose(np.asarray(lag), target - 0.9 * v, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("method", ["sgd", "heavy_ball", "nesterov"])
def test_noiseless_simulation_is_the_transient(method):
    """sigma = Delta = 0: the simulated ||p_t - theta*_t||^2 is exactly the transient term at
    optax's parameters; the trace entry k is t = k + 1."""
    beta, T = 0.9, 200
    prob = drifting_quadratic(10, 1.0, 10.0, drift="none", noise_std=0.0, dtype=jnp.float64)
    x0 = jnp.linspace(2.0, -1.0, 10)
    tx = tracking_optimizer(method, ETA_EFF, beta, matched_step=True)
    _, err = tracking_run(tx, prob, x0, jax.random.PRNGKey(3), T)
    c = tracking_mse_curve(method, _eta(method, beta), beta, prob.hessian_eigs, 0.0, 0.0, x0, T,
                           point="params")
    np.testing.assert_allclose(np.asarray(err), np.asarray(c.transient[1:]), rtol=1e-10,
                               atol=1e-300)


def test_zero_gradient_start_is_finite_and_bf16_is_kept():
    prob = drifting_quadratic(4, 1.0, 4.0, drift="none", noise_std=0.0, dtype=jnp.float32)
    for dtype in (jnp.float32, jnp.bfloat16):
        tx = tracking_optimizer("nesterov", 0.05, 0.9, matched_step=True)
        (state, err) = tracking_run(tx, prob, jnp.zeros((4,), dtype), jax.random.PRNGKey(0), 5)
        assert state.x.dtype == dtype
        assert np.all(np.asarray(err) == 0.0) and np.all(np.asarray(state.x) == 0)


# --------------------------------------------------------------------------- the problem


def test_drift_kinds():
    d = 10
    walk = drifting_quadratic(d, drift="random_walk", drift_scale=0.3, dtype=jnp.float64)
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    s0 = walk.init()
    inc = jax.vmap(lambda k: walk.step(s0, k).theta_star)(keys)
    # E||increment||^2 = Delta^2 (chi^2_d / d: relative std sqrt(2/(d n)) = 0.35%)
    assert float(jnp.mean(jnp.sum(inc**2, -1))) == pytest.approx(0.09, rel=0.02)
    assert int(walk.step(s0, keys[0]).t) == 1
    lin = drifting_quadratic(d, drift="linear", drift_scale=0.1, dtype=jnp.float64)
    sin = drifting_quadratic(d, drift="sinusoid", drift_scale=0.5, period=40.0,
                             dtype=jnp.float64)
    for prob, ref in ((lin, lambda t: 0.1 * t * np.ones(d) / np.sqrt(d)),
                      (sin, lambda t: 0.5 * np.sin(2 * np.pi * t / 40) * np.ones(d) / np.sqrt(d))):
        s = prob.init(jax.random.PRNGKey(1))
        for t in range(1, 30):
            s = prob.step(s, jax.random.PRNGKey(t))
            np.testing.assert_allclose(np.asarray(s.theta_star), ref(t), atol=1e-13)
    # gradient, value, error
    st = DriftState(jnp.ones(d), jnp.int32(0))
    th = jnp.zeros(d)
    np.testing.assert_allclose(np.asarray(lin.grad(st, th)), -np.asarray(lin.hessian_eigs))
    assert float(lin.value(st, th)) == pytest.approx(0.5 * float(jnp.sum(lin.hessian_eigs)))
    assert float(lin.tracking_error(st, th)) == pytest.approx(d)
    assert float(lin.lipschitz) == 10.0 and float(lin.strong_convexity) == 1.0


@pytest.mark.parametrize("kwargs,name", [
    ({"dim": 0}, "dim"), ({"dim": 2.5}, "dim"), ({"drift": "brownian"}, "drift"),
    ({"mu": 0.0}, "mu"), ({"mu": 2.0, "L": 1.0}, "L"), ({"drift_scale": -0.1}, "drift_scale"),
    ({"noise_std": float("nan")}, "noise_std"), ({"period": 0.0}, "period"),
    ({"direction": np.ones(3)}, "direction"),
])
def test_problem_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        drifting_quadratic(**kwargs)


@pytest.mark.parametrize("call,name", [
    (lambda: tracking_error_decomposition("adam", 0.1, 0.5, EIGS, 1.0, 0.0), "method"),
    (lambda: tracking_error_decomposition("sgd", 0.0, 0.5, EIGS, 1.0, 0.0), "eta"),
    (lambda: tracking_error_decomposition("sgd", 0.1, 1.0, EIGS, 1.0, 0.0), "momentum"),
    (lambda: tracking_error_decomposition("sgd", 0.1, 0.5, EIGS, -1.0, 0.0), "sigma"),
    (lambda: tracking_error_decomposition("sgd", 0.1, 0.5, EIGS, 1.0, -0.1), "drift_std"),
    (lambda: tracking_error_decomposition("sgd", 0.1, 0.5, EIGS, 1.0, 0.1, point="y"), "point"),
    (lambda: tracking_mse_curve("sgd", 0.1, 0.5, EIGS, 1.0, 0.1, EIGS, -1), "num_steps"),
    (lambda: linear_error_dynamics("hb", 0.1, 0.5, EIGS), "method"),
    (lambda: steady_state_lag("sgd", -0.1, 0.5, EIGS, EIGS), "eta"),
    (lambda: tracker("sgd"), "optimizer"),
])
def test_closed_form_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_run_seeds_monte_carlo_matches_closed_form():
    """A small independent Monte Carlo (not the experiment's program): base.run_seeds over 16
    seeds of the heavy ball tracker, time average vs the exact window mean (5 standard errors)."""
    beta, T, burn = 0.9, 3000, 1000
    prob = drifting_quadratic(10, 1.0, 10.0, drift_scale=0.1, noise_std=1.0, dtype=jnp.float64)
    alg = tracker(tracking_optimizer("heavy_ball", ETA_EFF, beta, matched_step=True))
    keys = jax.random.split(jax.random.PRNGKey(7), 16)
    x0 = jnp.zeros(10)
    _, err = base.run_seeds(alg, x0, prob, keys, T,
                            trace_fn=lambda s, st, p: s.info["tracking_error"])
    per_seed = np.asarray(err)[:, burn:].mean(1)
    c = tracking_mse_curve("heavy_ball", _eta("heavy_ball", beta), beta, prob.hessian_eigs, 1.0,
                           0.1, x0, T)
    exact = float(np.mean(np.asarray(c.total)[burn + 1:]))
    z = theory.clt_ztest(per_seed, exact)
    assert abs(z.z) < 5, (per_seed.mean(), exact, z)
    assert abs(per_seed.mean() / exact - 1) < 0.05


# --------------------------------------------------------------------------- claims


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0: every claim passes (fixed seeds: deterministic; margins in the
    claims' sources). The MC ratios also agree with the exact ones."""
    results = quick_results
    runner.check_quick_claims(experiment, results)
    assert experiment.exact_ratio(results, "heavy_ball", "drift|0.99", "drift") == pytest.approx(
        16.37, rel=1e-3)
    np.testing.assert_allclose(results["linear_exact"]["heavy_ball"], results["linear_theory"],
                               rtol=1e-12)
    summary = experiment.summarize(results)
    assert summary["HB exact local drift exponent at 1-beta=0.001"] == pytest.approx(1.0, abs=0.02)
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"decomposition", "drift_amplification", "regime"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (decomposition, drift_amplification and regime) pass the readability check:
    titles, axis labels, legends that say what the shaded bands are, y-ranges fitted to the data,
    tick labels that do not overlap and no series hidden under another drawn in the same style (the
    three decomposition panels each with their legend and y label)."""
    runner.check_quick_figures(experiment, quick_results)
