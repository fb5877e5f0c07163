"""Tests of DeVA (jaxopt_icml.optim.deva): the l_inf and Schatten forms, the router, the
baselines (SOAP, signum, Newton-Schulz) and the experiment's QUICK claims."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.optim.deva import (
    deva,
    deva_linf,
    deva_schatten,
    scale_by_deva_linf,
    scale_by_deva_schatten,
)
from jaxopt_icml.optim.deva_baselines import scale_by_soap, signum, soap
from jaxopt_icml.optim.eigenbasis import newton_schulz, polar_svd
from jaxopt_icml.testing import TransformationCase


def _maker(use_eigenbasis: bool):
    """``make`` for the property matrix; static settings default to ``None`` so that
    ``inject_hyperparams`` only sees the float ``learning_rate``."""

    def make(learning_rate=1e-2, *, precondition_frequency=None, **kw):
        freq = 2 if precondition_frequency is None else precondition_frequency
        return deva(learning_rate, use_eigenbasis=kw.pop("use_eigenbasis", use_eigenbasis),
                    precondition_frequency=freq, **kw)

    return make


_INVALID = (
    ({"learning_rate": -1.0}, "learning_rate"),
    ({"learning_rate": float("nan")}, "learning_rate"),
    ({"b1": 1.0}, "b1"),
    ({"b1": -0.1}, "b1"),
    ({"b2": 1.0}, "b2"),
    ({"eps": 0.0}, "eps"),
    ({"weight_decay": -0.1}, "weight_decay"),
    ({"rms_scale": 0.0}, "rms_scale"),
    ({"precondition_frequency": 0}, "precondition_frequency"),
    ({"precondition_frequency": 2.5}, "precondition_frequency"),
    ({"ns_steps": 0}, "ns_steps"),
    ({"ns_steps": True}, "ns_steps"),
    ({"nesterov": "yes"}, "nesterov"),
    ({"use_eigenbasis": 1}, "use_eigenbasis"),
    ({"bias_correction": None}, "bias_correction"),
    ({"orthogonalize": "qr"}, "orthogonalize"),
    ({"matrix_form": "spectral"}, "matrix_form"),
    ({"max_precond_dim": 0}, "max_precond_dim"),
    ({"shampoo_beta": 1.0}, "shampoo_beta"),
    ({"linf_learning_rate": 0.0}, "linf_learning_rate"),
    ({"linf_b1": 1.0}, "b1"),
    ({"linf_b2": -1.0}, "b2"),
    ({"linf_eps": 0.0}, "eps"),
    ({"linf_weight_decay": -1.0}, "weight_decay"),
    ({"linf_nesterov": 0}, "linf_nesterov"),
    ({"mu_dtype": jnp.int32}, "mu_dtype"),
)

# One case (the matrix costs ~17 compilations per case): the router with the SOAP eigenbasis
# refreshed every 2 updates, so the 3-step checks cross the init, a refresh and a plain step,
# on the matrix leaves (Schatten form) and the vector/scalar leaves (l_inf form). The fast path
# (use_eigenbasis=False) is covered by the NumPy re-derivation below.
CONTRACT_CASES = (
    TransformationCase(name="deva_eigenbasis", make=_maker(True), kwargs={"learning_rate": 1e-2},
                       invalid=_INVALID),
)


# --------------------------------------------------------------------------- NumPy references


def _np_ns(x, steps=5):
    """Quintic Newton-Schulz re-derived in NumPy (Frobenius normalisation, short side)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = x.shape[0] > x.shape[1]
    y = x.T if tall else x
    y = y / (np.linalg.norm(y) + 1e-7)
    for _ in range(steps):
        s = y @ y.T
        y = a * y + (b * s + c * s @ s) @ y
    return y.T if tall else y


def _np_deva_linf(grads, b1, b2, eps, nesterov):
    m = np.zeros_like(grads[0])
    v = np.zeros_like(grads[0])
    out = []
    for g in grads:
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * m ** 2
        d = (1 - b1) * g + b1 * m if nesterov else m
        out.append(np.sqrt(m ** 2 / (v + eps)) * np.sign(d))
    return out


def _np_deva_schatten_run(w, grad_fn, steps, lr, b1, b2, eps, wd, freq, nesterov, eig):
    """DeVA_S on one matrix, written from the spec's step list (SOAP bookkeeping)."""
    n, p = w.shape
    m, v = np.zeros((n, p)), np.zeros((n, p))
    ggl, ggr = np.zeros((n, n)), np.zeros((p, p))
    ql, qr = np.eye(n), np.eye(p)
    t = 0
    traj = []
    for k in range(steps):
        g = grad_fn(w)
        if eig and k == 0:  # first call: initialise the bases (weight decay still applies)
            w = w - lr * wd * w
            ggl, ggr = (1 - b2) * g @ g.T, (1 - b2) * g.T @ g
            ql = np.linalg.eigh(ggl)[1][:, ::-1]
            qr = np.linalg.eigh(ggr)[1][:, ::-1]
            traj.append(w.copy())
            continue
        t += 1
        gt = ql.T @ g @ qr
        m = b1 * m + (1 - b1) * gt
        r = np.linalg.norm(m, axis=1, keepdims=True)
        c = np.linalg.norm(m, axis=0, keepdims=True)
        v = b2 * v + (1 - b2) * r * c
        o = _np_ns((1 - b1) * gt + b1 * m if nesterov else m)
        u = o * np.sqrt(r) * np.sqrt(c) / np.sqrt(v + eps) * 0.2 * np.sqrt(max(n, p))
        step = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - step * (ql @ u @ qr.T) - lr * wd * w
        if eig:
            ggl = b2 * ggl + (1 - b2) * g @ g.T
            ggr = b2 * ggr + (1 - b2) * g.T @ g
            if t % freq == 0:
                m_orig = ql @ m @ qr.T
                il = np.argsort(-np.diag(ql.T @ ggl @ ql))
                ir = np.argsort(-np.diag(qr.T @ ggr @ qr))
                v = v[il][:, ir]
                ql = np.linalg.qr(ggl @ ql[:, il])[0]
                qr = np.linalg.qr(ggr @ qr[:, ir])[0]
                m = ql.T @ m_orig @ qr
        traj.append(w.copy())
    return traj


_A = np.random.default_rng(0).normal(size=(5, 5))
_B = np.random.default_rng(1).normal(size=(5, 4))


def _quad_grad_np(w):
    return _A.T @ (_A @ w - _B)


def _quad_loss(w):
    r = jnp.asarray(_A, w.dtype) @ w - jnp.asarray(_B, w.dtype)
    return 0.5 * jnp.sum(r * r)


def _run(tx, w, steps, loss=_quad_loss):
    @jax.jit
    def step(w, s):
        u, s = tx.update(jax.grad(loss)(w), s, w)
        return optax.apply_updates(w, u), s

    s = tx.init(w)
    out = []
    for _ in range(steps):
        w, s = step(w, s)
        out.append(jax.tree.map(np.asarray, w))
    return out, s


# --------------------------------------------------------------------------- Newton-Schulz


def test_newton_schulz_matches_numpy_and_svd_polar_factor():
    x = np.random.default_rng(2).normal(size=(6, 4))
    with jax.enable_x64(True):
        ns = np.asarray(newton_schulz(jnp.asarray(x)))
        pol = np.asarray(polar_svd(jnp.asarray(x)))
    np.testing.assert_allclose(ns, _np_ns(x), rtol=1e-10, atol=1e-12)
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(pol, u @ vt, atol=1e-10)
    # NS keeps the singular vectors and maps singular values into the quintic's band
    core = u.T @ ns @ vt.T
    np.testing.assert_allclose(core, np.diag(np.diag(core)), atol=1e-6)
    assert np.all((np.diag(core) > 0.6) & (np.diag(core) < 1.25))
    assert np.max(np.abs(ns - pol)) < 0.35  # sloppy sign, but close to the polar factor


def test_zero_matrix_directions_are_zero():
    z = jnp.zeros((3, 5))
    assert not np.any(np.asarray(newton_schulz(z))) and not np.any(np.asarray(polar_svd(z)))


def test_newton_schulz_rejects_coefficients_that_are_not_three():
    with pytest.raises(ValueError, match="coeffs"):
        newton_schulz(jnp.eye(3), coeffs=(3.4445, -4.775, 2.0315, 1.0))


def test_newton_schulz_rank_one_claim1():
    """Spec claim 1: on s a b^T, O_1 is rank-1 with singular vectors (a_hat, b_hat)
    (cosines >= 0.9999) and singular value in [0.6, 1.25]."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=7), rng.normal(size=5)
    tx = scale_by_deva_schatten(use_eigenbasis=False, bias_correction=False)
    g = jnp.asarray(3.7 * np.outer(a, b), jnp.float32)
    u1, _ = jax.jit(tx.update)(g, tx.init(g))
    # U_1 = O_1 * 0.2 sqrt(7) / sqrt(1 - b2) (the variance factor is constant on step 1)
    o1 = np.asarray(u1) / (0.2 * np.sqrt(7) / np.sqrt(1 - 0.95))
    uu, ss, vv = np.linalg.svd(o1)
    assert ss[1] / ss[0] < 1e-4
    assert abs(uu[:, 0] @ a) / np.linalg.norm(a) >= 0.9999
    assert abs(vv[0] @ b) / np.linalg.norm(b) >= 0.9999
    assert 0.6 <= ss[0] <= 1.25


# --------------------------------------------------------------------------- l_inf form


def test_linf_with_b1_zero_is_rmsprop():
    """Claim 1: b1 = 0 gives g / sqrt(EMA(g^2) + eps), i.e. optax.rmsprop(eps_in_sqrt=True)."""
    w0 = jnp.asarray(np.random.default_rng(4).normal(size=(5, 4)), jnp.float32)
    ours, _ = _run(deva_linf(0.05, b1=0.0, b2=0.99, eps=1e-5), w0, 8)
    ref, _ = _run(optax.rmsprop(0.05, decay=0.99, eps=1e-5, eps_in_sqrt=True), w0, 8)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("nesterov", [False, True])
def test_linf_matches_numpy_float64(nesterov):
    rng = np.random.default_rng(5)
    grads = [rng.normal(size=(3, 2)) * (1 + k) for k in range(6)]
    ref = _np_deva_linf(grads, 0.9, 0.99, 1e-5, nesterov)
    with jax.enable_x64(True):
        tx = scale_by_deva_linf(0.9, 0.99, 1e-5, nesterov=nesterov)
        s = tx.init(jnp.zeros((3, 2), jnp.float64))
        for g, r in zip(grads, ref, strict=True):
            u, s = tx.update(jnp.asarray(g), s)
            assert u.dtype == jnp.float64
            np.testing.assert_allclose(np.asarray(u), r, rtol=1e-12, atol=1e-14)


def test_linf_weight_decay_is_applied_before_the_step():
    """Official form p <- p (1 - lr wd) - lr gamma sign(m), checked against NumPy."""
    w = np.array([1.0, -2.0, 0.5])
    g = np.array([0.3, 0.1, -0.2])
    lr, wd = 0.1, 0.5
    (u,) = _np_deva_linf([g], 0.9, 0.999, 1e-5, False)
    tx = deva_linf(lr, weight_decay=wd)
    upd, _ = tx.update(jnp.asarray(g, jnp.float32), tx.init(jnp.asarray(w, jnp.float32)),
                       jnp.asarray(w, jnp.float32))
    np.testing.assert_allclose(w + np.asarray(upd), w * (1 - lr * wd) - lr * u, rtol=1e-5,
                               atol=1e-6)


def test_signum_matches_numpy():
    grads = [np.array([0.5, -1.0, 0.0]), np.array([-2.0, 1.0, 1e-3]), np.array([1.0, 1.0, -1.0])]
    tx = signum(0.1, b1=0.8)
    s = tx.init(jnp.zeros(3))
    m = np.zeros(3)
    for g in grads:
        m = 0.8 * m + 0.2 * g
        u, s = tx.update(jnp.asarray(g, jnp.float32), s, jnp.zeros(3))
        np.testing.assert_allclose(np.asarray(u), -0.1 * np.sign(m), rtol=1e-6)


# --------------------------------------------------------------------------- Schatten form


def test_schatten_first_step_identity_claim1():
    """v_1 = (1 - b2) r c^T, so U_1 = O_1 * 0.2 sqrt(max(n, p)) / sqrt(1 - b2) to 1e-5.
    (eps = 1e-12 here: with the default 1e-8 and m_1 = 0.1 g of unit entries, eps / v_1 ~ 2e-5
    moves the factor by 1e-5, which is the identity's "up to eps".)"""
    g = jnp.asarray(np.random.default_rng(6).normal(size=(6, 4)), jnp.float32)
    tx = scale_by_deva_schatten(b1=0.9, b2=0.99, eps=1e-12, use_eigenbasis=False,
                                bias_correction=False, nesterov=False)
    u, s = tx.update(g, tx.init(g))
    m = 0.1 * np.asarray(g)
    r, c = np.linalg.norm(m, axis=1, keepdims=True), np.linalg.norm(m, axis=0, keepdims=True)
    np.testing.assert_allclose(np.asarray(s.nu), 0.01 * r * c, rtol=1e-6)
    o1 = np.asarray(newton_schulz(jnp.asarray(m)))
    np.testing.assert_allclose(np.asarray(u), o1 * 0.2 * np.sqrt(6) / np.sqrt(0.01), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("eig,nesterov", [(False, True), (True, True), (True, False)])
def test_schatten_matches_numpy_rederivation_float64(eig, nesterov):
    """Parameter trajectory vs a NumPy implementation of the spec's four steps (eigh init,
    power-iteration + QR refresh every 2 updates, momentum re-expressed, v permuted)."""
    lr, b1, b2, eps, wd = 0.05, 0.9, 0.95, 1e-8, 0.01
    w0 = np.random.default_rng(7).normal(size=(5, 4))
    ref = _np_deva_schatten_run(w0, _quad_grad_np, 9, lr, b1, b2, eps, wd, 2, nesterov, eig)
    with jax.enable_x64(True):
        tx = deva_schatten(lr, b1, b2, eps, wd, precondition_frequency=2, nesterov=nesterov,
                           use_eigenbasis=eig)
        ours, _ = _run(tx, jnp.asarray(w0), 9)
    if eig:  # the first call only initialises the bases (and applies the weight decay)
        np.testing.assert_allclose(ours[0], w0 * (1 - lr * wd), rtol=1e-12)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_diagonal_matrices_reduce_schatten_to_linf():
    """The transition: on diagonal gradients (no rotation, exact polar factor) the Schatten
    update is the l_inf update on the diagonal times rms_scale sqrt(n) (and zero elsewhere)."""
    rng = np.random.default_rng(8)
    grads = [np.diag(rng.normal(size=4)) for _ in range(5)]
    sch = scale_by_deva_schatten(0.9, 0.99, 1e-5, use_eigenbasis=False, bias_correction=False,
                                 nesterov=False, orthogonalize="svd", rms_scale=0.5)
    lin = scale_by_deva_linf(0.9, 0.99, 1e-5)
    s1 = sch.init(jnp.zeros((4, 4)))
    s2 = lin.init(jnp.zeros(4))
    up1, up2 = jax.jit(sch.update), jax.jit(lin.update)
    for g in grads:
        u1, s1 = up1(jnp.asarray(g, jnp.float32), s1)
        u2, s2 = up2(jnp.asarray(np.diag(g), jnp.float32), s2)
        np.testing.assert_allclose(np.asarray(u1), np.diag(np.asarray(u2)) * 0.5 * 2.0,
                                   rtol=1e-5, atol=1e-6)


def test_refresh_decompositions_only_inside_cond():
    """Non-refresh steps do no eigh/QR: every decomposition sits in a lax.cond branch."""
    tx = scale_by_deva_schatten(precondition_frequency=10)
    w = jnp.ones((6, 4))
    jaxpr = jax.make_jaxpr(tx.update)(w, tx.init(w)).jaxpr
    top = {e.primitive.name for e in jaxpr.eqns}
    assert "cond" in top
    assert not top & {"eigh", "qr", "householder_product", "geqrf"}
    text = str(jaxpr)
    assert "eigh" in text and ("qr" in text or "geqrf" in text)
    fast = scale_by_deva_schatten(use_eigenbasis=False)
    text = str(jax.make_jaxpr(fast.update)(w, fast.init(w)))
    assert "eigh" not in text and "geqrf" not in text and "cond" not in text


def test_eigenbasis_is_orthogonal_and_first_update_zero():
    tx = scale_by_deva_schatten(precondition_frequency=3)
    g = jnp.asarray(np.random.default_rng(9).normal(size=(5, 3)), jnp.float32)
    s = tx.init(g)
    upd = jax.jit(tx.update)
    u, s = upd(g, s)
    assert not np.any(np.asarray(u))
    for _ in range(4):  # through a QR refresh (after update 3)
        u, s = upd(g * 0.5, s)
    for q in (np.asarray(s.q_l), np.asarray(s.q_r)):
        np.testing.assert_allclose(q.T @ q, np.eye(q.shape[0]), atol=1e-5)
    assert np.any(np.asarray(u))


def test_max_precond_dim_leaves_long_side_unrotated():
    tx = scale_by_deva_schatten(max_precond_dim=4)
    w = jnp.ones((3, 6))
    s = tx.init(w)
    assert s.q_l.shape == (3, 3) and isinstance(s.q_r, optax.EmptyState)
    upd = jax.jit(tx.update)
    u, s = upd(jnp.cos(w), s)
    u, s = upd(jnp.cos(w) + 0.1, s)
    assert u.shape == (3, 6) and np.all(np.isfinite(np.asarray(u)))


@pytest.mark.parametrize("direction", ["deva", "soap"])
def test_unrotated_leaf_with_eigenbasis_equals_no_eigenbasis(direction):
    """A matrix whose both sides exceed ``max_precond_dim`` is never rotated: with
    ``use_eigenbasis=True`` it must follow the ``use_eigenbasis=False`` path exactly (first
    update a full step, bias correction from t = 1; the reviewer's 4x3 case moved 2.457 instead
    of 1.824 at step 2). Reference: the use_eigenbasis=False trajectory, itself checked against
    the NumPy re-derivation above (deva) and optax.adamw (soap)."""
    make = {"deva": deva_schatten, "soap": soap}[direction]
    w0 = jnp.asarray(np.random.default_rng(11).normal(size=(4, 3)), jnp.float32)
    loss = lambda w: jnp.sum(jnp.cos(w) * jnp.arange(1.0, 13.0).reshape(4, 3))
    ours, s = _run(make(0.1, weight_decay=0.01, max_precond_dim=2), w0, 4, loss)
    ref, _ = _run(make(0.1, weight_decay=0.01, use_eigenbasis=False), w0, 4, loss)
    if direction == "deva":
        assert isinstance(s[0].q_l, optax.EmptyState) and isinstance(s[0].q_r, optax.EmptyState)
    assert np.max(np.abs(ours[0] - np.asarray(w0))) > 1e-2  # the first update is a full step
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_schatten_rejects_non_matrix_leaves():
    with pytest.raises(ValueError, match="2-D"):
        deva_schatten().init({"b": jnp.zeros(3)})


# --------------------------------------------------------------------------- router, SOAP


def test_router_labels_and_linf_matrix_form():
    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2), "s": jnp.asarray(1.0)}
    grads = {"w": jnp.full((3, 2), 0.3), "b": jnp.array([0.1, -0.2]), "s": jnp.asarray(0.5)}
    tx = deva(0.1, use_eigenbasis=False, linf_learning_rate=0.02)
    u, _ = jax.jit(tx.update)(grads, tx.init(params), params)
    ref_s = deva_schatten(0.1, use_eigenbasis=False)
    us, _ = jax.jit(ref_s.update)(grads["w"], ref_s.init(params["w"]), params["w"])
    ref_l = deva_linf(0.02)
    sub = {"b": params["b"], "s": params["s"]}
    ul, _ = jax.jit(ref_l.update)({"b": grads["b"], "s": grads["s"]}, ref_l.init(sub), sub)
    np.testing.assert_allclose(u["w"], us, rtol=1e-6)
    np.testing.assert_allclose(u["b"], ul["b"], rtol=1e-6)
    # matrix_form="linf": every leaf, matrices included, takes the l_inf form
    tx = deva(0.1, matrix_form="linf")
    u, _ = jax.jit(tx.update)(grads, tx.init(params), params)
    ul, _ = jax.jit(deva_linf(0.1).update)(grads, deva_linf(0.1).init(params), params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), u, ul)


def test_soap_without_rotation_is_adamw():
    """SOAP with Q = I is Adam (eps moved inside the bias correction: negligible at 1e-12)."""
    params = {"w": jnp.asarray(np.random.default_rng(10).normal(size=(5, 4)), jnp.float32),
              "b": jnp.zeros(4)}
    loss = lambda p: _quad_loss(p["w"]) + jnp.sum((p["b"] - 1.0) ** 2)
    tx = soap(0.01, 0.9, 0.99, 1e-12, 0.1, use_eigenbasis=False)
    ref = optax.adamw(0.01, 0.9, 0.99, 1e-12, weight_decay=0.1)
    a, _ = _run(tx, params, 6, loss)
    b, _ = _run(ref, params, 6, loss)
    for x, y in zip(a, b, strict=True):
        jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6), x, y)


# --------------------------------------------------------------------------- dtypes, validation


@pytest.mark.parametrize("name", ["deva", "deva_fast", "deva_linf", "soap", "signum"])
def test_bf16_kept_and_zero_gradients_finite(name):
    make = {"deva": lambda: deva(1e-2, precondition_frequency=1),
            "deva_fast": lambda: deva(1e-2, use_eigenbasis=False),
            "deva_linf": lambda: deva_linf(1e-2), "soap": lambda: soap(1e-2),
            "signum": lambda: signum(1e-2)}[name]
    tx = make()
    upd = jax.jit(tx.update)
    p = {"w": jnp.ones((4, 3), jnp.bfloat16), "b": jnp.ones(3, jnp.bfloat16)}
    s = tx.init(p)
    for _ in range(3):  # zero gradients at initialisation: no NaN anywhere
        u, s = upd(jax.tree.map(jnp.zeros_like, p), s, p)
        p = optax.apply_updates(p, u)
    for leaf in jax.tree.leaves((u, s)):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.all(np.isfinite(np.asarray(leaf, np.float32)))
    assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves((u, p)))
    grads = {"w": jnp.full((4, 3), 0.5, jnp.bfloat16), "b": jnp.ones(3, jnp.bfloat16)}
    u, s = upd(grads, s, p)
    assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves(u))
    assert any(np.any(np.asarray(x, np.float32)) for x in jax.tree.leaves(u))


def test_signum_bf16_params_keep_bf16_updates_with_float32_momentum():
    """CONTRIBUTING.md section 1: 16-bit leaves accumulate in float32. The momentum of bf16
    params is a float32 trace (0.9 m + 0.1 g in bf16 would round 1e-3 increments away), updates
    stay bf16, and the trace matches a float32 NumPy EMA; ``mu_dtype`` overrides the trace dtype."""
    p = jnp.ones(4, jnp.bfloat16)
    tx = signum(0.1, b1=0.9)
    s = tx.init(p)
    m = np.zeros(4, np.float32)
    upd = jax.jit(tx.update)
    g = np.array([1.0, -1.0, 3e-3, -0.5], np.float32)
    for k in range(5):
        gk = g * (1 + k)
        u, s = upd(jnp.asarray(gk, jnp.bfloat16), s, p)
        m = 0.9 * m + 0.1 * np.asarray(jnp.asarray(gk, jnp.bfloat16), np.float32)
        assert u.dtype == jnp.bfloat16
        np.testing.assert_allclose(np.asarray(u, np.float32), -0.1 * np.sign(m), rtol=1e-2)
    trace = s[0].ema
    assert trace.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(trace), m, rtol=1e-6)
    assert signum(0.1, mu_dtype=jnp.bfloat16).init(p)[0].ema.dtype == jnp.bfloat16
    with jax.enable_x64(True):  # float64 params keep a float64 trace
        p64 = jnp.ones(3, jnp.float64)
        u, s = signum(0.1).update(jnp.ones(3, jnp.float64), signum(0.1).init(p64), p64)
        assert u.dtype == jnp.float64 and s[0].ema.dtype == jnp.float64
    with pytest.raises(ValueError, match="mu_dtype"):
        signum(0.1, mu_dtype=jnp.int32)


def test_invalid_arguments_name_the_argument():
    make = CONTRACT_CASES[0].make
    for override, arg in _INVALID:
        with pytest.raises(ValueError, match=arg):
            make(**override)
    for fn in (signum, deva_linf, soap):
        with pytest.raises(ValueError, match="learning_rate"):
            fn(-1.0)
    with pytest.raises(ValueError, match="b1"):
        signum(0.1, b1=1.0)
    with pytest.raises(ValueError, match="eps"):
        scale_by_deva_linf(eps=lambda t: 1e-3)


def test_static_settings_are_keyword_only():
    with pytest.raises(TypeError):
        deva_schatten(1e-3, 0.9, 0.9, 1e-8, 0.0, 10)
    with pytest.raises(TypeError):
        deva_linf(1e-3, 0.9, 0.9, 1e-5, 0.0, True)


# --------------------------------------------------------------------------- shapes, inject


def _vec(*shape):
    return jnp.ones(shape)


# (name, constructor, params, leaf to break, its wrong shape, checked against the state when
# params is None). soap's broken leaf is 1-D: it goes to the optax.adamw partition, which
# broadcast it before (a raw TypeError); the others' moment trees are checked too.
_SHAPE_CASES = [
    # (without params, deva's weight decay on the matrices asks for them first)
    ("deva", lambda: deva(1e-2), {"w": _vec(3, 2), "b": _vec(3)}, "b", (4,), False),
    ("deva_matrix", lambda: deva(1e-2), {"w": _vec(3, 2), "b": _vec(3)}, "w", (4, 2), True),
    ("deva_linf", lambda: deva_linf(1e-2), {"w": _vec(3), "b": _vec(2)}, "w", (4,), True),
    ("scale_by_deva_linf", scale_by_deva_linf, {"w": _vec(3), "b": _vec(2)}, "w", (4,), True),
    ("deva_schatten", lambda: deva_schatten(1e-2), {"w": _vec(3, 2), "v": _vec(2, 2)}, "w",
     (4, 2), True),
    ("scale_by_deva_schatten", scale_by_deva_schatten, {"w": _vec(3, 2), "v": _vec(2, 2)}, "v",
     (2, 3), True),
    ("soap", lambda: soap(1e-2), {"w": _vec(3, 2), "b": _vec(3)}, "b", (4,), False),
    ("scale_by_soap", scale_by_soap, {"w": _vec(3, 2), "v": _vec(2, 2)}, "w", (4, 2), True),
    ("signum", lambda: signum(0.1), {"w": _vec(3), "b": _vec(2)}, "w", (4,), True),
]


@pytest.mark.parametrize("case", _SHAPE_CASES, ids=[c[0] for c in _SHAPE_CASES])
def test_mismatched_updates_raise_value_error_naming_the_leaf(case):
    """Updates whose leaf shape or tree structure differs from the params (or, without params,
    from the state's moments) raise a ValueError that names the leaf, at trace time."""
    _, make, params, leaf, shape, checks_state = case
    tx = make()
    state = tx.init(params)
    good = jax.tree.map(jnp.ones_like, params)
    bad = {**good, leaf: jnp.ones(shape)}
    expected = rf"\['{leaf}'\]: shape {re.escape(str(shape))} vs " \
               rf"{re.escape(str(params[leaf].shape))}"
    with pytest.raises(ValueError, match=r"updates and params disagree at leaf " + expected):
        tx.update(bad, state, params)
    with pytest.raises(ValueError, match=expected):
        jax.jit(tx.update)(bad, state, params)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**good, "extra": jnp.ones((2, 2))}, state, params)
    assert "'extra'" in str(err.value)
    if checks_state:
        with pytest.raises(ValueError, match=r"updates and state\.\w+ disagree at leaf " +
                           expected):
            tx.update(bad, state)


def _run_64(tx, w0, steps):
    with jax.enable_x64(True):
        out, _ = _run(tx, jnp.asarray(w0), steps)
    return out


def test_inject_hyperparams_deva_with_default_static_ints_needs_no_static_args():
    """Reported: deva under optax.inject_hyperparams needed precondition_frequency,
    max_precond_dim and ns_steps in static_args (undocumented). Left out, they need nothing
    (learning_rate, b1, ... injected); the trajectory follows the NumPy re-derivation of the
    Schatten form with the default refresh period 10."""
    lr, w0 = 0.05, np.random.default_rng(7).normal(size=(5, 4))
    ref = _np_deva_schatten_run(w0, _quad_grad_np, 4, lr, 0.95, 0.95, 1e-8, 0.01, 10, True,
                                True)
    with jax.enable_x64(True):
        tx = optax.inject_hyperparams(deva)(learning_rate=lr)
        assert "precondition_frequency" not in tx.init(jnp.asarray(w0)).hyperparams
    for a, b in zip(_run_64(tx, w0, 4), ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_inject_hyperparams_deva_static_ints_recipe_and_error():
    """Given explicitly, the static ints go in static_args (the docstring's recipe, checked
    against NumPy); missing, ONE ValueError names all of them and the exact static_args."""
    lr, w0 = 0.05, np.random.default_rng(7).normal(size=(5, 4))
    ints = dict(precondition_frequency=2, ns_steps=5, max_precond_dim=100)
    names = ("precondition_frequency", "ns_steps", "max_precond_dim")
    ref = _np_deva_schatten_run(w0, _quad_grad_np, 5, lr, 0.95, 0.95, 1e-8, 0.01, 2, True, True)
    with jax.enable_x64(True):
        tx = optax.inject_hyperparams(deva, static_args=names)(lr, **ints)
    for a, b in zip(_run_64(tx, w0, 5), ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    for factory in (deva, deva_schatten, scale_by_deva_schatten):
        tx = optax.inject_hyperparams(factory)(**ints)
        w = jnp.ones((3, 2))
        with pytest.raises(ValueError) as err:
            jax.jit(tx.update)(w, tx.init(w), w)
        msg = str(err.value)
        assert all(n in msg for n in names), msg
        assert f"static_args={names!r}" in msg, msg
    # only the ones given are traced, and only those are asked for
    tx = optax.inject_hyperparams(deva)(lr, ns_steps=3)
    w = jnp.ones((3, 2))
    with pytest.raises(ValueError, match=re.escape("static_args=('ns_steps',)")):
        jax.jit(tx.update)(w, tx.init(w), w)


def test_inject_hyperparams_soap_default_recipe_and_error():
    """SOAP likewise: with the static ints left out it injects as is; given, the documented
    static_args work; missing, one ValueError names both. Without rotation SOAP is AdamW
    (the independent reference)."""
    params = {"w": jnp.asarray(np.random.default_rng(10).normal(size=(5, 4)), jnp.float32),
              "b": jnp.zeros(4)}
    loss = lambda p: _quad_loss(p["w"]) + jnp.sum((p["b"] - 1.0) ** 2)  # noqa: E731
    ref, _ = _run(optax.adamw(0.01, 0.9, 0.99, 1e-12, weight_decay=0.1), params, 4, loss)
    names = ("precondition_frequency", "max_precond_dim")
    args = (0.01, 0.9, 0.99, 1e-12, 0.1)
    for tx in (optax.inject_hyperparams(soap)(*args, use_eigenbasis=False),
               optax.inject_hyperparams(soap, static_args=names)(
                   *args, use_eigenbasis=False, precondition_frequency=3, max_precond_dim=64)):
        got, _ = _run(tx, params, 4, loss)
        for x, y in zip(got, ref, strict=True):
            jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6),
                         x, y)
    tx = optax.inject_hyperparams(soap)(*args, precondition_frequency=3, max_precond_dim=64)
    with pytest.raises(ValueError) as err:
        jax.jit(tx.update)(params, tx.init(params), params)
    assert f"static_args={names!r}" in str(err.value), str(err.value)


def test_inject_hyperparams_rejects_a_dtype_taken_for_a_schedule():
    """A scalar type (jnp.bfloat16) is callable, so inject_hyperparams evaluates it as a
    schedule and passes an array: a ValueError says what to do instead of a silently wrong
    momentum dtype; jnp.dtype(...) is the documented way."""
    w = jnp.ones((3, 2))
    tx = optax.inject_hyperparams(deva_linf)(1e-2, mu_dtype=jnp.bfloat16)
    with pytest.raises(ValueError, match=r"mu_dtype.*static_args=\('mu_dtype',\)"):
        tx.init(w)
    tx = optax.inject_hyperparams(deva_linf)(1e-2, mu_dtype=jnp.dtype(jnp.bfloat16))
    assert tx.init(w).inner_state[0].mu.dtype == jnp.bfloat16


# --------------------------------------------------------------------------- experiment


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, key 0 (deterministic given the key): every claim passes except the
    documented non-reproductions ``KNOWN_FAILING``, which must still be reported failing (a
    change that makes them pass or fail differently shows up here)."""
    results = quick_results
    runner.check_quick_claims(experiment, results)
    summary = experiment.summarize(results)
    assert all(np.isfinite(v) for v in summary.values())
    # QUICK has no classifier (FULL adds "model")
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"trace_quadratic"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK trace_quadratic figure passes the readability check: titles, axis labels,
    legends that say what the shaded bands are, y-ranges fitted to the data, tick labels that
    do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
