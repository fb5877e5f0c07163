"""CI time as a budget: stage times, the slowest papers, and the projection to every paper.

``python -m experiments.tools.ci_budget DIR --total SECONDS`` reads what ``.ci/run`` leaves in
``DIR``: ``stages.txt`` (one ``name seconds`` line per stage) and the JUnit reports of the
notebook and test stages (``*.xml``). A paper's cost is the time of its notebook plus the summed
time of the tests in its test file (``tests/<family>/test_<slug>.py``) and of its cases in the
property matrix, in worker-seconds: the tests run on several workers, so a stage's wall time is
about its summed time over the workers.

The projection adds, to the measured total, the mean cost of an implemented paper for every
catalog paper not implemented yet, divided by the worker count; it is compared with the budget
(:data:`BUDGET_NOW_S` for the whole run now, :data:`BUDGET_ALL_S` for every paper). Over-budget
lines are printed, never raised: the stage times are measurements, not tests.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

__all__ = ["BUDGET_ALL_S", "BUDGET_NOW_S", "contract_case_papers", "main", "paper_costs",
           "report"]

BUDGET_NOW_S = 20 * 60
BUDGET_ALL_S = 40 * 60


def _cases(path: Path):
    for case in ET.parse(path).getroot().iter("testcase"):
        yield case.get("classname", ""), case.get("name", ""), float(case.get("time", 0.0))


def contract_case_papers(root=None) -> dict[str, str]:
    """``{case name: slug}`` for the property-matrix cases each paper's test file declares
    (the ``name`` of every ``...Case(...)`` call, first argument or keyword, when it is a string
    literal; read from the source without importing it)."""
    from experiments.runner import loading
    from jaxopt_icml import catalog

    root = loading.repo_root() if root is None else Path(root)
    out = {}
    for paper in catalog.implemented():
        path = root / loading.test_path(paper)
        if not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(
                    node.func, "id", getattr(node.func, "attr", "")).endswith("Case")):
                continue
            names = [kw.value for kw in node.keywords if kw.arg == "name"] + node.args[:1]
            if names and isinstance(names[0], ast.Constant) and isinstance(names[0].value, str):
                out[names[0].value] = paper.slug
    return out


def paper_costs(reports, slugs, case_papers=None) -> dict[str, float]:
    """Seconds per paper slug from JUnit ``reports``: its test file
    (``tests.<family>.test_<slug>``), its notebook (``test_notebook_executes_quick[<slug>]``)
    and its property-matrix cases (``test_contract[<case>-<check>]``, mapped to papers by
    ``case_papers``)."""
    slugs, case_papers = set(slugs), case_papers or {}
    costs: dict[str, float] = defaultdict(float)
    for report in reports:
        for classname, name, seconds in _cases(Path(report)):
            parts = classname.split(".")
            inside = name[name.index("[") + 1:name.rindex("]")] if "[" in name else None
            slug = None
            if len(parts) >= 3 and parts[0] == "tests" and parts[2].startswith("test_"):
                slug = parts[2].removeprefix("test_")
            elif inside is not None and "notebook" in name:
                slug = inside
            elif inside is not None and parts[-1] == "test_contract":
                slug = case_papers.get(inside.rsplit("-", 1)[0])
            if slug in slugs:
                costs[slug] += seconds
    return dict(costs)


def report(directory, total: float, *, workers: int | None = None) -> str:
    from jaxopt_icml import catalog

    directory = Path(directory)
    lines = []
    stages = directory / "stages.txt"
    if stages.is_file():
        lines.append("ci: stage times (s): " + ", ".join(
            f"{n} {s}" for n, s in (line.split() for line in stages.read_text().splitlines()
                                    if line.strip())))
    slugs = [p.slug for p in catalog.implemented()]
    costs = paper_costs(sorted(directory.glob("*.xml")), slugs, contract_case_papers())
    workers = workers or max(1, min(4, os.cpu_count() or 1))
    if costs:
        slowest = sorted(costs.items(), key=lambda kv: -kv[1])[:10]
        lines.append("ci: slowest papers (notebook + tests, worker-seconds): " + ", ".join(
            f"{slug} {sec:.0f}" for slug, sec in slowest))
        mean = sum(costs.values()) / len(costs)
        missing = len(catalog.papers()) - len(catalog.implemented())
        projected = total + missing * mean / workers
        lines.append(f"ci: {len(costs)} papers, mean {mean:.0f} worker-s each; projected with "
                     f"all {len(catalog.papers())} papers on {workers} workers: "
                     f"{projected:.0f} s (budget {BUDGET_ALL_S} s)"
                     + ("" if projected <= BUDGET_ALL_S else "  OVER BUDGET"))
    lines.append(f"ci: total {total:.0f} s (budget now {BUDGET_NOW_S} s)"
                 + ("" if total <= BUDGET_NOW_S else "  OVER BUDGET"))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.tools.ci_budget",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="what .ci/run leaves: stages.txt and JUnit *.xml")
    parser.add_argument("--total", type=float, required=True, help="the run's wall time (s)")
    parser.add_argument("--workers", type=int, default=None,
                        help="test workers (default: the cores, at most 4, as pytest-xdist)")
    args = parser.parse_args(argv)
    print(report(args.directory, args.total, workers=args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
