r"""Structure and shape checks shared by every transformation.

A transformation's ``update(updates, state, params)`` receives trees that must agree leaf by
leaf: the updates with the params (and with the trees its state was initialised from). JAX
reports a mismatch deep inside the program (``cond`` branch types, a broadcasting
``TypeError``) or, worse, broadcasts silently. :func:`check_same_shapes` raises a
``ValueError`` at trace time that names the first disagreeing leaf by its path.

Shapes are static under ``jit``, ``vmap`` (per example) and ``shard_map``, so the check costs
nothing at run time.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxopt_icml.trees import check_same_shapes
  >>> check_same_shapes("updates", {"w": jnp.zeros(3)}, "params", {"w": jnp.zeros(3)})
  >>> check_same_shapes("updates", {"w": jnp.zeros(4)}, "params", {"w": jnp.zeros(3)})
  Traceback (most recent call last):
    ...
  ValueError: updates and params disagree at leaf ['w']: shape (4,) vs (3,)
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

__all__ = ["check_same_shapes"]


def _shape(leaf) -> tuple:
    return tuple(np.shape(leaf))


def check_same_shapes(name_a: str, tree_a: Any, name_b: str, tree_b: Any, *,
                      context: str = "") -> None:
    """Raises ``ValueError`` unless the two trees have one structure and equal leaf shapes.

    Args:
      name_a, name_b: what the trees are, for the message (e.g. ``"updates"``, ``"params"``).
      tree_a, tree_b: pytrees of arrays (or of shape-carrying values such as tracers).
      context: prefix for the message, e.g. the transformation's name.

    ``None`` for ``tree_b`` (params not passed) skips the check.
    """
    if tree_b is None:
        return
    prefix = f"{context}: " if context else ""
    paths_a, def_a = jax.tree_util.tree_flatten_with_path(tree_a)
    paths_b, def_b = jax.tree_util.tree_flatten_with_path(tree_b)
    if def_a != def_b:
        raise ValueError(f"{prefix}{name_a} and {name_b} have different tree structures: "
                         f"{def_a} vs {def_b}")
    for (path, a), (_, b) in zip(paths_a, paths_b):
        if _shape(a) != _shape(b):
            raise ValueError(f"{prefix}{name_a} and {name_b} disagree at leaf "
                             f"{jax.tree_util.keystr(path)}: shape {_shape(a)} vs {_shape(b)}")
