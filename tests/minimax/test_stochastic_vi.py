"""Minibatch FBF (paper 65): contract case, Tseng's update in NumPy, the zero-noise special case,
the residual's closed form, the batch-mean law, the SEG mean-square recursion, errors, claims."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import runner
from jaxopt_icml import base, problems
from jaxopt_icml import minimax as mm
from jaxopt_icml.minimax import stochastic_vi as sv
from jaxopt_icml.testing import AlgorithmCase

_bilinear_f32 = jax.jit(lambda key: problems.bilinear_game(key, 2))


def _noisy_game(key, dtype):
    """A 2x2 bilinear game (built in float32, cast to ``dtype``) with both noise kinds."""
    game = jax.tree.map(lambda a: a.astype(dtype), _bilinear_f32(key))
    oracle = problems.NoisyOperator(game, jnp.asarray(0.5, dtype), jnp.asarray(0.1, dtype))
    return jnp.ones((4,), dtype), oracle


def _two_per_step(k):
    return 2 * (k + 1)


CONTRACT_CASES = (
    AlgorithmCase(
        "stochastic_fbf", sv.stochastic_fbf,
        {"step_size": 0.4, "batch_schedule": _two_per_step, "relaxation": 0.7,
         "max_batch": 64},
        _noisy_game, stochastic=True,
        invalid=(({"step_size": 0.0}, "step_size"), ({"relaxation": 1.5}, "relaxation"),
                 ({"relaxation": 0.0}, "relaxation"), ({"max_batch": 0}, "max_batch"),
                 ({"batch_schedule": 0}, "batch_schedule"),
                 ({"batch_schedule": lambda k: 0 * k}, "batch_schedule"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


def _linear(seed=0, d=6):
    """A monotone affine field ``M (z - z*)`` built in NumPy (PSD + skew part), float64."""
    rng = np.random.default_rng(seed)
    B, C = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    M = 0.3 * B @ B.T / d + (C - C.T) / (2 * np.sqrt(d))
    z_star = rng.standard_normal(d)
    return problems.LinearOperator(jnp.asarray(M), jnp.asarray(-M @ z_star), jnp.asarray(z_star),
                                   jnp.asarray(np.linalg.norm(M, 2)), jnp.asarray(0.0))


def np_tseng(M, c, z0, k, t, lo, hi, alpha=1.0):
    """Tseng's forward-backward-forward with a box projection, written from the update."""
    F = lambda z: M @ z + c
    z, out = z0.copy(), []
    for _ in range(k):
        zbar = np.clip(z - t * F(z), lo, hi)
        w = zbar - t * (F(zbar) - F(z))
        z = z + alpha * (w - z)
        out.append(z)
    return np.array(out)


def _path(alg, op, z0, k):
    _, xs = base.run(alg, z0, op, jax.random.PRNGKey(0), k, trace_fn=lambda s, st, o: s.x)
    return np.asarray(xs)


@pytest.mark.parametrize("alpha", [1.0, 0.6])
def test_deterministic_fbf_is_tseng(alpha):
    """A deterministic oracle goes through the fori_loop batch average (batch 3): the path is
    Tseng's update with the box projection."""
    op = _linear()
    z0 = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (6,), jnp.float64))
    alg = sv.stochastic_fbf(0.3, batch_schedule=3, prox=sv.box_prox(-0.5, 2.0),
                            relaxation=alpha)
    ref = np_tseng(np.asarray(op.M), np.asarray(op.c), z0, 20, 0.3, -0.5, 2.0, alpha)
    np.testing.assert_allclose(_path(alg, op, jnp.asarray(z0), 20), ref, rtol=1e-12, atol=1e-12)


def test_zero_noise_equals_deterministic_and_counts_calls():
    """NoisyOperator with zero noise (direct batch-mean draw) == the deterministic run; info
    counts 2 b_k calls per step, cumulated in the state."""
    op = _linear(seed=2)
    z0 = jax.random.normal(jax.random.PRNGKey(3), (6,), jnp.float64)
    quiet = problems.NoisyOperator(op, jnp.asarray(0.0), jnp.asarray(0.0))
    alg = sv.stochastic_fbf(0.4, batch_schedule=lambda k: 5 * (k + 1), max_batch=12)
    state, (xs, info) = base.run(alg, z0, quiet, jax.random.PRNGKey(0), 10,
                                 trace_fn=lambda s, st, o: (s.x, s.info))
    np.testing.assert_allclose(np.asarray(xs), _path(alg, op, z0, 10), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(info["batch_size"])[:4], [5, 10, 12, 12])
    np.testing.assert_array_equal(np.asarray(info["oracle_calls"])[:4], [10, 20, 24, 24])
    assert int(state.oracle_calls) == 30 + 8 * 24 and int(state.count) == 10


def test_unconstrained_fbf_is_extragradient():
    """With the identity prox and alpha = 1, FBF is extragradient with the same step."""
    from jaxopt_icml import minimax as mm

    op = _linear(seed=4)
    z0 = jax.random.normal(jax.random.PRNGKey(5), (6,), jnp.float64)
    np.testing.assert_allclose(_path(sv.stochastic_fbf(0.35, batch_schedule=1), op, z0, 15),
                               _path(mm.extragradient(0.35), op, z0, 15), rtol=1e-11,
                               atol=1e-12)


def test_residual_closed_form():
    op = _linear(seed=6)
    M, c = np.asarray(op.M), np.asarray(op.c)
    z = np.asarray(jax.random.normal(jax.random.PRNGKey(7), (6,), jnp.float64))
    t = 0.7
    box = np.linalg.norm(z - np.clip(z - t * (M @ z + c), 0.0, None)) / t
    got = sv.residual(op.operator, prox=sv.box_prox(0.0), step_size=t)(jnp.asarray(z))
    np.testing.assert_allclose(float(got), box, rtol=1e-12)
    free = sv.residual(op.operator, step_size=t)(jnp.asarray(z))
    np.testing.assert_allclose(float(free), np.linalg.norm(M @ z + c), rtol=1e-12)
    # zero exactly at the solution, for any t
    assert float(sv.residual(op.operator, step_size=0.2)(op.solution)) < 1e-12


def test_batch_mean_law_direct_and_loop():
    """E||F^ - F||^2 = (s^2 ||z||^2 + a^2 d) / n for the direct draw (NoisyOperator) and for the
    fori_loop average of single samples (a wrapper hiding the NoisyOperator type)."""

    class Plain:
        def __init__(self, inner):
            self.inner = inner

        def operator(self, z, key):
            return self.inner.operator(z, key)

    M = np.diag([1.0, 2.0, 0.5, 0.0, 1.5])
    op = problems.LinearOperator(jnp.asarray(M), jnp.ones(5), jnp.zeros(5), jnp.asarray(2.0),
                                 jnp.asarray(0.0))
    noisy = problems.NoisyOperator(op, jnp.asarray(0.5), jnp.asarray(0.2))
    z = jnp.arange(5.0) / 3
    expect = (0.25 * float(z @ z) + 0.04 * 5) / 7
    keys = jax.random.split(jax.random.key(9, impl="unsafe_rbg"), 3000)
    for oracle in (noisy, Plain(noisy)):
        draws = jax.jit(jax.vmap(lambda k, o=oracle: sv.minibatch_operator(o, z, k, 7)))(keys)
        err = np.asarray(draws) - np.asarray(op.operator(z))[None]
        np.testing.assert_allclose(err.mean(0), 0.0, atol=0.02)
        np.testing.assert_allclose(np.mean(np.sum(err ** 2, 1)), expect, rtol=0.08)


def test_seg_mean_square_recursion_matches_monte_carlo(experiment):
    """NumPy Monte Carlo of single-sample SEG (independent samples, F~ = (M + s G/sqrt(d)) z) on
    a 4-dim bilinear field with z* = 0: E||z_2||^2 equals two steps of the mean-square
    recursion behind the experiment's linearised divergence estimate (t = 0.8, s = 0.5,
    200000 draws)."""
    A = np.array([[0.9, 0.2], [-0.3, 0.5]])
    M = np.block([[np.zeros((2, 2)), A], [-A.T, np.zeros((2, 2))]])
    t, s, d, draws = 0.8, 0.5, 4, 200000
    rng = np.random.default_rng(0)
    z = np.tile(np.array([1.0, -0.5, 0.3, 2.0]), (draws, 1))
    field = lambda w: w @ M.T + s * np.einsum("nij,nj->ni", rng.standard_normal(
        (draws, d, d)), w) / np.sqrt(d)
    for _ in range(2):
        z = z - t * field(z - t * field(z))
    mc = float(np.mean(np.sum(z ** 2, 1)))
    mu, V = np.linalg.eig(M)
    e = np.abs(V.conj().T @ np.array([1.0, -0.5, 0.3, 2.0])) ** 2
    for _ in range(2):
        e = experiment.seg_energy_step(e, mu, t, s * s)
    np.testing.assert_allclose(mc, e.sum(), rtol=0.02)


def test_errors():
    with pytest.raises(ValueError, match="step_size"):
        sv.stochastic_fbf(-1.0)
    with pytest.raises(ValueError, match="relaxation"):
        sv.relaxed_fbf(1.0, 2.0)
    with pytest.raises(ValueError, match="max_batch"):
        sv.stochastic_fbf(0.5, max_batch=1.5)
    with pytest.raises(ValueError, match="batch_schedule"):
        sv.stochastic_fbf(0.5, batch_schedule=True)
    with pytest.raises(ValueError, match="lower"):
        sv.box_prox(1.0, 0.0)
    with pytest.raises(ValueError, match="step_size"):
        sv.residual(lambda z: z, step_size=0.0)
    # a callable schedule is checked at construction also inside jit (a swept step size):
    # a valid one builds, an invalid one raises
    def init_in_jit(schedule):
        return jax.jit(lambda t: sv.stochastic_fbf(t, batch_schedule=schedule).init(
            jnp.zeros(2), jax.random.key(0)))(0.5)

    assert int(init_in_jit(lambda k: k + 1).count) == 0
    with pytest.raises(ValueError, match="batch_schedule"):
        init_in_jit(lambda k: 0 * k)
    with pytest.raises(ValueError, match="scalar >= 1"):
        sv.stochastic_fbf(0.5, batch_schedule=lambda k: jnp.ones(2))


# --------------------------------------------------------------------------- shape checks

# the field-consuming baselines (minimax/baselines.py, the SGDA / SEG baselines of this paper),
# with the state tree each stores (None: none) and whether it calls field_fn
_BASELINES = {
    "sgda": (lambda: mm.sgda(0.1), None, False),
    "extragradient": (lambda: mm.extragradient(0.1), None, True),
    "dseg": (lambda: mm.dseg(0.1), None, True),
    "ogda": (lambda: mm.ogda(0.1), "prev_field", False),
    "popov": (lambda: mm.popov(0.1), "base", False),
    "eag_c": (lambda: mm.eag_c(0.1), "anchor", True),
    "feg": (lambda: mm.feg(0.1), "anchor", True),
    "anchored_popov": (lambda: mm.anchored_popov(0.1), "anchor", False),
}
_LEAF = r"\['x'\]: shape \(4,\) vs \(3,\)"


@pytest.mark.parametrize("name", sorted(_BASELINES))
def test_baselines_reject_mismatched_trees_naming_the_leaf(name):
    """A field whose leaf shape or tree structure differs from the point (or from the trees
    the state stores, or a field_fn value that does) raises a ValueError naming the leaf at
    trace time, also under jit, where a broadcasting TypeError leaked (or SGDA returned (4,)
    updates for a (3,) point)."""
    make, stored, two_call = _BASELINES[name]
    tx = make()
    field = lambda z, i=0: z  # noqa: E731
    z = {"x": jnp.zeros(3), "y": jnp.ones((2, 2))}
    state = tx.init(z)
    good = jax.tree.map(jnp.ones_like, z)
    bad = {**good, "x": jnp.ones(4)}
    with pytest.raises(ValueError, match=name + r": updates and params disagree at leaf " + _LEAF):
        tx.update(bad, state, z, field_fn=field)
    with pytest.raises(ValueError, match=_LEAF):
        jax.jit(lambda u, s, p: tx.update(u, s, p, field_fn=field))(bad, state, z)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**good, "extra": jnp.ones(2)}, state, z, field_fn=field)
    assert "'extra'" in str(err.value)
    if stored is not None:  # the point and the field agree, but not with the state's tree
        other = {**z, "x": jnp.zeros(4)}
        with pytest.raises(ValueError, match=rf"updates and state\.{stored} disagree at leaf "
                           + _LEAF):
            tx.update(jax.tree.map(jnp.ones_like, other), state, other, field_fn=field)
    if two_call:
        wrong = lambda w, i=0: {**w, "x": jnp.ones(4)}  # noqa: E731
        with pytest.raises(ValueError, match=r"field_fn\(z\) and params disagree at leaf " + _LEAF):
            tx.update(good, state, z, field_fn=wrong)


class _Identity:
    """The operator ``F(z) = z`` on any pytree."""

    def operator(self, z, key):
        del key
        return z


class _WrongOperator:
    """An operator oracle whose value has a (4,) leaf where the point has (3,)."""

    def operator(self, z, key):
        del key
        return {**z, "x": jnp.ones(4, z["x"].dtype)}


def test_fbf_rejects_operator_or_prox_of_another_shape():
    """stochastic_fbf names the leaf where the operator's value (or the prox's output) and the
    iterate disagree, instead of a broadcasting TypeError inside the update."""
    z0 = {"x": jnp.zeros(3), "y": jnp.zeros(2)}
    key = jax.random.key(0)
    alg = sv.stochastic_fbf(0.1, batch_schedule=1)
    with pytest.raises(ValueError, match=r"stochastic_fbf: oracle\.operator\(z\) and z disagree "
                       r"at leaf " + _LEAF):
        alg.update(alg.init(z0, key), _WrongOperator(), key)
    bad_prox = sv.stochastic_fbf(0.1, batch_schedule=1,
                                 prox=lambda z, t: {**z, "x": jnp.zeros(4, z["x"].dtype)})
    with pytest.raises(ValueError, match=r"prox\(z, t\) and z disagree at leaf " + _LEAF):
        bad_prox.update(bad_prox.init(z0, key), _Identity(), key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """Every claim at QUICK size (fixed key). Measured at QUICK (key 0): eps missed 0 vs 0,
    calls slope 2.89 vs 4.5, SEG max crossing 527 vs 2e4, crossing vs linearised 0.20 vs 0.69,
    FBF ratio 1.18 vs 10, relaxed FBF calls 7440 vs 2e6, SGDA diverged fraction 1 vs 1."""
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (complexity, divergence and weak_minty) pass the readability check: titles,
    axis labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick
    labels that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
