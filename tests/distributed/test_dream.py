"""DREAM (jaxopt_icml.distributed.dream): contract cases, the server QP against closed forms,
SciPy and a NumPy projected-gradient solver, rounds against a NumPy re-implementation,
simulate == shard_map on 8 devices, and the claims at quick size."""

from __future__ import annotations

import functools
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from jaxopt_icml import base, theory
from jaxopt_icml import mesh as mesh_lib
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


_solve = jax.jit(dr.solve_task_qp, static_argnames=("num_iters", "solver"))


def _np_qp(q, p, mu, iters=3000):
    """Plain projected gradient (step 1/||Q + mu I||_2) run to convergence in float64."""
    step = 1 / (np.linalg.eigvalsh(q).max() + mu)
    lam = p.copy()
    for _ in range(iters):
        lam = _np_project_simplex(lam - step * (q @ lam + mu * (lam - p)), 45)
    return lam


def test_project_simplex_matches_bisection():
    rng = np.random.default_rng(0)
    for m in (2, 3, 5):
        for _ in range(5):
            v = rng.normal(size=m) * 2
            got = np.asarray(dr.project_simplex(jnp.asarray(v, jnp.float32)))
            np.testing.assert_allclose(got, _np_project_simplex(v), atol=1e-6)
            assert abs(got.sum() - 1) < 1e-6 and got.min() >= 0


def test_two_task_qp_vs_scipy_with_regularization_and_task_matrix():
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
        got = _solve(jnp.asarray(q, jnp.float32), preference=jnp.asarray(p, jnp.float32),
                     reg=mu, num_iters=2000, solver="projected_gradient")
        np.testing.assert_allclose(np.asarray(got), ref, atol=2e-4)

        def val(lam, q=q, mu=mu, p=p):
            return 0.5 * lam @ q @ lam + 0.5 * mu * np.sum((lam - p) ** 2)

        assert val(np.asarray(got, np.float64)) <= val(ref) + 1e-5


def test_special_cases_scalarization_and_priorities():
    g = jnp.asarray([[2.0, -1.0, 0.3], [-1.0, 1.5, 0.2], [0.3, 0.2, 1.0]], jnp.float32)
    p = np.array([0.2, 0.5, 0.3])
    lam = _solve(g, preference=jnp.asarray(p, jnp.float32), reg=1e6, num_iters=2000)
    np.testing.assert_allclose(np.asarray(lam), p, atol=1e-5)
    # a diagonal A scales the tasks: the QP over A^T G A is the MGDA QP of the scaled Deltas
    a = np.diag([1.0, 2.0, 0.5])
    lam_a = _solve(g, task_matrix=jnp.asarray(a, jnp.float32), num_iters=2000)
    lam_scaled = _solve(jnp.asarray(a @ np.asarray(g) @ a, jnp.float32), num_iters=2000)
    np.testing.assert_allclose(np.asarray(lam_a), np.asarray(lam_scaled), atol=1e-6)


def test_qp_rejects_bad_solver_and_iters():
    g = jnp.eye(2)
    with pytest.raises(ValueError, match="solver"):
        dr.solve_task_qp(g, solver="newton")
    with pytest.raises(ValueError, match="num_iters"):
        dr.solve_task_qp(g, num_iters=0)


# --------------------------------------------------------------------------- rounds vs NumPy


def _np_rounds(a, b, rounds, *, k, eta, eta_g, beta, cv, trajectory, fixed, p, mu=0.0):
    """DREAM rounds in NumPy float64 (exact gradients), the QP by SciPy's bounded scalar
    minimiser (M = 2)."""
    n, m, _, d = a.shape
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
        delta = local.mean(0)
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


@pytest.mark.parametrize("settings", [
    {"trajectory": "shared", "cv": True, "beta": 0.5, "fixed": False, "mu": 0.3},
    {"trajectory": "per_task", "cv": False, "beta": 0.0, "fixed": False, "mu": 0.0},
])
def test_rounds_match_numpy(settings):
    prob = dr.multitask_least_squares(jax.random.key(5), num_clients=3, dim=4, rows=6)
    p = np.array([0.4, 0.6])
    alg = dr.dream(num_tasks=2, num_workers=3, local_steps=3, local_lr=0.1, global_lr=0.8,
                   momentum=settings["beta"], qp_reg=settings["mu"], preference=p,
                   control_variates=settings["cv"], trajectory=settings["trajectory"],
                   fixed_weights=settings["fixed"])
    _, trace = base.run(alg, jnp.zeros(4), prob, jax.random.key(0), 4,
                        trace_fn=lambda s, st, o: s.x)
    ref = _np_rounds(np.asarray(prob.a, np.float64), np.asarray(prob.b, np.float64), 4, k=3,
                     eta=0.1, eta_g=0.8, beta=settings["beta"], cv=settings["cv"],
                     trajectory=settings["trajectory"], fixed=settings["fixed"], p=p,
                     mu=settings["mu"])
    np.testing.assert_allclose(np.asarray(trace), ref, rtol=2e-4, atol=2e-5)


def test_fedavg_scalarized_matches_numpy():
    """FedAvg on the scalarization (fixed weights p, no control variates) == NumPy FedAvg on
    sum_m p_m f_{i,m}."""
    prob = dr.multitask_least_squares(jax.random.key(6), num_clients=2, dim=3, rows=4)
    alg = dr.fedavg_scalarized(num_tasks=2, num_workers=2, local_steps=2, local_lr=0.1)
    final = base.run(alg, jnp.zeros(3), prob, jax.random.key(0), 3)[0].params[0]
    ref = _np_rounds(np.asarray(prob.a, np.float64), np.asarray(prob.b, np.float64), 3, k=2,
                     eta=0.1, eta_g=1.0, beta=0.0, cv=False, trajectory="shared", fixed=True,
                     p=np.array([0.5, 0.5]))[-1]
    np.testing.assert_allclose(np.asarray(final), ref, rtol=1e-5, atol=1e-6)


def test_simulate_equals_shard_map_on_8_devices():
    n = jax.local_device_count()
    if n < 2:
        pytest.skip("needs several (simulated) devices")
    prob = dr.multitask_least_squares(jax.random.key(8), num_clients=n, dim=4, rows=5,
                                      noise_std=0.2)
    kw = {"num_tasks": 2, "num_workers": n, "local_steps": 3, "momentum": 0.5}
    sim = base.run(dr.dream(**kw), jnp.zeros(4), prob, jax.random.key(0), 4)
    shd = base.run(dr.dream(**kw, mesh=mesh_lib.make_mesh()), jnp.zeros(4), prob,
                   jax.random.key(0), 4)
    for a, b in zip(jax.tree.leaves(sim), jax.tree.leaves(shd), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
    info = sim[1]  # summed over clients: K M gradient evaluations, M d float32 values each
    np.testing.assert_array_equal(np.asarray(info["oracle_calls"]), n * 3 * 2)
    np.testing.assert_array_equal(np.asarray(info["bits_sent"]), n * 2 * 4 * 32)
    assert info["bits_sent"].dtype == jnp.float32


def test_multihost_case_builds():
    import experiments.dream as exp

    make, x0, oracle, steps = exp.multihost_case(2)
    assert isinstance(make(None), base.OracleAlgorithm) and steps >= 1
    assert oracle.problem.a.shape[0] == 2 and x0.shape == oracle.problem.a.shape[-1:]


# --------------------------------------------------------------------------- claims


@functools.lru_cache(maxsize=1)
def _quick_results():
    import experiments.dream as exp

    return exp.run(exp.QUICK, jax.random.PRNGKey(0))


@pytest.mark.claims
def test_quick_claims():
    """QUICK config, key 0 (deterministic): every claim passes. Margins: QP errors 1e-5 level
    and below (thresholds 1e-3, 1e-5, -1e-6), win fraction 8/8 (0.875), DREAM gap 0 (1e-3),
    FMGDA gap ~0.6 (0.05), speedup slope ~-0.98 (-0.5)."""
    import experiments.dream as exp

    results = _quick_results()
    checked = theory.check(exp.CLAIMS, results)
    assert [c.name for c in checked] == [c.name for c in exp.CLAIMS]
    failed = [c for c in checked if not c.passed]
    assert not failed, theory.format_claims(checked)
    assert not getattr(exp, "KNOWN_FAILING", ())
    from experiments import common

    common.use_agg()
    import matplotlib.pyplot as plt

    figs = exp.plot(results, exp.QUICK)
    assert set(figs) == {"drift", "speedup"}
    for fig in figs.values():
        plt.close(fig)
