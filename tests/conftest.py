"""Test configuration: 8 simulated CPU devices, fast-compiling CPU emitters, markers, fixtures.

The device count must be fixed before JAX initialises its backend, so it is set here, at import
time, before any test module imports JAX: ``XLA_FLAGS`` gains
``--xla_force_host_platform_device_count=8`` (appended to flags already set). If a pytest plugin
imported JAX first, ``jax_num_cpu_devices`` is set instead (valid until the backend starts).
"""

from __future__ import annotations

import gc
import os
import sys

NUM_CPU_DEVICES = 8
_FLAG = "--xla_force_host_platform_device_count"

# XLA:CPU's classic elemental emitters compile the tests' many small programs about 1.5x faster
# than the default MLIR fusion emitters (measured on the property matrix: 74 s vs 109 s for three
# cases); a code-generation choice of the CPU backend, the numbers agree to float32 round-off.
# The notebooks' kernels inherit it in CI (experiments.tools.notebooks keeps XLA_FLAGS but the
# device count), so the QUICK results they record match what the claims tests would compute.
_EMITTERS = "--xla_cpu_use_fusion_emitters"

for _flag, _value in ((_FLAG, str(NUM_CPU_DEVICES)), (_EMITTERS, "false")):
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = " ".join(
            f for f in (os.environ.get("XLA_FLAGS", ""), f"{_flag}={_value}") if f)

if "jax" in sys.modules:  # imported by a plugin before this file ran
    try:
        sys.modules["jax"].config.update("jax_num_cpu_devices", NUM_CPU_DEVICES)
    except RuntimeError:  # backend already initialised: mesh tests then skip or adapt
        pass

import jax  # noqa: E402
import pytest  # noqa: E402

# Strict dtype promotion and rank-promotion errors (as optimistix does) were tried: optax's own
# transforms (e.g. bias correction mixing int32 counts with float hyperparameters) raise under
# "strict", so the suite keeps JAX's standard promotion; dtype preservation is checked
# explicitly by the property matrix instead.
jax.config.update("jax_numpy_rank_promotion", "raise")

_MARKERS = {
    "claims": "runs a paper's claims at quick size with fixed seeds",
    "notebooks": "executes a colab/ notebook with the quick configuration",
    "slow": "longer tests",
    "x64": "runs in float64 (jax.enable_x64): a test file sets `pytestmark = pytest.mark.x64`",
}


def pytest_configure(config):
    registered = " ".join(config.getini("markers"))
    for name, doc in _MARKERS.items():
        if f"{name}:" not in registered:
            config.addinivalue_line("markers", f"{name}: {doc}")


@pytest.fixture(autouse=True)
def _x64_when_marked(request):
    """``jax.enable_x64(True)`` around every test marked ``x64`` (NumPy-reference and theory
    tests compare in float64)."""
    if request.node.get_closest_marker("x64") is None:
        yield
        return
    with jax.enable_x64(True):
        yield


@pytest.fixture
def key():
    """A fresh typed PRNG key."""
    return jax.random.key(0)


@pytest.fixture
def num_devices():
    """The number of local devices (8 simulated CPU devices unless a backend was preset)."""
    return jax.local_device_count()


def pytest_collection_modifyitems(config, items):
    """Work units for pytest-xdist's ``--dist loadgroup``: one group per test file (module-level
    caches and compiled programs stay in one worker, as with ``loadfile``), except the property
    matrix of ``tests/test_contract.py``, grouped per case (all the checks of one case share its
    cached runs), so that the largest file spreads over the workers; and one group per
    notebook."""
    del config
    for item in items:
        path = item.nodeid.split("::")[0]
        group = path
        if path.endswith("test_contract.py") and "[" in item.nodeid:
            group = item.nodeid.rsplit("-", 1)[0]  # test_contract[<case>-<check>]
        elif path.endswith("test_notebooks.py") and "[" in item.nodeid:
            group = item.nodeid
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drops JAX's compilation caches when a test module ends in a worker.

    A pytest-xdist worker lives for the whole run and would otherwise keep every program it
    compiled (thousands, 2+ GB per worker by the end). In clean-clone runs of the full suite,
    workers died late in the run with segmentation faults inside XLA:CPU's compiler (on small,
    unrelated programs that pass alone; earlier with the persistent cache, aborts while
    serialising), and xdist then hung. Keeping the live programs bounded per module costs only
    the recompilation of the few programs modules share.
    """
    yield
    jax.clear_caches()
    gc.collect()


def _slug_of(module) -> str:
    """The paper of a per-paper test module ``tests/<family>/test_<slug>.py``."""
    from jaxopt_icml import catalog

    stem = os.path.splitext(os.path.basename(module.__file__))[0]
    slug = stem.removeprefix("test_")
    catalog.get(slug)  # KeyError naming the valid slugs for a file that is not a paper's test
    return slug


@pytest.fixture(scope="module")
def experiment(request):
    """The experiment module of this test file's paper (``experiments/<family>/<slug>.py``)."""
    from experiments import runner

    return runner.load(_slug_of(request.module))


@pytest.fixture(scope="module")
def quick_results(experiment):
    """``experiment.run(QUICK, PRNGKey(0))``, or the identical run a notebook recorded in CI
    (:func:`experiments.runner.quick_results`); computed once per test file."""
    from experiments import runner

    return runner.quick_results(experiment)
