"""Seeds to keys, and programs over seeds.

:func:`seed_keys` is the one way an experiment turns the ``key`` it is given (``--key``) into
one key per seed. Two streams exist, because the CPU compiles threefry's bit mixing slowly inside
large vmapped programs:

* ``fast=False`` (default): ``jax.random.split(key, num_seeds)`` (``fold_in(key, stream)``
  first when ``stream`` is nonzero);
* ``fast=True``: ``jax.random.split(rbg_key(seed_of(key) + stream), num_seeds)``, typed
  ``unsafe_rbg`` keys from the integer seed (other random streams than threefry's).

:func:`seeded_program` compiles a function already vmapped over seeds once, or shards its seed
axis over every local device (``--shard``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["rbg_key", "seed_keys", "seed_of", "seeded_program"]


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


def seed_keys(key, num_seeds: int, *, stream: int = 0, fast: bool = False):
    """``num_seeds`` independent keys from an experiment's ``key``.

    Args:
      key: the experiment's key (a raw ``PRNGKey`` or a typed key).
      num_seeds: how many keys (a positive int).
      stream: an int naming an independent family of keys drawn from the same ``key`` (one per
        part of an experiment); 0 is the key itself.
      fast: typed ``unsafe_rbg`` keys from ``seed_of(key) + stream`` instead of threefry keys.

    Raises:
      ValueError: ``num_seeds`` is not a positive int or ``stream`` is not an int.
    """
    import jax

    if isinstance(num_seeds, bool) or not isinstance(num_seeds, int | np.integer) \
            or num_seeds < 1:
        raise ValueError(f"num_seeds must be a positive int, got {num_seeds!r}")
    if isinstance(stream, bool) or not isinstance(stream, int | np.integer):
        raise ValueError(f"stream must be an int, got {stream!r}")
    if fast:
        return jax.random.split(rbg_key(seed_of(key) + int(stream)), int(num_seeds))
    base = key if stream == 0 else jax.random.fold_in(key, int(stream))
    return jax.random.split(base, int(num_seeds))


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
