"""Push-Pull and FAB (jaxopt_icml.distributed.push_pull_bilevel): contract cases, a NumPy
re-implementation of the AB recursion, closed-form limits (the sum's minimiser for Push-Pull,
the left-Perron-weighted one for row-only tracking, the penalised bilevel solution for FAB),
simulate == shard, bit accounting, errors and the claims at quick size."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml import base
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml.distributed.push_pull_bilevel import (
    BilevelPoint,
    distributed_gradient_descent,
    fab,
    push_pull,
)
from jaxopt_icml.problems.graphs import (
    GraphSequence,
    graph_sequence,
    left_perron_vector,
    time_varying_digraphs,
)
from jaxopt_icml.testing import AlgorithmCase

N = jax.local_device_count()


def _graph(n=N, period=3, seed=0, dtype=jnp.float32):
    return time_varying_digraphs(np.random.default_rng(seed), n, period,
                                 extra_edges=min(4, n * (n - 2)), dtype=dtype)


class TreeQuadratics(NamedTuple):
    """Agent ``i``: ``f_i(x) = sum_leaves (a_i/2) ||x - b_i||^2`` on a pytree ``x``."""

    a: jax.Array
    b: dict

    def grad(self, x, key):
        del key
        return jax.tree.map(lambda v, t: (self.a.astype(v.dtype) * (v - t)).astype(v.dtype),
                            x, self.b)


class QuadraticBilevel(NamedTuple):
    """Agent ``i``: ``g_i(x, y) = (h_i/2) ||y - M_i x - c_i||^2``,
    ``f_i(x, y) = ||y - t_i||^2 / 2 + (rho/2) ||x||^2``."""

    h: jax.Array
    m: jax.Array
    c: jax.Array
    t: jax.Array
    rho: jax.Array

    def g_grads(self, x, y, key):
        # elementwise products and sums, no dot kernels: vmap and shard_map then round alike
        del key
        r = y - jnp.sum(self.m * x[None, :], -1) - self.c
        return -self.h * jnp.sum(self.m * r[:, None], 0), self.h * r

    def f_grads(self, x, y, key):
        del key
        return self.rho * x, y - self.t


def _tree_problem(key, dtype):
    del key
    rng = np.random.default_rng(1)
    a = jnp.asarray(rng.uniform(0.5, 3.0, (N,)), dtype)
    b = {"w": jnp.asarray(rng.normal(size=(N, 3)), dtype),
         "m": jnp.asarray(rng.normal(size=(N, 2, 2)), dtype),
         "s": jnp.asarray(rng.normal(size=(N,)), dtype)}
    x0 = {"w": jnp.zeros((3,), dtype), "m": jnp.ones((2, 2), dtype), "s": jnp.zeros((), dtype)}
    return x0, TreeQuadratics(a, b)


def _bilevel_data(dtype=jnp.float32, n=N, dx=2, dy=3, rho=0.5):
    rng = np.random.default_rng(2)
    arr = lambda v: jnp.asarray(v, dtype)
    return QuadraticBilevel(arr(rng.uniform(0.5, 2.0, (n,))), arr(rng.normal(size=(n, dy, dx))),
                            arr(rng.normal(size=(n, dy))), arr(rng.normal(size=(n, dy))),
                            arr(np.full((n,), rho)))


def _bilevel_problem(key, dtype):
    del key
    data = _bilevel_data(dtype)
    return BilevelPoint(jnp.zeros((2,), dtype), jnp.zeros((3,), dtype)), data


GRAPH = _graph()
# FAB's case uses a small penalty: h^x = gamma (grad_x g(x, y) - grad_x g(x, z)) cancels two
# O(1) terms, so float32 rounding differences between jit and eager (FMA contraction) grow by
# gamma; at gamma = 10 they reach 3e-6, beyond the matrix's float32 tolerance.
CONTRACT_CASES = (
    AlgorithmCase("push_pull", push_pull,
                  {"learning_rate": 0.1, "graph": GRAPH, "num_workers": N}, _tree_problem,
                  distributed=True,
                  invalid=(({"learning_rate": 0.0}, "learning_rate"),
                           ({"tracker_mixing": "pull"}, "tracker_mixing"),
                           ({"num_workers": 1}, "num_workers"),
                           ({"graph": _graph(n=4)}, "graph"),
                           ({"graph": np.eye(N)}, "graph"))),
    AlgorithmCase("push_pull_dgd", distributed_gradient_descent,
                  {"learning_rate": 0.1, "graph": GRAPH, "num_workers": N}, _tree_problem,
                  distributed=True, invalid=(({"learning_rate": -1.0}, "learning_rate"),)),
    AlgorithmCase("push_pull_fab", fab,
                  {"alpha": 0.05, "beta_y": 0.2, "beta_z": 0.2, "penalty": 2.0, "graph": GRAPH,
                   "num_workers": N}, _bilevel_problem, distributed=True,
                  invalid=(({"alpha": 0.0}, "alpha"), ({"beta_y": -0.1}, "beta_y"),
                           ({"beta_z": float("nan")}, "beta_z"), ({"penalty": 0.0}, "penalty"),
                           ({"tracker_mixing": 1}, "tracker_mixing"))),
)


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def _quadratics(n, d, seed=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 3.0, (n,)), rng.normal(size=(n, d))


class VecQuadratics(NamedTuple):
    a: jax.Array
    b: jax.Array

    def grad(self, x, key):
        del key
        return self.a * (x - self.b)


# --------------------------------------------------------------------------- math


def test_push_pull_equals_numpy_ab_recursion(x64):
    """X_{k+1} = R_k (X_k - alpha Y_k), Y_{k+1} = C_k Y_k + grad(X_{k+1}) - grad(X_k),
    Y_0 = grad(X_0), re-implemented in NumPy with the same matrices (period 3, 7 steps)."""
    n, d, alpha, steps = N, 4, 0.1, 7
    a, b = _quadratics(n, d)
    graph = _graph(n, period=3, seed=5, dtype=jnp.float64)
    R, C = np.asarray(graph.row), np.asarray(graph.col)
    x0 = np.linspace(-1, 1, d)
    grad = lambda X: a[:, None] * (X - b)
    X = np.tile(x0, (n, 1))
    Y = grad(X)
    trackers, iterates = [], []
    for k in range(steps):
        trackers.append(Y)
        iterates.append(X)
        Xn = R[k % 3] @ (X - alpha * Y)
        Y = C[k % 3] @ Y + grad(Xn) - grad(X)
        X = Xn
    alg = push_pull(alpha, graph=graph, num_workers=n)
    oracle = VecQuadratics(jnp.asarray(a)[:, None], jnp.asarray(b))
    state, trace = base.run(alg, jnp.asarray(x0), oracle, jax.random.key(0), steps)
    np.testing.assert_allclose(np.asarray(state.x), X, rtol=0, atol=1e-12)
    # each update refreshes the tracker before its step: the state holds Y_{steps-1}
    np.testing.assert_allclose(np.asarray(state.tracker), trackers[-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(state.grad), grad(iterates[-1]), rtol=0, atol=1e-12)
    dev = np.linalg.norm(X - X.mean(0), axis=1).max()
    np.testing.assert_allclose(float(trace["consensus_error"][-1]), dev, rtol=1e-9, atol=1e-15)


def test_push_pull_exact_and_row_tracking_perron_biased(x64):
    """A single unbalanced digraph: Push-Pull -> argmin of the sum (closed form); row-only
    tracking -> the left-Perron-weighted minimiser sum pi_i a_i b_i / sum pi_i a_i."""
    n, d = N, 3
    a, b = _quadratics(n, d, seed=7)
    adj = time_varying_digraphs(np.random.default_rng(8), n, 1, extra_edges=4)
    adj = np.asarray(adj.row[0]) != 0
    graph = graph_sequence(adj, dtype=jnp.float64)
    oracle = VecQuadratics(jnp.asarray(a)[:, None], jnp.asarray(b))
    x_star = (a[:, None] * b).sum(0) / a.sum()
    pi = left_perron_vector(np.asarray(graph.row[0]))
    x_perron = (pi[:, None] * a[:, None] * b).sum(0) / (pi * a).sum()
    assert np.linalg.norm(x_perron - x_star) > 0.05  # the graph is unbalanced enough
    run = jax.jit(lambda alg: base.run(alg, jnp.zeros(d), oracle, jax.random.key(0), 1500),
                  static_argnums=0)
    pp, _ = run(push_pull(0.1, graph=graph, num_workers=n))
    row, _ = run(push_pull(0.1, graph=graph, num_workers=n, tracker_mixing="row"))
    np.testing.assert_allclose(np.asarray(pp.x), np.tile(x_star, (n, 1)), atol=1e-9)
    np.testing.assert_allclose(np.asarray(row.x), np.tile(x_perron, (n, 1)), atol=1e-9)


def _penalised_solution(data: QuadraticBilevel, gamma):
    """Closed forms: x* of the bilevel problem and x_gamma of its value-function penalty.

    y*(x) = Mbar x + cbar (h-weighted means), g(x, y) - min g = (hbar/2)||y - y*(x)||^2, so the
    penalty reduces to (kappa/2)||Mbar x + cbar - tbar||^2 + (rho/2)||x||^2 with
    kappa = gamma hbar / (1 + gamma hbar) (kappa = 1: the bilevel problem)."""
    h, m, c, t = (np.asarray(v, np.float64) for v in (data.h, data.m, data.c, data.t))
    rho = float(data.rho[0])
    mbar = np.einsum("i,ijk->jk", h, m) / h.sum()
    cbar = (h[:, None] * c).sum(0) / h.sum()
    tbar = t.mean(0)
    hbar = h.mean()

    def solve(kappa):
        return np.linalg.solve(kappa * mbar.T @ mbar + rho * np.eye(m.shape[-1]),
                               kappa * mbar.T @ (tbar - cbar))

    return solve(1.0), solve(gamma * hbar / (1 + gamma * hbar))


def test_fab_converges_to_the_penalised_bilevel_solution(x64):
    """FAB on a time-varying unbalanced digraph reaches the closed-form penalty solution
    x_gamma at every agent, and |x_gamma - x*| shrinks like 1/gamma."""
    data = _bilevel_data(jnp.float64)
    graph = _graph(N, period=4, seed=9, dtype=jnp.float64)
    x0 = BilevelPoint(jnp.zeros(2), jnp.zeros(3))
    gammas = (10.0, 100.0)

    def solve(gamma):
        alg = fab(0.1, 0.3, 0.3, gamma, graph=graph, num_workers=N)
        return base.run(alg, x0, data, jax.random.key(0), 3000)

    states, traces = jax.jit(jax.vmap(solve))(jnp.asarray(gammas))
    gaps = []
    for j, gamma in enumerate(gammas):
        x_star, x_gamma = _penalised_solution(data, gamma)
        np.testing.assert_allclose(np.asarray(states.point[0][j]), np.tile(x_gamma, (N, 1)),
                                   atol=1e-7)
        assert float(traces["consensus_error"][j, -1]) < 1e-7
        gaps.append(np.linalg.norm(x_gamma - x_star))
    assert gaps[1] < gaps[0] / 5  # O(1/gamma): a 10x penalty cuts the bias ~10x


def _jit_run(alg, num_steps):
    return jax.jit(lambda x0, oracle: base.run(alg, x0, oracle, jax.random.key(0), num_steps))


def test_simulate_equals_shard_map():
    """The same FAB run (pull and push mixing) with the agents vmapped on one device and one
    per device (shard_map); the property matrix checks the same for every contract case."""
    if N < 2:
        pytest.skip("needs several (simulated) devices")
    mesh = mesh_lib.make_mesh()
    bx0, boracle = _bilevel_problem(None, jnp.float32)
    for make, kw, start, orc in ((fab, {"penalty": 20.0}, bx0, boracle),):
        runs = [_jit_run(make(**kw, graph=GRAPH, num_workers=N, mesh=m), 6)(start, orc)
                for m in (None, mesh)]
        for u, v in zip(jax.tree.leaves(runs[0]), jax.tree.leaves(runs[1]), strict=True):
            np.testing.assert_allclose(np.asarray(u, np.float64), np.asarray(v, np.float64),
                                       rtol=1e-5, atol=1e-5)


def test_bits_and_oracle_calls():
    """bits = 32 x (out-neighbours) x message size: the pull message every step, the push
    message from the second update on; FAB sends (x, y, z) and its trackers, 3 calls/agent."""
    x0, oracle = _tree_problem(None, jnp.float32)
    size = 3 + 4 + 1
    edges = [int((np.asarray(GRAPH.row[k]) != 0).sum() - N) for k in range(3)]
    _, tr = _jit_run(push_pull(0.1, graph=GRAPH, num_workers=N), 4)(x0, oracle)
    expect = [32 * size * (edges[k % 3] + (edges[(k - 1) % 3] if k else 0)) for k in range(4)]
    np.testing.assert_array_equal(np.asarray(tr["bits_sent"]), expect)
    np.testing.assert_array_equal(np.asarray(tr["oracle_calls"]), N)
    # FAB, with the penalty as an optax schedule of the count (an increasing gamma_k)
    bx0, boracle = _bilevel_problem(None, jnp.float32)
    sched = optax.linear_schedule(1.0, 10.0, 9)
    _, tr = _jit_run(fab(penalty=sched, graph=GRAPH, num_workers=N), 4)(bx0, boracle)
    np.testing.assert_array_equal(np.asarray(tr["oracle_calls"]), 3 * N)
    bsize = 2 + 3 + 3
    assert float(tr["bits_sent"][1]) == 32 * bsize * (edges[1] + edges[0])
    np.testing.assert_allclose(np.asarray(tr["penalty"]), [1.0, 2.0, 3.0, 4.0], rtol=1e-6)


def test_bits_count_off_diagonal_neighbours_only():
    """A directed ring without self-weights (zero diagonal, doubly stochastic): every agent has
    exactly one out-neighbour, so each step's pull message goes over N edges."""
    ring = np.roll(np.eye(N, dtype=np.float32), 1, axis=1)
    graph = GraphSequence(row=jnp.asarray(ring[None]), col=jnp.asarray(ring[None]))
    x0, oracle = _tree_problem(None, jnp.float32)
    _, tr = _jit_run(push_pull(0.1, graph=graph, num_workers=N), 2)(x0, oracle)
    size = 3 + 4 + 1
    np.testing.assert_array_equal(np.asarray(tr["bits_sent"]),
                                  [32 * size * N, 2 * 32 * size * N])


def test_errors():
    bad = GRAPH.replace(col=GRAPH.row)  # row-stochastic only: not a valid push matrix
    with pytest.raises(ValueError, match="graph.col"):
        push_pull(0.1, graph=bad, num_workers=N)
    with pytest.raises(ValueError, match="graph"):
        fab(graph=_graph(n=3), num_workers=N)
    with pytest.raises(ValueError, match="graph"):
        push_pull(0.1, graph=GraphSequence(row=GRAPH.row * 2, col=GRAPH.col), num_workers=N)
    with pytest.raises(TypeError, match="BilevelPoint"):
        fab(graph=GRAPH, num_workers=N).init((jnp.zeros(2), jnp.zeros(3)), jax.random.key(0))


class _LongGrad(NamedTuple):
    """Agent gradients one entry longer than the variable ``"w"`` (and, for FAB, ``y``)."""

    a: jax.Array

    def grad(self, x, key):
        del key
        return {**x, "w": self.a * jnp.ones((4,), x["w"].dtype)}

    def f_grads(self, x, y, key):
        del key
        return jnp.zeros_like(x), self.a * jnp.ones((y.shape[0] + 1,), y.dtype)

    def g_grads(self, x, y, key):
        del key
        return jnp.zeros_like(x), jnp.zeros_like(y)


@pytest.mark.parametrize("name", ["push_pull", "distributed_gradient_descent", "fab"])
def test_gradient_of_another_shape_raises_value_error(name):
    """An agent's gradient whose leaf shape differs from its variable's raises a ValueError
    naming the leaf, where a broadcasting TypeError leaked from the tracked step."""
    graph, key, orc = _graph(), jax.random.key(0), _LongGrad(jnp.ones((N,)))
    if name == "fab":
        alg = fab(0.1, 0.1, 0.1, 1.0, graph=graph, num_workers=N)
        x0 = BilevelPoint(jnp.zeros(2), jnp.zeros(3))
        match = r"fab: oracle\.f_grads\(x, y\)\[1\] and y disagree at leaf .*\(4,\) vs \(3,\)"
    else:
        make = push_pull if name == "push_pull" else distributed_gradient_descent
        alg = make(0.1, graph=graph, num_workers=N)
        x0 = {"w": jnp.zeros(3), "s": jnp.zeros(())}
        match = rf"{name}: oracle\.grad\(x\) and x disagree at leaf \['w'\]: shape \(4,\) vs \(3,\)"
    with pytest.raises(ValueError, match=match):
        alg.update(alg.init(x0, key), orc, key)


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    runner.check_quick_claims(experiment, quick_results)


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (single_level, bilevel) pass the readability check: titles, axis
    labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick
    labels that do not overlap and no series hidden under another drawn in the same style."""
    runner.check_quick_figures(experiment, quick_results)
