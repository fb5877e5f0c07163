"""Time-varying digraphs (jaxopt_icml.problems.graphs): stochasticity of the pull and push
matrices on the same graph, connectivity windows, unbalancedness, the left Perron vector
against an eigendecomposition, both generator paths (JAX key under jit, NumPy generator), and
validation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_icml.problems.graphs import (
    complete_graph,
    connectivity_window,
    directed_ring,
    graph_sequence,
    is_column_stochastic,
    is_row_stochastic,
    is_strongly_connected,
    left_perron_vector,
    time_varying_digraphs,
)


def _check_sequence(g, n, period, extra, window=1):
    row, col = np.asarray(g.row), np.asarray(g.col)
    assert row.shape == col.shape == (period, n, n)
    assert is_row_stochastic(row) and is_column_stochastic(col)
    adj = g.adjacency()
    for k in range(period):
        support = adj[k] | np.eye(n, dtype=bool)
        # R and C live on the same graph (self-loops included), with uniform weights
        np.testing.assert_array_equal(row[k] != 0, support)
        np.testing.assert_array_equal(col[k] != 0, support)
        np.testing.assert_allclose(row[k][support], np.repeat(1 / support.sum(1), support.sum(1)),
                                   rtol=1e-6)
        ring_edges = n // window
        assert adj[k].sum() == ring_edges + extra
    assert connectivity_window(g) == window


@pytest.mark.parametrize("window", [1, 2])
def test_numpy_generator_sequences(window):
    n, period, extra = 8, 6, 4
    g = time_varying_digraphs(np.random.default_rng(0), n, period, extra_edges=extra,
                              window=window)
    _check_sequence(g, n, period, extra, window)
    if window > 1:
        assert not any(is_strongly_connected(a) for a in g.adjacency())


def test_jax_generator_jittable_and_vmappable():
    n, period, extra = 6, 4, 3
    make = jax.jit(jax.vmap(lambda k: time_varying_digraphs(k, n, period, extra_edges=extra)))
    gs = make(jax.random.split(jax.random.key(0), 2))
    for s in range(2):
        g = jax.tree.map(lambda a, s=s: a[s], gs)
        _check_sequence(g, n, period, extra)
    assert not np.array_equal(np.asarray(gs.row[0]), np.asarray(gs.row[1]))


def test_unbalanced_and_perron_vector():
    """Random extra edges make in- and out-degrees differ, so R is not doubly stochastic and
    its left Perron vector is not uniform; power iteration matches the eigenvector of R^T."""
    with jax.enable_x64(True):
        g = time_varying_digraphs(np.random.default_rng(1), 8, 1, extra_edges=4,
                                  dtype=jnp.float64)
    r = np.asarray(g.row[0])
    assert r.dtype == np.float64
    assert not is_column_stochastic(r)
    assert not is_row_stochastic(np.asarray(g.col[0]))
    pi = left_perron_vector(r)
    vals, vecs = np.linalg.eig(r.T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    np.testing.assert_allclose(pi, v / v.sum(), atol=1e-10)
    np.testing.assert_allclose(pi @ r, pi, atol=1e-12)
    assert np.ptp(pi) > 1e-3


def test_graph_sequence_closed_forms():
    ring = directed_ring(4)
    assert ring[1, 0] and ring[0, 3] and not ring[0, 1]
    assert is_strongly_connected(ring) and not is_strongly_connected(ring & ~np.eye(4, k=-1,
                                                                                   dtype=bool))
    g = graph_sequence(ring)
    # every node has in- and out-degree 1: R = C = (I + P) / 2
    expect = (np.eye(4) + ring) / 2
    np.testing.assert_allclose(np.asarray(g.row[0]), expect)
    np.testing.assert_allclose(np.asarray(g.col[0]), expect)
    # traced adjacency gives the same weights as concrete NumPy input
    traced = jax.jit(graph_sequence)(jnp.asarray(ring))
    np.testing.assert_allclose(np.asarray(traced.row), np.asarray(g.row), rtol=1e-7)
    c = complete_graph(5)
    np.testing.assert_allclose(np.asarray(c.row[0]), np.full((5, 5), 0.2))
    r_t, c_t = graph_sequence(np.stack([ring, ring.T])).at(jnp.int32(3))
    np.testing.assert_allclose(np.asarray(r_t), (np.eye(4) + ring.T) / 2)
    assert connectivity_window(np.stack([ring & ~np.eye(4, k=-1, dtype=bool)] * 2)) is None


def test_validation():
    with pytest.raises(ValueError, match="num_nodes"):
        time_varying_digraphs(np.random.default_rng(0), 1, 2)
    with pytest.raises(ValueError, match="period"):
        time_varying_digraphs(np.random.default_rng(0), 4, 3, window=2)
    with pytest.raises(ValueError, match="window"):
        time_varying_digraphs(np.random.default_rng(0), 4, 10, window=5)
    with pytest.raises(ValueError, match="extra_edges"):
        time_varying_digraphs(np.random.default_rng(0), 4, 2, extra_edges=9)
    with pytest.raises(ValueError, match="adjacency"):
        graph_sequence(np.zeros((3, 4)))
