"""Tests of Multi-step SAM (jaxopt_icml.optim.multistep_sam) and its experiment."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.optim import multistep_sam, scale_by_multistep_sam
from jaxopt_icml.testing import TransformationCase


def _case_maker(k: int, warm: bool):
    """``make`` for the property matrix; every default is a bool or None so that
    ``optax.inject_hyperparams(make)`` injects only ``rho`` and ``learning_rate`` (an int
    ``inner_steps`` would become a traced array there and cannot fix the loop length)."""

    def make(rho=0.05, learning_rate=0.1, *, base_optimizer=None, inner_steps=None,
             inner_lr=None, warm_start=None, normalize=True, axis_name=None):
        base = optax.sgd(learning_rate) if base_optimizer is None else base_optimizer
        return multistep_sam(
            base, rho=rho, inner_steps=k if inner_steps is None else inner_steps,
            inner_lr=inner_lr, warm_start=warm if warm_start is None else warm_start,
            normalize=normalize, axis_name=axis_name)

    return make


_INVALID = (
    ({"rho": -0.1}, "rho"),
    ({"rho": float("nan")}, "rho"),
    ({"inner_steps": 0}, "inner_steps"),
    ({"inner_steps": 1.5}, "inner_steps"),
    ({"inner_steps": True}, "inner_steps"),
    ({"inner_lr": 0.0}, "inner_lr"),
    ({"base_optimizer": 3}, "base_optimizer"),
    ({"warm_start": "yes"}, "warm_start"),
    ({"normalize": 1}, "normalize"),
    ({"axis_name": ""}, "axis_name"),
)


def _grad_fn_from(loss_fn):
    return {"grad_fn": lambda p, i: jax.grad(loss_fn)(p)}


# lr_name="rho": the perturbation radius is the float hyperparameter the optax wrappers act on
# (injected by inject_hyperparams, or replaced by a schedule of the update count, which
# multistep_sam accepts directly). ``learning_rate`` of the base SGD is injectable as well.
CONTRACT_CASES = (
    TransformationCase(
        name="multistep_sam_k1_cold", make=_case_maker(1, False), kwargs={"rho": 0.05},
        invalid=_INVALID, extra_args=_grad_fn_from, needs_params=True, lr_name="rho"),
    TransformationCase(
        name="multistep_sam_k3_warm", make=_case_maker(3, True), kwargs={"rho": 0.05},
        invalid=_INVALID, extra_args=_grad_fn_from, needs_params=True, lr_name="rho"),
)


# --------------------------------------------------------------------------- helpers


def _loss(p):
    return (jnp.sum(jnp.exp(0.3 * p["a"])) + jnp.sum(jnp.sin(p["b"]["c"]) ** 2)
            + 0.5 * p["s"] ** 2 * jnp.sum(p["a"] ** 2))


def _params():
    return {"a": jnp.arange(3.0) / 3, "b": {"c": jnp.full((2, 2), 0.7)}, "s": jnp.asarray(1.5)}


def _grad_fn(p, i):
    del i
    return jax.grad(_loss)(p)


def _tree_norm(t):
    return float(np.sqrt(sum(np.sum(np.asarray(x, np.float64) ** 2) for x in jax.tree.leaves(t))))


A = np.array([1.5, 0.7])
C = np.array([0.3, -0.2])


def _np_grad(w):
    """Gradient of the spec's 2-D exp function, by hand."""
    u = A * (w - C)
    g = A * (np.exp(u) - 1.0)
    g = g + 0.5 * (w[0] - w[1]) * np.array([1.0, -1.0])
    return g


def _np_proj(d, rho):
    n = np.linalg.norm(d)
    return d if n <= rho else d * rho / n


def _np_msam(w, *, rho, K, lr, alpha, warm, normalize, steps):
    """NumPy: projected ascent on Delta, then SGD on grad l(w + Delta_K); returns the
    ``(w, Delta_K)`` after each step."""
    w, d_prev, out = np.array(w, np.float64), np.zeros(2), []
    for _ in range(steps):
        d = _np_proj(d_prev, rho) if warm else np.zeros(2)
        g = _np_grad(w + d)
        for _ in range(K):
            step = alpha * g / max(np.linalg.norm(g), 1e-12) if normalize else alpha * g
            d = _np_proj(d + step, rho)
            g = _np_grad(w + d)
        w = w - lr * g
        d_prev = d
        out.append((w.copy(), d.copy()))
    return out


def _loss_2d(p):
    """The loss whose gradient is ``_np_grad``."""
    a, c = jnp.asarray(A), jnp.asarray(C)
    u = a * (p - c)
    return jnp.sum(jnp.exp(u) - u) + 0.25 * (p[0] - p[1]) ** 2


# --------------------------------------------------------------------------- SAM special case


def test_k1_cold_equals_optax_sam_bitwise():
    """K=1, no warm start, alpha=rho is SAM: equal to optax.contrib.sam at every step."""
    rho = 0.05
    ours = multistep_sam(optax.sgd(0.1, momentum=0.9), rho=rho, inner_steps=1, warm_start=False)
    ref = optax.contrib.sam(optax.sgd(0.1, momentum=0.9),
                            optax.chain(optax.contrib.normalize(), optax.sgd(rho)),
                            sync_period=2, opaque_mode=True)

    # Bitwise equality of two differently written programs depends on XLA's fusion decisions:
    # compiled with XLA:CPU's default emitters, as users run it (tests/conftest.py selects the
    # classic emitters for compile speed; with those, one float32 entry differs by 1 ulp).
    options = {"xla_cpu_use_fusion_emitters": True} if jax.default_backend() == "cpu" else {}

    def steps(tx):
        upd = jax.jit(lambda g, s, p: tx.update(g, s, p, grad_fn=_grad_fn),
                      compiler_options=options)
        p, s, out = _params(), tx.init(_params()), []
        for _ in range(6):
            u, s = upd(jax.grad(_loss)(p), s, p)
            p = optax.apply_updates(p, u)
            out.append(p)
        return out

    for a, b in zip(steps(ours), steps(ref), strict=True):
        jax.tree.map(np.testing.assert_array_equal, a, b)


# --------------------------------------------------------------------------- NumPy reference


@pytest.mark.parametrize("warm,normalize,inner_lr", [(True, True, 0.7), (False, True, None),
                                                     (True, False, 0.3)])
def test_matches_numpy_rederivation_float64(warm, normalize, inner_lr):
    rho, K, lr = 0.8, 4, 0.15
    alpha = rho if inner_lr is None else inner_lr
    ref = _np_msam([0.4, -0.9], rho=rho, K=K, lr=lr, alpha=alpha, warm=warm,
                   normalize=normalize, steps=5)
    loss = _loss_2d

    with jax.enable_x64(True):
        tx = multistep_sam(optax.sgd(lr), rho=rho, inner_steps=K, inner_lr=inner_lr,
                           warm_start=warm, normalize=normalize)
        upd = jax.jit(lambda g, s, p: tx.update(g, s, p, grad_fn=lambda q, i: jax.grad(loss)(q)))
        p = jnp.asarray([0.4, -0.9], jnp.float64)
        s = tx.init(p)
        for w_ref, d_ref in ref:
            u, s = upd(jax.grad(loss)(p), s, p)
            p = optax.apply_updates(p, u)
            assert p.dtype == jnp.float64
            np.testing.assert_allclose(np.asarray(p), w_ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(np.asarray(s.delta), d_ref, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- the ball


def test_delta_stays_in_ball_unlike_optax_unprojected():
    rho, K = 0.3, 5
    p0 = _params()
    dists = []

    def recording_grad_fn(p, i):
        dist = jnp.sqrt(sum(jnp.sum((a - b) ** 2) for a, b in
                            zip(jax.tree.leaves(p), jax.tree.leaves(p0), strict=True)))
        jax.debug.callback(lambda x: dists.append(float(x)), dist)
        return jax.grad(_loss)(p)

    tx = scale_by_multistep_sam(rho=rho, inner_steps=K, warm_start=True)
    s = tx.init(p0)
    for _ in range(3):  # params fixed: the warm start keeps pushing on the boundary
        _, s = tx.update(jax.grad(_loss)(p0), s, p0, grad_fn=recording_grad_fn)
        assert _tree_norm(s.delta) <= rho * (1 + 1e-6)
    jax.effects_barrier()
    assert len(dists) == K + 2 * (K + 1)
    assert max(dists) <= rho * (1 + 1e-6)

    # optax's sync_period=K+1 accumulates K normalized steps without projecting.
    ref = optax.contrib.sam(optax.identity(), optax.chain(optax.contrib.normalize(),
                                                          optax.sgd(rho)),
                            sync_period=K + 1, opaque_mode=True)
    dists.clear()
    ref.update(jax.grad(_loss)(p0), ref.init(p0), p0, grad_fn=recording_grad_fn)
    jax.effects_barrier()
    assert max(dists) > 2 * rho


def test_global_norm_spans_all_leaves():
    """One ascent step from 0 is rho * g / ||g||_global, not a per-leaf normalization."""
    rho = 0.1
    p = {"big": jnp.array([3.0, -1.0]), "small": jnp.array([0.01])}
    loss = lambda q: 2.0 * jnp.sum(q["big"] ** 2) + jnp.sum(q["small"] ** 2)
    g = jax.grad(loss)(p)
    tx = scale_by_multistep_sam(rho=rho, inner_steps=1, warm_start=False)
    _, s = tx.update(g, tx.init(p), p, grad_fn=lambda q, i: jax.grad(loss)(q))
    gn = _tree_norm(g)
    for k in p:
        np.testing.assert_allclose(s.delta[k], rho * np.asarray(g[k]) / gn, rtol=1e-6)
    assert _tree_norm(s.delta["small"]) < 0.01 * rho
    np.testing.assert_allclose(_tree_norm(s.delta), rho, rtol=1e-6)


def test_pmean_over_axis_name_equals_full_batch():
    """With axis_name, each worker's gradients are averaged before any norm is taken."""
    data = jnp.array([[1.0, 2.0], [-0.5, 0.3], [2.0, -1.0], [0.1, 0.4]])
    loss = lambda p, x: jnp.mean(jnp.exp(x @ p) - x @ p)
    p = jnp.array([0.2, -0.1])

    def worker(x):
        tx = multistep_sam(optax.sgd(0.1), rho=0.5, inner_steps=3, warm_start=False,
                           axis_name="w")
        g = jax.grad(loss)(p, x)
        u, _ = tx.update(g, tx.init(p), p, grad_fn=lambda q, i: jax.grad(loss)(q, x))
        return u

    per_worker = jax.vmap(worker, axis_name="w")(data.reshape(2, 2, 2))
    tx = multistep_sam(optax.sgd(0.1), rho=0.5, inner_steps=3, warm_start=False)
    full, _ = tx.update(jax.grad(loss)(p, data), tx.init(p), p,
                        grad_fn=lambda q, i: jax.grad(loss)(q, data))
    np.testing.assert_allclose(per_worker[0], full, rtol=1e-5)
    np.testing.assert_allclose(per_worker[1], full, rtol=1e-5)


# --------------------------------------------------------------------------- gradient calls


@pytest.mark.parametrize("warm", [False, True])
def test_grad_fn_calls_counted_at_runtime(warm):
    K = 3
    calls = []

    def counting_grad_fn(p, i):
        jax.debug.callback(lambda j: calls.append(int(j)), i)
        return jax.grad(_loss)(p)

    tx = multistep_sam(optax.sgd(0.1), rho=0.1, inner_steps=K, warm_start=warm)
    upd = jax.jit(lambda g, s, p: tx.update(g, s, p, grad_fn=counting_grad_fn))
    p, s = _params(), tx.init(_params())
    per_update = []
    for _ in range(3):
        calls.clear()
        u, s = upd(jax.grad(_loss)(p), s, p)
        p = optax.apply_updates(p, u)
        jax.block_until_ready(p)
        jax.effects_barrier()
        per_update.append(sorted(calls))
    if warm:  # Delta_0 = 0 on the first update: the given gradient is reused
        assert per_update == [[1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]
    else:
        assert per_update == [[0, 1, 2]] * 3


# --------------------------------------------------------------------------- dtypes, edge cases


def test_bf16_params_keep_dtype_delta_float32():
    p = jax.tree.map(lambda x: x.astype(jnp.bfloat16), _params())
    tx = multistep_sam(optax.sgd(0.1), rho=0.1, inner_steps=2)
    s = tx.init(p)
    gf = lambda q, i: jax.grad(_loss)(q)
    for _ in range(2):
        u, s = tx.update(jax.grad(_loss)(p), s, p, grad_fn=gf)
        p = optax.apply_updates(p, u)
    assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves(u) + jax.tree.leaves(p))
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(s.delta))
    assert s.count.dtype == jnp.int32


def test_zero_gradient_is_finite():
    p = {"w": jnp.zeros(3)}
    tx = multistep_sam(optax.sgd(0.1), rho=0.1, inner_steps=3)
    zero = lambda q, i: jax.tree.map(jnp.zeros_like, q)
    s = tx.init(p)
    for _ in range(2):
        u, s = tx.update(zero(p, 0), s, p, grad_fn=zero)
    assert np.all(np.isfinite(u["w"])) and np.all(np.asarray(s.delta["w"]) == 0)


def test_invalid_arguments_name_the_argument():
    for case in CONTRACT_CASES:
        for override, arg in case.invalid:
            with pytest.raises(ValueError, match=arg):
                case.make(**{**case.kwargs, **override})
    for eps in (0.0, -1.0, float("inf"), lambda t: 1e-3):
        with pytest.raises(ValueError, match="eps"):
            scale_by_multistep_sam(0.1, eps=eps)


def test_static_settings_are_keyword_only():
    """CONTRIBUTING.md section 1: only base_optimizer and rho may be positional."""
    multistep_sam(optax.sgd(0.1), 0.05, inner_steps=2)
    scale_by_multistep_sam(0.05, inner_steps=2)
    with pytest.raises(TypeError):
        multistep_sam(optax.sgd(0.1), 0.05, 3)
    with pytest.raises(TypeError):
        scale_by_multistep_sam(0.05, 3)


@pytest.mark.parametrize("warm", [False, True])
def test_transforms_before_it_in_a_chain_have_no_effect(warm):
    """The output is grad_fn at theta + Delta_K, and a rescaled first direction cancels in the
    normalization: clipping before multistep_sam changes nothing (up to rounding)."""
    tx = multistep_sam(optax.sgd(0.1), rho=0.3, inner_steps=2, warm_start=warm)
    clipped = optax.chain(optax.clip_by_global_norm(1e-3), tx)
    p_a = p_b = _params()
    s_a, s_b = tx.init(p_a), clipped.init(p_b)
    for _ in range(3):
        u_a, s_a = tx.update(jax.grad(_loss)(p_a), s_a, p_a, grad_fn=_grad_fn)
        u_b, s_b = clipped.update(jax.grad(_loss)(p_b), s_b, p_b, grad_fn=_grad_fn)
        p_a, p_b = optax.apply_updates(p_a, u_a), optax.apply_updates(p_b, u_b)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7), p_a, p_b)


# --------------------------------------------------------------------------- shapes, inject


def _ones_grad_fn(p, i):
    del i
    return jax.tree.map(jnp.ones_like, p)


@pytest.mark.parametrize("make", [lambda: multistep_sam(optax.sgd(0.1), rho=0.1),
                                  lambda: scale_by_multistep_sam(0.1)],
                         ids=["multistep_sam", "scale_by_multistep_sam"])
def test_mismatched_updates_raise_value_error_naming_the_leaf(make):
    """Reported: (4,) updates for (3,) params failed inside lax.cond ("cond branches must have
    equal output types"). Now a ValueError names the leaf, at trace time (also under jit)."""
    tx = make()
    params = {"w": jnp.ones(3), "b": {"c": jnp.zeros((2, 2))}}
    state = tx.init(params)
    good = jax.tree.map(jnp.ones_like, params)
    update = functools.partial(tx.update, grad_fn=_ones_grad_fn)
    with pytest.raises(ValueError, match=r"updates and params disagree at leaf \['w'\]: "
                                         r"shape \(4,\) vs \(3,\)"):
        update({**good, "w": jnp.ones(4)}, state, params)
    with pytest.raises(ValueError, match=r"\['b'\]\['c'\]: shape \(2, 3\) vs \(2, 2\)"):
        jax.jit(update)({**good, "b": {"c": jnp.ones((2, 3))}}, state, params)
    with pytest.raises(ValueError, match="different tree structures") as err:
        update({**good, "extra": jnp.ones(1)}, state, params)
    assert "'extra'" in str(err.value)
    # params and updates agree, but the state was made for other params
    other = {**params, "w": jnp.ones(4)}
    with pytest.raises(ValueError, match=r"updates and state.delta disagree at leaf \['w'\]"):
        update(jax.tree.map(jnp.ones_like, other), state, other)


def test_inject_hyperparams_default_inner_steps_needs_no_static_args():
    """Reported: optax.inject_hyperparams(multistep_sam) always needed
    static_args=("inner_steps",). With inner_steps left out it works as is (rho injected);
    given, it needs the documented static_args, and without them the error says so. Both runs
    follow the NumPy re-derivation (default K = 3, warm start, alpha = rho)."""
    rho, lr, w0 = 0.8, 0.15, [0.4, -0.9]
    grad_fn = lambda q, i: jax.grad(_loss_2d)(q)  # noqa: E731

    def run(tx, steps=3):
        upd = jax.jit(lambda g, s, p: tx.update(g, s, p, grad_fn=grad_fn))
        p = jnp.asarray(w0, jnp.float64)
        s = tx.init(p)
        out = []
        for _ in range(steps):
            u, s = upd(jax.grad(_loss_2d)(p), s, p)
            p = optax.apply_updates(p, u)
            out.append(np.asarray(p))
        return out, s

    with jax.enable_x64(True):
        got, state = run(optax.inject_hyperparams(multistep_sam)(optax.sgd(lr), rho=rho))
        assert set(state.hyperparams) == {"rho", "eps"}
        ref = _np_msam(w0, rho=rho, K=3, lr=lr, alpha=rho, warm=True, normalize=True, steps=3)
        for p, (w_ref, _) in zip(got, ref, strict=True):
            np.testing.assert_allclose(p, w_ref, rtol=1e-12, atol=1e-12)

        recipe = optax.inject_hyperparams(multistep_sam, static_args=("inner_steps",))
        got, _ = run(recipe(optax.sgd(lr), rho=rho, inner_steps=2))
        ref = _np_msam(w0, rho=rho, K=2, lr=lr, alpha=rho, warm=True, normalize=True, steps=3)
        for p, (w_ref, _) in zip(got, ref, strict=True):
            np.testing.assert_allclose(p, w_ref, rtol=1e-12, atol=1e-12)

        bad = optax.inject_hyperparams(multistep_sam)(optax.sgd(lr), rho=rho, inner_steps=2)
        with pytest.raises(ValueError, match=r"inner_steps.*static_args=\('inner_steps',\)"):
            run(bad, steps=1)


# --------------------------------------------------------------------------- experiment


@pytest.mark.claims
def test_claims_quick(experiment):
    """QUICK config, fixed key: every claim passes (deterministic: no false-failure rate beyond
    the seeds being fixed; margins are in the claims' sources). The classifier carries no claim
    and is skipped here (the resume tests and the notebook run it)."""
    results = experiment.run(experiment.QUICK, jax.random.PRNGKey(0), classifier=False)
    runner.check_quick_claims(experiment, results)
    # Equal compute: K=10 gets exactly its equal-step schedule, so the last budget reproduces
    # its equal-step gap; cheaper methods run proportionally more steps.
    budgets, eq = results["equal_compute_budgets"], results["equal_compute_gap"]
    assert budgets[-1] == experiment.grad_budget(experiment.QUICK) == experiment.QUICK.steps * 11
    for name in (experiment._k_name(10), experiment._k_name(10, True)):
        np.testing.assert_allclose(eq[name][:, -1], results["minimax_gap"][name], rtol=1e-3)
    summary = experiment.summarize(results)
    for tag in ("warm", "cold"):
        assert np.isfinite(summary[f"equal_compute_gap_ratio_K10_K1_{tag}"])
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"minimax", "equal_compute", "inner_shortfall"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (minimax, equal_compute, inner_shortfall and classifier) pass the
    readability check: titles, axis labels, legends that say what the shaded bands are, y-ranges
    fitted to the data, tick labels that do not overlap and no series hidden under another drawn in
    the same style (K=1 with cold starts is SAM, so their trajectories coincide; on the classifier
    K=3 and SAM nearly agree)."""
    runner.check_quick_figures(experiment, quick_results)


def _classifier_run(exp, cfg, name):
    """``train(**kwargs)``: :func:`train_classifier` of method ``name`` on a two-moons set, and
    the seed keys and transformation it uses."""
    x, y = exp.two_moons(jax.random.PRNGKey(0), cfg.clf_train, cfg.clf_noise)
    prob = {"clf_train_x": x, "clf_train_y": y}
    keys = jax.random.split(jax.random.PRNGKey(1), cfg.seeds)
    tx = exp.make_classifier_methods(cfg)[name]
    train = functools.partial(exp.train_classifier, cfg, prob, exp.classifier_init(cfg, keys),
                              keys, name, tx)
    return train, keys, tx


def test_classifier_resume_is_bitwise(experiment, tmp_path):
    cfg = dataclasses.replace(experiment.QUICK, seeds=2, clf_steps=150, ckpt_every=50)
    name = "Multi-step SAM K=3"
    train, keys, tx = _classifier_run(experiment, cfg, name)
    straight = train()
    saved = train(out_dir=tmp_path)
    # Simulate a crash after step 100 (chunk 2 of 3): drop the last checkpoint, then resume.
    ckdir = runner.checkpoint_dir(tmp_path, name)
    assert ckdir.endswith("Multi_step_SAM_K_3")
    shutil.rmtree(os.path.join(ckdir, "3"))
    resumed = train(out_dir=tmp_path, resume=True)
    for other in (saved, resumed):
        assert jax.tree.structure(other) == jax.tree.structure(straight)
        jax.tree.map(np.testing.assert_array_equal, straight, other)
    # Equal configs give the same transformations, hence the cached compiled programs.
    assert experiment.make_classifier_methods(cfg)[name] is tx

    # Resuming with another config or key fails clearly, naming what differs.
    with pytest.raises(ValueError, match=r"clf_steps: 150 -> 300.*seeds: 2 -> 4"):
        runner.check_checkpoint_config(tmp_path, dataclasses.replace(cfg, seeds=4, clf_steps=300),
                                       keys, resume=True)
    with pytest.raises(ValueError, match="seed_keys"):
        runner.check_checkpoint_config(tmp_path, cfg, jax.random.split(jax.random.PRNGKey(2), 2),
                                       resume=True)
    # A fresh (non-resume) run drops the method's old checkpoints (here a stale later chunk that
    # a resume would otherwise pick up) and rewrites the record.
    shutil.copytree(os.path.join(ckdir, "3"), os.path.join(ckdir, "18"))
    runner.check_checkpoint_config(tmp_path, dataclasses.replace(cfg, clf_lr=0.1), keys,
                                   resume=False)
    train(out_dir=tmp_path)
    assert sorted(os.listdir(ckdir)) == ["2", "3"]
    runner.check_checkpoint_config(tmp_path, cfg, keys, resume=True)


def test_classifier_sharded_resume_matches_vmapped(experiment, tmp_path):
    """shard=True (seeds over the 8 simulated devices via mesh.shard_seeds) == plain vmap, also
    across a resume, whose restored state keeps the seed sharding."""
    n = jax.local_device_count()
    if n < 2:
        pytest.skip("needs several devices")
    cfg = dataclasses.replace(experiment.QUICK, seeds=n, clf_steps=20, ckpt_every=10, clf_batch=8)
    name = "Multi-step SAM K=1"
    train, _, _ = _classifier_run(experiment, cfg, name)
    plain = train()
    train(shard=True, out_dir=tmp_path)
    shutil.rmtree(os.path.join(runner.checkpoint_dir(tmp_path, name), "2"))
    resumed = train(shard=True, out_dir=tmp_path, resume=True)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 plain, resumed)
