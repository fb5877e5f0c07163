"""One device or many: ``across_workers`` runs a per-worker algorithm with ``simulate`` (vmap with
an axis name) or ``shard`` (``jax.shard_map``), both re-exported from ``jaxopt_icml.sharding``.

A per-worker step is written once with collectives (``lax.psum``, ``lax.pmean``,
``lax.all_gather``, ``lax.ppermute``) over a named axis (default ``"workers"``). ``simulate`` runs
all workers on one device with ``jax.vmap(..., axis_name=...)``; ``shard`` runs one block of workers
per device with ``jax.shard_map`` over a 1-D mesh. Both take and return arrays whose leading axis
is the worker axis, so the two agree exactly (tests check this on 8 simulated CPU devices).
"""

from __future__ import annotations

import jax
from jax.sharding import PartitionSpec

from jaxopt_icml.base import OracleAlgorithm, Step
from jaxopt_icml.sharding import (
    DEFAULT_AXIS,
    check_axis_name,
    make_mesh,
    shard,
    shard_seeds,
    simulate,
)

__all__ = ["DEFAULT_AXIS", "SUMMED_INFO", "across_workers", "simulate", "shard", "make_mesh",
           "shard_seeds"]

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
    axis_name = check_axis_name(axis_name)
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
