"""DREAM (jaxopt_icml.distributed.dream): contract cases, the server QP against closed forms,
SciPy and an exact NumPy active-set solver, rounds (also with weighted clients) against a
NumPy re-implementation, and the claims at quick size. simulate == shard_map on 8 devices is the
property matrix's "distributed" check of CONTRACT_CASES (tests/test_contract.py)."""

from __future__ import annotations

import functools
import importlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml.testing import AlgorithmCase

# the package re-exports the function dream(), which shadows the module attribute
dr = importlib.import_module("jaxopt_icml.distributed.dream")


def _case_problem(key, dtype):
    prob = dr.multitask_least_squares(key, num_clients=jax.local_device_count(), dim=3, rows=4,
                                      noise_std=0.1, dtype=dtype)
    return jnp.zeros((3,), dtype), prob


_INVALID = (
    ({"num_tasks": 0}, "num_tasks"), ({"local_steps": 0}, "local_steps"),
    ({"local_lr": 0.0}, "local_lr"), ({"global_lr": -1.0}, "global_lr"),
    ({"momentum": 1.0}, "momentum"), ({"qp_reg": -1.0}, "qp_reg"),
    ({"qp_iters": 0}, "qp_iters"), ({"trajectory": "both"}, "trajectory"),
    ({"control_variates": 1}, "control_variates"), ({"fixed_weights": "no"}, "fixed_weights"),
    ({"preference": (0.7, 0.7)}, "preference"), ({"task_matrix": np.eye(3)}, "task_matrix"),
    ({"num_workers": 0}, "num_workers"),
)

CONTRACT_CASES = (
    AlgorithmCase("dream", dr.dream,
                  {"num_tasks": 2, "num_workers": jax.local_device_count(), "local_steps": 2,
                   "momentum": 0.5, "qp_reg": 0.1},
                  _case_problem, invalid=_INVALID, stochastic=True, distributed=True),
    AlgorithmCase("dream_fmgda", dr.fmgda,
                  {"num_tasks": 2, "num_workers": jax.local_device_count(), "local_steps": 2},
                  _case_problem, invalid=(({"local_steps": 0}, "local_steps"),),
                  stochastic=True, distributed=True),
)


# --------------------------------------------------------------------------- the QP


def _np_project_simplex(v, iters=200):
    """Bisection on the threshold theta of max(v - theta, 0) (independent of the sort)."""
    lo, hi = v.min() - 1, v.max()
    for _ in range(iters):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(v - mid, 0).sum() > 1 else (lo, mid)
    return np.maximum(v - (lo + hi) / 2, 0)


# XLA:CPU's classic elemental emitters compile these small programs about 1.5 times faster than
# its newer MLIR fusion emitters (as in experiments/distributed/dream.py)
_FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}
_solve = jax.jit(dr.solve_task_qp, static_argnames=("num_iters", "solver"),
                 compiler_options=_FAST_COMPILE)


def _fista(gram, *, task_matrix=None, preference=None, reg=0.0):
    """The FISTA solver, 2000 iterations, always with the same arguments (A, p, mu given), so
    that every call with the same M hits one compiled program."""
    m = gram.shape[0]
    a = np.eye(m) if task_matrix is None else task_matrix
    p = np.full(m, 1.0 / m) if preference is None else preference
    return _solve(jnp.asarray(gram, jnp.float32), task_matrix=jnp.asarray(a, jnp.float32),
                  preference=jnp.asarray(p, jnp.float32), reg=reg, num_iters=2000,
                  solver="projected_gradient")


def _np_qp(q, p, mu):
    """The exact minimiser in float64 by active-set enumeration (M <= 4: every support S, the
    KKT system of the equality-constrained QP on S, the best nonnegative solution; the problem
    is convex, so its minimiser is one of these), instead of iterating a NumPy solver."""
    m = len(p)
    h = q + mu * np.eye(m)
    best, best_val = None, np.inf
    for mask in range(1, 2**m):
        sup = [i for i in range(m) if mask >> i & 1]
        k = len(sup)
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = h[np.ix_(sup, sup)]
        kkt[:k, k] = kkt[k, :k] = 1
        sol = np.linalg.lstsq(kkt, np.append(mu * p[sup], 1.0), rcond=None)[0]
        if sol[:k].min() < -1e-12:
            continue
        lam = np.zeros(m)
        lam[sup] = sol[:k]
        val = 0.5 * lam @ q @ lam + 0.5 * mu * np.sum((lam - p) ** 2)
        if val < best_val:
            best, best_val = lam, val
    return best


def test_project_simplex_matches_bisection():
    rng = np.random.default_rng(0)
    # one program per m, not one per eager op
    project = jax.jit(jax.vmap(dr.project_simplex), compiler_options=_FAST_COMPILE)
    for m in (2, 3, 5):
        vs = rng.normal(size=(5, m)) * 2
        got = np.asarray(project(jnp.asarray(vs, jnp.float32)))
        for v, g in zip(vs, got, strict=True):
            np.testing.assert_allclose(g, _np_project_simplex(v), atol=1e-6)
            assert abs(g.sum() - 1) < 1e-6 and g.min() >= 0


def test_two_task_qp_vs_scipy_with_regularization_and_task_matrix():
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(1)
    for _ in range(6):
        deltas = rng.normal(size=(2, 7))
        a = np.diag(rng.uniform(0.5, 2, 2)) + 0.2 * rng.normal(size=(2, 2))
        p = np.array([0.3, 0.7])
        mu = rng.uniform(0, 3)
        q = a.T @ (deltas @ deltas.T) @ a

        def obj(s, q=q, mu=mu, p=p):
            w = np.array([s, 1 - s])
            return 0.5 * w @ q @ w + 0.5 * mu * np.sum((w - p) ** 2)

        ref = minimize_scalar(obj, bounds=(0, 1), method="bounded",
                              options={"xatol": 1e-10}).x
        gram = jnp.asarray(deltas @ deltas.T, jnp.float32)
        got = _solve(gram, task_matrix=jnp.asarray(a, jnp.float32),
                     preference=jnp.asarray(p, jnp.float32), reg=mu)
        assert float(got[0]) == pytest.approx(ref, abs=2e-5)


def test_mgda_min_norm_point_of_a_segment():
    """mu = 0, A = I: the min-norm point of the segment [D1, D2] (closed form), conflict
    avoidance <D_m, d> >= ||d||^2, and the endpoint case (one gradient dominates)."""
    rng = np.random.default_rng(2)
    for _ in range(8):
        d1, d2 = rng.normal(size=(2, 5))
        s = np.clip((d2 - d1) @ d2 / np.sum((d1 - d2) ** 2), 0, 1)
        lam = np.asarray(_solve(jnp.asarray(np.stack([d1, d2]) @ np.stack([d1, d2]).T,
                                            jnp.float32)))
        assert lam[0] == pytest.approx(s, abs=1e-5)
        d = lam @ np.stack([d1, d2])
        assert min(d1 @ d, d2 @ d) >= d @ d - 1e-4
    d1, d2 = np.array([1.0, 0.0]), np.array([3.0, 0.0])  # d1 is the min-norm point
    g = jnp.asarray(np.stack([d1, d2]) @ np.stack([d1, d2]).T, jnp.float32)
    np.testing.assert_allclose(_solve(g), [1.0, 0.0], atol=1e-7)


def test_projected_gradient_solver_vs_numpy_reference():
    rng = np.random.default_rng(3)
    for m, mu in ((3, 0.0), (4, 0.5), (2, 0.0)):
        deltas = rng.normal(size=(m, 6))
        q = deltas @ deltas.T
        p = rng.dirichlet(np.ones(m))
        ref = _np_qp(q, p, mu)
        got = _fista(q, preference=p, reg=mu)
        np.testing.assert_allclose(np.asarray(got), ref, atol=2e-4)

        def val(lam, q=q, mu=mu, p=p):
            return 0.5 * lam @ q @ lam + 0.5 * mu * np.sum((lam - p) ** 2)

        assert val(np.asarray(got, np.float64)) <= val(ref) + 1e-5


def test_special_cases_scalarization_and_priorities():
    g = np.array([[2.0, -1.0, 0.3], [-1.0, 1.5, 0.2], [0.3, 0.2, 1.0]])
    p = np.array([0.2, 0.5, 0.3])
    lam = _fista(g, preference=p, reg=1e6)
    np.testing.assert_allclose(np.asarray(lam), p, atol=1e-5)
    # a diagonal A scales the tasks: the QP over A^T G A is the MGDA QP of the scaled Deltas
    a = np.diag([1.0, 2.0, 0.5])
    lam_a = _fista(g, task_matrix=a)
    lam_scaled = _fista(a @ g @ a)
    np.testing.assert_allclose(np.asarray(lam_a), np.asarray(lam_scaled), atol=1e-6)
    # "auto" (face enumeration for M > 2) and 2000 FISTA steps agree on this well-posed case
    auto = _solve(jnp.asarray(g, jnp.float32))
    np.testing.assert_allclose(np.asarray(auto), np.asarray(_fista(g)), atol=1e-7)
    # every point is a minimiser for a zero Gram: the preference (uniform) is returned;
    # a non-finite Gram gives NaN weights
    np.testing.assert_array_equal(np.asarray(_solve(jnp.zeros((3, 3)))), np.full(3, 1 / 3,
                                                                              np.float32))
    assert np.all(np.isnan(np.asarray(_solve(jnp.full((3, 3), jnp.nan)))))


def _np_kkt_qp(q, p, mu):
    """Independent float64 reference for any M: for every support S (itertools), the KKT
    system of the equality-constrained QP on the face S (lstsq), kept when lam_S >= 0 and the
    multiplier certifies optimality (every gradient entry off S is >= the common value on S);
    the certified point of smallest objective (several only when the minimiser is not unique).
    Returns (lam, objective)."""
    import itertools

    m = len(p)
    h = q + mu * np.eye(m)
    scale = np.abs(h).max() + mu
    best, best_val = None, np.inf
    for k in range(1, m + 1):
        for sup in map(list, itertools.combinations(range(m), k)):
            kkt = np.zeros((k + 1, k + 1))
            kkt[:k, :k] = h[np.ix_(sup, sup)]
            kkt[:k, k] = kkt[k, :k] = 1
            sol = np.linalg.lstsq(kkt, np.append(mu * p[sup], 1.0), rcond=None)[0]
            lam = np.zeros(m)
            lam[sup] = sol[:k]
            grad = h @ lam - mu * p
            if lam.min() < -1e-10 or np.min(grad + sol[k]) < -1e-10 * scale:
                continue
            val = 0.5 * lam @ q @ lam + 0.5 * mu * np.sum((lam - p) ** 2)
            if val < best_val:
                best, best_val = lam, val
    assert best is not None
    return best, best_val


def _np_objective(lam, q, p, mu):
    return 0.5 * lam @ q @ lam + 0.5 * mu * np.sum((lam - p) ** 2)


_BAD_GRADS = np.array([[10.0, 0.0], [0.0, 0.1], [0.1, 0.1]])  # norms 10, 0.1, 0.14


def test_three_badly_scaled_gradients_min_norm_point():
    """The reported case: gradients (10, 0), (0, 0.1), (0.1, 0.1). The min-norm point of their
    hull lies on the segment [g1, g2] (closed form s = |g2|^2 / (|g1|^2 + |g2|^2)), so the
    weights are (s, 1 - s, 0) ~ (1e-4, 0.9999, 0), the Pareto gap is |g1||g2| / |g1 - g2| =
    0.0999950, and conflict avoidance <g_m, d> >= ||d||^2 holds (with equality for g1, g2).
    The default solver (float32) and the exact solver agree with the closed form and with the
    NumPy face enumeration."""
    g = _BAD_GRADS
    s = 0.01 / 100.01
    exact = np.array([s, 1 - s, 0.0])
    ref, _ = _np_kkt_qp(g @ g.T, np.full(3, 1 / 3), 0.0)
    np.testing.assert_allclose(ref, exact, atol=1e-12)
    gram = jnp.asarray(g @ g.T, jnp.float32)
    for solver in ("auto", "exact"):
        lam = np.asarray(_solve(gram, solver=solver), np.float64)
        np.testing.assert_allclose(lam, exact, atol=1e-6)
        d = lam @ g
        assert np.min(g @ d - d @ d) >= -1e-6
    gap = float(jax.jit(dr.pareto_gap)(jnp.asarray(g, jnp.float32)))
    assert gap == pytest.approx(1 / np.sqrt(100.01), abs=1e-6)


def _bad_cases(m, count, rng, *, rank_deficient=False):
    """Gram matrices of m gradients with norms spread over 1e-2..1e2 (log-uniform, random
    directions in dimension m + 2, or m - 1 for a singular Gram), with four settings in turn:
    MGDA (mu = 0, A = I), mu > 0 with a random preference, a random task matrix A, and both."""
    grams, mats, prefs, regs = [], [], [], []
    for i in range(count):
        dim = m - 1 if rank_deficient else m + 2
        g = rng.normal(size=(m, dim))
        g *= 10 ** rng.uniform(-2, 2, size=(m, 1)) / np.linalg.norm(g, axis=1, keepdims=True)
        with_reg, with_a = i % 2 == 1, i % 4 >= 2
        grams.append(g @ g.T)
        mats.append(np.diag(rng.uniform(0.5, 2, m)) + 0.2 * rng.normal(size=(m, m)) if with_a
                    else np.eye(m))
        prefs.append(rng.dirichlet(np.ones(m)) if with_reg else np.full(m, 1 / m))
        regs.append(10 ** rng.uniform(-3, 1) if with_reg else 0.0)
    return tuple(np.stack(v) for v in (grams, mats, prefs, regs))


def _solve_one(gram, a, p, mu):
    return dr.solve_task_qp(gram, task_matrix=a, preference=p, reg=mu)


# one compiled program per (M, dtype)
_solve_many = jax.jit(jax.vmap(_solve_one), compiler_options=_FAST_COMPILE)


def _batch(grams, mats, prefs, regs, dtype):
    args = (jnp.asarray(v, dtype) for v in (grams, mats, prefs, regs))
    return np.asarray(_solve_many(*args), np.float64)


@pytest.mark.parametrize("m", [3, 4, 5, 6])
def test_qp_exact_on_badly_conditioned_cases(m):
    """M = 3..6 tasks, gradient norms over 1e-2..1e2, with and without mu, preference and
    task matrix: the default solver against the NumPy KKT enumeration. Float64: lambda to 1e-7
    and the objective to 1e-12 of the scale max|Q| + mu; float32: the objective to 1e-7 of the
    scale (FISTA at its default 100 iterations is off by up to 1e-4 of the scale and its
    lambda by up to 0.9). A singular Gram (fewer dimensions than tasks, several minimisers):
    the objective only."""
    rng = np.random.default_rng(100 + m)
    grams, mats, prefs, regs = _bad_cases(m, 16, rng)
    sing = _bad_cases(m, 8, rng, rank_deficient=True)
    with jax.enable_x64(True):
        got64 = _batch(grams, mats, prefs, regs, jnp.float64)
        sing64 = _batch(*sing, jnp.float64)
    got32 = _batch(grams, mats, prefs, regs, jnp.float32)
    for i in range(len(grams)):
        q = mats[i].T @ grams[i] @ mats[i]
        ref, val = _np_kkt_qp(q, prefs[i], regs[i])
        scale = np.abs(q).max() + regs[i]
        np.testing.assert_allclose(got64[i], ref, atol=1e-7)
        assert abs(_np_objective(got64[i], q, prefs[i], regs[i]) - val) <= 1e-12 * scale
        assert abs(got32[i].sum() - 1) < 1e-5 and got32[i].min() >= 0
        assert _np_objective(got32[i], q, prefs[i], regs[i]) - val <= 1e-7 * scale
    for i in range(len(sing[0])):
        q = sing[1][i].T @ sing[0][i] @ sing[1][i]
        _, val = _np_kkt_qp(q, sing[2][i], sing[3][i])
        scale = np.abs(q).max() + sing[3][i]
        assert abs(sing64[i].sum() - 1) < 1e-12 and sing64[i].min() >= 0
        assert abs(_np_objective(sing64[i], q, sing[2][i], sing[3][i]) - val) <= 1e-12 * scale


def test_qp_rejects_bad_solver_and_iters():
    g = np.eye(2)  # the checks come before any array op
    with pytest.raises(ValueError, match="solver"):
        dr.solve_task_qp(g, solver="newton")
    with pytest.raises(ValueError, match="num_iters"):
        dr.solve_task_qp(g, num_iters=0)
    with pytest.raises(ValueError, match="solver='exact'.*M = 11"):
        dr.solve_task_qp(np.eye(11), solver="exact")


def test_qp_dtypes_and_many_tasks():
    """16-bit Gram: computed in float32, returned in bfloat16. M = 11 (above the enumeration
    bound): "auto" is FISTA then the exact solve on FISTA's support, equal to the NumPy KKT
    enumeration on a well-posed case and never worse than FISTA alone."""
    g = _BAD_GRADS @ _BAD_GRADS.T
    lam16 = _solve(jnp.asarray(g, jnp.bfloat16))
    assert lam16.dtype == jnp.bfloat16
    ref32 = _solve(jnp.asarray(g, jnp.bfloat16).astype(jnp.float32))
    np.testing.assert_array_equal(np.asarray(lam16), np.asarray(ref32.astype(jnp.bfloat16)))
    rng = np.random.default_rng(7)
    m = dr.EXACT_MAX_TASKS + 1
    deltas = rng.normal(size=(m, m + 3)) * rng.uniform(0.5, 2, size=(m, 1))
    q, p = deltas @ deltas.T, rng.dirichlet(np.ones(m))
    ref, val = _np_kkt_qp(q, p, 0.1)
    args = (jnp.asarray(q, jnp.float32),)
    kw = {"preference": jnp.asarray(p, jnp.float32), "reg": 0.1}  # 100 FISTA steps: off by 5e-3
    auto = np.asarray(_solve(*args, **kw), np.float64)
    pgd = np.asarray(_solve(*args, **kw, solver="projected_gradient"), np.float64)
    np.testing.assert_allclose(auto, ref, atol=1e-5)
    assert _np_objective(auto, q, p, 0.1) <= _np_objective(pgd, q, p, 0.1) + 1e-6


# --------------------------------------------------------------------------- rounds vs NumPy


def _np_rounds(a, b, rounds, *, k, eta, eta_g, beta, cv, trajectory, fixed, p, mu=0.0,
               weights=None):
    """DREAM rounds in NumPy float64 (exact gradients), the QP by SciPy's bounded scalar
    minimiser (M = 2); ``weights``: the server's client weights (default equal)."""
    from scipy.optimize import minimize_scalar  # imported here: SciPy takes a second to import

    n, m, _, d = a.shape
    w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
    x = np.zeros(d)
    ci, cg = np.zeros((n, m, d)), np.zeros((m, d))
    v = np.zeros((n, m, d))
    lam = p.copy()
    xs = []
    for _ in range(rounds):
        local = np.zeros((n, m, d))
        for i in range(n):
            y = np.tile(x, (m, 1)) if trajectory == "per_task" else x.copy()
            acc = np.zeros((m, d))
            for _ in range(k):
                pts = y if trajectory == "per_task" else np.tile(y, (m, 1))
                g = np.stack([a[i, j].T @ (a[i, j] @ pts[j] - b[i, j]) for j in range(m)])
                corr = (cg - ci[i]) if cv else 0.0
                v[i] = beta * v[i] + (1 - beta) * (g + corr)
                acc += v[i]
                y = y - eta * v[i] if trajectory == "per_task" else y - eta * (lam @ v[i])
            local[i] = eta * acc
        delta = np.tensordot(w / w.sum(), local, axes=1)
        if fixed:
            lam = p.copy()
        else:
            q = delta @ delta.T

            def obj(s, q=q):
                w = np.array([s, 1 - s])
                return 0.5 * w @ q @ w + 0.5 * mu * np.sum((w - p) ** 2)

            s = minimize_scalar(obj, bounds=(0, 1), method="bounded",
                                options={"xatol": 1e-12}).x
            lam = np.array([s, 1 - s])
        x = x - eta_g * lam @ delta
        if cv:
            ci = ci - cg + local / (k * eta)
            cg = delta / (k * eta)
        xs.append(x.copy())
    return np.stack(xs)


@functools.cache
def _rounds_problem():
    """One small federated problem (4 clients, d = 4) for every rounds test. Its draw uses an
    ``unsafe_rbg`` key: the threefry sampling program alone compiles for seconds on CPU."""
    return dr.multitask_least_squares(jax.random.key(5, impl="unsafe_rbg"), num_clients=4,
                                      dim=4, rows=6)


def _run(alg, oracle, num_steps, trace_fn=None):
    """``base.run`` from x0 = 0 and key 0 as one jitted program (fast-compile options)."""
    run = jax.jit(lambda o, k: base.run(alg, jnp.zeros(4), o, k, num_steps, trace_fn=trace_fn),
                  compiler_options=_FAST_COMPILE)
    return run(oracle, jax.random.key(0))


def _trace_x_info(step, state, oracle):
    del state, oracle
    return step.x, step.info


# the server weights of the weighted case: unequal, and a weight-0 (padding) client
_WEIGHTS = (1.0, 2.0, 0.5, 0.0)


@pytest.mark.parametrize("settings", [
    {"trajectory": "shared", "cv": True, "beta": 0.5, "fixed": False, "mu": 0.3,
     "weights": _WEIGHTS},
    {"trajectory": "per_task", "cv": False, "beta": 0.0, "fixed": False, "mu": 0.0,
     "weights": None},
])
def test_rounds_match_numpy(settings):
    """Four rounds == the NumPy re-implementation, for the shared trajectory with control
    variates, momentum and mu > 0 under weighted clients (WeightedClients: unequal weights and
    a weight-0 client), and for FMGDA-style per-task trajectories; with the info accounting
    (K M gradient evaluations and M d float32 values per client and round)."""
    prob = _rounds_problem()
    oracle = prob if settings["weights"] is None else dr.WeightedClients(
        prob, jnp.asarray(settings["weights"], jnp.float32))
    p = np.array([0.4, 0.6])
    alg = dr.dream(num_tasks=2, num_workers=4, local_steps=3, local_lr=0.1, global_lr=0.8,
                   momentum=settings["beta"], qp_reg=settings["mu"], preference=p,
                   control_variates=settings["cv"], trajectory=settings["trajectory"],
                   fixed_weights=settings["fixed"])
    _, (trace, info) = _run(alg, oracle, 4, _trace_x_info)
    ref = _np_rounds(np.asarray(prob.a, np.float64), np.asarray(prob.b, np.float64), 4, k=3,
                     eta=0.1, eta_g=0.8, beta=settings["beta"], cv=settings["cv"],
                     trajectory=settings["trajectory"], fixed=settings["fixed"], p=p,
                     mu=settings["mu"], weights=settings["weights"])
    np.testing.assert_allclose(np.asarray(trace), ref, rtol=2e-4, atol=2e-5)
    # summed over the 4 clients (a weight-0 client computes and is counted too)
    np.testing.assert_array_equal(np.asarray(info["oracle_calls"]), 4 * 3 * 2)
    np.testing.assert_array_equal(np.asarray(info["bits_sent"]), 4 * 2 * 4 * 32)
    assert info["bits_sent"].dtype == jnp.float32


def test_weighted_global_task_grads():
    """grad F_m of WeightedClients is the weighted mean of the clients' gradients; equal
    weights give the plain mean."""
    prob = _rounds_problem()
    a, b = np.asarray(prob.a, np.float64), np.asarray(prob.b, np.float64)
    x = np.linspace(-1, 1, 4)
    per_client = np.einsum("imrd,imr->imd", a, np.einsum("imrd,d->imr", a, x) - b)
    grads = jax.jit(dr.global_task_grads, static_argnums=2, compiler_options=_FAST_COMPILE)
    w = np.asarray(_WEIGHTS)
    got = grads(dr.WeightedClients(prob, jnp.asarray(w, jnp.float32)), jnp.asarray(x), 2)
    np.testing.assert_allclose(np.asarray(got), np.tensordot(w / w.sum(), per_client, 1),
                               rtol=1e-5, atol=1e-6)
    plain = grads(dr.WeightedClients(prob, jnp.ones(4)), jnp.asarray(x), 2)
    np.testing.assert_allclose(np.asarray(plain), per_client.mean(0), rtol=1e-5, atol=1e-6)


def test_fedavg_scalarized_matches_numpy():
    """FedAvg on the scalarization (fixed weights p, no control variates) == NumPy FedAvg on
    sum_m p_m f_{i,m}."""
    prob = _rounds_problem()
    alg = dr.fedavg_scalarized(num_tasks=2, num_workers=4, local_steps=2, local_lr=0.1)
    final = _run(alg, prob, 3)[0].params[0]
    ref = _np_rounds(np.asarray(prob.a, np.float64), np.asarray(prob.b, np.float64), 3, k=2,
                     eta=0.1, eta_g=1.0, beta=0.0, cv=False, trajectory="shared", fixed=True,
                     p=np.array([0.5, 0.5]))[-1]
    np.testing.assert_allclose(np.asarray(final), ref, rtol=1e-5, atol=1e-6)


# simulate == shard_map on 8 devices: the "distributed" check of the property matrix
# (tests/test_contract.py) runs it on both CONTRACT_CASES (stochastic, 8 clients).


def test_multihost_case_builds(experiment):
    make, x0, oracle, steps = experiment.multihost_case(2)
    assert isinstance(make(None), base.OracleAlgorithm) and steps >= 1
    assert oracle.problem.a.shape[0] == 2 and x0.shape == oracle.problem.a.shape[-1:]


# --------------------------------------------------------------------------- claims


class _LongTaskGrad(NamedTuple):
    """Task gradients one entry longer than the model."""

    a: jax.Array

    def task_grad(self, x, task, key):
        del task, key
        return self.a * jnp.ones((x.shape[0] + 1,), x.dtype)


@pytest.mark.parametrize("trajectory", ["shared", "per_task"])
def test_task_gradient_of_another_shape_raises_value_error(trajectory):
    """A task gradient whose shape differs from the model's raises a ValueError naming the
    shapes, where a broadcasting TypeError leaked from the local steps."""
    nw = jax.local_device_count()
    alg = dr.dream(num_tasks=2, num_workers=nw, local_steps=1, trajectory=trajectory)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"dream: oracle\.task_grad\(x, m\) and x disagree at "
                       r"leaf .*shape \(4,\) vs \(3,\)"):
        alg.update(alg.init(jnp.zeros(3), key), _LongTaskGrad(jnp.ones((nw,))), key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0 (deterministic): every claim passes. Margins: QP errors 1e-5 level
    and below (thresholds 1e-3, 1e-5, -1e-6), win fraction 8/8 (0.875), DREAM gap 0 (1e-3),
    FMGDA gap ~0.6 (0.05), speedup slope ~-0.98 (-0.5)."""
    runner.check_quick_claims(experiment, quick_results)
    assert not getattr(experiment, "KNOWN_FAILING", ())
    runner.check_figures(experiment, quick_results, experiment.QUICK, names={"drift", "speedup"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (drift and speedup) pass the readability check: titles, axis labels,
    legends that say what the shaded bands are, y-ranges fitted to the data, tick labels that do not
    overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
