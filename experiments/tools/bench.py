"""Benchmarks: median time ratios against the best existing implementation, in one process.

``python -m experiments bench [--quick] [--repeats R] [--out DIR]`` measures, interleaved on the
same inputs (each round times A then B, the ratio is taken per round, the median over rounds is
reported):

1. ``goma_vs_sgd``: one jitted GOMA update + apply on a 10M-parameter pytree vs ``optax.sgd``;
   ``goma_vs_sgd_donated``: the same with the iterate and state donated (in-place loop);
   ``goma_vs_adam``: the same against ``optax.adam`` (context: GOMA keeps two extra buffers, the
   anchor and the previous field, as Adam keeps two moments).
2. ``sam_k1_vs_optax_sam``: one jitted Multi-step SAM (K = 1) update vs ``optax.contrib.sam``
   (opaque mode, normalized SGD adversary) on a small MLP regression loss.
3. ``scan_vmap_vs_python_loop``: a GOMA theory check (bilinear game) over 64 seeds as one
   ``lax.scan`` + ``vmap`` program vs a Python loop over seeds and steps of a jitted step.
4. The ``optim`` family against optax (:mod:`experiments.tools.bench_optim`): M+Adam and DeVA's
   vector form vs ``optax.adam``, DeVA's matrix form vs ``optax.contrib.muon``, clipped SGD vs
   ``chain(clip_by_global_norm, sgd)``, the one-step-delay wrapper vs its inner AdamW.

5. Benchmarks of other families, defined next to their experiments
   (:mod:`experiments.tools.bench_families`): Romberg-ZOGE vs the two-point estimator at equal
   function evaluations, ...

``--only NAME [NAME ...]`` runs a subset (names as in the table, or ``optim`` for group 4,
``core`` for groups 1-3, a family name such as ``zeroth_order`` for group 5). ``--donate`` and
``--grad-input`` set how group 4's steps run; ``--modes plain donated donated-grad-input`` runs
group 4 once per mode in one process (comparable numbers, one accelerator session), rewriting
``bench.json`` after each mode so that a run cut short keeps what it finished.

Absolute times are only meaningful on a GPU/TPU; ratios on the CPU say how much overhead a
method adds over its baseline there.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.tools import bench_families, bench_optim
from jaxopt_icml import base, problems
from jaxopt_icml.minimax import goma
from jaxopt_icml.optim import multistep_sam

TARGETS = {
    "goma_vs_sgd": ("<=", 2.5),
    "goma_vs_sgd_donated": ("<=", 2.5),
    "goma_vs_adam": ("<=", 2.5),
    "sam_k1_vs_optax_sam": ("<=", 1.15),
    "scan_vmap_vs_python_loop": (">=", 20.0),
    **bench_optim.TARGETS,
    **bench_families.TARGETS,
}
CORE = ("goma_vs_sgd", "goma_vs_sgd_donated", "goma_vs_adam", "sam_k1_vs_optax_sam",
        "scan_vmap_vs_python_loop")


def _block(tree):
    return jax.block_until_ready(tree)  # host (NumPy) leaves are already there


def _time(fn: Callable[[], object], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        out = fn()
    _block(out)
    return (time.perf_counter() - start) / inner


def interleaved_ratio(fn_a, fn_b, *, repeats: int, inner: int) -> dict:
    """Median over rounds of time(A)/time(B); both functions are warmed up (compiled) first."""
    _block(fn_a())
    _block(fn_b())
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(_time(fn_a, inner))
        tb.append(_time(fn_b, inner))
    ratios = np.asarray(ta) / np.asarray(tb)
    return {
        "ratio_median": float(np.median(ratios)),
        "ratio_q25": float(np.quantile(ratios, 0.25)),
        "ratio_q75": float(np.quantile(ratios, 0.75)),
        "a_median_s": float(np.median(ta)),
        "b_median_s": float(np.median(tb)),
        "repeats": repeats,
        "inner": inner,
    }


def _big_pytree(num_params: int, key) -> dict:
    # A few leaves of mixed shapes summing to num_params (like a small network).
    sizes = {"embed": (num_params // 2,), "dense": (num_params // 4 // 1000, 1000)}
    rest = num_params - (sizes["embed"][0] + sizes["dense"][0] * sizes["dense"][1])
    sizes["bias"] = (rest,)
    keys = jax.random.split(key, len(sizes))
    return {n: jax.random.normal(k, s) for (n, s), k in zip(sizes.items(), keys)}


def bench_goma(baseline, *, num_params: int, repeats: int, inner: int,
               donate: bool) -> dict:
    """One jitted training step ``(z, state) <- step(z, state)`` of GOMA vs ``baseline``.

    The field is computed inside the step (``g = 0.01 z``, the same cheap elementwise map for both
    methods), as in a real loop where the gradient is produced in the same program.
    ``donate=False`` is a plain ``jax.jit`` step (fresh output buffers each call);
    ``donate=True`` donates the iterate and the optimizer state (updates in place).
    """
    params = _big_pytree(num_params, jax.random.PRNGKey(0))

    def stepper(tx):
        @functools.partial(jax.jit, donate_argnums=(0, 1) if donate else ())
        def step(p, s):
            g = jax.tree.map(lambda x: 0.01 * x, p)
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        fresh = jax.tree.map(jnp.copy, params)
        carry = [fresh, tx.init(fresh)]

        def call():
            carry[0], carry[1] = step(carry[0], carry[1])
            return carry[0]

        return call

    out = interleaved_ratio(stepper(goma(0.1)), stepper(baseline),
                            repeats=repeats, inner=inner)
    out["num_params"] = int(sum(p.size for p in jax.tree.leaves(params)))
    out["donated"] = donate
    return out


def _mlp_loss(params, batch):
    x, y = batch
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def bench_sam(*, width: int, repeats: int, inner: int) -> dict:
    k = jax.random.split(jax.random.PRNGKey(1), 4)
    d_in, n = 64, 512
    params = {
        "w1": jax.random.normal(k[0], (d_in, width)) / np.sqrt(d_in),
        "b1": jnp.zeros(width),
        "w2": jax.random.normal(k[1], (width, 1)) / np.sqrt(width),
        "b2": jnp.zeros(1),
    }
    batch = (jax.random.normal(k[2], (n, d_in)), jax.random.normal(k[3], (n, 1)))
    grad = jax.grad(_mlp_loss)
    rho = 0.05

    def stepper(tx):
        state = tx.init(params)

        @jax.jit
        def step(p, s):
            g = grad(p, batch)
            u, s = tx.update(g, s, p, grad_fn=lambda q, i: grad(q, batch))
            return optax.apply_updates(p, u), s

        return lambda: step(params, state)

    ours = multistep_sam(optax.sgd(0.1), rho=rho, inner_steps=1, warm_start=False)
    theirs = optax.contrib.sam(optax.sgd(0.1),
                               optax.chain(optax.contrib.normalize(), optax.sgd(rho)),
                               sync_period=2, opaque_mode=True)
    out = interleaved_ratio(stepper(ours), stepper(theirs), repeats=repeats, inner=inner)
    out["num_params"] = int(sum(p.size for p in jax.tree.leaves(params)))
    return out


def bench_scan_vmap(*, seeds: int, steps: int, dim: int, repeats: int) -> dict:
    game = problems.bilinear_game(jax.random.PRNGKey(2), dim)
    keys = jax.random.split(jax.random.PRNGKey(3), seeds)
    z0 = jnp.ones(2 * dim)
    tx = goma(0.3)
    trace = lambda step, state, oracle: oracle.residual_sq(step.x)
    alg = base.from_transformation(tx)

    def fused():
        return base.run_seeds(alg, z0, game, keys, steps, trace_fn=trace)[1]

    step_jit = jax.jit(alg.update)
    init_jit = jax.jit(alg.init)
    residual_jit = jax.jit(game.residual_sq)

    def python_loop():
        traces = []
        for key in keys:
            init_key, update_key = jax.random.split(key)
            state = init_jit(z0, init_key)
            row = []
            for t in range(steps):
                step, state = step_jit(state, game, jax.random.fold_in(update_key, t))
                row.append(residual_jit(step.x))
            traces.append(jnp.stack(row))
        return jnp.stack(traces)

    # Same numbers both ways (the loop is an honest re-implementation, not a strawman).
    np.testing.assert_allclose(np.asarray(fused()), np.asarray(python_loop()), rtol=1e-4, atol=1e-6)
    out = interleaved_ratio(python_loop, fused, repeats=repeats, inner=1)
    out.update(seeds=seeds, steps=steps, dim=dim)
    return out


def scan_vs_round_loop(alg, x0, oracle, keys, rounds: int, *, trace_fn, repeats: int,
                       check: bool = True) -> dict:
    """A seed-vmapped curve over ``rounds`` rounds: one compiled ``lax.scan`` + ``vmap``
    (:func:`jaxopt_icml.base.run_seeds`) against a Python loop over rounds of one jitted,
    seed-vmapped round (the loop a user writes first). Both use the same keys (round ``t`` of
    seed ``s`` uses ``fold_in(split(key_s)[1], t)``) and, with ``check``, give the same curve.

    Returns :func:`interleaved_ratio` of time(loop) / time(scan), plus ``seeds`` and ``rounds``.
    """
    def fused():
        return base.run_seeds(alg, x0, oracle, keys, rounds, trace_fn=trace_fn)[1]

    @jax.jit
    def init_all(keys):
        return jax.vmap(lambda k: alg.init(x0, jax.random.split(k)[0]))(keys)

    @jax.jit
    def round_all(states, keys, t):
        def one(state, key):
            step, state = alg.update(state, oracle, jax.random.fold_in(jax.random.split(key)[1], t))
            return state, trace_fn(step, state, oracle)
        return jax.vmap(one)(states, keys)

    def python_loop():
        states, rows = init_all(keys), []
        for t in range(rounds):
            states, row = round_all(states, keys, jnp.int32(t))
            rows.append(row)
        # collected on the host, as a user's loop would (one jnp.stack of 1e4 operands would
        # compile a huge concatenation)
        return jax.tree.map(lambda *r: np.stack([np.asarray(x) for x in r], axis=1), *rows)

    if check:  # the loop is an honest re-implementation: same numbers both ways (to float32
        # round-off: the two programs fuse differently, and 1e4 rounds drift by ~1e-5)
        jax.tree.map(lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b),
                                                             rtol=1e-3, atol=1e-4),
                     fused(), python_loop())
    out = interleaved_ratio(python_loop, fused, repeats=repeats, inner=1)
    out.update(seeds=int(keys.shape[0]), rounds=int(rounds))
    return out


def run_all(*, quick: bool = False, repeats: int | None = None, only=None,
            num_params: int | None = None, donate: bool = False,
            grad_input: bool = False) -> dict:
    """Runs the benchmarks (all, or the names/groups in ``only``); ``quick`` shrinks sizes (for
    CI smoke tests only); ``num_params`` overrides the pytree size of groups 1 and 4;
    ``donate`` donates parameters and state in the ``optim`` steps (an in-place loop);
    ``grad_input`` passes their gradient in as an argument (see
    :func:`experiments.tools.bench_optim.stepper`)."""
    if quick:
        sizes = dict(num_params=200_000, width=64, seeds=8, steps=50, side=128)
        repeats = repeats or 3
    else:
        sizes = dict(num_params=10_000_000, width=256, seeds=64, steps=200, side=1024)
        repeats = repeats or 15
    if num_params is not None:
        if num_params < 1000:
            raise ValueError(f"num_params must be >= 1000, got {num_params}")
        sizes["num_params"] = num_params
    wanted = set(TARGETS) if not only else set()
    for name in only or ():
        groups = {"core": set(CORE), "optim": set(bench_optim.TARGETS),
                  **{g: {n for n, b in bench_families.BENCHES.items() if b.group == g}
                     for g in bench_families.GROUPS}}
        group = groups.get(name)
        if group is None and name not in TARGETS:
            raise ValueError(f"unknown benchmark {name!r}; choose from "
                             f"{', '.join(sorted(groups))}, {', '.join(TARGETS)}")
        wanted |= group if group is not None else {name}
    n = sizes["num_params"]
    core = {
        "goma_vs_sgd": lambda: bench_goma(optax.sgd(0.1), num_params=n, repeats=repeats,
                                          inner=5, donate=False),
        "goma_vs_sgd_donated": lambda: bench_goma(optax.sgd(0.1), num_params=n,
                                                  repeats=repeats, inner=5, donate=True),
        "goma_vs_adam": lambda: bench_goma(optax.adam(0.1), num_params=n, repeats=repeats,
                                           inner=5, donate=False),
        "sam_k1_vs_optax_sam": lambda: bench_sam(width=sizes["width"], repeats=repeats,
                                                 inner=20),
        "scan_vmap_vs_python_loop": lambda: bench_scan_vmap(
            seeds=sizes["seeds"], steps=sizes["steps"], dim=10, repeats=max(3, repeats // 5)),
    }
    results = {name: fn() for name, fn in core.items() if name in wanted}
    if wanted & set(bench_optim.TARGETS):
        # On an accelerator a 10M-parameter elementwise step takes ~0.1 ms, close to the cost
        # of dispatching it from Python: time more calls per round there to amortise that.
        calls = 5 if jax.default_backend() == "cpu" or quick else 50
        optim = bench_optim.run_benchmarks(big_pytree=_big_pytree, ratio=interleaved_ratio,
                                           num_params=n, matrix_side=sizes["side"],
                                           repeats=repeats, inner=calls, donate=donate,
                                           grad_input=grad_input, only=wanted)
        results.update(optim)
    family = [n for n in bench_families.BENCHES if n in wanted]
    results.update(bench_families.run_benchmarks(family, quick=quick,
                                                 repeats=repeats if quick else None))
    for name, (op, target) in TARGETS.items():
        if name not in results:
            continue
        value = results[name]["ratio_median"]
        results[name]["target"] = f"{op} {target}"
        results[name]["meets_target"] = bool(value <= target if op == "<=" else value >= target)
    results["optim_mode"] = {"donate": donate, "grad_input": grad_input,
                             "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}
    results["backend"] = jax.default_backend()
    results["devices"] = [str(d) for d in jax.devices()]
    results["quick"] = quick
    return results


def format_table(results: dict) -> str:
    lines = [f"{'benchmark':36s} {'median ratio':>12s} {'IQR':>17s} {'target':>9s}  met",
             "-" * 84]
    for name in TARGETS:
        if name not in results:
            continue
        r = results[name]
        lines.append(f"{name:36s} {r['ratio_median']:12.3f} "
                     f"[{r['ratio_q25']:6.3f}, {r['ratio_q75']:6.3f}] {r['target']:>9s}  "
                     f"{'yes' if r['meets_target'] else 'NO'}")
    if any(name in results for name in bench_optim.TARGETS):
        mode = results["optim_mode"]
        lines.append(f"optim steps: {'donated' if mode['donate'] else 'plain jit'}, gradient "
                     f"{'passed in' if mode['grad_input'] else 'formed in the step'}"
                     + (f", XLA_FLAGS={mode['XLA_FLAGS']}" if mode["XLA_FLAGS"] else ""))
    lines.append(f"backend: {results['backend']}  ({len(results['devices'])} device(s))")
    return "\n".join(lines)


MODES = bench_optim.MODES  # ``--modes``: how the optim steps run


def _check_modes(args) -> None:
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; choose from {', '.join(MODES)}")
    if args.donate or args.grad_input:
        raise ValueError("--modes sets donation and the gradient input per mode: drop "
                         "--donate/--grad-input")
    optim = set(bench_optim.TARGETS)
    if not args.only or any(n != "optim" and n not in optim for n in args.only):
        raise ValueError("--modes runs the optim benchmarks once per mode: pass --only optim "
                         "or optim benchmark names")


def main(args) -> int:
    modes = getattr(args, "modes", None)
    out = args.out or os.path.join("runs", "bench" + ("-quick" if args.quick else ""))
    path = os.path.join(out, "bench.json")
    try:
        if modes:
            _check_modes(args)
        by_mode = {}
        for mode in modes or [None]:
            donate, grad_input = MODES[mode] if mode else (args.donate, args.grad_input)
            results = run_all(quick=args.quick, repeats=args.repeats, only=args.only,
                              num_params=args.num_params, donate=donate,
                              grad_input=grad_input)
            print(format_table(results), flush=True)
            # all modes in one process (comparable); the file is rewritten after each mode, so
            # a run cut short keeps the modes it finished
            by_mode[mode] = results
            os.makedirs(out, exist_ok=True)
            with open(path, "w") as f:
                json.dump({"modes": by_mode} if modes else results, f, indent=2)
    except ValueError as err:
        print(f"error: {err}")
        return 2
    print(f"wrote {path}")
    return 0


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--out", default=None, help="output directory (default runs/bench)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help="benchmarks to run: names from the table, or the groups core/optim")
    parser.add_argument("--num-params", type=int, default=None,
                        help="pytree size of the core and optim benchmarks (default 10M)")
    parser.add_argument("--donate", action="store_true",
                        help="donate params and state in the optim steps (in-place loop)")
    parser.add_argument("--modes", nargs="+", default=None, metavar="MODE",
                        help="run the optim benchmarks once per mode, in this process: "
                             + ", ".join(MODES) + " (bench.json then holds one result per mode)")
    parser.add_argument("--grad-input", action="store_true",
                        help="pass the optim steps' gradient in as an argument (materialized, "
                             "as a backward pass gives it) instead of forming it in the step")
