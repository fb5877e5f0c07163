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
import optax

__all__ = ["check_same_shapes", "with_shape_check"]


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
        keys_a = [jax.tree_util.keystr(path) for path, _ in paths_a]
        keys_b = [jax.tree_util.keystr(path) for path, _ in paths_b]
        only_a = [k for k in keys_a if k not in set(keys_b)]
        only_b = [k for k in keys_b if k not in set(keys_a)]
        where = (f"{name_a} has leaf {only_a[0]} that {name_b} lacks" if only_a else
                 f"{name_b} has leaf {only_b[0]} that {name_a} lacks" if only_b else
                 f"{def_a} vs {def_b}")
        raise ValueError(f"{prefix}{name_a} and {name_b} have different tree structures: "
                         f"{where}")
    for (path, a), (_, b) in zip(paths_a, paths_b):
        if _shape(a) != _shape(b):
            raise ValueError(f"{prefix}{name_a} and {name_b} disagree at leaf "
                             f"{jax.tree_util.keystr(path)}: shape {_shape(a)} vs {_shape(b)}")


def with_shape_check(tx: optax.GradientTransformation,
                     name: str) -> optax.GradientTransformationExtraArgs:
    """``tx`` whose ``update`` first runs :func:`check_same_shapes` on the updates and the
    params (when given); for transformations assembled from optax pieces (``optax.partition``,
    ``optax.sgd``) that would otherwise fail deep inside or broadcast. Same init and state."""
    inner = optax.with_extra_args_support(tx)

    def update_fn(updates, state, params=None, **extra_args):
        check_same_shapes("updates", updates, "params", params, context=name)
        return inner.update(updates, state, params, **extra_args)

    return optax.GradientTransformationExtraArgs(inner.init, update_fn)
