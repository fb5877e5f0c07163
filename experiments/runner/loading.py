"""Where a paper's experiment, notebook and test live, and loading an experiment module.

The repository's conventions, derived from the catalog row (slug and family):
``experiments/<family>/<slug>.py``, ``colab/<slug>.ipynb``, ``tests/<family>/test_<slug>.py``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from jaxopt_icml import catalog

__all__ = [
    "EXPERIMENT_INTERFACE",
    "paper",
    "UnknownExperiment",
    "available_slugs",
    "experiment_module",
    "experiment_path",
    "load",
    "notebook_path",
    "repo_root",
    "test_path",
]

# What every experiment module defines (CONTRIBUTING.md section 4).
EXPERIMENT_INTERFACE = (
    "SLUG", "TITLE", "Config", "QUICK", "FULL", "make_problem", "make_methods", "run",
    "summarize", "plot", "CLAIMS",
)


class UnknownExperiment(LookupError):
    """A slug that is not in the catalog or has no experiment module."""


def repo_root() -> Path:
    """The checkout holding the ``experiments`` package."""
    return Path(__file__).resolve().parents[2]


def _paper(paper) -> catalog.Paper:
    return catalog.get(paper) if isinstance(paper, str) else paper


def experiment_module(paper) -> str:
    """``"experiments.<family>.<slug>"`` for a catalog row or slug."""
    paper = _paper(paper)
    return f"experiments.{paper.family}.{paper.slug}"


def experiment_path(paper) -> str:
    """``experiments/<family>/<slug>.py``, relative to the repository root."""
    return experiment_module(paper).replace(".", "/") + ".py"


def notebook_path(paper) -> str:
    """``colab/<slug>.ipynb``, relative to the repository root."""
    return f"colab/{_paper(paper).slug}.ipynb"


def test_path(paper) -> str:
    """``tests/<family>/test_<slug>.py``, relative to the repository root."""
    paper = _paper(paper)
    return f"tests/{paper.family}/test_{paper.slug}.py"


test_path.__test__ = False  # not a pytest test despite its name


def paper(module_name: str) -> tuple[str, str]:
    """``(SLUG, TITLE)`` of the experiment module ``experiments.<family>.<slug>``: its slug and
    its catalog row's title, so that neither is typed twice. An experiment starts with
    ``SLUG, TITLE = runner.paper(__name__)``.

    Raises:
      ValueError: ``module_name`` is not ``experiments.<family>.<slug>`` for a catalog row of
        that family.
    """
    parts = module_name.split(".")
    row = None
    if len(parts) == 3 and parts[0] == "experiments":
        try:
            row = catalog.get(parts[2])
        except KeyError:
            row = None
    if row is None or row.family != parts[1]:
        raise ValueError(f"{module_name!r} is not experiments.<family>.<slug> for a catalog "
                         "paper of that family")
    return row.slug, row.title


def available_slugs(root=None) -> list[str]:
    """Catalog slugs that have an experiment module, in catalog order."""
    root = repo_root() if root is None else Path(root)
    return [p.slug for p in catalog.papers() if (root / experiment_path(p)).is_file()]


def load(slug: str):
    """Imports the experiment module for ``slug``.

    Raises:
      UnknownExperiment: with the list of valid slugs, when ``slug`` is not in the catalog or
        has no experiment module yet.
    """
    valid = available_slugs()
    if slug not in valid:
        known = slug in catalog.slugs()
        reason = "has no experiment module yet" if known else "is not a catalog slug"
        raise UnknownExperiment(
            f"{slug!r} {reason}; experiments available: {', '.join(valid) or '(none)'}"
        )
    return importlib.import_module(experiment_module(slug))
