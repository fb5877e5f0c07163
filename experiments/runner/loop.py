"""Long runs: progress bars, and the one checkpointed loop behind ``--resume``.

:func:`checkpointed_loop` runs ``state = run_chunk(state, c)`` for ``c = 0 .. num_chunks - 1``
(each chunk typically a jitted ``lax.scan`` over steps, vmapped over seeds). With an output
directory it saves the state after every chunk with orbax under
``<out_dir>/checkpoints/<name>/<chunk>`` beside ``<out_dir>/checkpoints/config.json`` (what the
checkpoints depend on: the config and the seed keys), and with ``resume=True`` it restores the
newest chunk that restores and continues (a partial or corrupt newest chunk is skipped with a
one-line warning). A chunk must depend only on the state and its index (draw minibatch
``t`` with ``fold_in(seed_key, t)``): the resumed run then equals the uninterrupted one bit for
bit.

What a resume did (``"resumed"``: loop, chunk and path; ``"fresh"``: nothing saved to resume;
``"fallback"``: a corrupt newest chunk skipped) goes to the reporter installed with
:func:`reporting` (the CLI prints one line each); without one, only the fallback is reported, as
a ``RuntimeWarning``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterable

from experiments.runner.errors import CheckpointError

__all__ = ["CHECKPOINT_CONFIG", "check_checkpoint_config", "checkpoint_dir", "checkpointed_loop",
           "progress", "reporting", "saved_checkpoints"]

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


_REPORTERS: list[Callable[[str, str], None]] = []


@contextlib.contextmanager
def reporting(report: Callable[[str, str], None]):
    """Within the block, :func:`checkpointed_loop` calls ``report(kind, message)`` when it
    resumes: ``kind`` is ``"resumed"``, ``"fresh"`` (nothing saved) or ``"fallback"`` (a corrupt
    newest chunk skipped); ``message`` is one line."""
    _REPORTERS.append(report)
    try:
        yield report
    finally:
        _REPORTERS.remove(report)


def _report(kind: str, message: str) -> None:
    if _REPORTERS:
        _REPORTERS[-1](kind, message)
    elif kind == "fallback":
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _root(out_dir) -> str:
    return os.path.join(os.fspath(out_dir), "checkpoints")


def checkpoint_dir(out_dir, name: str) -> str:
    """``<out_dir>/checkpoints/<name>``, with every run of characters other than letters and
    digits in ``name`` replaced by ``_``: where :func:`checkpointed_loop` keeps loop ``name``."""
    return os.path.join(_root(out_dir), re.sub(r"[^A-Za-z0-9]+", "_", name))


def saved_checkpoints(out_dir) -> dict[str, int]:
    """``{loop folder: newest committed chunk}`` for every loop with checkpoints under
    ``<out_dir>/checkpoints`` (``{}`` when there is none)."""
    from jaxopt_icml import checkpoint

    root = _root(out_dir)
    if not os.path.isdir(root):
        return {}
    out = {}
    for d in sorted(os.listdir(root)):
        path = os.path.join(root, d)
        if os.path.isdir(path):
            try:
                found = checkpoint.steps(path)
            except Exception:  # noqa: BLE001 - an unreadable folder still holds checkpoints
                found = [-1]
            if found:
                out[d] = max(found)
    return out


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
      CheckpointError: (a ``ValueError``) with ``resume=True``, when the stored record differs
        from ``(cfg, keys)`` (naming the differing config fields; ``seed_keys``: another
        ``--key`` or number of seeds), when it is not readable JSON, or when checkpoints exist
        without a record (they cannot be checked).
    """
    root = _root(out_dir)
    path = os.path.join(root, CHECKPOINT_CONFIG)
    record = _record(cfg, keys)
    if resume and os.path.exists(path):
        try:
            with open(path) as f:
                stored = json.load(f)
            if not isinstance(stored, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as err:
            raise CheckpointError(
                f"cannot resume from {root}: {CHECKPOINT_CONFIG} is unreadable ({err}); pass "
                "--overwrite to start again or another --out") from None
        old, new = stored.get("config", {}), record["config"]
        diff = [f"{k}: {old.get(k, '<missing>')!r} -> {new.get(k, '<missing>')!r}"
                for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        if stored.get("seed_keys") != record["seed_keys"]:
            diff.append("seed_keys: differ (another --key or number of seeds)")
        if stored.get("layout") != record["layout"]:
            diff.append(f"layout: {stored.get('layout')!r} -> {record['layout']!r}")
        if diff:
            raise CheckpointError(
                f"cannot resume from {root}: its checkpoints were written with another "
                f"configuration ({'; '.join(diff)}). Pass --overwrite instead of --resume (the "
                "checkpoints are then replaced) or another --out.")
        return
    if resume and saved_checkpoints(out_dir):
        raise CheckpointError(
            f"cannot resume from {root}: its checkpoints have no {CHECKPOINT_CONFIG} recording "
            "their configuration. Pass --overwrite instead of --resume or another --out.")
    os.makedirs(root, exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)


def _resume(ckdir, name, state, num_chunks, bar):
    """``(first chunk to run, state)`` restored from the newest valid chunk of ``ckdir``."""
    from jaxopt_icml import checkpoint

    found = checkpoint.steps(ckdir)
    if found and found[-1] > num_chunks:
        raise CheckpointError(f"cannot resume from {ckdir}: its newest checkpoint is chunk "
                              f"{found[-1]}, past the {num_chunks} chunks of this run")
    try:
        # keeps the target's placement; corrupt newer chunks are deleted so they can be redone
        last, restored, skipped = checkpoint.restore_newest_valid(ckdir, state,
                                                                  remove_invalid=True)
    except checkpoint.CorruptCheckpoint as err:
        raise CheckpointError(f"cannot resume loop {name!r}: {err}; pass --overwrite to start "
                              "again") from None
    for step, reason in skipped:
        _report("fallback", f"warning: checkpoint chunk {step} of loop {name!r} under {ckdir} is "
                            f"partial or corrupt ({reason}); falling back to chunk {last}")
    if last is None:
        _report("fresh", f"nothing to resume for loop {name!r}: no checkpoint under {ckdir}; "
                         "starting from chunk 0")
        return 0, state
    _report("resumed", f"resumed loop {name!r} at chunk {last} of {num_chunks} from {ckdir}")
    if bar is not None:
        bar.update(last)
    return last, restored


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
      resume: continue from the newest checkpoint of ``name`` that restores (a missing one
        starts afresh; newer partial or corrupt chunks are reported and deleted). Without it,
        the loop's old checkpoints are deleted first, so that a later resume never picks up a
        stale chunk.
      bar: an optional tqdm bar, advanced once per chunk (also for chunks restored).

    Returns:
      The final state, fetched to the host.

    Raises:
      CheckpointError: (a ``ValueError``) another configuration
        (:func:`check_checkpoint_config`), a checkpoint past ``num_chunks``, or checkpoints of
        which none restores.
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
        if resume:
            start, state = _resume(ckdir, name, state, num_chunks, bar)
    for c in range(start, num_chunks):
        state = run_chunk(state, jnp.int32(c))
        if ckdir is not None:
            checkpoint.save(ckdir, c + 1, state)
        if bar is not None:
            bar.update(1)
    return jax.device_get(state)
