r"""# Observation spectral filtering for marginally stable and nonlinear systems

*Universal Learning of Nonlinear Dynamics* (E. Dogariu, A. Brahmbhatt, E. Hazan; arXiv
2508.11990, ICML 2026 row "spectral_filtering").

**Problems** (each seed draws its own instance; float32; observation dimension $d$).

1. Asymmetric marginally stable LDS (`online.sf_systems.marginal_lds`): $x_{t+1} = A x_t$,
   $y_t = C x_t + v_t$, $A = \mathrm{blockdiag}(R(\theta_1..\theta_4), \mathrm{diag}(\lambda))$:
   4 rotations ($|\lambda| = 1$, angles in $(0.3, \pi - 0.3)$ with gaps $\ge 0.3$) and $n - 8$
   symmetric modes $\lambda \sim U[0, 0.999]$; $n = 32$, $d = 4$, $x_0 \sim N(0, I)$.
   (a) noiseless, (b) observation noise $v_t \sim N(0, 0.01^2 I)$ (same systems and states).
2. The same 4 marginal modes (shared key) with $n \in \{16, 64, 256\}$, noiseless.
3. Lorenz-63 ($\sigma = 10$, $\rho = 28$, $\beta = 8/3$), RK4 with $dt = 0.01$ after 1000
   burn-in steps, all 3 coordinates observed with noise sd 0.01 (padded with a zero fourth
   coordinate so that every problem runs in the same compiled program; the zero coordinate
   never contributes an error).

## Method

OSF (`online.osf`) predicts before $y_t$ is revealed
$$\hat y_t = \sum_{i=1}^{8} P_i y_{t-i} + \sum_{j=1}^{k} M_j\,\sigma_j^{1/4}\sum_{s=1}^{L}
\phi_j(s)\,y_{t-s},$$
with $(\sigma_j, \phi_j)$ the top eigenpairs of $Z_{ab} = 2/((a+b)^3 - (a+b))$, then updates
$(P, M)$ by AdaGrad (lr 0.05) on $\tfrac12\|\hat y_t - y_t\|^2$, from $P_1 = I$, $M = 0$. "OSF
(RLS)" fits the same predictor by recursive least squares (ridge 1). Baselines: plain
spectral filtering $\hat y_t = y_{t-1} + \sum_j M_j X_{t,j}$ (AdaGrad), online AR(8) (AdaGrad),
AR(8) by RLS, persistence $y_{t-1}$, and the true-model Kalman predictor (problem 1 only).
MSE = mean over the last quarter of the run of $\|\hat y_t - y_t\|^2/d$ against the observed
(noisy) $y_t$.

**Claims** (`CLAIMS`; FULL: $T = 20000$, 8 seeds, $k = 24$, $L = 256$):

1. (a) noiseless: max over seeds of OSF MSE / signal variance (clean $y$ over the window)
   $\le 10^{-3}$; slope of log(seed-mean cumulative squared error) against $\log t$ over
   $[T/20, T]$ $\le 0.75$. (b) noise 0.01: OSF MSE $\le 0.05\times$ plain SF MSE on at least
   6 of 8 seeds. Reported: OSF / Kalman MSE.
2. max / min over $n$ of the seed-mean, run-average squared error of OSF $\le 1.5$.
3. Lorenz: max over seeds of OSF MSE / persistence MSE $\le 0.2$; OSF $\le$ online AR(8) on at
   least 6 of 8 seeds. Added: OSF (RLS) $\le$ AR(8) (RLS) on at least 6 of 8 seeds (the same
   fitting rule on both sides).
4. Filters ($L = 256$): $\sigma_{j+1}/\sigma_j \le 0.7$ for $j \in [5, 30]$, and the top 24
   filters reconstruct the impulse response $(0.999^{s-1})_{s \le L}$ to relative error
   $\le 10^{-3}$.

Choices: the full paper was not available; OSF is the predictor above (AR block over past
observations plus Hankel spectral features of past observations), fitted by an unconstrained
optax optimizer instead of the paper's (unseen) projected online gradient method. The filters
come from the SVD of an exact Gauss-Legendre factor of $Z$, which resolves eigenvalues far below
the $10^{-16}$ floor of `eigh(Z)` (needed for claim 4 at $j > 20$). The systems are noiseless in
the state (the spec names observation noise only), so the symmetric modes only matter during
the transient; claim 2 therefore measures the run-average error, which includes the transient.

**Measured** (key 0, 8 seeds, float32; FULL = $T = 20000$, $L = 256$; QUICK = $T = 3000$,
$L = 128$). Claim 1a: OSF MSE / signal variance $3.1\cdot10^{-10}$ FULL ($6.6\cdot10^{-4}$
QUICK); cumulative-error slope 0.005 (95% CI [0.00002, 0.0099]) FULL, 0.047 QUICK. Claim 1b:
OSF $\le 0.05\times$ SF on 6/8 seeds FULL (largest ratio 0.145; median MSE $2.45\cdot10^{-4}$
vs SF $1.18\cdot10^{-2}$), 8/8 QUICK; OSF / Kalman MSE 2.46 (the Kalman floor is
$1.0\cdot10^{-4}$, the noise variance). Claim 2: spread 1.24 (FULL and QUICK). Claim 3: OSF /
persistence $\le 0.059$ (FULL and QUICK); OSF $\le$ online AR(8) on 8/8 seeds FULL (median
MSE 0.016 vs 0.041) but only 4/8 at QUICK (and at $T = 5000$): online AR(8)'s error grows with
the horizon, so this claim is a documented QUICK non-reproduction (`KNOWN_FAILING`). Its FULL
pass rests on that baseline *degrading* (AdaGrad on nearly collinear lags drifts: its windowed
error falls to about 0.015-0.02 near $t = 3000$ and rises to 0.036-0.047 by $t = 20000$), not
on a converged AR(8): read the RLS-vs-RLS comparison as the fair one, where OSF wins 8/8 FULL
(0.0020 vs 0.0024) and 7/8 QUICK. Claim 4: largest ratio 0.272,
reconstruction error $3.9\cdot10^{-7}$. Also seen: on the noiseless LDS, AR(8) alone is as
good as OSF (the symmetric modes die out), so the spectral block's gain shows on Lorenz; there
OSF (AdaGrad) learns more slowly than plain SF and online AR(8) (its running-average error is
the highest of the three over the whole run, see the figure) and wins only on the last-quarter
MSE; RLS fits are an order of magnitude better than AdaGrad ones on Lorenz (0.002 vs 0.016).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.online import observation_sf as osf_lib
from jaxopt_icml.online import sf_systems

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("E. Dogariu, A. Brahmbhatt, E. Hazan. *Universal Learning of Nonlinear Dynamics*. "
             "arXiv 2508.11990 (ICML 2026 catalog row).")
GROUPS = ("lds", "lds_noisy", "dim16", "dim64", "dim256", "lorenz")
DIMS = (16, 64, 256)
METHODS = ("OSF", "OSF (RLS)", "spectral filtering", "online AR(8)", "AR(8) RLS", "persistence")
METHODS_ALL = ("OSF", "spectral filtering", "online AR(8)", "persistence")
METHODS_RLS = ("OSF (RLS)", "AR(8) RLS")
RLS_GROUPS = ("lds", "lds_noisy", "lorenz")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 8
    steps: int = 20000
    num_filters: int = 24
    context: int = 256
    ar_order: int = 8
    learning_rate: float = 0.05
    ridge: float = 1.0  # 1e-2 let float32 RLS blow up on some Lorenz seeds (ill-conditioned lags)
    hidden_dim: int = 32
    num_rotations: int = 4
    obs_dim: int = 4
    noise: float = 0.01
    lorenz_noise: float = 0.01
    filter_context: int = 256  # claim 4


FULL = Config()
# QUICK (CI): 3000 steps, L = 128; the seed count stays 8 so the "6 of 8 seeds" claims keep
# their meaning.
QUICK = Config(steps=3000, context=128)


def _simulate(keys, n, m, d, steps, noise):
    """Per seed: the system (n hidden), its noiseless and noisy trajectories (same x_0)."""
    def one(k):
        ks, km, kx, kv = jax.random.split(k, 4)
        lds = sf_systems.marginal_lds(ks, hidden_dim=n, num_rotations=m, obs_dim=d,
                                      marginal_key=km)
        clean = lds.simulate(kx, steps)
        v = noise * jax.random.normal(kv, clean.ys.shape, clean.ys.dtype)
        noisy = sf_systems.Trajectory(clean.clean + v, clean.clean,
                                      lds.replace(obs_noise=jnp.asarray(noise, v.dtype)))
        return clean, noisy

    return jax.vmap(one)(keys)


def _lorenz(keys, steps, noise, d):
    lor = sf_systems.LorenzSystem.create()
    tr = jax.vmap(lambda k: lor.simulate(k, steps, obs_noise=noise))(keys)
    pad = lambda a: jnp.pad(a, ((0, 0), (0, 0), (0, d - a.shape[-1])))
    return sf_systems.Trajectory(pad(tr.ys), pad(tr.clean), None)


@functools.partial(jax.jit, static_argnums=(2,), compiler_options=runner.fast_cpu_compile_options())
def _problems(keys, lorenz_keys, cfg):
    """Every trajectory in one compiled program."""
    m, d, T = cfg.num_rotations, cfg.obs_dim, cfg.steps
    out = {}
    clean, noisy = _simulate(keys, cfg.hidden_dim, m, d, T, cfg.noise)
    out["lds"], out["lds_noisy"] = clean.replace(system=None), noisy
    for n in DIMS:
        # same marginal key per seed (the km split in _simulate) -> the same marginal modes
        out[f"dim{n}"] = _simulate(keys, n, m, d, T, cfg.noise)[0].replace(system=None)
    out["lorenz"] = _lorenz(lorenz_keys, T, cfg.lorenz_noise, d)
    return out


def make_problem(cfg: Config, key) -> dict:
    """Trajectories (leading seed axis) per group of :data:`GROUPS`; ``lds_noisy`` keeps its
    system (for the Kalman predictor), the others carry none."""
    return _problems(runner.seed_keys(key, cfg.seeds, fast=True),
                     runner.seed_keys(key, cfg.seeds, stream=7919, fast=True), cfg)


def make_methods(cfg: Config) -> dict:
    ada = optax.adagrad(cfg.learning_rate)
    k, L, h = cfg.num_filters, cfg.context, cfg.ar_order
    return {
        "OSF": osf_lib.osf(k, L, h, optimizer=ada),
        "OSF (RLS)": osf_lib.osf(k, L, h, optimizer="rls", ridge=cfg.ridge),
        "spectral filtering": osf_lib.spectral_filtering(k, L, optimizer=ada),
        "online AR(8)": osf_lib.online_ar(h, optimizer=ada),
        "AR(8) RLS": osf_lib.rls_ar(h, ridge=cfg.ridge),
        "persistence": osf_lib.persistence(),
        "Kalman (true model)": osf_lib.kalman_predictor(cfg.hidden_dim),
    }


def _bundle(algs) -> base.OracleAlgorithm:
    """Several algorithms on the same oracle as one (one scan body, one compilation)."""
    def init(x0, key):
        return tuple(a.init(x0, k) for a, k in zip(algs, jax.random.split(key, len(algs)),
                                                     strict=True))

    def update(state, oracle, key):
        keys = jax.random.split(key, len(algs))
        out = [a.update(s, oracle, k) for a, s, k in zip(algs, state, keys, strict=True)]
        err = jnp.stack([o[0].info["sq_error"] for o in out])
        info = {"oracle_calls": jnp.ones([], jnp.int32), "sq_error": err}
        return base.Step(err, info), tuple(o[1] for o in out)

    return base.OracleAlgorithm(init, update)


def _errors(step, state, oracle):
    del state, oracle
    return step.info["sq_error"]


def _run_batch(alg, trajs, keys, steps, d):
    x0 = jnp.zeros((d,), trajs.ys.dtype)
    one = lambda o, k: base.run(alg, x0, o, k, steps, trace_fn=_errors)[1]
    return jax.vmap(one)(trajs, keys)


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """Every learner on every trajectory as one vmapped ``lax.scan`` (float32); the Kalman
    predictor on the noiseless and noisy ``n = 32`` systems. Returns per-group squared errors
    ``err[group]`` of shape ``(methods, seeds, T)`` (per coordinate), ``kalman`` ``(2, seeds,
    T)``, the clean-signal variance per group and seed, and the filter metrics."""
    del out_dir, resume
    probs = make_problem(cfg, key)
    methods = make_methods(cfg)
    d, T, S = cfg.obs_dim, cfg.steps, cfg.seeds
    stacked = jax.tree.map(lambda *a: jnp.concatenate(a),
                           *[probs[g].replace(system=None) for g in GROUPS])
    keys = runner.seed_keys(key, len(GROUPS) * S, stream=1, fast=True)
    lds = probs["lds_noisy"]
    both = jax.tree.map(lambda a, b: jnp.concatenate([a, b]),
                        probs["lds"].replace(system=lds.system.replace(
                            obs_noise=jnp.zeros_like(lds.system.obs_noise))), lds)
    kkeys = runner.seed_keys(key, 2 * S, stream=2, fast=True)
    # RLS learners (the costly (h + k) d square inverse Gram) only on lds, lds_noisy, lorenz
    rls_groups = [GROUPS.index(g) for g in RLS_GROUPS]
    rls_rows = np.concatenate([np.arange(i * S, (i + 1) * S) for i in rls_groups])
    rls_trajs, rls_keys = jax.tree.map(lambda a: a[rls_rows], stacked), keys[rls_rows]
    batches = [stacked, keys, rls_trajs, rls_keys, both, kkeys]
    if shard and jax.device_count() > 1:
        mesh = jax.make_mesh((jax.device_count(),), ("seeds",),
                             axis_types=(jax.sharding.AxisType.Auto,))
        spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds"))
        batches = [jax.device_put(b, spec) for b in batches]
    stacked, keys, rls_trajs, rls_keys, both, kkeys = batches
    opts = runner.fast_cpu_compile_options()
    jobs = [("first", _bundle(tuple(methods[m] for m in METHODS_ALL)), stacked, keys),
            ("rls", _bundle(tuple(methods[m] for m in METHODS_RLS)), rls_trajs, rls_keys),
            ("kalman", methods["Kalman (true model)"], both, kkeys)]
    out = {}
    for name, alg, trajs, ks in runner.progress(jobs, enabled=progress, desc=SLUG):
        f = runner.seeded_program(functools.partial(_run_batch, alg, steps=T, d=d), (0, 0),
                                  compiler_options=opts)
        out[name] = np.asarray(f(trajs, ks))
    # learners: (groups * seeds, T, methods) -> per group (methods, seeds, T), per coordinate;
    # the RLS rows of the other groups are NaN (not run)
    first = out["first"].reshape(len(GROUPS), S, T, len(METHODS_ALL))
    rls = np.full((len(GROUPS), S, T, len(METHODS_RLS)), np.nan, first.dtype)
    rls[rls_groups] = out["rls"].reshape(len(RLS_GROUPS), S, T, len(METHODS_RLS))
    order = METHODS_ALL + METHODS_RLS
    errs = np.concatenate([first, rls], -1)[..., [order.index(m) for m in METHODS]]
    errs = errs.transpose(0, 3, 1, 2)
    coords = {g: (3 if g == "lorenz" else d) for g in GROUPS}
    err = {g: errs[i] / coords[g] for i, g in enumerate(GROUPS)}
    window = T // 4
    signal = {g: np.asarray(probs[g].clean)[:, -window:, :coords[g]].var(1).mean(-1)
              for g in GROUPS}
    sigma, phi = osf_lib.spectral_filters(cfg.filter_context, 31)
    response = 0.999 ** np.arange(cfg.filter_context)
    top = phi[:, :cfg.num_filters]
    recon = np.linalg.norm(response - top @ (top.T @ response)) / np.linalg.norm(response)
    return {"err": err, "kalman": out["kalman"].reshape(2, S, T) / d, "signal": signal,
            "filter_ratio_max": float(np.max(sigma[5:31] / sigma[4:30])),
            "filter_recon": float(recon), "sigma": sigma, "methods": METHODS,
            "config": dataclasses.asdict(cfg)}


# --------------------------------------------------------------------------- metrics


def _mse(results, group, method=None) -> np.ndarray:
    """Per-seed MSE over the last quarter (``method`` None: the Kalman row of ``group``)."""
    T = results["config"]["steps"]
    if method is None:
        e = results["kalman"][0 if group == "lds" else 1]
    else:
        e = results["err"][group][results["methods"].index(method)]
    return e[:, -(T // 4):].mean(1)


def osf_noiseless_ratio(results) -> float:
    return float(np.max(_mse(results, "lds", "OSF") / results["signal"]["lds"]))


def _cum_fit(results):
    e = results["err"]["lds"][results["methods"].index("OSF")]
    T = e.shape[1]
    ks = theory.geometric_grid(max(T // 20, 1), T, 30)
    cum = np.cumsum(e.astype(np.float64), 1)[:, ks - 1]
    return theory.fit_power_law(ks, cum)


def osf_cumulative_slope(results) -> float:
    return _cum_fit(results).slope


def osf_vs_sf_win_fraction(results) -> float:
    o = _mse(results, "lds_noisy", "OSF")
    s = _mse(results, "lds_noisy", "spectral filtering")
    return float(np.mean(o <= 0.05 * s))


def dim_spread(results) -> float:
    i = results["methods"].index("OSF")
    avg = [results["err"][f"dim{n}"][i].mean() for n in DIMS]
    return float(np.max(avg) / np.min(avg))


def lorenz_vs_persistence(results) -> float:
    return float(np.max(_mse(results, "lorenz", "OSF") / _mse(results, "lorenz", "persistence")))


def lorenz_vs_ar_fraction(results) -> float:
    return float(np.mean(_mse(results, "lorenz", "OSF") <= _mse(results, "lorenz",
                                                                  "online AR(8)")))


def lorenz_rls_fraction(results) -> float:
    return float(np.mean(_mse(results, "lorenz", "OSF (RLS)") <= _mse(results, "lorenz",
                                                                       "AR(8) RLS")))


CLAIMS = (
    theory.Claim("osf_noiseless_mse_over_signal", osf_noiseless_ratio, "<=", 1e-3,
                 "spec claim 1a: max over seeds of OSF MSE (last quarter) / signal variance"),
    theory.Claim("osf_noiseless_cumulative_slope", osf_cumulative_slope, "<=", 0.75,
                 "spec claim 1a: slope of log cumulative squared error vs log t on [T/20, T]"),
    theory.Claim("osf_noisy_beats_sf_fraction", osf_vs_sf_win_fraction, ">=", 0.75,
                 "spec claim 1b: fraction of seeds with OSF MSE <= 0.05 x plain SF MSE "
                 "(>= 6 of 8)"),
    theory.Claim("osf_hidden_dim_spread", dim_spread, "<=", 1.5,
                 "spec claim 2: max/min over n in {16,64,256} of OSF's run-average error"),
    theory.Claim("lorenz_osf_over_persistence", lorenz_vs_persistence, "<=", 0.2,
                 "spec claim 3: max over seeds of OSF MSE / persistence MSE"),
    theory.Claim("lorenz_osf_beats_online_ar_fraction", lorenz_vs_ar_fraction, ">=", 0.75,
                 "spec claim 3: fraction of seeds with OSF MSE <= online AR(8) MSE (AdaGrad)"),
    theory.Claim("lorenz_osf_rls_beats_ar_rls_fraction", lorenz_rls_fraction, ">=", 0.75,
                 "added: the same comparison with both predictors fitted by RLS"),
    theory.Claim("filter_eigen_ratio_max", lambda r: r["filter_ratio_max"], "<=", 0.7,
                 "spec claim 4: max_{j in [5,30]} sigma_{j+1}/sigma_j, L = 256"),
    theory.Claim("filter_reconstruction_0999", lambda r: r["filter_recon"], "<=", 1e-3,
                 "spec claim 4: relative error of the top-k projection of (0.999^(s-1))_s"),
)


# Documented non-reproduction at QUICK (key 0): OSF <= online AR(8) on Lorenz holds on 8/8 seeds
# at FULL (T = 20000) but on 4/8 at T = 3000 and T = 5000 (online AR's error grows with T: 0.017
# at T = 3000, 0.041 at T = 20000, seed medians), so the QUICK horizon is too short for it.
KNOWN_FAILING = ("lorenz_osf_beats_online_ar_fraction",)


def summarize(results) -> dict:
    out = {}
    for g in ("lds", "lds_noisy", "lorenz"):
        for m in results["methods"]:
            out[f"{g} MSE {m} (seed median)"] = float(np.median(_mse(results, g, m)))
    for g in ("lds", "lds_noisy"):
        out[f"{g} MSE Kalman (seed median)"] = float(np.median(_mse(results, g)))
    out["lds_noisy OSF / Kalman MSE (seed median)"] = float(np.median(
        _mse(results, "lds_noisy", "OSF") / _mse(results, "lds_noisy")))
    out["lds_noisy OSF / SF MSE (seed max)"] = float(np.max(
        _mse(results, "lds_noisy", "OSF") / _mse(results, "lds_noisy", "spectral filtering")))
    fit = _cum_fit(results)
    out["noiseless cumulative slope 95% CI"] = [fit.ci_low, fit.ci_high]
    i = results["methods"].index("OSF")
    for n in DIMS:
        out[f"OSF run-average error n={n}"] = float(results["err"][f"dim{n}"][i].mean())
    out.update(runner.claim_values(CLAIMS, results))
    return out


#: (line style, marker) of the methods' curves, in order
_STYLES = (("-", None), ("--", None), ("-.", None), (":", None), ("-", "o"), ("--", "s"),
           ("-.", "^"), (":", "D"))


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    figs = {}
    ks = np.arange(1, cfg.steps + 1)
    for g, title in (("lds_noisy", "marginally stable LDS, noise 0.01"),
                     ("lorenz", "Lorenz-63, noise 0.01")):
        fig, ax = plt.subplots(figsize=(6, 4.2))
        # some methods' curves coincide (OSF (RLS) and AR(8) RLS): each gets its own line
        # style and hollow marker so the one drawn later does not hide the other
        for j, m in enumerate(results["methods"]):
            cum = np.cumsum(results["err"][g][j], 1) / ks
            ls, marker = _STYLES[j % len(_STYLES)]
            runner.band_plot(ax, ks, cum, label=m, ls=ls, marker=marker, markevery=0.1, ms=5,
                             mfc="none")
        if g == "lds_noisy":
            runner.band_plot(ax, ks, np.cumsum(results["kalman"][1], 1) / ks, label="Kalman",
                             color="k", marker="x", markevery=0.1, ms=5)
        runner.finish_axes(ax, xlabel="t", ylabel="average squared error up to t", title=title,
                           legend=7)
        figs[g] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.semilogy(np.arange(1, results["sigma"].size + 1), results["sigma"], "o-")
    runner.finish_axes(ax, xlabel="j", ylabel="sigma_j (Hankel eigenvalue)",
                       title=f"spectral filters, L = {cfg.filter_context}", legend=None)
    figs["filters"] = fig
    return figs
