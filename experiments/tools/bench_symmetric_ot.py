"""Timing of symmetric OT's orbit detection and end-to-end pipeline against a full Sinkhorn.

``python -m experiments.tools.bench_symmetric_ot [--quick] [--sizes N ...] [--repeats R]``
prints a markdown table of median wall-clock times (after compilation, rounds interleaved:
each round times every column once, in the same process, on the same inputs):

* ``detection``: :func:`jaxopt_icml.transport.orbits.detect_orbits` alone (one jitted
  program: colour refinement and the exact equitability check), and without the exact check;
* ``pipeline``: :func:`jaxopt_icml.transport.symmetric.symmetric_entropic_ot` from the cost
  matrix: detection, the read of the class counts, the partition, the reduction, ott-jax's
  Sinkhorn on the ``p x q`` problem and the lift of the potentials;
* ``pipeline, partition known``: the same with the partition precomputed;
* ``full Sinkhorn``: ott-jax's ``Sinkhorn`` on the full ``n x n`` problem.

Problems (float32, ``eps = 0.05 mean(C)``, threshold ``1e-6`` and at most 5000 iterations for
both solvers): ``rings``, the experiment's ring problem (``n / 8`` rotations of 8 radii on
each side, the dihedral group of order ``n / 4`` acts, ``p = q = 8``); ``no symmetry``, i.e.
uniform random points (detection finds the discrete partition and the pipeline solves the
full problem after it). Sizes: ``n`` in {256, 1024} (``--quick``: {64, 256}).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["main", "measure", "problem", "render"]


def _have_ott() -> bool:
    try:
        import ott  # noqa: F401
    except ImportError:
        return False
    return True


def problem(kind: str, n: int, seed: int = 0):
    """``(C, a, b, eps)`` in float32: ``kind`` is ``"rings"`` or ``"no symmetry"``."""
    from experiments.transport.symmetric_ot import ring_problem

    rng = np.random.default_rng(seed)
    if kind == "rings":
        if n % 8:
            raise ValueError(f"rings needs n divisible by 8, got {n}")
        C, a, b = ring_problem(rng, n // 8, 8, 8)
    elif kind == "no symmetry":
        x, y = rng.uniform(-1, 1, (n, 2)), rng.uniform(-1, 1, (n, 2))
        C = np.sum((x[:, None, :] - y[None, :, :]) ** 2, -1)
        a = b = np.full(n, 1.0 / n)
    else:
        raise ValueError(f"kind must be 'rings' or 'no symmetry', got {kind!r}")
    C, a, b = (jnp.asarray(v, jnp.float32) for v in (C, a, b))
    return C, a, b, 0.05 * jnp.mean(C)


def measure(kind: str, n: int, *, repeats: int = 7, threshold: float = 1e-6,
            max_iterations: int = 5000, tol: float = 1e-5) -> dict:
    """Median seconds of each column on one problem (module docstring), and its context."""
    from ott.geometry import geometry
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn

    from jaxopt_icml.transport import orbits
    from jaxopt_icml.transport import symmetric as sym

    C, a, b, eps = problem(kind, n)

    @jax.jit
    def full(C, a, b, eps):
        geom = geometry.Geometry(cost_matrix=C, epsilon=eps)
        with jax.numpy_rank_promotion("allow"):  # ott-jax relies on implicit rank promotion
            out = sinkhorn.Sinkhorn(threshold=threshold, max_iterations=max_iterations)(
                linear_problem.LinearProblem(geom, a, b))
        return out.f, out.n_iters

    part = orbits.orbit_partition(C, a, b, tol=tol)
    columns = {
        "detection": lambda: orbits.detect_orbits(C, a, b, tol=tol),
        "detection, no exact check": lambda: orbits.detect_orbits(C, a, b, tol=tol,
                                                                  verify=False),
        "pipeline": lambda: sym.symmetric_entropic_ot(
            C, a, b, eps, tol=tol, threshold=threshold, max_iterations=max_iterations).f,
        "pipeline, partition known": lambda: sym.symmetric_entropic_ot(
            C, a, b, eps, threshold=threshold, max_iterations=max_iterations,
            partition=part).f,
        "full Sinkhorn": lambda: full(C, a, b, eps)[0],
    }
    for fn in columns.values():  # compile and warm up
        jax.block_until_ready(fn())
    times = {name: [] for name in columns}
    for _ in range(repeats):
        for name, fn in columns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            times[name].append(time.perf_counter() - start)
    symmetric = sym.symmetric_entropic_ot(C, a, b, eps, tol=tol, threshold=threshold,
                                          max_iterations=max_iterations)
    return {
        "problem": kind, "n": n, "p": part.num_row_classes, "q": part.num_col_classes,
        "median_s": {name: float(np.median(t)) for name, t in times.items()},
        "iterations_full": int(full(C, a, b, eps)[1]),
        "iterations_reduced": int(symmetric.reduced_output.n_iters),
        "repeats": repeats,
    }


def render(rows: list[dict]) -> str:
    """Markdown table of :func:`measure` results (milliseconds)."""
    names = list(rows[0]["median_s"])
    head = ["problem", "n", "p x q"] + [f"{name} (ms)" for name in names] + [
        "full / pipeline"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        t = r["median_s"]
        cells = [r["problem"], str(r["n"]), f"{r['p']} x {r['q']}"]
        cells += [f"{1e3 * t[name]:.3g}" for name in names]
        cells.append(f"{t['full Sinkhorn'] / t['pipeline']:.3g}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.tools.bench_symmetric_ot",
        description="median times of symmetric OT's orbit detection and pipeline against "
                    "ott-jax's full Sinkhorn (markdown table)")
    parser.add_argument("--quick", action="store_true", help="n in {64, 256}, 3 rounds")
    parser.add_argument("--sizes", type=int, nargs="+", help="override the sizes n")
    parser.add_argument("--repeats", type=int, help="interleaved rounds (default 7, quick 3)")
    args = parser.parse_args(argv)
    if not _have_ott():
        raise SystemExit("ott-jax is not installed: jaxopt_icml.transport.symmetric solves the "
                         "reduced problem with it and the baseline is its full Sinkhorn")
    sizes = args.sizes or ([64, 256] if args.quick else [256, 1024])
    repeats = args.repeats or (3 if args.quick else 7)
    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}), jax {jax.__version__}; "
          f"float32, threshold 1e-6; baseline: ott-jax Sinkhorn on the full problem; "
          f"median of {repeats} interleaved rounds after compilation")
    rows = [measure(kind, n, repeats=repeats) for kind in ("rings", "no symmetry")
            for n in sizes]
    print(render(rows))
    for r in rows:
        print(f"{r['problem']}, n = {r['n']}: Sinkhorn iterations full {r['iterations_full']}, "
              f"reduced {r['iterations_reduced']}")
    return rows


if __name__ == "__main__":
    main()
