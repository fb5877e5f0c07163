"""One device or many: ``simulate`` (vmap with an axis name) and ``shard`` (``jax.shard_map``).

A per-worker step is written once with collectives (``lax.psum``, ``lax.pmean``,
``lax.all_gather``, ``lax.ppermute``) over a named axis (default ``"workers"``). ``simulate`` runs
all workers on one device with ``jax.vmap(..., axis_name=...)``; ``shard`` runs one block of workers
per device with ``jax.shard_map`` over a 1-D mesh. Both take and return arrays whose leading axis
is the worker axis, so the two agree exactly (tests check this on 8 simulated CPU devices).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxopt_icml.base import OracleAlgorithm, Step

__all__ = ["DEFAULT_AXIS", "SUMMED_INFO", "across_workers", "simulate", "shard", "make_mesh",
           "shard_seeds"]

DEFAULT_AXIS = "workers"


def _check_axis_name(axis_name) -> str:
    if not isinstance(axis_name, str) or not axis_name:
        raise ValueError(f"axis_name must be a non-empty str, got {axis_name!r}")
    return axis_name


def simulate(step: Callable, num_workers: int, *, axis_name: str = DEFAULT_AXIS) -> Callable:
    """All workers on one device: ``jax.vmap(step, axis_name=axis_name)``.

    Every positional argument of the returned function has a leading axis of size ``num_workers``.
    """
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
    axis_name = _check_axis_name(axis_name)
    vmapped = jax.vmap(step, axis_name=axis_name, axis_size=num_workers)
    return jax.jit(vmapped)


def make_mesh(axis_name: str = DEFAULT_AXIS, devices=None) -> jax.sharding.Mesh:
    """A 1-D mesh over ``devices`` (default: all local devices; after
    ``jax.distributed.initialize()`` pass ``jax.devices()`` for a mesh over every process)."""
    axis_name = _check_axis_name(axis_name)
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
    axis_name = _check_axis_name(axis_name)
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


# ``info`` entries that count something each worker did, so the all-workers value is their sum.
SUMMED_INFO = ("oracle_calls", "bits_sent")


def across_workers(per_worker: OracleAlgorithm, num_workers: int, *, mesh=None,
                   axis_name: str = DEFAULT_AXIS) -> OracleAlgorithm:
    """All workers of a per-worker ``OracleAlgorithm`` as one ``OracleAlgorithm``.

    ``per_worker.init(x0, key)`` and ``per_worker.update(state, oracle, key)`` describe ONE worker
    (client, agent, node) and may call collectives (``lax.psum``, ``pmean``, ``all_gather``,
    ``ppermute``, ``axis_index``) over ``axis_name``. The returned algorithm runs them all:

    - ``init(x0, key)``: ``x0`` is shared (every worker starts from it); worker ``i`` gets
      ``split(key, num_workers)[i]``. The state has a leading worker axis on every leaf.
    - ``update(state, oracle, key)``: every leaf of ``oracle`` has a leading worker axis (worker
      ``i`` sees ``oracle[i]``, its local data); worker ``i`` gets ``split(key,
      num_workers)[i]``. ``Step.x`` is worker 0's ``x`` and ``info[k]`` is the sum over workers
      for ``k`` in :data:`SUMMED_INFO` (``"oracle_calls"``, ``"bits_sent"``) and worker 0's
      value otherwise. So the per-worker step reports the point the theory is about and global
      diagnostics as values equal on all workers, computed with collectives (the server model,
      ``lax.pmean`` of the local models of a decentralized method, a loss at the average, a
      consensus error); ``Step.x`` then has the shape of ``x0``. Per-worker quantities stay
      in the state (leading worker axis) or go in ``info`` as reductions.

    With ``mesh=None`` the workers run on one device (``jax.vmap`` with ``axis_name``, as
    :func:`simulate`); with a mesh they run one per device (``jax.shard_map``, as :func:`shard`),
    which needs ``num_workers == mesh.shape[axis_name]``. Both give the same numbers up to
    floating-point reassociation in collectives. The result composes with ``base.run`` (one
    ``lax.scan``), ``base.run_seeds`` (``vmap`` over seeds; seed sharding needs ``mesh=None``,
    since the devices are then taken by the worker axis) and checkpoints like any algorithm.

    Args:
      per_worker: the one-worker algorithm.
      num_workers: number of workers (static, positive).
      mesh: ``None`` (simulate on one device) or a ``jax.sharding.Mesh`` with axis ``axis_name``.
      axis_name: the collective axis name used inside ``per_worker``.

    Returns:
      The all-workers ``OracleAlgorithm``.
    """
    if not isinstance(per_worker, OracleAlgorithm):
        raise TypeError(f"per_worker must be an OracleAlgorithm, got {type(per_worker).__name__}")
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
    axis_name = _check_axis_name(axis_name)
    if mesh is not None:
        if not isinstance(mesh, jax.sharding.Mesh):
            raise ValueError(f"mesh must be None or a jax.sharding.Mesh, got {type(mesh).__name__}")
        if axis_name not in mesh.axis_names:
            raise ValueError(
                f"axis_name {axis_name!r} is not an axis of the mesh {mesh.axis_names}")
        if mesh.shape[axis_name] != num_workers:
            raise ValueError(
                f"num_workers ({num_workers}) must equal the mesh size along {axis_name!r} "
                f"({mesh.shape[axis_name]}) when a mesh is given; use mesh=None to simulate")

    def map_workers(fn):
        if mesh is None:
            return jax.vmap(fn, axis_name=axis_name, axis_size=num_workers)
        spec = PartitionSpec(axis_name)

        def per_device(*args):
            out = fn(*jax.tree.map(lambda a: a[0], args))
            return jax.tree.map(lambda a: a[None], out)

        # check_vma=False: collectives with vmap semantics, as in shard() above.
        return jax.shard_map(per_device, mesh=mesh, in_specs=spec, out_specs=spec,
                             check_vma=False)

    mapped_init = map_workers(per_worker.init)
    mapped_update = map_workers(per_worker.update)

    def init(x0, key):
        x0s = jax.tree.map(lambda a: jax.numpy.broadcast_to(a, (num_workers, *jax.numpy.shape(a))),
                           x0)
        return mapped_init(x0s, jax.random.split(key, num_workers))

    def update(state, oracle, key):
        step, state = mapped_update(state, oracle, jax.random.split(key, num_workers))
        info = {k: (v.sum(0) if k in SUMMED_INFO else v[0]) for k, v in step.info.items()}
        return Step(x=jax.tree.map(lambda a: a[0], step.x), info=info), state

    return OracleAlgorithm(init=init, update=update)
