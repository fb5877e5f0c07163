"""CreDRO (robust.credro) and box credal sets (robust.credal) against independent references:
water-filling upper entropy vs scipy SLSQP; exhaustive-vertex lower entropy vs an itertools
brute force, random feasible points and multistart projected-gradient local minima; float32
vs float64 on narrow boxes; reachable intervals vs scipy linprog; CVaR weights vs
the Rockafellar-Uryasev formula and the scipy LP; chi-square weights vs SLSQP and their KKT
conditions; the envelope gradient; the reduction identity (all levels ERM == deep ensemble,
bitwise); errors; the contract matrix cases; claims."""

from __future__ import annotations

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import optimize

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml.models import mlp
from jaxopt_icml.robust import credal, credro
from jaxopt_icml.testing import AlgorithmCase


def _make_small(rngs):
    # a linear model: the contract matrix runs eager op-by-op loops, whose cost is the number
    # of primitives (the ensemble, DRO-weight and optimizer code is the same for any model)
    return mlp.MLP(2, (), 3, rngs=rngs)


_APPLY = mlp.pure_apply(mlp.abstract_params(_make_small)[0])


# jitted: an eager vmapped flax initialisation compiles every primitive separately
_init_members = jax.jit(jax.vmap(lambda k: mlp.init_params(_make_small, k)[1]))


def _ensemble_problem(key, dtype, members=3):
    """Stacked params of ``members`` linear models and a 24-point, 3-class data set."""
    k0, kx = jax.random.split(key)
    keys = jax.random.split(k0, members)
    params = jax.tree.map(lambda v: v.astype(dtype), _init_members(keys))
    X = jax.random.normal(kx, (24, 2))
    y = (X[:, 0] > 0).astype(jnp.int32) + (X[:, 1] > 0.5).astype(jnp.int32)
    return params, credro.ClassificationData(X.astype(dtype), y, _APPLY, 16)


_ADAM = optax.adam(1e-2)

CONTRACT_CASES = (
    AlgorithmCase(
        "credal_ensemble", credro.credal_ensemble,
        {"optimizer": _ADAM, "levels": (1.0, 0.6, 0.3)}, _ensemble_problem, stochastic=True,
        invalid=(({"kind": "kl"}, "kind"), ({"levels": (1.0, 0.0, 0.5)}, "levels"),
                 ({"levels": (1.5, 1.0, 1.0)}, "levels"), ({"levels": ()}, "levels"),
                 ({"levels": (1.0, float("nan"), 1.0)}, "levels"),
                 ({"optimizer": None}, "optimizer"),
                 ({"bisection_steps": 0}, "bisection_steps"))),
    AlgorithmCase(
        "credal_ensemble_chi2", credro.credal_ensemble,
        {"optimizer": _ADAM, "levels": (0.0, 0.2, 1.0), "kind": "chi2",
         "bisection_steps": 40}, _ensemble_problem, stochastic=True,
        invalid=(({"levels": (0.0, -0.1, 1.0)}, "levels"),)),
    # bagging has its own state (the bootstrap counts) and minibatch sampler, so it gets a case
    AlgorithmCase(
        "bagging_ensemble", credro.bagging_ensemble,
        {"optimizer": _ADAM, "num_members": 3, "num_examples": 24}, _ensemble_problem,
        stochastic=True,
        invalid=(({"num_members": 0}, "num_members"), ({"num_examples": 0}, "num_examples"),
                 ({"optimizer": None}, "optimizer"))),
)
# No "deep_ensemble" case: deep_ensemble(opt, M) is credal_ensemble(opt, (1.0,) * M) (the same
# _ensemble code with the mean loss), bit for bit (claim reduction_bitwise of the claims test,
# over the whole QUICK training run), so the matrix would re-check the same program; its
# argument checks are in test_errors.


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# jitted once (eager float64 op-by-op dispatch compiles every primitive)
_upper = jax.jit(credal.upper_entropy_argmax)
_lower = jax.jit(credal.lower_entropy, static_argnames=("exact",))
_greedy = jax.jit(credal.greedy_lower_entropy, static_argnames=("return_p",))
_vertex = jax.jit(credal._vertex_lower_entropy)  # without lower_entropy's min(., greedy)
_tighten = jax.jit(credal.tighten)
_weights = jax.jit(credro.dro_weights, static_argnames=("kind", "bisection_steps"))
_upper_h = jax.jit(credal.upper_entropy)
_eu_au = jax.jit(credal.eu_au)
_intervals = jax.jit(credal.intervals, static_argnames=("reachable",))
_uncertainty = jax.jit(credal.credal_uncertainty)
_mi = jax.jit(credal.mutual_information, static_argnames=("axis",))


def _h(p):
    p = np.clip(np.asarray(p, np.float64), 0, 1)
    return float(-np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)))


def _boxes(k, n, seed):
    """Ensemble boxes (min/max of 4 Dirichlet(0.5) members) and random intervals, tightened."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:
            p = rng.dirichlet(0.5 * np.ones(k), size=4)
            lo, hi = p.min(0), p.max(0)
        else:
            c = rng.dirichlet(np.ones(k))
            lo = np.clip(c - rng.uniform(0, 0.3, k), 0, 1)
            hi = np.clip(c + rng.uniform(0, 0.3, k), 0, 1)
        out.append((lo, hi))
    lo, hi = map(np.array, zip(*out, strict=True))
    lo, hi = _tighten(jnp.asarray(lo), jnp.asarray(hi))
    return np.asarray(lo), np.asarray(hi)


def _np_brute_lower(lo, hi):
    """min entropy over all vertices: K - 1 coordinates at a bound, the free one in range."""
    k = lo.size
    best = math.inf
    for free in range(k):
        others = [j for j in range(k) if j != free]
        for bits in itertools.product((False, True), repeat=k - 1):
            p = np.empty(k)
            p[others] = np.where(bits, hi[others], lo[others])
            p[free] = 1.0 - p[others].sum()
            if lo[free] - 1e-12 <= p[free] <= hi[free] + 1e-12:
                best = min(best, _h(p))
    return best


def _feasible(p, lo, hi, tol=1e-9):
    return abs(p.sum() - 1) < tol and np.all(p >= lo - tol) and np.all(p <= hi + tol)


# --------------------------------------------------------------------------- credal sets


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_upper_entropy_matches_slsqp(k):
    lo, hi = _boxes(k, 12, k)
    p = np.asarray(_upper(jnp.asarray(lo), jnp.asarray(hi)))
    for i in range(lo.shape[0]):
        assert _feasible(p[i], lo[i], hi[i], 1e-12)
        x0 = np.clip(np.full(k, 1.0 / k), lo[i], hi[i])
        res = optimize.minimize(
            lambda q: np.sum(q * np.log(np.maximum(q, 1e-300))), x0, method="SLSQP",
            bounds=list(zip(lo[i], hi[i], strict=True)),
            constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0}],
            options={"ftol": 1e-15, "maxiter": 500})
        assert _h(p[i]) >= -res.fun - 1e-12  # never below a feasible point found by SLSQP
        assert abs(_h(p[i]) + res.fun) < 1e-7, (i, _h(p[i]), -res.fun)
    np.testing.assert_allclose(np.asarray(_upper_h(lo, hi)), [_h(q) for q in p], rtol=1e-13)


def test_upper_entropy_special_cases():
    k = 5
    # the uniform distribution is reachable: H̄ = log K
    assert abs(float(_upper_h(jnp.zeros(k), jnp.ones(k))) - math.log(k)) < 1e-14
    # a point (lo = hi) has H̄ = H(point) and EU = 0
    pt = jnp.asarray(np.random.default_rng(0).dirichlet(np.ones(k)))
    u = _eu_au(pt, pt)
    assert abs(float(u.total) - _h(pt)) < 1e-13 and float(u.epistemic) < 1e-13
    # a degenerate active bound: class 0 forced to >= 0.9
    lo = jnp.array([0.9, 0.0, 0.0, 0.0])
    hi = jnp.array([1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(np.asarray(_upper(lo, hi)), [0.9, 1 / 30, 1 / 30, 1 / 30],
                               rtol=1e-13)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_lower_entropy_exact_vs_bruteforce_and_feasible_points(k):
    lo, hi = _boxes(k, 16, 10 + k)
    exact = np.asarray(_lower(jnp.asarray(lo), jnp.asarray(hi), exact=True))
    h_g, p_g = _greedy(jnp.asarray(lo), jnp.asarray(hi), return_p=True)
    vertex = np.asarray(_vertex(jnp.asarray(lo), jnp.asarray(hi)))
    rng = np.random.default_rng(k)
    for i in range(lo.shape[0]):
        assert abs(exact[i] - _np_brute_lower(lo[i], hi[i])) < 1e-12
        # the enumeration alone (no safeguard min with greedy) finds the greedy vertex or better
        assert vertex[i] <= float(h_g[i]) + 1e-15
        assert _feasible(np.asarray(p_g[i]), lo[i], hi[i])
        # no feasible point has lower entropy: random convex combinations of greedy vertices
        # (random class orders) and the max-entropy point
        pts = [np.asarray(_upper(jnp.asarray(lo[i]), jnp.asarray(hi[i])))]
        for _ in range(20):
            order = rng.permutation(k)
            q = lo[i].copy()
            free = 1 - q.sum()
            for j in order:
                add = min(hi[i][j] - lo[i][j], free)
                q[j] += add
                free -= add
            pts.append(q)
        pts = np.array(pts)
        for _ in range(50):
            mix = rng.dirichlet(np.ones(len(pts)) * 0.3) @ pts
            assert _feasible(mix, lo[i], hi[i])
            assert _h(mix) >= exact[i] - 1e-12
    if k == 2:  # one free coordinate: greedy is exact
        np.testing.assert_allclose(np.asarray(h_g), exact, atol=1e-14)


def _np_project(v, lo, hi):
    """Euclidean projection of the rows of ``v`` onto ``{p : sum p = 1, lo <= p <= hi}``:
    ``clip(v - t, lo, hi)`` with the shift ``t`` by 64 bisection steps (NumPy)."""
    a = np.min(v - hi, axis=-1, keepdims=True)  # sum clip(v - a) = sum hi >= 1
    b = np.max(v - lo, axis=-1, keepdims=True)  # sum clip(v - b) = sum lo <= 1
    for _ in range(64):
        t = 0.5 * (a + b)
        big = np.clip(v - t, lo, hi).sum(-1, keepdims=True) > 1
        a, b = np.where(big, t, a), np.where(big, b, t)
    return np.clip(v - 0.5 * (a + b), lo, hi)


def _local_minima(lo, hi, rng, starts=48, iters=150):
    """Local minima of the entropy on box∩simplex by projected gradient descent (NumPy) from
    ``starts`` random feasible points per box (projected Dirichlet draws); ``lo, hi`` are
    ``(boxes, K)``, the result ``(boxes, starts)``. The entropy is concave, so each run slides
    to a vertex or a face's KKT point. (scipy SLSQP was tried first: its BFGS model stalls on
    this concave objective, stopping at interior points.)"""
    lo, hi = lo[:, None, :], hi[:, None, :]
    p = _np_project(rng.dirichlet(np.ones(lo.shape[-1]), size=(lo.shape[0], starts)), lo, hi)
    for _ in range(iters):
        p = _np_project(p + 0.5 * (np.log(np.maximum(p, 1e-300)) + 1.0), lo, hi)
    assert np.all(np.abs(p.sum(-1) - 1) < 1e-9) and np.all(p >= lo) and np.all(p <= hi)
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def test_lower_entropy_vs_multistart_local_descent():
    """Independent of the vertex enumeration: the exact H̲ is <= every local minimum found by
    projected gradient descent from 48 random starts, and equals the best one within 1e-6."""
    rng = np.random.default_rng(3)
    for k in (3, 5):
        lo, hi = _boxes(k, 8, 40 + k)
        exact = np.asarray(_lower(jnp.asarray(lo), jnp.asarray(hi), exact=True))
        minima = _local_minima(lo, hi, rng)
        assert np.all(exact[:, None] <= minima + 1e-12), (exact, minima.min(1))
        np.testing.assert_allclose(minima.min(1), exact, atol=1e-6)


_unc = jax.jit(lambda p: credal.credal_uncertainty(p, axis=1))


def test_lower_entropy_float32_matches_float64_on_narrow_boxes():
    """Members that nearly agree (log-normal jitter 1e-3, 1e-4 around a Dirichlet(0.5) point):
    float32 H̲ and EU within 1e-5 nats of float64. (A rounding tolerance of 16 K eps that also
    scored the out-of-box corner failed this: 1.9e-5 off at K = 3.)"""
    rng = np.random.default_rng(11)
    for k in (3, 6):
        base_p = rng.dirichlet(0.5 * np.ones(k), size=60)
        width = np.repeat([1e-3, 1e-4], 30)[:, None, None]
        p = base_p[:, None, :] * np.exp(width * rng.standard_normal((60, 5, k)))
        p /= p.sum(-1, keepdims=True)
        u64 = _unc(jnp.asarray(p))
        with jax.enable_x64(False):
            u32 = _unc(jnp.asarray(p, jnp.float32))
            assert u32.aleatoric.dtype == jnp.float32
        for a, b in ((u32.aleatoric, u64.aleatoric), (u32.epistemic, u64.epistemic)):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b), atol=1e-5)


def test_lower_entropy_k10_and_greedy_default():
    lo, hi = _boxes(10, 2, 3)
    exact = np.asarray(_lower(jnp.asarray(lo), jnp.asarray(hi)))  # K = 10: exact by default
    for i in range(2):
        assert abs(exact[i] - _np_brute_lower(lo[i], hi[i])) < 1e-12
    lo11, hi11 = _boxes(11, 2, 4)
    auto = np.asarray(_lower(jnp.asarray(lo11), jnp.asarray(hi11)))
    np.testing.assert_array_equal(auto, np.asarray(_greedy(jnp.asarray(lo11),
                                                           jnp.asarray(hi11))))


def test_tighten_gives_reachable_bounds_linprog():
    rng = np.random.default_rng(5)
    k = 4
    for _ in range(6):
        c = rng.dirichlet(np.ones(k))
        lo = np.clip(c - rng.uniform(0, 0.5, k), 0, 1)
        hi = np.clip(c + rng.uniform(0, 0.5, k), 0, 1)
        tl, th = map(np.asarray, _tighten(jnp.asarray(lo), jnp.asarray(hi)))
        for j in range(k):
            e = np.eye(k)[j]
            kw = {"A_eq": np.ones((1, k)), "b_eq": [1.0],
                  "bounds": list(zip(lo, hi, strict=True))}
            lo_lp = optimize.linprog(e, **kw).fun
            hi_lp = -optimize.linprog(-e, **kw).fun
            assert abs(tl[j] - lo_lp) < 1e-9 and abs(th[j] - hi_lp) < 1e-9
        # the set is unchanged: the same upper and lower entropies
        for f in (_upper_h, _lower):
            assert abs(float(f(jnp.asarray(lo), jnp.asarray(hi)))
                       - float(f(jnp.asarray(tl), jnp.asarray(th)))) < 1e-12


def test_intervals_and_mutual_information():
    rng = np.random.default_rng(6)
    p = rng.dirichlet(np.ones(4), size=(5, 7))  # (M, N, K)
    lo, hi = _intervals(jnp.asarray(p), reachable=False)
    np.testing.assert_array_equal(np.asarray(lo), p.min(0))
    np.testing.assert_array_equal(np.asarray(hi), p.max(0))
    tl, th = _intervals(jnp.asarray(p))
    assert np.all(np.asarray(tl) >= p.min(0) - 1e-15) and np.all(np.asarray(th) <= p.max(0))
    mean = p.mean(0)
    mi = [_h(mean[n]) - np.mean([_h(p[m, n]) for m in range(5)]) for n in range(7)]
    np.testing.assert_allclose(np.asarray(_mi(jnp.asarray(p))), mi, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(_mi(jnp.asarray(np.swapaxes(p, 0, 1)), axis=1)), mi,
                               rtol=1e-12)
    same = jnp.asarray(np.repeat(p[:1], 5, axis=0))
    assert float(jnp.max(_mi(same))) < 1e-14
    u = _uncertainty(same)
    assert float(jnp.max(u.epistemic)) < 1e-13
    u = _uncertainty(jnp.asarray(p))
    assert np.all(np.asarray(u.epistemic) > 0)
    assert np.all(np.asarray(u.total) <= math.log(4) + 1e-15)


# --------------------------------------------------------------------------- DRO weights


def _np_cvar(losses, alpha):
    """Rockafellar-Uryasev: min_t t + sum (l - t)_+ / (alpha B), exact at a breakpoint."""
    b = losses.size
    return min(t + np.sum(np.maximum(losses - t, 0)) / (alpha * b) for t in losses)


@pytest.mark.parametrize("alpha", [1.0, 0.8, 0.5, 0.3, 0.137, 1 / 64])
def test_cvar_weights_vs_rockafellar_uryasev_and_lp(alpha):
    rng = np.random.default_rng(int(alpha * 1000))
    losses = rng.exponential(size=64)
    w = np.asarray(_weights(jnp.asarray(losses), alpha, "cvar"))
    assert np.all(w >= 0) and np.all(w <= 1 / (alpha * 64) + 1e-15)
    assert abs(w.sum() - 1) < 1e-13
    assert np.count_nonzero(w) == math.ceil(alpha * 64 - 1e-9)
    assert abs(w @ losses - _np_cvar(losses, alpha)) < 1e-12
    lp = optimize.linprog(-losses, A_eq=np.ones((1, 64)), b_eq=[1.0],
                          bounds=[(0, 1 / (alpha * 64))] * 64)
    assert abs(w @ losses + lp.fun) < 1e-9
    # the top ceil(alpha B) losses by a NumPy sort carry the weight
    top = np.argsort(-losses)[: math.ceil(alpha * 64 - 1e-9)]
    assert set(np.flatnonzero(w)) == set(top)


def test_cvar_erm_is_exactly_uniform_and_batched():
    losses = jnp.asarray(np.random.default_rng(0).exponential(size=(3, 10)))
    w = _weights(losses, 1.0, "cvar")
    assert np.all(np.asarray(w) == np.float64(1.0) / 10)  # bitwise 1/B
    levels = jnp.array([1.0, 0.5, 0.2])
    wb = np.asarray(jax.jit(credro.ensemble_weights)(losses, levels))
    for m in range(3):
        np.testing.assert_array_equal(wb[m], np.asarray(_weights(losses[m], levels[m])))


def _np_chi2_value(losses, rho):
    """SLSQP reference for max <w, l> over the simplex with (1/2B) sum (B w - 1)^2 <= rho."""
    b = losses.size
    res = optimize.minimize(
        lambda w: -w @ losses, np.full(b, 1.0 / b), jac=lambda w: -losses, method="SLSQP",
        bounds=[(0, 1)] * b,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1, "jac": lambda w: np.ones(b)},
                     {"type": "ineq", "fun": lambda w: rho - 0.5 * np.mean((b * w - 1) ** 2),
                      "jac": lambda w: -(b * w - 1)}],
        options={"ftol": 1e-14, "maxiter": 300})
    return -res.fun


@pytest.mark.parametrize("rho", [0.0, 0.01, 0.3, 1.0, 5.0, 100.0])
def test_chi2_weights_kkt_and_slsqp(rho):
    rng = np.random.default_rng(int(rho * 100) + 1)
    b = 16
    losses = rng.exponential(size=b)
    w = np.asarray(_weights(jnp.asarray(losses), rho, "chi2"))
    assert np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
    d = 0.5 * np.mean((b * w - 1) ** 2)
    d_max = 0.5 * (b - 1)
    assert d <= rho + 1e-9
    if rho == 0:
        np.testing.assert_allclose(w, 1 / b, rtol=1e-15)
    elif rho >= d_max:
        np.testing.assert_array_equal(w, (losses == losses.max()).astype(float))
    else:
        assert abs(d - rho) < 1e-9  # the constraint binds
        # KKT: on the support w_i = a (l_i - eta) with a > 0; off it l_i <= eta
        s = w > 0
        a, c = np.polyfit(losses[s], w[s], 1)
        eta = -c / a
        assert a > 0 and np.max(np.abs(a * (losses[s] - eta) - w[s])) < 1e-10
        assert np.all(losses[~s] <= eta + 1e-9)
    assert abs(w @ losses - _np_chi2_value(losses, min(rho, d_max))) < 1e-6


def test_chi2_ties_and_constant_losses():
    losses = jnp.array([1.0, 3.0, 3.0, 0.5])
    w = np.asarray(_weights(losses, 50.0, "chi2"))
    np.testing.assert_allclose(w, [0, 0.5, 0.5, 0])
    np.testing.assert_allclose(np.asarray(_weights(jnp.ones(6), 0.7, "chi2")), 1 / 6)


def test_envelope_gradient_and_stop_gradient():
    losses = jnp.asarray(np.random.default_rng(2).exponential(size=16))
    grads = jax.jit(jax.grad(credro.dro_loss), static_argnums=2)
    sum_grad = jax.jit(jax.grad(lambda v, lv, kind: jnp.sum(credro.dro_weights(v, lv, kind))),
                       static_argnums=2)
    for kind, level in (("cvar", 0.3), ("chi2", 0.5)):
        g = grads(losses, level, kind)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(_weights(losses, level, kind)))
        assert float(jnp.abs(sum_grad(losses, level, kind)).max()) == 0.0
    # bf16 losses: float32 arithmetic, bf16 weights
    wb = _weights(losses.astype(jnp.bfloat16), 0.5)
    assert wb.dtype == jnp.bfloat16


# --------------------------------------------------------------------------- ensembles


def test_update_by_hand():
    """One CreDRO update == SGD on the mean loss of each member's NumPy top-ceil(alpha B)
    losses, member m with its own key and level. (The reduction identity, all levels ERM ==
    deep_ensemble bit for bit, is claim ``reduction_bitwise`` of the claims test.)"""
    params, data = _ensemble_problem(jax.random.PRNGKey(3), jnp.float32)
    with jax.enable_x64(False):
        key = jax.random.PRNGKey(4)
        # one CreDRO update by hand: member m, its own key and level
        levels = (1.0, 0.5, 0.25)
        alg = credro.credal_ensemble(optax.sgd(0.1), levels)
        step, state = jax.jit(alg.update)(alg.init(params, key), data, key)
        keys = jax.random.split(key, 3)
        per_fn = jax.jit(lambda q, k: data.per_example_losses(q, k))
        # the mean loss of a fixed subset (the NumPy top-k, as a 0/1 mask), differentiated
        subset_grad = jax.jit(jax.grad(lambda q, k, mask: jnp.sum(
            mask * data.per_example_losses(q, k)) / jnp.sum(mask)))
        for m in range(3):
            pm = jax.tree.map(lambda v, m=m: v[m], params)
            per = np.asarray(per_fn(pm, keys[m]))
            k = math.ceil(levels[m] * 16)
            top = np.argsort(-per)[:k]
            g = subset_grad(pm, keys[m], jnp.asarray(np.isin(np.arange(16), top), jnp.float32))
            want = jax.tree.map(lambda p, gg: p - 0.1 * gg, pm, g)
            got = jax.tree.map(lambda v, m=m: v[m], step.x)
            for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-5, atol=1e-6)
        assert int(state.count) == 1 and int(step.info["oracle_calls"]) == 3


def test_errors():
    with pytest.raises(ValueError, match="kind"):
        credro.dro_weights(jnp.ones(4), 0.5, "kl")
    with pytest.raises(ValueError, match="level"):
        credro.dro_weights(jnp.ones(4), 0.0)
    with pytest.raises(ValueError, match="level"):
        credro.dro_weights(jnp.ones(4), -1.0, "chi2")
    with pytest.raises(ValueError, match="bisection_steps"):
        credro.dro_weights(jnp.ones(4), 0.5, bisection_steps=0)
    with pytest.raises(ValueError, match="losses"):
        credro.dro_weights(jnp.asarray(1.0), 0.5)
    with pytest.raises(ValueError, match="levels"):
        credro.ensemble_weights(jnp.ones((3, 4)), jnp.ones(2))
    with pytest.raises(ValueError, match="exact"):
        credal.lower_entropy(jnp.zeros(17), jnp.ones(17), exact=True)
    with pytest.raises(ValueError, match="exact"):
        credal.lower_entropy(jnp.zeros(3), jnp.ones(3), exact=1)
    with pytest.raises(ValueError, match="axis"):
        credal.intervals(jnp.ones((2, 3)), axis=-1)
    with pytest.raises(ValueError, match="axis"):
        credal.mutual_information(jnp.ones((2, 3)), axis=1)
    for kw, name in (({"num_members": 0}, "num_members"), ({"num_members": 2.0}, "num_members"),
                     ({"optimizer": "adam"}, "optimizer")):
        with pytest.raises(ValueError, match=name):
            credro.deep_ensemble(**{"optimizer": _ADAM, "num_members": 3, **kw})
    params, data = _ensemble_problem(jax.random.PRNGKey(0), jnp.float32)
    with pytest.raises(ValueError, match="member axis"):
        credro.credal_ensemble(_ADAM, (1.0, 0.5)).init(params, jax.random.PRNGKey(0))


def test_experiment_references(experiment):
    """The experiment's NumPy references (mirror descent, brute force) and metrics."""
    lo, hi = _boxes(4, 6, 7)
    up = np.asarray(credal.upper_entropy(jnp.asarray(lo), jnp.asarray(hi)))
    np.testing.assert_allclose(experiment.np_mirror_descent_upper(lo, hi), up, atol=1e-12)
    brute = np.array([_np_brute_lower(lo[i], hi[i]) for i in range(6)])
    np.testing.assert_allclose(experiment.np_bruteforce_lower(lo, hi), brute, atol=1e-14)
    assert experiment.auroc([0.0, 1.0], [2.0, 3.0]) == 1.0
    assert experiment.auroc([1.0, 1.0], [1.0, 1.0]) == 0.5
    assert abs(experiment.auroc([0.0, 2.0], [1.0, 3.0]) - 0.75) < 1e-15
    # accuracy-rejection: perfectly ranked errors give the largest area
    assert experiment.auarc([0.0, 1.0], [1, 0]) == 0.75
    assert experiment.auarc([1.0, 0.0], [1, 0]) == 0.25


def test_split_scores_picks_the_single_member_and_methods_by_position(experiment):
    """The experiment's score split against NumPy: method i of the (methods, sets, seeds, M, N,
    K) probability array lands under its own name, and the single DRO model is CreDRO's member
    ``single`` (its softmax entropy and argmax), not another member or point."""
    rng = np.random.default_rng(7)
    # methods, sets, seeds, members, points, classes
    shape = (len(experiment._METHODS), 3, 2, 4, 6, 3)
    flat = rng.dirichlet(np.ones(3), size=shape[:-1]).astype(np.float32)
    single = 2
    res = experiment._split_scores({"probs": flat}, single)
    p64 = flat.astype(np.float64)
    entropy = lambda p: -np.sum(p * np.log(p), axis=-1)
    for s, j in (("id", 0), ("ood", 1)):
        np.testing.assert_allclose(res["shift/single_dro"][s]["entropy"],
                                   entropy(p64[0, j, :, single]), rtol=1e-10)
    np.testing.assert_allclose(res["subpop/single_dro"]["entropy"],
                               entropy(p64[0, 2, :, single]), rtol=1e-10)
    np.testing.assert_array_equal(res["subpop/single_dro"]["pred"],
                                  np.argmax(flat[0, 2, :, single], axis=-1))
    for i, (_, short) in enumerate(experiment._METHODS):
        mean = p64[i].mean(axis=2)  # (sets, seeds, points, classes)
        mi = entropy(mean) - entropy(p64[i]).mean(axis=2)  # mutual information, per set
        np.testing.assert_allclose(res[f"shift/{short}"]["id"]["mi"], mi[0], rtol=1e-8,
                                   atol=1e-12)
        np.testing.assert_allclose(res[f"subpop/{short}"]["mi"], mi[2], rtol=1e-8, atol=1e-12)
        np.testing.assert_array_equal(res[f"shift/{short}"]["probs_ood"], flat[i, 1])
        for part in (res[f"shift/{short}"]["id"], res[f"shift/{short}"]["ood"],
                     res[f"subpop/{short}"]):
            assert "member_entropy" not in part and "member_pred" not in part
    assert "probs" not in res


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0: every claim passes except the documented non-reproductions
    ``exp.KNOWN_FAILING`` (less ``exp.FULL_ONLY_FAILING``), which must still fail."""
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (downstream: seeds and medians per method in rows; accuracy_rejection:
    a line style, marker and labelled 10-90% band per method) pass the readability check:
    titles, axis labels, legends that say what the shaded bands are, y-ranges fitted to the
    data, tick labels that do not overlap and no series hidden under another drawn in the same
    style."""
    runner.check_quick_figures(experiment, quick_results)


# --------------------------------------------------------------------------- baselines


_boot = jax.jit(credro.bootstrap_counts, static_argnums=(1, 2))


def test_bootstrap_counts_multinomial_moments():
    """Counts of one member ~ Multinomial(N, 1/N): each row sums to N exactly; per example
    the mean 1 and variance 1 - 1/N (closed form), the pairwise covariance -1/N, and the
    marginal law Binomial(N, 1/N) (scipy), over 40000 draws. Tolerances are 5 standard errors
    (CLT; the variance's from the binomial fourth moment, scipy's kurtosis), Bonferroni over
    the N examples: a false failure has probability < 1e-5 (the seed is fixed)."""
    from scipy import stats

    n, draws = 8, 40000
    c = np.asarray(_boot(jax.random.PRNGKey(7), draws, n), np.float64)  # (draws, N)
    assert np.all(c.sum(1) == n) and np.all(c >= 0)
    var = 1.0 - 1.0 / n
    assert np.all(np.abs(c.mean(0) - 1.0) < 5 * math.sqrt(var / draws))
    kurt = float(stats.binom.stats(n, 1.0 / n, moments="k"))  # excess kurtosis
    mu4 = (kurt + 3.0) * var**2
    assert np.all(np.abs(c.var(0) - var) < 5 * math.sqrt((mu4 - var**2) / draws))
    prod = (c[:, 0] - 1.0) * (c[:, 1] - 1.0)
    assert abs(prod.mean() + 1.0 / n) < 5 * prod.std() / math.sqrt(draws)
    # the marginal law: chi-square goodness of fit of example 0's counts (values >= 4 pooled)
    obs = np.bincount(np.minimum(c[:, 0], 4).astype(int), minlength=5)
    pmf = stats.binom.pmf(np.arange(4), n, 1.0 / n)
    exp = draws * np.append(pmf, 1.0 - pmf.sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-5


def test_bootstrap_counts_independent_across_members():
    """Different keys (members of one call, or two calls) give different resamples, and the
    counts of neighbouring members of one call are uncorrelated over 20000 pairs
    (|corr| < 5/sqrt(pairs) per example)."""
    a = np.asarray(_boot(jax.random.PRNGKey(0), 4, 50))
    assert all(not np.array_equal(a[i], a[j]) for i in range(4) for j in range(i))
    b = np.asarray(_boot(jax.random.PRNGKey(1), 4, 50))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, np.asarray(_boot(jax.random.PRNGKey(0), 4, 50)))
    # members 2t and 2t + 1 of one call (the draws of the moments test, compiled once)
    draws = 20000
    c = np.asarray(_boot(jax.random.PRNGKey(2), 2 * draws, 8), np.float64).reshape(draws, 2, 8)
    corr = [np.corrcoef(c[:, 0, i], c[:, 1, i])[0, 1] for i in range(8)]
    assert np.max(np.abs(corr)) < 5 / math.sqrt(draws), corr


def test_bootstrap_indices_vs_numpy_repeat():
    """Position j of the resampled data set == np.repeat(arange(N), counts)[j]; all ones is
    the identity (the deep ensemble's sampler)."""
    rng = np.random.default_rng(0)
    f = jax.jit(credro.bootstrap_indices)
    for n in (1, 7, 40):
        counts = rng.multinomial(n, np.ones(n) / n)
        slots = np.arange(n)
        np.testing.assert_array_equal(np.asarray(f(jnp.asarray(counts), jnp.asarray(slots))),
                                      np.repeat(np.arange(n), counts))
        np.testing.assert_array_equal(np.asarray(f(jnp.ones(n, jnp.int32), slots)), slots)


@functools.partial(jax.jit, static_argnums=(0, 4))
def _run_states(alg, state, data, key, steps):
    """``steps`` updates from a given state (one compile per algorithm and state shape)."""
    def body(s, t):
        return alg.update(s, data, jax.random.fold_in(key, t))[1], None

    return jax.lax.scan(body, state, jnp.arange(steps))[0]


def test_bagging_all_weights_one_is_deep_ensemble_bitwise():
    """Known special case: with every bootstrap count forced to 1 (the resample is the data
    set) bagging gives the deep ensemble's iterates bit for bit; with its own resamples it
    does not (so the comparison can fail)."""
    params, data = _ensemble_problem(jax.random.PRNGKey(5), jnp.float32)
    with jax.enable_x64(False):
        key = jax.random.PRNGKey(6)
        bag = credro.bagging_ensemble(_ADAM, 3, num_examples=24)
        deep = credro.deep_ensemble(_ADAM, 3)
        sb = bag.init(params, key)
        assert sb.weights.shape == (3, 24) and sb.weights.dtype == jnp.int32
        ones = _run_states(bag, sb._replace(weights=jnp.ones_like(sb.weights)), data, key, 20)
        ref = _run_states(deep, deep.init(params, key), data, key, 20)
        own = _run_states(bag, sb, data, key, 20)
        assert int(ones.count) == 20
        for a, b, c in zip(jax.tree.leaves(ones.params), jax.tree.leaves(ref.params),
                           jax.tree.leaves(own.params), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
            assert not np.array_equal(np.asarray(c), np.asarray(b))


def test_bagging_point_mass_resample_is_sgd_on_one_example():
    """Special case of the weighted empirical law: member m's resample holds only example
    i_m (count N), so every minibatch is B copies of it and one SGD step is
    theta - lr grad l_{i_m}(theta) (computed by hand on that example alone)."""
    params, data = _ensemble_problem(jax.random.PRNGKey(8), jnp.float32)
    with jax.enable_x64(False):
        bag = credro.bagging_ensemble(optax.sgd(0.1), 3, num_examples=24)
        picks = (3, 17, 23)
        w = jnp.zeros((3, 24), jnp.int32).at[jnp.arange(3), jnp.asarray(picks)].set(24)
        state = bag.init(params, jax.random.PRNGKey(0))._replace(weights=w)
        step, _ = jax.jit(bag.update)(state, data, jax.random.PRNGKey(9))
        one = jax.jit(jax.grad(lambda q, i: credro.cross_entropy(
            _APPLY(q, data.X[i][None]), data.y[i][None])[0]))
        for m, i in enumerate(picks):
            pm = jax.tree.map(lambda v, m=m: v[m], params)
            want = jax.tree.map(lambda p, g: p - 0.1 * g, pm, one(pm, i))
            got = jax.tree.map(lambda v, m=m: v[m], step.x)
            for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


def test_bagging_errors():
    for kw, name in (({"num_members": 0}, "num_members"), ({"num_examples": 0}, "num_examples"),
                     ({"optimizer": None}, "optimizer")):
        with pytest.raises(ValueError, match=name):
            credro.bagging_ensemble(**{"optimizer": _ADAM, "num_members": 3,
                                       "num_examples": 24, **kw})
    params, data = _ensemble_problem(jax.random.PRNGKey(0), jnp.float32)
    bag = credro.bagging_ensemble(_ADAM, 3, num_examples=25)
    state = bag.init(params, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="num_examples"):
        bag.update(state, data, jax.random.PRNGKey(1))
    with pytest.raises(ValueError, match="member axis"):
        credro.bagging_ensemble(_ADAM, 2, num_examples=24).init(params, jax.random.PRNGKey(0))


def test_single_dro_model_softmax_entropy_vs_numpy():
    """The single-DRO-model baseline is ``credal_ensemble`` with one level; its score, the
    softmax entropy ``credal.entropy(member_probs(...)[0])``, equals the NumPy
    ``logsumexp(z) - sum_k softmax(z)_k z_k`` of its logits (float64)."""
    params, data = _ensemble_problem(jax.random.PRNGKey(10), jnp.float64, members=1)
    alg = credro.credal_ensemble(_ADAM, (0.3,))
    state, _ = jax.jit(lambda p: base.run(alg, p, data, jax.random.PRNGKey(11), 5))(params)
    X = jnp.asarray(np.random.default_rng(1).normal(size=(30, 2)) * 3)
    got = np.asarray(jax.jit(lambda p, x: credal.entropy(credro.member_probs(
        _APPLY, p, x)[0]))(state.params, X))
    z = np.asarray(_APPLY(jax.tree.map(lambda v: v[0], state.params), X), np.float64)
    zmax = z.max(1, keepdims=True)
    lse = zmax[:, 0] + np.log(np.exp(z - zmax).sum(1))
    p = np.exp(z - lse[:, None])
    np.testing.assert_allclose(got, lse - (p * z).sum(1), rtol=1e-12, atol=1e-14)
    assert got.dtype == np.float64 and np.all(got > 0) and np.all(got <= math.log(3))
