r"""# My paper: a one-line statement of what it shows

Template for ``experiments/<family>/<slug>.py`` (CONTRIBUTING.md section 4). Copy it to
``experiments/<family>/my_paper.py``, rename ``my_paper`` to the catalog slug, and replace the
toy problem, methods and claim with the paper's. As written it runs: plain gradient descent on
random convex quadratics, checked against the classical ``O(1/k)`` rate.

The notebook generator reads this docstring: state the problem, the update rule (the first
display equation is shown beside ``make_methods``), the claims and what was measured.

**Problem.** ``f(x) = 0.5 (x - x*)^T H (x - x*)`` with the eigenvalues of ``H`` log-spaced in
``[0, L]`` (``problems.random_quadratic`` with ``mu = 0``, ``L = 1``); each seed draws its own
``H`` and ``x*``; ``x_0 = 0``.

**Update.** Gradient descent with step ``gamma = 1/L``:

$$x_{k+1} = x_k - \gamma \nabla f(x_k).$$

**Claims.** (1) the gap ``f(x_k) - f*`` decays like ``k^{-1}``: the slope of the seed mean on a
log-log grid is ``<= -0.8``; (2) the textbook bound
``f(x_k) - f* <= L ||x_0 - x*||^2 / (2k)`` holds on every seed and iteration.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import base, problems, theory

# replace with the paper's family import, e.g. `from jaxopt_icml import optim as my_family`

# In experiments/<family>/<slug>.py write `SLUG, TITLE = runner.paper(__name__)`: the slug and
# the catalog row's title, typed nowhere else. The template is not in the catalog, so it names
# its own.
SLUG = "my_paper"
TITLE = "My paper: the title of its catalog row"
REFERENCE = "Replace with: authors, *title*, ICML 2026, arXiv id."  # optional, for the notebook


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything the run depends on; ``seeds`` is required by ``--seeds``."""

    seeds: int = 32
    dim: int = 50
    num_steps: int = 10_000
    fit_start: int = 10
    fit_points: int = 30
    step: float = 1.0  # in units of 1/L


FULL = Config()
QUICK = Config(seeds=8, num_steps=1000)  # CI size: seconds on one CPU core


# lax.map, not vmap: random_quadratic factorizes a random matrix (QR), and batched
# factorizations inside jit can deadlock jaxlib's CPU thread pool (CONTRIBUTING.md section 6).
@functools.partial(jax.jit, static_argnums=1)
def _build(keys, dim):
    def one(key):
        return problems.random_quadratic(key, dim, mu=0.0, L=1.0)

    return jax.lax.map(one, keys)


def make_problem(cfg: Config, key: jax.Array):
    """Per-seed quadratics (leading seed axis) and the shared start ``x_0 = 0``."""
    quads = _build(runner.seed_keys(key, cfg.seeds, stream=1), cfg.dim)
    return quads, jnp.zeros((cfg.dim,), jnp.float32)


def make_methods(cfg: Config) -> dict:
    """``{label: algorithm}``: the paper's method first, then its baselines."""
    return {
        "my_method": optax.sgd(cfg.step),  # replace with my_family.my_method(...)
        "half step": optax.sgd(0.5 * cfg.step),  # replace with the paper's baselines
    }


def _gap(step, state, oracle):
    """Exact suboptimality of the iterate (never measured through a noisy oracle). A
    module-level function, so repeated runs reuse the compiled program."""
    del state
    return oracle.value(step.x) - oracle.min_value


def run(cfg: Config, key: jax.Array, *, shard: bool = False, progress: bool = False,
        out_dir=None, resume: bool = False) -> dict:
    """Runs every method over ``cfg.seeds`` seeds, one compiled scan vmapped over seeds.

    ``out_dir`` and ``resume`` are accepted for the CLI and unused: there is no long training
    loop. An experiment that has one runs it through ``runner.checkpointed_loop``.

    Returns NumPy arrays: ``gap[method]`` of shape ``(seeds, num_steps)`` (column ``t`` is
    ``f(x_{t+1}) - f*``), ``dist0_sq`` (``||x_0 - x*||^2`` per seed), ``lipschitz``, ``ks`` (the
    fit grid) and the config.
    """
    del out_dir, resume
    quads, x0 = make_problem(cfg, key)
    gap = {}
    for i, (name, alg) in enumerate(runner.progress(make_methods(cfg).items(),
                                                    enabled=progress, desc=SLUG)):
        keys = runner.seed_keys(key, cfg.seeds, stream=2 + i)
        _, trace = base.run_seeds(alg, x0, quads, keys, cfg.num_steps, trace_fn=_gap,
                                  field="grad", batch_oracle=True, shard=shard)
        gap[name] = np.asarray(trace)
    return {
        "gap": gap,
        "dist0_sq": np.asarray(jnp.sum((quads.optimum - x0[None]) ** 2, axis=-1)),
        "lipschitz": np.asarray(quads.lipschitz),
        "ks": theory.geometric_grid(cfg.fit_start, cfg.num_steps, cfg.fit_points),
        "config": dataclasses.asdict(cfg),
    }


# --------------------------------------------------------------------------- metrics


def rate_slope(results) -> float:
    """Slope of ``log`` (seed mean of ``f(x_k) - f*``) against ``log k`` on the grid."""
    ks = results["ks"]
    return float(theory.fit_power_law(ks, results["gap"]["my_method"][:, ks - 1]).slope)


def bound_ratio(results) -> float:
    """``max`` over seeds and ``k`` of ``2k (f(x_k) - f*) / (L ||x_0 - x*||^2)``."""
    gap = results["gap"]["my_method"]
    k = np.arange(1, gap.shape[1] + 1)
    scale = results["lipschitz"] * results["dist0_sq"]
    return float(np.max(2.0 * k * gap / scale[:, None]))


CLAIMS = (
    theory.Claim("my_method_rate_slope", rate_slope, "<=", -0.8,
                 "replace: paper Theorem N, O(1/k) (theory -1); slope of the seed mean"),
    theory.Claim("my_method_bound_ratio", bound_ratio, "<=", 1.0,
                 "replace: paper eq. (N), f(x_k) - f* <= L ||x_0 - x*||^2 / (2k)"),
)

# Claims that do not reproduce, each with its measured value and reason in a comment above
# (CONTRIBUTING.md section 5). A name in FULL_ONLY_FAILING fails at FULL size only.
KNOWN_FAILING: tuple[str, ...] = ()
FULL_ONLY_FAILING: tuple[str, ...] = ()


def summarize(results) -> dict:
    """JSON-able headline numbers, ending with every claim's measured value."""
    out = {}
    for name, gap in results["gap"].items():
        out[f"{name} final gap (seed median)"] = float(np.median(gap[:, -1]))
    return {**out, **runner.claim_values(CLAIMS, results)}


def plot(results, cfg: Config) -> dict:
    """``{"gap": figure}``: seed median and 10-90% band of ``f(x_k) - f*`` on log-log axes."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    k = np.arange(1, cfg.num_steps + 1)
    for name, gap in results["gap"].items():
        runner.band_plot(ax, k, gap, label=name)
    ref = np.median(results["gap"]["my_method"][:, cfg.fit_start - 1])
    ax.plot(k, ref * cfg.fit_start / k, "k--", lw=1, label=r"$k^{-1}$")
    runner.finish_axes(ax, xlabel="iteration k", ylabel=r"$f(x_k) - f^\star$",
                       title=f"random quadratics, d={cfg.dim}, {cfg.seeds} seeds")
    return {"gap": fig}
