"""Constrained linear BAI (paper 23): contract case; the alternative pieces against scipy
(SLSQP on the definition of each piece of Alt); T*_rel against scipy's epigraph solve; the
GLR stop in the state against a NumPy first crossing; sampling-rule invariants (round robin,
two-coordinate steps, forced exploration, the Kiefer-Wolfowitz bound for the G-optimal design);
the feedback law; errors; claims."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml.online import linear_bai as lb
from jaxopt_icml.online import linear_bai_baselines as lbb
from jaxopt_icml.testing import AlgorithmCase


def _small_problem(key, dtype):
    """3 arms, 1 covariate, d = 2 (round robin ends at the matrix's third step)."""
    del key
    env = lb.constrained_instance(0, num_arms=3, num_covariates=1, dim=2)
    env_dtype = jnp.float32 if dtype == jnp.bfloat16 else dtype
    env = jax.tree.map(lambda a: a.astype(env_dtype), env)
    return lb.initial_estimate(env, dtype), env


CONTRACT_CASES = (
    AlgorithmCase(
        "constrained_linbai_dual", lb.constrained_linbai_dual,
        {"delta": 0.1, "dual_lr": 0.2, "qp_steps": 3, "ridge": 0.1}, _small_problem,
        stochastic=True,
        invalid=(({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"),
                 ({"dual_lr": -1.0}, "dual_lr"), ({"qp_steps": -1}, "qp_steps"),
                 ({"ridge": 0.0}, "ridge"), ({"threshold": "kl"}, "threshold"),
                 ({"forced_exploration": 1}, "forced_exploration"))),
    AlgorithmCase(
        "constrained_linbai_track_and_stop", lbb.constrained_linbai_track_and_stop,
        {"delta": 0.1, "inner_steps": 3, "qp_steps": 3, "ridge": 0.1}, _small_problem,
        stochastic=True, invalid=(({"inner_steps": 0}, "inner_steps"),)),
    # the experiment's baselines (uniform in claim 2; G-optimal and LinGame reported beside
    # it). The G-optimal and uniform designs ignore theta: their sampling is the same for
    # every seed, the observed rewards (hence the estimate and the stop) are not
    AlgorithmCase(
        "constrained_linbai_g_optimal", lbb.constrained_linbai_g_optimal,
        {"delta": 0.1, "qp_steps": 3, "ridge": 0.1}, _small_problem, stochastic=True,
        invalid=(({"delta": 0.0}, "delta"), ({"ridge": -1.0}, "ridge"))),
    AlgorithmCase(
        "constrained_linbai_uniform", lbb.constrained_linbai_uniform,
        {"delta": 0.1, "qp_steps": 3, "ridge": 0.1}, _small_problem, stochastic=True,
        invalid=(({"delta": -0.5}, "delta"), ({"threshold": "kl"}, "threshold"))),
    AlgorithmCase(
        "constrained_linbai_lingame", lbb.constrained_linbai_lingame,
        {"delta": 0.1, "qp_steps": 3, "ridge": 0.1}, _small_problem, stochastic=True,
        invalid=(({"delta": 1.0}, "delta"), ({"qp_steps": -1}, "qp_steps"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


def _np(env):
    return tuple(np.asarray(v, np.float64) for v in (env.features, env.theta, env.thresholds,
                                                      env.noise))


def _np_best(X, th, tau):
    mu = np.einsum("kcd,md->mkc", X, th)
    feas = np.all(mu[1:] <= tau[:, None, None], axis=(0, 2))
    return int(np.argmax(np.where(feas, mu[0].mean(1), -np.inf))) if feas.any() else -1


def _scipy_piece(X, th, tau, sig, V, cons_fn):
    """min (1/2) sum_m ||th_m - lam_m||^2_V / sig_m^2 subject to cons_fn(lam) >= 0 (SLSQP,
    several starts): the definition of a piece of Alt, written without its closed forms."""
    shape = th.shape
    obj = lambda z: 0.5 * sum((th[m] - z.reshape(shape)[m]) @ V @ (th[m] - z.reshape(shape)[m])
                              / sig[m] ** 2 for m in range(shape[0]))
    best = np.inf
    rng = np.random.default_rng(0)
    for s in range(2):  # a convex problem: the second start only guards SLSQP
        z0 = th.ravel() + (0 if s == 0 else rng.standard_normal(th.size))
        r = minimize(obj, z0, constraints=[{"type": "ineq",
                                            "fun": lambda z: cons_fn(z.reshape(shape))}],
                     method="SLSQP", options={"maxiter": 1000, "ftol": 1e-14})
        if r.success and np.all(cons_fn(r.x.reshape(shape)) >= -1e-7):
            best = min(best, r.fun)
    return best


def _pieces_reference(X, th, tau, sig, V):
    """Every piece by scipy, in the module's order (a* violates (m, c); then b = 0..K-1)."""
    K, C, _ = X.shape
    M = tau.shape[0]
    a = _np_best(X, th, tau)
    out = []
    for m in range(1, M + 1):
        for c in range(C):
            out.append(_scipy_piece(X, th, tau, sig, V,
                                    lambda lam, m=m, c=c: np.array([lam[m] @ X[a, c]
                                                                    - tau[m - 1]])))
    for b in range(K):
        if b == a:
            out.append(np.inf)
            continue

        def cons(lam, b=b):
            better = [lam[0] @ (X[b].mean(0) - X[a].mean(0))]
            feasible = [tau[m - 1] - lam[m] @ X[b, c] for m in range(1, M + 1)
                        for c in range(C)]
            return np.array(better + feasible)

        out.append(_scipy_piece(X, th, tau, sig, V, cons))
    return np.array(out)


def test_pieces_match_scipy_definition():
    """Half-space pieces in closed form and the exact QP pieces (500 dual steps) equal scipy's
    solve of each piece's definition; with 2 dual steps they are lower bounds, the relaxed
    pieces lower still, and on this instance some QP has several active constraints."""
    env = lb.constrained_instance(8, num_arms=4, num_covariates=3, dim=3, dtype=jnp.float64,
                                  noise=0.7)
    X, th, tau, sig = _np(env)
    B = np.random.default_rng(1).standard_normal((3, 3))
    V = B @ B.T + 0.5 * np.eye(3)
    ref = _pieces_reference(X, th, tau, sig, V)
    vinv = jnp.asarray(np.linalg.inv(V))
    args = (env.features, env.thresholds, env.noise, env.theta, vinv)
    exact = np.asarray(lb.alternative_pieces(*args, exact=True, qp_steps=500)[0])
    few = np.asarray(lb.alternative_pieces(*args, exact=True, qp_steps=2)[0])
    relaxed, _, valid, a_hat = lb.alternative_pieces(*args)
    relaxed = np.asarray(relaxed)
    assert int(a_hat) == _np_best(X, th, tau)
    np.testing.assert_array_equal(np.asarray(valid), np.isfinite(ref))
    np.testing.assert_allclose(exact, ref, rtol=1e-5)
    fin = np.isfinite(ref)
    assert np.all(relaxed[fin] <= few[fin] + 1e-12) and np.all(few[fin] <= ref[fin] + 1e-9)
    assert np.max(ref[fin] - relaxed[fin]) > 1e-3  # a QP where one constraint is not enough


def test_piece_minimisers_and_gradients():
    """The returned minimiser D reproduces each value, ``(1/2) sum_m D_m^T V D_m / s_m^2``, and
    the envelope gradient used by the learners equals a finite difference of the relaxed
    piece values in w."""
    env = lb.constrained_instance(2, dtype=jnp.float64)
    X, th, tau, sig = _np(env)
    flat = X.reshape(-1, X.shape[-1])
    w = np.random.default_rng(0).dirichlet(np.ones(flat.shape[0]))
    V = flat.T @ (w[:, None] * flat)
    vals, deltas, valid, _ = lb.alternative_pieces(env.features, env.thresholds, env.noise,
                                                   env.theta, jnp.asarray(np.linalg.inv(V)))
    vals, deltas = np.asarray(vals), np.asarray(deltas)
    quad = 0.5 * np.einsum("jmd,de,jme->j", deltas, V, deltas / sig[None, :, None] ** 2)
    np.testing.assert_allclose(quad[np.asarray(valid)], vals[np.asarray(valid)], rtol=1e-10)
    grads = np.asarray(lb._piece_grads(jnp.asarray(flat), env.noise, jnp.asarray(deltas)))

    def values(w):
        V = flat.T @ (w[:, None] * flat)
        return np.asarray(lb.alternative_pieces(env.features, env.thresholds, env.noise,
                                                env.theta, jnp.asarray(np.linalg.inv(V)))[0])

    eps = 1e-6
    for k in (0, 5, 11):
        e = np.zeros_like(w)
        e[k] = eps
        with np.errstate(invalid="ignore"):  # inf - inf on the invalid piece (masked below)
            fd = (values(w + e) - values(w - e)) / (2 * eps)
        ok = np.asarray(valid)
        np.testing.assert_allclose(grads[ok, k], fd[ok], rtol=1e-5, atol=1e-9)


def _np_relaxed_pieces(X, th, tau, sig, w):
    """The relaxed pieces re-derived in NumPy (closed forms g^2 / (2 s^2 x^T V^-1 x))."""
    K, C, d = X.shape
    Vi = np.linalg.inv(np.einsum("k,kd,ke->de", w, X.reshape(-1, d), X.reshape(-1, d)))
    mu = np.einsum("kcd,md->mkc", X, th)
    a = _np_best(X, th, tau)
    cost = lambda g, x, s: 0.0 if g <= 0 else g * g / (2 * s * s * (x @ Vi @ x))
    out = [cost(tau[m - 1] - mu[m, a, c], X[a, c], sig[m])
           for m in range(1, th.shape[0]) for c in range(C)]
    for b in range(K):
        if b != a:
            x = X[a].mean(0) - X[b].mean(0)
            v = cost(x @ th[0], x, sig[0])
            for m in range(1, th.shape[0]):
                c = int(np.argmax(mu[m, b] - tau[m - 1]))
                v += cost(mu[m, b, c] - tau[m - 1], X[b, c], sig[m])
            out.append(v)
    return np.array(out)


def _scipy_tstar(env):
    """SLSQP on the epigraph form max z s.t. f_j(w) >= z, sum w = 1 (two starts)."""
    X, th, tau, sig = _np(env)
    n = X.shape[0] * X.shape[1]
    pieces = lambda w: _np_relaxed_pieces(X, th, tau, sig, np.maximum(w, 1e-9))
    best = -np.inf
    rng = np.random.default_rng(0)
    for trial in range(2):
        w0 = np.full(n, 1.0 / n) if trial == 0 else rng.dirichlet(np.ones(n))
        z0 = np.r_[w0, pieces(w0).min()]
        cons = [{"type": "eq", "fun": lambda z: z[:n].sum() - 1},
                {"type": "ineq", "fun": lambda z: pieces(z[:n]) - z[n]}]
        r = minimize(lambda z: -z[n], z0, constraints=cons, method="SLSQP",
                     bounds=[(1e-9, 1)] * n + [(0, None)],
                     options={"maxiter": 500, "ftol": 1e-13})
        best = max(best, r.x[n])
    return 1 / best


@pytest.mark.parametrize("seed", [0, 3])
def test_relaxed_characteristic_time_matches_scipy(seed):
    """Projected supergradient ascent == SLSQP on the epigraph form max t s.t. f_j(w) >= t."""
    env = lb.constrained_instance(seed, dtype=jnp.float64)
    t_star, w_star = lb.relaxed_characteristic_time(env, iters=5000)
    np.testing.assert_allclose(float(t_star), _scipy_tstar(env), rtol=1e-3)
    X, th, tau, sig = _np(env)
    w = np.random.default_rng(seed).dirichlet(np.ones(18))
    vinv = jnp.asarray(np.linalg.inv(np.einsum("k,kd,ke->de", w, X.reshape(18, -1),
                                                X.reshape(18, -1))))
    ours = np.asarray(lb.alternative_pieces(env.features, env.thresholds, env.noise, env.theta,
                                            vinv)[0])
    np.testing.assert_allclose(ours[np.isfinite(ours)],
                               _np_relaxed_pieces(X, th, tau, sig, w), rtol=1e-10)
    assert abs(float(jnp.sum(w_star)) - 1) < 1e-9 and float(jnp.min(w_star)) >= 0


def _trace(step, state, oracle):
    del oracle
    return {"info": step.info, "w": step.x.allocation, "theta": step.x.theta,
            "counts": state.counts}


@pytest.fixture(scope="module")
def dual_run():
    with jax.enable_x64(True):
        env = lb.constrained_instance(0, dtype=jnp.float64)
        alg = lb.constrained_linbai_dual(0.2)
        keys = jax.random.split(jax.random.key(3, impl="unsafe_rbg"), 4)
        state, tr = base.run_seeds(alg, lb.initial_estimate(env), env, keys, 700,
                                   trace_fn=_trace)
        return env, jax.tree.map(np.asarray, state), jax.tree.map(np.asarray, tr)


def test_stop_in_state_equals_first_crossing(dual_run):
    """tau and the answer frozen in the state are the first t >= KC with Z_t >= beta(t, delta)
    (NumPy threshold) and the plug-in answer there; stopped flags switch on once."""
    env, state, tr = dual_run
    info = tr["info"]
    t = np.arange(1, 701)
    beta = np.log((1 + np.log(t)) / 0.2)
    np.testing.assert_allclose(info["beta"][0], beta, rtol=1e-12)
    for s in range(4):
        fire = (info["glr"][s] >= beta) & (t >= 18)
        assert fire.any(), "the test never fired in 700 samples"
        i = int(np.argmax(fire))
        assert int(state.tau[s]) == i + 1
        assert int(state.answer[s]) == int(info["plug_in"][s, i])
        np.testing.assert_array_equal(info["stopped"][s], t >= i + 1)
    assert np.all(state.answer == int(env.best_arm()))


def test_sampling_invariants(dual_run):
    """Round robin over the 18 pairs first; afterwards every allocation step moves mass between
    at most two coordinates and stays on the simplex; forced exploration keeps min_k N_k >=
    sqrt(t) - KC/2 - 1; the reported counts match the traced actions."""
    _, state, tr = dual_run
    acts = tr["info"]["action"]
    np.testing.assert_array_equal(acts[:, :18], np.tile(np.arange(18), (4, 1)))
    w = tr["w"].reshape(4, 700, -1)
    changed = np.abs(np.diff(w, axis=1)) > 0
    assert changed.sum(-1).max() <= 2 and changed.any()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    assert w.min() >= 0
    t = np.arange(1, 701)
    assert np.all(tr["counts"].min(-1) >= np.sqrt(t) - 9 - 1)
    counts = np.stack([np.bincount(a, minlength=18) for a in acts])
    np.testing.assert_array_equal(counts, state.counts)


def test_theta_hat_is_ridge_least_squares():
    """theta_hat = (sum x x^T + ridge I)^-1 sum y x, with the observations re-drawn from the
    oracle with the same keys (base.run's key schedule)."""
    env = lb.constrained_instance(1, dtype=jnp.float64)
    alg = lbb.constrained_linbai_uniform(0.1, ridge=0.5)
    key = jax.random.PRNGKey(7)
    _, tr = base.run(alg, lb.initial_estimate(env), env, key, 40, trace_fn=_trace)
    _, update_key = jax.random.split(key)
    flat = np.asarray(env.features).reshape(18, -1)
    acts = np.asarray(tr["info"]["action"])
    ys = np.stack([np.asarray(env.feedback(int(a), jax.random.fold_in(update_key, i)))
                   for i, a in enumerate(acts)])
    Xs = flat[acts]
    ref = np.linalg.solve(Xs.T @ Xs + 0.5 * np.eye(4), Xs.T @ ys).T
    np.testing.assert_allclose(np.asarray(tr["theta"])[-1], ref, rtol=1e-10, atol=1e-12)


def test_uniform_and_g_optimal_designs():
    """Uniform sampling is a round robin; the G-optimal learner's design satisfies the
    Kiefer-Wolfowitz bound max_k x_k^T V(w)^-1 x_k <= d (1 + 0.02) after 400 updates."""
    env = lb.constrained_instance(4, dtype=jnp.float64)
    x0 = lb.initial_estimate(env)
    _, tr = base.run(lbb.constrained_linbai_uniform(0.1), x0, env, jax.random.PRNGKey(0), 90,
                     trace_fn=_trace)
    np.testing.assert_array_equal(np.asarray(tr["info"]["action"]), np.arange(90) % 18)
    _, tr = base.run(lbb.constrained_linbai_g_optimal(0.1), x0, env, jax.random.PRNGKey(0), 400,
                     trace_fn=_trace)
    w = np.asarray(tr["w"])[-1].ravel()
    flat = np.asarray(env.features).reshape(18, -1)
    lev = np.einsum("kd,de,ke->k", flat, np.linalg.inv(flat.T @ (w[:, None] * flat)), flat)
    assert lev.max() <= 4 * 1.02


def test_lingame_is_adahedge():
    """The LinGame baseline's weights are AdaHedge's, re-derived in NumPy from the traced
    cumulative losses: eta_t = ln(n) / Delta_t, Delta_t += w.l - mix(l), w ~ exp(-eta L)."""
    env = lb.constrained_instance(2, dtype=jnp.float64)
    trace = lambda s, st, o: (st.allocation, st.losses, st.mix_gap)
    _, (w, L, gap) = base.run(lbb.constrained_linbai_lingame(0.1), lb.initial_estimate(env), env,
                              jax.random.PRNGKey(4), 60, trace_fn=trace)
    w, L, gap = (np.asarray(v) for v in (w, L, gap))
    n = 18
    assert np.all(L[:17] == 0) and gap[17] > 0  # updates start when t reaches K C
    for t in range(18, 60):
        loss = L[t] - L[t - 1]
        if gap[t - 1] == 0:
            mix = loss.min()
        else:
            eta = np.log(n) / gap[t - 1]
            mix = -np.log(np.sum(w[t - 1] * np.exp(-eta * loss))) / eta
        np.testing.assert_allclose(gap[t] - gap[t - 1], w[t - 1] @ loss - mix, rtol=1e-8,
                                   atol=1e-12)
        p = np.exp(-np.log(n) / gap[t] * (L[t] - L[t].min()))
        np.testing.assert_allclose(w[t], p / p.sum(), rtol=1e-8, atol=1e-14)
    assert np.all(L[18:] <= 0) and np.all(L[18:].min(-1) < 0)


def test_feedback_law_and_best_arm():
    env = lb.constrained_instance(5, dtype=jnp.float64, noise=0.5)
    keys = jax.random.split(jax.random.key(0, impl="unsafe_rbg"), 20000)
    ys = np.asarray(jax.vmap(lambda k: env.feedback(7, k))(keys))
    x = np.asarray(env.features)[7 // 3, 7 % 3]
    np.testing.assert_allclose(ys.mean(0), np.asarray(env.theta) @ x, atol=0.02)
    np.testing.assert_allclose(np.cov(ys.T), 0.25 * np.eye(2), atol=0.01)
    X, th, tau, _ = _np(env)
    assert int(env.best_arm()) == _np_best(X, th, tau)
    none = env._replace(thresholds=env.thresholds - 100.0)
    assert int(none.best_arm()) == -1
    vals, _, valid, a_hat = lb.alternative_pieces(none.features, none.thresholds, none.noise,
                                                  none.theta, jnp.eye(4))
    assert int(a_hat) == -1 and np.all(np.asarray(valid)[3:]) and not np.any(valid[:3])


def test_instance_margins():
    env = lb.constrained_instance(6, dtype=jnp.float64)
    X, th, tau, _ = _np(env)
    mu = np.einsum("kcd,md->mkc", X, th)
    s, m0 = mu[1].max(1), mu[0].mean(1)
    feas = s <= tau[0]
    a = _np_best(X, th, tau)
    order = np.argsort(-m0)
    np.testing.assert_allclose(s[order[0]] - tau[0], 0.2, rtol=1e-12)
    runner_up = max(m0[b] for b in range(6) if feas[b] and b != a)
    np.testing.assert_allclose(m0[a] - runner_up, 0.2, rtol=1e-12)
    assert np.all(tau[0] - s[feas] >= 0.2 - 1e-12) and np.all(s[~feas] - tau[0] >= 0.2 - 1e-12)


def test_errors():
    with pytest.raises(ValueError, match="delta"):
        lb.constrained_linbai_dual(1.5)
    with pytest.raises(ValueError, match="inner_steps"):
        lbb.constrained_linbai_track_and_stop(0.1, inner_steps=0)
    with pytest.raises(ValueError, match="stopping"):
        lbb.constrained_linbai_uniform(0.1, stopping="yes")
    with pytest.raises(ValueError, match="kind"):
        lb.stopping_threshold(10, 0.1, kind="bad")
    with pytest.raises(ValueError, match="iters"):
        lb.relaxed_characteristic_time(lb.constrained_instance(0), iters=0)
    with pytest.raises(ValueError, match="num_arms"):
        lb.constrained_instance(0, num_arms=1)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """Every claim at QUICK size (fixed key 0); see the experiment's docstring for the
    measured values and KNOWN_FAILING."""
    # exactly the documented misses fail (one that starts passing is noticed too)
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (efficiency and allocation) pass the readability check: titles, axis
    labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick labels
    that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
