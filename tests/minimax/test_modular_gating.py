"""Robust gate (paper 37): contract case; Blahut-Arimoto against closed forms and a SciPy
brute force; the capacity identity (min over constant gates of the worst KL = max JSD = C);
the primal-dual update against a NumPy re-derivation; the exponentiated-gradient step; the
log-space normalizer; the sampled batches' unbiasedness; the KKT multiplier; the one-expert
router; the monolithic special cases of the experiment's baselines; errors; claims."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import optimize

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml.minimax import gate_routing as gr
from jaxopt_icml.minimax import robust_gate as rg
from jaxopt_icml.testing import AlgorithmCase

_CENTERS = (-2.0, 0.0, 2.0)


def _contract_gate(params, xs):
    return rg.rbf_log_gate(jnp.asarray(_CENTERS, params["w"].dtype), 1.5, 3.0)(params, xs)


def _contract_problem(key, dtype):
    """Two domains and two misspecified experts on a 41-point grid, sampled batches."""
    del key
    grid = jnp.linspace(-5.0, 5.0, 41, dtype=jnp.float32)
    logd = rg.grid_log_gaussian(grid, jnp.array([-1.0, 1.5]), jnp.ones(2))
    loge = rg.grid_log_gaussian(grid, jnp.array([-0.7, 1.2]), jnp.array([0.9, 1.1]))
    prob = rg.GridMixture(grid, logd, loge, loge, batch_size=4, norm_batch_size=3)
    prob = jax.tree.map(lambda a: a.astype(dtype), prob)
    x0 = {"w": jnp.full((3, 2), 0.1, dtype), "b": jnp.full((2,), -0.5, dtype)}
    return x0, prob


def _make_contract(**kw):
    return rg.robust_gate_primal_dual(_contract_gate, 2, optax.adam(0.05), **kw)


CONTRACT_CASES = (
    AlgorithmCase(
        "robust_gate_primal_dual", _make_contract,
        {"lr_mix": 0.1, "lr_norm": 0.1, "normalization": "lagrange", "averaging_power": 1.0},
        _contract_problem, stochastic=True,
        invalid=(({"lr_mix": -0.1}, "lr_mix"), ({"lr_norm": -1.0}, "lr_norm"),
                 ({"normalization": "clip"}, "normalization"), ({"loss_clip": 0.0}, "loss_clip"),
                 ({"averaging_power": -1.0}, "averaging_power"), ({"penalty": -1.0}, "penalty"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# --------------------------------------------------------------------------- Blahut-Arimoto


def _np_mutual_information(lam, P):
    q = lam @ P
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * np.log(P / q[None]), 0.0)
    return float(lam @ terms.sum(1))


def _np_worst_kl(a, P):
    q = a @ P
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.max(np.where(P > 0, P * np.log(P / q[None]), 0.0).sum(1)))


@pytest.mark.parametrize("p", [0.0, 0.05, 0.2, 0.5])
def test_capacity_binary_symmetric_channel(p):
    """BSC: C = log 2 - H(p) nats (= 1 - H_2(p) bits), uniform input."""
    P = np.array([[1 - p, p], [p, 1 - p]])
    h = -sum(v * np.log(v) for v in (p, 1 - p) if v > 0)
    r = rg.capacity_blahut_arimoto(jnp.asarray(P), tol=1e-12)
    np.testing.assert_allclose(float(r.capacity), np.log(2.0) - h, atol=1e-10)
    np.testing.assert_allclose(float(r.capacity) / np.log(2.0), 1 - h / np.log(2.0), atol=1e-10)
    np.testing.assert_allclose(np.asarray(r.input_dist), [0.5, 0.5], atol=1e-8)
    assert float(r.upper_bound) - float(r.capacity) <= 1e-12


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_capacity_z_channel(p):
    """Z-channel (input 1 flips to 0 with probability p): C = log(1 + (1-p) p^(p/(1-p)))."""
    P = np.array([[1.0, 0.0], [p, 1 - p]])
    r = rg.capacity_blahut_arimoto(jnp.asarray(P), tol=1e-13)
    np.testing.assert_allclose(float(r.capacity), np.log(1 + (1 - p) * p ** (p / (1 - p))),
                               atol=1e-9)


def test_capacity_identical_rows_is_zero():
    row = np.array([0.1, 0.2, 0.3, 0.4])
    r = rg.capacity_blahut_arimoto(jnp.asarray(np.stack([row] * 3)))
    assert abs(float(r.capacity)) < 1e-12 and abs(float(r.upper_bound)) < 1e-12
    assert int(r.num_iters) == 0


def _random_channel(seed, k=3, n=5):
    rng = np.random.default_rng(seed)
    P = rng.gamma(0.7, size=(k, n))
    P[0, 0] = 0.0  # a structural zero (0 log 0 = 0)
    return P / P.sum(1, keepdims=True)


@pytest.mark.parametrize("seed", [0, 1])
def test_capacity_identity_against_scipy(seed):
    """On a random 3x5 channel, SciPy (SLSQP) finds: max_lam I(lam) (= max generalized JSD) and
    min_a max_j KL(P_j || a^T P) (epigraph form); both equal the Blahut-Arimoto capacity, and
    the minimizing gate a* equals the capacity-achieving input (rows linearly independent)."""
    P = _random_channel(seed)
    r = rg.capacity_blahut_arimoto(jnp.asarray(P), tol=1e-13)
    simplex = {"type": "eq", "fun": lambda v: np.sum(v[:3]) - 1.0}
    best = max((optimize.minimize(lambda lam: -_np_mutual_information(lam, P), x0,
                                  bounds=[(0, 1)] * 3, constraints=[simplex], method="SLSQP",
                                  options={"ftol": 1e-14, "maxiter": 500})
                for x0 in (np.ones(3) / 3, np.array([0.6, 0.2, 0.2]))), key=lambda o: -o.fun)
    np.testing.assert_allclose(-best.fun, float(r.capacity), atol=1e-7)

    def kl_rows(v):
        q = v[:3] @ P
        return np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0) / q[None]), 0.0).sum(1)

    cons = [simplex, {"type": "ineq", "fun": lambda v: v[3] - kl_rows(v)}]
    v0 = np.r_[np.ones(3) / 3, 5.0]
    mm = optimize.minimize(lambda v: v[3], v0, bounds=[(1e-9, 1)] * 3 + [(0, None)],
                           constraints=cons, method="SLSQP",
                           options={"ftol": 1e-14, "maxiter": 1000})
    np.testing.assert_allclose(mm.fun, float(r.capacity), atol=1e-6)
    np.testing.assert_allclose(_np_worst_kl(np.asarray(r.input_dist), P), float(r.capacity),
                               atol=1e-9)
    np.testing.assert_allclose(mm.x[:3], np.asarray(r.input_dist), atol=1e-3)


def test_capacity_identity_primal_dual_constant_gate():
    """Perfect experts, constant gates, exact batches: the averaged gate's worst-case KL
    reaches the Blahut-Arimoto capacity and the averaged lam the capacity-achieving input."""
    grid = jnp.linspace(-7.0, 7.0, 201)
    logd = rg.grid_log_gaussian(grid, jnp.array([-2.0, 0.0, 2.5]), jnp.ones(3))
    prob = rg.GridMixture(grid, logd, logd, logd)
    cap = rg.capacity_blahut_arimoto(jnp.exp(logd), tol=1e-13)
    alg = rg.robust_gate_primal_dual(rg.constant_log_gate, 3, optax.adam(0.02), lr_mix=0.1,
                                     normalization="divide", averaging_power=3.0)
    state, _ = base.run(alg, {"b": jnp.array([0.5, -1.0, 0.2])}, prob,
                        jax.random.PRNGKey(0), 1500, trace_fn=lambda s, st, o: ())
    logq, _ = rg.grid_log_model(rg.constant_log_gate, state.avg_params, prob)
    worst = float(jnp.max(rg.domain_kl(logd, logq)))
    assert abs(worst - float(cap.capacity)) < 1e-4
    np.testing.assert_allclose(np.asarray(state.avg_lam), np.asarray(cap.input_dist), atol=2e-3)
    np.testing.assert_allclose(np.asarray(jax.nn.softmax(state.avg_params["b"])),
                               np.asarray(cap.input_dist), atol=2e-3)


# --------------------------------------------------------------------------- building blocks


def test_exponentiated_gradient_step_matches_numpy():
    rng = np.random.default_rng(3)
    lam = rng.dirichlet(np.ones(4))
    L = rng.normal(size=4) * 3
    want = lam * np.exp(0.7 * L)
    want /= want.sum()
    got = rg.exponentiated_gradient_step(jnp.asarray(lam), jnp.asarray(L), 0.7)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    # huge losses: the log-space form stays finite and puts the mass on the argmax
    big = rg.exponentiated_gradient_step(jnp.asarray(lam, jnp.float32),
                                         jnp.asarray([1e4, 0.0, -1e4, 2e4], jnp.float32), 1.0)
    np.testing.assert_allclose(np.asarray(big), [0, 0, 0, 1], atol=1e-6)


def test_log_normalizer_log_space_vs_direct():
    rng = np.random.default_rng(4)
    h = rng.normal(size=(3, 7)) * 2
    w = rng.dirichlet(np.ones(7), size=3)
    direct = np.log(np.sum(w * np.exp(h)))
    got = rg.log_normalizer(jnp.asarray(h), jnp.asarray(np.log(w)))
    np.testing.assert_allclose(float(got), direct, rtol=1e-12)
    # float32, gates e^100: the direct sum overflows, the log-space value is exact
    h32 = jnp.asarray(h + 100.0, jnp.float32)
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.log(np.sum(w * np.exp(np.asarray(h32)))))
    got32 = rg.log_normalizer(h32, jnp.asarray(np.log(w), jnp.float32))
    np.testing.assert_allclose(float(got32), direct + 100.0, rtol=1e-6)


def test_rbf_gate_and_grid_gaussian():
    centers = jnp.array([-1.0, 1.0])
    params = {"w": jnp.array([[2.0, -1.0], [0.5, 30.0]]), "b": jnp.array([0.1, -0.2])}
    x = jnp.array([-1.0, 0.3])
    phi = np.exp(-0.5 * ((np.asarray(x)[:, None] - np.array([-1.0, 1.0])[None]) / 0.8) ** 2)
    h = phi @ np.asarray(params["w"]) + np.array([0.1, -0.2])
    np.testing.assert_allclose(np.asarray(rg.rbf_log_gate(centers, 0.8)(params, x)), h,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(rg.rbf_log_gate(centers, 0.8, 2.0)(params, x)),
                               2.0 * np.tanh(h / 2.0), rtol=1e-12)
    grid = jnp.linspace(-30.0, 30.0, 61)
    lg = np.asarray(rg.grid_log_gaussian(grid, jnp.array([0.0, 1.0]), jnp.array([1.0, 0.5])))
    assert np.all(np.isfinite(lg))  # far tails in log space, no underflow
    np.testing.assert_allclose(np.exp(lg).sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(lg[0, 30] - lg[0, 32], 2.0, rtol=1e-12)


def _small_problem(batch=0, norm=0):
    grid = jnp.linspace(-6.0, 6.0, 61)
    logd = rg.grid_log_gaussian(grid, jnp.array([-2.0, 0.5, 2.0]), jnp.ones(3))
    loge = rg.grid_log_gaussian(grid, jnp.array([-1.7, 0.8, 2.2]), jnp.array([0.9, 1.2, 1.0]))
    return rg.GridMixture(grid, logd, loge, loge, batch, norm)


def test_sampled_batches_are_unbiased():
    """E[exact-weight batch] identities: the sampled per-domain losses average to the exact
    proxy KL and exp(log Z^) to the exact Z (Monte Carlo, 4000 batches)."""
    exact, sampled = _small_problem(), _small_problem(16, 16)
    gate = rg.rbf_log_gate(jnp.linspace(-5.0, 5.0, 6), 2.0)
    params = {"w": jax.random.normal(jax.random.PRNGKey(1), (6, 3)) * 0.5, "b": jnp.zeros(3)}

    def losses(batch):
        h = gate(params, batch.x.reshape(-1)).reshape(batch.log_experts.shape)
        logpg = rg.gated_log_density(h, batch.log_experts)
        L = jnp.sum(jnp.exp(batch.log_weights) * (batch.log_reference - logpg), 1)
        hn = gate(params, batch.norm_x.reshape(-1)).reshape(*batch.norm_x.shape, 3)
        own = jnp.einsum("isi->is", hn)
        return L, jnp.exp(rg.log_normalizer(own, batch.norm_log_weights))

    keys = jax.random.split(jax.random.key(5, impl="unsafe_rbg"), 4000)
    L_s, Z_s = jax.jit(jax.vmap(lambda kk: losses(sampled.batch(kk))))(keys)
    L_e, Z_e = losses(exact.batch(jax.random.key(0, impl="unsafe_rbg")))
    logq, logz = rg.grid_log_model(gate, params, exact)
    np.testing.assert_allclose(float(Z_e), float(np.exp(logz)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(L_e),
                               np.asarray(rg.domain_kl(exact.log_domains, logq,
                                                       exact.log_reference)) - float(logz),
                               rtol=1e-10, atol=1e-12)
    se = np.asarray(L_s).std(0) / np.sqrt(4000)
    assert np.all(np.abs(np.asarray(L_s).mean(0) - np.asarray(L_e)) < 4 * se)
    assert abs(float(Z_s.mean()) - float(Z_e)) < 4 * float(Z_s.std()) / np.sqrt(4000)
    assert sampled.samples_per_step() == 96 and exact.samples_per_step() == 366


def _np_primal_dual(P_exp, D, ref, b0, steps, *, lr, eta, c, rho, clip, power, mode):
    """The primal-dual update for constant gates and exact batches, written from the
    equations (SGD on the gate, closed-form gradients)."""
    b, lam, mu = b0.copy(), np.ones(len(D)) / len(D), 1.0
    avg_b, avg_lam = b.copy(), lam.copy()
    for t in range(steps):
        comp = np.exp(b)[:, None] * P_exp  # g_i p_i(x)
        pg = comp.sum(0)
        Z = np.exp(b).sum()
        r = comp / pg[None]  # responsibilities
        logq = np.log(pg) - (np.log(Z) if mode == "divide" else 0.0)
        ratio = ref - logq[None]
        losses = np.sum(D * ratio, 1)
        clipped = np.sum(D * np.clip(ratio, -clip, clip), 1)
        resp = np.einsum("j,jx,ix->i", lam, D, r)
        if mode == "divide":
            grad = -(resp - np.exp(b) / Z)
        else:
            grad = -resp + (mu + rho * (Z - 1.0)) * np.exp(b)
        b = b - lr * grad
        lam = lam * np.exp(eta * clipped)
        lam /= lam.sum()
        if mode == "lagrange":
            mu = max(0.0, mu + c * (Z - 1.0))
        w = (1 + power) / (t + 1 + power)
        avg_b += w * (b - avg_b)
        avg_lam += w * (lam - avg_lam)
        del losses
    return b, lam, mu, avg_b, avg_lam


@pytest.mark.parametrize("mode", ["lagrange", "divide"])
def test_primal_dual_matches_numpy(mode):
    prob = _small_problem()
    b0 = np.array([0.3, -0.4, 0.2])
    kw = dict(lr_mix=0.3, lr_norm=0.2, penalty=0.5, loss_clip=0.5, averaging_power=2.0)
    alg = rg.robust_gate_primal_dual(rg.constant_log_gate, 3, optax.sgd(0.4),
                                     normalization=mode, **kw)
    state, _ = base.run(alg, {"b": jnp.asarray(b0)}, prob, jax.random.PRNGKey(0), 6,
                        trace_fn=lambda s, st, o: ())
    want = _np_primal_dual(np.exp(np.asarray(prob.log_experts)), np.exp(np.asarray(
        prob.log_domains)), np.asarray(prob.log_reference), b0, 6, lr=0.4, eta=0.3, c=0.2,
        rho=0.5, clip=0.5, power=2.0, mode=mode)
    got = (state.params["b"], jnp.exp(state.log_lam), state.mu, state.avg_params["b"],
           state.avg_lam)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


def test_lagrange_kkt_multiplier_and_normalization():
    """Exact batches, RBF gate: the multiplier converges to its KKT value mu* = sum lam = 1 and
    the gate to Z = 1; lr_mix = 0 keeps lam uniform."""
    prob = _small_problem()
    gate = rg.rbf_log_gate(jnp.linspace(-5.0, 5.0, 6), 2.0)
    x0 = {"w": jnp.zeros((6, 3)), "b": jnp.full((3,), -np.log(3.0) + 0.3)}
    alg = rg.robust_gate_primal_dual(gate, 3, optax.adam(0.02), lr_mix=0.0, lr_norm=0.05)
    state, (mu, logz) = base.run(alg, x0, prob, jax.random.PRNGKey(0), 3000,
                                 trace_fn=lambda s, st, o: (st.mu, s.info["log_normalizer"]))
    assert abs(float(mu[-1]) - 1.0) < 1e-3
    assert abs(float(logz[-1])) < 1e-3
    np.testing.assert_allclose(np.asarray(jnp.exp(state.log_lam)), np.ones(3) / 3, rtol=1e-12)


# --------------------------------------------------------------------------- routing


def test_routed_density_is_normalized_and_exact_for_hard_gates():
    rng = np.random.default_rng(6)
    n, m = 12, 3
    # experts with disjoint supports: p_g routes exactly, so the routed model equals p_g
    loge = np.full((m, n), -np.inf)
    for j in range(m):
        v = rng.random(4)
        loge[j, 4 * j:4 * j + 4] = np.log(v / v.sum())
    a = np.array([0.2, 0.5, 0.3])
    logq = np.log(np.sum(a[:, None] * np.exp(loge), 0))
    route = np.repeat(np.arange(m), 4)
    got = gr.routed_log_density(jnp.asarray(route), jnp.asarray(loge), jnp.asarray(logq))
    np.testing.assert_allclose(np.asarray(got), logq, rtol=1e-12)
    # overlapping experts, any route: both variants sum to one; the plain one matches the
    # formula p_g(R_j) p_j(x) / p_j(R_j)
    loge = np.log(rng.dirichlet(np.ones(n), size=m))
    h = rng.normal(size=(n, m))
    logq = np.log(np.sum(np.exp(h.T + loge), 0))
    logq -= np.log(np.exp(logq).sum())
    route = rng.integers(0, m, n)
    plain = np.asarray(gr.routed_log_density(jnp.asarray(route), jnp.asarray(loge),
                                             jnp.asarray(logq)))
    gated = np.asarray(gr.routed_log_density(jnp.asarray(route), jnp.asarray(loge),
                                             jnp.asarray(logq), jnp.asarray(h)))
    np.testing.assert_allclose(np.exp(plain).sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.exp(gated).sum(), 1.0, rtol=1e-12)
    pe, pq = np.exp(loge), np.exp(logq)
    want = np.array([pq[route == route[i]].sum() * pe[route[i], i]
                     / pe[route[i], route == route[i]].sum() for i in range(n)])
    np.testing.assert_allclose(np.exp(plain), want, rtol=1e-12)


def test_distill_router_matches_scipy():
    """A linear router fitted by distill_router (Adam, full batch) reaches the minimum of the
    convex weighted cross-entropy found by SciPy (L-BFGS)."""
    rng = np.random.default_rng(7)
    x = np.linspace(-3, 3, 40)
    target = np.asarray(jax.nn.softmax(jnp.asarray(np.stack([x, -x, 0.3 * x ** 2], 1)), -1))
    logw = rng.normal(size=40) * 0.3
    apply = lambda p, xs: xs[:, None] * p["w"][None, :] + p["b"][None, :]
    p, losses = gr.distill_router(apply, {"w": jnp.zeros(3), "b": jnp.zeros(3)},
                                  jnp.asarray(x), jnp.asarray(target), jnp.asarray(logw),
                                  optax.adam(0.05), num_steps=3000)
    w = np.exp(logw) / np.exp(logw).sum()

    def ce(v):
        s = x[:, None] * v[:3] + v[3:]
        s = s - s.max(1, keepdims=True)
        return -np.sum(w * np.sum(target * (s - np.log(np.exp(s).sum(1, keepdims=True))), 1))

    ref = optimize.minimize(ce, np.zeros(6), method="L-BFGS-B", options={"ftol": 1e-15})
    got = ce(np.r_[np.asarray(p["w"]), np.asarray(p["b"])])
    assert got - ref.fun < 1e-6 and float(losses[0]) > got
    np.testing.assert_allclose(float(losses[0]), ce(np.zeros(6)), rtol=1e-12)


# --------------------------------------------------------------------------- baselines


def test_em_recovers_two_component_mixture(experiment):
    grid = jnp.linspace(-10.0, 10.0, 801)
    logd = rg.grid_log_gaussian(grid, jnp.array([-3.0, 2.0]), jnp.array([1.0, 0.7]))
    p = rg.GridMixture(grid, logd, logd, logd)
    logq = experiment.em_two_gaussians(p, 300)
    want = np.log(0.5 * np.exp(np.asarray(logd)).sum(0))
    assert float(np.sum(np.exp(want) * (want - np.asarray(logq)))) < 1e-6


def test_group_dro_with_frozen_lam_is_pooled_gaussian_mle(experiment):
    """The primal-dual code with one flat expert, a quadratic log-gate and zero reference is a
    monolithic Gaussian model; with lr_mix = 0 (lam frozen uniform) it is MLE on the pooled
    domains, i.e. moment matching."""
    grid = jnp.linspace(-8.0, 8.0, 201)
    logd = rg.grid_log_gaussian(grid, jnp.array([-2.0, 0.0, 2.5]), jnp.ones(3))
    p = rg.GridMixture(grid, logd, logd, logd)
    flat = rg.GridMixture(grid, logd, jnp.full((1, 201), -np.log(201.0)), jnp.zeros_like(logd))
    alg = rg.robust_gate_primal_dual(experiment.quadratic_log_gate, 3, optax.adam(0.05),
                                     lr_mix=0.0, normalization="divide")
    state, _ = base.run(alg, {"w": jnp.array([0.0, -1.0]), "b": jnp.zeros(1)}, flat,
                        jax.random.PRNGKey(0), 3000, trace_fn=lambda s, st, o: ())
    logq = experiment.quadratic_log_gate(state.params, grid)[:, 0]
    logq = logq - jax.nn.logsumexp(logq)
    mle, m, v = experiment.gaussian_mle(p)
    q = np.exp(np.asarray(logq))
    np.testing.assert_allclose(np.sum(q * np.asarray(grid)), float(m), atol=1e-4)
    np.testing.assert_allclose(np.sum(q * (np.asarray(grid) - float(m)) ** 2), float(v),
                               rtol=1e-4)


def test_errors():
    with pytest.raises(ValueError, match="n_domains"):
        rg.robust_gate_primal_dual(rg.constant_log_gate, 0)
    with pytest.raises(ValueError, match="gate_apply"):
        rg.robust_gate_primal_dual(None, 2)
    with pytest.raises(ValueError, match="gate_opt"):
        rg.robust_gate_primal_dual(rg.constant_log_gate, 2, "adam")
    with pytest.raises(ValueError, match="max_iters"):
        rg.capacity_blahut_arimoto(jnp.eye(2), max_iters=0)
    with pytest.raises(ValueError, match="tol"):
        rg.capacity_blahut_arimoto(jnp.eye(2), tol=0.0)
    with pytest.raises(ValueError, match="shape"):
        rg.capacity_blahut_arimoto(jnp.ones(3))
    with pytest.raises(ValueError, match="bound"):
        rg.rbf_log_gate(jnp.zeros(2), 1.0, -1.0)
    with pytest.raises(ValueError, match="num_steps"):
        gr.distill_router(lambda p, x: x, {}, jnp.zeros(2), jnp.zeros((2, 1)), jnp.zeros(2),
                          optax.sgd(0.1), num_steps=0)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0: every claim passes except the documented non-reproduction
    ``exp.KNOWN_FAILING`` (spec claim 2's per-seed 10% margin over the uniform gate), which
    must still be reported failing."""
    runner.check_quick_claims(experiment, quick_results)
    # a certified lower bound (Blahut-Arimoto on the true domains) must lie below the worst-case
    # KL that every model reached, robust gate and baselines alike
    bound = np.asarray(quick_results["certified_bound"])
    for name in ("lagrange", "divide", "uniform", "gaussian", "gmm2", "group_dro", "routed"):
        assert np.all(experiment._worst_np(quick_results, name) >= bound - 1e-4), name
    assert all(np.isfinite(v) for v in experiment.summarize(quick_results).values())


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (worst_kl and training) pass the readability check: titles, axis labels,
    legends that say what the shaded bands are, y-ranges fitted to the data, tick labels that do not
    overlap and no series hidden under another drawn in the same style (the per-seed worst-case KL
    as a dot plot with the seed medians)."""
    runner.check_quick_figures(experiment, quick_results)
