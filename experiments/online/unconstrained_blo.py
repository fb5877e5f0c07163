r"""# Unconstrained bandit linear optimization by perturbation (PABLO)

*A Perturbation Approach to Unconstrained Linear Bandits* (A. Jacobsen, D. Baudry, S. Ito,
N. Cesa-Bianchi; ICML 2026, arXiv 2603.28201).

**Protocol.** Each round the learner plays $x_t \in \mathbb{R}^d$, an oblivious adversary has
fixed $l_t$ with $\|l_t\| \le G = 1$, and the learner sees only $\langle l_t, x_t\rangle$.

**Method** (`online.pablo`): $x_t = w_t + r_t s_t$ with $s_t$ uniform on the sphere and
$r_t = \sqrt d \max(\|w_t\|, 1)$; the estimate $\hat l_t = (d/r_t)\langle l_t, x_t\rangle s_t$
is unbiased, $E\|\hat l_t\|^2 \le 2dG^2$ and $\|\hat l_t\| \le G(d + \sqrt d)$; $w_{t+1}$ comes
from a comparator-adaptive OLO learner run on $\hat l_t$ (`online.coin_betting`: a coin bettor
on the scale with online-Newton betting fractions, adaptive projected OGD on the direction,
$\varepsilon = 1$, $L = G(d + \sqrt d)$). Baselines: the same with the KT bettor, with fixed-step
OGD, FKM (fixed perturbation $\delta = 1$, projected OGD on the ball of known radius
$D = 100 \ge \|u\|$), `optax.contrib.cocob` on the PABLO estimates (COCOB-Backprop: per
coordinate, with a ramp-up and a truncated reward, and no regret guarantee), and
full-information coin betting (an upper reference). Dynamic variant: `online.dynamic_ensemble`
(exponential weights over 8 adaptive-OGD experts with step multipliers $2^k$, ball radius
$D = R$).

**Environments** (`online.perturbation.LinearLosses`): $l_t = -\sigma_t \Delta e_1 +
(1 - \Delta)\xi_t$ with $\xi_t$ uniform on the sphere and $\sigma_t = \pm 1$ switching $S$ times
(stationary: $S = 0$); comparator $u_t = \sigma_t R e_1$.

**Measuring regret.** With a constant drift an unconstrained comparator-adaptive learner's wealth
grows exponentially, so its regret against a fixed $u$ eventually becomes hugely negative (for
the spec's $l_t = -Ge + N(0, I)$ it overflows). The regret bound is a worst case over sequences,
so each claim reports the **worst drift**: the maximum over $\Delta \in \{2^{-k}\}$ of the seed
mean of $R_T(u)$ (the bettor keeps its wealth in the log domain and plays at most `max_scale`
(about 1.2e18 in float32) from the origin, so runs stay finite; a non-finite seed mean would count
as $-\infty$). $R_T$ is measured as
$\sum_t \langle l_t, w_t - u_t\rangle$, the exact conditional expectation over $s_t$ of the played
regret $\sum_t\langle l_t, x_t - u_t\rangle$ (same mean, without the perturbation noise
$\sum_t r_t\langle l_t, s_t\rangle$, whose standard deviation $\sim G r_{\min}\sqrt T$ would
swamp the $R_T(0) \le 10\varepsilon$ check); claim `played_matches_expected` checks that the
played regret agrees with it within 4 standard errors.

**Claims** (`CLAIMS`; QUICK: 8 seeds, $T \le 8000$; FULL: 16 seeds, $T \le 10^5$):

1. Estimator identities ($d = 16$, fixed $l, w, r$, $10^6$ draws of $s$; QUICK $2\cdot10^5$):
   mean of $\hat l$ within 4 standard errors per coordinate (max over 16 coordinates; the spec's
   3 would fail 4% of the time by chance alone), and $E\|\hat l\|^2$ within 1% of
   $(d/r)^2\langle l,w\rangle^2 + d\|l\|^2$.
2. Static regret, $d = 8$, $R \in \{1, 10, 100\}$, $T$ grid up to $10^5$: the slope of
   $\log R_T(u)$ against $\log T$ (largest over $R$) is $\le 0.6$;
   $\max R_T(u) / (R G\sqrt{dT}\,\log(1 + RT)) \le 5$; $\max_T R_T(0) \le 10\varepsilon$.
3. Dimension: $d \in \{2, 8, 32\}$, $R = 10$, fixed $T$ ($3\cdot10^4$; QUICK 4000): slope of
   $\log R_T(u)$ against $\log d$ in $[0.3, 0.8]$.
4. Dynamic regret: $d = 4$, $R = 10$, $S \in \{1, 4, 16, 64\}$ ($T = 10^5$; QUICK 8000),
   worst drift over $\{2^{-2}, \dots, 2^{-6}\}$: slope of the dynamic learner's
   $R_T(u_{1:T})$ against $S$ in $[0.3, 0.7]$; the static learner's slope $\ge 0.8$.

**Choices and deviations.** Bounded noise instead of $N(0, I)$ (the theory needs
$\|l_t\| \le G$); worst drift instead of one drift (above); the dynamic learner knows the radius
$D = R$ (Ader-style ensemble), whereas the paper's is also comparator-adaptive; the scale
$r_t = \sqrt d\max(\|w_t\|, r_{\min})$ is inferred (the summaries do not give it). FULL runs the
baselines at $R = 10$ up to $T = 3\cdot10^4$ only (CPU time). The lower-bound instance
(`online.perturbation.ball_lower_bound`) is provided and tested, not measured here.

**Measured** (key 0, float32; QUICK 8 seeds, FULL 16 seeds; FULL wall 2.8 min on 2 CPU cores).

| claim | QUICK | FULL | threshold |
|---|---|---|---|
| estimator mean, max \|z\| | 1.68 | 2.11 | <= 4 |
| estimator second moment, rel. error | 1.3e-4 | 1.9e-3 | <= 0.01 |
| slope of worst-drift $R_T(u)$ vs $T$ (max over $R$) | 0.39 | 0.48 | <= 0.6 |
| $R_T(u)/(RG\sqrt{dT}\log(1+RT))$ | 0.23 | 0.18 | <= 5 |
| $\max_T R_T(0)/\varepsilon$ | 0.17 | 1.29 | <= 10 |
| played vs expected regret, \|z\| | 2.08 | 1.35 | <= 4 |
| slope vs $d$ | 0.48 | **0.16** | in [0.3, 0.8] |
| dynamic ensemble, slope vs $S$ | 0.31 | 0.36 | in [0.3, 0.7] |
| static learner, slope vs $S$ | **0.55** | **0.49** | >= 0.8 |

FULL worst-drift $R_T(u)$ of PABLO + ONS betting at $T = 10^3 \dots 10^5$: $R = 1$: 113, 91, 292,
461, 797; $R = 10$: 1242, 1862, 2793, 4726, 7845; $R = 100$: 18956, 18737, 32285, 45433, 153301
(about $0.9$-$1.7\,R\sqrt{dT}$ at $T = 10^5$; 0.18 of $R\sqrt{dT}\log(1 + RT)$). Baselines at $R =
10$, $T = 3\cdot10^4$: KT bettor
37408 (its regret scales with $L\sqrt T = G(d+\sqrt d)\sqrt T$, not $\sqrt{V_T}$), fixed-step OGD
5036, optax cocob 4424, FKM ($D = 100$) 14127, ONS bettor 4296, full information 2165.

Not reproduced (reported, not hidden):

* `static_switch_slope` (in `KNOWN_FAILING`): the static comparator-adaptive learner's dynamic
  regret grows like $S^{0.49}$ (FULL: 15590, 15756, 31561, 121446 for $S$ = 1, 4, 16, 64; the
  slope between 16 and 64 is 0.97), not $S^{\ge 0.8}$ over the whole grid: its regret is flat
  from 1 to 4 switches and only grows about linearly at 16 to 64 switches. This measure cannot
  give 0.8: the static learner's dynamic regret is $R_T(0) + T\Delta R$ plus zero-mean noise
  ($E R_T(0) \le \varepsilon$), so its worst-drift value is set by the largest drift it fails to
  learn, which moves from $2^{-6}$ ($S = 1$) to $2^{-3}$ ($S = 64$): a slope of at most about
  0.67 even at perfect grid resolution. The dynamic ensemble grows like $S^{0.36}$ (15573, 24826,
  41820, 67783): *worse* than the static learner at $S$ = 4 and 16, better by 1.8x at $S = 64$.
  At $S = 1$ both sit at the grid's lower drift edge ($\approx T 2^{-6} R$), and at QUICK the
  ensemble's worst drift is the upper edge for $S \ge 4$: the drift grid does not bracket every
  cell.
* `dimension_slope_low` fails at FULL only ($T = 3\cdot10^4$: 5957, 6659, 9237 for $d$ = 2, 8,
  32, slope 0.16; QUICK, $T = 4000$: 0.48). **Unresolved rather than refuted:** the worst-drift
  regret jumps at a threshold drift (below it the learner gains nothing, regret $\approx T\Delta
  R$; above it the seed mean goes hugely negative), so each value is known only to one grid
  step, which makes the $d$-slope uncertain by about $\pm 0.25$ on this $\sqrt 2$ grid ($\pm 0.5$
  on the spec's 2x grid, where FULL gave 0.28); a review run on a $2^{1/4}$ grid gave a
  non-monotone 7640, 6510, 10516 (slope 0.12). Both the QUICK pass and the FULL miss are inside
  that error; estimating the threshold drift itself (bisection) would settle it.
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
from jaxopt_icml.online import olo_learners as cb
from jaxopt_icml.online import perturbation as pt

SLUG, TITLE = runner.paper(__name__)


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 16
    dim: int = 8
    radii: tuple = (1.0, 10.0, 100.0)
    drifts: tuple = tuple(2.0 ** -k for k in range(2, 8))
    dyn_drifts: tuple = tuple(2.0 ** -k for k in range(2, 7))
    horizon: int = 100_000
    baseline_radius: float = 10.0
    baseline_horizon: int = 30_000
    block: int = 1000
    t_grid: tuple = (1000, 3000, 10_000, 30_000, 100_000)
    dims: tuple = (2, 8, 32)
    # claim 3 resolves the worst drift on a sqrt(2)-spaced grid: on the 2x grid the worst drift
    # (which scales like sqrt(d)) moved one grid step between d = 2 and 32, quantising the slope
    # (FULL slope 0.28 on the 2x grid); None: use ``drifts``
    dim_drifts: tuple | None = tuple(2.0 ** (-k / 2) for k in range(6, 16))
    dim_radius: float = 10.0
    dim_horizon: int = 30_000
    dyn_dim: int = 4
    dyn_radius: float = 10.0
    switches: tuple = (1, 4, 16, 64)
    dyn_horizon: int = 100_000
    eps: float = 1.0
    r_min: float = 1.0
    ogd_lr: float = 0.01
    fkm_radius: float = 100.0
    estimator_draws: int = 1_000_000
    baselines: bool = True


FULL = Config()
# QUICK (CI): 8 seeds, horizons 4000 (dynamic: 8000, so that S = 64 still leaves 123-round
# segments), drifts 2^-1..2^-6 (the worst drift is larger at short horizons; static and
# dimension runs share them, so d = 8 is reused: one program less), no baselines. The sqrt(2)
# grid 2^-0.5..2^-5.5 gives the same QUICK verdicts (dimension slope 0.46 instead of 0.48) for
# 2 s more CPU.
QUICK = Config(seeds=8, drifts=tuple(2.0 ** -k for k in range(1, 7)), dim_drifts=None,
               horizon=4000, block=100,
               t_grid=(500, 1000, 2000, 4000), dim_horizon=4000, dyn_horizon=8000,
               estimator_draws=200_000, baselines=False)


def _envs(key, dim, drifts, radius, switches, horizon, seeds):
    """LinearLosses batched over (drift, switch count, seed): leading axis of that size."""
    grid = [(a, s) for a in drifts for s in switches]
    n = len(grid) * seeds
    drift = jnp.repeat(jnp.asarray([a for a, _ in grid], jnp.float32), seeds)
    sw = jnp.repeat(jnp.asarray([s for _, s in grid], jnp.int32), seeds)
    mean = jnp.zeros((n, dim), jnp.float32).at[:, 0].set(-drift)
    return pt.LinearLosses(jax.random.split(key, n), mean, 1.0 - drift,
                           jnp.full((n,), radius, jnp.float32), sw,
                           jnp.full((n,), horizon, jnp.int32))


def _record(alg, env, x0, key, blocks, block):
    """Cumulative (played, expected, expected-at-0) regret every ``block`` rounds."""
    init_key, update_key = jax.random.split(key)
    state = alg.init(x0, init_key)

    def step(carry, t):
        state, acc = carry
        w = state.center
        st, state = alg.update(state, env, jax.random.fold_in(update_key, t))
        loss, u = env.loss(t), env.comparator(t)
        inc = jnp.stack([jnp.vdot(loss, st.x - u), jnp.vdot(loss, w - u), jnp.vdot(loss, w)])
        return (state, acc + inc), None

    def outer(carry, b):
        carry, _ = jax.lax.scan(step, carry, b * block + jnp.arange(block, dtype=jnp.int32))
        return carry, carry[1]

    _, out = jax.lax.scan(outer, (state, jnp.zeros(3, jnp.float32)),
                          jnp.arange(blocks, dtype=jnp.int32))
    return out  # (blocks, 3)


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5),
                   compiler_options=runner.fast_cpu_compile_options())
def _program(methods, envs, keys, dim, blocks, block):
    """Every method over every environment (vmapped), one compiled program per shape."""
    x0 = jnp.zeros((dim,), jnp.float32)
    run_one = lambda alg: jax.vmap(lambda e, k: _record(alg, e, x0, k, blocks, block))(envs, keys)
    return tuple(run_one(alg) for alg in methods)


def _dim_drifts(cfg) -> tuple:
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    return tuple(get("drifts") if get("dim_drifts") is None else get("dim_drifts"))


def make_problem(cfg: Config, key) -> dict:
    """The batched environments: ``static`` (d = dim, every R x drift x seed), ``dims`` (one
    per d, R = dim_radius) and ``dynamic`` (switch counts x drift x seed)."""
    out = {"static": [_envs(jax.random.fold_in(key, i), cfg.dim, cfg.drifts, r, (0,),
                            cfg.horizon, cfg.seeds) for i, r in enumerate(cfg.radii)]}
    out["dims"] = [_envs(jax.random.fold_in(key, 10 + i), d, _dim_drifts(cfg), cfg.dim_radius, (0,),
                         cfg.dim_horizon, cfg.seeds) for i, d in enumerate(cfg.dims)]
    out["baselines"] = _envs(jax.random.fold_in(key, 30), cfg.dim, cfg.drifts,
                             cfg.baseline_radius, (0,), cfg.baseline_horizon, cfg.seeds)
    out["dynamic"] = _envs(jax.random.fold_in(key, 20), cfg.dyn_dim, cfg.dyn_drifts,
                           cfg.dyn_radius,
                           cfg.switches, cfg.dyn_horizon, cfg.seeds)
    return out


def _bound(d, G=1.0):
    return G * (d + np.sqrt(d))


def make_methods(cfg: Config, dim: int | None = None) -> dict:
    """The learners at dimension ``dim`` (default ``cfg.dim``)."""
    d = cfg.dim if dim is None else dim
    L = float(_bound(d))
    methods = {"PABLO + ONS betting": pt.pablo(cb.coin_betting(cfg.eps, L), r_min=cfg.r_min)}
    if cfg.baselines:
        methods.update({
            "PABLO + KT betting": pt.pablo(cb.kt_betting(cfg.eps, L), r_min=cfg.r_min),
            "PABLO + fixed OGD": pt.pablo(cb.projected_ogd(cfg.ogd_lr), r_min=cfg.r_min),
            "PABLO + optax cocob": pt.pablo(optax.contrib.cocob(), r_min=cfg.r_min),
            "FKM (D=100)": pt.fkm(cfg.ogd_lr, cfg.fkm_radius, 1.0),
            "full information ONS betting": pt.full_information(cb.coin_betting(cfg.eps, 1.0)),
        })
    return methods


def _dynamic_methods(cfg: Config) -> dict:
    L = float(_bound(cfg.dyn_dim))
    return {"static (ONS betting)": pt.pablo(cb.coin_betting(cfg.eps, L), r_min=cfg.r_min),
            "dynamic ensemble": pt.pablo(cb.dynamic_ensemble(radius=cfg.dyn_radius),
                                         r_min=cfg.r_min)}


@functools.partial(jax.jit, static_argnums=(1, 2),
                   compiler_options=runner.fast_cpu_compile_options())
def _estimator_stats(key, n, dim):
    """Draws of l^ for fixed l, w, r (claim 1): (l, w, r, mean, stderr, E||l^||^2)."""
    kl, kw, ks = jax.random.split(key, 3)
    l = jax.random.normal(kl, (dim,)) / np.sqrt(dim)
    w = jax.random.normal(kw, (dim,))
    r = 1.5

    def draw(k):
        s = pt.sphere_direction(k, w)
        return dim / r * jnp.vdot(l, w + r * s) * s

    est = jax.lax.map(jax.vmap(draw), jax.random.split(ks, n).reshape(100, n // 100))
    est = est.reshape(n, dim)
    mean, sq = jnp.mean(est, 0), jnp.mean(jnp.sum(est * est, 1))
    return l, w, jnp.asarray(r), mean, jnp.std(est, 0) / np.sqrt(n), sq


def _estimator(key, n, dim=16):
    """Claim 1's statistics as float64 NumPy values (``n`` a multiple of 100)."""
    return tuple(np.asarray(v, np.float64) for v in _estimator_stats(key, n, dim))


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """All runs in float32. Returns numpy arrays of cumulative regrets every ``block`` rounds
    with last axis (played, expected, expected vs 0) and env axes ordered (drift, switch count,
    seed): ``static`` ``(R, env, blocks, 3)`` (PABLO + ONS betting), ``baselines``
    ``(method, env, blocks, 3)`` at ``R = baseline_radius`` (FULL only), ``dims``
    ``(dims, env, blocks, 3)``, ``dynamic`` ``(method, env, blocks, 3)``, and the estimator
    draws' statistics."""
    del shard, out_dir, resume
    probs = make_problem(cfg, runner.stream_key(key, fast=True))
    out = {"config": dataclasses.asdict(cfg)}
    keys_for = lambda envs, i: runner.seed_keys(key, envs.switches.shape[0], stream=i, fast=True)
    main = {k: v for k, v in make_methods(dataclasses.replace(cfg, baselines=False)).items()}
    jobs = ["static", "baselines", "dims", "dynamic"]
    for job in runner.progress(jobs, enabled=progress, desc=SLUG):
        if job == "static":
            envs = jax.tree.map(lambda *a: jnp.concatenate(a), *probs["static"])
            res = _program(tuple(main.values()), envs, keys_for(envs, 1), cfg.dim,
                           cfg.horizon // cfg.block, cfg.block)[0]
            out["static"] = np.asarray(res, np.float64).reshape(
                (len(cfg.radii), -1) + res.shape[1:])
        elif job == "baselines" and cfg.baselines:
            methods = make_methods(cfg)
            out["baseline_names"] = list(methods)
            envs = probs["baselines"]
            res = _program(tuple(methods.values()), envs, keys_for(envs, 2), cfg.dim,
                           cfg.baseline_horizon // cfg.block, cfg.block)
            out["baselines"] = np.stack([np.asarray(r, np.float64) for r in res])
        elif job == "dims":
            per = []
            blocks = cfg.dim_horizon // cfg.block
            for j, d in enumerate(cfg.dims):
                if (d == cfg.dim and cfg.dim_radius in cfg.radii and cfg.dim_drifts is None
                        and cfg.dim_horizon <= cfg.horizon):
                    # the static run already has this (d, R): reuse it (one program less)
                    per.append(out["static"][cfg.radii.index(cfg.dim_radius), :, :blocks])
                    continue
                alg = make_methods(dataclasses.replace(cfg, baselines=False), d)
                envs = probs["dims"][j]
                per.append(np.asarray(_program(tuple(alg.values()), envs,
                                               keys_for(envs, 10 + j), d, blocks,
                                               cfg.block)[0], np.float64))
            out["dims"] = np.stack(per)
        elif job == "dynamic":
            methods = _dynamic_methods(cfg)
            out["dynamic_names"] = list(methods)
            envs = probs["dynamic"]
            res = _program(tuple(methods.values()), envs, keys_for(envs, 30), cfg.dyn_dim,
                           cfg.dyn_horizon // cfg.block, cfg.block)
            out["dynamic"] = np.stack([np.asarray(r, np.float64) for r in res])
    est = _estimator(runner.stream_key(key, 40, fast=True), cfg.estimator_draws)
    out["estimator"] = dict(zip(("l", "w", "r", "mean", "stderr", "sq"), est, strict=True))
    return out


# --------------------------------------------------------------------------- metrics


def _worst(cum, drifts, seeds, col=1, groups=1):
    """Seed mean per (group, drift), then max over drifts (non-finite: -inf).

    ``cum``: ``(env, blocks, 3)`` with env ordered (drift, group, seed)."""
    v = cum[..., col].reshape(len(drifts), groups, seeds, -1)
    m = v.mean(2)
    m = np.where(np.isfinite(m), m, -np.inf)
    return m.max(0)  # (groups, blocks)


def _t_index(cfg, t):
    return t // cfg["block"] - 1


def static_curves(results, col=1) -> np.ndarray:
    """Worst-drift regret at each T of the grid, shape ``(radii, len(t_grid))``."""
    cfg = results["config"]
    idx = [_t_index(cfg, t) for t in cfg["t_grid"]]
    return np.stack([_worst(c, cfg["drifts"], cfg["seeds"], col)[0][idx]
                     for c in results["static"]])


def baseline_curves(results) -> dict:
    """Worst-drift R_T(u) at R = baseline_radius for each method, on the t_grid up to
    baseline_horizon (FULL only)."""
    cfg = results["config"]
    ts = [t for t in cfg["t_grid"] if t <= cfg["baseline_horizon"]]
    idx = [_t_index(cfg, t) for t in ts]
    return {name: dict(zip(ts, _worst(c, cfg["drifts"], cfg["seeds"])[0][idx], strict=True))
            for name, c in zip(results.get("baseline_names", ()),
                               results.get("baselines", ()), strict=True)}


def t_slope(results) -> float:
    """Largest over R of the slope of log worst-drift R_T(u) against log T."""
    curves = static_curves(results)
    if np.any(curves <= 0):
        return float("inf")
    t = results["config"]["t_grid"]
    return float(max(theory.power_law_slopes(t, c) for c in curves))


def normalized_regret(results) -> float:
    """max over R and T of R_T(u) / (R G sqrt(d T) log(1 + R T))."""
    cfg = results["config"]
    curves = static_curves(results)
    t = np.asarray(cfg["t_grid"], np.float64)
    R = np.asarray(cfg["radii"])[:, None]
    return float(np.max(curves / (R * np.sqrt(cfg["dim"] * t) * np.log1p(R * t))))


def regret_at_zero(results) -> float:
    """max over T (every block) and R of the worst-drift seed-mean R_T(0), in units of eps."""
    cfg = results["config"]
    return float(max(np.max(_worst(c, cfg["drifts"], cfg["seeds"], col=2))
                     for c in results["static"]) / cfg["eps"])


def played_vs_expected(results) -> float:
    """max over (R, drift) of |mean(played - expected)| / stderr at the horizon."""
    cfg = results["config"]
    zs = []
    for c in results["static"]:
        diff = (c[:, -1, 0] - c[:, -1, 1]).reshape(len(cfg["drifts"]), cfg["seeds"])
        # non-finite regrets (none with the log-domain bettor) are skipped
        ok = np.all(np.isfinite(diff), 1)
        z = np.abs(diff.mean(1)) / (diff.std(1, ddof=1) / np.sqrt(cfg["seeds"]) + 1e-12)
        zs.extend(z[ok])
    return float(np.max(zs)) if zs else float("nan")


def dim_regrets(results) -> np.ndarray:
    cfg = results["config"]
    return np.array([_worst(c, _dim_drifts(cfg), cfg["seeds"])[0][-1] for c in results["dims"]])


def dim_slope(results) -> float:
    r = dim_regrets(results)
    if np.any(r <= 0):
        return float("nan")
    return float(theory.power_law_slopes(results["config"]["dims"], r))


def dynamic_regrets(results, method) -> np.ndarray:
    cfg = results["config"]
    c = results["dynamic"][method]
    return _worst(c, cfg["dyn_drifts"], cfg["seeds"], groups=len(cfg["switches"]))[:, -1]


def _s_slope(results, method) -> float:
    r = dynamic_regrets(results, method)
    if np.any(r <= 0):
        return float("nan")
    return float(theory.power_law_slopes(results["config"]["switches"], r))


def dynamic_slope(results) -> float:
    return _s_slope(results, 1)


def static_switch_slope(results) -> float:
    return _s_slope(results, 0)


def estimator_mean_z(results) -> float:
    e = results["estimator"]
    return float(np.max(np.abs(e["mean"] - e["l"]) / e["stderr"]))


def estimator_second_moment(results) -> float:
    e = results["estimator"]
    d = e["l"].shape[0]
    exact = (d / e["r"]) ** 2 * float(e["l"] @ e["w"]) ** 2 + d * float(e["l"] @ e["l"])
    return float(abs(e["sq"] / exact - 1.0))


CLAIMS = (
    theory.Claim("estimator_unbiased_z", estimator_mean_z, "<=", 4.0,
                 "spec claim 1: max_i |mean l^_i - l_i| / stderr (spec 3 sigma; 4 because it is "
                 "a max over 16 coordinates: P(max > 3) ~ 4% even when unbiased)"),
    theory.Claim("estimator_second_moment_rel", estimator_second_moment, "<=", 0.01,
                 "spec claim 1: |E||l^||^2 / ((d/r)^2 <l,w>^2 + d||l||^2) - 1|"),
    theory.Claim("static_t_slope", t_slope, "<=", 0.6,
                 "spec claim 2: max over R of the slope of log worst-drift R_T(u) vs log T"),
    # 1, not the spec's 5: a learner that never moves scores at most 2.4 on this measure at the
    # worst FULL grid point (0.25 sqrt(T/8) / log(1 + R T)), so 5 could not fail; measured
    # 0.18 (FULL) / 0.23 (QUICK).
    theory.Claim("static_normalized_regret", normalized_regret, "<=", 1.0,
                 "spec claim 2: max R_T(u) / (R G sqrt(dT) log(1 + R T)) (threshold 1, not 5: "
                 "a learner that never moves scores up to 2.4)"),
    theory.Claim("static_regret_at_zero", regret_at_zero, "<=", 10.0,
                 "spec claim 2: max_T worst-drift R_T(0) / eps"),
    theory.Claim("played_matches_expected", played_vs_expected, "<=", 4.0,
                 "added: played regret vs its conditional expectation, |z| at the horizon"),
    theory.Claim("dimension_slope_low", dim_slope, ">=", 0.3,
                 "spec claim 3: slope of log R_T(u) vs log d (sqrt(d) theory); passes at QUICK "
                 "(0.48), fails at FULL (0.16): see the module docstring"),
    theory.Claim("dimension_slope_high", dim_slope, "<=", 0.8, "spec claim 3: upper end"),
    theory.Claim("dynamic_switch_slope_low", dynamic_slope, ">=", 0.3,
                 "spec claim 4: slope of log dynamic regret vs log S, dynamic ensemble"),
    theory.Claim("dynamic_switch_slope_high", dynamic_slope, "<=", 0.7,
                 "spec claim 4: upper end"),
    theory.Claim("static_switch_slope", static_switch_slope, ">=", 0.8,
                 "spec claim 4: the static learner's slope vs S (not reproduced: KNOWN_FAILING)"),
)

# The static learner's dynamic regret grows more slowly in S than the spec's prototype
# predicted (QUICK 0.55, FULL 0.49 vs >= 0.8): see the module docstring.
# dimension_slope_low fails at FULL size only (QUICK passes; listed in both, as in
# experiments/transport/safe_kl_logsumexp.py): the regret's d-dependence on this instance is weaker
# than sqrt(d) (see the docstring).
KNOWN_FAILING = ("static_switch_slope", "dimension_slope_low")
FULL_ONLY_FAILING = ("dimension_slope_low",)


def summarize(results) -> dict:
    cfg = results["config"]
    out = {}
    for R, c in zip(cfg["radii"], static_curves(results), strict=True):
        out[f"PABLO + ONS betting: worst-drift R_T(u), R={R:g}, T={cfg['t_grid']}"] = [
            float(v) for v in c]
    for name, c in baseline_curves(results).items():
        out[f"baseline {name}: worst-drift R_T(u), R={cfg['baseline_radius']:g}, T={list(c)}"] = [
            float(v) for v in c.values()]
    out["dimension: worst-drift R_T(u) for d in " + str(cfg["dims"])] = [
        float(v) for v in dim_regrets(results)]
    for m, name in enumerate(results["dynamic_names"]):
        out[f"dynamic: {name}, regret for S in {cfg['switches']}"] = [
            float(v) for v in dynamic_regrets(results, m)]
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    figs = {}
    fig, ax = plt.subplots(figsize=(6, 4.2))
    t = np.asarray(cfg.t_grid)
    for R, c in zip(cfg.radii, static_curves(results), strict=True):
        ax.loglog(t, np.maximum(c, 1e-3), marker="o", label=f"PABLO + ONS, R={R:g}")
        ax.loglog(t, R * np.sqrt(cfg.dim * t), "k:", lw=0.8)
    for name, c in baseline_curves(results).items():
        ax.loglog(list(c), np.maximum(list(c.values()), 1e-3), marker="x", ls="--",
                  label=f"{name}, R={cfg.baseline_radius:g}")
    runner.finish_axes(ax, xlabel="T", ylabel="worst-drift R_T(u) (dotted: R sqrt(dT))",
                       title=f"static regret, d={cfg.dim}, worst drift of {cfg.seeds}-seed means",
                       legend=7)
    figs["static_regret"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for m, name in enumerate(results["dynamic_names"]):
        ax.loglog(cfg.switches, np.maximum(dynamic_regrets(results, m), 1e-3), marker="o",
                  label=name)
    runner.finish_axes(ax, xlabel="switches S", ylabel="worst-drift dynamic regret",
                       title=f"dynamic regret, d={cfg.dyn_dim}, R={cfg.dyn_radius:g}, "
                             f"T={cfg.dyn_horizon}", legend=True)
    figs["dynamic_regret"] = fig
    return figs
