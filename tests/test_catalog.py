"""The catalog: one entry per paper registers its modules; everything else follows from it.

The package side (``jaxopt_icml.catalog``: rows, public names, family exports) and the
repository side (``experiments.tools.status``: what exists for each row, derived from the tree).
"""

import argparse
import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import runner
from experiments.tools import status
from jaxopt_icml import catalog

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_FAMILIES = {
    "optim", "zeroth_order", "minimax", "distributed", "online", "transport", "robust",
    "generative", "decision", "preference", "training", "stats", "systems",
}
IMPLEMENTED = catalog.implemented()
PARTS = status.PARTS


# --------------------------------------------------------------------------- rows


def test_rows_have_unique_contiguous_ids_and_unique_slugs():
    papers = catalog.papers()
    assert len(papers) == len(catalog.raw_rows())
    assert sorted(p.id for p in papers) == list(range(1, len(papers) + 1))
    assert len({p.slug for p in papers}) == len(papers)


def test_families_are_the_thirteen_allowed():
    assert set(catalog.FAMILIES) == ALLOWED_FAMILIES
    assert {p.family for p in catalog.papers()} <= ALLOWED_FAMILIES


def test_every_family_is_a_package():
    for family in catalog.FAMILIES:
        module = importlib.import_module(f"jaxopt_icml.{family}")
        assert isinstance(module.__all__, list)


def test_unknown_slug_lists_valid_ones():
    with pytest.raises(KeyError, match="goma"):
        catalog.get("no_such_paper")


def test_rows_are_the_packaged_json():
    rows = [{"id": p.id, "slug": p.slug, "title": p.title, "family": p.family,
             **({"modules": list(p.modules)} if p.modules else {})} for p in catalog.papers()]
    assert rows == catalog.raw_rows()
    assert rows == json.loads((ROOT / "jaxopt_icml" / "catalog.json").read_text())


def test_rows_agree_with_the_shared_copy():
    shared = ROOT.parent / "shared" / "papers" / "catalog.json"
    if not shared.is_file():
        pytest.skip("no shared/papers/catalog.json beside this checkout")
    keys = ("id", "slug", "title", "family")
    ours = [{k: row[k] for k in keys} for row in catalog.raw_rows()]
    assert [{k: row[k] for k in keys} for row in json.loads(shared.read_text())] == ours


@pytest.mark.parametrize("row, match", [
    ({"id": 1, "slug": "x", "title": "t", "family": "optim", "symbols": ["a"]}, "unknown keys"),
    ({"id": 1, "slug": "x", "title": "t", "family": "nope"}, "family"),
    ({"id": 1, "slug": "x", "title": "t", "family": "optim", "modules": ["a", "a"]}, "distinct"),
    ({"id": 1, "slug": "x", "title": "t", "family": "optim", "modules": ["a.b"]}, "distinct"),
])
def test_malformed_rows_are_rejected(row, match, monkeypatch):
    monkeypatch.setattr(catalog, "raw_rows", lambda: [row])
    catalog.papers.cache_clear()
    try:
        with pytest.raises(ValueError, match=match):
            catalog.papers()
    finally:
        catalog.papers.cache_clear()


# --------------------------------------------------------------------------- public names


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_every_public_name_imports_from_its_family(paper):
    names = catalog.public_names(paper)
    assert names and len(set(names)) == len(names)
    family = importlib.import_module(paper.package)
    for name in names:
        assert name in family.__all__, f"{paper.package} does not export {name}"
        owner = next(importlib.import_module(m) for m in paper.module_names
                     if name in importlib.import_module(m).__all__)
        assert getattr(family, name) is getattr(owner, name), name


@pytest.mark.parametrize("family", catalog.FAMILIES)
def test_family_exports_exactly_its_papers_names(family):
    module = importlib.import_module(f"jaxopt_icml.{family}")
    names = set()
    for paper in IMPLEMENTED:
        if paper.family == family:
            names.update(catalog.public_names(paper))
    assert set(module.__all__) == names
    assert module.__all__ == sorted(module.__all__)


@pytest.mark.parametrize("family", catalog.FAMILIES)
def test_every_family_module_is_registered(family):
    """A module no catalog entry names would have its names silently left out of the family."""
    package = importlib.import_module(f"jaxopt_icml.{family}")
    registered = {m for p in IMPLEMENTED if p.family == family for m in p.modules}
    present = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert present == registered, (f"unregistered: {sorted(present - registered)}; "
                                   f"missing: {sorted(registered - present)}")


def _with_extra_dir(monkeypatch, family, extra_dir):
    """``jaxopt_icml.<family>`` with ``extra_dir`` on its path: a stand-in for a module file
    added to the family folder (restored after the test)."""
    package = importlib.import_module(f"jaxopt_icml.{family}")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(extra_dir)])
    return package


def _register(monkeypatch, modules):
    """Catalog rows in which the first unimplemented ``stats`` paper registers ``modules``."""
    rows = catalog.raw_rows()
    row = next(r for r in rows if r["family"] == "stats" and "modules" not in r)
    row["modules"] = list(modules)
    monkeypatch.setattr(catalog, "raw_rows", lambda: rows)
    catalog.papers.cache_clear()
    return row["slug"]


def _forget(*names):
    catalog.papers.cache_clear()
    for name in names:
        sys.modules.pop(f"jaxopt_icml.stats.{name}", None)


def test_a_new_entry_is_picked_up_with_no_other_edit(tmp_path, monkeypatch):
    """Registering a paper is its own module plus one catalog entry: the family exports its
    names, the public names list them, and the status view finds its code."""
    (tmp_path / "brand_new_paper.py").write_text(
        '"""A stand-in paper module."""\n__all__ = ["brand_new_solver"]\n\n\n'
        "def brand_new_solver():\n    return 42\n")
    package = _with_extra_dir(monkeypatch, "stats", tmp_path)
    slug = _register(monkeypatch, ["brand_new_paper"])
    try:
        namespace = dict(vars(package))
        exported = catalog.export_family(namespace)
        assert namespace["brand_new_solver"]() == 42 and "brand_new_solver" in exported
        assert catalog.public_names(slug) == ("brand_new_solver",)
        monkeypatch.setattr(package, "brand_new_solver", namespace["brand_new_solver"],
                            raising=False)
        assert status.status(slug)["code"] is True
        paper = catalog.get(slug)
        assert runner.experiment_path(paper) == f"experiments/stats/{slug}.py"
        assert runner.test_path(paper) == f"tests/stats/test_{slug}.py"
        assert runner.notebook_path(paper) == f"colab/{slug}.ipynb"
    finally:
        _forget("brand_new_paper")


def test_two_modules_exporting_one_name_differently_is_an_error(tmp_path, monkeypatch):
    for name in ("clash_a", "clash_b"):
        (tmp_path / f"{name}.py").write_text(f'__all__ = ["solver"]\nsolver = "{name}"\n')
    package = _with_extra_dir(monkeypatch, "stats", tmp_path)
    _register(monkeypatch, ["clash_a", "clash_b"])
    try:
        with pytest.raises(ImportError, match="'solver' is exported by both"):
            catalog.export_family(dict(vars(package)))
    finally:
        _forget("clash_a", "clash_b")


def test_the_package_imports_nothing_from_the_repository():
    """The installed package never reaches into experiments/, tests/ or colab/."""
    code = ("import sys, importlib; import jaxopt_icml\n"
            "from jaxopt_icml import catalog\n"
            "for f in catalog.FAMILIES: importlib.import_module('jaxopt_icml.' + f)\n"
            "for m in ('base', 'theory', 'problems', 'mesh', 'sharding', 'checkpoint',"
            " 'testing', 'models', 'hyperparams'): importlib.import_module('jaxopt_icml.' + m)\n"
            "catalog.main([])\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('experiments', 'tests')]\n"
            "assert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in (ROOT / "jaxopt_icml").rglob("*.py"):
        text = path.read_text()
        assert "from experiments" not in text and "import experiments" not in text, path
        assert "sys.path" not in text, path


def test_package_command_line(capsys):
    assert catalog.main([]) == 0
    out = capsys.readouterr().out
    assert "goma" in out and f"of {len(catalog.papers())} papers implemented" in out
    assert catalog.main(["--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    goma = next(r for r in payload if r["slug"] == "goma")
    assert goma["modules"] == ["goma", "baselines"] and "goma" in goma["public_names"]


# --------------------------------------------------------------------------- status view


def test_no_row_claims_what_does_not_exist():
    for paper in catalog.papers():
        st = status.status(paper, ROOT)
        assert set(st) == set(PARTS) | {"status", "claims"}
        assert st["tests"] == (ROOT / runner.test_path(paper)).is_file(), paper.slug
        assert st["notebook"] == (ROOT / runner.notebook_path(paper)).is_file(), paper.slug
        if st["experiment"]:
            module = runner.load(paper.slug)
            assert all(hasattr(module, a) for a in runner.EXPERIMENT_INTERFACE), paper.slug
        else:
            assert st["status"] != "complete"
        assert st["code"] == paper.implemented, paper.slug
        flags = [st[k] for k in PARTS]
        if all(flags) and st["claims"] is not False:
            expected = "complete"
        else:
            expected = "empty" if not any(flags) else "partial"
        assert st["status"] == expected, paper.slug


def test_another_tree_has_no_files(tmp_path):
    for slug in ("goma", "le_mmse"):
        st = status.status(slug, tmp_path)
        assert not (st["tests"] or st["experiment"] or st["notebook"])
        assert st["status"] in ("partial", "empty")


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_implemented_papers_are_complete(paper):
    st = status.status(paper, ROOT)
    assert st["status"] == "complete", st
    for rel in (runner.experiment_path(paper), runner.notebook_path(paper),
                runner.test_path(paper)):
        assert (ROOT / rel).is_file(), f"{paper.slug}: {rel} does not exist"


def test_a_recorded_failing_claim_makes_a_row_partial(tmp_path, monkeypatch):
    run_dir = tmp_path / "runs" / "goma-quick"
    run_dir.mkdir(parents=True)
    claims = [{"name": "a", "passed": True}, {"name": "b", "passed": False}]
    (run_dir / "results.json").write_text(json.dumps({"claims": claims}))
    paper = catalog.get("goma")
    assert status.recorded_claims(paper, tmp_path) is False
    monkeypatch.setattr(status, "recorded_claims", lambda p, r: False)
    assert status.status(paper, ROOT)["status"] == "partial"
    monkeypatch.setattr(status, "recorded_claims", lambda p, r: True)
    assert status.status(paper, ROOT)["status"] == "complete"


def test_only_documented_misses_keep_a_row_complete(tmp_path, monkeypatch):
    assert status.claims_outcome([]) is True
    assert status.claims_outcome(["b"], ("b", "c")) == "known"
    assert status.claims_outcome(["b", "d"], ("b", "c")) is False
    assert status.claims_outcome(["b"]) is False
    run_dir = tmp_path / "runs" / "goma"
    run_dir.mkdir(parents=True)
    claims = [{"name": "a", "passed": True}, {"name": "b", "passed": False}]
    record = {"claims": claims, "known_failing": ["b"]}
    (run_dir / "results.json").write_text(json.dumps(record))
    paper = catalog.get("goma")
    monkeypatch.setattr(status, "current_known_failing", lambda p: ("b",))
    assert status.recorded_claims(paper, tmp_path) == "known"
    # the experiment no longer documents "b": the stale record does not excuse it
    monkeypatch.setattr(status, "current_known_failing", lambda p: ())
    assert status.recorded_claims(paper, tmp_path) is False
    monkeypatch.setattr(status, "current_known_failing", lambda p: ("b",))
    record["known_failing"] = ["a"]  # a passing claim listed as known does not excuse "b"
    (run_dir / "results.json").write_text(json.dumps(record))
    assert status.recorded_claims(paper, tmp_path) is False
    monkeypatch.undo()
    assert status.current_known_failing(catalog.get("m_plus_adam")) == (
        "loss_ratio_m_plus_adam_vs_adam_fp8",)
    monkeypatch.setattr(status, "recorded_claims", lambda p, r: "known")
    assert status.status(paper, ROOT)["status"] == "complete"


def test_status_command_table_and_json(capsys):
    total = len(catalog.papers())
    assert status.main(argparse.Namespace(claims=False, json=False)) == 0
    out = capsys.readouterr().out
    assert "goma" in out and f"total: {total}" in out
    assert status.main(argparse.Namespace(claims=False, json=True)) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["papers"]) == payload["counts"]["total"] == total
    row = next(r for r in payload["papers"] if r["slug"] == "goma")
    assert set(row["has"]) == set(PARTS)
    assert row["status"] in ("complete", "partial", "empty")


def test_status_is_a_cli_command():
    proc = subprocess.run([sys.executable, "-m", "experiments", "catalog"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "goma" in proc.stdout and "complete" in proc.stdout




def test_a_new_paper_in_a_fresh_process_needs_only_its_module_and_entry(tmp_path):
    """The same as above without any monkeypatching: a copy of the package with one new module
    file and one catalog entry, imported in a fresh process, exports the paper's names from its
    family, lists them as its public names, and the repository's status view finds its code."""
    import shutil

    package = tmp_path / "jaxopt_icml"
    shutil.copytree(ROOT / "jaxopt_icml", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "stats" / "brand_new_paper.py").write_text(
        '"""A stand-in paper module."""\n__all__ = ["brand_new_solver"]\n\n\n'
        "def brand_new_solver():\n    return 42\n")
    rows = json.loads((package / "catalog.json").read_text())
    row = next(r for r in rows if r["family"] == "stats" and "modules" not in r)
    row["modules"] = ["brand_new_paper"]
    (package / "catalog.json").write_text(json.dumps(rows))
    code = (
        "import jaxopt_icml, jaxopt_icml.stats as fam\n"
        f"assert jaxopt_icml.__file__.startswith({str(tmp_path)!r}), jaxopt_icml.__file__\n"
        "assert fam.brand_new_solver() == 42 and fam.__all__ == ['brand_new_solver']\n"
        "from jaxopt_icml import catalog\n"
        f"assert catalog.public_names({row['slug']!r}) == ('brand_new_solver',)\n"
        "from experiments.tools import status\n"
        f"st = status.status({row['slug']!r})\n"
        "assert st['code'] and not st['experiment'] and st['status'] == 'partial', st\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
