"""GOMA and the minimax baselines: contract cases, NumPy re-derivations, special cases, call
counts, and the paper's claims at quick size."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml import base, problems, theory
from jaxopt_icml import minimax as mm
from jaxopt_icml.testing import AlgorithmCase, TransformationCase


def _field_extra(loss_fn):
    grad = jax.grad(loss_fn)
    return {"field_fn": lambda z, i=0: grad(z)}


_bilinear_f32 = jax.jit(lambda key: problems.bilinear_game(key, 2))


def _noisy_game(key, dtype):
    """``problem(key, dtype) -> (x0, oracle)`` for the algorithm cases: a 2x2 bilinear game
    (built in float32, cast to ``dtype``) with multiplicative and additive noise."""
    game = jax.tree.map(lambda a: a.astype(dtype), _bilinear_f32(key))
    oracle = problems.NoisyOperator(game, jnp.asarray(0.3, dtype), jnp.asarray(0.1, dtype))
    return jnp.ones((4,), dtype), oracle


_STEP_INVALID = (({"step_size": -0.1}, "step_size"), ({"step_size": 0.0}, "step_size"))
_ANCHOR_INVALID = (({"anchor_offset": 0}, "anchor_offset"),)

CONTRACT_CASES = (
    TransformationCase(
        "goma", mm.goma, {"step_size": 0.1, "extrapolation": 0.12},
        invalid=_STEP_INVALID + _ANCHOR_INVALID + (
            ({"extrapolation": -0.1}, "extrapolation"), ({"anchor": "bogus"}, "anchor"),
            ({"damp_correction": 1}, "damp_correction")),
        lr_name="step_size"),
    TransformationCase(
        "goma_stochastic", mm.goma_stochastic, {"step_size0": 0.1, "decay": 0.5},
        invalid=(({"step_size0": -0.1}, "step_size0"), ({"decay": 1.5}, "decay"),
                 ({"extrapolation_ratio": -1.0}, "extrapolation_ratio"),
                 ({"decay": 0.5, "extrapolation_decay": 0.7}, "extrapolation_decay")),
        lr_name="step_size0"),
    TransformationCase(
        "extragradient", mm.extragradient, {"step_size": 0.1},
        invalid=_STEP_INVALID + (({"extrapolation": -1.0}, "extrapolation"),),
        extra_args=_field_extra, lr_name="step_size"),
    TransformationCase("ogda", mm.ogda, {"step_size": 0.1}, invalid=_STEP_INVALID,
                       lr_name="step_size"),
    TransformationCase("popov", mm.popov, {"step_size": 0.1}, invalid=_STEP_INVALID,
                       lr_name="step_size"),
    TransformationCase("eag_c", mm.eag_c, {"step_size": 0.1},
                       invalid=_STEP_INVALID + _ANCHOR_INVALID, extra_args=_field_extra,
                       lr_name="step_size"),
    TransformationCase("feg", mm.feg, {"step_size": 0.5},
                       invalid=_STEP_INVALID + _ANCHOR_INVALID, extra_args=_field_extra,
                       lr_name="step_size"),
    TransformationCase("anchored_popov", mm.anchored_popov, {"step_size": 0.1},
                       invalid=_STEP_INVALID + _ANCHOR_INVALID, lr_name="step_size"),
    TransformationCase(
        "dseg", mm.dseg, {"step_size": 0.1, "extrapolation": 0.2},
        invalid=_STEP_INVALID + (({"decay": -0.5}, "decay"),
                                 ({"extrapolation_decay": 0.9}, "extrapolation_decay"),
                                 ({"step_size": 0.3, "extrapolation": 0.1}, "extrapolation")),
        extra_args=_field_extra, lr_name="step_size"),
    TransformationCase("sgda", mm.sgda, {"step_size": 0.1},
                       invalid=_STEP_INVALID + (({"decay": 2.0}, "decay"),),
                       lr_name="step_size"),
    # The same transformations driven by an oracle (base.from_transformation) on a noisy game:
    # the algorithm checks (jit, info, vmap over seeds, sharding, key reuse, dtypes, bf16,
    # checkpoint, invalid hyperparameters) over the path the experiments use.
    AlgorithmCase(
        "goma_stochastic_alg", lambda **kw: base.from_transformation(mm.goma_stochastic(**kw)),
        {"step_size0": 0.2, "decay": 0.5, "extrapolation_ratio": 1.5,
         "extrapolation_decay": 0.25},
        _noisy_game, stochastic=True,
        invalid=(({"step_size0": 0.0}, "step_size0"), ({"decay": -0.1}, "decay"),
                 ({"extrapolation_ratio": -1.0}, "extrapolation_ratio"),
                 ({"extrapolation_decay": 0.75}, "extrapolation_decay"),
                 ({"anchor_offset": 0}, "anchor_offset"))),
    AlgorithmCase(
        "extragradient_alg", lambda **kw: base.from_transformation(mm.extragradient(**kw)),
        {"step_size": 0.2, "extrapolation": 0.3}, _noisy_game, stochastic=True,
        invalid=(({"step_size": -0.2}, "step_size"), ({"extrapolation": 0.0}, "extrapolation"))),
    AlgorithmCase(
        "dseg_alg", lambda **kw: base.from_transformation(mm.dseg(**kw)),
        {"step_size": 0.1, "extrapolation": 0.3, "decay": 0.6, "extrapolation_decay": 0.3},
        _noisy_game, stochastic=True,
        invalid=(({"step_size": 0.0}, "step_size"), ({"decay": 1.5}, "decay"),
                 ({"extrapolation_decay": 0.7}, "extrapolation_decay"),
                 ({"extrapolation": 0.05}, "extrapolation"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


def _problem(d=6, seed=0):
    return problems.monotone_linear(jax.random.PRNGKey(seed), d, dtype=jnp.float64)


def _iterates(tx, op, z0, k):
    """``z_1 .. z_k`` from base.run (deterministic oracle)."""
    _, xs = base.run(tx, z0, op, jax.random.PRNGKey(0), k, trace_fn=lambda s, st, o: s.x)
    return np.asarray(xs)


# --------------------------------------------------------------------------- NumPy references


def np_goma(M, c, z0, k, gamma, eta, offset=2, damp=True, anchored=True):
    """``gamma``, ``eta``: floats or functions of the iteration index ``i`` (decaying steps)."""
    F = lambda z: M @ z + c
    step = lambda v, i: v(i) if callable(v) else v
    z, gp, out = z0.copy(), np.zeros_like(z0), []
    for i in range(k):
        g = F(z)
        b = 1.0 / (i + offset) if anchored else 0.0
        cf = (1 - b) if damp else 1.0
        z = b * z0 + (1 - b) * z - step(gamma, i) * g - cf * step(eta, i) * (g - gp)
        gp = g
        out.append(z)
    return np.array(out)


def np_dseg(M, c, z0, k, gamma0, eta0, r_gamma, r_eta):
    """z_{k+1/2} = z_k - eta0/(k+1)^r_eta F(z_k);
    z_{k+1} = z_k - gamma0/(k+1)^r_gamma F(z_{k+1/2})."""
    F = lambda z: M @ z + c
    z, out = z0.copy(), []
    for i in range(k):
        half = z - eta0 / (i + 1) ** r_eta * F(z)
        z = z - gamma0 / (i + 1) ** r_gamma * F(half)
        out.append(z)
    return np.array(out)


def np_sgda(M, c, z0, k, gamma0, decay):
    F = lambda z: M @ z + c
    z, out = z0.copy(), []
    for i in range(k):
        z = z - gamma0 / (i + 1) ** decay * F(z)
        out.append(z)
    return np.array(out)


def np_eg(M, c, z0, k, gamma):
    F = lambda z: M @ z + c
    z, out = z0.copy(), []
    for _ in range(k):
        z = z - gamma * F(z - gamma * F(z))
        out.append(z)
    return np.array(out)


def np_eag(M, c, z0, k, a, fast):
    F = lambda z: M @ z + c
    z, out = z0.copy(), []
    for i in range(k):
        b = 1.0 / (i + 1) if fast else 1.0 / (i + 2)
        half = z + b * (z0 - z) - ((1 - b) * a if fast else a) * F(z)
        z = z + b * (z0 - z) - a * F(half)
        out.append(z)
    return np.array(out)


def np_anchored_popov(M, c, z0, k, gamma):
    """Two sequences, as in Tran-Dinh & Luo: returns the evaluation points y_1..y_k."""
    F = lambda z: M @ z + c
    w, y, out = z0.copy(), z0.copy(), []
    for i in range(k):
        g = F(y)
        w = z0 / (i + 2) + (1 - 1 / (i + 2)) * w - gamma * g
        y = z0 / (i + 3) + (1 - 1 / (i + 3)) * w - gamma * g
        out.append(y)
    return np.array(out)


def np_popov(M, c, z0, k, gamma):
    F = lambda z: M @ z + c
    w, y, out = z0.copy(), z0.copy(), []
    for _ in range(k):
        g = F(y)
        w = w - gamma * g
        y = w - gamma * g
        out.append(y)
    return np.array(out)


K = 25


@pytest.mark.parametrize("gamma,eta,damp", [(0.3, 0.3, True), (0.25, 0.4, True),
                                            (0.3, 0.3, False), (0.3, 0.0, True)])
def test_goma_matches_numpy(gamma, eta, damp):
    op = _problem()
    z0 = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (6,), jnp.float64))
    M, c = np.asarray(op.M), np.asarray(op.c)
    got = _iterates(mm.goma(gamma, eta, damp_correction=damp), op, jnp.asarray(z0), K)
    np.testing.assert_allclose(got, np_goma(M, c, z0, K, gamma, eta, damp=damp), rtol=1e-12,
                               atol=1e-12)


def test_baselines_match_numpy():
    op = _problem(seed=1)
    z0 = np.asarray(jax.random.normal(jax.random.PRNGKey(4), (6,), jnp.float64))
    M, c, z0j = np.asarray(op.M), np.asarray(op.c), jnp.asarray(z0)
    cases = [
        (mm.extragradient(0.4), np_eg(M, c, z0, K, 0.4)),
        (mm.eag_c(0.125), np_eag(M, c, z0, K, 0.125, fast=False)),
        (mm.feg(0.5), np_eag(M, c, z0, K, 0.5, fast=True)),
        (mm.anchored_popov(0.3), np_anchored_popov(M, c, z0, K, 0.3)),
        (mm.popov(0.3), np_popov(M, c, z0, K, 0.3)),
    ]
    for tx, ref in cases:
        np.testing.assert_allclose(_iterates(tx, op, z0j, K), ref, rtol=1e-12, atol=1e-12)


def test_decaying_step_variants_match_numpy():
    """goma_stochastic with two decay rates, DSEG and SGDA with a decaying step, run through
    base.run on a deterministic linear field, against loops written from the update rules."""
    op = _problem(seed=3)
    z0 = np.asarray(jax.random.normal(jax.random.PRNGKey(6), (6,), jnp.float64))
    M, c, z0j, k = np.asarray(op.M), np.asarray(op.c), jnp.asarray(z0), 12
    g0, rho = 0.3, 1.5
    cases = [
        (mm.goma_stochastic(g0, decay=0.5, extrapolation_ratio=rho, extrapolation_decay=0.25),
         np_goma(M, c, z0, k, lambda i: g0 / (i + 1) ** 0.5,
                 lambda i: rho * g0 / (i + 1) ** 0.25)),
        (mm.dseg(0.2, extrapolation=0.5, decay=2 / 3, extrapolation_decay=1 / 3),
         np_dseg(M, c, z0, k, 0.2, 0.5, 2 / 3, 1 / 3)),
        (mm.sgda(0.3, decay=0.5), np_sgda(M, c, z0, k, 0.3, 0.5)),
    ]
    for tx, ref in cases:
        np.testing.assert_allclose(_iterates(tx, op, z0j, k), ref, rtol=1e-12, atol=1e-12)


def test_special_cases_of_the_family():
    """eta = gamma is anchored Popov (offset + 1); no anchor is OGDA = Popov; eta = 0 is the
    anchored forward (Halpern-GDA) step."""
    op = _problem(seed=2)
    z0 = jax.random.normal(jax.random.PRNGKey(5), (6,), jnp.float64)
    M, c = np.asarray(op.M), np.asarray(op.c)
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    close(_iterates(mm.goma(0.3, anchor_offset=3), op, z0, K),
          _iterates(mm.anchored_popov(0.3), op, z0, K))
    ogda_path = _iterates(mm.ogda(0.2), op, z0, K)
    close(_iterates(mm.goma(0.2, anchor="none"), op, z0, K), ogda_path)
    close(_iterates(mm.popov(0.2), op, z0, K), ogda_path)
    # eta = 0: z_{k+1} = b_k z_0 + (1 - b_k) z_k - gamma F(z_k)
    z, ref = np.asarray(z0), []
    for i in range(K):
        b = 1 / (i + 2)
        z = b * np.asarray(z0) + (1 - b) * z - 0.3 * (M @ z + c)
        ref.append(z)
    close(_iterates(mm.goma(0.3, 0.0), op, z0, K), np.array(ref))
    # decay = 0 makes the stochastic variant the deterministic one
    close(_iterates(mm.goma_stochastic(0.3, decay=0.0, extrapolation_ratio=1.5), op, z0, K),
          _iterates(mm.goma(0.3, 0.45), op, z0, K))


@pytest.mark.parametrize("name,make,per_iter", [
    ("goma", lambda: mm.goma(0.3), 1),
    ("goma_stochastic", lambda: mm.goma_stochastic(0.3), 1),
    ("anchored_popov", lambda: mm.anchored_popov(0.3), 1),
    ("ogda", lambda: mm.ogda(0.2), 1),
    ("extragradient", lambda: mm.extragradient(0.3), 2),
    ("feg", lambda: mm.feg(0.5), 2),
])
def test_oracle_calls_runtime_counter(name, make, per_iter):
    """problems.CountingOperator counts evaluations at run time (the experiment's claim uses
    the same class); two-call methods show 2 per iteration, so a hidden call would be caught."""
    op = problems.CountingOperator.wrap(_problem())
    steps = 17
    _, trace = base.run(make(), jnp.ones(6), op, jax.random.PRNGKey(0), steps)
    jax.block_until_ready(trace)
    assert int(op.calls()) == per_iter * steps, name
    assert int(np.sum(trace["oracle_calls"])) == per_iter * steps


def test_counting_operator_counts_per_seed_and_forwards():
    ops = jax.tree.map(lambda a: jnp.stack([a, a, a]), _problem())
    op = problems.CountingOperator.wrap(ops, jnp.arange(3))
    base.run_seeds(mm.extragradient(0.3), jnp.ones(6), op,
                   base.split_keys(jax.random.PRNGKey(0), 3), 5, batch_oracle=True)
    np.testing.assert_array_equal(op.calls(), [10, 10, 10])
    single = problems.CountingOperator.wrap(_problem())
    jax.jit(lambda o, z: o.operator(o.operator(z)))(single, jnp.ones(6))
    assert int(single.calls()) == 2
    single.reset()
    assert int(single.calls()) == 0
    np.testing.assert_allclose(single.residual_sq(jnp.ones(6)), _problem().residual_sq(jnp.ones(6)))


def test_two_call_methods_need_field_fn_and_anchor_per_seed():
    z = jnp.ones(3)
    for tx in (mm.extragradient(0.1), mm.eag_c(0.1), mm.feg(0.5), mm.dseg(0.1)):
        with pytest.raises(ValueError, match="field_fn"):
            tx.update(z, tx.init(z), z)
    with pytest.raises(ValueError, match="params"):
        mm.goma(0.1).update(z, mm.goma(0.1).init(z))
    # each seed keeps its own anchor under vmap
    op = _problem()
    x0 = jax.random.normal(jax.random.PRNGKey(0), (4, 6), jnp.float64)
    state, _ = base.run_seeds(mm.goma(0.3), x0, op, base.split_keys(jax.random.PRNGKey(1), 4),
                              5, batch_x0=True)
    np.testing.assert_array_equal(np.asarray(state.inner.anchor), np.asarray(x0))
    assert state.inner.count.dtype == jnp.int32


def test_goma_reaches_inverse_square_rate_on_small_game():
    """A small, fast version of claim 1 (slope of ||F||^2 <= -1.8 on one bilinear game)."""
    game = problems.bilinear_game(jax.random.PRNGKey(2), 20, dtype=jnp.float64)
    z0 = jax.random.normal(jax.random.PRNGKey(3), (40,), jnp.float64)
    _, r = base.run(mm.goma(0.4), z0, game, jax.random.PRNGKey(0), 800,
                    trace_fn=lambda s, st, o: o.residual_sq(s.x))
    # r[t] is ||F(z_{t+1})||^2 (the trace records the iterate after step t), so ||F(z_k)||^2
    # is r[k - 1].
    ks = theory.geometric_grid(40, 800, 30)
    assert float(theory.power_law_slopes(ks, np.asarray(r)[ks - 1])) <= -1.8


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """Every claim of experiments/minimax/goma.py at QUICK size, fixed key. Measured margins at
    QUICK (key 0): bilinear slope -1.98 vs -1.8, ratio 12.2 vs 40; monotone slope -1.99 vs -1.8,
    ratio 9.3 vs 40; EG/OGDA medians -1.52/-1.51 vs -1.75; runtime call excess 0 vs 0; budget
    fraction 1.0 vs 0.8; stochastic slope -0.94 vs -0.4; contrast 1.0 vs 0.9. The fixed key
    makes the test deterministic (no false-failure rate beyond numerical changes)."""
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (residual, monotone, stochastic and sweep) pass the readability check:
    titles, axis labels, legends that say what the shaded bands are, y-ranges fitted to the
    data, tick labels that do not overlap and no series hidden under another drawn in the same
    style (the sweep's three gammas coincide at slope -2; diverging settings at slope 0)."""
    runner.check_quick_figures(experiment, quick_results)


def test_anchor_does_not_share_the_params_buffer():
    # Donating the optimizer state (an in-place training loop) must not delete the caller's
    # parameters: the anchor is a copy, not an alias.
    params = {"w": jnp.arange(4.0)}
    state = mm.goma(0.1).init(params)
    jax.jit(lambda s: jax.tree.map(lambda a: a + 0, s), donate_argnums=0)(state)
    np.testing.assert_array_equal(np.asarray(params["w"]), np.arange(4.0))


def test_steps_that_change_between_calls_match_numpy():
    """Each step taken by a freshly built ``goma(gamma_k, eta_k)`` on the state threaded through
    (as ``inject_hyperparams`` changing a value, or a per-step float), with ``eta_k = 0`` at the
    first two steps: the state must still carry ``F(z_{k-1})`` exactly (NumPy loop from the
    update rule, per-step values)."""
    op = _problem(seed=4)
    z0 = np.asarray(jax.random.normal(jax.random.PRNGKey(7), (6,), jnp.float64))
    M, c = np.asarray(op.M), np.asarray(op.c)
    gammas = [0.3, 0.25, 0.35, 0.2, 0.3, 0.28, 0.33, 0.3]
    etas = [0.0, 0.0, 0.4, 0.3, 0.45, 0.0, 0.35, 0.3]
    for damp in (True, False):
        ref = np_goma(M, c, z0, len(gammas), lambda i: gammas[i], lambda i: etas[i], damp=damp)
        z = jnp.asarray(z0)
        state = mm.goma(gammas[0], etas[0], damp_correction=damp).init(z)
        for k, (gamma, eta) in enumerate(zip(gammas, etas, strict=True)):
            u, state = mm.goma(gamma, eta, damp_correction=damp).update(
                op.operator(z, None), state, z)
            z = optax.apply_updates(z, u)
            np.testing.assert_allclose(np.asarray(z), ref[k], rtol=1e-12, atol=1e-12)


_COPY = re.compile(r"=\s*[a-z0-9]+\[([0-9,]*)\]\S*\s+copy\(")


@pytest.mark.parametrize("make", [lambda: mm.goma(0.1, 0.12), lambda: mm.goma_stochastic(0.1),
                                  lambda: mm.goma(0.1, anchor="none", damp_correction=False)],
                         ids=["goma", "goma_stochastic", "no_anchor_undamped"])
@pytest.mark.parametrize("field_in_step", [True, False], ids=["field_in_step", "field_input"])
def test_donated_step_copies_no_buffer(make, field_in_step):
    """A jitted step that donates ``params`` and state (``donate_argnums=(0, 1)``, an in-place
    training loop) compiles without a copy of any array: the update writes the new ``base``
    first and the displacement reads only it, so no buffer is read after it is overwritten.
    (Storing ``F(z_{k-1})`` itself made XLA copy the iterate, the stored field and the new
    field, per leaf.) Counts ``copy`` instructions of non-scalar shape in the compiled
    program's entry computation, with the field formed in the step from ``params`` (the case
    that creates the conflict) or passed in; three donated steps equal three plain ones."""
    tx = make()
    params = {"w": jnp.linspace(-1.0, 1.0, 12).reshape(3, 4), "b": jnp.linspace(0.5, 2.0, 5)}

    def step(p, s, g):
        if g is None:
            g = jax.tree.map(lambda z: 0.5 * z, p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    field = None if field_in_step else jax.tree.map(lambda z: 0.3 - z, params)
    donated = jax.jit(step, donate_argnums=(0, 1))
    text = donated.lower(params, tx.init(params), field).compile().as_text()
    entry = text[text.index("\nENTRY"):]  # the step's own instructions, not fused loop bodies
    copies = [m.group(0) for m in _COPY.finditer(entry) if m.group(1)]
    assert not copies, f"the donated step copies buffers: {copies}"
    plain = jax.jit(step)
    p, s = params, tx.init(params)
    q = jax.tree.map(jnp.copy, params)
    r = tx.init(q)
    for _ in range(3):
        p, s = plain(p, s, field)
        q, r = donated(q, r, field)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12), p, q)
