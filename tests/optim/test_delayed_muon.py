"""Tests of the one-step delay, the delay correction and delayed Muon
(jaxopt_icml.optim.delayed_muon) and of their experiment."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.optim.delayed_muon import (
    delay_correction,
    delayed_adamw,
    delayed_muon,
    one_step_delay,
)
from jaxopt_icml.testing import TransformationCase


def _delayed_adamw(learning_rate=1e-2, *, inner=None, first_step="undelayed", gamma=None):
    tx = optax.adamw(learning_rate, weight_decay=0.1) if inner is None else inner
    parts = [one_step_delay(tx, first_step=first_step)]
    if gamma is not None:
        parts.append(delay_correction(gamma))
    return optax.chain(*parts)


CONTRACT_CASES = (
    TransformationCase(
        name="one_step_delay_adamw", make=_delayed_adamw, kwargs={"learning_rate": 1e-2},
        invalid=(({"inner": 3}, "inner"), ({"first_step": "none"}, "first_step"),
                 ({"first_step": 0}, "first_step"), ({"gamma": -0.5}, "gamma"),
                 ({"gamma": float("nan")}, "gamma")),
        needs_params=True),
    TransformationCase(
        name="delayed_muon_corrected", make=delayed_muon,
        kwargs={"learning_rate": 2e-2, "gamma": 1.0},
        invalid=(({"learning_rate": 0.0}, "learning_rate"), ({"beta": 1.0}, "beta"),
                 ({"beta": -0.1}, "beta"), ({"gamma": -1.0}, "gamma"),
                 ({"first_step": "late"}, "first_step"), ({"nesterov": 1}, "nesterov"),
                 ({"ns_steps": 0}, "ns_steps"), ({"ns_steps": 2.0}, "ns_steps"),
                 ({"weight_decay": -1e-3}, "weight_decay"), ({"adam_b1": 1.0}, "adam_b1"),
                 ({"adam_b2": 1.5}, "adam_b2")),
        needs_params=True),
    TransformationCase(
        name="delayed_adamw", make=delayed_adamw,
        kwargs={"learning_rate": 1e-2, "weight_decay": 0.1},
        invalid=(({"learning_rate": 0.0}, "learning_rate"), ({"b1": 1.0}, "b1"),
                 ({"b2": -0.1}, "b2"), ({"eps": 0.0}, "eps"), ({"eps_root": -1.0}, "eps_root"),
                 ({"weight_decay": -1e-3}, "weight_decay"), ({"first_step": "late"},
                                                             "first_step")),
        needs_params=True),
)


# --------------------------------------------------------------------------- helpers

A = np.diag([2.0, 0.5, 1.0]) + 0.3 * np.ones((3, 3))  # SPD Hessian of the quadratic
X0 = np.array([1.0, -2.0, 0.5])


def _quad_grad(x):
    return A @ x


def _run(tx, steps, x0=X0, grad=None, x64=True):
    """Runs ``tx`` on the quadratic 0.5 x^T A x (float64), returning the iterates."""
    grad = grad or (lambda x: jnp.asarray(A) @ x)
    with jax.enable_x64(x64):
        x = jnp.asarray(x0)
        s = tx.init(x)
        out = []
        for _ in range(steps):
            u, s = tx.update(grad(x), s, x)
            x = optax.apply_updates(x, u)
            out.append(np.asarray(x))
    return np.stack(out)


@pytest.fixture(params=["cpu", "off_cpu"])
def stash_branch(request, monkeypatch):
    """Runs a test with the CPU's stash write and again with the one used off the CPU (where
    XLA:GPU needs the old stash read to update a donated stash in place), every
    ``lax.platform_dependent`` choice forced to its default branch."""
    if request.param == "off_cpu":
        monkeypatch.setattr(jax.lax, "platform_dependent",
                            lambda *args, default, **branches: default(*args))
    return request.param


# --------------------------------------------------------------------------- the delay


@pytest.mark.parametrize("first_step", ["undelayed", "zero"])
def test_delayed_heavy_ball_matches_numpy_stale_loop(first_step, stash_branch):
    """NumPy re-derivation: heavy-ball SGD fed g(x_{t-1}) (x_{-1} = x_0, or no step at 0)."""
    lr, mom, T = 0.1, 0.8, 25
    x, x_prev, m, ref = X0.copy(), X0.copy(), np.zeros(3), []
    for t in range(T):
        if first_step == "zero" and t == 0:
            new = x.copy()
        else:
            m = mom * m + _quad_grad(x_prev if t > 0 else x)
            new = x - lr * m
        x_prev, x = x, new
        ref.append(x.copy())
    got = _run(one_step_delay(optax.sgd(lr, momentum=mom), first_step=first_step), T)
    np.testing.assert_allclose(got, np.stack(ref), rtol=1e-12, atol=1e-12)


def test_bf16_stash_rounds_only_the_stored_gradient(stash_branch):
    """stash_dtype=bfloat16: SGD fed round_bf16(g(x_{t-1})) (ml_dtypes rounding, float64 loop),
    the state holds bf16, and x_{-1} = x_0 uses the exact fresh gradient."""
    import ml_dtypes

    lr, T = 0.1, 12
    x, x_prev, ref = X0.copy(), X0.copy(), []
    for t in range(T):
        g = _quad_grad(x) if t == 0 else _quad_grad(x_prev).astype(ml_dtypes.bfloat16)
        x_prev, x = x, x - lr * np.asarray(g, np.float64)
        ref.append(x.copy())
    tx = one_step_delay(optax.sgd(lr), stash_dtype=jnp.bfloat16)
    np.testing.assert_allclose(_run(tx, T), np.stack(ref), rtol=1e-12, atol=1e-12)
    exact = _run(one_step_delay(optax.sgd(lr)), T)
    assert np.max(np.abs(exact - np.stack(ref))) > 1e-6  # the rounding is visible
    assert tx.init(jnp.zeros(3)).prev_grads.dtype == jnp.bfloat16
    for bad in ("int8", jnp.int32, "no such dtype"):
        with pytest.raises(ValueError, match="stash_dtype"):
            one_step_delay(optax.sgd(lr), stash_dtype=bad)


def test_constant_gradient_delay_is_invisible():
    """Known special case: with a constant gradient the stale gradient equals the fresh one, so
    one_step_delay(adamw) is bitwise optax.adamw (current params feed the weight decay)."""
    g = lambda x: jnp.asarray([0.3, -1.0, 2.0], x.dtype)
    inner = lambda: optax.adamw(0.05, weight_decay=0.1)
    np.testing.assert_array_equal(_run(one_step_delay(inner()), 10, grad=g),
                                  _run(inner(), 10, grad=g))


def test_zero_first_step_is_the_undelayed_run_one_step_late():
    """first_step="zero": call 0 applies nothing and leaves the inner state untouched; from
    then on call t applies inner's (t-1)-th update of g(x_{t-1})."""
    inner = optax.adam(0.1)
    tx = one_step_delay(inner, first_step="zero")
    x = jnp.asarray(X0, jnp.float32)
    s = tx.init(x)
    u, s1 = tx.update(jnp.asarray(A, jnp.float32) @ x, s, x)
    assert not np.any(np.asarray(u))
    jax.tree.map(np.testing.assert_array_equal, s1.inner_state, s.inner_state)
    assert int(s1.count) == 1 and int(s1.inner_state[0].count) == 0
    # The next call applies adam's first step to g(x_0): inner count 0 -> 1.
    u, s2 = tx.update(jnp.asarray(A, jnp.float32) @ x, s1, x)
    ref, _ = inner.update(jnp.asarray(A, jnp.float32) @ x, inner.init(x), x)
    np.testing.assert_array_equal(u, ref)


def test_schedule_and_weight_decay_use_the_current_step():
    """Only the gradient is stale: update t uses lr(t) and decays the current x_t."""
    lr = lambda t: 0.1 / (1.0 + t)
    wd, T = 0.5, 8
    x, x_prev, ref = X0.copy(), X0.copy(), []
    for t in range(T):
        g = _quad_grad(x_prev if t > 0 else x)
        new = x - lr(t) * (g + wd * x)  # optax.add_decayed_weights then scale by -lr(t)
        x_prev, x = x, new
        ref.append(x.copy())
    tx = one_step_delay(optax.chain(optax.add_decayed_weights(wd),
                                    optax.scale_by_learning_rate(lr)))
    np.testing.assert_allclose(_run(tx, T), np.stack(ref), rtol=1e-12)


# --------------------------------------------------------------------------- fused AdamW


def _tree_loss(p):
    """Non-quadratic, coupled: the delayed and undelayed runs differ at every step."""
    w, b = p["w"], p["b"]
    return jnp.sum(jnp.cosh(w @ b - 0.5)) + 0.25 * jnp.sum(w ** 4) + jnp.sum(jnp.sin(b) * b)


@pytest.mark.parametrize("first_step", ["undelayed", "zero"])
def test_delayed_adamw_equals_the_wrapped_optax_adamw(first_step):
    """Reference: optax.adamw under the generic stash wrapper, with a learning-rate schedule, a
    weight-decay schedule and a decay mask (float64, 40 steps)."""
    lr = optax.cosine_decay_schedule(0.05, 40)
    wd = lambda t: 0.1 / (1.0 + t)
    mask = {"w": True, "b": False}
    kw = dict(b1=0.8, b2=0.95, eps=1e-6, eps_root=1e-9, weight_decay=wd, mask=mask)
    fused = delayed_adamw(lr, **kw, first_step=first_step)
    generic = one_step_delay(optax.adamw(lr, **kw), first_step=first_step)
    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        p0 = {"w": jnp.asarray(rng.normal(size=(3, 4))), "b": jnp.asarray(rng.normal(size=4))}
        step = lambda tx: jax.jit(lambda p, s: tx.update(jax.grad(_tree_loss)(p), s, p))
        runs = []
        for tx in (fused, generic):
            p, s, f, traj = p0, tx.init(p0), step(tx), []
            for _ in range(40):
                u, s = f(p, s)
                p = optax.apply_updates(p, u)
                traj.append(np.concatenate([np.ravel(p["w"]), p["b"]]))
            runs.append(np.stack(traj))
    assert np.abs(runs[1][-1] - runs[1][0]).max() > 0.1  # the run moves
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-11, atol=1e-13)
    assert fused.init(p0)._fields == ("count", "mu", "nu", "tail_state")  # no stash


@pytest.mark.parametrize("first_step", ["undelayed", "zero"])
def test_delayed_adamw_bf16_and_callable_mask_match_the_wrapper_bitwise(first_step):
    """bf16 params and gradients (what a bf16 model's backward pass gives), decay masked by a
    callable: the same bits as the wrapped optax.adamw at every step."""
    mask = lambda params: jax.tree.map(lambda x: x.ndim == 2, params)
    fused = delayed_adamw(0.02, weight_decay=0.3, mask=mask, first_step=first_step)
    generic = one_step_delay(optax.adamw(0.02, weight_decay=0.3, mask=mask),
                             first_step=first_step)
    rng = np.random.default_rng(5)
    p0 = {"w": jnp.asarray(rng.normal(size=(3, 4)), jnp.bfloat16),
          "b": jnp.asarray(rng.normal(size=4), jnp.bfloat16)}
    loss = lambda p: _tree_loss(jax.tree.map(lambda x: x.astype(jnp.float32), p))
    runs = []
    for tx in (fused, generic):
        f = jax.jit(lambda p, s, tx=tx: tx.update(jax.grad(loss)(p), s, p))
        p, s, traj = p0, tx.init(p0), []
        for _ in range(30):
            u, s = f(p, s)
            p = optax.apply_updates(p, u)
            traj.append(np.concatenate([np.ravel(p["w"]), p["b"]]).astype(np.float32))
        assert p["w"].dtype == p["b"].dtype == jnp.bfloat16
        runs.append(np.stack(traj))
    assert np.abs(runs[1][-1] - runs[1][0]).max() > 0.05
    np.testing.assert_array_equal(runs[0], runs[1])


def test_delayed_adamw_first_calls_match_numpy():
    """Calls 0-2 by hand: call 0 is AdamW's first step on g_0; call 1 applies g_0 again."""
    b1, b2, eps, eta, wd = 0.9, 0.99, 1e-8, 0.1, 0.5
    grad = lambda x: np.sinh(x) + 0.3 * x[::-1]
    x = np.array([1.0, -2.0, 0.5])
    m = v = np.zeros(3)
    stale = [grad(x)]
    want = []
    for k in range(1, 4):
        g = stale[-2] if k > 1 else stale[-1]
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        d = (m / (1 - b1 ** k)) / (np.sqrt(v / (1 - b2 ** k)) + eps)
        x = x - eta * (d + wd * x)
        stale.append(grad(x))
        want.append(x.copy())
    tx = delayed_adamw(eta, b1, b2, eps, weight_decay=wd)
    got = _run(tx, 3, x0=np.array([1.0, -2.0, 0.5]),
               grad=lambda z: jnp.sinh(z) + 0.3 * z[::-1])
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-12)


# --------------------------------------------------------------------------- the correction


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0])
def test_correction_matches_numpy(gamma):
    rng = np.random.default_rng(0)
    us = rng.normal(size=(12, 4))
    ref, prev = [], None
    for t, u in enumerate(us):  # NumPy: d_0 = u_0, d_t = u_t + gamma (u_t - u_{t-1})
        ref.append(u if t == 0 else u + gamma * (u - prev))
        prev = u
    tx = delay_correction(gamma)
    with jax.enable_x64(True):
        s = tx.init(jnp.zeros(4))
        got = []
        for u in us:
            d, s = tx.update(jnp.asarray(u), s)
            got.append(np.asarray(d))
    np.testing.assert_allclose(np.stack(got), np.stack(ref), rtol=1e-13, atol=1e-14)
    # Telescoping: the applied displacement is sum(u) + gamma (u_T - u_0).
    np.testing.assert_allclose(np.sum(got, 0), us.sum(0) + gamma * (us[-1] - us[0]),
                               rtol=1e-12, atol=1e-12)


def test_correction_gamma_schedule_and_zero_is_identity():
    us = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    sched = lambda t: 0.25 * t
    tx, s, prev = delay_correction(sched), None, None
    s = tx.init(jnp.zeros(3))
    for t, u in enumerate(us):
        d, s = tx.update(jnp.asarray(u), s)
        want = u if t == 0 else u + sched(t) * (u - prev)
        np.testing.assert_allclose(d, want, rtol=1e-6)
        prev = u
    ident = delay_correction(0.0)
    s = ident.init(jnp.zeros(3))
    for u in us:
        d, s = ident.update(jnp.asarray(u), s)
        np.testing.assert_array_equal(d, u)


def test_sgd_correction_is_gradient_extrapolation():
    """one_step_delay(sgd) + correction: d_t = -eta ((1 + gamma) g_{t-1} - gamma g_{t-2})."""
    lr, gamma, T = 0.05, 1.0, 15
    xs = [X0.copy()]
    for t in range(T):
        g1 = _quad_grad(xs[max(t - 1, 0)])
        g2 = _quad_grad(xs[max(t - 2, 0)])
        d = -lr * g1 if t == 0 else -lr * ((1 + gamma) * g1 - gamma * g2)
        xs.append(xs[-1] + d)
    tx = optax.chain(one_step_delay(optax.sgd(lr)), delay_correction(gamma))
    np.testing.assert_allclose(_run(tx, T), np.stack(xs[1:]), rtol=1e-12)


# --------------------------------------------------------------------------- dtypes, edge cases


@pytest.mark.parametrize("make", [
    lambda: _delayed_adamw(1e-2, gamma=1.0),
    lambda: delayed_muon(2e-2),
    lambda: _delayed_adamw(1e-2, first_step="zero", gamma=1.0),
    lambda: delayed_adamw(1e-2, weight_decay=0.1),
])
def test_bf16_params_stay_bf16(make):
    p = {"w": jnp.ones((4, 3), jnp.bfloat16), "b": jnp.zeros(3, jnp.bfloat16)}
    loss = lambda q: jnp.sum((q["w"].astype(jnp.float32) - 0.3) ** 2) + jnp.sum(
        q["b"].astype(jnp.float32) ** 2)
    tx = make()
    s = tx.init(p)
    for _ in range(3):
        u, s = tx.update(jax.grad(loss)(p), s, p)
        p = optax.apply_updates(p, u)
    for leaf in jax.tree.leaves(u) + jax.tree.leaves(p):
        assert leaf.dtype == jnp.bfloat16
        assert np.all(np.isfinite(np.asarray(leaf, np.float32)))


def test_bf16_correction_computes_in_float32():
    u0 = jnp.asarray([1.0, 256.0], jnp.bfloat16)
    u1 = jnp.asarray([1.0078125, 257.0], jnp.bfloat16)
    tx = delay_correction(0.5)
    s = tx.init(jnp.zeros(2, jnp.bfloat16))
    _, s = tx.update(u0, s)
    d, s = tx.update(u1, s)
    want = (np.float32(u1.astype(jnp.float32)) * 1.5 - 0.5 * np.float32(u0.astype(jnp.float32)))
    np.testing.assert_array_equal(np.asarray(d), np.asarray(jnp.asarray(want).astype(
        jnp.bfloat16)))
    assert s.prev_updates.dtype == jnp.bfloat16 and d.dtype == jnp.bfloat16


@pytest.mark.parametrize("first_step", ["undelayed", "zero"])
def test_zero_gradients_at_init_are_finite(first_step):
    p = {"w": jnp.zeros((4, 4)), "b": jnp.zeros(4)}
    zero = jax.tree.map(jnp.zeros_like, p)
    for tx in (delayed_muon(1e-2, first_step=first_step),
               _delayed_adamw(1e-2, first_step=first_step, gamma=1.0),
               delayed_adamw(1e-2, first_step=first_step)):
        s = tx.init(p)
        for _ in range(3):
            u, s = tx.update(zero, s, p)
            assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(u))
            assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(s)
                       if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating))


def test_invalid_arguments_name_the_argument():
    for case in CONTRACT_CASES:
        for override, arg in case.invalid:
            with pytest.raises(ValueError, match=arg):
                case.make(**{**case.kwargs, **override})
    for bad in (float("inf"), "1", True, jnp.ones(2)):
        with pytest.raises(ValueError, match="gamma"):
            delay_correction(bad)
    with pytest.raises(ValueError, match="beta"):
        delayed_muon(1e-2, beta=lambda t: 0.9)  # optax.contrib.muon takes no beta schedule


def test_static_settings_are_keyword_only():
    with pytest.raises(TypeError):
        one_step_delay(optax.sgd(0.1), "zero")
    with pytest.raises(TypeError):  # optax.adamw's 6th positional argument is mu_dtype
        delayed_adamw(1e-3, 0.9, 0.999, 1e-8, 0.0, 1e-4)
    with pytest.raises(TypeError):
        delayed_muon(1e-2, 0.95, 1.0, "zero")


# --------------------------------------------------------------------------- shapes, inject

_SHAPE_CASES = {
    "one_step_delay": lambda: one_step_delay(optax.sgd(0.1, momentum=0.9)),
    "delay_correction": lambda: delay_correction(1.0),
    "delayed_muon": lambda: delayed_muon(2e-2),
    "delayed_adamw": lambda: delayed_adamw(1e-2),
}


@pytest.mark.parametrize("name", sorted(_SHAPE_CASES))
def test_mismatched_updates_raise_value_error_naming_the_leaf(name):
    """Updates whose leaf shape or tree structure differs from the params, or from the
    params the state was made for, raise a ValueError naming the leaf (trace time, also under
    jit) instead of a broadcasting error or a silent broadcast."""
    tx = _SHAPE_CASES[name]()
    params = {"w": jnp.ones((3, 2)), "b": jnp.full((3,), 0.5)}
    state = tx.init(params)
    good = jax.tree.map(jnp.ones_like, params)
    bad = {**good, "b": jnp.ones(4)}
    leaf = r"\['b'\]: shape \(4,\) vs \(3,\)"
    with pytest.raises(ValueError, match=r"updates and params disagree at leaf " + leaf):
        tx.update(bad, state, params)
    with pytest.raises(ValueError, match=leaf):
        jax.jit(tx.update)(bad, state, params)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**good, "extra": jnp.ones(2)}, state, params)
    assert "'extra'" in str(err.value)
    other = {**params, "b": jnp.ones(4)}
    with pytest.raises(ValueError, match=r"updates and state\.\w+ disagree at leaf " + leaf):
        tx.update(jax.tree.map(jnp.ones_like, other), state, other)


def test_inject_hyperparams_delayed_muon_default_ns_steps_needs_no_static_args():
    """optax.inject_hyperparams(delayed_muon) used to fail under jit on the int default of
    ns_steps. Left out, it needs no static_args (learning_rate, beta, gamma injected) and the
    run is the documented chain of optax.contrib.muon (ns_steps=5) under the delay and the
    correction; given, ns_steps goes in static_args, and without it the error says so."""
    params = {"w": jnp.asarray(np.arange(12.0).reshape(4, 3) / 10), "b": jnp.ones(3)}
    loss = lambda p: jnp.sum(jnp.cos(p["w"])) + jnp.sum((p["b"] - 2.0) ** 2)  # noqa: E731

    def run(tx, steps=3):
        upd = jax.jit(tx.update)
        p, s = params, tx.init(params)
        for _ in range(steps):
            u, s = upd(jax.grad(loss)(p), s, p)
            p = optax.apply_updates(p, u)
        return p, s

    ref, _ = run(optax.chain(one_step_delay(optax.contrib.muon(2e-2, ns_steps=5, beta=0.95)),
                             delay_correction(1.0)))
    got, s = run(optax.inject_hyperparams(delayed_muon)(2e-2))
    assert set(s.hyperparams) >= {"learning_rate", "beta", "gamma"}
    assert "ns_steps" not in s.hyperparams
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), got, ref)
    run(optax.inject_hyperparams(delayed_muon, static_args=("ns_steps",))(2e-2, ns_steps=3), 1)
    with pytest.raises(ValueError, match=r"ns_steps.*static_args=\('ns_steps',\)"):
        run(optax.inject_hyperparams(delayed_muon)(2e-2, ns_steps=3), 1)


# --------------------------------------------------------------------------- pipeline, theory


def test_pipeline_shard_simulate_and_wrapper_agree(experiment):
    """The 8-stage 2BW pipeline (ppermute forward/backward, weight stashing) equals
    one_step_delay(adam, first_step="zero"), as vmap-simulated stages and as shard_map."""
    key = jax.random.PRNGKey(3)
    assert experiment._pipeline(experiment.QUICK, key, shard=False) <= 1e-5
    if jax.local_device_count() < experiment.QUICK.pipe_stages:
        pytest.skip("needs 8 devices for the sharded pipeline")
    assert experiment._pipeline(experiment.QUICK, key, shard=True) <= 1e-5


def test_stability_eigenvalues_match_closed_form(experiment):
    """Eigenvalues of the linearized optax step (EMA momentum on x^2/2) vs the roots of the
    characteristic polynomials, derived by hand: sync z^2 - (1+b-a) z + b, delayed
    z^2 - (1+b) z + b + a, delayed + correction z^3 - (1+b) z^2 + (b + a(1+g)) z - a g, with
    a = eta (1 - b); extra state dimensions give zero eigenvalues."""
    etas = np.array([0.3, 0.9, 1.7, 5.0])
    betas = np.array([0.0, 0.5, 0.9, 0.95])
    polys = {
        "sync": lambda a, b: [1.0, -(1 + b - a), b],
        "delayed": lambda a, b: [1.0, -(1 + b), b + a],
        "corrected": lambda a, b: [1.0, -(1 + b), b + 2 * a, -a],
    }
    for mode, poly in polys.items():
        e, b = np.repeat(etas, len(betas)), np.tile(betas, len(etas))
        J = np.asarray(experiment._jacobian_program(mode)(jnp.asarray(e, jnp.float32),
                                                   jnp.asarray(b, jnp.float32)), np.float64)
        for Jk, ek, bk in zip(J, e, b, strict=True):
            got = np.linalg.eigvals(Jk)
            want = np.roots(poly(ek * (1 - bk), bk))
            want = np.concatenate([want, np.zeros(len(got) - len(want))])
            np.testing.assert_allclose(np.sort_complex(np.round(got, 5)),
                                       np.sort_complex(np.round(want, 5)), atol=2e-5)
    # and the measured boundaries (bisection on these radii) are the closed-form ones
    sync, _, _ = experiment.stability_boundary("sync", betas, 401)
    delayed, _, _ = experiment.stability_boundary("delayed", betas, 401)
    want_sync, want_delayed = experiment.stability_bounds(betas)
    np.testing.assert_allclose(sync, want_sync, rtol=1e-3)
    np.testing.assert_allclose(delayed, want_delayed, rtol=1e-3)


# --------------------------------------------------------------------------- experiment


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, PRNGKey(0): every claim passes. Deterministic given the key; the margins
    (and what they were at other keys) are in the claims' sources and the module docstring."""
    results = quick_results
    runner.check_quick_claims(experiment, results)
    summary = experiment.summarize(results)
    assert all(np.isfinite(v) for v in summary.values())
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"teacher_student", "least_squares", "stability"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (teacher_student, least_squares: each panel labels its y axis;
    stability) pass the readability check: titles, axis labels, legends that say what the
    shaded bands are, y-ranges fitted to the data, tick labels that do not overlap and no
    series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
