"""Colab notebooks: generated from the experiment modules, committed up to date, executable.

The execution tests (marker ``notebooks``) run every notebook with nbclient in QUICK mode
(``JAXOPT_ICML_QUICK=1``) from the repository root and fail on any cell error. Deselect them with
``-m "not notebooks"``.
"""

import difflib
import json
import sys
import types
from pathlib import Path

import pytest

from experiments import runner
from experiments.tools import notebooks
from jaxopt_icml import catalog

ROOT = Path(__file__).resolve().parents[1]

# Implemented papers must have a notebook; so must every experiment module present.
_WANTED = {p.slug for p in catalog.implemented()} | set(runner.available_slugs())
SLUGS = [p.slug for p in catalog.papers() if p.slug in _WANTED]


@pytest.mark.parametrize("slug", SLUGS)
def test_committed_notebook_is_generated(slug):
    path = ROOT / runner.notebook_path(slug)
    assert path.is_file(), f"{path} missing: run `python -m experiments notebooks`"
    committed, generated = path.read_text(encoding="utf-8"), notebooks.render(slug)
    if committed != generated:
        diff = difflib.unified_diff(committed.splitlines(), generated.splitlines(),
                                    "committed", "generated", lineterm="", n=1)
        pytest.fail(f"{path} is out of date: run `python -m experiments notebooks`\n"
                    + "\n".join(list(diff)[:30]))


def test_no_orphan_notebooks():
    available = set(runner.available_slugs())
    orphans = [p.name for p in (ROOT / "colab").glob("*.ipynb") if p.stem not in available]
    assert not orphans, f"notebooks without an experiment module: {orphans}"


def _fake_experiment():
    exp = types.ModuleType("fake_goma")
    exp.__doc__ = """Fake experiment.

    Problem: find $z$ with $F(z) = 0$.

    ## Update equations

    $$z_{k+1} = z_k - \\gamma F(z_k)$$
    """
    exp.SLUG, exp.TITLE = "goma", "fake"
    return exp


def test_notebook_structure_and_determinism():
    exp = _fake_experiment()
    text = notebooks.render("goma", exp)
    assert text == notebooks.render("goma", exp)  # deterministic: no ids, times or outputs vary
    nb = json.loads(text)
    cells = {c["id"]: c for c in nb["cells"]}
    assert len(cells) == len(nb["cells"])
    src = {k: "".join(c["source"]) for k, c in cells.items()}
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and c["execution_count"] is None
    assert src["title"].startswith("# " + catalog.get("goma").title)
    assert "Fake experiment." in src["introduction"] and "    " not in src["introduction"]
    assert "z_{k+1}" in src["methods-md"]
    assert notebooks.REPO_URL in src["install"] and "git" in src["install"]
    assert "jax.devices()" in src["devices"]
    for backend in ("TPU", "GPU", "CPU"):  # says which backend it runs on
        assert f'"{backend}"' in src["devices"]
    assert "shard=n_devices > 1" in src["run"]  # seeds over all devices when there are several
    assert notebooks.QUICK_ENV in src["config"]
    assert "from experiments.minimax import goma as exp" in src["config"]
    assert "exp.make_problem" in src["problem"] and "exp.make_methods" in src["methods"]
    assert "theory.check(exp.CLAIMS, results)" in src["claims"]
    assert "exp.plot" in src["plots"]
    assert "jax.device_count()" in src["scale-up"] and "shard=True" in src["scale-up"]
    meta = nb["metadata"]
    assert meta["kernelspec"]["name"] == "python3"
    assert meta["accelerator"] == "TPU" and meta["colab"]["gpuType"] == "V28"
    assert meta["colab"]["name"] == "goma.ipynb"
    for code in (s for k, s in src.items() if cells[k]["cell_type"] == "code"):
        compile(code, "<cell>", "exec")


def test_install_cell_is_harmless_in_a_checkout(tmp_path, monkeypatch):
    # Run from a subdirectory of the checkout: it must find the root, not clone anything.
    install = "".join(
        next(c for c in json.loads(notebooks.render("goma", _fake_experiment()))["cells"]
             if c["id"] == "install")["source"])
    monkeypatch.chdir(ROOT / "tests")
    monkeypatch.setattr(sys, "path", list(sys.path))
    calls = []
    monkeypatch.setattr("subprocess.run", lambda *a, **k: calls.append(a))
    scope = {}
    exec(compile(install, "<install>", "exec"), scope)  # noqa: S102
    assert calls == [] and Path.cwd() == ROOT and scope["root"] == ROOT


@pytest.mark.notebooks
@pytest.mark.parametrize("slug", SLUGS)
def test_notebook_executes_quick(slug):
    notebooks.execute(slug, quick=True)


def test_execute_retries_only_a_kernel_that_died_at_start(monkeypatch):
    """A kernel that dies before replying to kernel_info (a port taken by a concurrent start)
    is started again, up to three times; any other error propagates at once."""
    import nbclient

    errors = []

    class FakeClient:
        def __init__(self, nb, **kwargs):
            pass

        def execute(self, env):
            if errors:
                raise errors.pop(0)

    monkeypatch.setattr(nbclient, "NotebookClient", FakeClient)
    slug = SLUGS[0]
    errors[:] = [RuntimeError("Kernel died before replying to kernel_info")] * 2
    notebooks.execute(slug)
    assert errors == []
    errors[:] = [RuntimeError("Kernel died before replying to kernel_info")] * 3
    with pytest.raises(RuntimeError, match="kernel_info"):
        notebooks.execute(slug)
    errors[:] = [RuntimeError("Kernel died"), None]
    with pytest.raises(RuntimeError, match="Kernel died"):
        notebooks.execute(slug)
    assert errors == [None]


def test_update_markdown_falls_back_to_the_first_display_equation():
    exp = _fake_experiment()
    exp.__doc__ = ("# Title with methods in it\n\nIntro.\n\n**Method** (one call):\n\n"
                   "$$z_{k+1} = z_k - F(z_k)$$\n\n## Claims\n\n```\n# not a heading\n```\n")
    cells = {c["id"]: "".join(c["source"])
             for c in json.loads(notebooks.render("goma", exp))["cells"]}
    assert cells["methods-md"] == ("## The methods\n\n**Method** (one call):\n\n"
                                   "$$z_{k+1} = z_k - F(z_k)$$")
    # Headings move one level down (the catalog title is the only h1); code is untouched.
    assert cells["introduction"].startswith("## Title with methods in it")
    assert "### Claims" in cells["introduction"] and "\n# not a heading" in cells["introduction"]
    exp.UPDATE = "$$x = y$$"
    cells = {c["id"]: "".join(c["source"])
             for c in json.loads(notebooks.render("goma", exp))["cells"]}
    assert cells["methods-md"] == "## The methods\n\n$$x = y$$"


def test_kernel_environment_drops_the_simulated_device_count(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_foo=1 --xla_force_host_platform_device_count=8")
    monkeypatch.delenv(notebooks.QUICK_ENV, raising=False)
    env = notebooks._kernel_environment(quick=True)
    assert env["XLA_FLAGS"] == "--xla_cpu_foo=1" and env[notebooks.QUICK_ENV] == "1"
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    env = notebooks._kernel_environment(quick=False)
    assert "XLA_FLAGS" not in env and notebooks.QUICK_ENV not in env


def test_clone_url_is_the_one_in_pyproject():
    import tomllib

    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    assert notebooks.REPO_URL == url
    nb = json.loads(notebooks.render("goma", _fake_experiment()))
    install = "".join(next(c for c in nb["cells"] if c["id"] == "install")["source"])
    assert f'REPO_URL = "{url}"' in install
    assert url.removeprefix("https://github.com/") in "".join(nb["cells"][0]["source"])


def test_every_notebook_requests_an_accelerator_runtime():
    for slug in SLUGS:
        meta = json.loads((ROOT / runner.notebook_path(slug)).read_text())["metadata"]
        assert (meta["accelerator"], meta["colab"]["gpuType"]) in (("TPU", "V28"),
                                                                   ("GPU", "T4")), slug
