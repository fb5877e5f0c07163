"""base: OracleAlgorithm, run, run_seeds (vmap and shard), the GradientTransformation adapter."""

import contextlib
import logging

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxopt_icml import base, problems

STEPS = 4


_bilinear = jax.jit(problems.bilinear_game, static_argnums=1)  # one compile, not op by op
# base.run outside jit compiles its scan on every call; loops of reference runs share this one.
_run = jax.jit(base.run, static_argnums=(0, 4), static_argnames=("trace_fn", "field"))


class _CompileLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.compiled = []

    def emit(self, record):
        message = record.getMessage()
        if "XLA compilation" in message:
            self.compiled.append(message)


@contextlib.contextmanager
def _compilations():
    """The XLA compilations inside the block, from JAX's public ``jax.log_compiles`` logging
    (records of the ``jax`` logger hierarchy)."""
    handler = _CompileLog()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield handler.compiled
    finally:
        logger.removeHandler(handler)


def _game(noise=0.0):
    game = _bilinear(jax.random.key(0), 2)
    return problems.NoisyOperator(game, jnp.float32(noise), jnp.float32(noise))


def _sgd_alg(step_size=0.1, traces=None):
    """Plain stochastic gradient step as an OracleAlgorithm (independent of the adapter);
    ``traces[0]`` counts the Python executions (traces) of ``update``."""
    traces = [0] if traces is None else traces

    def init(x0, key):
        del key
        return x0

    def update(x, oracle, key):
        traces[0] += 1
        new = x - step_size * oracle.operator(x, key)
        return base.Step(new, {"oracle_calls": jnp.int32(1)}), new

    return base.OracleAlgorithm(init, update)


ALG_TRACES = [0]
ALG = _sgd_alg(traces=ALG_TRACES)
X0 = jnp.ones(4)


def _trace_x(step, state, oracle):
    del state, oracle
    return step.x


def test_run_is_a_scan_with_the_documented_key_schedule():
    oracle = _game(0.5)
    key = jax.random.key(3)
    state, trace = _run(ALG, X0, oracle, key, STEPS, trace_fn=_trace_x)
    init_key, update_key = jax.random.split(key)
    x = ALG.init(X0, init_key)
    xs = []
    for t in range(STEPS):
        _, x = ALG.update(x, oracle, jax.random.fold_in(update_key, t))
        xs.append(x)
    np.testing.assert_allclose(trace, np.stack(xs), rtol=1e-6)
    np.testing.assert_allclose(state, xs[-1], rtol=1e-6)


def test_run_default_trace_is_info():
    _, trace = base.run(ALG, X0, _game(), jax.random.key(0), STEPS)
    assert set(trace) == {"oracle_calls"}
    np.testing.assert_array_equal(trace["oracle_calls"], np.ones(STEPS, np.int32))


def test_run_deterministic_oracle_matches_closed_form():
    game = _bilinear(jax.random.key(1), 2)
    _, xs = base.run(ALG, X0, game, jax.random.key(0), STEPS, trace_fn=_trace_x)
    M, c = np.asarray(game.M, np.float64), np.asarray(game.c, np.float64)
    x = np.ones(4)
    for t in range(STEPS):
        x = x - 0.1 * (M @ x + c)
        np.testing.assert_allclose(xs[t], x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None])
def test_num_steps_validated(bad):
    with pytest.raises(ValueError, match="num_steps"):
        base.run(ALG, X0, _game(), jax.random.key(0), bad)
    with pytest.raises(ValueError, match="num_steps"):
        base.run_seeds(ALG, X0, _game(), jax.random.split(jax.random.key(0), 2), bad)


def test_split_keys():
    keys = base.split_keys(jax.random.key(0), 3)
    assert keys.shape == (3,)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="num_seeds"):
            base.split_keys(jax.random.key(0), bad)


def test_run_seeds_equals_loop_and_does_not_recompile():
    oracle = _game(0.5)
    keys = base.split_keys(jax.random.key(1), 8)
    states, xs = base.run_seeds(ALG, X0, oracle, keys, STEPS, trace_fn=_trace_x)
    for i in range(3):
        s, x = _run(ALG, X0, oracle, keys[i], STEPS, trace_fn=_trace_x)
        np.testing.assert_allclose(xs[i], x, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(states[i], s, rtol=1e-5, atol=1e-6)
    assert not np.allclose(xs[0], xs[1]), "different seeds gave identical runs"
    other = base.split_keys(jax.random.key(2), 8)
    traces = ALG_TRACES[0]
    with _compilations() as compiled:
        base.run_seeds(ALG, X0, oracle, other, STEPS, trace_fn=_trace_x)
    assert ALG_TRACES[0] == traces, "run_seeds retraced on a second call with the same algorithm"
    assert not compiled, f"run_seeds recompiled on a second call: {compiled}"


def test_run_seeds_shard_equals_unsharded_and_does_not_recompile():
    n = jax.local_device_count()
    oracle = _game(0.5)
    keys = base.split_keys(jax.random.key(4), 2 * n)
    a = base.run_seeds(ALG, X0, oracle, keys, STEPS, trace_fn=_trace_x)
    b = base.run_seeds(ALG, X0, oracle, keys, STEPS, trace_fn=_trace_x, shard=True)
    jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6), a, b)
    if n > 1:
        assert len(b[1].sharding.device_set) == n, "shard=True did not spread the seeds"
    other = base.split_keys(jax.random.key(5), 2 * n)
    traces = ALG_TRACES[0]
    with _compilations() as compiled:
        base.run_seeds(ALG, X0, oracle, other, STEPS, trace_fn=_trace_x, shard=True)
    assert ALG_TRACES[0] == traces, "run_seeds(shard=True) retraced on a second call"
    assert not compiled, f"run_seeds(shard=True) recompiled on a second call: {compiled}"


def test_run_seeds_shard_rejects_indivisible_seed_count():
    n = jax.local_device_count()
    if n == 1:
        pytest.skip("every seed count divides one device")
    with pytest.raises(ValueError, match="multiple of the number of devices"):
        base.run_seeds(ALG, X0, _game(), base.split_keys(jax.random.key(0), n + 1), STEPS,
                       shard=True)


def test_run_seeds_batched_x0_and_oracles():
    """Different problem instances (and starting points) per seed."""
    n = 4
    games = jax.vmap(lambda k: _bilinear(k, 2))(base.split_keys(jax.random.key(7), n))
    x0s = jnp.arange(n * 4, dtype=jnp.float32).reshape(n, 4) / 10
    keys = base.split_keys(jax.random.key(8), n)
    _, xs = base.run_seeds(ALG, x0s, games, keys, STEPS, trace_fn=_trace_x,
                           batch_x0=True, batch_oracle=True)
    for i in range(n):
        game_i = jax.tree.map(lambda a, i=i: a[i], games)
        _, x = _run(ALG, x0s[i], game_i, keys[i], STEPS, trace_fn=_trace_x)
        np.testing.assert_allclose(xs[i], x, rtol=1e-5, atol=1e-6)


def test_from_transformation_sgd_matches_manual_loop():
    """x <- x + updates with updates = -lr * F(x; key_t)."""
    oracle = _game(0.3)
    key = jax.random.key(9)
    alg = base.from_transformation(optax.sgd(0.1))
    state, trace = base.run(alg, X0, oracle, key, STEPS, trace_fn=_trace_x)
    assert isinstance(state, base.TransformationState)
    _, update_key = jax.random.split(key)
    x = X0
    for t in range(STEPS):
        k = jax.random.fold_in(jax.random.fold_in(update_key, t), 0)
        x = x - 0.1 * oracle.operator(x, k)
        np.testing.assert_allclose(trace[t], x, rtol=1e-5, atol=1e-6)


def test_from_transformation_field_fn_counts_oracle_calls():
    """An extragradient written as a transformation: one extra oracle call via field_fn."""

    def extragradient(lr):
        def update(g, state, params=None, *, field_fn, **extra):
            half = jax.tree.map(lambda p, u: p - lr * u, params, g)
            g2 = field_fn(half, 0)
            return jax.tree.map(lambda u: -lr * u, g2), state
        return optax.GradientTransformationExtraArgs(lambda p: optax.EmptyState(), update)

    game = _bilinear(jax.random.key(1), 2)
    alg = base.from_transformation(extragradient(0.2))
    _, trace = base.run(alg, X0, game, jax.random.key(0), STEPS,
                        trace_fn=lambda s, st, o: (s.x, s.info["oracle_calls"]))
    np.testing.assert_array_equal(trace[1], np.full(STEPS, 2, np.int32))
    M, c = np.asarray(game.M, np.float64), np.asarray(game.c, np.float64)
    x = np.ones(4)
    for t in range(STEPS):
        half = x - 0.2 * (M @ x + c)
        x = x - 0.2 * (M @ half + c)
        np.testing.assert_allclose(trace[0][t], x, rtol=1e-5, atol=1e-6)


def test_from_transformation_field_and_quadratic_grad():
    quad = problems.random_quadratic(jax.random.key(0), 3, mu=0.5, L=1.0)
    state, _ = base.run(optax.sgd(0.5), jnp.zeros(3), quad, jax.random.key(0), 200, field="grad")
    np.testing.assert_allclose(state.x, quad.optimum, rtol=1e-4, atol=1e-4)


def test_as_algorithm_and_field_validation():
    assert base.as_algorithm(ALG) is ALG
    assert isinstance(base.as_algorithm(optax.adam(0.1)), base.OracleAlgorithm)
    with pytest.raises(TypeError, match="OracleAlgorithm"):
        base.as_algorithm(lambda x: x)
    for bad in ("", 3, None):
        with pytest.raises(ValueError, match="field"):
            base.from_transformation(optax.sgd(0.1), field=bad)


def test_run_accepts_pytree_iterates():
    quad = problems.random_quadratic(jax.random.key(0), 3)

    def grad(x, key):
        g = quad.grad(jnp.concatenate([x["a"], x["b"]]))
        return {"a": g[:1], "b": g[1:]}

    oracle = type("O", (), {"grad": staticmethod(grad)})()
    x0 = {"a": jnp.zeros(1), "b": jnp.zeros(2)}
    alg = base.from_transformation(optax.sgd(0.1), field="grad")
    init_key, update_key = jax.random.split(jax.random.key(0))
    state = alg.init(x0, init_key)
    _, state = jax.jit(lambda s, k: alg.update(s, oracle, k))(state, update_key)
    assert jax.tree.structure(state.x) == jax.tree.structure(x0)
