"""problems: the known constants (solution, L, mu, optimum) and the noise model hold."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_icml import problems, theory


@pytest.fixture(scope="module")
def game():
    return problems.bilinear_game(jax.random.key(0), 4, num_zero=1)


def test_bilinear_game_structure(game):
    M = np.asarray(game.M, np.float64)
    n = 4
    np.testing.assert_allclose(M, -M.T, atol=1e-6)  # skew: monotone, not strongly
    np.testing.assert_allclose(M[:n, :n], 0.0)
    np.testing.assert_allclose(M[n:, n:], 0.0)
    assert float(game.lipschitz) == pytest.approx(np.linalg.norm(M, 2), rel=1e-5)
    assert float(game.lipschitz) == pytest.approx(1.0, rel=1e-5)  # largest singular value
    assert float(game.strong_monotonicity) == 0.0
    # num_zero = 1 zero singular value of A: M has a 2-dimensional null space
    assert np.sum(np.linalg.svd(M, compute_uv=False) < 1e-5) == 2


def test_bilinear_game_solution_and_operator(game):
    np.testing.assert_allclose(game.operator(game.solution), 0.0, atol=1e-5)
    assert float(game.residual_sq(game.solution)) < 1e-10
    z = jnp.arange(8.0) / 8
    np.testing.assert_allclose(game.operator(z), game.M @ z + game.c, rtol=1e-6)
    # F(x, y) = (A y + b, -A^T x + c): the off-diagonal blocks are A and -A^T
    A = game.M[:4, 4:]
    np.testing.assert_allclose(game.M[4:, :4], -A.T, atol=1e-7)


def test_projection_onto_solution_set(game):
    z = jnp.cos(jnp.arange(8.0))
    p = game.project_solution(z)
    np.testing.assert_allclose(game.operator(p), 0.0, atol=1e-5)  # lands in the set
    np.testing.assert_allclose(game.project_solution(p), p, atol=1e-5)  # idempotent
    # z - p is orthogonal to the solution set's directions (the null space of M)
    _, s, vt = np.linalg.svd(np.asarray(game.M, np.float64))
    null = vt[s < 1e-5]
    np.testing.assert_allclose(null @ np.asarray(z - p), 0.0, atol=1e-5)
    assert float(game.distance_to_solution_sq(p)) < 1e-9
    assert float(game.distance_to_solution_sq(z)) == pytest.approx(
        float(jnp.sum((z - p) ** 2)), rel=1e-5)


def test_bilinear_game_given_singular_values_and_validation():
    g = problems.bilinear_game(jax.random.key(1), 3, singular_values=[2.0, 0.5, 0.1])
    np.testing.assert_allclose(np.linalg.svd(np.asarray(g.M[:3, 3:]), compute_uv=False),
                               [2.0, 0.5, 0.1], rtol=1e-5)
    assert float(g.lipschitz) == pytest.approx(2.0)
    for kwargs in ({"n": 0}, {"n": 2, "num_zero": 3}, {"n": 2, "num_zero": -1}):
        with pytest.raises(ValueError, match="num_zero"):
            problems.bilinear_game(jax.random.key(0), **kwargs)


@pytest.mark.parametrize("make,mu", [
    (lambda k: problems.strongly_monotone_linear(k, 5, mu=0.2), 0.2),
    (lambda k: problems.monotone_linear(k, 5, rank=3), 0.0),
])
def test_linear_monotone_operators(make, mu):
    op = make(jax.random.key(2))
    M = np.asarray(op.M, np.float64)
    sym = np.linalg.eigvalsh((M + M.T) / 2)
    assert sym.min() == pytest.approx(mu, abs=1e-5)
    assert float(op.strong_monotonicity) == pytest.approx(mu, abs=1e-6)
    assert float(op.lipschitz) == pytest.approx(np.linalg.norm(M, 2), rel=1e-5)
    np.testing.assert_allclose(op.operator(op.solution), 0.0, atol=1e-5)


def test_linear_operator_validation():
    with pytest.raises(ValueError, match="mu"):
        problems.strongly_monotone_linear(jax.random.key(0), 3, mu=0.0)
    with pytest.raises(ValueError, match="rank"):
        problems.monotone_linear(jax.random.key(0), 3, rank=4)


def test_random_orthogonal():
    q = np.asarray(problems.random_orthogonal(jax.random.key(3), 6), np.float64)
    np.testing.assert_allclose(q.T @ q, np.eye(6), atol=1e-5)


def test_noisy_operator_unbiased_with_predicted_variance(game):
    """E F~(z) = F(z) and E||F~ - F||^2 = noise^2 ||z||^2 + additive^2 d, by Monte Carlo with
    z-tests (|z| < 4: false-failure rate about 6e-5 per test)."""
    noise, additive = 0.7, 0.3
    noisy = problems.NoisyOperator(game, jnp.float32(noise), jnp.float32(additive))
    z = jnp.linspace(-1.0, 2.0, 8)
    keys = jax.random.split(jax.random.key(4), 20_000)
    samples = jax.jit(jax.vmap(lambda k: noisy.operator(z, k)))(keys)
    err = np.asarray(samples, np.float64) - np.asarray(game.operator(z), np.float64)[None]
    for i in range(err.shape[1]):  # every coordinate is unbiased
        assert abs(theory.clt_ztest(err[:, i], 0.0).z) < 4.0
    sq = np.sum(err**2, axis=1)
    predicted = noise**2 * float(jnp.sum(z**2)) + additive**2 * z.shape[0]
    test = theory.clt_ztest(sq, predicted)
    assert abs(test.z) < 4.0, (test.mean, predicted)
    assert test.mean == pytest.approx(predicted, rel=0.05)
    # exact diagnostics ignore the noise
    assert float(noisy.residual_sq(game.solution)) < 1e-10
    assert float(noisy.distance_to_solution_sq(z)) == pytest.approx(
        float(game.distance_to_solution_sq(z)))


def test_problems_vmap_over_instances():
    games = jax.vmap(lambda k: problems.bilinear_game(k, 2))(jax.random.split(jax.random.key(5), 3))
    assert games.M.shape == (3, 4, 4)
    res = jax.vmap(lambda g: g.residual_sq(g.solution))(games)
    np.testing.assert_allclose(res, 0.0, atol=1e-9)


@pytest.mark.parametrize("mu,L", [(0.01, 1.0), (0.5, 2.0), (0.0, 1.0)])
def test_random_quadratic_constants(mu, L):
    q = problems.random_quadratic(jax.random.key(6), 5, mu=mu, L=L)
    eig = np.linalg.eigvalsh(np.asarray(q.H, np.float64))
    assert eig.min() == pytest.approx(mu, abs=1e-5)
    assert eig.max() == pytest.approx(L, rel=1e-5)
    assert float(q.lipschitz) == pytest.approx(L) and float(q.strong_convexity) == pytest.approx(mu)
    np.testing.assert_allclose(q.H, q.H.T, atol=1e-6)
    assert float(q.value(q.optimum)) == pytest.approx(float(q.min_value))
    np.testing.assert_allclose(q.grad(q.optimum), 0.0, atol=1e-6)
    x = jnp.arange(5.0)
    np.testing.assert_allclose(q.grad(x), jax.grad(q.value)(x), rtol=1e-5, atol=1e-5)
    v, g = q.value_and_grad(x)
    assert float(v) == pytest.approx(float(q.value(x))) and np.allclose(g, q.grad(x))


def test_quadratic_gradient_noise():
    q = problems.random_quadratic(jax.random.key(7), 4, grad_noise=0.5)
    x = jnp.ones(4)
    keys = jax.random.split(jax.random.key(8), 4000)
    g = np.asarray(jax.vmap(lambda k: q.grad(x, k))(keys), np.float64) - np.asarray(q.grad(x))
    assert abs(theory.clt_ztest(g[:, 0]).z) < 4.0
    assert np.var(g) == pytest.approx(0.25, rel=0.1)
    np.testing.assert_array_equal(q.grad(x), q.grad(x, None))  # no key: exact gradient


def test_random_quadratic_validation():
    with pytest.raises(ValueError, match="mu"):
        problems.random_quadratic(jax.random.key(0), 3, mu=2.0, L=1.0)
    with pytest.raises(ValueError, match="d >= 1"):
        problems.random_quadratic(jax.random.key(0), 0)


def test_float64_problems():
    with jax.enable_x64(True):
        g = problems.bilinear_game(jax.random.key(0), 3, dtype=jnp.float64)
        assert g.M.dtype == jnp.float64
        assert float(g.residual_sq(g.solution)) < 1e-20
        q = problems.random_quadratic(jax.random.key(0), 3, dtype=jnp.float64)
        assert q.H.dtype == jnp.float64 and q.lipschitz.dtype == jnp.float64
    assert math.isfinite(float(q.lipschitz))
