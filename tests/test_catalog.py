"""The catalog: 71 rows, consistent with the packaged JSON, status derived from what exists."""

import importlib
import json
from pathlib import Path

import pytest

from jaxopt_icml import catalog

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_FAMILIES = {
    "optim", "zeroth_order", "minimax", "distributed", "online", "transport", "robust",
    "generative", "decision", "preference", "training", "stats", "systems",
}
IMPLEMENTED = [p for p in catalog.papers() if p.symbols]
PARTS = ("code", "tests", "experiment", "notebook")


def test_seventy_one_rows_with_unique_ids_and_slugs():
    papers = catalog.papers()
    assert len(papers) == 71
    assert sorted(p.id for p in papers) == list(range(1, 72))
    assert len({p.slug for p in papers}) == 71


def test_families_are_the_thirteen_allowed():
    assert set(catalog.FAMILIES) == ALLOWED_FAMILIES
    assert {p.family for p in catalog.papers()} <= ALLOWED_FAMILIES


def test_derived_locations():
    p = catalog.get("goma")
    assert p.module == "jaxopt_icml.minimax"
    assert p.experiment == "experiments.goma"
    assert p.experiment_path == "experiments/goma.py"
    assert p.notebook == "colab/goma.ipynb"
    assert p.test == "tests/minimax/test_goma.py"
    assert "multistep_sam" in catalog.get("multistep_sam").symbols


def test_unknown_slug_lists_valid_ones():
    with pytest.raises(KeyError, match="goma"):
        catalog.get("no_such_paper")


def test_packaged_json_equals_rows():
    rows = [{"id": p.id, "slug": p.slug, "title": p.title, "family": p.family}
            for p in catalog.papers()]
    assert rows == catalog.raw_rows()
    packaged = json.loads((ROOT / "jaxopt_icml" / "catalog.json").read_text())
    assert rows == packaged


def test_packaged_json_equals_shared_copy():
    shared = ROOT.parent / "shared" / "papers" / "catalog.json"
    if not shared.is_file():
        pytest.skip("no shared/papers/catalog.json beside this checkout")
    assert json.loads(shared.read_text()) == catalog.raw_rows()


def test_symbol_mapping_names_catalog_slugs():
    assert set(catalog.SYMBOLS) <= set(catalog.slugs())
    for slug, names in catalog.SYMBOLS.items():
        assert names and len(set(names)) == len(names), slug
        assert all(isinstance(n, str) and n.isidentifier() for n in names), slug


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_listed_symbols_are_importable(paper):
    module = importlib.import_module(paper.module)
    missing = [n for n in paper.symbols if not hasattr(module, n)]
    assert not missing, f"{paper.module} lacks {missing}"


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_listed_paths_exist(paper):
    for rel in (paper.experiment_path, paper.notebook, paper.test):
        assert (ROOT / rel).is_file(), f"{paper.slug}: {rel} does not exist"


def test_no_row_claims_what_does_not_exist():
    for paper in catalog.papers():
        st = catalog.status(paper, ROOT)
        assert set(st) == set(PARTS) | {"status", "claims"}
        assert st["tests"] == (ROOT / paper.test).is_file(), paper.slug
        assert st["notebook"] == (ROOT / paper.notebook).is_file(), paper.slug
        if st["experiment"]:
            module = catalog.load_experiment(paper.slug, ROOT)
            assert all(hasattr(module, a) for a in catalog.EXPERIMENT_INTERFACE), paper.slug
        else:
            assert st["status"] != "complete"
        if st["code"]:
            module = importlib.import_module(paper.module)
            assert paper.symbols and all(hasattr(module, n) for n in paper.symbols)
        if not paper.symbols:
            assert not st["code"], paper.slug
        flags = [st[k] for k in PARTS]
        if all(flags) and st["claims"] is not False:
            expected = "complete"
        else:
            expected = "empty" if not any(flags) else "partial"
        assert st["status"] == expected, paper.slug


def test_outside_a_checkout_files_are_absent(tmp_path, monkeypatch):
    for slug in ("goma", "le_mmse"):
        st = catalog.status(slug, tmp_path)
        assert not (st["tests"] or st["experiment"] or st["notebook"])
        assert st["status"] in ("partial", "empty")
    monkeypatch.setattr(catalog, "repo_root", lambda: None)
    st = catalog.status("goma")
    assert not (st["tests"] or st["experiment"] or st["notebook"])
    with pytest.raises(FileNotFoundError):
        catalog.load_experiment("goma")


def test_repo_root_is_this_checkout():
    assert catalog.repo_root() == ROOT


@pytest.mark.parametrize("slug", sorted(catalog.SYMBOLS))
def test_implemented_papers_are_complete(slug):
    st = catalog.status(slug, ROOT)
    assert st["status"] == "complete", st


def test_a_recorded_failing_claim_makes_a_row_partial(tmp_path, monkeypatch):
    run_dir = tmp_path / "runs" / "goma-quick"
    run_dir.mkdir(parents=True)
    claims = [{"name": "a", "passed": True}, {"name": "b", "passed": False}]
    (run_dir / "results.json").write_text(json.dumps({"claims": claims}))
    paper = catalog.get("goma")
    assert catalog.recorded_claims(paper, tmp_path) is False
    monkeypatch.setattr(catalog, "recorded_claims", lambda p, r: False)
    assert catalog.status(paper, ROOT)["status"] == "partial"
    monkeypatch.setattr(catalog, "recorded_claims", lambda p, r: True)
    assert catalog.status(paper, ROOT)["status"] == "complete"


def test_only_documented_misses_keep_a_row_complete(tmp_path, monkeypatch):
    assert catalog.claims_outcome([]) is True
    assert catalog.claims_outcome(["b"], ("b", "c")) == "known"
    assert catalog.claims_outcome(["b", "d"], ("b", "c")) is False
    assert catalog.claims_outcome(["b"]) is False
    run_dir = tmp_path / "runs" / "goma"
    run_dir.mkdir(parents=True)
    claims = [{"name": "a", "passed": True}, {"name": "b", "passed": False}]
    record = {"claims": claims, "known_failing": ["b"]}
    (run_dir / "results.json").write_text(json.dumps(record))
    paper = catalog.get("goma")
    monkeypatch.setattr(catalog, "current_known_failing", lambda p, r: ("b",))
    assert catalog.recorded_claims(paper, tmp_path) == "known"
    # the experiment no longer documents "b": the stale record does not excuse it
    monkeypatch.setattr(catalog, "current_known_failing", lambda p, r: ())
    assert catalog.recorded_claims(paper, tmp_path) is False
    monkeypatch.setattr(catalog, "current_known_failing", lambda p, r: ("b",))
    record["known_failing"] = ["a"]  # a passing claim listed as known does not excuse "b"
    (run_dir / "results.json").write_text(json.dumps(record))
    assert catalog.recorded_claims(paper, tmp_path) is False
    monkeypatch.undo()
    assert catalog.current_known_failing(catalog.get("m_plus_adam"), ROOT) == (
        "loss_ratio_m_plus_adam_vs_adam_fp8",)
    monkeypatch.setattr(catalog, "recorded_claims", lambda p, r: "known")
    assert catalog.status(paper, ROOT)["status"] == "complete"


def test_command_line_table_and_json(capsys):
    assert catalog.main([]) == 0
    out = capsys.readouterr().out
    assert "goma" in out and "total: 71" in out
    assert catalog.main(["--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["papers"]) == 71
    assert payload["counts"]["total"] == 71
    row = next(r for r in payload["papers"] if r["slug"] == "goma")
    assert set(row["has"]) == set(PARTS)
    assert row["status"] in ("complete", "partial", "empty")
