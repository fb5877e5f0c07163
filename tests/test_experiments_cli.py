"""``python -m experiments``: list, the unknown-slug error, an end-to-end quick run; helpers."""

import dataclasses
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from experiments import runner
from experiments.runner import records
from experiments.tools import status
from jaxopt_icml import catalog

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, timeout=120):
    env = {**os.environ, "TQDM_DISABLE": "1"}
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_help_lists_the_commands():
    proc = cli("--help")
    assert proc.returncode == 0, proc.stderr
    for name in ("list", "run", "notebooks", "bench"):
        assert name in proc.stdout


def test_list():
    proc = cli("list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["id", "slug", "experiment"]
    rows = [line.split() for line in lines[1:] if line.strip()]
    assert [r[1] for r in rows[:-1]] == list(catalog.slugs())
    assert rows[-1][:3] == [str(len(runner.available_slugs())), "of", str(len(catalog.papers()))]
    goma = next(line for line in lines if line.split()[1:2] == ["goma"])
    assert "GOMA" in goma


def test_unknown_slug_is_a_clear_error():
    proc = cli("run", "no_such_paper", "--quick")
    assert proc.returncode == 2
    assert "no_such_paper" in proc.stderr
    assert "experiments available:" in proc.stderr
    for slug in runner.available_slugs():
        assert slug in proc.stderr


# The end-to-end run uses the cheapest QUICK experiment (CI time); every experiment's claims are
# also checked by its own claims test and its notebook.
def test_run_quick_end_to_end(tmp_path):
    out = tmp_path / "momentum_tracking-run"
    proc = cli("run", "momentum_tracking", "--quick", "--out", str(out), "--strict",
               timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout
    payload = json.loads((out / "results.json").read_text())
    # the claims table is the last thing printed; the metrics stay in results.json
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.split()[-1] in ("PASS", "FAIL"), proc.stdout
    assert not any(f"  {name}: " in proc.stdout for name in payload["metrics"]), proc.stdout
    assert f"{len(payload['metrics'])} metrics in results.json" in proc.stdout
    assert payload["slug"] == "momentum_tracking" and payload["quick"] is True
    assert payload["key"] == 0 and payload["known_failing"] == []
    assert payload["config"]["seeds"] == payload["seeds"]
    assert set(payload["versions"]) >= {"python", "jax", "jaxlib", "optax", "flax",
                                        "jaxopt_icml"}
    assert payload["devices"] and payload["wall_time_s"] > 0
    assert payload["metrics"]
    assert payload["claims"] and all(c["passed"] for c in payload["claims"])
    assert set(payload["claims"][0]) == {"name", "value", "op", "threshold", "passed", "source"}
    assert payload["figures"]
    for name in payload["figures"]:
        png = out / name
        assert png.is_file() and png.read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------- helpers


@dataclasses.dataclass(frozen=True)
class _Cfg:
    seeds: int = 2
    steps: int = 10
    sizes: tuple = (1, 2)


class _Tup(NamedTuple):
    seeds: int = 2
    lr: float = 0.1


def test_with_seeds_and_config_dict():
    assert runner.with_seeds(_Cfg(), 8) == _Cfg(seeds=8)
    assert runner.with_seeds(_Tup(), 4) == _Tup(seeds=4)
    assert runner.with_seeds(_Cfg(), None) == _Cfg()
    with pytest.raises(ValueError, match="seeds"):
        runner.with_seeds(_Cfg(), 0)
    assert runner.config_dict(_Cfg()) == {"seeds": 2, "steps": 10, "sizes": [1, 2]}


def test_to_jsonable_is_strict_json(tmp_path):
    import jax.numpy as jnp

    payload = {"a": np.float32(1.5), "b": jnp.arange(3), "c": float("nan"), "d": (1, -np.inf),
               "e": _Tup(), "f": np.int64(3)}
    path = runner.write_json(tmp_path / "x" / "r.json", payload)
    back = json.loads(path.read_text())
    assert back == {"a": 1.5, "b": [0, 1, 2], "c": "nan", "d": [1, "-inf"],
                    "e": {"seeds": 2, "lr": 0.1}, "f": 3}


def test_band_plot_and_save_figures(tmp_path):
    runner.use_agg()
    import matplotlib.pyplot as plt

    ks = np.arange(1, 21)
    values = np.exp(np.random.default_rng(0).normal(size=(5, 20))) / ks
    fig, ax = plt.subplots()
    line = runner.band_plot(ax, ks, values, "m")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    np.testing.assert_allclose(line.get_ydata(), np.median(values, 0))
    assert len(ax.collections) == 1  # the 10-90% band
    runner.band_plot(ax, ks, values[0], "one seed")  # no band for a single seed
    assert len(ax.collections) == 1
    with pytest.raises(ValueError, match="shape"):
        runner.band_plot(ax, ks, values[:, :5], "bad")
    paths = runner.save_figures({"fig": fig}, tmp_path)
    assert paths == [tmp_path / "fig.png"] and paths[0].read_bytes()[:4] == b"\x89PNG"


def test_describe_problem():
    out = runner.describe({"L": 2.0, "mu": np.float32(0.5), "A": np.zeros((10, 10)),
                           "z": np.array([1.0, 2.0])})
    assert out == {"L": 2.0, "mu": 0.5, "A": "array(10, 10) float64", "z": [1.0, 2.0]}
    import jax

    keys = {"k": jax.random.key(0), "ks": jax.random.split(jax.random.key(1), 3)}
    assert runner.describe(keys) == {"k": "PRNG key array()", "ks": "PRNG key array(3,)"}


def test_load_unknown_slug():
    with pytest.raises(runner.UnknownExperiment, match="not a catalog slug"):
        runner.load("no_such_paper")


def test_record_claims_only_when_asked(tmp_path, monkeypatch):
    from jaxopt_icml import theory

    exp = types.SimpleNamespace(SLUG="m_plus_adam", TITLE="t",
                                KNOWN_FAILING=("loss_ratio_m_plus_adam_vs_adam_fp8",))
    claims = [theory.ClaimResult("loss_ratio_m_plus_adam_vs_adam_fp8", 1.0, "<=", 0.2, False,
                                 "s")]
    monkeypatch.delenv(runner.RECORD_ENV, raising=False)
    assert runner.record_claims(exp, _Cfg(), 0, claims, quick=True, root=tmp_path) is None
    assert not (tmp_path / "runs").exists()
    monkeypatch.setenv(runner.RECORD_ENV, "1")
    path = runner.record_claims(exp, _Cfg(), 0, claims, quick=True, root=tmp_path)
    assert path == tmp_path / "runs" / "m_plus_adam-quick" / "results.json"
    payload = json.loads(path.read_text())
    assert payload["known_failing"] == ["loss_ratio_m_plus_adam_vs_adam_fp8"]
    # the status view reads the record (and the experiment still documents that miss)
    assert status.recorded_claims(catalog.get("m_plus_adam"), tmp_path) == "known"


def test_quick_results_reused_only_for_identical_source(tmp_path, monkeypatch):
    import jax.numpy as jnp

    calls = []

    def run(cfg, key):
        calls.append(int(key[-1]))  # PRNGKey(k) = [0, k]
        return {"loss": jnp.arange(3.0) + len(calls)}

    exp = types.SimpleNamespace(SLUG="m_plus_adam", TITLE="t", QUICK=_Cfg(), run=run)
    monkeypatch.delenv(runner.REUSE_ENV, raising=False)
    fresh = runner.quick_results(exp, root=tmp_path)  # nothing recorded: runs
    assert calls == [0] and float(fresh["loss"][0]) == 1.0
    monkeypatch.setenv(runner.RECORD_ENV, "1")
    runner.record_claims(exp, exp.QUICK, 0, [], quick=True, results={"loss": jnp.arange(3.0)},
                         root=tmp_path)
    assert (tmp_path / "runs" / "m_plus_adam-quick" / "quick_results.pkl").is_file()
    # recorded, but reuse not asked for: runs again
    runner.quick_results(exp, root=tmp_path)
    assert len(calls) == 2
    monkeypatch.setenv(runner.REUSE_ENV, "1")
    reused = runner.quick_results(exp, root=tmp_path)
    assert len(calls) == 2
    np.testing.assert_array_equal(np.asarray(reused["loss"]), [0.0, 1.0, 2.0])
    # another key, or another config, has another fingerprint: runs
    runner.quick_results(exp, key=1, root=tmp_path)
    assert calls[-1] == 1 and len(calls) == 3
    exp.QUICK = _Cfg(seeds=3)
    runner.quick_results(exp, root=tmp_path)
    assert len(calls) == 4
    assert (runner.source_fingerprint(_Cfg(), 0) != runner.source_fingerprint(_Cfg(seeds=3), 0)
            != runner.source_fingerprint(_Cfg(seeds=3), 1))
    # any edit of a source file changes the fingerprint (a stand-in source tree)
    for package in ("jaxopt_icml", "experiments"):
        (tmp_path / "src" / package).mkdir(parents=True)
        (tmp_path / "src" / package / "mod.py").write_text("x = 1\n")
    monkeypatch.setattr(records, "repo_root", lambda: tmp_path / "src")
    before = runner.source_fingerprint(_Cfg(), 0)
    assert runner.source_fingerprint(_Cfg(), 0) == before
    (tmp_path / "src" / "jaxopt_icml" / "mod.py").write_text("x = 2\n")
    assert runner.source_fingerprint(_Cfg(), 0) != before


def test_check_quick_claims_demands_exactly_the_expected_failures():
    from jaxopt_icml import theory

    claims = [theory.Claim(n, lambda r, n=n: r[n], "<=", 0.0) for n in ("a", "b", "c")]
    exp = types.SimpleNamespace(CLAIMS=claims, KNOWN_FAILING=("b", "c"), FULL_ONLY_FAILING=("c",))
    results = {"a": 0.0, "b": 1.0, "c": 0.0}  # only b fails
    # default: KNOWN_FAILING less FULL_ONLY_FAILING; the checked claims come back
    checked = runner.check_quick_claims(exp, results)
    assert [(c.name, c.passed) for c in checked] == [("a", True), ("b", False), ("c", True)]
    with pytest.raises(AssertionError, match=r"failing claims \['b'\], expected \[\]"):
        runner.check_quick_claims(exp, results, expected_failing=())
    # an expected failure that passes is an error too; the message carries the claims table
    with pytest.raises(AssertionError, match=r"(?s)expected \['b', 'c'\].*c +0 +<= +0 +PASS"):
        runner.check_quick_claims(exp, results, expected_failing=exp.KNOWN_FAILING)
    with pytest.raises(AssertionError):  # an unexpected failure (a NaN metric fails)
        runner.check_quick_claims(exp, {**results, "a": float("nan")})
    # a tolerated claim is not checked either way
    for c in (0.0, 1.0):
        runner.check_quick_claims(exp, {**results, "c": c}, expected_failing=("b", "c"),
                                  tolerate={"c"})
    # absent KNOWN_FAILING / FULL_ONLY_FAILING: every claim must pass
    bare = types.SimpleNamespace(CLAIMS=claims)
    runner.check_quick_claims(bare, dict.fromkeys("abc", 0.0))
    with pytest.raises(AssertionError):
        runner.check_quick_claims(bare, results)
    # the checked names must be CLAIMS's (a one-shot iterable is not)
    with pytest.raises(AssertionError, match="not exp.CLAIMS in order"):
        runner.check_quick_claims(types.SimpleNamespace(CLAIMS=iter(claims)),
                                  dict.fromkeys("abc", 0.0))


def test_resume_on_an_experiment_without_checkpoints_says_so(tmp_path, monkeypatch, capsys):
    from experiments import __main__ as cli_main
    from jaxopt_icml import theory

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        seeds: int = 1

    fake = types.SimpleNamespace(
        SLUG="goma", TITLE="t", QUICK=Cfg(), FULL=Cfg(),
        run=lambda cfg, key, **kw: {"v": np.float32(1.0)},
        CLAIMS=(theory.Claim("v", lambda r: float(r["v"]), "<=", 2.0, "s"),),
        summarize=lambda r: {"v": 1.0}, plot=lambda r, cfg: {})
    monkeypatch.setattr(runner, "load", lambda slug: fake)
    assert cli_main.main(["run", "goma", "--quick", "--resume", "--out", str(tmp_path)]) == 0
    assert "--resume changes nothing" in capsys.readouterr().err
    fake.RESUMABLE = True
    assert cli_main.main(["run", "goma", "--quick", "--resume", "--out", str(tmp_path)]) == 0
    assert "--resume changes nothing" not in capsys.readouterr().err
    import experiments.optim.multistep_sam as sam  # the experiment with a checkpointed loop

    assert sam.RESUMABLE is True
