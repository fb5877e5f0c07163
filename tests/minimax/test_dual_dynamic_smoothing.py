"""Dual dynamic smoothing (paper 45): LMOs against brute force and closed forms, projections
against bisection references and their variational inequality, V1/V2/V3 paths against a NumPy
re-derivation, mu = 0 = FW-GDA, projected GDA / EG / Smoothed-AGDA in NumPy, the anytime
property, the game value against scipy's linprog, errors, contract cases, claims."""

from __future__ import annotations

import functools
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml.minimax import dual_smoothing as ds
from jaxopt_icml.minimax import lmo as lm
from jaxopt_icml.minimax import smoothing_baselines as sb
from jaxopt_icml.testing import AlgorithmCase

# The experiment pins OpenBLAS to one thread for its timings (claim 3) when it is imported, which
# only works before JAX first loads LAPACK; the `experiment` fixture imports it later, so the same
# pin is set here, at collection, before any test decomposes a matrix.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class _MatrixOracle(struct.PyTreeNode):
    """``f(X, y) = sum_j y_j <B_j, X> - ||y||^2 / 2`` (matrix ``X``, vector ``y``)."""

    B: jax.Array

    def grads(self, X, y, key=None):
        del key
        gx = jnp.einsum("j,jpq->pq", y.astype(self.B.dtype), self.B)
        gy = jnp.einsum("jpq,pq->j", self.B, X.astype(self.B.dtype)) - y.astype(self.B.dtype)
        return gx.astype(X.dtype), gy.astype(y.dtype)


def _matrix_problem(key, dtype):
    B = jax.random.normal(key, (3, 3, 4), jnp.float32).astype(dtype)
    return (jnp.zeros((3, 4), dtype), jnp.full((3,), 1.0 / 3, dtype)), _MatrixOracle(B)


def _game_problem(key, dtype):
    A = jax.random.uniform(key, (4, 3), jnp.float32, -1.0, 1.0).astype(dtype)
    return (jnp.full((4,), 0.25, dtype), jnp.full((3,), 1.0 / 3, dtype)), ds.MatrixGame(A)


def _v1_nuclear(**kw):
    return ds.dual_dynamic_smoothing(lmo_x=lm.nuclear_ball_lmo(2.0, num_iters=20),
                                     proj_y=lm.simplex_projection(), **kw)


def _v3_simplex(**kw):
    return ds.dual_dynamic_smoothing(lmo_x=lm.simplex_lmo(), lmo_y=lm.simplex_lmo(), **kw)


CONTRACT_CASES = (
    AlgorithmCase(
        "dual_dynamic_smoothing_v1", _v1_nuclear,
        {"mu0": 0.5, "mu_power": 0.5, "step_y": 0.3, "average_power": 1.0}, _matrix_problem,
        invalid=(({"mu0": -1.0}, "mu0"), ({"mu_power": -0.5}, "mu_power"),
                 ({"average_power": float("nan")}, "average_power"),
                 ({"step_y": 0.0}, "step_y"), ({"step_x": -1.0}, "step_x"),
                 ({"lmo_y": lm.simplex_lmo()}, "lmo_y"))),
    AlgorithmCase(
        "dual_dynamic_smoothing_v3", _v3_simplex, {"mu0": 1.0, "mu_power": 0.5},
        _game_problem, invalid=(({"mu0": -0.1}, "mu0"),)),
    # the two baselines with their own update loops (projected GDA and FW-GDA are
    # dual_dynamic_smoothing with other arguments)
    AlgorithmCase(
        "projected_extragradient", functools.partial(
            sb.projected_extragradient, proj_x=lm.simplex_projection(),
            proj_y=lm.simplex_projection()),
        {"step_size": 0.2}, _game_problem, invalid=(({"step_size": 0.0}, "step_size"),)),
    AlgorithmCase(
        "smoothed_agda", functools.partial(
            sb.smoothed_agda, proj_x=lm.simplex_projection(), proj_y=lm.simplex_projection()),
        {"step_x": 0.2, "step_y": 0.3, "prox": 1.0, "beta": 0.5}, _game_problem,
        invalid=(({"step_y": -1.0}, "step_y"), ({"prox": 0.0}, "prox"))),
)


pytestmark = pytest.mark.x64  # every test runs in float64 (conftest.py)


# --------------------------------------------------------------------------- LMOs


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_simplex_lmo_is_best_vertex_with_first_index_ties():
    rng = _rng(0)
    for _ in range(5):
        g = rng.standard_normal(7)
        s = np.asarray(lm.simplex_lmo(3.0)(jnp.asarray(g)))
        vertices = 3.0 * np.eye(7)
        best = vertices[np.argmin(vertices @ g)]
        np.testing.assert_array_equal(s, best)
    tie = jnp.asarray([1.0, -2.0, 0.5, -2.0])
    np.testing.assert_array_equal(np.asarray(lm.simplex_lmo()(tie)), [0, 1, 0, 0])


def test_l1_ball_lmo_is_signed_scaled_coordinate():
    rng = _rng(1)
    for shape in ((6,), (2, 3)):
        g = rng.standard_normal(shape)
        s = np.asarray(lm.l1_ball_lmo(2.5)(jnp.asarray(g)))
        flat = g.ravel()
        vertices = np.concatenate([2.5 * np.eye(flat.size), -2.5 * np.eye(flat.size)])
        np.testing.assert_allclose(s.ravel(), vertices[np.argmin(vertices @ flat)])
        assert s.shape == shape
    np.testing.assert_array_equal(np.asarray(lm.l1_ball_lmo()(jnp.zeros(3))), np.zeros(3))


def test_l2_ball_and_box_lmos():
    rng = _rng(2)
    g = rng.standard_normal(5)
    s = np.asarray(lm.l2_ball_lmo(1.5)(jnp.asarray(g)))
    np.testing.assert_allclose(s, -1.5 * g / np.linalg.norm(g), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(lm.l2_ball_lmo()(jnp.zeros(4))), np.zeros(4))
    # box: minimum over all 2^6 vertices
    g = rng.standard_normal(6)
    s = np.asarray(lm.box_lmo(-0.5, 2.0)(jnp.asarray(g)))
    verts = np.array(list(itertools.product([-0.5, 2.0], repeat=6)))
    np.testing.assert_allclose(s @ g, np.min(verts @ g), rtol=1e-12)
    assert np.all((s == -0.5) | (s == 2.0))


def test_nuclear_lmo_matches_numpy_top_singular_pair():
    rng = _rng(3)
    U, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    V, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    sv = np.array([3.0, 1.5, 1.0, 0.5, 0.2, 0.1])
    G = U[:, :6] @ np.diag(sv) @ V.T
    S = np.asarray(lm.nuclear_ball_lmo(2.0, num_iters=30)(jnp.asarray(G), jax.random.key(0)))
    u, s, vt = np.linalg.svd(G)
    np.testing.assert_allclose(S, -2.0 * np.outer(u[:, 0], vt[0]), atol=1e-8)
    np.testing.assert_allclose(np.sum(S * G), -2.0 * s[0], rtol=1e-12)
    # the LMO minimises <G, S> over the ball: no random rank-one point of norm 2 does better
    for _ in range(20):
        a, b = rng.standard_normal(8), rng.standard_normal(6)
        W = 2.0 * np.outer(a / np.linalg.norm(a), b / np.linalg.norm(b))
        assert np.sum(W * G) >= np.sum(S * G) - 1e-12
    # too few power iterations on a small spectral gap: inexact (value above the minimum)
    G2 = U[:, :6] @ np.diag([1.0, 0.98, 0.9, 0.5, 0.2, 0.1]) @ V.T
    S2 = np.asarray(lm.nuclear_ball_lmo(1.0, num_iters=1)(jnp.asarray(G2), jax.random.key(1)))
    assert np.sum(S2 * G2) > -1.0 + 1e-4


# --------------------------------------------------------------------------- projections


def _np_simplex_bisect(z, s=1.0):
    """``max(z - theta, 0)`` with ``theta`` found by bisection so that the sum is ``s``."""
    lo, hi = z.min() - s, z.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(z - mid, 0).sum() > s else (lo, mid)
    return np.maximum(z - 0.5 * (lo + hi), 0)


def _check_vi(proj, z, inside_points):
    """``<z - P z, w - P z> <= 0`` for feasible ``w`` (optimality of the projection)."""
    p = np.asarray(proj(jnp.asarray(z)))
    for w in inside_points:
        assert np.sum((z - p) * (w - p)) <= 1e-10
    return p


def test_simplex_projection_matches_bisection_and_vi():
    rng = _rng(4)
    for _ in range(5):
        z = 2.0 * rng.standard_normal(9)
        p = _check_vi(lm.simplex_projection(2.0), z, 2.0 * rng.dirichlet(np.ones(9), 30))
        np.testing.assert_allclose(p, _np_simplex_bisect(z, 2.0), atol=1e-12)
        np.testing.assert_allclose(p.sum(), 2.0, rtol=1e-12)


def test_l1_l2_box_projections():
    rng = _rng(5)
    z = 3.0 * rng.standard_normal(7)
    feasible = [rng.dirichlet(np.ones(7)) * rng.choice([-1, 1], 7) * 1.5 for _ in range(30)]
    p = _check_vi(lm.l1_ball_projection(1.5), z, feasible)
    np.testing.assert_allclose(p, np.sign(z) * _np_simplex_bisect(np.abs(z), 1.5), atol=1e-12)
    inside = 0.1 * z
    np.testing.assert_array_equal(np.asarray(lm.l1_ball_projection(1.5)(jnp.asarray(inside))),
                                  inside)
    np.testing.assert_allclose(np.asarray(lm.l2_ball_projection(2.0)(jnp.asarray(z))),
                               2.0 * z / np.linalg.norm(z), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(lm.l2_ball_projection(100.0)(jnp.asarray(z))), z)
    np.testing.assert_array_equal(np.asarray(lm.box_projection(-1.0, 0.5)(jnp.asarray(z))),
                                  np.clip(z, -1.0, 0.5))


def test_nuclear_projection_matches_svd_reference_and_vi():
    rng = _rng(6)
    Z = rng.standard_normal((5, 4))
    u, s, vt = np.linalg.svd(Z, full_matrices=False)
    ref = u @ np.diag(_np_simplex_bisect(s, 2.0)) @ vt
    feasible = []
    for _ in range(20):
        a, b = rng.standard_normal((5, 2)), rng.standard_normal((4, 2))
        W = a @ b.T
        feasible.append(2.0 * W / np.sum(np.linalg.svd(W, compute_uv=False)))
    P = _check_vi(lm.nuclear_ball_projection(2.0), Z, feasible)
    np.testing.assert_allclose(P, ref, atol=1e-10)
    small = 0.01 * Z
    np.testing.assert_allclose(np.asarray(lm.nuclear_ball_projection(2.0)(jnp.asarray(small))),
                               small, atol=1e-14)


def test_fw_gap_closed_form_on_l1_ball():
    rng = _rng(7)
    g, x = rng.standard_normal(6), 0.3 * rng.standard_normal(6)
    got = ds.fw_gap(jnp.asarray(g), jnp.asarray(x), lm.l1_ball_lmo(2.0))
    np.testing.assert_allclose(float(got), g @ x + 2.0 * np.max(np.abs(g)), rtol=1e-12)


# --------------------------------------------------------------------------- the algorithm


def _np_path(A, x, y, anchor, K, mu0, p, x_rule, y_rule, q=0.0):
    """The update re-derived in NumPy for ``f = x^T A y``: ``y`` first, then ``x`` at the new
    ``y``; ``x_rule(k, x, g)`` and ``y_rule(k, y, d)`` are the variable updates."""
    xs, ys, xa, ya, wsum = [], [], x.copy(), y.copy(), 0.0
    for k in range(K):
        mu = mu0 / (k + 1) ** p
        y = y_rule(k, y, A.T @ x - mu * (y - anchor))
        x = x_rule(k, x, A @ y)
        w = (k + 1.0) ** q
        wsum += w
        xa, ya = xa + w / wsum * (x - xa), ya + w / wsum * (y - ya)
        xs.append(x)
        ys.append(y)
    return np.array(xs), np.array(ys), xa, ya


def _fw(lmo_np, step):
    return lambda k, v, g: v + step(k) * (lmo_np(g) - v)


def _trajectory(alg, z0, oracle, K):
    state, (xs, ys) = base.run(alg, z0, oracle, jax.random.key(0), K,
                               trace_fn=lambda s, st, o: s.x)
    return np.asarray(xs), np.asarray(ys), state


def _vertex(i, n, scale=1.0):
    return scale * np.eye(n)[i]


@pytest.mark.parametrize("variant", ["V1", "V2", "V3"])
def test_variants_match_numpy(variant):
    rng = _rng(8)
    A = rng.uniform(-1, 1, (5, 4))
    x0, y0 = np.full(5, 0.2), np.full(4, 0.25)
    anchor = np.array([0.1, 0.2, 0.3, 0.4])
    fw2 = lambda k: 2.0 / (k + 2.0)
    sqrt_step = lambda k: 0.7 / np.sqrt(k + 1.0)
    np_simplex_lmo = lambda g: _vertex(np.argmin(g), g.size)
    if variant == "V1":   # l1-ball LMO on x, l2-ball projection on y (constant tau)
        kw = dict(lmo_x=lm.l1_ball_lmo(0.8), proj_y=lm.l2_ball_projection(0.6), step_y=0.4)
        x_rule = _fw(lambda g: -0.8 * np.sign(g[np.argmax(np.abs(g))])
                     * _vertex(np.argmax(np.abs(g)), g.size), fw2)

        def y_rule(k, y, d):
            z = y + 0.4 * d
            return z * min(1.0, 0.6 / np.linalg.norm(z))
    elif variant == "V2":  # box projection on x (decaying step), simplex LMO on y
        kw = dict(proj_x=lm.box_projection(0.0, 0.5), lmo_y=lm.simplex_lmo(),
                  step_x=ds.power_step(0.7, 0.5, 1.0), step_y=ds.power_step(1.0, 0.5, 1.0))
        x_rule = lambda k, x, g: np.clip(x - sqrt_step(k) * g, 0.0, 0.5)
        y_rule = _fw(lambda d: _vertex(np.argmax(d), d.size), lambda k: 1.0 / np.sqrt(k + 1))
    else:                  # simplex LMOs on both
        kw = dict(lmo_x=lm.simplex_lmo(), lmo_y=lm.simplex_lmo())
        x_rule = _fw(np_simplex_lmo, fw2)
        y_rule = _fw(lambda d: _vertex(np.argmax(d), d.size), fw2)
    alg = ds.dual_dynamic_smoothing(mu0=0.8, mu_power=0.7, anchor_y=jnp.asarray(anchor),
                                    average_power=1.0, **kw)
    xs, ys, state = _trajectory(alg, (jnp.asarray(x0), jnp.asarray(y0)),
                                ds.MatrixGame(jnp.asarray(A)), 12)
    rx, ry, rxa, rya = _np_path(A, x0, y0, anchor, 12, 0.8, 0.7, x_rule, y_rule, q=1.0)
    np.testing.assert_allclose(ys, ry, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(xs, rx, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(state.x_avg), rxa, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(state.y_avg), rya, rtol=1e-12, atol=1e-13)
    assert int(state.count) == 12


def test_mu_zero_is_fw_gda():
    """``mu0 = 0`` (any ``mu_power``) is the naive FW-GDA: alternating best responses mixed in
    with weight 2/(k+2), written directly in NumPy (no smoothing term at all)."""
    rng = _rng(9)
    A = rng.uniform(-1, 1, (6, 6))
    x, y = np.full(6, 1 / 6), np.full(6, 1 / 6)
    rx, ry = [], []
    for k in range(15):
        y = y + 2 / (k + 2) * (_vertex(np.argmax(A.T @ x), 6) - y)
        x = x + 2 / (k + 2) * (_vertex(np.argmin(A @ y), 6) - x)
        rx.append(x)
        ry.append(y)
    z0 = (jnp.full(6, 1 / 6), jnp.full(6, 1 / 6))
    game = ds.MatrixGame(jnp.asarray(A))
    S = lm.simplex_lmo()
    for alg in (ds.fw_gda(lmo_x=S, lmo_y=S),
                ds.dual_dynamic_smoothing(lmo_x=S, lmo_y=S, mu0=0.0, mu_power=2.0)):
        xs, ys, _ = _trajectory(alg, z0, game, 15)
        np.testing.assert_allclose(xs, np.array(rx), atol=1e-14)
        np.testing.assert_allclose(ys, np.array(ry), atol=1e-14)


def test_projected_gda_and_baselines_match_numpy():
    rng = _rng(10)
    A = rng.uniform(-1, 1, (5, 5))
    x0 = y0 = np.full(5, 0.2)
    P = _np_simplex_bisect
    z0 = (jnp.asarray(x0), jnp.asarray(y0))
    game = ds.MatrixGame(jnp.asarray(A))
    proj = lm.simplex_projection()
    # alternating projected GDA (y first)
    x, y, ref = x0.copy(), y0.copy(), []
    for _ in range(10):
        y = P(y + 0.3 * (A.T @ x))
        x = P(x - 0.2 * (A @ y))
        ref.append(x)
    xs, _, _ = _trajectory(ds.projected_gda(0.2, 0.3, proj_x=proj, proj_y=proj), z0, game, 10)
    np.testing.assert_allclose(xs, np.array(ref), atol=1e-12)
    # projected extragradient; the averages are over the extrapolated points
    x, y, ref, wx_sum = x0.copy(), y0.copy(), [], 0
    for _ in range(10):
        wx, wy = P(x - 0.4 * (A @ y)), P(y + 0.4 * (A.T @ x))
        x, y = P(x - 0.4 * (A @ wy)), P(y + 0.4 * (A.T @ wx))
        ref.append(x)
        wx_sum = wx_sum + wx
    alg = sb.projected_extragradient(0.4, proj_x=proj, proj_y=proj)
    xs, _, state = _trajectory(alg, z0, game, 10)
    np.testing.assert_allclose(xs, np.array(ref), atol=1e-12)
    np.testing.assert_allclose(np.asarray(state.x_avg), wx_sum / 10, atol=1e-12)
    # smoothed AGDA: x first with the proximal term, then y at the new x, then the centre
    x, y, z, ref = x0.copy(), y0.copy(), x0.copy(), []
    for _ in range(10):
        x = P(x - 0.3 * (A @ y + 2.0 * (x - z)))
        y = P(y + 0.5 * (A.T @ x))
        z = z + 0.25 * (x - z)
        ref.append(x)
    alg = sb.smoothed_agda(0.3, 0.5, proj_x=proj, proj_y=proj, prox=2.0, beta=0.25)
    xs, _, state = _trajectory(alg, z0, game, 10)
    np.testing.assert_allclose(xs, np.array(ref), atol=1e-12)
    np.testing.assert_allclose(np.asarray(state.z), z, atol=1e-12)


def test_anytime_prefix_is_unchanged():
    """No horizon parameter: a run of 2K steps starts with exactly the run of K steps."""
    (z0, game) = _game_problem(jax.random.key(3), jnp.float64)
    alg = _v3_simplex(mu0=1.0, mu_power=0.5)
    run = jax.jit(lambda k, n: base.run(alg, z0, game, k, n, trace_fn=lambda s, st, o: s.x),
                  static_argnums=1)
    _, short = run(jax.random.key(4), 40)
    _, long = run(jax.random.key(4), 80)
    for a, b in zip(short, long, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[:40])


def test_v3_matrix_game_value_matches_linprog():
    """V3 with the defaults on an 8x6 game: the averages' gap is small and their value is the
    linprog game value up to the gap (value(x_avg, y_avg) lies within the gap of v*)."""
    from scipy.optimize import linprog

    rng = _rng(11)
    A = rng.uniform(-1, 1, (8, 6))
    n, m = A.shape
    res = linprog(np.r_[np.zeros(n), 1.0], A_ub=np.c_[A.T, -np.ones(m)], b_ub=np.zeros(m),
                  A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[1.0],
                  bounds=[(0, None)] * n + [(None, None)], method="highs")
    game = ds.MatrixGame(jnp.asarray(A))
    z0 = (jnp.full(n, 1 / n), jnp.full(m, 1 / m))
    state, _ = base.run(_v3_simplex(), z0, game, jax.random.key(0), 4000,
                        trace_fn=lambda s, st, o: ())
    gap = float(game.duality_gap(state.x_avg, state.y_avg))
    value = float(game.value(state.x_avg, state.y_avg))
    assert 0.0 <= gap < 0.03
    assert abs(value - res.fun) <= gap + 1e-12
    # the gap is a bracket: min_i (A y)_i <= v* <= max_j (A^T x)_j
    assert float(jnp.min(game.A @ state.y_avg)) <= res.fun + 1e-9
    assert float(jnp.max(game.A.T @ state.x_avg)) >= res.fun - 1e-9


def test_experiment_oracles(experiment):
    """The experiment's robust and matrix-completion oracles: hand-written gradients equal
    ``jax.grad``; ``y*(x)`` maximises ``f(x, .)`` over the simplex (beats 200 random points)."""
    cfg = experiment.Config(seeds=1, nuc_seeds=1, nuc_n=6, rob_d=4, rob_per_group=7, game_n=3)
    probs = experiment.make_problem(cfg, jax.random.PRNGKey(0))
    rob = jax.tree.map(lambda a: a[0].astype(jnp.float64), probs["robust"])
    mc = jax.tree.map(lambda a: a[0].astype(jnp.float64), probs["nuclear"])
    rng = _rng(12)
    X, y = jnp.asarray(rng.standard_normal((6, 6))), jnp.asarray(rng.dirichlet(np.ones(5)))
    for got, want in zip(mc.grads(X, y), jax.grad(mc.f, argnums=(0, 1))(X, y), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
    x = jnp.asarray(rng.standard_normal(4))
    ys = rob.y_star(x)
    best = float(rob.f(x, ys))
    for w in rng.dirichlet(np.ones(5), 200):
        assert float(rob.f(x, jnp.asarray(w))) <= best + 1e-12
    np.testing.assert_allclose(float(mc.primal(X)), float(mc.f(X, lm.project_simplex(
        0.2 + mc.losses(X) / mc.lam))), rtol=1e-12)


def test_dtype_float32_and_bfloat16_kept():
    for dt in (jnp.float32, jnp.bfloat16):
        z0, oracle = _matrix_problem(jax.random.key(0), dt)
        state, (xs, ys) = base.run(_v1_nuclear(step_y=0.3), z0, oracle, jax.random.key(1), 3,
                                   trace_fn=lambda s, st, o: s.x)
        assert xs.dtype == dt and ys.dtype == dt and state.x_avg.dtype == dt


def test_errors():
    S, P = lm.simplex_lmo(), lm.simplex_projection()
    with pytest.raises(ValueError, match="lmo_x"):
        ds.dual_dynamic_smoothing(lmo_x=S, proj_x=P, lmo_y=S)
    with pytest.raises(ValueError, match="lmo_y"):
        ds.dual_dynamic_smoothing(lmo_x=S)
    with pytest.raises(ValueError, match="step_x"):
        ds.dual_dynamic_smoothing(proj_x=P, lmo_y=S)
    with pytest.raises(ValueError, match="mu0"):
        ds.dual_dynamic_smoothing(lmo_x=S, lmo_y=S, mu0=-1.0)
    with pytest.raises(ValueError, match="radius"):
        lm.l1_ball_lmo(0.0)
    with pytest.raises(ValueError, match="num_iters"):
        lm.nuclear_ball_lmo(1.0, num_iters=0)
    with pytest.raises(ValueError, match="lower"):
        lm.box_lmo(1.0, 0.0)
    with pytest.raises(ValueError, match="power"):
        ds.power_step(1.0, -1.0)
    with pytest.raises(ValueError, match="beta"):
        sb.smoothed_agda(0.1, 0.1, proj_x=P, proj_y=P, beta=1.5)
    with pytest.raises(ValueError, match="proj_x"):
        sb.projected_extragradient(0.1, proj_x=None, proj_y=P)


class _WrongGrads:
    """``grads(x, y)`` with part ``which`` (0 or 1) one entry longer than its variable (None:
    both parts right)."""

    def __init__(self, which):
        self.which = which

    def grads(self, x, y, key=None):
        del key
        gx, gy = jnp.zeros_like(x), jnp.zeros_like(y)
        if self.which == 0:
            gx = jnp.zeros(x.shape[0] + 1, x.dtype)
        if self.which == 1:
            gy = jnp.zeros(y.shape[0] + 1, y.dtype)
        return gx, gy


_SHAPE_ALGS = {
    "dual_dynamic_smoothing": lambda: ds.dual_dynamic_smoothing(
        lmo_x=lm.simplex_lmo(), lmo_y=lm.simplex_lmo()),
    "projected_gda": lambda: ds.projected_gda(0.1, 0.1, proj_x=lm.simplex_projection(),
                                              proj_y=lm.simplex_projection()),
    "projected_extragradient": lambda: sb.projected_extragradient(
        0.1, proj_x=lm.simplex_projection(), proj_y=lm.simplex_projection()),
    "smoothed_agda": lambda: sb.smoothed_agda(0.1, 0.1, proj_x=lm.simplex_projection(),
                                              proj_y=lm.simplex_projection()),
}


@pytest.mark.parametrize("name", sorted(_SHAPE_ALGS))
@pytest.mark.parametrize("which", [0, 1])
def test_oracle_grads_of_another_shape_raise_value_error(name, which):
    """A gradient (4,) for x in R^3 (or (3,) for y in R^2) raises a ValueError naming the part
    and the shapes, where a broadcasting TypeError leaked from inside the update."""
    alg = _SHAPE_ALGS[name]()
    z0 = (jnp.full(3, 1 / 3), jnp.full(2, 0.5))
    key = jax.random.key(0)
    var, shapes = ("x", r"\(4,\) vs \(3,\)") if which == 0 else ("y", r"\(3,\) vs \(2,\)")
    with pytest.raises(ValueError, match=rf"oracle\.grads\(x, y\)\[{which}\] and {var} disagree "
                       rf"at leaf .*shape {shapes}"):
        alg.update(alg.init(z0, key), _WrongGrads(which), key)


def test_dual_smoothing_anchor_and_lmo_of_another_shape_raise_value_error():
    """anchor_y must have y0's shapes (checked at init) and an LMO's output x's (at update)."""
    S, key = lm.simplex_lmo(), jax.random.key(0)
    z0 = (jnp.full(3, 1 / 3), jnp.full(2, 0.5))
    alg = ds.dual_dynamic_smoothing(lmo_x=S, lmo_y=S, anchor_y=jnp.full(3, 1 / 3))
    with pytest.raises(ValueError, match=r"anchor_y and y0 disagree at leaf .*\(3,\) vs \(2,\)"):
        alg.init(z0, key)
    alg = ds.dual_dynamic_smoothing(lmo_x=lambda g, k: jnp.zeros(4, g.dtype), lmo_y=S)
    with pytest.raises(ValueError, match=r"lmo_x\(g\) and x disagree at leaf .*\(4,\) vs \(3,\)"):
        alg.update(alg.init(z0, key), _WrongGrads(None), key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """Every claim at QUICK size (key 0) passes except the documented non-reproductions, which
    must still fail. The exception is ``equal_time_win_fraction_long``, whose outcome depends on
    the machine's wall clock (its budget is converted to steps with measured step times; QUICK's
    0.5 s is past the 0.2 s crossover here, but not on a much slower machine or with a threaded
    SVD): only its range is checked. Measured at QUICK: gap 0.0133 (10000 steps), slope -0.56,
    value error 5.5e-4, robust min FW gaps 1.2e-3 / 2.0e-3 (relative 0.011), anytime diff 0,
    LMO/SVD time 0.04-0.06, V1/PGDA step time 0.11-0.13, equal-time wins 1.0 (0.05 s) and 0.0
    (0.5 s), mu = 0 stuck fraction 0.0, V1 smoothing wins 1.0."""
    clock = "equal_time_win_fraction_long"
    checked = runner.check_quick_claims(experiment, quick_results, tolerate={clock})
    assert 0.0 <= {c.name: c.value for c in checked}[clock] <= 1.0


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (matrix_game, robust, nuclear) pass the readability check: titles,
    axis labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick
    labels that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
