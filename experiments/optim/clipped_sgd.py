r"""# Clipped SGD under heavy-tailed data: the finite-sum paradox made measurable

*Aleksandr Shestakov, Martin Takac, Eduard Gorbunov, "From Optimization to Generalization under
Heavy-Tailed Data: The Role of Gradient Clipping", ICML 2026 (abstract only public).*

Once a data set $\xi_1, \dots, \xi_N$ is drawn, every moment of the finite sum
$F_N(x) = \frac1N\sum_i f(x, \xi_i)$ is finite, so why clip? Because the moments depend on the
data set: if $\|\nabla f(x_\star, \xi)\|$ has tail index $\alpha \in (1, 2)$, the empirical
second moment $\sigma_N^2 = \frac1N\sum_i\|\nabla f(x_\star, \xi_i)\|^2$ is dominated by its
largest term and grows like $N^{2/\alpha - 1}$, and so do finite-sum SGD bounds.

**Problem** (`jaxopt_icml.problems.heavy_tailed`): $f(x, \xi) = \tfrac12\|x - \xi\|^2$ in
$d = 5$, $\xi$ with i.i.d. Student-t coordinates (df $\alpha$, sampled exactly), so
$\nabla f(x, \xi) = x - \xi$, the population minimizer is $x_\star = 0$ and the ERM solution is
the sample mean $\hat x_N$. A data set of size $N$ is the first $N$ points of one long i.i.d.
sequence (nested prefixes: each $N$ sees an i.i.d. sample with the right law, and one compiled
program serves every $N$).

## Update equations

Both methods start at $x_0 = 0$, sample $i_t$ uniformly from $\{1..N\}$ and use
$\gamma_t = 1/(t+1)$ ($= 1/(\mu(t+1))$, $\mu = 1$):
$$x_{t+1} = x_t - \gamma_t\, g_t \ \text{(SGD)}, \qquad
x_{t+1} = x_t - \gamma_t \min\Big(1, \frac{\lambda_t}{\|g_t\|}\Big) g_t \
\text{(clipped SGD, `jaxopt_icml.optim.clipped_sgd`)},$$
$g_t = \nabla f(x_t, \xi_{i_t})$, with $\lambda = 3$ (the claims) or the growing
$\lambda_t = 3 (t+1)^{1/\alpha}$, and normalized SGD ($g_t/\|g_t\|$) as a further baseline. With
this step size SGD's iterate is exactly the average of the $T$ sampled points, so
$E_{\rm opt}\|x_T - \hat x_N\|^2 = \frac1{TN}\sum_i\|\xi_i - \hat x_N\|^2$ (reported as
`sgd_theory`; the test checks it).

**Claims** (spec `44_clipped_sgd.md`; medians of logs over data sets, since means of
heavy-tailed quantities are unstable):

1. *Scaling law*: slope of the median of $\log\sigma_N^2$ against $\log N$, $N \in
   \{10^3..10^6\}$, 32 data sets: in $[0.22, 0.42]$ for $\alpha = 1.5$ (theory $1/3$), within
   $\pm 0.1$ of the theory $2/\alpha - 1 = 0.11$ for $\alpha = 1.8$ and of $0$ for $\alpha = 3$
   (light enough tail: $\sigma_N^2 \to E\|\xi\|^2$).
2. *SGD degrades with $N$, clipped SGD does not*: $\alpha = 1.5$, $T = 2000$, error
   $E_{\rm opt}\|x_T - \hat x_N\|^2$ (mean over 256 runs per data set, median over 16 data
   sets): slope against $\log N$ $\ge 0.2$ for SGD and $\le 0$ for clipped SGD with
   $\lambda = 3$. The clipped iterate converges to a Huber-type M-estimator, not to
   $\hat x_N$; the distance between the two shrinks as $N$ grows, and its optimization noise is
   bounded by $\lambda$ whatever the data. Distances to $x_\star$ are reported too.
3. *Generalization link*: one run per data set, 64 data sets of size $N = 10^5$: the 95th
   percentile of $\|x_T - x_\star\|^2$ for clipped SGD is $\le 0.5\times$ that of SGD.

**Sizes.** FULL is the spec's setup. QUICK (CI, seconds) uses $N \in \{10^2, 10^3, 10^4,
3\cdot 10^4\}$ and 64 data sets for claim 1, $N \in \{10^2..10^5\}$ with 8 data sets $\times$
32 runs for claim 2 and 32 data sets of $N = 10^4$ for claim 3, and only the two claimed
methods (the baselines run in FULL); the thresholds are the spec's.
At small $N$ the slopes sit above the asymptotic exponent (pre-asymptotic bias; NumPy
simulation over 40 repetitions of the QUICK claim-1 setup: $\alpha = 1.5$: $0.355 \pm 0.031$,
$\alpha = 1.8$: $0.172 \pm 0.018$, $\alpha = 3$: $0.015 \pm 0.004$), so the QUICK claims hold
for a given key with probability about 97% (the $\alpha = 1.8$ bound $0.211$ and the
$\alpha = 1.5$ bound $0.42$ are each about two standard deviations away); with 16 data sets
the $\alpha = 1.5$ slope scattered from 0.27 to 0.47, hence 64.

**Results** (key 0; every claim passes at QUICK and FULL). FULL (121 s on a shared 2-core CPU):
scaling slopes $0.309$ ($\alpha = 1.5$, theory $0.333$), $0.126$ ($\alpha = 1.8$, theory
$0.111$), $0.007$ ($\alpha = 3$); error slopes to $\hat x_N$: SGD $+0.320$, clipped
$\lambda = 3$: $-0.455$ (growing $\lambda_t$: $-0.030$, normalized SGD: $-0.254$); SGD's
run-mean error is $0.998\times$ its closed form (median). Distances to $x_\star$: SGD's grows
too (slope $+0.16$: its sampling noise $\mathrm{Var}_N/T$ grows with $N$), clipped SGD's
shrinks ($-0.12$). Claim 3 at $N = 10^5$: 95th percentiles of $\|x_T - x_\star\|^2$: SGD
$3.17$, clipped $0.028$ (ratio $0.0088$), growing $\lambda_t$ $0.34$, normalized $0.13$, and
the ERM solution itself $0.165$: with $T = 2000 \ll N$ the clipped iterate is closer to
$x_\star$ than $\hat x_N$ is. QUICK: slopes $0.359$, $0.209$ (bound $0.211$: the
pre-asymptotic bias above), $0.020$; error slopes $+0.271$ and $-0.467$; ratio $0.020$.

**Precision.** Data are sampled in float32; every sum over the data set ($\sigma_N^2$,
$\hat x_N$) and the iterates are float64 (`run` works inside `jax.enable_x64(True)`), since
float32 accumulation errors are visible at $N = 10^6$.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import theory
from jaxopt_icml.optim.clipped_sgd import clipped_sgd, power_schedule
from jaxopt_icml.problems.heavy_tailed import FiniteSumMean, student_t

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("Aleksandr Shestakov, Martin Takac, Eduard Gorbunov, \"From Optimization to "
             "Generalization under Heavy-Tailed Data: The Role of Gradient Clipping\", ICML 2026 "
             "(https://icml.cc/virtual/2026/poster/65262; no arXiv id found).")

SGD = "SGD"
CLIPPED = "clipped SGD (constant lambda)"
GROWING = "clipped SGD (growing lambda_t)"
NORMALIZED = "normalized SGD"


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes. ``seeds`` is the number of data sets of claim 2; claim 1 uses
    ``scaling_factor * seeds`` and claim 3 ``gen_factor * seeds`` data sets (all vmapped, and
    sharded over devices with ``shard=True``)."""

    seeds: int = 16
    d: int = 5
    alpha: float = 1.5
    # claim 1
    scaling_alphas: tuple = (1.5, 1.8, 3.0)
    scaling_ns: tuple = (10**3, 10**4, 10**5, 10**6)
    scaling_factor: int = 2
    # claim 2
    opt_ns: tuple = (10**3, 10**4, 10**5, 10**6)
    runs: int = 256
    steps: int = 2000
    lr0: float = 1.0
    clip: float = 3.0
    # claim 3
    gen_n: int = 10**5
    gen_factor: int = 4
    gen_quantile: float = 0.95
    # also run the baselines without a claim (growing lambda_t, normalized SGD)
    baselines: bool = True


FULL = Config()
QUICK = Config(seeds=8, scaling_ns=(10**2, 10**3, 10**4, 3 * 10**4), scaling_factor=8,
               opt_ns=(10**2, 10**3, 10**4, 10**5), runs=32, gen_n=10**4,
               baselines=False)


# --------------------------------------------------------------------------- problem


def _keys(cfg, key):
    k_scale, k_opt, k_gen = jax.random.split(key, 3)
    return (runner.seed_keys(k_scale, cfg.scaling_factor * cfg.seeds),
            runner.seed_keys(k_opt, cfg.seeds),
            runner.seed_keys(k_gen, cfg.gen_factor * cfg.seeds))


def _data(key, cfg, n):
    """One data set: ``n`` points with Student-t(``cfg.alpha``) coordinates (float32)."""
    return student_t(jax.random.fold_in(key, 0), cfg.alpha, (n, cfg.d), jnp.float32)


def make_problem(cfg: Config, key: jax.Array) -> FiniteSumMean:
    """The first data set of claim 2 at its largest ``N``, as a
    ``problems.heavy_tailed.FiniteSumMean`` (the same points :func:`run` uses), in float64."""
    with jax.enable_x64(True):
        data = jax.jit(_data, static_argnums=(1, 2))(_keys(cfg, key)[1][0], cfg, max(cfg.opt_ns))
        f = lambda v: jnp.asarray(v, jnp.float64)
        return FiniteSumMean(data=data, erm_solution=jnp.mean(data.astype(jnp.float64), 0),
                             population_minimizer=jnp.zeros(cfg.d, jnp.float64),
                             tail_index=f(cfg.alpha), strong_convexity=f(1.0), smoothness=f(1.0))


def describe_problem(problem: FiniteSumMean) -> dict:
    with jax.enable_x64(True):
        sq = jnp.sum(problem.data.astype(jnp.float64) ** 2, -1)
        return {
            "N": problem.num_examples,
            "d": problem.data.shape[1],
            "tail index alpha": float(problem.tail_index),
            "population minimizer x*": np.asarray(problem.population_minimizer).tolist(),
            "ERM solution (sample mean)": np.round(np.asarray(problem.erm_solution), 4).tolist(),
            "sigma_N^2 = mean ||grad f(x*, xi)||^2": float(jnp.mean(sq)),
            "largest ||xi||^2 / sum": float(jnp.max(sq) / jnp.sum(sq)),
            "mu = L": float(problem.smoothness),
        }


def make_methods(cfg: Config) -> dict:
    """``{name: optax transformation}``, all with ``gamma_t = lr0 / (t + 1)``: SGD and clipped
    SGD (constant ``clip``), plus (``cfg.baselines``, not in QUICK) clipped SGD with
    ``lambda_t = clip (t+1)^(1/alpha)`` and normalized SGD."""
    sched = power_schedule(cfg.lr0, -1.0)
    methods = {SGD: optax.sgd(sched), CLIPPED: clipped_sgd(sched, cfg.clip)}
    if cfg.baselines:
        methods[GROWING] = clipped_sgd(sched, power_schedule(cfg.clip, 1.0 / cfg.alpha))
        methods[NORMALIZED] = optax.chain(optax.contrib.normalize(), optax.sgd(sched))
    return methods


# --------------------------------------------------------------------------- runs


def _scaling_one(key, cfg):
    """Claim 1 on one data-set key: ``sigma_N^2`` at every ``N`` for every alpha,
    shape ``(len(scaling_alphas), len(scaling_ns))``."""
    ns = np.asarray(cfg.scaling_ns)
    n_max = int(ns.max())

    def per_alpha(j, alpha):
        xi = student_t(jax.random.fold_in(key, j), alpha, (n_max, cfg.d), jnp.float32)
        cs = jnp.cumsum(jnp.sum(jnp.square(xi.astype(jnp.float64)), -1))
        return cs[ns - 1] / ns

    # A Python loop, not vmap: the sampler is much slower when batched (gathers, nonzero).
    return jnp.stack([per_alpha(j, a) for j, a in enumerate(cfg.scaling_alphas)])


def _optimize(cfg, methods, data, key, ns, runs):
    """Every method on the prefixes of ``data`` of sizes ``ns`` (traced), ``runs`` runs each,
    with common random indices across methods. Returns ``x_T`` of shape
    ``(methods, len(ns), runs, d)``."""
    names = list(methods)
    txs = [optax.with_extra_args_support(methods[m]) for m in names]

    def one_run(n, k):
        x0 = jnp.zeros((cfg.d,), jnp.float64)

        def body(carry, t):
            i = jax.random.randint(jax.random.fold_in(k, t), (), 0, n)
            xi = data[i].astype(jnp.float64)
            out = []
            for tx, (x, s) in zip(txs, carry, strict=True):
                u, s = tx.update(x - xi, s, x)
                out.append((optax.apply_updates(x, u), s))
            return tuple(out), None

        carry0 = tuple((x0, tx.init(x0)) for tx in txs)
        carry, _ = jax.lax.scan(body, carry0, jnp.arange(cfg.steps, dtype=jnp.int32))
        return jnp.stack([x for x, _ in carry])  # (methods, d)

    def per_n(n, kn):
        return jax.vmap(lambda k: one_run(n, k))(jax.random.split(kn, runs))

    xs = jax.vmap(per_n)(ns, jax.random.split(key, ns.shape[0]))  # (ns, runs, methods, d)
    return jnp.transpose(xs, (2, 0, 1, 3))


def _opt_one(key, data, cfg):
    """Claim 2 on one data set (``data`` from :func:`_data`): mean over runs of the squared
    distances to ``xhat_N`` and to ``x* = 0`` per method and ``N``, plus ``sigma_N^2`` and the
    SGD closed form."""
    ns_np = np.asarray(cfg.opt_ns)
    d64 = data.astype(jnp.float64)
    csum = jnp.cumsum(d64, 0)[ns_np - 1]
    csq = jnp.cumsum(jnp.sum(d64 ** 2, -1))[ns_np - 1]
    xhat = csum / ns_np[:, None]
    sigma2 = csq / ns_np  # at x* = 0
    var = sigma2 - jnp.sum(xhat ** 2, -1)  # at xhat_N
    xs = _optimize(cfg, make_methods(cfg), data, jax.random.fold_in(key, 1),
                   jnp.asarray(ns_np, jnp.int32), cfg.runs)
    err = jnp.mean(jnp.sum((xs - xhat[None, :, None]) ** 2, -1), -1)
    err_pop = jnp.mean(jnp.sum(xs ** 2, -1), -1)
    return {"err": err, "err_pop": err_pop, "sigma2": sigma2, "var": var,
            "erm_pop": jnp.sum(xhat ** 2, -1), "sgd_theory": var / cfg.steps}


def _gen_one(key, data, cfg):
    """Claim 3 on one data set of size ``gen_n``: ``||x_T - x*||^2`` of one run per method,
    and ``||xhat_N - x*||^2``."""
    xhat = jnp.mean(data.astype(jnp.float64), 0)
    xs = _optimize(cfg, make_methods(cfg), data, jax.random.fold_in(key, 1),
                   jnp.asarray([cfg.gen_n], jnp.int32), 1)
    return {"err_pop": jnp.sum(xs[:, 0, 0] ** 2, -1), "erm_pop": jnp.sum(xhat ** 2),
            "err_erm": jnp.sum((xs[:, 0, 0] - xhat[None]) ** 2, -1)}


@functools.lru_cache(maxsize=16)
def _programs(cfg: Config, shard: bool):
    """The three compiled programs, each mapping a leading data-set axis of keys. Data are
    generated one data set at a time (``lax.map``) to bound memory; runs are vmapped."""

    def scaling(keys):
        return jax.lax.map(lambda k: _scaling_one(k, cfg), keys)

    def opt(keys):
        data = jax.lax.map(lambda k: _data(k, cfg, max(cfg.opt_ns)), keys)
        return jax.vmap(lambda k, x: _opt_one(k, x, cfg))(keys, data)

    def gen(keys):
        data = jax.lax.map(lambda k: _data(k, cfg, cfg.gen_n), keys)
        return jax.vmap(lambda k, x: _gen_one(k, x, cfg))(keys, data)

    return tuple(runner.seeded_program(f, shard=shard) for f in (scaling, opt, gen))


def run(cfg: Config, key: jax.Array, *, shard: bool = False, progress: bool = False,
        out_dir=None, resume: bool = False) -> dict:
    """Runs the three parts in float64 (inside ``jax.enable_x64(True)``).

    ``out_dir`` and ``resume`` are accepted for the CLI and ignored (no long training loop).

    Returns a dict of numpy arrays: ``scaling_sigma2`` (D1, alphas, Ns) with ``scaling_ns``,
    ``scaling_alphas``; ``opt_err[method]`` / ``opt_err_pop[method]`` (D2, Ns), the mean over
    runs of ``||x_T - xhat_N||^2`` / ``||x_T - x*||^2``, with ``opt_ns``, ``opt_sigma2``,
    ``opt_var``, ``opt_erm_pop`` and ``sgd_theory`` (D2, Ns); ``gen_err_pop[method]`` and
    ``gen_err_erm[method]`` (D3,), ``gen_erm_pop`` (D3,); and the config.
    """
    del out_dir, resume
    with jax.enable_x64(True):
        k_scale, k_opt, k_gen = _keys(cfg, key)
        scaling, opt, gen = _programs(cfg, bool(shard))
        names = list(make_methods(cfg))
        parts = runner.progress([("scaling", scaling, k_scale), ("opt", opt, k_opt),
                                 ("gen", gen, k_gen)], enabled=progress, desc=SLUG)
        out = {name: jax.device_get(fn(keys)) for name, fn, keys in parts}
    o, g = out["opt"], out["gen"]
    return {
        "scaling_sigma2": np.asarray(out["scaling"]),
        "scaling_ns": np.asarray(cfg.scaling_ns),
        "scaling_alphas": np.asarray(cfg.scaling_alphas),
        "opt_ns": np.asarray(cfg.opt_ns),
        "opt_err": {m: np.asarray(o["err"][:, i]) for i, m in enumerate(names)},
        "opt_err_pop": {m: np.asarray(o["err_pop"][:, i]) for i, m in enumerate(names)},
        "opt_sigma2": np.asarray(o["sigma2"]),
        "opt_var": np.asarray(o["var"]),
        "opt_erm_pop": np.asarray(o["erm_pop"]),
        "sgd_theory": np.asarray(o["sgd_theory"]),
        "gen_n": cfg.gen_n,
        "gen_quantile": cfg.gen_quantile,
        "gen_err_pop": {m: np.asarray(g["err_pop"][:, i]) for i, m in enumerate(names)},
        "gen_err_erm": {m: np.asarray(g["err_erm"][:, i]) for i, m in enumerate(names)},
        "gen_erm_pop": np.asarray(g["erm_pop"]),
        "config": dataclasses.asdict(cfg),
    }


# --------------------------------------------------------------------------- metrics


def _median_curve(values) -> np.ndarray:
    """``exp(median over data sets of log values)``: shape ``(Ns,)``."""
    return np.exp(np.median(np.log(np.asarray(values, np.float64)), axis=0))


def scaling_slope(results, alpha) -> float:
    """Slope of the median ``log sigma_N^2`` against ``log N`` for tail index ``alpha``."""
    j = int(np.argmin(np.abs(results["scaling_alphas"] - alpha)))
    if not np.isclose(results["scaling_alphas"][j], alpha):
        raise KeyError(f"alpha={alpha} not in {results['scaling_alphas']}")
    curve = _median_curve(results["scaling_sigma2"][:, j])
    return float(theory.power_law_slopes(results["scaling_ns"], curve))


def scaling_theory(alpha) -> float:
    """``max(2/alpha - 1, 0)``: the growth exponent of ``sigma_N^2``."""
    return max(2.0 / alpha - 1.0, 0.0)


def error_slope(results, method, key="opt_err") -> float:
    """Slope of the median (over data sets) run-mean error against ``log N``."""
    curve = _median_curve(results[key][method])
    return float(theory.power_law_slopes(results["opt_ns"], curve))


def gen_quantile_ratio(results, method=CLIPPED, baseline=SGD) -> float:
    q = results["gen_quantile"]
    return float(np.quantile(results["gen_err_pop"][method], q)
                 / np.quantile(results["gen_err_pop"][baseline], q))


CLAIMS = (
    theory.Claim(
        "scaling_slope_alpha1.5_low", lambda r: scaling_slope(r, 1.5), ">=", 0.22,
        "spec claim 1: Student-t df 1.5, d=5; slope of median log sigma_N^2 vs log N in "
        "[0.22, 0.42] (theory 1/3)"),
    theory.Claim(
        "scaling_slope_alpha1.5_high", lambda r: scaling_slope(r, 1.5), "<=", 0.42,
        "spec claim 1 (upper end of [0.22, 0.42])"),
    theory.Claim(
        "scaling_slope_alpha1.8_abs_dev",
        lambda r: abs(scaling_slope(r, 1.8) - scaling_theory(1.8)), "<=", 0.1,
        "spec claim 1: |slope - (2/1.8 - 1)| <= 0.1. Small N biases it upward: at QUICK size "
        "(N <= 3e4) NumPy gives 0.172 +- 0.018, so ~2% of keys fail the QUICK check; FULL "
        "0.126"),
    theory.Claim(
        "scaling_slope_alpha3_abs_dev", lambda r: abs(scaling_slope(r, 3.0)), "<=", 0.1,
        "spec claim 1: light tail, |slope - 0| <= 0.1"),
    theory.Claim(
        "sgd_error_slope", lambda r: error_slope(r, SGD), ">=", 0.2,
        "spec claim 2: SGD error to xhat_N grows with N (theory 1/3)"),
    theory.Claim(
        "clipped_error_slope", lambda r: error_slope(r, CLIPPED), "<=", 0.0,
        "spec claim 2: clipped SGD (lambda=3) error to xhat_N does not grow with N"),
    theory.Claim(
        "gen_q95_ratio_clipped_over_sgd", gen_quantile_ratio, "<=", 0.5,
        "spec claim 3: 95th percentile over data sets of ||x_T - x*||^2, clipped / SGD"),
)


def summarize(results: dict) -> dict:
    """Slopes, quantiles and sanity numbers (SGD against its closed form)."""
    out = {}
    for a in results["scaling_alphas"]:
        out[f"scaling slope alpha={a:g}"] = scaling_slope(results, a)
        out[f"scaling theory alpha={a:g}"] = scaling_theory(a)
    for m in results["opt_err"]:
        out[f"error slope to xhat_N/{m}"] = error_slope(results, m)
        out[f"error slope to x*/{m}"] = error_slope(results, m, "opt_err_pop")
        out[f"median error to xhat_N at N={results['opt_ns'][-1]}/{m}"] = float(
            np.median(results["opt_err"][m][:, -1]))
    out["slope of sigma_N^2 (claim-2 data)"] = float(theory.power_law_slopes(
        results["opt_ns"], _median_curve(results["opt_sigma2"])))
    out["SGD measured / closed form (median)"] = float(np.median(
        results["opt_err"][SGD] / results["sgd_theory"]))
    q = results["gen_quantile"]
    for m in results["gen_err_pop"]:
        out[f"q{q:g} ||x_T - x*||^2 at N={results['gen_n']}/{m}"] = float(
            np.quantile(results["gen_err_pop"][m], q))
    out[f"q{q:g} ||xhat_N - x*||^2 (ERM)"] = float(np.quantile(results["gen_erm_pop"], q))
    out["gen q ratio clipped / SGD"] = gen_quantile_ratio(results)
    return out


def plot(results: dict, cfg: Config) -> dict:
    """``scaling``: sigma_N^2 vs N per alpha (median, 10-90% band) with theory slopes;
    ``optimization``: error to xhat_N and to x* vs N per method; ``generalization``: the
    empirical CDF of ||x_T - x*||^2 over data sets."""
    import matplotlib.pyplot as plt

    figs = {}
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ns = results["scaling_ns"]
    for j, a in enumerate(results["scaling_alphas"]):
        v = results["scaling_sigma2"][:, j]
        line = runner.band_plot(ax, ns, v, label=rf"$\alpha={a:g}$ (slope "
                                f"{scaling_slope(results, a):.2f})")
        med = _median_curve(v)
        ax.plot(ns, med[0] * (ns / ns[0]) ** scaling_theory(a), ls="--", lw=1,
                color=line.get_color())
    runner.finish_axes(ax, xlabel="N",
                       ylabel=r"$\sigma_N^2 = \frac{1}{N}\sum_i \|\nabla f(x_\star, \xi_i)\|^2$",
                       title=r"scaling law (dashed: $N^{2/\alpha - 1}$)")
    figs["scaling"] = fig

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2))
    ns = results["opt_ns"]
    for m in results["opt_err"]:
        runner.band_plot(ax0, ns, results["opt_err"][m], label=m)
        runner.band_plot(ax1, ns, results["opt_err_pop"][m], label=m)
    runner.band_plot(ax0, ns, results["sgd_theory"], label="SGD closed form", color="k", ls=":")
    runner.band_plot(ax1, ns, results["opt_erm_pop"], label=r"ERM $\hat x_N$", color="k",
                     ls=":")
    ax0.set_title(rf"$E_{{opt}}\|x_T - \hat x_N\|^2$, T={cfg.steps}")
    ax1.set_title(rf"$E_{{opt}}\|x_T - x_\star\|^2$, T={cfg.steps}")
    runner.finish_axes(ax0, xlabel="N (data set size)",
                       ylabel=r"$\|x_T - \hat x_N\|^2$ (mean over runs)", legend=7)
    runner.finish_axes(ax1, xlabel="N (data set size)",
                       ylabel=r"$\|x_T - x_\star\|^2$ (mean over runs)", legend=7)
    fig.tight_layout()
    figs["optimization"] = fig

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for m, v in results["gen_err_pop"].items():
        s = np.sort(v)
        ax.plot(s, 1.0 - np.arange(1, s.size + 1) / (s.size + 1), label=m)
    s = np.sort(results["gen_erm_pop"])
    ax.plot(s, 1.0 - np.arange(1, s.size + 1) / (s.size + 1), "k:", label=r"ERM $\hat x_N$")
    ax.axhline(1 - results["gen_quantile"], color="grey", lw=0.8)
    runner.finish_axes(ax, xscale="log", yscale="log", xlabel=r"$\|x_T - x_\star\|^2$",
                       ylabel="fraction of data sets above",
                       title=f"tails over data sets, N={results['gen_n']}", legend=7)
    figs["generalization"] = fig
    return figs

