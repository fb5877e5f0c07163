r"""Euclidean projections shared by several families.

:func:`project_simplex` is the library's one sort-based projection onto the scaled simplex
``{x >= 0, sum x = scale}``; ``jaxopt_icml.minimax`` (``lmo.project_simplex`` and
``lmo.simplex_projection``) and ``jaxopt_icml.distributed`` (DREAM's task weights) re-export or
use it from here.

Example:
  >>> import jax.numpy as jnp
  >>> from jaxopt_icml.projections import project_simplex
  >>> project_simplex(jnp.array([0.5, 2.0, -1.0]))
  Array([0., 1., 0.], dtype=float32)

References:
  Laurent Condat, "Fast projection onto the simplex and the l1 ball", Mathematical
  Programming 158, 2016 (the sort-based algorithm and its history).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxopt_icml.hyperparams import compute_dtype

__all__ = ["project_simplex"]


def project_simplex(z, scale=1.0):
    r"""Euclidean projection of a vector onto ``{x >= 0, sum x = scale}`` (sort-based).

    With ``u`` the entries of ``z`` sorted in decreasing order, ``c_j = sum_{i<=j} u_i - scale``
    and ``rho = max{j : u_j > c_j / j}``, the projection is ``max(z - c_rho / rho, 0)``.
    Computed in ``z``'s compute dtype (float32 for 16-bit inputs).

    Args:
      z: a 1-D array.
      scale: the simplex's total mass ``> 0`` (a float or a scalar array).

    Returns:
      The projection, same shape and dtype as ``z``.

    Example:
      >>> import jax.numpy as jnp
      >>> project_simplex(jnp.array([0.5, 2.0, -1.0]))
      Array([0., 1., 0.], dtype=float32)
    """
    z = jnp.asarray(z)
    zc = z.astype(compute_dtype(z.dtype))
    u = jnp.sort(zc)[::-1]
    css = jnp.cumsum(u) - jnp.asarray(scale, zc.dtype)
    j = jnp.arange(1, zc.shape[-1] + 1, dtype=zc.dtype)
    rho = jnp.sum(u * j > css)  # the condition holds exactly for j <= rho
    theta = css[rho - 1] / rho.astype(zc.dtype)
    return jnp.maximum(zc - theta, 0.0).astype(z.dtype)
