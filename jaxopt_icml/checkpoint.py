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
"""

from __future__ import annotations

import os

import jax
import orbax.checkpoint as ocp

__all__ = ["latest_step", "restore", "save", "manager"]


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
