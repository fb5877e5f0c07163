"""Gradient-variation two-point BCO (paper 29): contract cases, the learners re-derived in
NumPy, the estimators' moments by Monte Carlo, projections and feasibility, the Kaczmarz form
of the hint update, the exact comparator (scipy), errors, claims."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml.online import two_point_bco as tp
from jaxopt_icml.testing import AlgorithmCase


def _stream_problem(key, dtype):
    """A 3-dim stream of 4 losses (built in float32, cast to ``dtype``); x0 inside the ball."""
    b = jax.random.normal(key, (4, 3))
    return (jnp.full((3,), 0.1, dtype),
            tp.QuadraticStream(b.astype(dtype), jnp.asarray(0.2, dtype)))


CONTRACT_CASES = (
    AlgorithmCase(
        "optimistic_two_point_bco", tp.optimistic_two_point_bco,
        {"delta": 0.2, "hint_rate": 0.5}, _stream_problem, stochastic=True,
        invalid=(({"delta": 0.0}, "delta"), ({"shrink": 1.0}, "shrink"),
                 ({"shrink": -0.1}, "shrink"), ({"hint": "bad"}, "hint"),
                 ({"hint_rate": -1.0}, "hint_rate"), ({"hint_rate": 1.5}, "hint_rate"),
                 ({"strongly_convex": 0.0}, "strongly_convex"),
                 ({"diameter": -1.0}, "diameter"), ({"domain": "ball"}, "domain"))),
    AlgorithmCase(
        "one_point_box_blo", tp.one_point_box_blo, {"shrink": 0.3}, _stream_problem,
        stochastic=True,
        invalid=(({"shrink": 0.0}, "shrink"), ({"shrink": 1.0}, "shrink"),
                 ({"hint_rate": -0.1}, "hint_rate"), ({"hint_rate": 2.0}, "hint_rate"),
                 ({"lower": 1.0}, "lower"))),
    AlgorithmCase("optimistic_ogd", tp.optimistic_ogd, {"diameter": 2.0}, _stream_problem,
                  invalid=(({"diameter": 0.0}, "diameter"),
                           ({"strongly_convex": -1.0}, "strongly_convex"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# --------------------------------------------------------------------------- NumPy references


def np_ball(z, r):
    n = np.linalg.norm(z)
    return z if n <= r else z * r / n


def np_shrunk_ball(z, a):
    return np_ball(z, 1.0 - a)


def np_simplex(z, lo=-10.0, hi=10.0):
    """Projection onto the simplex by bisection on the threshold (not the sort-based rule)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(z - mid, 0).sum() > 1 else (lo, mid)
    return np.maximum(z - 0.5 * (lo + hi), 0)


def np_shrunk_simplex(z, a):
    c = 1.0 / z.size
    return c + (1 - a) * (np_simplex(c + (z - c) / (1 - a)) - c)


def _directions(key, steps, like, domain):
    """The u_t base.run's key schedule feeds the update (fold_in(update_key, t))."""
    _, update_key = jax.random.split(key)
    return np.array([np.asarray(tp.tangent_direction(jax.random.fold_in(update_key, t), domain,
                                                     like)) for t in range(steps)])


def np_two_point(b, c, x0, us, delta, a, hint, beta, D, lam, proj):
    """Optimistic OGD with the two-point estimators, from the update equations."""
    k = us.shape[1] if proj is not np_shrunk_simplex else us.shape[1] - 1
    f = lambda x, t: b[t] @ x + c * x @ x
    xh, h, S, xs, losses = x0.copy(), np.zeros_like(x0), 0.0, [], []
    for t, u in enumerate(us):
        eta = D / np.sqrt(1 + S) if lam is None else 1 / (lam * (t + 1))
        m = np.zeros_like(h) if hint == "none" else h
        x = proj(xh - eta * m, a)
        fp, fm = f(x + delta * u, t), f(x - delta * u, t)
        fd = (fp - fm) / (2 * delta)
        if hint == "control_variate":
            g = h + k * (fd - h @ u) * u
            h = h + beta * (g - h)
        else:
            g = k * fd * u
            h = g
        S += np.sum((g - m) ** 2)
        xh = proj(xh - eta * g, a)
        xs.append(x)
        losses.append(0.5 * (fp + fm))
    return np.array(xs), np.array(losses)


def _run(alg, x0, env, steps, key=0):
    return base.run(alg, x0, env, jax.random.PRNGKey(key), steps,
                    trace_fn=lambda s, st, o: (s.x, s.info))


@pytest.mark.parametrize("hint,lam", [("control_variate", None), ("last", None),
                                      ("none", None), ("control_variate", 0.4)])
def test_two_point_ball_matches_numpy(hint, lam):
    rng = np.random.default_rng(0)
    T, d, delta = 12, 5, 1e-2
    b, c = rng.standard_normal((T, d)), 0.3
    x0 = 0.1 * rng.standard_normal(d)
    alg = tp.optimistic_two_point_bco(delta, hint=hint, strongly_convex=lam)
    _, (xs, info) = _run(alg, jnp.asarray(x0), tp.quadratic_stream(b, c), T)
    us = _directions(jax.random.PRNGKey(0), T, jnp.zeros(d), tp.ball_domain())
    ref_x, ref_loss = np_two_point(b, c, x0, us, delta, delta, hint, 1.0 / d, 2.0, lam,
                                 np_shrunk_ball)
    np.testing.assert_allclose(np.asarray(xs), ref_x, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(np.asarray(info["loss"]), ref_loss, rtol=1e-9, atol=1e-11)
    assert np.all(np.asarray(info["oracle_calls"]) == 2)


def test_zero_hint_rate_is_plain_two_point_ogd():
    """beta = 0 keeps h = 0: the control variate run is the hint-free one (the experiment runs
    both as one scan vmapped over beta)."""
    rng = np.random.default_rng(3)
    b = rng.standard_normal((10, 4))
    env, x0 = tp.quadratic_stream(b, 0.1), jnp.zeros(4)
    _, (xs, info) = _run(tp.optimistic_two_point_bco(1e-2, hint_rate=0.0), x0, env, 10)
    _, (ys, ref) = _run(tp.optimistic_two_point_bco(1e-2, hint="none"), x0, env, 10)
    np.testing.assert_allclose(np.asarray(xs), np.asarray(ys), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(info["loss"]), np.asarray(ref["loss"]), rtol=1e-12)


def test_two_point_simplex_matches_numpy():
    rng = np.random.default_rng(1)
    T, d, delta = 10, 4, 1e-2
    b = rng.standard_normal((T, d))
    x0 = np.full(d, 1 / d)
    a = delta * np.sqrt(d * (d - 1))
    alg = tp.optimistic_two_point_bco(delta, domain=tp.simplex_domain(), hint_rate=0.3)
    _, (xs, _) = _run(alg, jnp.asarray(x0), tp.quadratic_stream(b, 0.0), T, key=3)
    us = _directions(jax.random.PRNGKey(3), T, jnp.zeros(d), tp.simplex_domain())
    ref_x, _ = np_two_point(b, 0.0, x0, us, delta, a, "control_variate", 0.3, np.sqrt(2.0),
                            None, np_shrunk_simplex)
    np.testing.assert_allclose(np.asarray(xs), ref_x, rtol=1e-8, atol=1e-10)


def test_full_information_matches_numpy():
    rng = np.random.default_rng(2)
    T, d = 15, 4
    b, c = rng.standard_normal((T, d)), 0.5
    _, (xs, info) = _run(tp.optimistic_ogd(), jnp.zeros(d), tp.quadratic_stream(b, c), T)
    xh, m, S, ref = np.zeros(d), np.zeros(d), 0.0, []
    for t in range(T):
        eta = 2.0 / np.sqrt(1 + S)
        x = np_ball(xh - eta * m, 1.0)
        g = b[t] + 2 * c * x
        S += np.sum((g - m) ** 2)
        xh, m = np_ball(xh - eta * g, 1.0), g
        ref.append(x)
    np.testing.assert_allclose(np.asarray(xs), np.array(ref), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- estimators


def _one_update(alg, state, env, n, seed=0):
    keys = jax.random.split(jax.random.key(seed, impl="unsafe_rbg"), n)
    return jax.jit(jax.vmap(lambda k: alg.update(state, env, k)))(keys)


def test_control_variate_moments():
    """With beta = 1 the new h is g^: E[g^] = grad f(x) (symmetric differences are exact for
    quadratics) and E||g^ - h||^2 = d ||grad f(x) - h||^2, for an arbitrary hint h."""
    rng = np.random.default_rng(4)
    d = 6
    b, c = rng.standard_normal((1, d)), 0.4
    env = tp.quadratic_stream(b, c)
    x = 0.3 * rng.standard_normal(d)
    h = rng.standard_normal(d)
    alg = tp.optimistic_two_point_bco(1e-2, hint_rate=1.0, shrink=0.05)
    z = jnp.zeros(d)
    state = tp.BCOState(jnp.asarray(x), jnp.asarray(h), z, jnp.asarray(0.0),
                        jnp.asarray(0, jnp.int32))
    step, new = _one_update(alg, state, env, 40000)
    grad = b[0] + 2 * c * np.asarray(step.x[0])
    g = np.asarray(new.h)
    np.testing.assert_allclose(g.mean(0), grad, atol=4 * np.sqrt(d) * np.linalg.norm(
        grad - h) / np.sqrt(40000))
    np.testing.assert_allclose(np.asarray(step.info["hint_gap"]).mean(),
                               d * np.sum((grad - h) ** 2), rtol=0.03)


def test_kaczmarz_form_of_the_hint_update():
    """beta = 1/d, linear loss: h_{t+1} - b = (I - u u^T)(h_t - b) exactly."""
    rng = np.random.default_rng(5)
    d = 5
    b = rng.standard_normal((1, d))
    env = tp.quadratic_stream(b, 0.0)
    h = rng.standard_normal(d)
    state = tp.BCOState(jnp.zeros(d), jnp.asarray(h), jnp.zeros(d), jnp.asarray(0.0),
                        jnp.asarray(0, jnp.int32))
    key = jax.random.PRNGKey(7)
    _, new = tp.optimistic_two_point_bco(1e-3).update(state, env, key)
    u = np.asarray(tp.tangent_direction(key, tp.ball_domain(), jnp.zeros(d)))
    e = h - b[0]
    np.testing.assert_allclose(np.asarray(new.h) - b[0], e - u * (u @ e), atol=1e-9)


def test_simplex_directions():
    d = 5
    keys = jax.random.split(jax.random.key(1, impl="unsafe_rbg"), 40000)
    us = np.asarray(jax.vmap(lambda k: tp.tangent_direction(k, tp.simplex_domain(),
                                                            jnp.zeros(d)))(keys))
    np.testing.assert_allclose(us.sum(1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(us, axis=1), 1.0, rtol=1e-12)
    v = np.arange(d, dtype=float)
    est = ((d - 1) * (us @ v))[:, None] * us
    np.testing.assert_allclose(est.mean(0), v - v.mean(), atol=0.06)


@pytest.mark.parametrize("name", ["ball", "box", "simplex"])
def test_shrunk_projection_and_feasible_queries(name):
    d, delta = 4, 0.05
    domain = {"ball": tp.ball_domain(2.0), "box": tp.box_domain(-1.0, 3.0),
              "simplex": tp.simplex_domain()}[name]
    a = delta / domain.inner_radius(d)
    rng = np.random.default_rng(6)
    for i in range(20):
        z = 3 * rng.standard_normal(d)
        x = np.asarray(domain.project(jnp.asarray(z), a))
        if name == "ball":
            ref = np_ball(z, (1 - a) * 2.0)
        elif name == "box":
            ref = np.clip(z, 1 - (1 - a) * 2, 1 + (1 - a) * 2)
        else:
            ref = np_shrunk_simplex(z, a)
        np.testing.assert_allclose(x, ref, atol=1e-9)
        u = np.asarray(tp.tangent_direction(jax.random.PRNGKey(i), domain, jnp.zeros(d)))
        for q in (x + delta * u, x - delta * u):
            if name == "ball":
                assert np.linalg.norm(q) <= 2.0 + 1e-12
            elif name == "box":
                assert np.all(q >= -1 - 1e-12) and np.all(q <= 3 + 1e-12)
            else:
                assert np.all(q >= -1e-12) and abs(q.sum() - 1) < 1e-12


def test_one_point_estimator_unbiased_and_feasible():
    """E[g^] = theta for any hint; the played point lies in the box; the hint shrinks the
    second moment of g^ - h as h approaches theta."""
    rng = np.random.default_rng(8)
    d = 4
    theta = rng.standard_normal((1, d))
    env = tp.quadratic_stream(theta, 0.0)
    alg = tp.one_point_box_blo(0.5, hint_rate=1.0)
    x = 0.4 * rng.uniform(-1, 1, d)
    gaps = []
    for h in (rng.standard_normal(d), theta[0] + 0.01):
        state = tp.BCOState(jnp.asarray(x), jnp.asarray(h), jnp.zeros(d), jnp.asarray(0.0),
                            jnp.asarray(0, jnp.int32))
        step, new = _one_update(alg, state, env, 40000, seed=2)
        y = np.asarray(step.x)
        assert np.all(np.abs(y) <= 1 + 1e-12)
        g = np.asarray(new.h)
        sd = np.sqrt(np.asarray(step.info["hint_gap"]).mean() / 40000)
        np.testing.assert_allclose(g.mean(0), theta[0], atol=5 * sd + 1e-12)
        # the closed-form second moment d sum_i (<theta-h, x>^2/delta^2 + (theta_i-h_i)^2)
        e = theta[0] - h
        centre = np.clip(x - 4.0 * h, -0.5, 0.5)  # eta_0 = D = 2 w sqrt(d) = 4, a = 0.5
        want = d * np.sum(((e @ centre) / 0.5) ** 2 + e ** 2)
        np.testing.assert_allclose(np.asarray(step.info["hint_gap"]).mean(), want, rtol=0.05)
        gaps.append(want)
    assert gaps[1] < 1e-2 * gaps[0]


# --------------------------------------------------------------------------- environment


def test_stream_constants_against_scipy():
    rng = np.random.default_rng(9)
    T, d = 30, 3
    b, c = rng.standard_normal((T, d)), 0.02
    env = tp.quadratic_stream(b, c)
    np.testing.assert_allclose(float(env.gradient_variation()),
                               np.sum(np.diff(b, axis=0) ** 2), rtol=1e-12)
    best, x = env.best_fixed_loss_ball(1.0)
    total = lambda z: b.sum(0) @ z + T * c * z @ z
    res = scipy.optimize.minimize(total, np.zeros(d), method="SLSQP", constraints=[
        {"type": "ineq", "fun": lambda z: 1 - z @ z}], options={"ftol": 1e-14})
    np.testing.assert_allclose(float(best), res.fun, rtol=1e-7)
    best_box, _ = tp.quadratic_stream(b, 0.0).best_fixed_loss_box(-1.0, 1.0)
    np.testing.assert_allclose(float(best_box), -np.abs(b.sum(0)).sum(), rtol=1e-12)
    x = jnp.asarray(rng.standard_normal(d))
    np.testing.assert_allclose(np.asarray(jax.grad(lambda z: env.value(z, 3))(x)),
                               np.asarray(env.grad(x, 3)), rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="delta"):
        tp.optimistic_two_point_bco(-1.0)
    with pytest.raises(ValueError, match="shrink"):
        tp.optimistic_two_point_bco(1.5).init(jnp.zeros(3), None)  # delta / r >= 1
    with pytest.raises(ValueError, match="x0"):
        tp.optimistic_two_point_bco().init(jnp.zeros((2, 2)), None)
    with pytest.raises(ValueError, match="lower"):
        tp.box_domain(1.0, 0.0)
    with pytest.raises(ValueError, match="radius"):
        tp.ball_domain(0.0)
    with pytest.raises(ValueError, match="b must"):
        tp.quadratic_stream(jnp.zeros(3))
    with pytest.raises(ValueError, match="c must"):
        tp.quadratic_stream(jnp.zeros((2, 3)), -1.0)


def test_experiment_padding_runs_the_low_dimensional_problem(experiment):
    """The experiment's claim-2 trick: a k-dim ball padded with zeros to D dims, directions
    masked and k traced. Padded coordinates stay exactly 0 and the hint update is the k-dim
    Kaczmarz step (h - b) <- (I - u u^T)(h - b) with u supported on the first k coordinates."""
    D, k = 7, 3
    mask = jnp.asarray([1.0] * k + [0.0] * (D - k))
    rng = np.random.default_rng(11)
    b = np.zeros((20, D))
    b[:, :k] = rng.standard_normal((20, k))
    env = tp.quadratic_stream(b, 0.05)

    def run(kk):
        alg = tp.optimistic_two_point_bco(1e-3, hint_rate=1.0 / kk,
                                          domain=experiment._masked_ball(mask, kk))
        return base.run(alg, jnp.zeros(D), env, jax.random.PRNGKey(0), 20,
                        trace_fn=lambda s, st, o: (s.x, st.h))[1]

    xs, hs = jax.jit(run)(jnp.asarray(float(k)))
    assert np.all(np.asarray(xs)[:, k:] == 0) and np.all(np.asarray(hs)[:, k:] == 0)
    key = jax.random.PRNGKey(5)
    u = np.asarray(tp.tangent_direction(key, experiment._masked_ball(mask, k), jnp.zeros(D)))
    assert np.all(u[k:] == 0) and abs(np.linalg.norm(u) - 1) < 1e-12
    h = np.zeros(D)
    h[:k] = rng.standard_normal(k)
    lin = tp.quadratic_stream(b[:1], 0.0)
    state = tp.BCOState(jnp.zeros(D), jnp.asarray(h), jnp.zeros(D), jnp.asarray(0.0),
                        jnp.asarray(0, jnp.int32))
    alg = tp.optimistic_two_point_bco(1e-3, domain=experiment._masked_ball(mask, k),
                                      hint_rate=1 / k)
    _, new = alg.update(state, lin, key)
    e = h - b[0]
    np.testing.assert_allclose(np.asarray(new.h) - b[0], e - u * (u @ e), atol=1e-9)


# --------------------------------------------------------------------------- claims


def test_optimistic_ogd_rejects_a_gradient_of_another_shape():
    """A (4,) gradient for a point in R^3 raises a ValueError naming the shapes (a broadcasting
    TypeError leaked from the update)."""

    class _Wrong:
        def grad(self, x, t):
            del t
            return jnp.ones(x.shape[0] + 1, x.dtype)

        def value(self, x, t):
            del t
            return jnp.sum(x)

    alg, key = tp.optimistic_ogd(), jax.random.key(0)
    with pytest.raises(ValueError, match=r"optimistic_ogd: oracle\.grad\(x\) and x disagree "
                       r"at leaf .*shape \(4,\) vs \(3,\)"):
        alg.update(alg.init(jnp.zeros(3), key), _Wrong(), key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """Every claim at QUICK size (key 0); the documented non-reproductions (KNOWN_FAILING)
    must still fail, the others pass."""
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (zero_drift, adaptivity, dimension and game) pass the readability check:
    titles, axis labels, legends that say what the shaded bands are, y-ranges fitted to the data,
    tick labels that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
