"""Tests of the shared zeroth-order API (``jaxopt_icml.zeroth_order.estimators``).

References are independent: NumPy re-derivations from the documented key layout, polynomials
whose finite differences are known in closed form (a quadratic makes the central difference
exact, a cubic adds exactly ``r^2/6 D^3 f[u, u, u]``), and Monte Carlo moments of the
direction distributions. The property matrix for ``zo_optimizer`` runs through the
contract cases declared in ``tests/zeroth_order/test_romberg_zoge.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxopt_icml import base
from jaxopt_icml.zeroth_order.estimators import (
    central_difference_estimator,
    central_differences,
    dimension,
    forward_difference,
    normalization,
    sample_directions,
    two_point,
    zo_optimizer,
)

pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


TREE = {"w": np.arange(6.0).reshape(2, 3) / 10 - 0.2, "b": np.array([0.3, -0.7]),
        "s": np.array(0.25)}
# jax.tree flattening order of TREE (dict keys sorted): b, s, w
ORDER = ("b", "s", "w")


def _flat(tree) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(tree[k], np.float64)) for k in ORDER])


def _unflat(v, like) -> dict:
    out, i = {}, 0
    for k in ORDER:
        n = int(np.size(like[k]))
        out[k] = v[i:i + n].reshape(np.shape(like[k]))
        i += n
    return out


def _np_directions(key, num, d, distribution):
    """The documented draw: one (num, d) array, sphere rows normalised over all leaves."""
    if distribution == "rademacher":
        return np.asarray(jax.random.rademacher(key, (num, d), jnp.float64))
    z = np.asarray(jax.random.normal(key, (num, d), jnp.float64))
    return z / np.linalg.norm(z, axis=1, keepdims=True) if distribution == "sphere" else z


# quadratic f(x) = 0.5 x'Ax + b'x on the flattened tree (D(r) is then exact)
_rng = np.random.default_rng(0)
_M = _rng.normal(size=(9, 9))
A_MAT = _M @ _M.T / 9 + np.eye(9)
B_VEC = _rng.normal(size=9)
C_CUBE = _rng.normal(size=9)


def _quad(x, key=None):
    v = jnp.concatenate([jnp.ravel(x[k]) for k in ORDER])
    return 0.5 * v @ (jnp.asarray(A_MAT) @ v) + jnp.asarray(B_VEC) @ v


def _cubic(x, key=None):
    v = jnp.concatenate([jnp.ravel(x[k]) for k in ORDER])
    return jnp.sum(jnp.asarray(C_CUBE) * v**3) + jnp.asarray(B_VEC) @ v


def _jit(est, f, x, key):
    """One compiled call of an estimator (eager small ops each compile on their own)."""
    return jax.jit(lambda x, k: est(f, x, k))(x, key)


def _tree():
    return jax.tree.map(jnp.asarray, TREE)


# --------------------------------------------------------------------------- directions


DISTS = ("sphere", "gaussian", "rademacher")


def test_directions_layout_and_values():
    """The documented draw for each distribution (one jitted program for all three)."""
    x = _tree()
    key = jax.random.key(3)
    draws = jax.jit(lambda k: [sample_directions(k, x, 5, distribution=d) for d in DISTS])(key)
    assert dimension(x) == 9
    for distribution, u in zip(DISTS, draws, strict=True):
        assert jax.tree.structure(u) == jax.tree.structure(x)
        for k in ORDER:
            assert u[k].shape == (5,) + np.shape(TREE[k]) and u[k].dtype == jnp.float64
        flat = np.stack([_flat(jax.tree.map(lambda v, i=i: v[i], u)) for i in range(5)])
        np.testing.assert_allclose(flat, _np_directions(key, 5, 9, distribution), rtol=1e-12)
        if distribution == "sphere":
            np.testing.assert_allclose(np.linalg.norm(flat, axis=1), 1.0, rtol=1e-12)
        if distribution == "rademacher":
            assert set(np.unique(flat)) == {-1.0, 1.0}
        assert normalization(distribution, x) == (9.0 if distribution == "sphere" else 1.0)


def test_directions_second_moment_is_identity_after_normalization():
    """E[c u u^T] = I (c = d on the sphere, 1 otherwise): Monte Carlo with 40000 draws."""
    x = jnp.zeros(6)
    draws = jax.jit(lambda k: [sample_directions(k, x, 40000, distribution=d) for d in DISTS])(
        jax.random.key(1))
    for distribution, u in zip(DISTS, draws, strict=True):
        u = np.asarray(u)
        m = normalization(distribution, x) * u.T @ u / u.shape[0]
        # entries of c u u^T have std <= sqrt(2) (Gaussian): 5 standard errors
        np.testing.assert_allclose(m, np.eye(6), atol=5 * np.sqrt(2.0 / 40000))


def test_directions_of_16_bit_leaves_are_float32():
    x = {"h": jnp.zeros((3,), jnp.bfloat16), "f": jnp.zeros((2,), jnp.float32)}
    u = sample_directions(jax.random.key(0), x, 2)
    assert u["h"].dtype == jnp.float32 and u["f"].dtype == jnp.float32
    tot = jnp.sum(u["h"] ** 2, 1) + jnp.sum(u["f"] ** 2, 1)
    np.testing.assert_allclose(np.asarray(tot), 1.0, rtol=1e-6)
    # abstract leaves work (values unused)
    abstract = {"a": jax.ShapeDtypeStruct((4, 2), jnp.float32)}
    assert sample_directions(jax.random.key(0), abstract, 3)["a"].shape == (3, 4, 2)


# --------------------------------------------------------------------------- estimators


def _np_two_point(f_np, x, key, num, radius, distribution):
    k_dir, _ = jax.random.split(key)
    u = _np_directions(k_dir, num, 9, distribution)
    xv = _flat(x)
    d = np.array([(f_np(xv + radius * ui) - f_np(xv - radius * ui)) / (2 * radius) for ui in u])
    c = 9.0 if distribution == "sphere" else 1.0
    return c / num * (d[:, None] * u).sum(0), u


def _np_quad(v):
    return 0.5 * v @ A_MAT @ v + B_VEC @ v


def _np_cubic(v):
    return np.sum(C_CUBE * v**3) + B_VEC @ v


def test_two_point_matches_numpy_and_is_exact_on_a_quadratic():
    x, key = _tree(), jax.random.key(7)
    outs = jax.jit(lambda x, k: [two_point(0.3, num_directions=4, distribution=d)(_quad, x, k)
                                 for d in DISTS])(x, key)
    grad = A_MAT @ _flat(TREE) + B_VEC
    for distribution, (g, info) in zip(DISTS, outs, strict=True):
        assert int(info["oracle_calls"]) == 8 and info["oracle_calls"].dtype == jnp.int32
        ref, u = _np_two_point(_np_quad, TREE, key, 4, 0.3, distribution)
        np.testing.assert_allclose(_flat(g), ref, rtol=1e-10, atol=1e-12)
        # for a quadratic D(r) = <grad f, u> exactly: g = c/B sum (u . grad) u
        c = 9.0 if distribution == "sphere" else 1.0
        np.testing.assert_allclose(_flat(g), c / 4 * ((u @ grad)[:, None] * u).sum(0),
                                   rtol=1e-9, atol=1e-12)


def test_two_point_cubic_bias_is_r2_over_6_third_derivative():
    """f cubic: D(r) = <grad f, u> + r^2/6 D^3f[u,u,u] exactly, D^3f[u^3] = 6 sum c_i u_i^3."""
    x, key, r = _tree(), jax.random.key(11), 0.2
    g, _ = _jit(two_point(r, num_directions=3), _cubic, x, key)
    u = _np_directions(jax.random.split(key)[0], 3, 9, "sphere")
    v = _flat(TREE)
    grad = 3 * C_CUBE * v**2 + B_VEC
    dd = u @ grad + r**2 / 6 * (6 * (C_CUBE * u**3).sum(1))
    np.testing.assert_allclose(_flat(g), 9 / 3 * (dd[:, None] * u).sum(0), rtol=1e-9)


def test_two_point_is_unbiased_for_a_quadratic_gradient():
    x = _tree()
    g, _ = _jit(two_point(0.5, num_directions=40000), _quad, x, jax.random.key(2))
    grad = A_MAT @ _flat(TREE) + B_VEC
    # per-coordinate std of the mean <= sqrt(d) |grad| / sqrt(n): 5 standard errors
    tol = 5 * np.sqrt(9) * np.linalg.norm(grad) / np.sqrt(40000)
    np.testing.assert_allclose(_flat(g), grad, atol=tol)


def test_forward_difference_on_a_quadratic():
    """[f(x + r u) - f(x)] / r = <grad, u> + (r/2) u'Au exactly; B + 1 evaluations."""
    x, key, r = _tree(), jax.random.key(5), 0.1
    g, info = _jit(forward_difference(r, num_directions=3, distribution="gaussian"), _quad,
                   x, key)
    assert int(info["oracle_calls"]) == 4
    u = _np_directions(jax.random.split(key)[0], 3, 9, "gaussian")
    grad = A_MAT @ _flat(TREE) + B_VEC
    dd = u @ grad + r / 2 * np.einsum("bi,ij,bj->b", u, A_MAT, u)
    np.testing.assert_allclose(_flat(g), (dd[:, None] * u).sum(0) / 3, rtol=1e-9)


def test_weighted_radii_and_independent_directions():
    """central_difference_estimator with two radii: shared direction -> one u per b, weights
    applied to D at each radius; shared_direction=False -> B*K directions, one per radius."""
    x, key = _tree(), jax.random.key(9)
    scales, weights = (1.0, 0.5), (-0.5, 1.5)
    v = _flat(TREE)
    k_dir, _ = jax.random.split(key)
    for shared in (True, False):
        est = central_difference_estimator(0.4, scales=scales, weights=weights,
                                           num_directions=2, shared_direction=shared)
        g, info = _jit(est, _cubic, x, key)
        assert int(info["oracle_calls"]) == 8
        u = _np_directions(k_dir, 2 if shared else 4, 9, "sphere").reshape(2, -1, 9)
        ref = np.zeros(9)
        for b in range(2):
            for k, (s, w) in enumerate(zip(scales, weights, strict=True)):
                ub = u[b, 0 if shared else k]
                h = 0.4 * s
                ref += 9 / 2 * w * (_np_cubic(v + h * ub) - _np_cubic(v - h * ub)) / (2 * h) * ub
        np.testing.assert_allclose(_flat(g), ref, rtol=1e-9)


def test_every_evaluation_has_its_own_key():
    """A pure-noise oracle: the 2BK values are distinct draws, and the layout is documented:
    keys = split(k_eval, 2BK), order (b, k, sign)."""
    noise = lambda x, key: jax.random.normal(key, ())
    x = jnp.zeros(3)
    key = jax.random.key(4)
    u = sample_directions(jax.random.split(key)[0], x, 2)
    diffs = jax.jit(lambda u, k: central_differences(noise, x, u, jnp.asarray([0.1, 0.05]), k))(
        u, key)
    vals = np.asarray(jax.vmap(lambda k: jax.random.normal(k, ()))(jax.random.split(key, 8)))
    vals = vals.reshape(2, 2, 2)
    np.testing.assert_allclose(np.asarray(diffs), (vals[..., 0] - vals[..., 1])
                               / (2 * np.array([0.1, 0.05])), rtol=1e-12)
    assert len(np.unique(vals)) == 8


def test_eval_batch_size_equals_vmap():
    x, key = _tree(), jax.random.key(8)
    ests = (two_point(0.2, num_directions=5), two_point(0.2, num_directions=5, eval_batch_size=3),
            forward_difference(0.2, num_directions=5, eval_batch_size=2),
            forward_difference(0.2, num_directions=5))
    a, b, c, d = (g for g, _ in jax.jit(lambda x, k: [e(_cubic, x, k) for e in ests])(x, key))
    jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-12), a, b)
    jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-12), c, d)


def test_dtypes_are_kept_and_16_bit_leaves_computed_in_float32():
    x = {"h": jnp.full((3,), 0.5, jnp.bfloat16), "f": jnp.full((2,), -0.5, jnp.float32)}
    f = lambda z, key: jnp.sum(z["h"].astype(jnp.float32) ** 2) + jnp.sum(z["f"] ** 2)
    seen = {}

    def spy(z, key):
        seen["dtype"] = z["h"].dtype
        return f(z, key)

    g, _ = _jit(two_point(1e-2, num_directions=4000), spy, x, jax.random.key(0))
    assert g["h"].dtype == jnp.bfloat16 and g["f"].dtype == jnp.float32
    assert seen["dtype"] == jnp.float32
    # exact on a quadratic up to float32 rounding: the mean is close to the gradient 2x
    tol = 5 * np.sqrt(5) * np.sqrt(5 * 1.0) / np.sqrt(4000)
    np.testing.assert_allclose(np.asarray(g["h"], np.float32), 1.0, atol=tol)
    np.testing.assert_allclose(np.asarray(g["f"]), -1.0, atol=tol)


# --------------------------------------------------------------------------- the optimizer


class _Oracle:
    """A plain oracle object with a value method (zo_optimizer only calls getattr)."""

    def __init__(self, fn):
        self.fn = fn

    def value(self, x, key):
        return self.fn(x, key)

    def loss(self, x, key):
        return 2.0 * self.fn(x, key)


@pytest.mark.parametrize("tx_name", ["sgd", "adam"])
def test_zo_optimizer_equals_a_manual_loop(tx_name):
    """base.run(zo_optimizer(est, tx)) == the Python loop x <- x + tx(est(f, x, k_t)) with the
    run's key schedule (update key t = fold_in(split(key)[1], t))."""
    est = two_point(0.1, num_directions=2)
    tx = optax.sgd(lambda c: 0.1 / (1.0 + c)) if tx_name == "sgd" else optax.adam(0.05)
    alg = zo_optimizer(est, tx)
    x0, key, T = _tree(), jax.random.key(6), 5
    oracle = _Oracle(_cubic)
    state, trace = base.run(alg, x0, oracle, key, T,
                            trace_fn=lambda s, st, o: (s.x, s.info["oracle_calls"]))
    _, k_upd = jax.random.split(key)

    @jax.jit
    def step(x, inner, k):
        g, _ = est(_cubic, x, k)
        u, inner = tx.update(g, inner, x)
        return optax.apply_updates(x, u), inner

    x, inner = x0, tx.init(x0)
    for t in range(T):
        x, inner = step(x, inner, jax.random.fold_in(k_upd, t))
        jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12),
                     jax.tree.map(lambda v, t=t: v[t], trace[0]), x)
    assert np.all(np.asarray(trace[1]) == 4)
    jax.tree.map(lambda p, q: np.testing.assert_allclose(p, q, rtol=1e-10), state.x, x)


def test_zo_optimizer_field_and_descent():
    """field selects the oracle method (loss = 2 f doubles the first step); ZO-SGD on a
    quadratic decreases f."""
    x0 = _tree()
    est = two_point(1e-3, num_directions=4)
    k = jax.random.key(0)

    def first_step(x, field):
        alg = zo_optimizer(est, optax.sgd(0.01), field=field)
        return alg.update(alg.init(x, k), _Oracle(_quad), k)[0].x

    a, b = jax.jit(lambda x: (first_step(x, "value"), first_step(x, "loss")))(x0)
    np.testing.assert_allclose(_flat(b) - _flat(TREE), 2 * (_flat(a) - _flat(TREE)), rtol=1e-9)
    _, trace = base.run(zo_optimizer(est, optax.sgd(0.05)), x0, _Oracle(_quad), k, 300,
                        trace_fn=lambda s, st, o: _quad(s.x))
    assert float(trace[-1]) < float(_quad(x0)) - 0.5 * (float(_quad(x0)) - float(trace.min()))


@pytest.mark.parametrize("transformation", ["sgd", "adam"])
def test_zo_optimizer_rejects_an_estimate_of_another_shape(transformation):
    """A user estimator whose estimate has another leaf shape than x raises a ValueError naming
    the leaf; with optax.sgd or optax.adam it used to pass silently (the scalar leaf of x became
    a (2,) leaf)."""

    def wrong(value_fn, x, key):
        g = jax.tree.map(jnp.zeros_like, x)
        return {**g, "s": jnp.ones(2)}, {"oracle_calls": 0}

    alg = zo_optimizer(wrong, getattr(optax, transformation)(0.1))
    k = jax.random.key(0)
    with pytest.raises(ValueError, match=r"zo_optimizer: estimator\(value_fn, x\)\[0\] and x "
                       r"disagree at leaf \['s'\]: shape \(2,\) vs \(\)"):
        alg.update(alg.init(_tree(), k), _Oracle(_quad), k)


@pytest.mark.parametrize("call,name", [
    (lambda: two_point(0.0), "radius"),
    (lambda: two_point(-1.0), "radius"),
    (lambda: two_point(float("nan")), "radius"),
    (lambda: two_point(lambda t: 0.1), "radius"),
    (lambda: two_point(0.1, num_directions=0), "num_directions"),
    (lambda: two_point(0.1, num_directions=2.0), "num_directions"),
    (lambda: two_point(0.1, num_directions=True), "num_directions"),
    (lambda: two_point(0.1, distribution="uniform"), "distribution"),
    (lambda: two_point(0.1, eval_batch_size=0), "eval_batch_size"),
    (lambda: forward_difference(-0.1), "radius"),
    (lambda: forward_difference(0.1, num_directions=0), "num_directions"),
    (lambda: central_difference_estimator(0.1, scales=(), weights=()), "scales"),
    (lambda: central_difference_estimator(0.1, scales=(1.0, -1.0), weights=(1, 0)), "scales"),
    (lambda: central_difference_estimator(0.1, scales=(1.0,), weights=(1.0, 2.0)), "weights"),
    (lambda: central_difference_estimator(0.1, scales=(1.0,), weights=(1.0,),
                                          shared_direction=1), "shared_direction"),
    (lambda: sample_directions(jax.random.key(0), jnp.zeros(2), 0), "num_directions"),
    (lambda: sample_directions(jax.random.key(0), jnp.zeros(2), 1, distribution="x"),
     "distribution"),
    (lambda: sample_directions(jax.random.key(0), jnp.zeros(2, jnp.int32), 1), "floating"),
    (lambda: zo_optimizer("est", optax.sgd(0.1)), "estimator"),
    (lambda: zo_optimizer(two_point(0.1), "sgd"), "transformation"),
    (lambda: zo_optimizer(two_point(0.1), optax.sgd(0.1), field=""), "field"),
])
def test_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()
