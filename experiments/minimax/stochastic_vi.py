r"""# Stochastic VIs without bounded variance: minibatch FBF

*Solving Stochastic Variational Inequalities without the Bounded Variance Assumption*
(A. Alacaoglu, J.-H. Kim; ICML 2026, arXiv 2602.05531).

**Problems** (each seed draws its own instance and $z_0 \sim N(0, I)$, $d = 2n = 20$).
The oracle is `problems.NoisyOperator`: $\tilde F(z) = F(z) + s\,G_\xi z/\sqrt d + a\,e_\xi$ with
$G_\xi$, $e_\xi$ standard Gaussian, so $E\|\tilde F - F\|^2 = s^2\|z\|^2 + a^2 d$ (unbounded on
$\mathbb{R}^d$). A batch mean of size $b$ is drawn directly (noise divided by $\sqrt b$: exact in
law, one $d\times d$ draw per batch).

1. Monotone: bilinear $\min_x\max_y x^\top A y + b^\top x - c^\top y$, $A = U\,\mathrm{diag}(\sigma)
   V^\top$, $\sigma \sim U[0,1]$ (largest set to 1, no exact zero), $b, c$ from a random
   solution; $s = 0.5$, $a = 0$; unconstrained.
2. Hard spectrum: the same with $\sigma \sim U[0.1, 1]$ (endpoints 0.1 and 1 included).
3. Weak Minty: $F(z) = Q\,\mathrm{blockdiag}([[\alpha_0, 1], [-1, \alpha_0]])\,Q^\top z$,
   $\alpha_0 = -0.1$, $Q$ Haar; $\langle F(z), z\rangle = \tfrac{\alpha_0}{\alpha_0^2+1}\|F(z)\|^2$,
   so $\rho = 0.198$; $s = 0.5$, $a = 0.1$.

**Method** (`minimax.stochastic_fbf`, `minimax.relaxed_fbf`), batch $b_k = b_0 (k+1)$:
$\bar z_k = z_k - t\hat F_k(z_k)$, $z_{k+1} = z_k + \alpha(\bar z_k - t(\hat F'_k(\bar z_k) -
\hat F_k(z_k)) - z_k)$. Accuracy: $\mathrm{res}(z) = \|F(z)\|$ (identity prox), exact $F$.
Baselines: single-sample SEG (`minimax.extragradient`, independent samples), SGDA, EG at
$t = 1$ on the weak-Minty problem.

**Claims** (`CLAIMS`):

1. Oracle complexity: $N(\varepsilon)$ = calls until the seed-mean res $\le\varepsilon$, for
   $\varepsilon \in \{0.2, 0.1, 0.05\}$ (QUICK: $\{0.4, 0.2, 0.1\}$); all reached and the
   slope of $\log N$ against $\log(1/\varepsilon)$ is $\le 4.5$ (theory 4 up to logs).
2. Divergence of SEG on the hard spectrum: for $t \in \{0.1, 0.3, 0.5, 1\}$, the seed mean of
   $\|z_k\|^2$ reaches $100\times$ its start within $2\cdot10^4$ steps; minibatch FBF keeps
   $E\|z_k\|^2 \le 10\,(\|z_0\|^2 + \|z^\star\|^2)$. Added check: the measured crossing step is
   within a factor 2 of the one predicted by the exact mean-square recursion of SEG on a linear
   field (computed in NumPy in the eigenbasis of $M$, ignoring the $z^\star$ offset).
3. Weak Minty: relaxed FBF ($t = 1 > 2\rho$, $\alpha = 0.5$) reaches res $\le 0.05$ on every
   seed within $2\cdot10^6$ calls; SGDA ($t = 0.3$) passes $\|z\| > 10^6$ on every seed.

Not done: the spec's claim 4 (MLMC FBF) - the MLMC and Halpern-VR companions are not
implemented. Choices: float32; $t = 0.5$ and $b_0 = 1$ in claim 1 ($t = 0.8$ was slower in a
one-seed trial); divergence guard: $\|z\|^2$ is recorded clipped at $10^{30}$ (inf/NaN count as
diverged).

**Measured** (key 0; QUICK = 8 seeds, 1500 steps, FULL = 16 seeds; float32). Claim 1: every
$\varepsilon$ reached, slope 2.82 (QUICK) / 3.28 (FULL; $N$ = 1.19e5 / 9.38e5 / 1.12e7 calls for
0.2 / 0.1 / 0.05). Claim 2: SEG reaches $100\times$ within 363 (QUICK) / 3024 (FULL) steps at
the slowest step size; FULL steps for $t$ = 0.1 / 0.3 / 0.5 / 1: 3024 / 373 / 126 / 11 against the
recursion's 3478 / 363 / 114 / 12 (largest log ratio 0.14 vs log 2); minibatch FBF's
$E\|z_k\|^2$ stays $\le 1.31\,(\|z_0\|^2 + \|z^\star\|^2)$. Claim 3: relaxed FBF needs at most
8448 calls (FULL) on the worst seed; SGDA diverges on every seed, EG at $t = 1$ too (not a
claim). QUICK checks claims 1 and 2 on the smaller sets above because $\varepsilon = 0.05$ and
$t = 0.1$ need about 4000 and 6000 steps; FULL checks the spec's sets.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from experiments import runner
from jaxopt_icml import base, problems, theory
from jaxopt_icml import minimax as mm
from jaxopt_icml.minimax import stochastic_vi as sv

SLUG, TITLE = runner.paper(__name__)
CAP = 1e30


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 16
    n: int = 10
    noise: float = 0.5
    fbf_step: float = 0.5
    batch0: int = 1
    fbf_steps: int = 6000
    eps: tuple = (0.2, 0.1, 0.05)
    seg_steps_sizes: tuple = (0.1, 0.3, 0.5, 1.0)
    seg_steps: int = 20000
    minty_a: float = -0.1
    minty_additive: float = 0.1
    minty_step: float = 1.0
    minty_relaxation: float = 0.5
    minty_batch0: int = 8
    minty_steps: int = 200
    sgda_step: float = 0.3
    sgda_steps: int = 400
    eg_steps: int = 400  # EG at t = 1 on the weak-Minty problem (reported; 0 skips it)
    max_batch: int = 10**7


FULL = Config()
# QUICK (CI, <= 10 s): 8 seeds, and SEG only at t in {0.3, 0.5, 1} for 1500 steps (t = 0.1
# needs about 6000 steps: FULL checks it); EG at t = 1 is skipped.
# Claim 1 at QUICK uses eps in {0.4, 0.2, 0.1} and 1500 steps (0.05 needs about 4000 steps with
# 8 seeds, where the seed mean only just touches it).
QUICK = Config(seeds=8, seg_steps_sizes=(0.3, 0.5, 1.0), seg_steps=1500, eg_steps=0,
               fbf_steps=1500, eps=(0.4, 0.2, 0.1))


def _bilinear(U, V, s, z_star) -> problems.LinearOperator:
    """``problems.bilinear_game``'s operator from given factors (one batched QR for all)."""
    n = s.shape[0]
    A = (U * s[None, :]) @ V.T
    zero = jnp.zeros((n, n), A.dtype)
    M = jnp.block([[zero, A], [-A.T, zero]])
    return problems.LinearOperator(M, -M @ z_star, z_star, jnp.max(s), jnp.zeros([], A.dtype))


def _minty(Q, a) -> problems.LinearOperator:
    d = Q.shape[0]
    blk = jnp.array([[a, 1.0], [-1.0, a]], jnp.float32)
    M = Q @ jnp.kron(jnp.eye(d // 2, dtype=jnp.float32), blk) @ Q.T
    return problems.LinearOperator(M, jnp.zeros(d), jnp.zeros(d),
                                   jnp.asarray(np.sqrt(a * a + 1.0), jnp.float32),
                                   jnp.asarray(a, jnp.float32))


@functools.partial(jax.jit, static_argnums=(1, 2),
                   compiler_options=runner.fast_cpu_compile_options())
def _build(keys, n, a):
    # float32: a batched (vmapped) QR is safe here (the CPU hang seen was in float64)
    def one(k):
        kq, kQ, ks1, ks2, kz1, kz2, kz0 = jax.random.split(k, 7)
        U1, V1, U2, V2 = jax.vmap(lambda kk: problems.random_orthogonal(kk, n))(
            jax.random.split(kq, 4))
        Q = problems.random_orthogonal(kQ, 2 * n)
        s1 = jax.random.uniform(ks1, (n,)).at[0].set(1.0)
        s2 = (0.1 + 0.9 * jax.random.uniform(ks2, (n,))).at[0].set(1.0).at[1].set(0.1)
        mono = _bilinear(U1, V1, s1, jax.random.normal(kz1, (2 * n,)))
        hard = _bilinear(U2, V2, s2, jax.random.normal(kz2, (2 * n,)))
        return mono, hard, _minty(Q, a), jax.random.normal(kz0, (2 * n,))

    return jax.lax.map(one, keys)


def make_problem(cfg: Config, key) -> dict:
    """Per-seed instances (leading seed axis): ``mono``, ``hard`` (bilinear games),
    ``minty`` (weak-Minty linear field) as noisy oracles, and ``z0``."""
    mono, hard, minty, z0 = _build(runner.seed_keys(key, cfg.seeds), cfg.n, cfg.minty_a)
    full = lambda v: jnp.full((cfg.seeds,), v, jnp.float32)
    return {"mono": problems.NoisyOperator(mono, full(cfg.noise), full(0.0)),
            "hard": problems.NoisyOperator(hard, full(cfg.noise), full(0.0)),
            "minty": problems.NoisyOperator(minty, full(cfg.noise), full(cfg.minty_additive)),
            "z0": z0}


def make_methods(cfg: Config) -> dict:
    grow = lambda b0: (lambda k: b0 * (k + 1))
    return {
        "minibatch FBF": sv.stochastic_fbf(cfg.fbf_step, batch_schedule=grow(cfg.batch0),
                                           max_batch=cfg.max_batch),
        "relaxed FBF": sv.relaxed_fbf(cfg.minty_step, cfg.minty_relaxation,
                                      batch_schedule=grow(cfg.minty_batch0),
                                      max_batch=cfg.max_batch),
        "SGDA": base.from_transformation(mm.sgda(cfg.sgda_step)),
        "EG (t=1)": base.from_transformation(mm.extragradient(cfg.minty_step)),
    }


def _trace(step, state, oracle):
    z = step.x
    sq = jnp.vdot(z, z)
    sq = jnp.where(jnp.isfinite(sq), jnp.minimum(sq, CAP), CAP)
    r = sv.residual(oracle.base.operator)(z)
    r = jnp.where(jnp.isfinite(r), r, jnp.inf)
    calls = step.info.get("total_oracle_calls", step.info["oracle_calls"])
    return {"res": r, "sq": sq, "calls": calls}


def _seeds_run(alg, ops, z0, keys, steps):
    one = lambda o, z, k: base.run(alg, z, o, k, steps, trace_fn=_trace)[1]
    return jax.vmap(one)(ops, z0, keys)


@functools.partial(jax.jit, static_argnums=(4,), compiler_options=runner.fast_cpu_compile_options())
def _seg_program(ts, ops, z0, keys, steps):
    def per_t(t):
        alg = base.from_transformation(mm.extragradient(t))
        one = lambda o, z, k: base.run(alg, z, o, k, steps,
                                       trace_fn=lambda s, st, oo: _trace(s, st, oo)["sq"])[1]
        return jax.vmap(one)(ops, z0, keys)

    return jax.vmap(per_t)(ts)


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """All runs in float32, vmapped over seeds (SEG also over step sizes). Returns numpy traces
    (seeds first): ``fbf_mono``/``fbf_hard``/``relaxed``/``sgda``/``eg`` dicts of ``res``,
    ``sq`` (clipped ``||z_k||^2``), ``calls`` (cumulative); ``seg_sq`` ``(ts, seeds, K)``; the
    instances' ``M``, ``z_star`` and ``z0`` for the linearised estimate."""
    del shard, out_dir, resume
    probs = make_problem(cfg, runner.stream_key(key, fast=True))
    methods = make_methods(cfg)
    z0 = probs["z0"]
    opts = runner.fast_cpu_compile_options()
    # the monotone and the hard-spectrum instances share shapes: one program over 2 x seeds
    both = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), probs["mono"], probs["hard"])
    probs["both"] = both
    z0_both = jnp.concatenate([z0, z0])
    jobs = [("fbf", "minibatch FBF", "both", cfg.fbf_steps),
            ("relaxed", "relaxed FBF", "minty", cfg.minty_steps),
            ("sgda", "SGDA", "minty", cfg.sgda_steps)]
    if cfg.eg_steps:
        jobs.append(("eg", "EG (t=1)", "minty", cfg.eg_steps))
    out = {}
    for i, (name, m, prob, steps) in enumerate(runner.progress(jobs, enabled=progress, desc=SLUG)):
        f = runner.seeded_program(functools.partial(_seeds_run, methods[m], steps=steps),
                                  (0, 0, 0), compiler_options=opts)
        keys = runner.seed_keys(key, 2 * cfg.seeds if prob == "both" else cfg.seeds,
                                stream=i + 1, fast=True)
        out[name] = jax.tree.map(np.asarray, f(probs[prob], z0_both if prob == "both" else z0,
                                               keys))
    out["fbf_mono"] = jax.tree.map(lambda a: a[:cfg.seeds], out["fbf"])
    out["fbf_hard"] = jax.tree.map(lambda a: a[cfg.seeds:], out.pop("fbf"))
    seg_keys = runner.seed_keys(key, cfg.seeds, stream=10, fast=True)
    out["seg_sq"] = np.asarray(_seg_program(jnp.asarray(cfg.seg_steps_sizes), probs["hard"], z0,
                                            seg_keys, cfg.seg_steps))
    hard = probs["hard"].base
    out.update(M=np.asarray(hard.M), z_star=np.asarray(hard.solution), z0=np.asarray(z0),
               config=dataclasses.asdict(cfg))
    return out


# --------------------------------------------------------------------------- metrics


def calls_to_eps(results) -> np.ndarray:
    """``N(eps)``: cumulative calls at the first step whose seed-mean res <= eps (inf if
    never)."""
    r = results["fbf_mono"]
    mean_res, calls = r["res"].mean(0), r["calls"][0]
    out = []
    for eps in results["config"]["eps"]:
        hit = np.nonzero(mean_res <= eps)[0]
        out.append(float(calls[hit[0]]) if hit.size else np.inf)
    return np.array(out)


def eps_missed(results) -> float:
    return float(np.sum(~np.isfinite(calls_to_eps(results))))


def calls_slope(results) -> float:
    n = calls_to_eps(results)
    if not np.all(np.isfinite(n)):
        return float("inf")
    x = np.log(1.0 / np.asarray(results["config"]["eps"]))
    return float(np.polyfit(x, np.log(n), 1)[0])


def _crossing(mean_sq, start) -> float:
    hit = np.nonzero(mean_sq >= 100.0 * start)[0]
    return float(hit[0] + 1) if hit.size else np.inf


def seg_crossings(results) -> np.ndarray:
    """Step at which the seed-mean ``||z_k||^2`` of SEG reaches 100x its start, per step size."""
    start = np.mean(np.sum(results["z0"] ** 2, -1))
    return np.array([_crossing(sq.mean(0), start) for sq in results["seg_sq"]])


def seg_energy_step(e, mu, t, s2):
    """One step of the mean-square recursion below: ``e`` and ``mu`` have shape ``(..., d)``."""
    d = mu.shape[-1]
    p2 = np.abs(1 - t * mu + t * t * mu * mu) ** 2
    w = np.abs(1 - t * mu) ** 2
    u = (t ** 4 * s2 * np.abs(mu) ** 2 + t ** 4 * s2 * s2) / d
    S = e.sum(-1, keepdims=True)
    return p2 * e + u * S + t * t * s2 * np.sum(w * e, -1, keepdims=True) / d


def linearised_crossings(results) -> np.ndarray:
    r"""The crossing predicted by the exact mean-square recursion of single-sample SEG on
    ``F~(z) = M z + N z`` (``N = s G/sqrt(d)``) for normal ``M``, in its eigenbasis
    ``M = V diag(mu) V^H``: with ``e_i = E|<v_i, z>|^2``, ``S = sum e`` and
    ``p = 1 - t mu + t^2 mu^2``,

    ``e_i' = |p_i|^2 e_i + t^4 s^2 |mu_i|^2 S / d + t^2 s^2 sum_j |1 - t mu_j|^2 e_j / d
    + t^4 s^4 S / d``,

    started from ``z_0 - z*``; ``E||z_k||^2 ~ ||z*||^2 + S_k`` (offset noise ignored)."""
    cfg = results["config"]
    M, zs, z0 = results["M"].astype(np.float64), results["z_star"], results["z0"]
    s2 = cfg["noise"] ** 2
    mu, V = np.linalg.eig(M)
    e0 = np.abs(np.einsum("sji,sj->si", V.conj(), z0 - zs)) ** 2
    start = np.mean(np.sum(z0 ** 2, -1))
    offset = np.mean(np.sum(zs ** 2, -1))
    out = []
    for t in cfg["seg_steps_sizes"]:
        e, hit = e0.copy(), np.inf
        for k in range(cfg["seg_steps"]):
            e = seg_energy_step(e, mu, t, s2)
            if np.mean(e.sum(-1)) + offset >= 100 * start:
                hit = float(k + 1)
                break
        out.append(hit)
    return np.array(out)


def seg_max_crossing(results) -> float:
    return float(np.max(seg_crossings(results)))


def seg_vs_linearised(results) -> float:
    """max over step sizes of |log(measured / predicted crossing)|."""
    m, p = seg_crossings(results), linearised_crossings(results)
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(p))):
        return float("inf")
    return float(np.max(np.abs(np.log(m / p))))


def fbf_hard_ratio(results) -> float:
    r = results["fbf_hard"]
    ref = np.mean(np.sum(results["z0"] ** 2, -1) + np.sum(results["z_star"] ** 2, -1))
    return float(np.max(r["sq"].mean(0)) / ref)


def relaxed_max_calls(results) -> float:
    """max over seeds of the cumulative calls when res first <= 0.05 (inf if never)."""
    r = results["relaxed"]
    out = []
    for res, calls in zip(r["res"], r["calls"], strict=True):
        hit = np.nonzero(res <= 0.05)[0]
        out.append(float(calls[hit[0]]) if hit.size else np.inf)
    return float(np.max(out))


def sgda_diverged_fraction(results) -> float:
    return float(np.mean(np.max(results["sgda"]["sq"], 1) > 1e12))


CLAIMS = (
    theory.Claim("fbf_all_eps_reached", eps_missed, "<=", 0.0,
                 "spec claim 1: seed-mean res <= eps reached for eps in {0.2, 0.1, 0.05} "
                 "(QUICK: {0.4, 0.2, 0.1})"),
    theory.Claim("fbf_calls_slope", calls_slope, "<=", 4.5,
                 "spec claim 1: slope of log N(eps) vs log(1/eps) (theory 4 up to logs)"),
    theory.Claim("seg_diverges_all_steps", seg_max_crossing, "<=", 2e4,
                 "spec claim 2: max over t in {0.1,0.3,0.5,1} (QUICK: {0.3,0.5,1}) of the step "
                 "where the seed-mean ||z||^2 reaches 100x its start"),
    theory.Claim("seg_crossing_vs_linearised", seg_vs_linearised, "<=", float(np.log(2.0)),
                 "added: |log(measured / mean-square-recursion crossing)| <= log 2"),
    theory.Claim("fbf_hard_bounded", fbf_hard_ratio, "<=", 10.0,
                 "spec claim 2: max_k E||z_k||^2 / (||z0||^2 + ||z*||^2), minibatch FBF"),
    theory.Claim("relaxed_fbf_weak_minty_calls", relaxed_max_calls, "<=", 2e6,
                 "spec claim 3: max over seeds of calls to res <= 0.05 (t=1, alpha=0.5)"),
    theory.Claim("sgda_weak_minty_diverged_fraction", sgda_diverged_fraction, ">=", 1.0,
                 "spec claim 3: SGDA passes ||z|| > 1e6 on every seed"),
)


def summarize(results) -> dict:
    out = {f"N(eps={e:g})": float(n) for e, n in zip(results["config"]["eps"],
                                                     calls_to_eps(results), strict=True)}
    for t, m, p in zip(results["config"]["seg_steps_sizes"], seg_crossings(results),
                       linearised_crossings(results), strict=True):
        out[f"SEG t={t:g} crossing measured / linearised"] = [float(m), float(p)]
    if "eg" in results:
        out["EG t=1 weak Minty diverged fraction"] = float(
            np.mean(np.max(results["eg"]["sq"], 1) > 1e12))
    out["relaxed FBF final res (max over seeds)"] = float(np.max(results["relaxed"]["res"][:, -1]))
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    figs = {}
    fig, ax = plt.subplots(figsize=(6, 4.2))
    r = results["fbf_mono"]
    runner.band_plot(ax, r["calls"][0], r["res"], label="minibatch FBF")
    for e in cfg.eps:
        ax.axhline(e, color="k", ls=":", lw=0.8)
    runner.finish_axes(ax, xlabel="oracle calls", ylabel="res(z_k)",
                       title="monotone bilinear, multiplicative noise", legend=True)
    figs["complexity"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for t, sq in zip(cfg.seg_steps_sizes, results["seg_sq"], strict=True):
        ax.loglog(np.arange(1, sq.shape[1] + 1), sq.mean(0), label=f"SEG t={t:g}")
    sq = results["fbf_hard"]["sq"]
    ax.loglog(np.arange(1, sq.shape[1] + 1), sq.mean(0), "k", label="minibatch FBF")
    runner.finish_axes(ax, xlabel="step k", ylabel="mean ||z_k||^2 (clipped at 1e30)",
                       title=f"hard spectrum, multiplicative noise s={cfg.noise:g}")
    figs["divergence"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    r = results["relaxed"]
    runner.band_plot(ax, r["calls"][0], r["res"], label="relaxed FBF (t=1, alpha=0.5)")
    ax.axhline(0.05, color="k", ls=":")
    runner.finish_axes(ax, xlabel="oracle calls", ylabel="res(z_k)",
                       title="weak Minty, rho = 0.198", legend=True)
    figs["weak_minty"] = fig
    return figs
