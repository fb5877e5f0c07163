"""The protocol beside optax: ``OracleAlgorithm``, ``Step``, ``run`` and ``run_seeds``.

Algorithms that consume gradients of parameters are ``optax.GradientTransformation``s. Everything
else (variational-inequality solvers, bandits, samplers, zeroth-order loops ...) is an
``OracleAlgorithm``: a pure pair

    init(x0, key) -> state
    update(state, oracle, key) -> (Step(x, info), state)

The key is passed in, never stored, so vmapping over seeds is a plain ``jax.vmap`` over keys. The
oracle is a data pytree with methods (``operator(z, key)``, ``value_and_grad(x, key)`` ...), so
vmapping over problem instances is a ``jax.vmap`` over oracles.

``run`` is one ``lax.scan``; ``run_seeds`` vmaps it over keys (and optionally oracles) and can shard
the seed axis over every local device. A ``GradientTransformation`` whose "gradient" is an oracle
value (single-call optimistic methods, extragradient with an extra ``field_fn`` call ...) runs
through the same loop via :func:`from_transformation`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml import sharding

PyTree = Any

__all__ = [
    "PyTree",
    "Step",
    "OracleAlgorithm",
    "TransformationState",
    "from_transformation",
    "as_algorithm",
    "run",
    "run_seeds",
    "split_keys",
]


class Step(NamedTuple):
    """What one update reports.

    Attributes:
      x: the point the theory is about (last iterate, average, played action ...).
      info: scalar diagnostics. Always holds ``"oracle_calls"`` (calls made by this update) and
        ``"bits_sent"`` for methods that communicate. Failures are integer codes here, never
        exceptions, so vmapped runs continue.
    """

    x: PyTree
    info: dict


class OracleAlgorithm(NamedTuple):
    """A pure ``(init, update)`` pair driven by an oracle.

    Attributes:
      init: ``init(x0, key) -> state``.
      update: ``update(state, oracle, key) -> (Step, state)``.
    """

    init: Callable[[PyTree, jax.Array], PyTree]
    update: Callable[[PyTree, PyTree, jax.Array], tuple[Step, PyTree]]


class TransformationState(NamedTuple):
    """State of a ``GradientTransformation`` run as an ``OracleAlgorithm``.

    Attributes:
      x: current parameters (the iterate).
      inner: the transformation's own state.
    """

    x: PyTree
    inner: PyTree


def from_transformation(
    transformation: optax.GradientTransformation,
    *,
    field: str = "operator",
) -> OracleAlgorithm:
    """Runs a ``GradientTransformation`` as an ``OracleAlgorithm``.

    Each update evaluates ``g = getattr(oracle, field)(x, key)`` once, passes it as ``updates``
    together with ``params=x`` and a keyword ``field_fn(z, i)`` that evaluates the same oracle at
    another point with an independent key (for methods that need a second call, such as
    extragradient), and applies the result: ``x <- x + updates``.

    ``info["oracle_calls"]`` counts the oracle evaluations in the traced update: one for ``g``
    plus one per ``field_fn`` call. Transformations that call ``field_fn`` inside ``lax.cond`` or a
    loop with a traced trip count are counted once per traced call; say so where it matters.

    Args:
      transformation: any ``optax.GradientTransformation``; plain ones are wrapped with
        ``optax.with_extra_args_support`` so the ``field_fn`` keyword is ignored.
      field: name of the oracle method that returns the "gradient" (``"operator"`` for
        variational inequalities, ``"grad"`` for minimisation). Static.

    Returns:
      An ``OracleAlgorithm`` whose state is ``TransformationState(x, inner)``.
    """
    if not isinstance(field, str) or not field:
        raise ValueError(f"field must be a non-empty oracle method name, got {field!r}")
    tx = optax.with_extra_args_support(transformation)

    def init(x0, key):
        del key
        return TransformationState(x=x0, inner=tx.init(x0))

    def update(state, oracle, key):
        method = getattr(oracle, field)
        calls = [1]

        def field_fn(z, i=0):
            calls[0] += 1
            return method(z, jax.random.fold_in(key, i + 1))

        g = method(state.x, jax.random.fold_in(key, 0))
        updates, inner = tx.update(g, state.inner, state.x, field_fn=field_fn)
        x = optax.apply_updates(state.x, updates)
        info = {"oracle_calls": jnp.asarray(calls[0], jnp.int32)}
        return Step(x=x, info=info), TransformationState(x=x, inner=inner)

    return OracleAlgorithm(init=init, update=update)


def as_algorithm(alg, *, field: str = "operator") -> OracleAlgorithm:
    """Returns ``alg`` if it is an ``OracleAlgorithm``, else adapts a ``GradientTransformation``."""
    if isinstance(alg, OracleAlgorithm):
        return alg
    if isinstance(alg, optax.GradientTransformation | optax.GradientTransformationExtraArgs):
        return from_transformation(alg, field=field)
    raise TypeError(
        "alg must be an OracleAlgorithm or an optax.GradientTransformation, "
        f"got {type(alg).__name__}"
    )


def _default_trace(step: Step, state, oracle) -> dict:
    del state, oracle
    return step.info


def _check_num_steps(num_steps) -> int:
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
    return num_steps


def run(
    alg,
    x0: PyTree,
    oracle: PyTree,
    key: jax.Array,
    num_steps: int,
    *,
    trace_fn: Callable[[Step, PyTree, PyTree], PyTree] | None = None,
    field: str = "operator",
):
    """Runs ``num_steps`` updates as one ``lax.scan``.

    Args:
      alg: an ``OracleAlgorithm`` or an ``optax.GradientTransformation`` (see
        :func:`from_transformation`).
      x0: initial point (any pytree).
      oracle: the problem, a pytree with the methods ``alg`` calls.
      key: a PRNG key; step ``t`` uses ``fold_in(key_update, t)``, so runs are reproducible.
      num_steps: number of updates (static, positive).
      trace_fn: ``trace_fn(step, state, oracle) -> pytree`` recorded at every step (default:
        ``step.info``). Evaluate exact diagnostics here (for example the true operator norm),
        never through the noisy oracle.
      field: oracle method for an adapted ``GradientTransformation``.

    Returns:
      ``(final_state, trace)`` where every leaf of ``trace`` has a leading axis of length
      ``num_steps``.
    """
    num_steps = _check_num_steps(num_steps)
    alg = as_algorithm(alg, field=field)
    trace_fn = _default_trace if trace_fn is None else trace_fn
    init_key, update_key = jax.random.split(key)
    state = alg.init(x0, init_key)

    def body(state, t):
        step, state = alg.update(state, oracle, jax.random.fold_in(update_key, t))
        return state, trace_fn(step, state, oracle)

    return jax.lax.scan(body, state, jnp.arange(num_steps, dtype=jnp.int32))


def split_keys(key: jax.Array, num_seeds: int) -> jax.Array:
    """``num_seeds`` independent keys from one key."""
    if isinstance(num_seeds, bool) or not isinstance(num_seeds, int) or num_seeds < 1:
        raise ValueError(f"num_seeds must be a positive int, got {num_seeds!r}")
    return jax.random.split(key, num_seeds)


def run_seeds(
    alg,
    x0: PyTree,
    oracle: PyTree,
    keys: jax.Array,
    num_steps: int,
    *,
    trace_fn: Callable | None = None,
    field: str = "operator",
    batch_x0: bool = False,
    batch_oracle: bool = False,
    shard: bool = False,
):
    """Vmaps :func:`run` over a batch of keys (one per seed), as one compiled program.

    Args:
      alg, num_steps, trace_fn, field: as in :func:`run`.
      x0: initial point, shared by all seeds unless ``batch_x0`` (then leading axis = seeds).
      oracle: problem, shared unless ``batch_oracle`` (then leading axis = seeds), so many
        problem instances run at once.
      keys: array of keys with leading axis = number of seeds.
      shard: place the seed axis on a 1-D mesh over all local devices (``jax.shard_map``).
        The number of seeds must then be a multiple of the device count.

    Returns:
      ``(final_states, traces)`` with a leading seed axis on every leaf.
    """
    num_steps = _check_num_steps(num_steps)
    if shard:
        sharded = _sharded_runner(alg, num_steps, trace_fn, field, batch_x0, batch_oracle,
                                  tuple(jax.local_devices()))
        return sharded(x0, oracle, keys)
    return _run_batched_jit(
        alg, x0, oracle, keys, num_steps=num_steps, trace_fn=trace_fn, field=field,
        batch_x0=batch_x0, batch_oracle=batch_oracle,
    )


@functools.lru_cache(maxsize=64)
def _sharded_runner(alg, num_steps, trace_fn, field, batch_x0, batch_oracle, devices):
    """The seed-sharded program, built once per static configuration (no recompilation when
    ``run_seeds(..., shard=True)`` is called again with the same objects)."""
    del devices  # part of the cache key only: the mesh spans the current local devices
    batched = functools.partial(
        _run_batched, alg, num_steps=num_steps, trace_fn=trace_fn, field=field,
        batch_x0=batch_x0, batch_oracle=batch_oracle,
    )
    in_axes = (0 if batch_x0 else None, 0 if batch_oracle else None, 0)
    return sharding.shard_seeds(batched, in_axes)


def _run_batched(alg, x0, oracle, keys, *, num_steps, trace_fn, field, batch_x0, batch_oracle):
    def one(x, o, k):
        return run(alg, x, o, k, num_steps, trace_fn=trace_fn, field=field)

    in_axes = (0 if batch_x0 else None, 0 if batch_oracle else None, 0)
    return jax.vmap(one, in_axes=in_axes)(x0, oracle, keys)


# The algorithm, step count and trace function are static: reusing the same objects reuses the
# compiled program (no recompilation across calls).
_run_batched_jit = jax.jit(
    _run_batched,
    static_argnames=("alg", "num_steps", "trace_fn", "field", "batch_x0", "batch_oracle"),
)
