"""Orbax save/restore of pytrees (optimizer states, run states) against an abstract target.

Restoring without a target turns NamedTuples into dicts; restoring against
``jax.eval_shape(init, ...)`` (or any pytree of the same structure) gives back the same types,
shapes and dtypes, so the next step after a restore is bitwise identical to the next step without
one.

Example::

    state = opt.init(params)
    checkpoint.save("/tmp/run", 100, {"params": params, "opt_state": state})
    target = jax.eval_shape(lambda: {"params": params, "opt_state": opt.init(params)})
    restored = checkpoint.restore("/tmp/run", target)          # latest step
    step, restored, skipped = checkpoint.restore_newest_valid("/tmp/run", target)

A save is committed atomically by orbax (written to a temporary folder, then renamed), so a
process killed while saving leaves the previous steps intact. A step damaged afterwards (a data
file truncated or emptied) fails to restore; :func:`restore_newest_valid` then falls back to the
newest step that restores.
"""

from __future__ import annotations

import os

import jax
import orbax.checkpoint as ocp

__all__ = ["CorruptCheckpoint", "latest_step", "manager", "restore", "restore_newest_valid",
           "save", "steps"]


def _abs(directory) -> str:
    return os.path.abspath(os.fspath(directory))


def manager(directory, *, max_to_keep: int | None = 2) -> ocp.CheckpointManager:
    """An orbax ``CheckpointManager`` for ``directory`` keeping the last ``max_to_keep`` steps."""
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
    return ocp.CheckpointManager(_abs(directory), options=options)


def save(directory, step: int, pytree, *, max_to_keep: int | None = 2) -> None:
    """Saves ``pytree`` as checkpoint ``step`` under ``directory`` (blocking)."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be a non-negative int, got {step!r}")
    with manager(directory, max_to_keep=max_to_keep) as mngr:
        mngr.save(step, args=ocp.args.StandardSave(pytree), force=True)
        mngr.wait_until_finished()


def latest_step(directory) -> int | None:
    """The newest saved step under ``directory``, or ``None`` when there is none."""
    if not os.path.isdir(_abs(directory)):
        return None
    with manager(directory) as mngr:
        return mngr.latest_step()


class CorruptCheckpoint(ValueError):
    """No saved step of a checkpoint directory restores (each is partial or corrupt)."""


def steps(directory) -> list[int]:
    """Every committed step under ``directory``, ascending (``[]`` when there is none).

    Folders orbax left uncommitted (a save interrupted before its final rename) are not steps.
    """
    if not os.path.isdir(_abs(directory)):
        return []
    with manager(directory) as mngr:
        return sorted(int(s) for s in mngr.all_steps())


def restore_newest_valid(directory, target, *, max_step: int | None = None,
                         remove_invalid: bool = False):
    """Restores the newest step of ``directory`` that restores, trying older ones in turn.

    Args:
      directory: the checkpoint directory given to :func:`save`.
      target: the restore target, as in :func:`restore`.
      max_step: only steps ``<= max_step`` are tried (``None``: all).
      remove_invalid: delete the step folders newer than the one restored that failed to
        restore, so that saving those steps again is possible.

    Returns:
      ``(step, state, skipped)``: the step restored, its state, and ``[(step, reason), ...]``
      for the newer steps that failed (newest first; ``reason`` is the error's one-line text).
      ``(None, None, [])`` when the directory holds no step.

    Raises:
      CorruptCheckpoint: steps exist but none restores.
    """
    import shutil

    candidates = [s for s in reversed(steps(directory)) if max_step is None or s <= max_step]
    skipped = []
    for step in candidates:
        try:
            state = restore(directory, target, step=step)
        except Exception as err:  # noqa: BLE001 - any failure marks the step as unusable
            text = " ".join(str(err).split()) or type(err).__name__
            skipped.append((step, f"{type(err).__name__}: {text[:200]}"))
            continue
        if remove_invalid:
            for bad, _ in skipped:
                shutil.rmtree(os.path.join(_abs(directory), str(bad)), ignore_errors=True)
        return step, state, skipped
    if skipped:
        raise CorruptCheckpoint(
            f"no valid checkpoint under {_abs(directory)}: steps "
            f"{', '.join(str(s) for s, _ in skipped)} are partial or corrupt "
            f"(step {skipped[0][0]}: {skipped[0][1]})")
    return None, None, []


def restore(directory, target, *, step: int | None = None):
    """Restores checkpoint ``step`` (default: latest) into the structure of ``target``.

    Args:
      directory: the checkpoint directory given to :func:`save`.
      target: a pytree of arrays or ``jax.ShapeDtypeStruct``s (e.g. ``jax.eval_shape(init, x)``)
        fixing the types, shapes and dtypes of the result.
      step: which checkpoint; ``None`` picks the latest.

    Raises:
      FileNotFoundError: when no checkpoint exists.
    """
    step = latest_step(directory) if step is None else step
    if step is None:
        raise FileNotFoundError(f"no checkpoint under {_abs(directory)}")
    def to_abstract(a):
        if isinstance(a, jax.ShapeDtypeStruct):
            return a
        # Keep the target's placement, so a sharded state comes back sharded the same way.
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=getattr(a, "sharding", None))

    abstract = jax.tree.map(to_abstract, target)
    with manager(directory) as mngr:
        return mngr.restore(step, args=ocp.args.StandardRestore(abstract))
