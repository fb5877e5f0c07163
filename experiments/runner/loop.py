"""Long runs: progress bars, and the one checkpointed loop behind ``--resume``.

:func:`checkpointed_loop` runs ``state = run_chunk(state, c)`` for ``c = 0 .. num_chunks - 1``
(each chunk typically a jitted ``lax.scan`` over steps, vmapped over seeds). With an output
directory it saves the state after every chunk with orbax under
``<out_dir>/checkpoints/<name>/<chunk>`` beside ``<out_dir>/checkpoints/config.json`` (what the
checkpoints depend on: the config and the seed keys), and with ``resume=True`` it restores the
newest chunk and continues. A chunk must depend only on the state and its index (draw minibatch
``t`` with ``fold_in(seed_key, t)``): the resumed run then equals the uninterrupted one bit for
bit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable

__all__ = ["CHECKPOINT_CONFIG", "check_checkpoint_config", "checkpoint_dir", "checkpointed_loop",
           "progress"]

CHECKPOINT_CONFIG = "config.json"
# How checkpoints are numbered (by chunk); recorded in config.json so that checkpoints written
# another way are refused instead of being resumed from the wrong place.
LAYOUT = "chunk-index"


def progress(iterable: Iterable, *, enabled: bool = True, desc: str | None = None,
             total: int | None = None):
    """``tqdm(iterable)`` when ``enabled``, else ``iterable`` unchanged.

    The bar goes to stderr and disappears in non-interactive runs with ``TQDM_DISABLE=1``.
    """
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, disable=os.environ.get("TQDM_DISABLE") == "1")


def _root(out_dir) -> str:
    return os.path.join(os.fspath(out_dir), "checkpoints")


def checkpoint_dir(out_dir, name: str) -> str:
    """``<out_dir>/checkpoints/<name>``, with every run of characters other than letters and
    digits in ``name`` replaced by ``_``: where :func:`checkpointed_loop` keeps loop ``name``."""
    return os.path.join(_root(out_dir), re.sub(r"[^A-Za-z0-9]+", "_", name))


def _record(cfg, keys) -> dict:
    import jax
    import numpy as np

    from experiments.runner.configs import config_dict

    keys = jax.device_get(keys)
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        keys = jax.random.key_data(keys)
    record = {"config": config_dict(cfg), "seed_keys": np.asarray(keys).tolist(),
              "layout": LAYOUT}
    return json.loads(json.dumps(record))  # tuples -> lists, as stored


def check_checkpoint_config(out_dir, cfg, keys, *, resume: bool) -> None:
    """Writes ``<out_dir>/checkpoints/config.json``, or checks it when resuming.

    Raises:
      ValueError: with ``resume=True``, when the stored record differs from ``(cfg, keys)``
        (naming the differing config fields; ``seed_keys``: another ``--key`` or number of
        seeds), or when checkpoints exist without a record (they cannot be checked).
    """
    from jaxopt_icml import checkpoint

    root = _root(out_dir)
    path = os.path.join(root, CHECKPOINT_CONFIG)
    record = _record(cfg, keys)
    if resume and os.path.exists(path):
        with open(path) as f:
            stored = json.load(f)
        old, new = stored.get("config", {}), record["config"]
        diff = [f"{k}: {old.get(k, '<missing>')!r} -> {new.get(k, '<missing>')!r}"
                for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        if stored.get("seed_keys") != record["seed_keys"]:
            diff.append("seed_keys: differ (another --key or number of seeds)")
        if stored.get("layout") != record["layout"]:
            diff.append(f"layout: {stored.get('layout')!r} -> {record['layout']!r}")
        if diff:
            raise ValueError(
                f"cannot resume from {root}: its checkpoints were written with another "
                f"configuration ({'; '.join(diff)}). Rerun without --resume (the checkpoints "
                "are then replaced) or pass another --out.")
        return
    if resume and os.path.isdir(root) and any(
            checkpoint.latest_step(os.path.join(root, d)) is not None for d in os.listdir(root)
            if os.path.isdir(os.path.join(root, d))):
        raise ValueError(
            f"cannot resume from {root}: its checkpoints have no {CHECKPOINT_CONFIG} recording "
            "their configuration. Rerun without --resume or pass another --out.")
    os.makedirs(root, exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)


def checkpointed_loop(run_chunk: Callable, state, num_chunks: int, *, out_dir=None,
                      name: str = "run", cfg=None, keys=None, resume: bool = False, bar=None):
    """``state = run_chunk(state, c)`` for every chunk ``c``, checkpointed and resumable.

    Args:
      run_chunk: ``(state, chunk_index) -> state``; ``chunk_index`` is passed as an ``int32``
        scalar array, so a jitted ``run_chunk`` compiles once.
      state: the initial state (a pytree of arrays); its structure, shapes, dtypes and
        placement are the restore target.
      num_chunks: how many chunks.
      out_dir: the run's output directory; ``None`` runs without checkpoints.
      name: the checkpoint subdirectory of this loop (one per method); characters other than
        letters and digits become ``_``.
      cfg, keys: the config and the seed keys the checkpoints depend on
        (:func:`check_checkpoint_config`); required with ``out_dir``.
      resume: continue from the newest checkpoint of ``name`` (a missing one starts afresh).
        Without it, the loop's old checkpoints are deleted first, so that a later resume never
        picks up a stale chunk.
      bar: an optional tqdm bar, advanced once per chunk (also for chunks restored).

    Returns:
      The final state, fetched to the host.
    """
    import jax
    import jax.numpy as jnp

    from jaxopt_icml import checkpoint

    if isinstance(num_chunks, bool) or not isinstance(num_chunks, int) or num_chunks < 0:
        raise ValueError(f"num_chunks must be a non-negative int, got {num_chunks!r}")
    start, ckdir = 0, None
    if out_dir is not None:
        if cfg is None or keys is None:
            raise ValueError("checkpointed_loop needs cfg and keys with out_dir (the "
                             "checkpoints record what they depend on)")
        ckdir = checkpoint_dir(out_dir, name)
        check_checkpoint_config(out_dir, cfg, keys, resume=resume)
        if not resume and os.path.isdir(ckdir):
            shutil.rmtree(ckdir)
        last = checkpoint.latest_step(ckdir) if resume else None
        if last is not None and last > num_chunks:
            raise ValueError(f"cannot resume from {ckdir}: its newest checkpoint is chunk {last}, "
                             f"past the {num_chunks} chunks of this run")
        if last is not None:
            state = checkpoint.restore(ckdir, state, step=last)  # keeps the target's placement
            start = last
            if bar is not None:
                bar.update(start)
    for c in range(start, num_chunks):
        state = run_chunk(state, jnp.int32(c))
        if ckdir is not None:
            checkpoint.save(ckdir, c + 1, state)
        if bar is not None:
            bar.update(1)
    return jax.device_get(state)
