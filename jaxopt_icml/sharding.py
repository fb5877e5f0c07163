"""Device placement without the algorithm protocol: ``simulate`` (vmap with an axis name),
``shard`` (``jax.shard_map`` over a 1-D mesh), ``make_mesh`` and ``shard_seeds``.

``jaxopt_icml.base`` builds its seed-sharded runs on this module, and ``jaxopt_icml.mesh``
(``across_workers``) builds on both; this module imports neither.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

__all__ = ["DEFAULT_AXIS", "make_mesh", "shard", "shard_seeds", "simulate"]

DEFAULT_AXIS = "workers"


def check_axis_name(axis_name) -> str:
    """``axis_name`` when it is a non-empty str; ``ValueError`` otherwise (shared by ``mesh``)."""
    if not isinstance(axis_name, str) or not axis_name:
        raise ValueError(f"axis_name must be a non-empty str, got {axis_name!r}")
    return axis_name


def simulate(step: Callable, num_workers: int, *, axis_name: str = DEFAULT_AXIS) -> Callable:
    """All workers on one device: ``jax.vmap(step, axis_name=axis_name)``.

    Every positional argument of the returned function has a leading axis of size ``num_workers``.
    """
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
    axis_name = check_axis_name(axis_name)
    vmapped = jax.vmap(step, axis_name=axis_name, axis_size=num_workers)
    return jax.jit(vmapped)


def make_mesh(axis_name: str = DEFAULT_AXIS, devices=None) -> jax.sharding.Mesh:
    """A 1-D mesh over ``devices`` (default: all local devices; after
    ``jax.distributed.initialize()`` pass ``jax.devices()`` for a mesh over every process)."""
    axis_name = check_axis_name(axis_name)
    devices = jax.local_devices() if devices is None else list(devices)
    return jax.sharding.Mesh(np.asarray(devices), (axis_name,))


def shard(step: Callable, mesh: jax.sharding.Mesh | None = None, *,
          axis_name: str = DEFAULT_AXIS) -> Callable:
    """One worker per device of ``mesh`` with ``jax.shard_map``.

    Collectives over ``axis_name`` inside ``step`` then run across devices, and the result equals
    ``simulate(step, mesh.size)``. The leading (worker) axis of every argument must equal the
    mesh size; the same code runs on a TPU slice or, after ``jax.distributed.initialize()``, on
    several hosts.
    """
    axis_name = check_axis_name(axis_name)
    mesh = make_mesh(axis_name) if mesh is None else mesh
    if axis_name not in mesh.axis_names:
        raise ValueError(f"axis_name {axis_name!r} is not an axis of the mesh {mesh.axis_names}")
    spec = PartitionSpec(axis_name)
    size = mesh.shape[axis_name]

    def per_device(*args):
        squeezed = jax.tree.map(lambda a: a[0], args)
        out = step(*squeezed)
        return jax.tree.map(lambda a: a[None], out)

    # check_vma=False gives collectives the semantics of ``jax.vmap(..., axis_name=...)`` (the
    # ones ``simulate`` uses): a loop carry started from a constant may become worker-dependent,
    # and the transpose of ``psum`` under ``jax.grad`` is a ``psum``, as in vmap and pmap. With
    # the check on, such steps would fail to trace or differentiate differently from simulate().
    fn = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=spec, out_specs=spec,
                               check_vma=False))

    def call(*args):
        num = jax.tree.leaves(args)[0].shape[0]
        if num != size:
            raise ValueError(
                f"the worker axis ({num}) must equal the number of devices on {axis_name!r} "
                f"({size}); use simulate() for more workers than devices"
            )
        return fn(*jax.device_put(args, NamedSharding(mesh, spec)))

    return call


def shard_seeds(batched: Callable, in_axes: tuple) -> Callable:
    """Shards the seed axis of an already vmapped function over all local devices.

    ``batched(*args)`` maps a leading seed axis on the arguments whose ``in_axes`` entry is 0;
    arguments with ``None`` are replicated. Seeds are independent, so no collective is needed.
    """
    mesh = make_mesh("seeds")
    specs = tuple(PartitionSpec("seeds") if a == 0 else PartitionSpec() for a in in_axes)
    # Seeds never communicate, so replicated inputs (a shared x0 or oracle) may feed a scan carry
    # that becomes seed-dependent: the varying-manual-axes check would reject that carry, hence
    # check_vma=False. Built and jitted once here, so repeated calls reuse the compiled program.
    fn = jax.jit(jax.shard_map(batched, mesh=mesh, in_specs=specs,
                               out_specs=PartitionSpec("seeds"), check_vma=False))

    def call(*args):
        num = [jax.tree.leaves(a)[0].shape[0] for a, ax in zip(args, in_axes) if ax == 0][0]
        if num % mesh.size:
            raise ValueError(
                f"the number of seeds ({num}) must be a multiple of the number of devices "
                f"({mesh.size}) when shard=True"
            )
        placed = tuple(
            jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(args, specs)
        )
        return fn(*placed)

    return call
