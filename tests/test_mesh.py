"""mesh: simulate (vmap with an axis name) == shard (shard_map) on 8 simulated CPU devices."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxopt_icml import base, mesh

N = jax.local_device_count()
needs_devices = pytest.mark.skipif(N < 2, reason="needs several (simulated) devices")


def _collective_step(x, w):
    """Every collective the conventions name, on a vector and a matrix leaf."""
    ring = [(i, (i + 1) % N) for i in range(N)]
    return {
        "psum": lax.psum(x, mesh.DEFAULT_AXIS),
        "pmean": lax.pmean(w, mesh.DEFAULT_AXIS),
        "all_gather": lax.all_gather(x, mesh.DEFAULT_AXIS),
        "ppermute": lax.ppermute(x, mesh.DEFAULT_AXIS, ring),
        "index": lax.axis_index(mesh.DEFAULT_AXIS),
        "local": jnp.tanh(x) * w.sum(),
    }


def _local_sgd_step(w, data):
    """A worker runs local steps from a constant-initialised carry, then averages."""
    def body(carry, _):
        v, acc = carry
        g = v - data
        return (v - 0.5 * g, acc + jnp.sum(g * g)), None

    (v, acc), _ = lax.scan(body, (w, jnp.zeros(())), None, length=3)
    return lax.pmean(v, mesh.DEFAULT_AXIS), acc


def _grad_through_collectives(w, x):
    def loss(w):
        return (jnp.sum((lax.pmean(w, mesh.DEFAULT_AXIS) * x) ** 2)
                + jnp.sum(lax.all_gather(w, mesh.DEFAULT_AXIS) ** 2) * jnp.mean(x)
                + lax.psum(jnp.vdot(w, x), mesh.DEFAULT_AXIS))
    return jax.grad(loss)(w)


def _grad_wrt_shared_constant(x):
    """Gradient w.r.t. a value created inside the step (the same on every worker): shard must
    transpose psum as vmap does (pmap semantics), not as a replicated value."""
    w = jnp.ones(3)
    return jax.grad(lambda w: lax.psum(jnp.vdot(w, x), mesh.DEFAULT_AXIS))(w)


def _inputs():
    x = jnp.cos(jnp.arange(N * 3, dtype=jnp.float32)).reshape(N, 3)
    w = jnp.sin(jnp.arange(N * 4, dtype=jnp.float32)).reshape(N, 2, 2)
    return x, w


def _assert_same(a, b):
    jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-6), a, b)
    jax.tree.map(lambda u, v: np.testing.assert_equal(u.dtype, v.dtype), a, b)


@needs_devices
def test_eight_simulated_devices():
    assert N == 8, "conftest should give 8 CPU devices"


@needs_devices
@pytest.mark.parametrize("step,make_args", [
    (_collective_step, _inputs),
    (_local_sgd_step, lambda: (_inputs()[0], 2 * _inputs()[0])),
    (_grad_through_collectives, lambda: (_inputs()[0], jnp.flip(_inputs()[0], 0))),
    (_grad_wrt_shared_constant, lambda: (_inputs()[0],)),
], ids=["collectives", "local_steps_scan", "grad_through_collectives", "grad_shared_constant"])
def test_simulate_equals_shard(step, make_args):
    args = make_args()
    a = mesh.simulate(step, N)(*args)
    b = mesh.shard(step)(*args)
    _assert_same(a, b)
    leaf = jax.tree.leaves(b)[0]
    assert len(leaf.sharding.device_set) == N


def test_simulate_collectives_values():
    x, w = _inputs()
    out = mesh.simulate(_collective_step, N)(x, w)
    np.testing.assert_allclose(out["psum"], np.broadcast_to(x.sum(0), x.shape), rtol=1e-6)
    np.testing.assert_allclose(out["pmean"], np.broadcast_to(w.mean(0), w.shape), rtol=1e-6)
    np.testing.assert_allclose(out["all_gather"][3], x)
    np.testing.assert_allclose(out["ppermute"], np.roll(x, 1, axis=0))
    np.testing.assert_array_equal(out["index"], np.arange(N))


def test_simulate_more_workers_than_devices_and_custom_axis():
    def step(x):
        return lax.psum(x, "clients")

    out = mesh.simulate(step, 3 * N, axis_name="clients")(jnp.ones((3 * N, 2)))
    np.testing.assert_allclose(out, np.full((3 * N, 2), 3 * N))


@needs_devices
def test_shard_custom_axis_and_explicit_mesh():
    m = mesh.make_mesh("clients")
    out = mesh.shard(lambda x: lax.psum(x, "clients"), m, axis_name="clients")(jnp.ones((N, 2)))
    np.testing.assert_allclose(out, np.full((N, 2), N))


def test_errors():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="num_workers"):
            mesh.simulate(lambda x: x, bad)
    for bad in ("", None, 3):
        with pytest.raises(ValueError, match="axis_name"):
            mesh.simulate(lambda x: x, 2, axis_name=bad)
        with pytest.raises(ValueError, match="axis_name"):
            mesh.make_mesh(bad)
    with pytest.raises(ValueError, match="not an axis"):
        mesh.shard(lambda x: x, mesh.make_mesh("workers"), axis_name="clients")
    with pytest.raises(ValueError, match="must equal the number of devices"):
        mesh.shard(lambda x: x)(jnp.ones((N + 1, 2)))


@needs_devices
def test_shard_seeds_replicated_and_sharded_arguments():
    def batched(x0, keys):
        return jax.vmap(lambda k: x0 + jax.random.normal(k, x0.shape))(keys)

    keys = jax.random.split(jax.random.key(0), 2 * N)
    x0 = jnp.arange(3.0)
    out = mesh.shard_seeds(batched, (None, 0))(x0, keys)
    np.testing.assert_allclose(out, batched(x0, keys), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="multiple of the number of devices"):
        mesh.shard_seeds(batched, (None, 0))(x0, keys[:N + 1])


class _Targets(NamedTuple):
    b: jax.Array  # (workers, d): worker i's target

    def grad(self, x, key):
        del key
        return x - self.b


def _averaging_worker(step_size=0.5):
    """Per-worker step: exact local gradient, ``pmean``, a step; reports the consensus error."""
    def init(x0, key):
        del key
        return {"x": x0, "local": jnp.zeros_like(x0)}

    def update(state, oracle, key):
        g = oracle.grad(state["x"], key)
        x = state["x"] - step_size * lax.pmean(g, mesh.DEFAULT_AXIS)
        spread = lax.pmax(jnp.max(jnp.abs(x - lax.pmean(x, mesh.DEFAULT_AXIS))), mesh.DEFAULT_AXIS)
        info = {"oracle_calls": jnp.int32(1), "bits_sent": jnp.float32(32 * x.size),
                "spread": spread, "worker": lax.axis_index(mesh.DEFAULT_AXIS)}
        return base.Step(x, info), {"x": x, "local": g}

    return base.OracleAlgorithm(init, update)


def test_across_workers_matches_closed_form():
    """Averaged gradient descent on 0.5||x - b_i||^2: x_t = mean(b) + (1 - eta)^t (x0 - mean(b))."""
    b = jnp.asarray(np.random.default_rng(0).normal(size=(N, 3)), jnp.float32)
    alg = mesh.across_workers(_averaging_worker(0.5), N)
    state, trace = base.run(alg, jnp.ones(3), _Targets(b), jax.random.key(0), 4,
                            trace_fn=lambda s, *_: s)
    mean_b = np.asarray(b).mean(0)
    expected = [mean_b + 0.5 ** (t + 1) * (1.0 - mean_b) for t in range(4)]
    np.testing.assert_allclose(trace.x, np.stack(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(trace.info["oracle_calls"], N)  # summed over workers
    np.testing.assert_allclose(trace.info["bits_sent"], 32 * 3 * N)
    np.testing.assert_array_equal(trace.info["worker"], 0)  # other entries: worker 0's value
    assert float(np.max(trace.info["spread"])) < 1e-6
    assert state["local"].shape == (N, 3)  # per-worker state keeps the worker axis


@needs_devices
def test_across_workers_shard_equals_simulate_and_vmaps_over_seeds():
    b = jnp.asarray(np.random.default_rng(1).normal(size=(N, 3)), jnp.float32)
    keys = jax.random.split(jax.random.key(0), 2)
    sim = base.run_seeds(mesh.across_workers(_averaging_worker(), N), jnp.ones(3), _Targets(b),
                         keys, 3)
    shd = base.run_seeds(mesh.across_workers(_averaging_worker(), N, mesh=mesh.make_mesh()),
                         jnp.ones(3), _Targets(b), keys, 3)
    _assert_same(sim, shd)


def test_across_workers_errors():
    alg = _averaging_worker()
    with pytest.raises(TypeError, match="OracleAlgorithm"):
        mesh.across_workers(lambda x: x, 2)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="num_workers"):
            mesh.across_workers(alg, bad)
    with pytest.raises(ValueError, match="mesh"):
        mesh.across_workers(alg, 2, mesh="devices")
    if N > 1:
        with pytest.raises(ValueError, match="must equal the mesh size"):
            mesh.across_workers(alg, N + 1, mesh=mesh.make_mesh())
        with pytest.raises(ValueError, match="not an axis"):
            mesh.across_workers(alg, N, mesh=mesh.make_mesh("clients"))
