"""The papers, and the one place a paper is registered.

Each row of the packaged ``catalog.json`` is a paper: ``id``, ``slug``, ``title``, ``family``
and, once the paper is implemented, ``modules``: the modules of ``jaxopt_icml.<family>`` that
implement it (the first one is the paper's own; shared baselines may follow). Everything else is
derived from that entry:

* the paper's **public names** are the union of its modules' ``__all__``
  (:func:`public_names`);
* a family package (``jaxopt_icml.minimax`` ...) exports the public names of all its papers
  (:func:`export_family`, called by every family ``__init__``), so registering a paper adds its
  names to the family with no other edit;
* where the paper's experiment, notebook and test live is a repository convention, known to the
  repository's tooling (``python -m experiments catalog`` shows what exists for each row), not to
  this installed package.

Command line::

    python -m jaxopt_icml.catalog            # the rows, their modules and public-name counts
    python -m jaxopt_icml.catalog --json     # the same as JSON
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.resources
import json
import sys
from collections.abc import MutableMapping
from typing import NamedTuple

from jaxopt_icml import FAMILIES

__all__ = [
    "FAMILIES",
    "Paper",
    "export_family",
    "family_exports",
    "get",
    "implemented",
    "main",
    "papers",
    "public_names",
    "raw_rows",
    "slugs",
]

_KEYS = {"id", "slug", "title", "family", "modules"}


class Paper(NamedTuple):
    """One catalog row.

    Attributes:
      id: paper number (1 to the number of rows).
      slug: short name; also the stem of the paper's experiment, notebook and test files.
      title: paper title as in the catalog.
      family: one of :data:`FAMILIES`; the paper's code lives in ``jaxopt_icml.<family>``.
      modules: the modules implementing the paper, relative to the family package (``("goma",
        "baselines")``); empty until the paper is implemented.
    """

    id: int
    slug: str
    title: str
    family: str
    modules: tuple[str, ...]

    @property
    def package(self) -> str:
        """The family package, e.g. ``"jaxopt_icml.minimax"``."""
        return f"jaxopt_icml.{self.family}"

    @property
    def module_names(self) -> tuple[str, ...]:
        """The modules' full names, e.g. ``("jaxopt_icml.minimax.goma", ...)``."""
        return tuple(f"{self.package}.{m}" for m in self.modules)

    @property
    def implemented(self) -> bool:
        return bool(self.modules)


def raw_rows() -> list[dict]:
    """The packaged ``catalog.json`` exactly as stored (a list of dicts)."""
    text = importlib.resources.files("jaxopt_icml").joinpath("catalog.json").read_text("utf-8")
    return json.loads(text)


def _paper(row: dict) -> Paper:
    unknown = set(row) - _KEYS
    if unknown:
        raise ValueError(f"catalog row {row.get('slug')!r}: unknown keys {sorted(unknown)}")
    if row["family"] not in FAMILIES:
        raise ValueError(f"catalog row {row['slug']!r}: family {row['family']!r} is not one of "
                         f"{FAMILIES}")
    modules = tuple(row.get("modules", ()))
    if any(not m.isidentifier() for m in modules) or len(set(modules)) != len(modules):
        raise ValueError(f"catalog row {row['slug']!r}: modules must be distinct module names "
                         f"inside jaxopt_icml.{row['family']}, got {list(modules)}")
    return Paper(int(row["id"]), row["slug"], row["title"], row["family"], modules)


@functools.lru_cache(maxsize=1)
def papers() -> tuple[Paper, ...]:
    """All rows, in catalog order."""
    return tuple(_paper(row) for row in raw_rows())


def slugs() -> tuple[str, ...]:
    return tuple(p.slug for p in papers())


def implemented() -> tuple[Paper, ...]:
    """The rows that name their modules."""
    return tuple(p for p in papers() if p.implemented)


def get(slug: str) -> Paper:
    """The row for ``slug``; ``KeyError`` listing the valid slugs otherwise."""
    for p in papers():
        if p.slug == slug:
            return p
    raise KeyError(f"unknown paper slug {slug!r}; valid slugs: {', '.join(slugs())}")


def public_names(paper: Paper | str) -> tuple[str, ...]:
    """The paper's public names: its modules' ``__all__``, in order, each name once.

    Raises:
      ImportError: a module does not import or has no ``__all__``.
    """
    paper = get(paper) if isinstance(paper, str) else paper
    names: dict[str, None] = {}
    for full in paper.module_names:
        module = importlib.import_module(full)
        if not hasattr(module, "__all__"):
            raise ImportError(f"{full} (registered by paper {paper.slug!r}) has no __all__")
        names.update(dict.fromkeys(module.__all__))
    return tuple(names)


def family_exports(family: str) -> dict[str, object]:
    """``{name: object}`` for the public names of every paper registered in ``family``.

    Raises:
      ImportError: a registered module has no ``__all__`` or lacks a name it lists, or two
        registered modules export one name bound to different objects.
    """
    out: dict[str, object] = {}
    origin: dict[str, str] = {}
    for paper in papers():
        if paper.family != family:
            continue
        for full in paper.module_names:
            module = importlib.import_module(full)
            if not hasattr(module, "__all__"):
                raise ImportError(f"{full} (registered by paper {paper.slug!r}) has no __all__")
            for name in module.__all__:
                if not hasattr(module, name):
                    raise ImportError(f"{full}.__all__ lists {name!r}, which it does not define")
                value = getattr(module, name)
                if name in out and out[name] is not value:
                    raise ImportError(f"jaxopt_icml.{family}: {name!r} is exported by both "
                                      f"{origin[name]} and {full} with different values")
                out[name], origin[name] = value, full
    return out


def export_family(namespace: MutableMapping) -> list[str]:
    """Fills a family package's namespace with :func:`family_exports` and returns ``__all__``.

    A family ``__init__`` is one statement: ``__all__ = catalog.export_family(globals())``.
    """
    family = namespace["__name__"].rpartition(".")[2]
    if family not in FAMILIES:
        raise ImportError(f"{namespace['__name__']} is not a family package ({FAMILIES})")
    exports = family_exports(family)
    namespace.update(exports)
    return sorted(exports)


# --------------------------------------------------------------------------- command line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxopt_icml.catalog",
        description="The catalog's rows and the modules registered for each (the repository's "
                    "`python -m experiments catalog` also shows tests, experiments, notebooks "
                    "and claims).")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    rows = [(p, public_names(p) if p.implemented else ()) for p in papers()]
    if args.json:
        print(json.dumps([{**p._asdict(), "modules": list(p.modules), "public_names": list(n)}
                          for p, n in rows], indent=2))
        return 0
    width = max(len(p.slug) for p, _ in rows)
    for p, names in rows:
        what = (f"{', '.join(p.modules)} ({len(names)} public names)" if p.implemented
                else "-")
        print(f"{p.id:>3}  {p.slug:<{width}}  {p.family:<12}  {what}")
    print(f"\n{sum(p.implemented for p, _ in rows)} of {len(rows)} papers implemented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
