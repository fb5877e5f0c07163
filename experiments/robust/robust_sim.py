r"""# Robust single-index models: spectral initialisation plus robust gradient descent

*Convex Basins in Single-Index Model Loss Landscapes: Applications to Robust Recovery under
Strong Adversarial Corruption* (S. Das, S. Chatterjee, J. Batra; ICML 2026, arXiv 2605.29497).
Only the abstract was readable: the method below is the project's spec's reading of it.

## Method

Data: $x \sim N(0, I_d)$, $y = f(x^\top\beta^\star) + \sigma t_3$ (Student-t noise), and an
adversary that replaces an $\varepsilon$ fraction of the pairs by $x = 2u + 0.3\,N(0, I_d)$,
$y = 3$ with $u \perp \beta^\star$. Links: GeLU, Swish, tanh, logistic, probit, ReLU, $z^2$
(`robust.sim`).

1. **Robust spectral initialisation.** $E[y^2(xx^\top - I)] = c_{ESC}\,\beta^\star\beta^{\star\top}$
   with the *Expected Squared Convexity* constant $c_{ESC} = E[f(z)^2(z^2-1)] > 0$. Filter
   the vectors $y_i x_i$ (`robust_mean.filter_mean`: masks, power iteration for the top
   direction, MAD scale, explicit drop fraction and threshold), take the top eigenvector of
   the kept second moment, pick the sign by the median squared loss.
2. **Robust gradient descent**: $\beta_{t+1} = \beta_t - \eta\,\mathrm{RobustMean}\{(f(x_i^\top
   \beta_t) - y_i) f'(x_i^\top\beta_t) x_i\}$ as `optax.chain(robust_mean.aggregate(eps),
   optax.sgd(eta))` (`sim.robust_gd`).
3. **Basin**: the population Hessian
   $H(\beta) = E[(f'(z_\beta)^2 + (f(z_\beta) - f(z_\star)) f''(z_\beta))xx^\top]$ lives on
   the plane of $(\beta, \beta^\star)$: 2-D Gauss-Hermite quadrature (`sim.min_eig_2d`).

**Claims** (`CLAIMS`; QUICK sizes in brackets):

1. *d-free basin*: $\lambda_{\min} H > 0$ on $\|\beta-\beta^\star\| \le 0.5$ (10 radii x 73
   angles) for GeLU, Swish, tanh; $< 0$ somewhere at radius 1 for GeLU; a Monte Carlo Hessian
   ($n = 2\cdot 10^5$ [$10^5$]) in $d = 5$ and $d = 50$ at $r = 0.5$ agrees with the
   quadrature within 0.02 (largest entry difference).
2. *ESC and init*: $c_{ESC} > 0$ for GeLU, Swish, tanh, logistic, ReLU, $z^2$; without
   contamination the GeLU spectral direction has $|\cos(v, \beta^\star)| \ge 0.99$
   ($d = 20$, $n = 20000$, every seed).
3. *Robust vs vanilla* (headline): GeLU, $d = 20$, $n = 10^4$ [$d = 10$, $n = 4000$],
   $\sigma = 0.1$, $\varepsilon \in \{0.01, 0.04\}$, 60 [20] steps of $\eta = 1.5$, 8 [4]
   seeds: robust-GD error $\le 2(\sigma\sqrt\varepsilon + \sigma\sqrt{d/n})$ on every seed;
   vanilla GD (same init) median error $\ge 5\times$ the robust median.
4. *Error vs $\varepsilon$*: $n = 2\cdot10^4$ (spec: $5\cdot 10^4$, cut for the shared CPU)
   [$n = 4000$, $d = 10$], $\varepsilon \in \{0.005, 0.01, 0.02,
   0.04, 0.08\}$, 8 [4] seeds: the slope of $\log(\text{error} - \text{clean error})$ against
   $\log\varepsilon$ (theory.fit_power_law on the seed mean, bootstrap CI over seeds) lies in
   $[0.3, 0.8]$; error$/\sigma$ at $\varepsilon = 0.04$ is flat within $2\times$ for
   $\sigma \in \{0.05, 0.1, 0.2\}$.

**Choices.** $c_{ESC}$ and the Hessian formula are the spec's inferences. $\|\beta^\star\| = 1$
known. The filter drops, per round, the highest robust scores $|p_i - \mathrm{med}|/(1.4826\,
\mathrm{MAD})$ above `thresh` = 3 along the top direction; the spec's "variance exceeds a
constant times a robust scale" gate is not used: with $t_3$ noise the clean ratio
variance/MAD$^2$ of the projections is 12-100 (NumPy, $n = 10^4$), so no constant separates
clean from contaminated. Budgets: per round `drop_frac`, in total `max_frac`; the experiment
uses `drop_frac` = $\varepsilon$ and `power_iters` = 5 (warm-started) in the GD phase to keep
the CPU run short (the library default $\varepsilon/2$ gave the same errors within seed noise
in a 8-seed trial, 0.007-0.011 at both $\varepsilon$, at twice the cost), and the spectral
step's total budget is $\varepsilon$ (not $2\varepsilon$): clean vectors $y_i x_i$ are
heavy-tailed along $\beta^\star$ itself, so extra drops remove the signal (a trial with GeLU,
$d = 20$, $n = 10^4$, 4 seeds, $\varepsilon = 0.01$: budget $2\varepsilon$ gave
$|\cos(v, \beta^\star)| = 0.79$-$0.98$, budget $\varepsilon$ 0.95-0.99). Power iteration
replaces `eigh` (vmap-safe on this CPU jaxlib). Vanilla GD and the other baselines start from
the same robust initialisation (the comparison isolates the aggregation); the "non-robust"
pipeline is plain spectral + vanilla GD; "random init" is a random unit vector + robust GD.

**Measured** (key 0, FULL; QUICK in brackets). Claim 1: $\lambda_{\min}$ over
$r \le 0.5$: GeLU 0.249, Swish 0.230, tanh 0.012; GeLU at $r = 1$: $-0.313$ (the spec's table
to 3 digits); Monte Carlo vs quadrature: 0.0068 ($d = 5$), 0.0058 ($d = 50$) [0.013 / 0.015].
Claim 2: $c_{ESC}$ = 0.973 / 0.834 / 0.364 / 0.062 / 1.000 / 12.0 (probit 0.092); clean init
$|\cos| \ge 0.995$. Claim 3 (bounds 0.0289 / 0.0489): robust GD median / max error 0.0106 /
0.0122 at $\varepsilon = 0.01$ and 0.0099 / 0.0115 at 0.04 (init 0.14 / 0.19); vanilla GD
0.079 / 0.428 (7.4x / 43x); trimmed mean 0.033 / 0.119; median of means (101 blocks) 0.072 /
0.430; Huber GD 0.0097 / 0.021 (the adversary's $y = 3$ is a gross residual outlier, which
Huber clips: as good as the filter at 0.01); plain spectral + vanilla GD 0.082 / 0.433 (its
init error at 0.04 is 1.39: the cluster takes over the top eigenvector); random init +
filter GD 0.0102 / 0.0098 (GeLU's basin is wide enough here: the init is not needed for this
adversary). Claim 4 **does not reproduce**: errors 0.0070-0.0081 for
$\varepsilon = 0.005 \ldots 0.08$ against 0.0076 on clean data: the filter removes the
cluster entirely and the $O(\sigma\sqrt\varepsilon)$ rate (a worst-case bound) never shows;
the fitted slope 0.35 has a 95% CI of $[-1.65, 0.84]$ [QUICK $-0.31$, $[-2.56, 0.22]$]: the
FULL point slope passing `eps_slope_low` is chance, not evidence (`eps_slope_ci_low` fails); an
adversary placed at the filter's detection limit would be needed to see it. Error$/\sigma$
is flat: 0.072 / 0.072 / 0.075 for $\sigma$ = 0.05 / 0.1 / 0.2 (ratio 1.05).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.robust import sim

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("S. Das, S. Chatterjee, J. Batra. *Convex Basins in Single-Index Model Loss "
             "Landscapes: Applications to Robust Recovery under Strong Adversarial "
             "Corruption*. ICML 2026, arXiv 2605.29497.")

ESC_LINKS = ("gelu", "swish", "tanh", "logistic", "relu", "square")
BASIN_LINKS = ("gelu", "swish", "tanh")
ROBUST = "robust spectral + filter GD"
VANILLA = "vanilla GD"


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 8
    link: str = "gelu"
    # claim 1
    radii: tuple = tuple(0.05 * k for k in range(1, 11))
    angles: int = 73
    outer_radius: float = 1.0
    nodes: int = 60
    mc_n: int = 200_000
    mc_dims: tuple = (5, 50)
    mc_radius: float = 0.5
    mc_angle: float = 2.0
    # claim 2
    init_n: int = 20_000
    init_d: int = 20
    # claim 3
    n: int = 10_000
    d: int = 20
    sigma: float = 0.1
    eps_pair: tuple = (0.01, 0.04)
    steps: int = 60
    lr: float = 1.5
    baselines: bool = True
    # claim 4
    slope_n: int = 20_000  # spec: 5 10^4; cut for the shared 2-core CPU (see Choices)
    slope_eps: tuple = (0.005, 0.01, 0.02, 0.04, 0.08)
    slope_steps: int = 30
    sigmas: tuple = (0.05, 0.1, 0.2)
    sigma_eps: float = 0.04
    # filter settings of the GD phase (Choices)
    thresh: float = 3.0
    drop_frac_factor: float = 1.0  # drop_frac = factor * eps
    power_iters: int = 5


FULL = Config()
# QUICK (CI): 4 seeds, 40 quadrature nodes per axis, MC Hessian with 5 10^4 samples, claims 3
# and 4 at d = 10, n = 4000 with 20 steps (one compiled program), baselines off.
QUICK = Config(seeds=4, nodes=40, mc_n=50_000, n=4000, d=10, steps=20, baselines=False,
               slope_n=4000, slope_steps=20)


def make_problem(cfg: Config, key, *, eps=0.0, sigma=None, n=None, d=None):
    """One contaminated GeLU data set (:class:`jaxopt_icml.robust.sim.SIMData`)."""
    return sim.make_data(key, cfg.link, n=cfg.n if n is None else n,
                         d=cfg.d if d is None else d, eps=eps,
                         sigma=cfg.sigma if sigma is None else sigma)


# how each method is initialised: "robust" (filtered spectral), "plain" (unfiltered spectral),
# "random" (a random unit vector)
INIT_KIND = {"plain spectral + vanilla GD": "plain", "random init + filter GD": "random"}


def make_methods(cfg: Config, eps=0.0) -> dict:
    """``name -> OracleAlgorithm`` for the GD phase at contamination ``eps`` (initialisation:
    :data:`INIT_KIND`, default the robust spectral one). Vanilla GD is the filter with
    ``eps = 0`` (``drop_frac = max_frac = 0``: nothing is ever dropped, the plain mean), so
    that it shares the filter's compiled program."""
    kw = {"thresh": cfg.thresh, "power_iters": cfg.power_iters}
    gd = lambda e, **k: sim.robust_gd(cfg.link, cfg.lr, eps=e, **k)
    methods = {ROBUST: gd(eps, drop_frac=cfg.drop_frac_factor * eps, **kw),
               VANILLA: gd(0.0, drop_frac=0.0, **kw)}
    if cfg.baselines:
        methods.update({
            "trimmed-mean GD": gd(eps, method="trimmed"),
            "median-of-means GD (101 blocks)": gd(eps, method="mom", num_blocks=101),
            "Huber GD": gd(eps, method="mean", loss="huber"),
            "plain spectral + vanilla GD": gd(0.0, drop_frac=0.0, **kw),
            "random init + filter GD": gd(eps, drop_frac=cfg.drop_frac_factor * eps, **kw),
        })
    return methods


# --------------------------------------------------------------------------- claim 1, 2


def _basin(cfg: Config) -> dict:
    with jax.enable_x64(True):
        phis = jnp.linspace(0.0, 2 * math.pi, cfg.angles)
        radii = jnp.asarray((*cfg.radii, cfg.outer_radius))

        @jax.jit
        def grid(radii, phis):
            return [jax.vmap(jax.vmap(
                lambda r, p, name=name: sim.min_eig_2d(name, r, p, num_nodes=cfg.nodes),
                in_axes=(None, 0)), in_axes=(0, None))(radii, phis) for name in BASIN_LINKS]

        out = {}
        for name, vals in zip(BASIN_LINKS, grid(radii, phis), strict=True):
            vals = np.asarray(vals)
            out[name], out[name + "_outer"] = vals[:-1], vals[-1]
        esc = jax.jit(lambda: [sim.esc_constant(name) for name in sim.LINKS])()
        out["esc"] = {name: float(v) for name, v in zip(sim.LINKS, esc, strict=True)}
    return out


@functools.partial(jax.jit, static_argnums=(0, 3))
def _quad_hessians(link, betas, stars, nodes):
    return jax.vmap(lambda b, s: sim.population_hessian(link, b, s, num_nodes=nodes))(
        betas, stars)


def _mc_hessian(cfg: Config, key) -> dict:
    """Largest entry of |H_MC - H_quadrature| in each d of cfg.mc_dims (float32 sample sums).

    One program for all dimensions: ``beta``, ``beta*`` (drawn in R^d) are zero-padded to
    ``D = max(mc_dims)`` and both Hessians are computed in R^D, then cut to their leading
    ``d x d`` block. That block is exactly the d-dimensional quantity: ``w`` depends on ``x``
    only through ``beta^T x`` and ``beta*^T x``, so the first ``d`` coordinates of the R^D
    samples are a d-dimensional Gaussian Monte Carlo sample, and the quadrature block is the
    d-dimensional population Hessian."""
    lk = sim.get_link(cfg.link)
    D = max(cfg.mc_dims)
    betas, stars, kxs = [], [], []
    for i, d in enumerate(cfg.mc_dims):
        kb, kx, ke = jax.random.split(jax.random.fold_in(key, i), 3)
        bs = jax.random.normal(kb, (d,))
        bs = bs / jnp.linalg.norm(bs)
        e = jax.random.normal(ke, (d,))
        e = e - (e @ bs) * bs
        e = e / jnp.linalg.norm(e)
        beta = bs + cfg.mc_radius * (math.cos(cfg.mc_angle) * bs + math.sin(cfg.mc_angle) * e)
        betas.append(np.pad(np.asarray(beta, np.float64), (0, D - d)))
        stars.append(np.pad(np.asarray(bs, np.float64), (0, D - d)))
        kxs.append(kx)

    @jax.jit
    def mc(kx, beta, bs):
        X = jax.random.normal(kx, (cfg.mc_n, D))
        zb, zs = X @ beta, X @ bs
        w = lk.df(zb) ** 2 + (lk.f(zb) - lk.f(zs)) * lk.d2f(zb)
        return (X * w[:, None]).T @ X / cfg.mc_n

    H_mc = np.asarray(jax.vmap(mc)(jnp.stack(kxs), jnp.asarray(np.stack(betas), jnp.float32),
                                   jnp.asarray(np.stack(stars), jnp.float32)), np.float64)
    with jax.enable_x64(True):
        H_q = np.asarray(_quad_hessians(cfg.link, jnp.asarray(np.stack(betas)),
                                        jnp.asarray(np.stack(stars)), cfg.nodes))
    return {d: float(np.max(np.abs(H_mc[i, :d, :d] - H_q[i, :d, :d])))
            for i, d in enumerate(cfg.mc_dims)}


def _clean_init(cfg: Config, keys) -> np.ndarray:
    def one(k):
        kd, ki = jax.random.split(k)
        data = make_problem(cfg, kd, eps=0.0, n=cfg.init_n, d=cfg.init_d)
        ini = sim.robust_spectral_init(data.X, data.y, 0.0, ki, link=cfg.link)
        return jnp.abs(ini.direction @ data.beta_star)

    fn = runner.seeded_program(jax.vmap(one),
                               compiler_options=runner.fast_cpu_compile_options())
    return np.asarray(fn(keys))


# --------------------------------------------------------------------------- claims 3, 4


def _pipeline(cfg: Config, init_kind: str, method: str, n: int, d: int, steps: int):
    """``(keys, eps_data, eps_init, sigma, eps_agg) -> (init error, error trace)``, vmapped
    over all: data with ``eps_data`` contamination and noise ``sigma``, spectral init filtered
    at ``eps_init`` (0: the plain spectral init), then ``steps`` updates of
    ``make_methods(cfg, eps_agg)[method]``."""

    def one(key, eps_data, eps_init, sigma, eps_agg):
        kd, ki = jax.random.split(key)
        ki, kr = jax.random.split(ki)  # init key and run key kept apart
        data = make_problem(cfg, kd, eps=eps_data, sigma=sigma, n=n, d=d)
        if init_kind == "random":
            b0 = jax.random.normal(ki, (d,))
            b0 = b0 / jnp.linalg.norm(b0)
        else:
            b0 = sim.robust_spectral_init(data.X, data.y, eps_init, ki, link=cfg.link).beta
        alg = make_methods(cfg, eps_agg)[method]
        _, tr = base.run(alg, b0, data, kr, steps,
                         trace_fn=lambda s, st, o: jnp.linalg.norm(s.x - o.beta_star))
        return jnp.linalg.norm(b0 - data.beta_star), tr

    return runner.seeded_program(jax.vmap(one),
                                 compiler_options=runner.fast_cpu_compile_options())


def _call(fn, keys, rows):
    """``fn`` on the seed keys tiled over ``rows`` of ``(eps_data, eps_init, sigma, eps_agg)``;
    returns ``(init errors (rows, seeds), traces (rows, seeds, steps))``."""
    # identical rows (e.g. the headline's eps = 0.04 row is also a claim-4 row) run once:
    # every row uses the same seed keys, so the results are the same
    uniq = list(dict.fromkeys(tuple(float(v) for v in r) for r in rows))
    idx = [uniq.index(tuple(float(v) for v in r)) for r in rows]
    S, R = keys.shape[0], len(uniq)
    cols = np.asarray(uniq, np.float32)
    args = [jnp.repeat(jnp.asarray(cols[:, j]), S) for j in range(4)]
    i0, tr = fn(jnp.concatenate([keys] * R), *args)
    i0, tr = np.asarray(i0).reshape(R, S), np.asarray(tr).reshape(R, S, -1)
    return i0[idx], tr[idx]


def _gd_runs(cfg: Config, keys, progress: bool = False) -> dict:
    """Claims 3 and 4. Robust GD and vanilla GD (the filter at aggregator eps 0) share one
    program; the claim-4 rows join it when they have the same ``n`` and step count (QUICK);
    each FULL baseline is one more program."""
    E = len(cfg.eps_pair)
    head = [(e, e, cfg.sigma) for e in cfg.eps_pair]
    slope = ([(0.0, 0.0, cfg.sigma)] + [(e, e, cfg.sigma) for e in cfg.slope_eps]
             + [(cfg.sigma_eps, cfg.sigma_eps, s) for s in cfg.sigmas])
    shared = cfg.slope_n == cfg.n and cfg.slope_steps == cfg.steps
    rows = [(*h, h[0]) for h in head] + [(*h, 0.0) for h in head]
    if shared:
        rows += [(*s, s[0]) for s in slope]
    i0, tr = _call(_pipeline(cfg, "robust", ROBUST, cfg.n, cfg.d, cfg.steps), keys, rows)
    out = {"headline": {ROBUST: {"init": i0[:E], "trace": tr[:E]},
                        VANILLA: {"init": i0[E:2 * E], "trace": tr[E:2 * E]}}}
    if shared:
        sl_i0, sl_fin = i0[2 * E:], tr[2 * E:, :, -1]
    else:
        fn = _pipeline(cfg, "robust", ROBUST, cfg.slope_n, cfg.d, cfg.slope_steps)
        sl_i0, sl_tr = _call(fn, keys, [(*s, s[0]) for s in slope])
        sl_fin = sl_tr[:, :, -1]
    ne = len(cfg.slope_eps)
    out["slope"] = {"clean": sl_fin[0], "eps": np.asarray(cfg.slope_eps),
                    "errors": sl_fin[1:1 + ne], "sigmas": np.asarray(cfg.sigmas),
                    "sigma_errors": sl_fin[1 + ne:], "init": sl_i0[1:1 + ne]}
    others = [(k, INIT_KIND.get(k, "robust")) for k in make_methods(cfg)
              if k not in (ROBUST, VANILLA)]
    for name, kind in runner.progress(others, enabled=progress, desc="claim 3 baselines"):
        fn = _pipeline(cfg, kind, name, cfg.n, cfg.d, cfg.steps)
        # the plain-spectral baseline initialises without filtering (eps_init = 0)
        rows = [(e, 0.0 if kind == "plain" else e, s, e) for e, _, s in head]
        a, b = _call(fn, keys, rows)
        out["headline"][name] = {"init": a, "trace": b}
    return out


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """Claims 1-2 (quadrature in float64, Monte Carlo and clean spectral init in float32), then
    claims 3-4: one jitted program per method, vmapped over seeds x eps x sigma (float32).
    ``shard``, ``out_dir`` and ``resume`` are accepted and ignored (short runs, one device);
    ``progress`` shows a bar over the claim-3 methods."""
    del shard, out_dir, resume
    keys = runner.seed_keys(key, cfg.seeds, fast=True)
    out = {"basin": _basin(cfg)}
    out["mc"] = _mc_hessian(cfg, jax.random.fold_in(runner.stream_key(key, fast=True), 1))
    out["init_cos"] = _clean_init(cfg, runner.seed_keys(key, cfg.seeds, stream=1, fast=True))
    out.update(_gd_runs(cfg, keys, progress))
    out["config"] = {"n": cfg.n, "d": cfg.d, "sigma": cfg.sigma, "eps_pair": cfg.eps_pair}
    return out


# --------------------------------------------------------------------------- claims

def bound(r, eps) -> float:
    c = r["config"]
    return 2 * (c["sigma"] * math.sqrt(eps) + c["sigma"] * math.sqrt(c["d"] / c["n"]))


def _basin_min(name):
    return lambda r: float(np.min(r["basin"][name]))


def _robust_ratio(i):
    def metric(r):
        eps = r["config"]["eps_pair"][i]
        return float(np.max(r["headline"][ROBUST]["trace"][i, :, -1]) / bound(r, eps))

    return metric


def _vanilla_ratio(i):
    def metric(r):
        h = r["headline"]
        return float(np.median(h[VANILLA]["trace"][i, :, -1])
                     / np.median(h[ROBUST]["trace"][i, :, -1]))

    return metric


def eps_fit(r) -> theory.PowerLawFit:
    s = r["slope"]
    excess = s["errors"] - s["clean"][None, :]  # (eps, seeds), paired by seed
    return theory.fit_power_law(s["eps"], np.maximum(excess.T, 1e-9))


def _sigma_flat(r):
    s = r["slope"]
    per = np.median(s["sigma_errors"], axis=1) / s["sigmas"]
    return float(per.max() / per.min())


CLAIMS = (
    *(theory.Claim(f"basin_positive_r0.5_{k}", _basin_min(k), ">", 0.0,
                   "spec claim 1; quadrature, 10 radii x 73 angles") for k in BASIN_LINKS),
    theory.Claim("basin_negative_r1_gelu", _basin_min("gelu_outer"), "<", 0.0,
                 "spec claim 1 (spec: -0.313)"),
    theory.Claim("hessian_mc_vs_quadrature_d5", lambda r: r["mc"][5], "<=", 0.02,
                 "spec claim 1; largest entry difference"),
    theory.Claim("hessian_mc_vs_quadrature_d50", lambda r: r["mc"][50], "<=", 0.02,
                 "spec claim 1; largest entry difference"),
    theory.Claim("esc_positive", lambda r: min(r["basin"]["esc"][k] for k in ESC_LINKS), ">",
                 0.0, "spec claim 2 (min over GeLU, Swish, tanh, logistic, ReLU, z^2)"),
    theory.Claim("init_clean_cos", lambda r: float(np.min(r["init_cos"])), ">=", 0.99,
                 "spec claim 2 (every seed)"),
    theory.Claim("robust_within_bound_eps0.01", _robust_ratio(0), "<=", 1.0,
                 "spec claim 3: max over seeds of error / 2(sigma sqrt(eps) + sigma sqrt(d/n))"),
    theory.Claim("robust_within_bound_eps0.04", _robust_ratio(1), "<=", 1.0, "spec claim 3"),
    theory.Claim("vanilla_over_robust_eps0.01", _vanilla_ratio(0), ">=", 5.0,
                 "spec claim 3 (median errors)"),
    theory.Claim("vanilla_over_robust_eps0.04", _vanilla_ratio(1), ">=", 5.0, "spec claim 3"),
    theory.Claim("eps_slope_low", lambda r: eps_fit(r).slope, ">=", 0.3,
                 "spec claim 4 (theory 0.5). KNOWN_FAILING: fails at QUICK; at FULL the point "
                 "slope passes BY CHANCE (its 95% CI spans [-1.65, 0.84]); the honest signal "
                 "is eps_slope_ci_low"),
    theory.Claim("eps_slope_high", lambda r: eps_fit(r).slope, "<=", 0.8, "spec claim 4"),
    # added: the point slope alone can land in the band by chance when the excess error is at
    # the seed-noise level; this one requires the 95% bootstrap CI to clear the lower end
    theory.Claim("eps_slope_ci_low", lambda r: eps_fit(r).ci_low, ">=", 0.3,
                 "added to spec claim 4: lower end of the bootstrap 95% CI over seeds"),
    theory.Claim("sigma_flat", _sigma_flat, "<=", 2.0,
                 "spec claim 4: max/min of median error / sigma over sigma in {0.05, 0.1, 0.2}"),
)
# Claim 4 does not reproduce: the filter removes this adversary's cluster completely, so the
# excess error over clean data is at the seed-noise level and its slope in eps is undetermined.
# FULL (n = 2 10^4, 8 seeds): errors 0.0070-0.0081 vs clean 0.0076, slope 0.35 with 95% CI
# [-1.65, 0.84]: eps_slope_low passes there BY CHANCE (it stays in KNOWN_FAILING: the point
# slope is not evidence; eps_slope_ci_low is the honest failing signal); QUICK: slope -0.31,
# CI [-2.56, 0.22].
KNOWN_FAILING = ("eps_slope_low", "eps_slope_ci_low")
FULL_ONLY_FAILING: tuple = ()


def summarize(results) -> dict:
    out = {}
    b = results["basin"]
    for k in BASIN_LINKS:
        out[f"lambda_min over r<=0.5 ({k})"] = float(np.min(b[k]))
        out[f"lambda_min at r=1 ({k})"] = float(
            np.min(b[k + "_outer"]))
    for k, v in b["esc"].items():
        out[f"c_ESC {k}"] = v
    for d, v in results["mc"].items():
        out[f"max |H_MC - H_quad| d={d}"] = v
    out["clean init |cos| min / median"] = [float(np.min(results["init_cos"])),
                                            float(np.median(results["init_cos"]))]
    for i, eps in enumerate(results["config"]["eps_pair"]):
        out[f"bound 2(sigma sqrt(eps) + sigma sqrt(d/n)) eps={eps}"] = bound(results, eps)
        for name, h in results["headline"].items():
            out[f"eps={eps} {name}: init error median"] = float(np.median(h["init"][i]))
            out[f"eps={eps} {name}: final error median / max"] = [
                float(np.median(h["trace"][i, :, -1])), float(np.max(h["trace"][i, :, -1]))]
    s = results["slope"]
    out["claim 4 clean error median"] = float(np.median(s["clean"]))
    out["claim 4 error median per eps"] = [float(v) for v in np.median(s["errors"], 1)]
    out["claim 4 init error median per eps"] = [float(v) for v in np.median(s["init"], 1)]
    fit = eps_fit(results)
    out["claim 4 slope and 95% CI"] = [fit.slope, fit.ci_low, fit.ci_high]
    out["claim 4 note"] = (
        "eps_slope_low is KNOWN_FAILING; if it passes here (as at FULL) it does so by chance: "
        f"the 95% CI [{fit.ci_low:.2f}, {fit.ci_high:.2f}] is not above 0.3. The honest "
        "failing signal is eps_slope_ci_low.")
    out["claim 4 median error / sigma per sigma"] = [
        float(v) for v in np.median(s["sigma_errors"], 1) / s["sigmas"]]
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    figs = {}
    fig, ax = plt.subplots(figsize=(6, 4.2))
    radii = np.asarray(cfg.radii)
    for k in BASIN_LINKS:
        ax.plot(radii, results["basin"][k].min(axis=1), "o-", label=k)
    ax.axhline(0, color="k", ls=":")
    runner.finish_axes(ax, xlabel="||beta - beta*||", ylabel="min over angles of lambda_min H",
                       title="population Hessian basin (2-D quadrature)", legend=True)
    figs["basin"] = fig
    for i, eps in enumerate(cfg.eps_pair):
        fig, ax = plt.subplots(figsize=(6, 4.2))
        for name, h in results["headline"].items():
            tr = h["trace"][i]
            runner.band_plot(ax, np.arange(1, tr.shape[1] + 1), tr, label=name)
        ax.axhline(bound(results, eps), color="k", ls=":", label="2(s sqrt(eps) + s sqrt(d/n))")
        runner.finish_axes(ax, xlabel="GD step", ylabel="||beta - beta*||",
                           title=f"GeLU, eps = {eps}", legend=7)
        figs[f"gd_eps{eps}"] = fig
    s = results["slope"]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    runner.band_plot(ax, s["eps"], s["errors"].T, label="robust GD error")
    runner.band_plot(ax, s["eps"], np.maximum(s["errors"] - s["clean"][None], 1e-6).T,
                     label="error - clean error")
    ax.plot(s["eps"], cfg.sigma * np.sqrt(s["eps"]), "k:", label="sigma sqrt(eps)")
    # one plain label per measured eps (log minor labels such as 3x10^-2 collide)
    ax.set_xticks(s["eps"], [f"{e:g}" for e in s["eps"]])
    ax.xaxis.set_minor_formatter(NullFormatter())
    runner.finish_axes(ax, xlabel="corruption fraction eps", ylabel="||beta_T - beta*||",
                       title=f"error vs eps, {cfg.link} link, sigma = {cfg.sigma:g}", legend=True)
    figs["eps_scaling"] = fig
    return figs
