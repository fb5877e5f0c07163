"""``python -m experiments multihost``: a distributed algorithm on a mesh over several processes.

Every process runs the same command; ``jax.distributed.initialize`` connects them, the mesh
spans ``jax.devices()`` (all processes' devices), and the per-worker step runs with
``jax.shard_map`` through :func:`jaxopt_icml.mesh.across_workers`, one worker per device. Each
process then compares the run with the same workers simulated on one of its own devices
(``jax.vmap`` with the axis name) and exits nonzero when they disagree.

On several hosts (one process per host, e.g. GPU nodes or a TPU pod slice)::

    # on every host, with its own --process-id (0 .. N-1); host 0 is the coordinator
    python -m experiments multihost --coordinator 10.0.0.1:8476 --num-processes 2 --process-id 0
    python -m experiments multihost --coordinator 10.0.0.1:8476 --num-processes 2 --process-id 1

On Cloud TPU, SLURM or Open MPI, ``jax.distributed.initialize()`` finds these values itself:
run ``python -m experiments multihost --auto`` on every host. To try it on one machine with CPU
processes (what ``tests/test_multihost.py`` does)::

    python -m experiments multihost --launch 2 --cpu-devices 2

Cases (``--case``): ``parallel_sgd`` (noisy gradients averaged with ``lax.pmean``) and the
distributed papers' algorithms registered in :data:`CASES`.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Callable


def _parallel_sgd(num_workers: int):
    """Parallel SGD on worker quadratics ``0.5 ||x - b_i||^2`` with noisy local gradients."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxopt_icml import base, mesh

    b = jnp.asarray(np.random.default_rng(0).normal(size=(num_workers, 4)), jnp.float32)

    def init(x0, key):
        del key
        return {"x": x0}

    def update(state, oracle, key):
        g = state["x"] - oracle + 0.1 * jax.random.normal(key, state["x"].shape)
        x = state["x"] - 0.3 * jax.lax.pmean(g, mesh.DEFAULT_AXIS)
        info = {"oracle_calls": jnp.int32(1), "bits_sent": jnp.float32(32 * x.size)}
        return base.Step(x, info), {"x": x}

    def make(mesh_):
        return mesh.across_workers(base.OracleAlgorithm(init, update), num_workers, mesh=mesh_)

    return make, jnp.zeros(4), b, 5


# name -> builder(num_workers) -> (make(mesh) -> OracleAlgorithm, x0, oracle, num_steps)
def _from_experiment(slug: str) -> Callable:
    """The ``multihost_case`` builder of the paper's experiment module (imported when the case
    runs)."""

    def build(num_workers: int):
        from experiments import runner

        return runner.load(slug).multihost_case(num_workers)

    return build


CASES: dict[str, Callable] = {
    "parallel_sgd": _parallel_sgd,
    **{slug: _from_experiment(slug)
       for slug in ("error_feedback", "dream", "push_pull_bilevel", "ho_sfl")},
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", default="parallel_sgd", choices=sorted(CASES),
                        help="the distributed algorithm to run (default parallel_sgd)")
    parser.add_argument("--coordinator", default=None,
                        help="HOST:PORT of process 0 (jax.distributed.initialize)")
    parser.add_argument("--num-processes", type=int, default=None)
    parser.add_argument("--process-id", type=int, default=None)
    parser.add_argument("--auto", action="store_true",
                        help="jax.distributed.initialize() with auto-detection (TPU, SLURM, MPI)")
    parser.add_argument("--cpu-devices", type=int, default=None,
                        help="CPU devices per process (for trying it on one machine)")
    parser.add_argument("--launch", type=int, default=None, metavar="N",
                        help="start N local processes on a free port and wait for them")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for launched processes (default 300)")
    parser.add_argument("--tol", type=float, default=1e-5,
                        help="largest allowed |shard_map - simulate| (default 1e-5)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _launch(args: argparse.Namespace) -> int:
    if args.launch < 1:
        print("error: --launch needs a positive number of processes", file=sys.stderr)
        return 2
    coordinator = f"localhost:{_free_port()}"
    env = dict(os.environ)
    # a device-count flag inherited from a parent (pytest sets 8) would fight --cpu-devices
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                                if "xla_force_host_platform_device_count" not in f)
    base_cmd = [sys.executable, "-m", "experiments", "multihost", "--case", args.case,
                "--coordinator", coordinator, "--num-processes", str(args.launch),
                "--tol", str(args.tol)]
    if args.cpu_devices:
        base_cmd += ["--cpu-devices", str(args.cpu_devices)]
    procs = [subprocess.Popen(base_cmd + ["--process-id", str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(args.launch)]
    codes = []
    for i, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            print(f"error: process {i} did not finish within {args.timeout} s", file=sys.stderr)
            return 1
        lines = [ln for ln in out.splitlines() if ln.startswith("multihost")] or out.splitlines()
        print("\n".join(lines))
        codes.append(p.returncode)
    return max(codes)


def main(args: argparse.Namespace) -> int:
    if args.launch is not None:
        return _launch(args)
    import jax

    if args.cpu_devices:
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    if args.auto:
        jax.distributed.initialize()
    elif args.coordinator is not None:
        jax.distributed.initialize(coordinator_address=args.coordinator,
                                   num_processes=args.num_processes, process_id=args.process_id)
    import numpy as np
    from jax.experimental import multihost_utils

    from jaxopt_icml import base, mesh

    num_workers = jax.device_count()
    make, x0, oracle, num_steps = CASES[args.case](num_workers)
    global_mesh = mesh.make_mesh(devices=jax.devices())
    key = jax.random.key(0)

    sharded = jax.jit(lambda x, o, k: base.run(make(global_mesh), x, o, k, num_steps))
    state, info = sharded(x0, oracle, key)
    x_shard = multihost_utils.process_allgather(state, tiled=True)
    bits = multihost_utils.process_allgather(info["bits_sent"], tiled=True)
    # the same workers simulated (vmap) on this process's first device
    with jax.default_device(jax.local_devices()[0]):
        sim_state, sim_info = base.run(make(None), x0, oracle, key, num_steps)
    diffs = [float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
             for a, b in zip(jax.tree.leaves(x_shard), jax.tree.leaves(sim_state), strict=True)
             if np.issubdtype(np.asarray(b).dtype, np.floating)]
    diff = max(diffs, default=0.0)
    ok = diff <= args.tol and np.allclose(bits, sim_info["bits_sent"])
    print(f"multihost process {jax.process_index()}/{jax.process_count()}: case {args.case}, "
          f"{num_workers} workers on {jax.device_count()} devices, {num_steps} steps, "
          f"bits sent {float(np.sum(bits)):.0f}; max |shard_map - simulate| = {diff:.3g} "
          f"({'ok' if ok else 'MISMATCH'})", flush=True)
    return 0 if ok else 1
