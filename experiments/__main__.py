"""Command line: ``python -m experiments <command> ...`` (run from the repository root).

Commands::

    list                         catalog slugs, titles and which have an experiment
    run <slug> [--quick] [--seeds N] [--out DIR] [--resume | --overwrite] [--strict] [--shard]
        [--key K]                run one experiment, print its claims table, write
                                 DIR/results.json (with provenance: commit, command, device,
                                 versions) and DIR/<figure>.png
                                 (default DIR: runs/<slug>, or runs/<slug>-quick); DIR belongs
                                 to one experiment (DIR/experiment.json), and checkpoints
                                 already in DIR need --resume or --overwrite
    catalog [--claims] [--json]  what exists for each paper (code, tests, experiment, notebook,
                                 claims), derived from the repository
    papers [--check]             regenerate README.md's table of papers from the catalog
    notebooks [--check] [slug ...]
                                 regenerate colab/<slug>.ipynb, or check they are up to date
    bench ...                    benchmarks (experiments/tools/bench.py)
    gpu-compile ...              the optimizer benchmarks' steps compiled for an H100 without a
                                 GPU: launches, DRAM traffic bound, copies (needs jax[cuda13])
    multihost ...                a distributed algorithm over several processes (hosts), checked
                                 against the simulated run (experiments/tools/multihost.py)

Adding a command: write a module with ``add_arguments(parser)`` and ``main(args) -> int`` and
register it in :data:`COMMANDS` with :func:`from_module` (imported only when the command is used),
or register a :class:`Command` built from two functions.

Every command takes ``--debug``. An expected user error (:class:`experiments.runner.UserError`:
a bad flag, a path, checkpoints that cannot be resumed, a missing extra) is one line on stderr
and exit status 2; ``--debug`` shows its traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple


class Command(NamedTuple):
    """A subcommand: its one-line help, its argument setup and its entry point."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    main: Callable[[argparse.Namespace], int]


def from_module(module: str, help: str) -> Command:
    """A command implemented by ``module.add_arguments`` and ``module.main``, imported lazily."""
    return Command(
        help=help,
        add_arguments=lambda parser: importlib.import_module(module).add_arguments(parser),
        main=lambda args: importlib.import_module(module).main(args),
    )


# --------------------------------------------------------------------------- list


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--available", action="store_true",
                        help="only the papers that have an experiment module")


def _list_main(args: argparse.Namespace) -> int:
    from experiments import runner
    from jaxopt_icml import catalog

    available = set(runner.available_slugs())
    rows = [(str(p.id), p.slug, "yes" if p.slug in available else "no", p.title)
            for p in catalog.papers() if p.slug in available or not args.available]
    header = ("id", "slug", "experiment", "title")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]
    for row in [header] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    print(f"\n{len(available)} of {len(catalog.papers())} papers have an experiment")
    return 0


# --------------------------------------------------------------------------- run


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("slug", help="paper slug (see `python -m experiments list`)")
    parser.add_argument("--quick", action="store_true", help="QUICK config (CI size)")
    parser.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    parser.add_argument("--out", default=None,
                        help="output directory (default runs/<slug>, runs/<slug>-quick)")
    again = parser.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue from the checkpoints under the output directory")
    again.add_argument("--overwrite", action="store_true",
                       help="delete the checkpoints under the output directory and start again")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 1 when a claim fails")
    parser.add_argument("--shard", action="store_true",
                        help="shard the seeds over all local devices (seeds must be a multiple "
                             "of the device count)")
    parser.add_argument("--key", type=int, default=0, help="PRNG seed of the run (default 0)")
    parser.add_argument("--verbose", action="store_true",
                        help="also print the metrics (always written to results.json)")


RUN_MARKER = "experiment.json"


def _prepare_out(out: Path, slug: str, *, resume: bool, overwrite: bool) -> None:
    """Creates the run folder ``out`` for experiment ``slug``, or checks an existing one.

    Raises:
      UserError: ``out`` is a file or cannot be created or written; it belongs to another
        experiment (its ``experiment.json`` or ``results.json`` names another slug); it holds
        checkpoints and neither ``resume`` nor ``overwrite`` is set.
    """
    from experiments import runner

    if out.exists() and not out.is_dir():
        raise runner.UserError(f"--out {out} is an existing file, not a folder; pass another "
                               "--out")
    owners = []
    for name in (RUN_MARKER, "results.json"):
        try:
            owners.append(json.loads((out / name).read_text()).get("slug"))
        except (OSError, ValueError, AttributeError):
            pass
    other = next((o for o in owners if o and o != slug), None)
    if other is not None:
        raise runner.UserError(f"--out {out} is the run folder of experiment {other!r}, not "
                               f"{slug!r}; pass another --out")
    saved = runner.saved_checkpoints(out)
    if saved and overwrite:
        shutil.rmtree(out / "checkpoints")
    elif saved and not resume:
        where = ", ".join(f"{k} at chunk {v}" for k, v in saved.items())
        raise runner.UserError(f"{out / 'checkpoints'} holds checkpoints ({where}); pass --resume "
                               "to continue them or --overwrite to replace them")
    try:
        out.mkdir(parents=True, exist_ok=True)
        runner.write_json(out / RUN_MARKER, {"slug": slug})
    except OSError as err:
        raise runner.UserError(f"cannot write to --out {out}: "
                               f"{err.strerror or err}") from None


def _run_main(args: argparse.Namespace) -> int:
    from experiments import runner

    runner.use_agg()
    exp = runner.load(args.slug)  # UnknownExperiment: one line, status 2 (main)

    import jax

    from jaxopt_icml import theory

    try:
        cfg = runner.with_seeds(exp.QUICK if args.quick else exp.FULL, args.seeds)
    except ValueError as err:
        raise runner.UserError(f"--seeds: {err}") from None
    num_devices = jax.device_count()
    if args.shard and cfg.seeds % num_devices:
        raise runner.UserError(
            f"--shard needs seeds ({cfg.seeds}) to be a multiple of the device count "
            f"({num_devices}); pass --seeds")
    out = Path(args.out or Path("runs") / (args.slug + ("-quick" if args.quick else "")))
    _prepare_out(out, exp.SLUG, resume=args.resume, overwrite=args.overwrite)
    print(f"{exp.SLUG}: {'QUICK' if args.quick else 'FULL'} config, {cfg.seeds} seeds, "
          f"key {args.key}, {num_devices} {jax.default_backend()} device(s) -> {out}")
    if args.resume and not getattr(exp, "RESUMABLE", False):
        print(f"note: {exp.SLUG} has no checkpointed loop (RESUMABLE is not set): --resume "
              "changes nothing, the run starts from the beginning", file=sys.stderr)

    def report(kind: str, message: str) -> None:
        reports.append(kind)
        print(message, file=sys.stderr, flush=True)

    reports: list[str] = []
    start = time.perf_counter()
    with runner.reporting(report):
        results = exp.run(cfg, jax.random.PRNGKey(args.key), shard=args.shard, progress=True,
                          out_dir=str(out), resume=args.resume)
        results = jax.block_until_ready(results)
    if args.resume and getattr(exp, "RESUMABLE", False) and not reports:
        print(f"note: nothing was resumed: {exp.SLUG} saved no checkpoint under {out} in this "
              "run", file=sys.stderr)
    wall = time.perf_counter() - start

    claims = theory.check(exp.CLAIMS, results)
    known = set(getattr(exp, "KNOWN_FAILING", ()))
    metrics = exp.summarize(results)
    figures = exp.plot(results, cfg)
    try:
        paths = runner.save_figures(figures, out)
    except OSError as err:
        raise runner.UserError(f"cannot write the figures to {out}: {err}") from None
    payload = {
        "slug": exp.SLUG,
        "title": exp.TITLE,
        "quick": bool(args.quick),
        "seeds": cfg.seeds,
        "key": args.key,
        "shard": bool(args.shard),
        "resume": bool(args.resume),
        "provenance": runner.provenance(getattr(args, "argv", None)),
        "config": runner.config_dict(cfg),
        "versions": runner.versions(),
        "devices": runner.devices(),
        "wall_time_s": wall,
        "metrics": metrics,
        "claims": [c.as_dict() for c in claims],
        "all_claims_passed": all(c.passed for c in claims),
        "known_failing": sorted(known),
        "figures": [p.name for p in paths],
    }
    try:
        results_path = runner.write_json(out / "results.json", payload)
    except OSError as err:
        raise runner.UserError(f"cannot write {out / 'results.json'}: {err}") from None

    # the claims table comes last; the metrics are in results.json (printed with --verbose)
    print(f"\nrun took {wall:.1f} s; wrote {results_path} and {len(paths)} figure(s)")
    metric_lines = runner.to_jsonable(metrics)
    if getattr(args, "verbose", False):
        for name, value in metric_lines.items():
            print(f"  {name}: {value}")
    else:
        print(f"{len(metric_lines)} metrics in results.json (--verbose prints them)")
    print()
    print(theory.format_claims(claims))
    failed = [c.name for c in claims if not c.passed]
    if failed:
        documented = [n for n in failed if n in known]
        print(f"{len(failed)} claim(s) failed: {', '.join(failed)}"
              + (f" ({len(documented)} documented non-reproduction(s) in KNOWN_FAILING: "
                 f"{', '.join(documented)})" if documented else ""),
              file=sys.stderr if args.strict else sys.stdout)
    return 1 if failed and args.strict else 0


# --------------------------------------------------------------------------- registry

COMMANDS: dict[str, Command] = {
    "list": Command("list the papers and which have an experiment", _list_arguments, _list_main),
    "run": Command("run one experiment and check its claims", _run_arguments, _run_main),
    "catalog": from_module("experiments.tools.status",
                           "what exists for each paper: code, tests, experiment, notebook, claims"),
    "notebooks": from_module("experiments.tools.notebooks",
                             "regenerate the Colab notebooks, or --check they are up to date"),
    "papers": from_module("experiments.tools.papers_table",
                          "regenerate the README's table of papers, or --check it"),
    "bench": from_module("experiments.tools.bench", "benchmarks against existing implementations"),
    "bench-donation": from_module("experiments.tools.bench_donation",
                                  "donated vs plain step of every registered transformation"),
    "gpu-compile": from_module("experiments.tools.gpu_compile",
                               "compile the optimizer benchmarks for an H100 without a GPU "
                               "(launches, traffic, copies)"),
    "multihost": from_module("experiments.tools.multihost",
                             "run a distributed algorithm on a mesh over several processes"),
}


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser; only the command named in ``argv`` gets its arguments (and its imports)."""
    parser = argparse.ArgumentParser(prog="python -m experiments",
                                     description="jaxopt_icml experiments")
    sub = parser.add_subparsers(dest="command", metavar="command", required=True)
    selected = next((a for a in argv if not a.startswith("-")), None)
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        if name == selected:
            command.add_arguments(p)
            p.add_argument("--debug", action="store_true",
                           help="show the traceback of an error instead of one line")
    return parser


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def main(argv: list[str] | None = None) -> int:
    """Runs the command in ``argv``; an expected user error (:class:`runner.UserError`, an
    unknown slug) prints ``error: <one line>`` on stderr and returns 2, or raises with
    ``--debug``."""
    from experiments.runner.errors import UserError
    from experiments.runner.loading import UnknownExperiment

    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        args = build_parser(argv).parse_args(argv)
        args.argv = argv
        return int(COMMANDS[args.command].main(args) or 0)
    except (UserError, UnknownExperiment) as err:
        if debug:
            raise
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
