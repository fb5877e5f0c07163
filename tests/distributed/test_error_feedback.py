"""EF / EF21 (jaxopt_icml.distributed.error_feedback): contract cases, NumPy re-derivations of
a few steps, EF21 with the identity compressor == gradient descent, the step and rate formulas,
the per-step Lyapunov contraction, shard_map == vmap, errors, and the claims at quick size."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml.distributed import compressors as C
from jaxopt_icml.distributed import error_feedback as E
from jaxopt_icml.testing import AlgorithmCase


class _Quadratics(NamedTuple):
    """Worker ``i``: ``f_i = 0.5 sum_leaves a_i ||x - b_i||^2`` on a pytree, plus noise."""

    a: jax.Array
    b: dict
    noise: jax.Array

    def grad(self, x, key):
        keys = jax.random.split(key, 2)
        return {n: (self.a * (x[n].astype(jnp.float32) - self.b[n].astype(jnp.float32))
                    + self.noise * jax.random.normal(keys[i], x[n].shape)).astype(x[n].dtype)
                for i, n in enumerate(sorted(x))}


def _problem(key, dtype):
    n = jax.local_device_count()
    k1, k2 = jax.random.split(key)
    b = {"m": jax.random.normal(k1, (n, 2, 2)).astype(dtype),
         "v": jax.random.normal(k2, (n, 3)).astype(dtype)}
    oracle = _Quadratics(jnp.linspace(0.5, 1.0, n), b, jnp.full((n,), 0.1))
    return {"m": jnp.zeros((2, 2), dtype), "v": jnp.zeros((3,), dtype)}, oracle


def _make(method, compressor, **kw):
    return (E.ef if method == "ef" else E.ef21)(compressor, **kw)


_INVALID = (({"learning_rate": 0.0}, "learning_rate"), ({"learning_rate": -1.0}, "learning_rate"),
            ({"num_workers": 0}, "num_workers"), ({"compressor": "top_k"}, "compressor"),
            ({"axis_name": ""}, "axis_name"))
NW = jax.local_device_count()
CONTRACT_CASES = (
    AlgorithmCase("error_feedback_ef_top_k", functools.partial(_make, "ef"),
                  {"compressor": C.top_k(2), "learning_rate": 0.3, "num_workers": NW},
                  _problem, invalid=_INVALID, stochastic=True, distributed=True),
    AlgorithmCase("error_feedback_ef21_rand_k", functools.partial(_make, "ef21"),
                  {"compressor": C.rand_k(3), "learning_rate": 0.3, "num_workers": NW},
                  _problem, invalid=_INVALID, stochastic=True, distributed=True),
)


# --------------------------------------------------------------------------- NumPy references


class _Lin(NamedTuple):
    h: jax.Array
    b: jax.Array

    def grad(self, x, key):
        del key
        return self.h @ x - self.b


def _lin_problem(n=4, d=6, seed=0):
    rng = np.random.default_rng(seed)
    q = np.stack([np.linalg.qr(rng.normal(size=(d, d)))[0] for _ in range(n)])
    ev = rng.uniform(0.5, 2.0, size=(n, d))
    h = np.einsum("nij,nj,nkj->nik", q, ev, q)
    b = rng.normal(size=(n, d))
    return h, b


def _np_topk(v, k):
    out = np.zeros_like(v)
    idx = np.argsort(-np.abs(v), kind="stable")[:k]
    out[idx] = v[idx]
    return out


def test_ef_and_ef21_match_numpy_recurrences():
    h, b = _lin_problem()
    n, d = b.shape
    eta, k, steps = 0.2, 2, 6
    orc = _Lin(jnp.asarray(h, jnp.float32), jnp.asarray(b, jnp.float32))
    x0 = jnp.zeros(d, jnp.float32)
    # EF: v_i = eta g_i(x) + e_i, m_i = top_k(v_i), e_i = v_i - m_i, x -= mean(m_i)
    x, e = np.zeros(d), np.zeros((n, d))
    xs = []
    for _ in range(steps):
        v = eta * (np.einsum("nij,j->ni", h, x) - b) + e
        m = np.stack([_np_topk(vi, k) for vi in v])
        e, x = v - m, x - m.mean(0)
        xs.append(x)
    _, tr = base.run(E.ef(C.top_k(k), eta, num_workers=n), x0, orc, jax.random.key(0), steps,
                     trace_fn=lambda s, st, o: s.x)
    np.testing.assert_allclose(np.asarray(tr), np.stack(xs), rtol=1e-5, atol=1e-5)
    # EF21: x -= eta mean(c), m_i = top_k(g_i(x) - c_i), c_i += m_i
    x, c = np.zeros(d), np.zeros((n, d))
    xs = []
    for _ in range(steps):
        x = x - eta * c.mean(0)
        g = np.einsum("nij,j->ni", h, x) - b
        c = c + np.stack([_np_topk(gi - ci, k) for gi, ci in zip(g, c, strict=True)])
        xs.append(x)
    _, tr = base.run(E.ef21(C.top_k(k), eta, num_workers=n), x0, orc, jax.random.key(0), steps,
                     trace_fn=lambda s, st, o: (s.x, s.info))
    np.testing.assert_allclose(np.asarray(tr[0]), np.stack(xs), rtol=1e-5, atol=1e-5)
    assert np.all(np.asarray(tr[1]["bits_sent"]) == n * k * (32 + math.ceil(math.log2(d))))
    assert np.all(np.asarray(tr[1]["oracle_calls"]) == n)


def test_ef21_with_identity_is_gradient_descent():
    h, b = _lin_problem(3, 5, 1)
    eta = 0.3
    orc = _Lin(jnp.asarray(h), jnp.asarray(b))
    _, tr = base.run(E.ef21(C.identity(), eta, num_workers=3), jnp.zeros(5), orc,
                     jax.random.key(0), 8, trace_fn=lambda s, st, o: s.x)
    # the first update initialises c_i = grad f_i(x0); then x_{k+1} = x_k - eta grad f(x_k)
    x, ref = np.zeros(5), [np.zeros(5)]
    for _ in range(7):
        x = x - eta * (np.einsum("nij,j->ni", h, x) - b).mean(0)
        ref.append(x)
    np.testing.assert_allclose(np.asarray(tr), np.stack(ref), rtol=1e-5, atol=1e-6)


def test_step_sizes_and_rate_formulas():
    mu, L = 0.5, 1.0
    for delta in (0.1, 0.5, 0.9):
        s = math.sqrt(1 - delta)
        eta = E.optimal_step_size(mu, L, delta, "ef")
        assert eta == pytest.approx(2 / (mu + L) * (1 - s) / (1 + s))
        assert eta == E.optimal_step_size(mu, L, delta, "ef21")
        assert E.optimal_step_size(mu, L, delta, "cgd") == pytest.approx(2 / ((1 + s) * 1.5))
    # heterogeneous agents: the mean of mu_i + L_i
    assert E.optimal_step_size([0.5, 1.0], [1.0, 2.0], 0.5) == pytest.approx(
        E.optimal_step_size(0.75, 1.5, 0.5))
    # delta = 1: gradient descent's ((L - mu)/(L + mu))^2; probe values of the spec
    assert E.tight_rate(1.0, 3.0, 1.0) == pytest.approx(0.25)
    for delta, probe in ((0.25, 0.9532), (0.5, 0.8911), (0.75, 0.7953), (0.9, 0.6877)):
        assert math.sqrt(E.tight_rate(mu, L, delta)) == pytest.approx(probe, abs=1e-4)


def test_rotation_radius_single_agent_closed_form():
    # single agent, EF21: characteristic polynomial t^2 - t (1 - eta lam + s z (1 + eta lam)) + s z
    eta, delta, lam, th = 0.2, 0.5, 0.8, 0.9
    s, z = math.sqrt(1 - delta), np.exp(1j * th)
    roots = np.roots([1, -(1 - eta * lam + s * z * (1 + eta * lam)), s * z])
    got = E.rotation_spectral_radius("ef21", eta, delta, [[lam]], [[th]])
    assert got[0] == pytest.approx(np.max(np.abs(roots)), rel=1e-12)
    # and the real 2-D simulation with the rotation compressor contracts at that radius
    comp = C.rotation(delta, th)
    with jax.enable_x64(True):
        orc = _Lin(lam * jnp.eye(2, dtype=jnp.float64)[None], jnp.zeros((1, 2), jnp.float64))
        _, xs = base.run(E.ef21(comp, eta, num_workers=1), jnp.ones(2, jnp.float64), orc,
                         jax.random.key(0), 400, trace_fn=lambda s_, st, o: jnp.linalg.norm(s_.x))
    xs = np.asarray(xs)
    assert (xs[399] / xs[299]) ** (1 / 100) == pytest.approx(got[0], rel=1e-3)


@pytest.mark.parametrize("method", ["ef", "ef21"])
def test_lyapunov_contracts_every_step(method):
    """V_{k+1} <= rho V_k at eta* with top-k (delta = k/d) over 4 agents (EF21: heterogeneous
    minimisers; EF: a common one), float64, while V is far above round-off."""
    h, b = _lin_problem(4, 10, 2)
    mu, L = 0.5, 2.0
    k, d = 4, 10
    delta = k / d
    x_opt = np.linalg.solve(h.mean(0), b.mean(0))
    if method == "ef":
        b = np.einsum("nij,j->ni", h, x_opt)
    rho = E.tight_rate(mu, L, delta)
    with jax.enable_x64(True):
        orc = _Lin(jnp.asarray(h), jnp.asarray(b))
        alg = (E.ef if method == "ef" else E.ef21)(
            C.top_k(k), E.optimal_step_size(mu, L, delta, method), num_workers=4)

        def trace(step, st, o):
            if method == "ef":
                return E.lyapunov_ef(step.x - jnp.asarray(x_opt), st.error, delta)
            g = jax.vmap(lambda oi: oi.grad(step.x, None))(o)
            return E.lyapunov_ef21(g, st.memory, delta)

        _, v = base.run(alg, jnp.zeros(d), orc, jax.random.key(0), 60, trace_fn=trace)
    v = np.asarray(v)
    assert v[-1] < 1e-3 * v[0]
    assert np.max(v[1:] / v[:-1]) <= rho * (1 + 1e-9)


def test_mesh_equals_simulation():
    """EF21 (top-2, 8 workers): vmap simulation == shard_map over 8 devices (EF's agreement is
    the contract matrix's distributed check)."""
    x0, orc = _problem(jax.random.key(0), jnp.float32)
    runs = []
    for mesh_ in (None, mesh_lib.make_mesh()):
        alg = E.ef21(C.top_k(2), 0.3, num_workers=NW, mesh=mesh_)
        runs.append(jax.jit(lambda x, o, k, a=alg: base.run(a, x, o, k, 4))(
            x0, orc, jax.random.key(1)))
    sim, shd = runs
    for a, bb in zip(jax.tree.leaves(sim), jax.tree.leaves(shd), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(bb), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call,name", [
    (lambda: E.optimal_step_size(0.5, 1.0, 0.0), "delta"),
    (lambda: E.optimal_step_size(0.5, 1.0, 1.5), "delta"),
    (lambda: E.optimal_step_size(0.5, 1.0, 0.5, "sgd"), "method"),
    (lambda: E.optimal_step_size(2.0, 1.0, 0.5), "mu"),
    (lambda: E.tight_rate(0.0, 1.0, 0.5), "mu"),
    (lambda: E.tight_rate([0.5, 0.5], [1.0, 2.0], 0.5), "scalar"),
    (lambda: E.lyapunov_ef(jnp.zeros(2), jnp.zeros((1, 2)), 1.0), "delta"),
    (lambda: E.rotation_spectral_radius("cgd", 0.1, 0.5, [[1.0, 1.0]], [[0.0, 0.0]]), "cgd"),
    (lambda: E.ef(C.top_k(1), 0.1, num_workers=2, mesh="cpu"), "mesh"),
])
def test_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --------------------------------------------------------------------------- claims


class _ReshapedGrad(NamedTuple):
    """A gradient with x's number of entries but another leaf shape: {"m": (4,)} for a (2, 2)
    leaf. Flattened, it has the right length."""

    a: jax.Array

    def grad(self, x, key):
        del key
        return {"m": self.a * jnp.ones((4,), x["m"].dtype), "v": jnp.zeros_like(x["v"])}


@pytest.mark.parametrize("method", ["ef", "ef21"])
def test_gradient_of_another_leaf_shape_raises_value_error(method):
    """The oracle's gradient must have x's leaf shapes: a ValueError names the leaf, where a
    (4,) gradient for a (2, 2) leaf used to be flattened into a vector of the right length
    and accepted silently."""
    x0 = {"m": jnp.zeros((2, 2)), "v": jnp.zeros(3)}
    alg = _make(method, C.top_k(2), learning_rate=0.1, num_workers=NW)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=rf"{method}: oracle\.grad\(x\) and x disagree at leaf "
                       r"\['m'\]: shape \(4,\) vs \(2, 2\)"):
        alg.update(alg.init(x0, key), _ReshapedGrad(jnp.ones((NW,))), key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0 (deterministic: top-k and fixed data). Margins: linear-family
    claims at 1e-15 (tolerance 1e-6), step margin 0.009, CGD below EF by 1e-3, Lyapunov
    ratios <= 0.997, gradient bound ratio 0.65, fitted rates <= 0.993 rho."""
    runner.check_quick_claims(experiment, quick_results)
    assert not getattr(experiment, "KNOWN_FAILING", ())
    runner.check_figures(experiment, quick_results, experiment.QUICK, names={"rates"})


def test_benchmark_and_multihost_case_smoke(experiment):
    out = experiment.benchmark(dim=1000, num_workers=NW, repeats=2, inner=2)
    assert out["k"] == 10 and out["bits_sgd"] == NW * 32 * 1000
    assert out["bits_ef21"] == NW * 10 * (32 + 10)
    assert np.isfinite(out["ratio_median"]) and out["ratio_median"] > 0
    make, x0, oracle, steps = experiment.multihost_case(NW)
    state, info = jax.jit(lambda x, o, k: base.run(make(None), x, o, k, steps))(
        x0, oracle, jax.random.key(0))
    assert state.x.shape == (NW, 8) and np.all(np.asarray(info["bits_sent"]) == NW * 2 * 35)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figure (rates) passes the readability check: titles, axis labels, legends,
    y-ranges fitted to the data (the ridge panel no longer reaches down to 1e-22), tick labels
    that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
