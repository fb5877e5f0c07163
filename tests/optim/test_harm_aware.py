"""Tests of the harm-aware update (jaxopt_icml.optim.harm_aware) and its experiment."""

from __future__ import annotations

import itertools
import os
import re
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.optim.harm_aware import (
    harm_aware,
    last_layer_gram,
    last_layer_stats,
    scale_by_harm_aware,
    solve_harm_dual,
)
from jaxopt_icml.testing import TransformationCase, transformation_checks

# --------------------------------------------------------------------------- contract cases

_B = 6


def _perturbation(path, shape, i):
    """A fixed, path-dependent direction for sample ``i`` (so that masked sub-trees see the
    same per-sample gradients restricted to their leaves)."""
    off = zlib.crc32(jax.tree_util.keystr(path).encode()) % 89 / 7.0
    t = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.float64)
    return (1.5 * np.cos(2.1 * t + 1.3 * i + off)).reshape(shape)


def _per_sample_grads_from(loss_fn):
    """``per_sample_grads(params)``: the loss gradient plus a large sample-specific term, so
    some constraints are violated and the projection is active in the matrix's runs."""

    def fn(params):
        g = jax.grad(loss_fn)(params)

        def leaf(path, x):
            pert = np.stack([_perturbation(path, x.shape, i) for i in range(_B)])
            ct = jnp.promote_types(x.dtype, jnp.float32)
            return x.astype(ct)[None] + jnp.asarray(pert, ct)

        return jax.tree_util.tree_map_with_path(leaf, g)

    return {"per_sample_grads": fn}


def _fixed_head_stats(loss_fn):
    del loss_fn  # the head statistics of the matrix case are fixed data
    t = np.arange(_B * 4, dtype=np.float64).reshape(_B, 4)
    e = np.cos(1.7 * t + 0.4)
    e = e - e.mean(1, keepdims=True)  # residuals of a softmax sum to zero
    a = np.sin(0.9 * np.arange(_B * 3).reshape(_B, 3) + 0.2)
    return {"harm_stats": (jnp.asarray(e, jnp.float32), jnp.asarray(a, jnp.float32))}


def _make_full(learning_rate=0.1, *, base_optimizer=None, mode="full", head=None,
               num_iters=30, margin=0.0, ridge=0.0, apply_to=None, accelerated=True,
               axis_name=None):
    base = optax.sgd(learning_rate, momentum=0.9) if base_optimizer is None else base_optimizer
    return harm_aware(base, mode=mode, head=head, num_iters=num_iters, margin=margin,
                      ridge=ridge, apply_to=apply_to, accelerated=accelerated,
                      axis_name=axis_name)


def _matrix_head(p):
    return p["w"], None


def _make_last_layer(learning_rate=0.05, *, base_optimizer=None, mode="last_layer",
                     head=_matrix_head, num_iters=30, margin=0.02, ridge=0.0, apply_to=None,
                     accelerated=True, axis_name=None):
    base = optax.adamw(learning_rate) if base_optimizer is None else base_optimizer
    return harm_aware(base, mode=mode, head=head, num_iters=num_iters, margin=margin,
                      ridge=ridge, apply_to=apply_to, accelerated=accelerated,
                      axis_name=axis_name)


_COMMON_INVALID = (
    ({"base_optimizer": 3}, "base_optimizer"),
    ({"mode": "exact"}, "mode"),
    ({"num_iters": 0}, "num_iters"),
    ({"num_iters": 2.5}, "num_iters"),
    ({"num_iters": True}, "num_iters"),
    ({"margin": -0.1}, "margin"),
    ({"margin": float("nan")}, "margin"),
    ({"margin": lambda t: 0.1}, "margin"),
    ({"ridge": -1.0}, "ridge"),
    ({"ridge": float("inf")}, "ridge"),
    ({"apply_to": "head"}, "apply_to"),
    ({"accelerated": 1}, "accelerated"),
    ({"axis_name": ""}, "axis_name"),
)

# One case (each costs ~17 compiled checks of CI time): mode="last_layer", the paper's proxy,
# on the matrix's leaf "w" (3, 4) as a bias-free head, with fixed residuals E (6, 4) and
# features A (6, 3) (the head statistics are data, so the oracle ignores the matrix's loss);
# AdamW base (needs params), margin 0.02. Under optax.masked the head selector sees the masked
# sub-tree, which keeps "w". mode="full" (per_sample_grads, given as a callable of the params
# so that masked sub-trees work, see _per_sample_grads_from) is checked by the tests below;
# HARM_AWARE_FULL_CASE runs the whole matrix on it on request:
#   JAXOPT_ICML_SLOW=1 pytest tests/optim/test_harm_aware.py -k full_matrix
_FULL_INVALID = _COMMON_INVALID + (({"head": _matrix_head}, "head"),
                                   ({"apply_to": "last_layer"}, "apply_to"))
CONTRACT_CASES = (
    TransformationCase(
        name="harm_aware_last_layer_adamw", make=_make_last_layer,
        kwargs={"learning_rate": 0.05},
        invalid=_COMMON_INVALID + (({"head": None}, "head"), ({"head": "w"}, "head")),
        extra_args=_fixed_head_stats, needs_params=True),
)
HARM_AWARE_FULL_CASE = TransformationCase(
    name="harm_aware_full_sgdm", make=_make_full, kwargs={"learning_rate": 0.1},
    invalid=_FULL_INVALID, extra_args=_per_sample_grads_from, needs_params=True)


# --------------------------------------------------------------------------- references


def _np_qp_bruteforce(g, u, m):
    """Projection of ``u`` onto ``{d : g d >= m}`` by enumerating active sets (tiny B): for
    each set S, solve ``g_S g_S^T lam_S = m_S - g_S u`` and keep the primal- and dual-feasible
    candidate (unique for a strictly convex QP). float64 NumPy."""
    b = g.shape[0]
    best = None
    for r in range(b + 1):
        for s in itertools.combinations(range(b), r):
            s = list(s)
            lam = np.zeros(b)
            if s:
                gs = g[s]
                sol, *_ = np.linalg.lstsq(gs @ gs.T, m[s] - gs @ u, rcond=None)
                lam[s] = sol
            d = u + g.T @ lam
            if np.all(lam >= -1e-10) and np.all(g @ d >= m - 1e-9):
                dist = np.sum((d - u) ** 2)
                if best is None or dist < best[0] - 1e-12:
                    best = (dist, d, lam)
    return best[1], best[2]


def _softmax_batch(seed, b=5, h=4, k=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(b, h))
    y = rng.integers(0, k, b)
    w = rng.normal(size=(h, k)) * 0.5
    bias = rng.normal(size=k) * 0.1
    return x, y, w, bias


def _np_head_grads(x, y, w, bias):
    """Per-sample gradients of softmax cross-entropy in (W, b), by hand, flattened."""
    z = x @ w + bias
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    e = p - np.eye(w.shape[1])[y]
    return np.concatenate([(x[:, :, None] * e[:, None, :]).reshape(len(x), -1), e], 1)


# --------------------------------------------------------------------------- solver


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dual_solver_matches_bruteforce_active_set(seed):
    rng = np.random.default_rng(seed)
    b, p = 5, 7
    g = rng.normal(size=(b, p))
    u = rng.normal(size=p) - 0.8 * g[0]  # make some constraints violated
    m = np.abs(rng.normal(size=b)) * 0.1
    d_ref, lam_ref = _np_qp_bruteforce(g, u, m)
    with jax.enable_x64(True):
        sol = solve_harm_dual(jnp.asarray(g @ g.T), jnp.asarray(g @ u - m), num_iters=3000)
        lam = np.asarray(sol.lam)
    np.testing.assert_allclose(lam, lam_ref, atol=1e-7)
    np.testing.assert_allclose(u + g.T @ lam, d_ref, atol=1e-7)
    assert int(sol.num_active) == int(np.sum(lam_ref > 1e-9))


@pytest.mark.parametrize("accelerated", [True, False])
def test_dual_solver_kkt_on_a_batch_of_64(accelerated):
    """B = 64 last-layer Gram from a real softmax batch: KKT conditions after the solve."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(64, 20)), rng.integers(0, 10, 64)
    e, a = last_layer_stats(jnp.asarray(x, jnp.float32), jnp.asarray(rng.normal(size=(64, 10)),
                                                                     jnp.float32), jnp.asarray(y))
    m = last_layer_gram(e, a)
    c = jnp.asarray(rng.normal(size=64), jnp.float32)
    iters = 300 if accelerated else 3000
    sol = solve_harm_dual(m, c, num_iters=iters, accelerated=accelerated)
    lam = np.asarray(sol.lam, np.float64)
    slack = np.asarray(m, np.float64) @ lam + np.asarray(c, np.float64)  # = G d - m
    scale = np.sqrt(np.diag(np.asarray(m, np.float64)))
    assert np.all(lam >= 0)
    assert np.min(slack / scale) >= -1e-4 * np.max(np.abs(np.asarray(c)) / scale)
    np.testing.assert_allclose(lam * slack, 0.0, atol=1e-4 * np.max(np.abs(lam * scale)))


def test_dual_solver_zero_rows_and_zero_matrix_are_finite():
    m = jnp.zeros((4, 4))
    sol = solve_harm_dual(m, jnp.zeros(4), num_iters=300)
    assert np.all(np.asarray(sol.lam) == 0) and np.isfinite(float(sol.dual_objective))
    g = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    u = np.array([-1.0, 2.0])
    sol = solve_harm_dual(jnp.asarray(g @ g.T, jnp.float32),
                          jnp.asarray(g @ u, jnp.float32), num_iters=300)
    np.testing.assert_allclose(np.asarray(sol.lam), [1.0, 0.0, 0.0], atol=1e-5)


def test_ridge_bounds_the_dual_when_infeasible():
    """Two opposite samples cannot both decrease: the hard dual diverges with the iteration
    count; with a ridge it converges to a finite value."""
    g = np.array([[1.0, 0.0], [-1.0, 0.0]])
    mm, c = jnp.asarray(g @ g.T, jnp.float32), jnp.asarray([-1.0, -1.0], jnp.float32)
    hard = [float(jnp.max(solve_harm_dual(mm, c, num_iters=k).lam)) for k in (300, 3000)]
    assert hard[1] > 5 * hard[0]
    soft = [float(jnp.max(solve_harm_dual(mm, c, num_iters=k, ridge=0.5).lam))
            for k in (300, 3000)]
    np.testing.assert_allclose(soft[0], soft[1], rtol=1e-5)
    assert np.isfinite(soft[1])


# --------------------------------------------------------------------------- the Gram identity


@pytest.mark.parametrize("bias", [True, False])
def test_last_layer_gram_equals_vmap_grad_gram(bias):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(16, 6)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 4, 16))
    head = {"w": jnp.asarray(rng.normal(size=(6, 4)), jnp.float32),
            "b": jnp.asarray(rng.normal(size=4), jnp.float32)}

    def loss1(hd, xi, yi):
        z = xi @ hd["w"] + (hd["b"] if bias else 0.0)
        return optax.softmax_cross_entropy_with_integer_labels(z, yi)

    g = jax.vmap(jax.grad(loss1), in_axes=(None, 0, 0))(head, x, y)
    parts = [g["w"].reshape(16, -1)] + ([g["b"]] if bias else [])
    flat = jnp.concatenate(parts, 1)
    logits = x @ head["w"] + (head["b"][None] if bias else 0.0)
    e, a = last_layer_stats(x, logits, y)
    np.testing.assert_allclose(last_layer_gram(e, a, bias=bias), flat @ flat.T, rtol=1e-5,
                               atol=1e-6)


# --------------------------------------------------------------------------- the update


def _softmax_setup(seed, b=5, h=4, k=3):
    x, y, w, bias = _softmax_batch(seed, b, h, k)
    params = {"head": {"w": jnp.asarray(w), "b": jnp.asarray(bias)}}
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    loss = lambda p: optax.softmax_cross_entropy_with_integer_labels(
        xj @ p["head"]["w"] + p["head"]["b"][None], yj).mean()
    stats = lambda p: last_layer_stats(xj, xj @ p["head"]["w"] + p["head"]["b"][None], yj)
    return x, y, params, loss, stats


_HEAD = lambda t: (t["head"]["w"], t["head"]["b"])  # noqa: E731


def _np_sgdm_projection_run(x, y, params, lr, mom, margin, steps=3):
    """NumPy: heavy ball u, per-sample head gradients by hand, the projection by brute-force
    active sets; the flattened (w, b) after each step."""
    w, bias = np.asarray(params["head"]["w"]), np.asarray(params["head"]["b"])
    v = np.zeros(w.size + bias.size)
    ref = []
    for _ in range(steps):
        gi = _np_head_grads(x, y, w, bias)
        v = gi.mean(0) + mom * v
        d, _ = _np_qp_bruteforce(gi, v, margin * np.linalg.norm(gi, axis=1) * np.linalg.norm(v))
        theta = np.concatenate([w.reshape(-1), bias]) - lr * d
        w, bias = theta[:w.size].reshape(w.shape), theta[w.size:]
        ref.append(theta)
    return ref


def _run_against(tx, params, loss, stats, ref):
    """Runs ``tx`` (float64, jitted) and compares the flattened head with ``ref``."""
    with jax.enable_x64(True):
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        upd = jax.jit(lambda g, st, p: tx.update(g, st, p, harm_stats=stats(p)))
        s = tx.init(params)
        for theta in ref:
            u, s = upd(jax.grad(loss)(params), s, params)
            params = optax.apply_updates(params, u)
            got = np.concatenate([np.asarray(params["head"]["w"]).reshape(-1),
                                  np.asarray(params["head"]["b"])])
            np.testing.assert_allclose(got, theta, rtol=1e-6, atol=1e-8)
    return s


@pytest.mark.parametrize("margin", [0.1])
def test_step_matches_numpy_projection_of_sgd_momentum_float64(margin):
    """Three steps of harm-aware SGD-momentum == NumPy: heavy ball u, per-sample gradients by
    hand, the projection by brute-force active sets."""
    lr, mom = 0.7, 0.9
    x, y, params, loss, stats = _softmax_setup(4)
    ref = _np_sgdm_projection_run(x, y, params, lr, mom, margin)
    with jax.enable_x64(True):
        tx = harm_aware(optax.sgd(lr, momentum=mom), head=_HEAD, num_iters=2000, margin=margin)
    s = _run_against(tx, params, loss, stats, ref)
    assert int(s.num_violated) >= 0 and s.count == 3


def test_full_mode_equals_last_layer_mode_on_softmax_regression():
    """For a model that is only a softmax head the proxy is exact: per_sample_grads from
    jax.vmap(jax.grad) (mode="full") give the same steps."""
    x, y, params, loss, stats = _softmax_setup(5, b=8)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    loss_i = lambda p, xi, yi: optax.softmax_cross_entropy_with_integer_labels(
        xi @ p["head"]["w"] + p["head"]["b"], yi)
    psg = lambda p: jax.vmap(jax.grad(loss_i), in_axes=(None, 0, 0))(p, xj, yj)
    a = harm_aware(optax.adamw(0.1), head=_HEAD, num_iters=400)
    b = harm_aware(optax.adamw(0.1), mode="full", num_iters=400)
    pa = pb = params
    sa, sb = a.init(pa), b.init(pb)
    upd_a = jax.jit(lambda g, s, p: a.update(g, s, p, harm_stats=stats(p)))
    upd_b = jax.jit(lambda g, s, p: b.update(g, s, p, per_sample_grads=psg))
    for _ in range(4):
        ua, sa = upd_a(jax.grad(loss)(pa), sa, pa)
        ub, sb = upd_b(jax.grad(loss)(pb), sb, pb)
        pa, pb = optax.apply_updates(pa, ua), optax.apply_updates(pb, ub)
        jax.tree.map(lambda s1, s2: np.testing.assert_allclose(s1, s2, rtol=2e-4, atol=2e-6),
                     pa, pb)
    assert int(sa.num_violated) == int(sb.num_violated)


def test_equals_base_exactly_when_no_constraint_is_active():
    """Per-sample gradients that all agree with the step: the wrapper is the base optimizer,
    bitwise (AdamW, several steps, full mode and scale_by_ form)."""
    x, y, params, loss, _ = _softmax_setup(6)

    def agreeing(p):  # positive multiples of the mean gradient of each step (plain SGD u = g)
        g = jax.grad(loss)(p)
        return jax.tree.map(lambda t: jnp.stack([(1.0 + 0.3 * i) * t for i in range(5)]), g)

    ours = harm_aware(optax.sgd(0.3), mode="full", num_iters=20, margin=0.5)
    chained = optax.chain(scale_by_harm_aware(mode="full", num_iters=20),
                          optax.scale_by_learning_rate(0.3))
    ref = optax.sgd(0.3)
    p1 = p2 = p3 = params
    s1, s2, s3 = ours.init(p1), chained.init(p2), ref.init(p3)
    upd1 = jax.jit(lambda g, s, p: ours.update(g, s, p, per_sample_grads=agreeing(p)))
    upd2 = jax.jit(lambda g, s, p: chained.update(g, s, p, per_sample_grads=agreeing(p)))
    for _ in range(3):
        u1, s1 = upd1(jax.grad(loss)(p1), s1, p1)
        u2, s2 = upd2(jax.grad(loss)(p2), s2, p2)
        u3, s3 = ref.update(jax.grad(loss)(p3), s3, p3)
        p1, p2, p3 = (optax.apply_updates(p, u) for p, u in ((p1, u1), (p2, u2), (p3, u3)))
        jax.tree.map(np.testing.assert_array_equal, p1, p3)
        jax.tree.map(np.testing.assert_array_equal, p2, p3)
        assert int(s1.num_active) == 0 and int(s1.num_violated) == 0


def test_constraints_hold_after_the_step_with_margin():
    rng = np.random.default_rng(7)
    b, h, k = 24, 10, 5
    x = jnp.asarray(rng.normal(size=(b, h)), jnp.float32)
    e, a = last_layer_stats(x, jnp.asarray(rng.normal(size=(b, k)), jnp.float32),
                            jnp.asarray(rng.integers(0, k, b)))
    u = {"head": {"w": jnp.asarray(rng.normal(size=(h, k)), jnp.float32),
                  "b": jnp.asarray(rng.normal(size=k), jnp.float32)}}
    tx = scale_by_harm_aware(head=_HEAD, num_iters=500, margin=0.05)
    st_ea = (e, a)
    d, s = jax.jit(lambda uu, st: tx.update(uu, st, harm_stats=st_ea))(u, tx.init(u))
    g = np.concatenate([(np.asarray(a)[:, :, None] * np.asarray(e)[:, None, :]).reshape(b, -1),
                        np.asarray(e)], 1)
    vec = lambda t: np.concatenate([np.asarray(t["head"]["w"]).reshape(-1),  # noqa: E731
                                    np.asarray(t["head"]["b"])])
    gn = np.linalg.norm(g, axis=1)
    assert np.mean(g @ vec(u) < 0) > 0.2  # the test is not vacuous
    np.testing.assert_array_less(0.05 * gn * np.linalg.norm(vec(u)) - 1e-4 * gn,
                                 g @ vec(d))
    assert float(s.min_cosine) > 0


def test_apply_to_all_adds_the_weighted_full_gradient():
    """apply_to="all": lambda from the head proxy, correction sum_i lambda_i grad l_i over
    every parameter (checked against jax.vmap(jax.grad))."""
    rng = np.random.default_rng(8)
    b = 8
    x = jnp.asarray(rng.normal(size=(b, 5)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 3, b))
    params = {"hid": jnp.asarray(rng.normal(size=(5, 4)), jnp.float32),
              "head": {"w": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32),
                       "b": jnp.zeros(3)}}

    def fwd(p, xx):
        a = jnp.tanh(xx @ p["hid"])
        return a @ p["head"]["w"] + p["head"]["b"][None], a

    loss_i = lambda p, xi, yi: optax.softmax_cross_entropy_with_integer_labels(
        fwd(p, xi[None])[0][0], yi)
    wgf = lambda p, wts: jax.grad(lambda q: jnp.sum(wts * jax.vmap(
        loss_i, in_axes=(None, 0, 0))(q, x, y)))(p)
    u = jax.tree.map(lambda t: jnp.asarray(rng.normal(size=t.shape), jnp.float32), params)
    logits, feats = fwd(params, x)
    stats = last_layer_stats(feats, logits, y)
    tx_all = scale_by_harm_aware(head=_HEAD, num_iters=2000, apply_to="all")
    d_all, s_all = jax.jit(lambda uu, st, p: tx_all.update(
        uu, st, p, harm_stats=stats, weighted_grad_fn=wgf))(u, tx_all.init(params), params)
    # lambda of the head QP by brute force in NumPy (float64), from jax.vmap(jax.grad) head
    # gradients; the full correction is then sum_i lambda_i grad l_i over every leaf
    per = jax.vmap(jax.grad(loss_i), in_axes=(None, 0, 0))(params, x, y)
    gh = np.concatenate([np.asarray(per["head"]["w"], np.float64).reshape(b, -1),
                         np.asarray(per["head"]["b"], np.float64)], 1)
    uh = np.concatenate([np.asarray(u["head"]["w"], np.float64).reshape(-1),
                         np.asarray(u["head"]["b"], np.float64)])
    _, lam = _np_qp_bruteforce(gh, uh, np.zeros(b))
    for leaf_d, leaf_u, leaf_g in zip(jax.tree.leaves(d_all), jax.tree.leaves(u),
                                      jax.tree.leaves(per), strict=True):
        np.testing.assert_allclose(leaf_d, leaf_u + np.tensordot(lam, leaf_g, 1), rtol=1e-3,
                                   atol=1e-4)
    assert int(s_all.num_active) > 0
    with pytest.raises(ValueError, match="weighted_grad_fn"):
        tx_all.update(u, tx_all.init(params), params, harm_stats=stats)


def test_axis_name_couples_the_global_batch():
    """Statistics split over 4 workers (vmap with axis_name) == the full batch on one."""
    x, y, params, loss, stats = _softmax_setup(9, b=16)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    g = jax.grad(loss)(params)
    full = harm_aware(optax.sgd(0.5), head=_HEAD, num_iters=200)
    ref, _ = jax.jit(lambda st: full.update(g, st, params, harm_stats=stats(params)))(
        full.init(params))

    def worker(xb, yb):
        tx = harm_aware(optax.sgd(0.5), head=_HEAD, num_iters=200, axis_name="w")
        st = last_layer_stats(xb, xb @ params["head"]["w"] + params["head"]["b"][None], yb)
        u, _ = tx.update(g, tx.init(params), params, harm_stats=st)
        return u

    per = jax.jit(jax.vmap(worker, axis_name="w"))(xj.reshape(4, 4, -1), yj.reshape(4, 4))
    for i in range(4):
        jax.tree.map(lambda a, b, i=i: np.testing.assert_allclose(a[i], b, rtol=1e-5,
                                                                  atol=1e-7), per, ref)


# --------------------------------------------------------------------------- shapes, inject


@pytest.mark.parametrize("make", [lambda: harm_aware(optax.sgd(0.1, momentum=0.9), head=_HEAD),
                                  lambda: scale_by_harm_aware(head=_HEAD)],
                         ids=["harm_aware", "scale_by_harm_aware"])
def test_mismatched_updates_raise_value_error_naming_the_leaf(make):
    """Updates whose leaf shape or tree structure differs from the params raise a ValueError
    naming the leaf, before the base optimizer broadcasts them (trace time, also in jit)."""
    _, _, params, loss, stats = _softmax_setup(3)
    tx = make()
    state = tx.init(params)
    g = jax.grad(loss)(params)
    bad = {"head": {**g["head"], "w": jnp.ones((5, 3))}}
    with pytest.raises(ValueError, match=r"updates and params disagree at leaf "
                                         r"\['head'\]\['w'\]: shape \(5, 3\) vs \(4, 3\)"):
        tx.update(bad, state, params, harm_stats=stats(params))
    with pytest.raises(ValueError, match=r"\['head'\]\['w'\]: shape \(5, 3\) vs \(4, 3\)"):
        jax.jit(lambda u, st: tx.update(u, st, params, harm_stats=stats(params)))(bad, state)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**g, "extra": jnp.ones(2)}, state, params, harm_stats=stats(params))
    assert "'extra'" in str(err.value)


def test_inject_hyperparams_with_the_documented_static_args():
    """Reported: inject_hyperparams took the callable head for a schedule. The documented
    recipe, static_args=("head",) (plus "num_iters" when it is given), works under jit:
    margin is injected, and the run follows the NumPy projection; a num_iters given without
    static_args raises a ValueError naming both static_args."""
    lr, mom, margin = 0.7, 0.9, 0.1
    x, y, params, loss, stats = _softmax_setup(4)
    ref = _np_sgdm_projection_run(x, y, params, lr, mom, margin)
    with jax.enable_x64(True):
        tx = optax.inject_hyperparams(harm_aware, static_args=("head", "num_iters"))(
            optax.sgd(lr, momentum=mom), head=_HEAD, num_iters=2000, margin=margin)
    s = _run_against(tx, params, loss, stats, ref)
    assert set(s.hyperparams) == {"margin", "ridge"}

    # default num_iters: static_args=("head",) is all it needs; margin is injected
    tx = optax.inject_hyperparams(harm_aware, static_args=("head",))(
        optax.sgd(lr, momentum=mom), head=_HEAD, margin=margin)
    plain = harm_aware(optax.sgd(lr, momentum=mom), head=_HEAD, margin=margin)
    step = jax.jit(lambda t, g, st: t.update(g, st, params, harm_stats=stats(params)),
                   static_argnums=0)
    g = jax.grad(loss)(params)
    s0 = tx.init(params)
    u_inj, _ = step(tx, g, s0)
    u_plain, _ = step(plain, g, plain.init(params))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7),
                 u_inj, u_plain)
    s_big = s0._replace(hyperparams={**s0.hyperparams, "margin": jnp.asarray(0.8)})
    u_big, _ = step(tx, g, s_big)
    assert not np.allclose(np.asarray(u_big["head"]["w"]), np.asarray(u_inj["head"]["w"]))

    bad = optax.inject_hyperparams(harm_aware, static_args=("head",))(
        optax.sgd(lr), head=_HEAD, num_iters=20)
    with pytest.raises(ValueError, match=re.escape("static_args=('head', 'num_iters')")):
        step(bad, g, bad.init(params))


# --------------------------------------------------------------------------- dtypes, edges


def test_bf16_params_stay_bf16_and_zero_gradients_are_finite():
    _, _, params, loss, stats = _softmax_setup(10)
    p = jax.tree.map(lambda a: a.astype(jnp.bfloat16), params)
    tx = harm_aware(optax.adamw(0.1), head=_HEAD, num_iters=300)
    upd = jax.jit(lambda g, s, q, st: tx.update(g, s, q, harm_stats=st))
    s = tx.init(p)
    for _ in range(2):
        st = jax.tree.map(lambda a: a.astype(jnp.bfloat16), stats(params))
        u, s = upd(jax.tree.map(jnp.zeros_like, p), s, p, st)
        p = optax.apply_updates(p, u)
    assert all(t.dtype == jnp.bfloat16 for t in jax.tree.leaves(u) + jax.tree.leaves(p))
    assert all(np.all(np.isfinite(np.asarray(t, np.float32))) for t in jax.tree.leaves(u))
    assert np.isfinite(float(s.dual_objective)) and np.isfinite(float(s.min_cosine))
    # zero gradients AND zero statistics at init (e.g. an all-zero batch)
    zero_stats = (jnp.zeros((5, 3), jnp.bfloat16), jnp.zeros((5, 4), jnp.bfloat16))
    u, s = upd(jax.tree.map(jnp.zeros_like, p), tx.init(p), p, zero_stats)
    ref, _ = optax.adamw(0.1).update(jax.tree.map(jnp.zeros_like, p),
                                     optax.adamw(0.1).init(p), p)  # weight decay only
    jax.tree.map(np.testing.assert_array_equal, u, ref)
    assert s.count.dtype == jnp.int32 and s.dual_objective.dtype == jnp.float32


def test_missing_or_malformed_oracles_raise():
    _, _, params, loss, stats = _softmax_setup(11)
    g = jax.grad(loss)(params)
    tx = harm_aware(optax.sgd(0.1), head=_HEAD)
    with pytest.raises(ValueError, match="harm_stats"):
        tx.update(g, tx.init(params), params)
    e, a = stats(params)
    with pytest.raises(ValueError, match="kernel"):
        tx.update(g, tx.init(params), params, harm_stats=(e, a[:, :2]))
    full = harm_aware(optax.sgd(0.1), mode="full")
    with pytest.raises(ValueError, match="per_sample_grads"):
        full.update(g, full.init(params), params)
    with pytest.raises(ValueError, match="structure"):
        full.update(g, full.init(params), params, per_sample_grads={"w": jnp.zeros((2, 3))})


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("JAXOPT_ICML_SLOW") != "1",
                    reason="opt-in (JAXOPT_ICML_SLOW=1): CI time budget")
@pytest.mark.parametrize("check", sorted(transformation_checks))
def test_full_matrix(check):
    """The property matrix on mode="full" (opt-in, ~17 more compiled checks)."""
    import unittest

    try:
        transformation_checks[check](HARM_AWARE_FULL_CASE)
    except unittest.SkipTest as e:
        pytest.skip(str(e))


def test_invalid_arguments_name_the_argument():
    for case in (*CONTRACT_CASES, HARM_AWARE_FULL_CASE):
        for override, arg in case.invalid:
            with pytest.raises(ValueError, match=arg):
                case.make(**{**case.kwargs, **override})
    for kw, arg in (({"num_iters": 0}, "num_iters"), ({"ridge": -1.0}, "ridge"),
                    ({"accelerated": "no"}, "accelerated")):
        with pytest.raises(ValueError, match=arg):
            solve_harm_dual(jnp.eye(2), jnp.zeros(2), **kw)
    with pytest.raises(ValueError, match="head"):
        scale_by_harm_aware()


def test_static_settings_are_keyword_only():
    harm_aware(optax.sgd(0.1), head=_HEAD)
    with pytest.raises(TypeError):
        harm_aware(optax.sgd(0.1), "full")
    with pytest.raises(TypeError):
        scale_by_harm_aware("full")


# --------------------------------------------------------------------------- experiment


def test_pcgrad_baseline_resolves_a_single_conflict(experiment):
    """The experiment's PCGrad-style baseline with one sample is the halfspace projection."""
    x, y, params, loss, stats = _softmax_setup(12, b=1)
    u = jax.grad(loss)(params)  # identity base: the step +g is an ascent, a conflict
    tx = experiment.pcgrad_last_layer(optax.identity(), _HEAD)
    out, _ = jax.jit(lambda uu, s: tx.update(uu, s, params, harm_stats=stats(params)))(
        u, tx.init(params))
    # identity base: out is the step, i.e. -d; with one conflicting sample d = 0 along g
    g = _np_head_grads(x, y, np.asarray(params["head"]["w"]), np.asarray(params["head"]["b"]))
    vec = np.concatenate([np.asarray(out["head"]["w"]).reshape(-1), np.asarray(out["head"]["b"])])
    np.testing.assert_allclose(g @ vec, 0.0, atol=1e-6)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, fixed key: every claim passes (deterministic given the key; the margins
    to the thresholds are in the experiment's docstring and the claims' sources)."""
    results = quick_results
    runner.check_quick_claims(experiment, results)
    summary = experiment.summarize(results)
    assert summary["qp_violated_fraction_before_mean"] > 0.1  # claim 2 is not vacuous
    assert results["harm"]["SGD-momentum"].shape == (experiment.QUICK.seeds, experiment.QUICK.steps)
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"harm", "accuracy", "proxy_quality"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (harm, accuracy and proxy_quality) pass the readability check: titles, axis
    labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick labels
    that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
