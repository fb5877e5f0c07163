"""A small multilayer perceptron in Flax nnx, shared by experiments.

Use it as a Flax module, or as a pure function of a parameter pytree for optax loops::

    model = MLP(2, (32, 32), 2, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model, nnx.Param)
    apply = pure_apply(graphdef)              # apply(params, x) -> outputs, jit/vmap/grad friendly
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

__all__ = ["MLP", "abstract_params", "init_params", "pure_apply"]


class MLP(nnx.Module):
    """``Linear -> activation`` for every hidden width, then a final ``Linear``.

    Args:
      in_features: input dimension (> 0).
      hidden: widths of the hidden layers (may be empty: a linear model).
      out_features: output dimension (> 0).
      activation: elementwise nonlinearity (default ``jax.nn.relu``).
      dtype: computation dtype (``None``: inferred from inputs and params).
      param_dtype: parameter dtype (default float32).
      rngs: ``nnx.Rngs`` for the initialisers.
    """

    def __init__(self, in_features: int, hidden: Sequence[int], out_features: int, *,
                 activation: Callable[[jax.Array], jax.Array] = jax.nn.relu, dtype=None,
                 param_dtype=jnp.float32, rngs: nnx.Rngs):
        sizes = (in_features, *hidden, out_features)
        for name, v in (("in_features", in_features), ("out_features", out_features),
                        *(("hidden", h) for h in hidden)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be positive ints, got {v!r}")
        if not callable(activation):
            raise ValueError(f"activation must be callable, got {activation!r}")
        self.activation = activation
        self.layers = nnx.List([
            nnx.Linear(a, b, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
            for a, b in zip(sizes[:-1], sizes[1:], strict=True)
        ])

    def __call__(self, x: jax.Array) -> jax.Array:
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


def pure_apply(graphdef) -> Callable:
    """``apply(params, x)`` for the ``nnx.split(model, nnx.Param)`` pair ``(graphdef, params)``."""

    def apply(params, x):
        return nnx.merge(graphdef, params)(x)

    return apply


def init_params(make_model: Callable[[nnx.Rngs], nnx.Module], key: jax.Array):
    """``(graphdef, params)`` of ``make_model(nnx.Rngs(key))``; vmap over keys for many seeds.

    Example::

        keys = jax.random.split(jax.random.PRNGKey(0), 4)
        graphdef, _ = init_params(make, keys[0])
        params = jax.vmap(lambda k: init_params(make, k)[1])(keys)   # leading seed axis
    """
    return nnx.split(make_model(nnx.Rngs(params=key)), nnx.Param)


def abstract_params(make_model: Callable[[nnx.Rngs], nnx.Module]):
    """``(graphdef, params)`` with ``jax.ShapeDtypeStruct`` leaves, without running initialisers.

    Cheap: nothing is computed or compiled, so use it to get the ``graphdef`` for
    :func:`pure_apply` or a restore target for checkpoints.
    """
    model = nnx.eval_shape(lambda: make_model(nnx.Rngs(params=0)))
    return nnx.split(model, nnx.Param)
