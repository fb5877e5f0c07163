"""Generates ``colab/<slug>.ipynb`` from the experiment module: one source for both.

``python -m experiments notebooks [slug ...]`` rewrites the notebooks of every experiment module
present (or of the given slugs); ``--check`` writes nothing and exits with status 1 listing the
notebooks that are missing or differ from what would be generated; ``--execute`` then runs them
with nbclient (``--quick`` sets ``JAXOPT_ICML_QUICK=1``, as CI does).

A notebook holds: the catalog title, the paper reference and the module docstring (markdown); an
install cell (clones and installs the repository in Colab, only finds the checkout locally);
``jax.devices()``; the config (QUICK when ``JAXOPT_ICML_QUICK=1``, else FULL); the problem and its
key constants; the methods beside their update equation; the run over seeds; the claims table;
the figures; and a scale-up run over every local device. Outputs are stripped and the JSON is
deterministic (fixed cell ids, sorted keys, no timestamps), so ``--check`` is meaningful.

Optional experiment-module attributes that the notebook uses when present:

* ``REFERENCE``: markdown, the paper reference (authors, venue, arXiv id);
* ``UPDATE``: markdown restating the update equation next to ``make_methods`` (default: the
  docstring section whose heading mentions "update", "method" or "algorithm", else the first
  display equation ``$$...$$`` with the paragraph introducing it);
* ``describe_problem(problem) -> dict``: key constants to print (default:
  :func:`experiments.runner.describe`);
* ``ACCELERATOR``: ``"TPU"`` (default) or ``"GPU"``, the Colab runtime the notebook requests.

Every notebook says which backend it runs on (TPU, GPU or CPU) and shards its seeds over all
local devices when there are several. The clone URL is ``[project.urls] Repository`` in
``pyproject.toml`` (:data:`REPO_URL` reads it), the one place it is written.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from experiments import runner
from jaxopt_icml import catalog


def _repository_url() -> str:
    """``[project.urls] Repository`` of the checkout's ``pyproject.toml``."""
    text = (runner.repo_root() / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the one line, read by hand
        found = re.search(r'^Repository\s*=\s*"([^"]+)"', text, re.MULTILINE)
        return found.group(1)
    return tomllib.loads(text)["project"]["urls"]["Repository"]


# The project's public repository: the install cell clones it in Colab and the "Open in Colab"
# badge points into it; written once, in pyproject.toml.
REPO_URL = _repository_url()
# Colab's runtime hints: the accelerator and the chip it requests
_COLAB_CHIP = {"TPU": "V28", "GPU": "T4"}
BRANCH = "main"
QUICK_ENV = "JAXOPT_ICML_QUICK"

if TYPE_CHECKING:
    import nbformat

__all__ = ["BRANCH", "QUICK_ENV", "REPO_URL", "build", "check", "execute", "main", "notebook_path",
           "render", "write"]


def _dev_module(name: str):
    """Imports ``name``, a package of the ``[dev]`` extra (nbformat, nbclient), or raises
    :class:`experiments.runner.UserError` naming the install command."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise runner.UserError(f"the notebooks command needs {name}, from the [dev] extra: "
                               'pip install -e ".[dev]"') from None


def notebook_path(slug: str) -> Path:
    return runner.repo_root() / runner.notebook_path(slug)


def _colab_url(slug: str) -> str:
    github = REPO_URL.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{github}/blob/{BRANCH}/colab/{slug}.ipynb"


def _section(doc: str, words=("update", "method", "algorithm")) -> str | None:
    """The first markdown section of ``doc`` whose heading contains one of ``words``.

    A heading on the first line is the document's title, not a section.
    """
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)$", line) if i else None
        if m and any(w in m.group(2).lower() for w in words):
            level = len(m.group(1))
            body = []
            for nxt in lines[i + 1:]:
                n = re.match(r"^(#+)\s", nxt)
                if n and len(n.group(1)) <= level:
                    break
                body.append(nxt)
            text = "\n".join(body).strip()
            if text:
                return text
    return None


def _equation(doc: str) -> str | None:
    """The first display equation of ``doc`` with the paragraph introducing it (ending in ':')."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc) if p.strip()]
    for i, para in enumerate(paragraphs):
        if "$$" in para:
            before = paragraphs[i - 1] if i and paragraphs[i - 1].endswith(":") else None
            return "\n\n".join(p for p in (before, para) if p)
    return None


def _demote_headings(doc: str) -> str:
    """One more ``#`` on every markdown heading outside code fences (the title is the h1)."""
    out, fenced = [], False
    for line in doc.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,5}\s", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def _cells(exp, paper: catalog.Paper) -> list[tuple[str, str, str]]:
    """``(id, kind, source)`` for every cell."""
    slug = paper.slug
    doc = inspect.cleandoc(exp.__doc__ or "")
    reference = getattr(exp, "REFERENCE", None)
    symbols = ", ".join(f"`{s}`" for s in catalog.public_names(paper)) or "(none yet)"
    title = "\n".join([
        f"# {paper.title}",
        "",
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({_colab_url(slug)})",
        "",
        f"Paper {paper.id} of [jaxopt_icml]({REPO_URL}) (ICML 2026), family `{paper.family}`.",
        *(["", f"**Reference.** {reference.strip()}"] if reference else []),
        "",
        f"Code: `{paper.package}` ({symbols}); experiment `{runner.experiment_path(paper)}`; "
        f"tests `{runner.test_path(paper)}`. This notebook is generated from the experiment "
        "module by `python -m experiments notebooks`; edit the module, not the notebook.",
    ])
    install = f'''\
# In Colab: clone the repository and install it (with its dependencies). In a local checkout
# this only moves to the checkout root, so that `experiments` imports; nothing is installed.
import os
import subprocess
import sys
from pathlib import Path

REPO_URL = "{REPO_URL}"


def checkout_root():
    for d in (Path.cwd(), *Path.cwd().parents):
        if (d / "experiments" / "__init__.py").is_file() and (d / "jaxopt_icml").is_dir():
            return d
    return None


root = checkout_root()
if root is None:
    root = Path("jaxopt_icml").resolve()
    if not root.exists():
        subprocess.run(["git", "clone", "--depth", "1", REPO_URL, str(root)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", str(root)], check=True)
os.chdir(root)
if str(root) not in sys.path:
    sys.path.insert(0, str(root))

import jaxopt_icml

print("jaxopt_icml", jaxopt_icml.__version__, "from", root)'''
    devices = '''\
import jax

# The notebook requests a TPU runtime; it runs unchanged on a GPU or a CPU.
BACKEND = {"tpu": "TPU", "gpu": "GPU", "cpu": "CPU"}.get(jax.default_backend(),
                                                       jax.default_backend())
print(f"running on {BACKEND}: {jax.device_count()} device(s): {jax.devices()}")
if BACKEND == "CPU":
    print("no accelerator: in Colab, Runtime > Change runtime type > TPU (or GPU) for FULL runs")'''
    # isort order (ruff checks the notebooks): the two experiments imports sorted by module name
    imports = "\n".join(sorted([f"from experiments.{paper.family} import {slug} as exp",
                                 "from experiments import runner"]))
    config = f'''\
import matplotlib.pyplot as plt
from IPython.display import display

{imports}
from jaxopt_icml import theory

# CI executes every notebook with {QUICK_ENV}=1 (seconds on a CPU); otherwise the FULL config.
QUICK = os.environ.get("{QUICK_ENV}") == "1"
cfg = exp.QUICK if QUICK else exp.FULL
key = jax.random.PRNGKey(0)
print("QUICK" if QUICK else "FULL", "config:", cfg)'''
    describe = ("exp.describe_problem(problem)" if hasattr(exp, "describe_problem")
                else "runner.describe(problem)")
    problem = f'''\
problem = exp.make_problem(cfg, key)
for name, value in {describe}.items():
    print(f"{{name:>24}}: {{value}}")'''
    update = getattr(exp, "UPDATE", None) or _section(doc) or _equation(doc)
    methods_md = "## The methods\n\n" + (
        update.strip() if update else "The update equations are stated in the introduction.")
    methods = '''\
methods = exp.make_methods(cfg)
for name, alg in methods.items():
    print(f"{name:>24}: {type(alg).__name__}")'''
    run = '''\
# several devices (TPU cores, GPUs): the seeds are sharded over all of them as one program
n_devices = jax.device_count()
if n_devices > 1 and cfg.seeds % n_devices:
    cfg = runner.with_seeds(cfg, n_devices * -(-cfg.seeds // n_devices))
    print(f"seeds rounded up to {cfg.seeds}, a multiple of the {n_devices} devices")
results = exp.run(cfg, key, shard=n_devices > 1, progress=True)
for name, value in exp.summarize(results).items():
    print(f"{name:>32}: {value}")'''
    claims = '''\
claims = theory.check(exp.CLAIMS, results)
print(theory.format_claims(claims))
known = set(getattr(exp, "KNOWN_FAILING", ()))  # documented non-reproductions
for c in claims:
    if not c.passed:
        why = "documented non-reproduction" if c.name in known else "UNEXPECTED failure"
        print(f"{c.name}: FAIL ({why}; measured {c.value:.4g})")
# CI (JAXOPT_ICML_RECORD=1) records these outcomes for `python -m experiments catalog`, and
# the QUICK results for the claims tests (reused only by identical source code)
runner.record_claims(exp, cfg, 0, claims, quick=QUICK, results=results)'''
    plots = '''\
figures = exp.plot(results, cfg)
for fig in figures.values():
    display(fig)
plt.close("all")'''
    scale_md = (
        "## Scale up: every device\n\n"
        "The seeds are independent, so `shard=True` splits them over a 1-D mesh of all local "
        "devices (TPU cores or GPUs) as one program. The number of seeds is rounded up to a "
        "multiple of `jax.device_count()`; outside QUICK mode it is also multiplied by 4. "
        "QUICK mode on a single device (CI) skips this run."
    )
    scale = '''\
n = jax.device_count()
scale = 1 if QUICK else 4
seeds = n * -(-cfg.seeds * scale // n)  # a multiple of the device count
big = runner.with_seeds(cfg, seeds)
if QUICK and n == 1:
    # CI's CPU has one device, where the sharded run would only repeat the run above (and
    # double CI's notebook time): QUICK mode skips it there. The seed sharding itself is tested
    # on 8 simulated devices in tests/ (mesh.shard_seeds, base.run_seeds(shard=True)).
    print("QUICK mode on a single device: the sharded run is skipped")
else:
    print(f"{seeds} seeds over {n} {jax.default_backend()} device(s)")
    results_big = exp.run(big, jax.random.PRNGKey(1), shard=True, progress=True)
    print(theory.format_claims(theory.check(exp.CLAIMS, results_big)))'''
    return [
        ("title", "markdown", title),
        ("introduction", "markdown", _demote_headings(doc)),
        ("setup-md", "markdown", "## Setup"),
        ("install", "code", install),
        ("devices", "code", devices),
        ("config", "code", config),
        ("problem-md", "markdown", "## The problem\n\n`make_problem` builds the problem with its "
                                   "known constants:"),
        ("problem", "code", problem),
        ("methods-md", "markdown", methods_md),
        ("methods", "code", methods),
        ("run-md", "markdown", "## Run over seeds\n\nEvery method on every seed, as one "
                               "compiled program (`vmap` over seeds, `lax.scan` over steps)."),
        ("run", "code", run),
        ("claims-md", "markdown", "## Claims\n\nEach claim is measured on the results above; a "
                                  "failing claim is shown as FAIL with its measured value."),
        ("claims", "code", claims),
        ("plots-md", "markdown", "## Figures\n\nMedian over seeds with a 10-90% band."),
        ("plots", "code", plots),
        ("scale-up-md", "markdown", scale_md),
        ("scale-up", "code", scale),
    ]


def build(slug: str, exp=None) -> nbformat.NotebookNode:
    """The notebook for ``slug`` (``exp``: the experiment module, loaded when omitted)."""
    nbformat = _dev_module("nbformat")
    paper = catalog.get(slug)
    exp = runner.load(slug) if exp is None else exp
    nb = nbformat.v4.new_notebook()
    for cell_id, kind, source in _cells(exp, paper):
        new = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = new(source)
        cell["id"] = cell_id
        nb.cells.append(cell)
    accelerator = getattr(exp, "ACCELERATOR", "TPU")
    if accelerator not in _COLAB_CHIP:
        raise ValueError(f"{slug}: ACCELERATOR must be one of {tuple(_COLAB_CHIP)}, "
                         f"got {accelerator!r}")
    colab = {"name": f"{slug}.ipynb", "provenance": [], "toc_visible": True,
             "gpuType": _COLAB_CHIP[accelerator]}
    nb.metadata = nbformat.from_dict({
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "accelerator": accelerator,
        "colab": colab,
    })
    nbformat.validate(nb)
    return nb


def render(slug: str, exp=None) -> str:
    """The notebook file's exact text."""
    nbformat = _dev_module("nbformat")
    text = nbformat.writes(build(slug, exp), version=4)
    return text if text.endswith("\n") else text + "\n"


def _slugs(slugs) -> list[str]:
    available = runner.available_slugs()
    if not slugs:
        return available
    for slug in slugs:
        if slug not in available:
            raise runner.UnknownExperiment(
                f"{slug!r} has no experiment module; available: {', '.join(available) or '(none)'}"
            )
    return list(slugs)


def write(slugs=None) -> list[Path]:
    """Regenerates the notebooks of ``slugs`` (default: every experiment present)."""
    paths = []
    for slug in _slugs(slugs):
        path = notebook_path(slug)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(slug), encoding="utf-8")
        paths.append(path)
    return paths


def check(slugs=None) -> list[str]:
    """Notebooks that are missing or differ from what :func:`render` gives (relative paths)."""
    stale = []
    for slug in _slugs(slugs):
        path = notebook_path(slug)
        if not path.is_file() or path.read_text(encoding="utf-8") != render(slug):
            stale.append(runner.notebook_path(slug))
    return stale


_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def _kernel_environment(quick: bool) -> dict:
    """The kernel's environment variables: this process's, with ``JAXOPT_ICML_QUICK=1`` in
    QUICK mode and without a forced host device count (``tests/conftest.py`` simulates 8 CPU
    devices in the test processes; a QUICK notebook runs on CI's one CPU device, where its
    sharded scale-up run is skipped as documented in the notebook)."""
    env = dict(os.environ)
    if quick:
        env[QUICK_ENV] = "1"
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(_DEVICE_COUNT_FLAG)]
    if flags:
        env["XLA_FLAGS"] = " ".join(flags)
    else:
        env.pop("XLA_FLAGS", None)
    return env


def execute(slug: str, *, quick: bool = True, timeout: int = 900) -> nbformat.NotebookNode:
    """Runs the committed notebook with nbclient, from the repository root.

    ``quick`` sets ``JAXOPT_ICML_QUICK=1`` for the kernel; the kernel never inherits a forced
    host device count (see :func:`_kernel_environment`). Raises
    ``nbclient.exceptions.CellExecutionError`` on the first cell that fails.
    """
    nbformat = _dev_module("nbformat")
    nbclient = _dev_module("nbclient")

    for attempt in range(_KERNEL_START_ATTEMPTS):
        nb = nbformat.read(notebook_path(slug), as_version=4)
        client = nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3",
            resources={"metadata": {"path": str(runner.repo_root())}},
        )
        try:
            client.execute(env=_kernel_environment(quick))  # passed on to start_kernel
            return nb
        except RuntimeError as err:
            # Two processes starting kernels at once can be handed the same free TCP port
            # (jupyter_client finds one by binding port 0 and releasing it): the new kernel
            # then dies on "Address already in use" before it replies to kernel_info. Seen
            # once in a clean-clone CI run with two test workers. Only that start is retried.
            if "before replying to kernel_info" not in str(err) or \
                    attempt + 1 == _KERNEL_START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


_KERNEL_START_ATTEMPTS = 3


# --------------------------------------------------------------------------- command line


def add_arguments(parser) -> None:
    parser.add_argument("slugs", nargs="*", help="experiments (default: all present)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a notebook is missing or out of date")
    parser.add_argument("--execute", action="store_true",
                        help="also execute the notebooks with nbclient (fails on a cell error)")
    parser.add_argument("--quick", action="store_true",
                        help=f"with --execute: set {QUICK_ENV}=1 (the QUICK config)")


def main(args) -> int:
    _dev_module("nbformat")  # a missing [dev] extra is one line before any work
    if args.execute:
        _dev_module("nbclient")
    try:
        slugs = _slugs(args.slugs)
    except runner.UnknownExperiment as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.check:
        stale = check(slugs)
        if stale:
            print("out of date (run `python -m experiments notebooks`):\n  "
                  + "\n  ".join(stale), file=sys.stderr)
            return 1
        print(f"{len(slugs)} notebook(s) up to date")
    else:
        for path in write(slugs):
            print(f"wrote {path.relative_to(runner.repo_root())}")
    if args.execute:
        for slug in slugs:
            print(f"executing {runner.notebook_path(slug)} ...", flush=True)
            execute(slug, quick=args.quick)
        print(f"{len(slugs)} notebook(s) executed without error")
    return 0
