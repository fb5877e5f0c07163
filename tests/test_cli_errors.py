"""``python -m experiments``: what a user sees when something is off (one line, exit status 2,
a traceback only with ``--debug``), what ``--resume`` says, run folders, provenance, and the
progress of ``catalog --claims``."""

import argparse
import dataclasses
import json
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import __main__ as cli_main
from experiments import runner
from jaxopt_icml import theory


@dataclasses.dataclass(frozen=True)
class _Cfg:
    seeds: int = 2
    chunks: int = 3


@jax.jit
def _chunk(state, c):
    return {"x": 0.5 * state["x"] + jax.random.normal(jax.random.fold_in(
        jax.random.PRNGKey(1), c), (2,)), "count": state["count"] + 1}


def _experiment(slug="goma", resumable=True):
    def run(cfg, key, *, shard=False, progress=False, out_dir=None, resume=False):
        keys = runner.seed_keys(key, cfg.seeds)
        state = {"x": jnp.ones(2), "count": jnp.int32(0)}
        if resumable:
            state = runner.checkpointed_loop(_chunk, state, cfg.chunks, out_dir=out_dir,
                                             name="tiny", cfg=cfg, keys=keys, resume=resume)
        return {"v": np.float32(1.0), "x": state["x"]}

    exp = types.SimpleNamespace(
        SLUG=slug, TITLE="t", QUICK=_Cfg(), FULL=_Cfg(), run=run,
        CLAIMS=(theory.Claim("v", lambda r: float(r["v"]), "<=", 2.0, "s"),),
        summarize=lambda r: {"v": 1.0}, plot=lambda r, cfg: {})
    if resumable:
        exp.RESUMABLE = True
    return exp


@pytest.fixture
def fake(monkeypatch):
    exp = _experiment()
    monkeypatch.setattr(runner, "load", lambda slug: exp)
    return exp


def _err_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def test_resume_says_what_it_resumed(tmp_path, fake, capsys):
    out = str(tmp_path / "r")
    assert cli_main.main(["run", "goma", "--quick", "--resume", "--out", out]) == 0
    assert "nothing to resume for loop 'tiny'" in capsys.readouterr().err
    assert cli_main.main(["run", "goma", "--quick", "--resume", "--out", out]) == 0
    err = capsys.readouterr().err
    assert f"resumed loop 'tiny' at chunk 3 of 3 from {out}" in err
    assert len([line for line in err.splitlines() if "resumed" in line]) == 1


def test_a_second_run_does_not_silently_replace_checkpoints(tmp_path, fake, capsys):
    out = str(tmp_path / "r")
    assert cli_main.main(["run", "goma", "--quick", "--out", out]) == 0
    capsys.readouterr()
    assert cli_main.main(["run", "goma", "--quick", "--out", out]) == 2
    err = _err_line(capsys)
    assert "--resume" in err and "--overwrite" in err
    assert cli_main.main(["run", "goma", "--quick", "--out", out, "--overwrite"]) == 0
    with pytest.raises(SystemExit):  # the two exclude each other
        cli_main.main(["run", "goma", "--quick", "--out", out, "--overwrite", "--resume"])


def test_resume_errors_are_one_line_and_debug_shows_them(tmp_path, fake, capsys):
    out = tmp_path / "r"
    assert cli_main.main(["run", "goma", "--quick", "--out", str(out)]) == 0
    capsys.readouterr()
    args = ["run", "goma", "--quick", "--out", str(out), "--resume", "--seeds", "3"]
    assert cli_main.main(args) == 2
    assert "another configuration (seeds: 2 -> 3" in _err_line(capsys)
    with pytest.raises(runner.CheckpointError, match="another configuration"):
        cli_main.main([*args, "--debug"])
    (out / "checkpoints" / "config.json").write_text("{not json")
    assert cli_main.main(["run", "goma", "--quick", "--out", str(out), "--resume"]) == 2
    assert "config.json is unreadable" in _err_line(capsys)


def test_bad_out_paths_are_one_line(tmp_path, fake, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert cli_main.main(["run", "goma", "--quick", "--out", str(a_file)]) == 2
    assert "existing file" in _err_line(capsys)
    assert cli_main.main(["run", "goma", "--quick", "--out", str(a_file / "sub")]) == 2
    assert "cannot write to --out" in _err_line(capsys)
    assert a_file.read_text() == "x"


def test_a_run_folder_belongs_to_one_experiment(tmp_path, fake, monkeypatch, capsys):
    out = tmp_path / "r"
    assert cli_main.main(["run", "goma", "--quick", "--out", str(out)]) == 0
    assert json.loads((out / "experiment.json").read_text()) == {"slug": "goma"}
    before = (out / "results.json").read_text()
    other = _experiment("m_plus_adam", resumable=False)
    monkeypatch.setattr(runner, "load", lambda slug: other)
    capsys.readouterr()
    assert cli_main.main(["run", "m_plus_adam", "--quick", "--out", str(out)]) == 2
    assert "experiment 'goma'" in _err_line(capsys)
    assert (out / "results.json").read_text() == before
    # a folder with only another experiment's results.json (no marker) is refused too
    (out / "experiment.json").unlink()
    assert cli_main.main(["run", "m_plus_adam", "--quick", "--out", str(out)]) == 2


def test_results_record_provenance(tmp_path, fake, monkeypatch):
    out = tmp_path / "r"
    assert cli_main.main(["run", "goma", "--quick", "--out", str(out)]) == 0
    prov = json.loads((out / "results.json").read_text())["provenance"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=runner.repo_root(),
                          capture_output=True, text=True)
    assert prov["commit"] == (head.stdout.strip() if head.returncode == 0 else None)
    assert isinstance(prov["dirty"], bool) or prov["commit"] is None
    assert prov["command"] == f"python -m experiments run goma --quick --out {out}"
    assert prov["device_kind"] == jax.devices()[0].device_kind
    assert prov["versions"]["jax"] == jax.__version__
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))  # no git: nulls, no error
    prov = runner.provenance(["list"])
    assert prov["commit"] is None and prov["dirty"] is None


def test_notebooks_without_the_dev_extra_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "nbformat", None)  # import nbformat now fails
    monkeypatch.delitem(sys.modules, "experiments.tools.notebooks", raising=False)
    assert cli_main.main(["notebooks", "--check"]) == 2
    assert 'pip install -e ".[dev]"' in _err_line(capsys)


def test_catalog_claims_prints_progress_per_paper(monkeypatch, capsys):
    from experiments.tools import status
    from jaxopt_icml import catalog

    monkeypatch.setattr(status, "status", lambda paper, root=None, claims=False: {
        "code": True, "tests": True, "experiment": True, "notebook": True, "claims": True,
        "status": "complete"})
    assert status.main(argparse.Namespace(claims=True, json=True)) == 0
    lines = capsys.readouterr().err.splitlines()
    papers = catalog.papers()
    assert len(lines) == len(papers)
    assert lines[0].startswith(f"catalog --claims [1/{len(papers)}] {papers[0].slug}: pass")
    assert all(" left" in line for line in lines)
    assert lines[-1].endswith("about 0 s left")
