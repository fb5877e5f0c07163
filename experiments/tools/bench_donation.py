"""Donated against plain training steps of every registered transformation.

``python -m experiments.tools.bench_donation [--quick] [--filter PATTERN ...] [--json PATH]
[--num-params N] [--rounds R]`` times, for every ``TransformationCase`` of the property matrix
(the ``CONTRACT_CASES`` of each catalog paper's test module) and for GOMA explicitly, one jitted
training step

    (params, state) <- (apply_updates(params, u), state'),  u, state' = tx.update(g, state, params)

compiled twice: plain ``jax.jit`` (fresh output buffers every call) and
``jax.jit(..., donate_argnums=(0, 1))`` (parameters and state donated, as a training loop that
updates in place does). Each keeps its own carried ``(params, state)``. The two are timed
interleaved (each round times ``inner`` plain calls, then ``inner`` donated ones; see
:func:`experiments.tools.bench.interleaved_ratio`) and the table reports the median time per
step of each and the median over rounds of the per-round ratio donated / plain. A ratio above
:data:`LIMIT` is flagged: donating should never cost more than a plain step.

``copies`` counts the non-scalar ``copy`` instructions of the compiled plain and donated steps
(outside fusion bodies, where a copy is a layout change inside a loop).
Under donation XLA inserts one wherever an input buffer would be overwritten while another
computation still has to read its old value (for instance a state leaf that is written before
the parameter update that reads its previous value).

Problems:

* the matrix's own problem by default: :func:`jaxopt_icml.testing.make_params` (23 float32
  parameters in a mixed tree) and the loss :func:`jaxopt_icml.testing.matrix_loss`, the
  gradient computed in the step, plus the case's keyword oracles (``field_fn``, ``grad_fn``...).
  At this size a step costs a few microseconds and the ratio measures per-call overhead
  (dispatch, one extra thunk per inserted copy);
* ``--num-params N``: the same tree with its leaves enlarged to about ``N`` parameters in all
  and the loss ``0.005 ||p||^2`` (gradient ``0.01 p``, the cheap elementwise map of
  :mod:`experiments.tools.bench`), so that memory traffic dominates;
* the explicit GOMA rows ``goma@bench`` and ``optax_sgd@bench``: :mod:`experiments.tools.bench`'s
  pytree (10M parameters; ``--quick`` 200k) with the gradient ``0.01 p`` formed in the step,
  the setting of ``bench``'s ``goma_vs_sgd_donated``.

A case whose ``init`` stores a ``params`` array in the state without copying it cannot donate
both (XLA rejects donating one buffer twice); its row times the donated step on a copied state
and says so. ``--filter`` matches case names and test-module paths (``--filter tests/online``).
``--quick`` (3 rounds) is a smoke test: its ratios are noise-dominated.

Times are meaningful relative to each other in one process; name the device with any number.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import importlib.util
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

LIMIT = 1.1  # donated / plain above this is flagged
ROOT = Path(__file__).resolve().parents[2]


class Target(NamedTuple):
    """One row: a transformation and the problem its step runs on."""

    name: str
    source: str
    tx: Any
    params: Any
    loss: Any  # params -> scalar; the step differentiates it
    extra: dict  # keyword oracles for ``update``


# --------------------------------------------------------------------------- discovery


def contract_cases(root: Path = ROOT) -> list[tuple[str, Any]]:
    """``(test module, case)`` for every case in the ``CONTRACT_CASES`` of the test module of
    every catalog paper (the cases ``tests/test_contract.py`` runs); an import failure becomes
    ``(test module, "ImportError: ...")``. Needs the test modules' imports (the ``dev``
    extra)."""
    from experiments import runner
    from jaxopt_icml import catalog

    out = []
    for row in catalog.papers():
        path = root / runner.test_path(row)
        if not path.is_file() or "CONTRACT_CASES" not in path.read_text("utf-8"):
            continue
        label = str(path.relative_to(root))
        module = _loaded(path)
        if module is None:
            name = "_bench_donation_cases." + ".".join(path.relative_to(root).with_suffix("").parts)
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            try:
                sys.modules[name] = module
                spec.loader.exec_module(module)
            except Exception as err:  # noqa: BLE001 - reported as the module's row
                out.append((label, f"{type(err).__name__}: {err}"[:200]))
                continue
        out.extend((label, case) for case in getattr(module, "CONTRACT_CASES", ()))
    return out


def _loaded(path: Path):
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve() == path.resolve():
            return module
    return None


def scaled_params(num_params: int):
    """The matrix's tree (:func:`jaxopt_icml.testing.make_params`) with every dimension of every
    leaf multiplied by one factor (matrices stay matrices, the scalar stays a scalar), about
    ``num_params`` parameters in all; standard normal values."""
    import jax

    from jaxopt_icml.testing import make_params

    leaves, treedef = jax.tree.flatten(make_params())

    def total(factor):
        return sum(math.prod(max(1, round(d * factor)) for d in leaf.shape) for leaf in leaves)

    lo, hi = 1.0, float(num_params)
    for _ in range(60):  # bisection: total() grows with the factor
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < num_params else (lo, mid)
    key = jax.random.PRNGKey(0)
    return jax.tree.unflatten(treedef, [
        jax.random.normal(jax.random.fold_in(key, i),
                          tuple(max(1, round(d * lo)) for d in leaf.shape), leaf.dtype)
        for i, leaf in enumerate(leaves)])


def _quadratic(params):
    """``0.005 ||p||^2``: gradient ``0.01 p`` (``bench``'s elementwise map)."""
    import jax
    import jax.numpy as jnp

    return 0.005 * sum(jnp.sum(jnp.square(p.astype(jnp.float32))) for p in jax.tree.leaves(params))


class Entry(NamedTuple):
    """A row to measure: ``build()`` returns its :class:`Target` (or raises); built only when
    the row is selected, one at a time."""

    name: str
    source: str
    build: Any


def case_entries(cases, *, num_params: int | None = None) -> list[Entry]:
    """An :class:`Entry` per ``TransformationCase`` (algorithm cases are skipped; a module that
    failed to import gives an entry that raises its error)."""
    from jaxopt_icml.testing import TransformationCase, make_params, matrix_loss
    from jaxopt_icml.testing.transformations import _extra, _make

    def build(case, source):
        if num_params is None:
            params, loss = make_params(), matrix_loss
        else:
            params, loss = scaled_params(num_params), _quadratic
        return Target(case.name, source, _make(case), params, loss, _extra(case, loss))

    def failed(error):
        raise ImportError(error)

    out = []
    for source, case in cases:
        if isinstance(case, str):
            out.append(Entry("(import)", source, functools.partial(failed, case)))
        elif isinstance(case, TransformationCase):
            out.append(Entry(case.name, source, functools.partial(build, case, source)))
    return out


def goma_entries(num_params: int) -> list[Entry]:
    """GOMA and ``optax.sgd`` (context) on :mod:`experiments.tools.bench`'s pytree."""

    def build(name):
        import jax
        import optax

        from experiments.tools.bench import _big_pytree
        from jaxopt_icml.minimax import goma

        tx = goma(0.1) if name == "goma@bench" else optax.sgd(0.1)
        return Target(name, "experiments/tools/bench.py", tx,
                      _big_pytree(num_params, jax.random.PRNGKey(0)), _quadratic, {})

    return [Entry(n, "experiments/tools/bench.py", functools.partial(build, n))
            for n in ("goma@bench", "optax_sgd@bench")]


# --------------------------------------------------------------------------- measuring


def step_fn(target: Target, *, donate: bool):
    """The jitted step ``(p, s) -> (p', s')``; ``donate`` donates ``p`` and ``s``."""
    import jax
    import optax

    grad = jax.grad(target.loss)

    @functools.partial(jax.jit, donate_argnums=(0, 1) if donate else ())
    def step(p, s):
        u, s = target.tx.update(grad(p), s, p, **target.extra)
        return optax.apply_updates(p, u), s

    return step


_COPY = re.compile(r"=\s*[a-z0-9]+\[([0-9,]*)\]\S*\s+copy\(")
_HEADER = re.compile(r"^(?:ENTRY\s+)?(%[\w.\-]+)\s.*\{\s*$")
_FUSED = re.compile(r"\sfusion\(.*?calls=(%[\w.\-]+)")


def count_copies(hlo_text: str) -> int:
    """Non-scalar ``copy`` instructions of a compiled program (its text), outside fusion
    bodies: buffer copies, not the layout changes a fused loop computes."""
    fused = set(_FUSED.findall(hlo_text))
    total, inside = 0, False
    for line in hlo_text.splitlines():
        header = _HEADER.match(line)
        if header:
            inside = header.group(1) in fused
            continue
        if not inside:
            total += sum(1 for m in _COPY.finditer(line) if m.group(1))
    return total


def stepper(target: Target, *, donate: bool):
    """``(call, copies)``: a no-argument callable advancing its own ``(params, state)`` by one
    step, and the compiled step's copy count."""
    import jax
    import jax.numpy as jnp

    step = step_fn(target, donate=donate)
    fresh = jax.tree.map(jnp.copy, target.params)
    state = target.tx.init(fresh)
    shared = aliased_leaves(fresh, state)
    if shared and donate:  # donating one buffer twice is an error: time the user's workaround
        state = jax.tree.map(jnp.copy, state)
    carry = [fresh, state]
    copies = count_copies(step.lower(*carry).compile().as_text())

    def call():
        carry[0], carry[1] = step(carry[0], carry[1])
        return carry[0]

    return call, copies, shared


def aliased_leaves(params, state) -> int:
    """State leaves that are one of the ``params`` arrays themselves (``init`` stored them
    without a copy): donating params and state then donates a buffer twice (an error), and
    donating the state alone deletes the caller's parameters."""
    import jax

    ids = {id(p) for p in jax.tree.leaves(params)}
    return sum(id(leaf) in ids for leaf in jax.tree.leaves(state))


def measure(target: Target, *, rounds: int, budget_s: float) -> dict:
    """Interleaved timing of the plain and the donated step of ``target``."""
    import time

    import jax

    from experiments.tools.bench import interleaved_ratio

    plain, plain_copies, _ = stepper(target, donate=False)
    donated, donated_copies, shared = stepper(target, donate=True)
    jax.block_until_ready(plain())
    jax.block_until_ready(donated())
    start = time.perf_counter()
    jax.block_until_ready(plain())
    single = max(time.perf_counter() - start, 1e-6)
    # keep both at the same step count, so that a step whose cost depends on the count (a
    # periodic refresh) lands in the same round for both
    jax.block_until_ready(donated())
    inner = int(min(500, max(1, budget_s / single)))
    r = interleaved_ratio(donated, plain, repeats=rounds, inner=inner)
    return {"case": target.name, "source": target.source,
            "num_params": int(sum(x.size for x in jax.tree.leaves(target.params))),
            "plain_us": r["b_median_s"] * 1e6, "donated_us": r["a_median_s"] * 1e6,
            "ratio": r["ratio_median"], "ratio_q25": r["ratio_q25"],
            "ratio_q75": r["ratio_q75"], "copies_plain": plain_copies,
            "copies_donated": donated_copies, "rounds": rounds, "inner": inner,
            "flag": r["ratio_median"] > LIMIT,
            "note": (f"init stores {shared} params leaf/leaves uncopied: donating params and "
                     "state fails (donated column: state copied first)") if shared else ""}


def _selected(name: str, source: str, patterns) -> bool:
    if not patterns:
        return True
    return any(p in name or fnmatch.fnmatch(name, p) or p in source for p in patterns)


def run(*, quick: bool = False, patterns=(), num_params: int | None = None,
        rounds: int | None = None, goma_params: int | None = None, progress=None) -> dict:
    """The table's rows (``rows``: one dict per case, ``errors``: cases that could not run)
    and the device. ``patterns`` keep the cases whose name or test module contains one of
    them (or matches it as a glob); ``goma_params`` sizes the explicit GOMA rows."""
    import jax

    rounds = rounds or (3 if quick else 11)
    budget_s = 0.002 if quick else 0.01  # time per round and mode
    goma_params = goma_params or (200_000 if quick else 10_000_000)
    entries = case_entries(contract_cases(), num_params=num_params) + goma_entries(goma_params)
    rows, errors = [], []
    for entry in entries:
        if not _selected(entry.name, entry.source, patterns):
            continue
        try:
            row = measure(entry.build(), rounds=rounds, budget_s=budget_s)
        except Exception as err:  # noqa: BLE001 - one failing case does not stop the table
            errors.append({"case": entry.name, "source": entry.source,
                           "error": f"{type(err).__name__}: {err}"[:200]})
            continue
        finally:
            jax.clear_caches()  # one compiled pair at a time (CONTRIBUTING.md section 6.6)
        rows.append(row)
        if progress:
            progress(row)
    return {"rows": rows, "errors": errors, "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()], "quick": quick,
            "num_params": num_params, "limit": LIMIT}


def format_table(results: dict) -> str:
    """Markdown table: case, plain us, donated us, ratio (IQR), copies, flag."""
    lines = ["| case | params | plain us | donated us | donated / plain | copies plain / donated "
             f"| > {LIMIT} |", "|---|---:|---:|---:|---:|---:|:---:|"]
    for r in results["rows"]:
        lines.append(f"| {r['case']} | {r['num_params']} | {_us(r['plain_us'])} | "
                     f"{_us(r['donated_us'])} | {r['ratio']:.2f} [{r['ratio_q25']:.2f}, "
                     f"{r['ratio_q75']:.2f}] | {r['copies_plain']} / {r['copies_donated']} | "
                     f"{'**yes**' if r['flag'] else ''}{' ' + r['note'] if r['note'] else ''} |")
    for e in results["errors"]:
        lines.append(f"| {e['case']} | | | | error: {e['error']} | | |")
    flagged = [r["case"] for r in results["rows"] if r["flag"]]
    lines.append("")
    lines.append(f"backend: {results['backend']} ({len(results['devices'])} device(s)); median "
                 f"of {results['rows'][0]['rounds'] if results['rows'] else 0} interleaved "
                 f"rounds; {len(flagged)} of {len(results['rows'])} above {LIMIT}"
                 + (f": {', '.join(flagged)}" if flagged else ""))
    return "\n".join(lines)


def _us(t: float) -> str:
    return f"{t:.1f}" if t < 1000 else f"{t:.0f}"


# --------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="3 rounds, small GOMA rows")
    parser.add_argument("--filter", nargs="+", default=(), metavar="PATTERN",
                        help="cases whose name or test module contains PATTERN (or matches it "
                             "as a glob)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the rows here")
    parser.add_argument("--num-params", type=int, default=None,
                        help="enlarge the matrix's tree to about N parameters (loss 0.005|p|^2)")
    parser.add_argument("--goma-params", type=int, default=None,
                        help="pytree size of the goma@bench rows (default 10M, --quick 200k)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")


def main(args=None) -> int:
    """CLI entry point: ``args`` is an ``argparse.Namespace`` (from :func:`add_arguments`, as
    ``experiments/__main__.py`` passes it) or a list of command-line words."""
    if args is None or isinstance(args, list | tuple):
        parser = argparse.ArgumentParser(prog="python -m experiments.tools.bench_donation",
                                         description=__doc__.splitlines()[0])
        add_arguments(parser)
        args = parser.parse_args(list(args or []))
    if args.num_params is not None and args.num_params < 100:
        print(f"error: --num-params must be >= 100, got {args.num_params}")
        return 2
    # the distributed cases build one worker per local device, as in tests/conftest.py (the
    # flag takes effect only if JAX's backends have not started yet)
    flag = "--xla_force_host_platform_device_count"
    if flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}=8".strip()
    results = run(quick=args.quick, patterns=tuple(args.filter or ()),
                  num_params=args.num_params, rounds=args.rounds, goma_params=args.goma_params,
                  progress=lambda r: print(f"  {r['case']}: {r['ratio']:.2f}", flush=True))
    print(format_table(results))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
