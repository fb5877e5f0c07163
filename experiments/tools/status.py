"""What exists for each paper of the catalog, derived from the repository, never typed in.

``python -m experiments catalog [--claims] [--json]`` prints one row per paper: whether its code
(the modules its catalog entry registers, each with an ``__all__``), tests, experiment and
notebook exist, and its claims: evaluated with ``--claims`` (each experiment's QUICK config, key
0), otherwise read from the newest record under ``runs/`` (written by ``python -m experiments
run``, or by a notebook executed with ``JAXOPT_ICML_RECORD=1`` as CI does).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from experiments.runner import loading
from jaxopt_icml import catalog

__all__ = ["PARTS", "add_arguments", "claims_outcome", "current_known_failing", "main",
           "recorded_claims", "status"]

PARTS = ("code", "tests", "experiment", "notebook")


def _has_code(paper: catalog.Paper) -> bool:
    if not paper.implemented:
        return False
    try:
        names = catalog.public_names(paper)
        module = importlib.import_module(paper.package)
    except ImportError:
        return False
    return bool(names) and all(hasattr(module, name) for name in names)


def _load(paper: catalog.Paper, root: Path):
    """The experiment module of ``paper`` when ``root`` is this checkout, else ``None``."""
    if not (root / loading.experiment_path(paper)).is_file():
        return None
    if root.resolve() != loading.repo_root().resolve():
        return None  # another tree: its files are seen, its modules are not imported
    try:
        return importlib.import_module(loading.experiment_module(paper))
    except Exception:  # noqa: BLE001 - a module that fails to import is not an experiment
        return None


def _has_experiment(paper: catalog.Paper, root: Path) -> bool:
    module = _load(paper, root)
    return (module is not None
            and all(hasattr(module, name) for name in loading.EXPERIMENT_INTERFACE)
            and module.SLUG == paper.slug and bool((module.__doc__ or "").strip()))


def claims_outcome(failed, known_failing=()) -> bool | str:
    """``True`` when nothing failed; ``"known"`` when every failed claim is one of the
    experiment's documented non-reproductions (``KNOWN_FAILING``); ``False`` otherwise."""
    failed = set(failed)
    if not failed:
        return True
    return "known" if failed <= set(known_failing) else False


def _claims_pass(paper: catalog.Paper, root: Path) -> bool | str:
    import jax

    from jaxopt_icml import theory

    module = _load(paper, root)
    results = module.run(module.QUICK, jax.random.PRNGKey(0))
    failed = [r.name for r in theory.check(module.CLAIMS, results) if not r.passed]
    return claims_outcome(failed, getattr(module, "KNOWN_FAILING", ()))


def current_known_failing(paper: catalog.Paper) -> tuple[str, ...]:
    """The experiment's ``KNOWN_FAILING`` now (empty when it has none or cannot be loaded)."""
    module = _load(paper, loading.repo_root())
    return tuple(getattr(module, "KNOWN_FAILING", ())) if module is not None else ()


def recorded_claims(paper: catalog.Paper, root: Path) -> bool | str | None:
    """Whether the newest ``runs/<slug>*/results.json`` records every claim passing
    (``True``), only documented non-reproductions failing (``"known"``, see
    :func:`claims_outcome`) or an unexpected failure (``False``); ``None`` when no run was
    recorded."""
    runs = Path(root) / "runs"
    if not runs.is_dir():
        return None
    candidates = [p for p in runs.glob(f"{paper.slug}*/results.json")
                  if p.parent.name == paper.slug or p.parent.name.startswith(f"{paper.slug}-")]
    if not candidates:
        return None
    newest = max(candidates, key=lambda p: p.stat().st_mtime)
    try:
        payload = json.loads(newest.read_text())
    except (OSError, ValueError):
        return None
    claims = payload.get("claims", [])
    if not claims:
        return False
    failed = [c.get("name") for c in claims if not c.get("passed")]
    # A documented miss counts only while the experiment still documents it: a stale run
    # recorded under an older KNOWN_FAILING does not excuse a failure dropped from it since.
    known = set(payload.get("known_failing", ())) & set(current_known_failing(paper))
    return claims_outcome(failed, known)


def status(paper: catalog.Paper | str, root=None, *, claims: bool = False) -> dict:
    """What exists for ``paper`` in the checkout ``root`` (default: this one).

    Returns:
      ``{"code", "tests", "experiment", "notebook"}`` booleans, ``"claims"`` (``True``,
      ``"known"`` when the only failing claims are documented non-reproductions, ``False``, or
      ``None`` when neither evaluated nor recorded) and ``"status"``: ``"complete"`` when the
      four parts exist and no claim fails unexpectedly, ``"empty"`` when nothing exists, else
      ``"partial"``.
    """
    paper = catalog.get(paper) if isinstance(paper, str) else paper
    root = loading.repo_root() if root is None else Path(root)
    out = {
        "code": _has_code(paper),
        "tests": (root / loading.test_path(paper)).is_file(),
        "experiment": _has_experiment(paper, root),
        "notebook": (root / loading.notebook_path(paper)).is_file(),
    }
    if not out["experiment"]:
        out["claims"] = None
    elif claims:
        out["claims"] = _claims_pass(paper, root)
    else:
        out["claims"] = recorded_claims(paper, root)
    flags = [out[k] for k in PARTS]
    if all(flags) and out["claims"] is not False:
        out["status"] = "complete"
    else:
        out["status"] = "empty" if not any(flags) else "partial"
    return out


_CLAIM_MARK = {True: "pass", "known": "pass+known-miss", False: "FAIL", None: "?"}


def _table(rows) -> str:
    header = ("id", "slug", "family") + PARTS + ("claims", "status")
    lines = [header]
    for paper, st in rows:
        marks = tuple("x" if st[p] else "." for p in PARTS)
        claims = _CLAIM_MARK[st["claims"]] if st["experiment"] else "."
        lines.append((str(paper.id), paper.slug, paper.family) + marks + (claims, st["status"]))
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    text = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


def _counts(rows) -> dict:
    counts = {p: sum(bool(st[p]) for _, st in rows) for p in PARTS}
    counts["claims passing"] = sum(st["claims"] is True for _, st in rows)
    counts["with documented misses"] = sum(st["claims"] == "known" for _, st in rows)
    for word in ("complete", "partial", "empty"):
        counts[word] = sum(st["status"] == word for _, st in rows)
    counts["total"] = len(rows)
    return counts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", action="store_true",
                        help="also run each experiment's QUICK claims (slow)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def _rows_with_progress(papers, stream=None) -> list:
    """``[(paper, status(paper, claims=True))]``, printing one line per paper on ``stream``
    (stderr): its outcome, the time it took and an estimate of the time left (the mean time of
    the experiments run so far, times the experiments left)."""
    stream = sys.stderr if stream is None else stream
    root = loading.repo_root()
    has_run = [(root / loading.experiment_path(p)).is_file() for p in papers]
    left, spent, runs, rows = sum(has_run), 0.0, 0, []
    for i, (paper, runs_claims) in enumerate(zip(papers, has_run, strict=True)):
        start = time.perf_counter()
        st = status(paper, claims=True)
        took = time.perf_counter() - start
        rows.append((paper, st))
        if runs_claims:
            spent, runs, left = spent + took, runs + 1, left - 1
        eta = _format_seconds(spent / runs * left) if runs else "unknown"
        print(f"catalog --claims [{i + 1}/{len(papers)}] {paper.slug}: "
              f"{_CLAIM_MARK[st['claims']]} in {took:.1f} s; about {eta} left",
              file=stream, flush=True)
    return rows


def main(args: argparse.Namespace) -> int:
    papers = list(catalog.papers())
    if args.claims:
        rows = _rows_with_progress(papers)
    else:
        rows = [(p, status(p)) for p in papers]
    counts = _counts(rows)
    if args.json:
        print(json.dumps({
            "papers": [{**p._asdict(), "modules": list(p.modules),
                        "has": {k: st[k] for k in PARTS}, "claims": st["claims"],
                        "status": st["status"]} for p, st in rows],
            "counts": counts}, indent=2))
        return 0
    print(_table(rows))
    print()
    print("claims: pass/FAIL as evaluated (--claims) or recorded by the newest run under runs/ "
          "(`python -m experiments run`, or a notebook executed with JAXOPT_ICML_RECORD=1 as CI "
          "does); ? = not evaluated here (each paper's claims test runs them in CI); "
          "pass+known-miss = every failing claim is a documented non-reproduction (the "
          "experiment's KNOWN_FAILING, reported with its measured value)")
    print("  ".join(f"{k}: {v}" for k, v in counts.items()))
    return 0
