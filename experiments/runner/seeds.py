"""Seeds to keys, and programs over seeds.

:func:`seed_keys` is the one way an experiment turns the ``key`` it is given (``--key``) into
one key per seed, and :func:`stream_key` into the one key of a part of the experiment (its
problem draws, one method's run); ``seed_keys(key, n, stream=s)`` is
``jax.random.split(stream_key(key, s), n)``. A ``stream`` is an int naming an independent part.
Two kinds of keys exist, because the CPU compiles threefry's bit mixing slowly inside large
vmapped programs:

* ``fast=False`` (default): threefry keys, ``key`` itself for stream 0 and
  ``fold_in(key, stream)`` otherwise;
* ``fast=True``: typed ``unsafe_rbg`` keys seeded with ``seed_of(key) * 65536 + stream``
  (modulo ``2**32``), so that the streams of ``--key 0`` are ``rbg_key(stream)`` and those of
  two keys below 65536 never coincide.

:func:`seed_sequence` gives the parts that draw on the host with NumPy a
``numpy.random.SeedSequence`` of the key's words (and stream ints), and :func:`seed_int` an int
drawn from a (per-seed) key, for a NumPy generator or an RBG key of that seed.

:func:`seeded_program` compiles a function already vmapped over seeds once, or shards its seed
axis over every local device (``--shard``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["STREAMS", "rbg_key", "seed_int", "seed_keys", "seed_of", "seed_sequence",
           "seeded_program", "stream_key"]

# fast streams per key: stream must lie in [0, STREAMS)
STREAMS = 65536


def seed_of(key) -> int:
    """The integer seed of an experiment's ``key`` argument (the last word of a raw
    ``PRNGKey`` or of a typed key's data), for experiments that derive their own keys."""
    import jax
    import jax.numpy as jnp

    typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
    return int(np.asarray(jax.random.key_data(key) if typed else key).ravel()[-1])


def rbg_key(seed):
    """A typed ``unsafe_rbg`` key from an int seed (or a traced integer inside ``jit``): on the
    CPU it compiles much faster than threefry inside the experiments' large vmapped programs
    (the random streams differ from threefry's)."""
    import jax

    return jax.random.key(seed, impl="unsafe_rbg")


def _check_stream(stream, fast: bool) -> int:
    if isinstance(stream, bool) or not isinstance(stream, int | np.integer):
        raise ValueError(f"stream must be an int, got {stream!r}")
    if fast and not 0 <= stream < STREAMS:
        raise ValueError(f"stream must be in [0, {STREAMS}) with fast=True, got {stream!r}")
    return int(stream)


def stream_key(key, stream: int = 0, *, fast: bool = False):
    """The key of part ``stream`` of an experiment run with ``key``.

    Works on a concrete key and on a key traced inside ``jit`` alike.

    Args:
      key: the experiment's key (a raw ``PRNGKey`` or a typed key).
      stream: an int naming an independent part of the experiment; 0 is the key itself
        (threefry) or ``rbg_key(seed_of(key) * 65536)`` (``fast``).
      fast: a typed ``unsafe_rbg`` key (see the module docstring) instead of a threefry key.

    Raises:
      ValueError: ``stream`` is not an int (in ``[0, 65536)`` with ``fast``).
    """
    import jax
    import jax.numpy as jnp

    stream = _check_stream(stream, fast)
    if fast:
        typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
        word = (jax.random.key_data(key) if typed else jnp.asarray(key)).ravel()[-1]
        # uint32 arithmetic wraps: the seed is (seed_of(key) * STREAMS + stream) mod 2**32
        seed = word.astype(jnp.uint32) * jnp.uint32(STREAMS) + jnp.uint32(stream)
        return rbg_key(seed)
    return key if stream == 0 else jax.random.fold_in(key, stream)


def seed_keys(key, num_seeds: int, *, stream: int = 0, fast: bool = False):
    """``num_seeds`` independent keys, one per seed: ``split(stream_key(key, stream), n)``.

    Args:
      key: the experiment's key (a raw ``PRNGKey`` or a typed key).
      num_seeds: how many keys (a positive int).
      stream: as in :func:`stream_key`.
      fast: as in :func:`stream_key`.

    Raises:
      ValueError: ``num_seeds`` is not a positive int, or ``stream`` is invalid.
    """
    from jaxopt_icml import base

    return base.split_keys(stream_key(key, stream, fast=fast), num_seeds)


def seed_int(key) -> int:
    """An int in ``[0, 2**31 - 1)`` drawn from ``key`` (``jax.random.randint``): the seed of a
    host NumPy generator (``np.random.default_rng(seed_int(k))``) or of an RBG key
    (``rbg_key(seed_int(k))``) for the seed whose key is ``k``."""
    import jax

    return int(jax.random.randint(key, (), 0, 2**31 - 1))


def seed_sequence(key, *stream: int) -> np.random.SeedSequence:
    """``numpy.random.SeedSequence([*key words, *stream])`` for a part drawn with NumPy on the
    host (``np.random.default_rng(seed_sequence(key, 3))``), from a raw or typed key."""
    import jax
    import jax.numpy as jnp

    typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
    words = np.asarray(jax.random.key_data(key) if typed else key).astype(np.uint64).ravel()
    for s in stream:
        _check_stream(s, False)
    return np.random.SeedSequence([*words.tolist(), *(int(s) for s in stream)])


def seeded_program(batched: Callable, in_axes: tuple = (0,), *, shard: bool = False,
                   compiler_options: dict | None = None) -> Callable:
    """``jax.jit(batched)``, or with ``shard`` the seed axis split over every local device.

    Args:
      batched: a function already vmapped over a leading seed axis.
      in_axes: for each positional argument, 0 when it carries the seed axis, ``None`` when it
        is shared (replicated on every device with ``shard``).
      shard: place the seed axis on a 1-D mesh of all local devices
        (:func:`jaxopt_icml.sharding.shard_seeds`); the number of seeds must then be a multiple
        of the device count.
      compiler_options: passed to ``jax.jit`` (not used with ``shard``).
    """
    import jax

    from jaxopt_icml import sharding

    if shard:
        return sharding.shard_seeds(batched, tuple(in_axes))
    return jax.jit(batched, compiler_options=compiler_options or None)
