r"""Baselines for single-player IREFGs (``max_K u`` over behavioural strategies).

* :func:`vertex_enumeration`: the best pure strategy. Exact for a non-absent-minded player,
  whose utility is multilinear in the per-information-set distributions (each appears at most
  once per path), hence maximised at a vertex of ``K``; a lower bound otherwise.
* :func:`grid_search`: ``u`` on a regular grid of ``K`` (a lower bound that approaches the
  maximum as the grid is refined, for any game).
* :func:`projected_gradient_ascent`: a local method, ``x <- Pi_K(x + step(grad u(x)))`` with an
  optax optimiser, as an ``OracleAlgorithm`` (the oracle is the :class:`~irefg.Game`); vmap it
  over random starts (:func:`random_strategy`) for multi-start.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_float, check_static_int, compute_dtype
from jaxopt_icml.minimax import irefg

__all__ = [
    "vertex_enumeration",
    "grid_search",
    "projected_gradient_ascent",
    "random_strategy",
    "pure_strategies",
    "PGAState",
]


@functools.lru_cache(maxsize=64)
def _pure(infosets: tuple) -> np.ndarray:
    rows = []
    for choice in itertools.product(*(range(k) for k in infosets)):
        x = []
        for k, a in zip(infosets, choice, strict=True):
            x += [float(a == i) for i in range(k - 1)]  # the last action: all free vars 0
        rows.append(x)
    return np.array(rows).reshape(len(rows), -1)


def pure_strategies(infosets) -> np.ndarray:
    """All ``prod_I k_I`` pure strategies in free variables, ``(count, n)``."""
    return _pure(tuple(int(k) for k in infosets))


def vertex_enumeration(game: irefg.Game, *, player: int = 0):
    """``(max over pure strategies of u, the maximising free vector)``; the exact maximum for a
    non-absent-minded player (module docstring). Jittable and vmappable over games."""
    P = jnp.asarray(pure_strategies(game.infosets), game.payoffs.dtype)
    vals = jax.vmap(lambda x: game.utility(x, player))(P)
    i = jnp.argmax(vals)
    return vals[i], P[i]


@functools.lru_cache(maxsize=16)
def _grid(infosets: tuple, num_points: int) -> np.ndarray:
    ticks = np.linspace(0.0, 1.0, num_points)
    per = []
    for k in infosets:
        pts = [p for p in itertools.product(range(num_points), repeat=k - 1)
               if sum(p) <= num_points - 1]
        per.append(ticks[np.array(pts, dtype=np.int64)].reshape(len(pts), k - 1))
    out = [np.concatenate(c) for c in itertools.product(*per)]
    return np.array(out)


def grid_search(game: irefg.Game, num_points: int = 101, *, player: int = 0):
    """``(max of u on the grid, its point)``; the grid has ``num_points`` ticks in ``[0, 1]`` per
    free variable, restricted to ``K`` (``sum <= 1`` per information set). For small ``n``."""
    num_points = check_static_int("num_points", num_points, low=2)
    size = 1
    for k in game.infosets:
        size *= num_points ** (k - 1)
    if size > 5_000_000:
        raise ValueError(f"num_points={num_points} gives ~{size} grid points; use fewer")
    G = jnp.asarray(_grid(game.infosets, num_points), game.payoffs.dtype)
    vals = jax.vmap(lambda x: game.utility(x, player))(G)
    i = jnp.argmax(vals)
    return vals[i], G[i]


def random_strategy(game: irefg.Game, key, dtype=jnp.float32) -> jax.Array:
    """A uniformly random behavioural strategy (flat Dirichlet per information set), as free
    variables."""
    keys = jax.random.split(key, len(game.infosets))
    parts = [jax.random.dirichlet(k_, jnp.ones(k, dtype))[:-1]
             for k_, k in zip(keys, game.infosets, strict=True)]
    return jnp.concatenate(parts).astype(dtype)


class PGAState(NamedTuple):
    """State of :func:`projected_gradient_ascent`: the iterate ``x`` and the optax state."""

    x: jax.Array
    opt_state: Any


def projected_gradient_ascent(learning_rate: float = 0.1, *,
                              optimizer: optax.GradientTransformation | None = None,
                              player: int = 0) -> base.OracleAlgorithm:
    """Projected gradient ascent on ``u`` over ``K``: ``x <- Pi_K(x + d)`` with
    ``d = optimizer.update(-grad u(x))`` (default ``optax.sgd(learning_rate)``, i.e.
    ``d = lr * grad u``).

    Args:
      learning_rate: ``> 0``, used by the default optimiser.
      optimizer: any optax transformation (minimising ``-u``), e.g. ``optax.adam(1e-2)``.
      player: whose utility (static).

    Returns:
      ``OracleAlgorithm``; ``init(x0, key)`` with ``x0`` free variables in ``K``;
      ``update(state, game, key)``; ``info``: ``oracle_calls`` (1) and ``value`` (``u`` before
      the step).

    Example:
      >>> import jax
      >>> from jaxopt_icml import base
      >>> from jaxopt_icml.minimax import irefg
      >>> g = irefg.absent_minded_driver()
      >>> s, _ = base.run(projected_gradient_ascent(0.1), jax.numpy.array([0.1]), g,
      ...                 jax.random.PRNGKey(0), 100)

    Paper mapping: the spec's local baseline (multi-start projected gradient ascent); it finds
    a local maximum only, which is what the SOS hierarchy improves on.
    """
    check_float("learning_rate", learning_rate, allow_schedule=False)
    tx = optax.sgd(learning_rate) if optimizer is None else optimizer

    def init(x0, key):
        del key
        return PGAState(x0, tx.init(x0))

    def update(state, game, key):
        del key
        cd = compute_dtype(state.x.dtype)
        x = state.x.astype(cd)
        val, g = jax.value_and_grad(game.utility)(x, player)
        d, opt_state = tx.update(-g, state.opt_state, x)
        new = irefg.project_strategy(game.infosets, x + d).astype(state.x.dtype)
        info = {"oracle_calls": jnp.asarray(1, jnp.int32), "value": val}
        return base.Step(new, info), PGAState(new, opt_state)

    return base.OracleAlgorithm(init, update)
