r"""# Modular generative modeling: a robust gate by stochastic primal-dual

*A Theoretical Framework for Modular Learning of Robust Generative Models* (C. Cortes, M. Mohri,
Y. Zhong; ICML 2026, arXiv 2602.17554).

**Setting.** $k = 3$ domains $D_j = N(\mu_j, 1)$ and experts $p_j$, all discretised on a grid
of 400 points in $[-8, 8]$ (the spec used 2000; 400 keeps CI fast and changes the capacity by
less than $10^{-6}$ nats), so every expectation below is an exact sum. A gate
$g(x, j) = e^{h(x)_j} \ge 0$ combines the experts into $p_g(x) = \sum_j g(x,j)p_j(x)$; it is
normalized ($g\in\mathcal G_1$) when $Z(g) = \sum_j E_{p_j}[g(x,j)] = 1$. The robust gate solves
$\min_{g\in\mathcal G_1}\max_{\lambda\in\Delta}\mathrm{KL}(D_\lambda\,\|\,p_g) =
\min_g\max_\lambda\sum_j\lambda_j L_j(g)$ (the KL is convex in $\lambda$: the maximum is at a
vertex), with the proxy loss $L_j(g) = E_{D_j}[\log p_j - \log p_g]$ (the expert's
log-likelihood replaces the unknown entropy of $D_j$).

## The method: stochastic primal-dual

`robust_gate_primal_dual` (module `jaxopt_icml.minimax.robust_gate`), each step with $B = 64$
samples per domain and $S = 64$ samples per expert:

$$\theta \leftarrow \theta + \mathrm{Adam}\Big(\nabla_\theta\big[\textstyle\sum_j\lambda_j
\hat L_j(\theta) + \mu(\hat Z(\theta) - 1) + \tfrac\rho2(\hat Z(\theta)-1)^2\big]\Big),\quad
\lambda \leftarrow \frac{\lambda\, e^{\eta\,\mathrm{clip}(\hat L)}}{\mathrm{sum}},\quad
\mu \leftarrow \max(0, \mu + c(\hat Z - 1)),$$

with $\log\hat Z = \mathrm{logsumexp}_{i,s}(h_i(x_{is}) - \log S)$, $x_{is}\sim p_i$
(`normalization="lagrange"`), or $p_g/\hat Z$ in place of $p_g$ (`"divide"`). Outputs: the
averaged $\theta$ and $\lambda$ (weights $\propto t^3$, `averaging_power=3`).

**Baselines.** Uniform constant gate $a_j = 1/k$; best constant gate = the capacity solution
$a = \lambda^\star$ of the *expert* channel (Blahut-Arimoto, `capacity_blahut_arimoto`);
monolithic MLE on the pooled data (one Gaussian, and a 2-component Gaussian mixture by EM);
Group-DRO monolithic Gaussian $\min_\phi\max_\lambda\sum_j\lambda_j E_{D_j}[-\log q_\phi]$ (the
same primal-dual code with one flat "expert", a quadratic log-gate and zero reference, so
$q_\phi\propto e^{a x + b x^2}$); the argmax-domain expert $q\propto\max_j p_j(x)$ (each input
goes to the expert of its most likely domain).

**Structural distillation** (`jaxopt_icml.minimax.gate_routing`; the paper gives no details):
the robust gate is distilled into a router $r_\psi(x) = \arg\max_j s_\psi(x)_j$ (16-RBF softmax
scores, 1000 Adam steps) trained by cross-entropy against the responsibilities
$\pi(j\mid x)\propto g(x,j)p_j(x)$ under $p_g$; the routed model
$p_r(x) = p_g(R_j)\,p_j(x)/p_j(R_j)$ on $R_j = \{r_\psi = j\}$ evaluates one expert per input.
We report what it keeps: its worst-case KL against the gate's and the monolithic models'.

**Claims** (`CLAIMS`; spec claims 1-4, recalibrated where said):

1. *Capacity identity.* Perfect experts $p_j = D_j$, $\mu = (-2, 0, 2.5)$, constant gates, exact
   batches, 16 random normalized initialisations, 5000 steps: the averaged gate's worst-case KL
   is within $10^{-3}$ nats of the Blahut-Arimoto capacity and $\|\bar\lambda - \lambda^\star\|_1
   \le 0.02$, for both normalizations.
2. *Robust beats baselines.* Misspecified experts $N(\mu_j \pm 0.3, s_j^2)$, $s_j\sim U[0.8,
   1.2]$, $\mu = (-2, 0, 2.5) + U[-0.5, 0.5]^3$ per seed, 16-RBF log-gate bounded by
   $|h|\le 3$; metric: the true $\max_j\mathrm{KL}(D_j\,\|\,\cdot)$ on the grid. As stated: the
   robust gate is $\le 0.9\times$ the uniform gate and $\le$ the better monolithic MLE on
   $\ge 90\%$ of 32 seeds (**does not reproduce**, `KNOWN_FAILING`, see below). Recalibrated:
   it is $\le$ every baseline on $\ge 90\%$ of seeds, and the median ratio robust/uniform is
   $\le 0.9$. Added: it beats Group-DRO on $\ge 90\%$ of seeds.
3. *Duality gap* $\max_j L_j(\bar\theta) - \min_\theta\sum_j\bar\lambda_j L_j(\theta) \le 0.01$
   nats, max over seeds (inner minimum: 2000 full-batch Adam steps from $\bar\theta$; models
   normalized exactly).
4. *Normalization* $|Z(\bar\theta) - 1| \le 0.01$ on the grid, max over seeds (Lagrange mode).
5. Added (distillation): the one-expert router keeps, in median over seeds, at least half of
   the robust gate's gain over the uniform gate in worst-case KL.

Choices: the means are jittered around the spec's $(-2, 0, 2.5)$ rather than drawn anywhere in
$[-4, 4]$: for well-separated, symmetric domains the capacity is close to $\log k$ and the
uniform gate is already nearly robust (a trial with $\mu\sim U[-4,4]^3$: ratio 0.99 on one of
16 seeds). The log-gate is bounded ($|h|\le 3$): with an unbounded gate and $S = 64$ the
sampled normalizer misses regions where the experts have almost no mass, the gate grows there
and the true $Z$ reached $e^{5}$-$e^{9}$ on 7 of 16 seeds in a trial (the spec's pitfall); with
the bound the result matches the exact-$Z$ run. The Lagrange runs start from a nearly
normalized gate ($h = 3\tanh(-\log k/3)$, $Z \approx 1.05$) and use $c = 0.1$, $\rho = 1$,
$\mu_0 = 1$ (the KKT value), $\mu$ projected on $\mu \ge 0$: from
an unnormalized start, without the projection or with $c = 1$ the multiplier overshoots and
$\lambda$ collapses to a vertex for thousands of steps. Gate learning rate $0.005$ (0.01 left
duality gaps up to 0.013); $0.01$ for the constant gates of claim 1.

**Measured** (key 0, float32; QUICK = 8 seeds, 8 initialisations, 3000 steps; FULL = 32 seeds,
16 initialisations, 5000 steps). Claim 1: worst-KL error $2.5\cdot10^{-4}$ / $2.0\cdot10^{-4}$
(QUICK, Lagrange / divide), $7.6\cdot10^{-4}$ / $2.2\cdot10^{-4}$ (FULL) nats against
$C = 0.7132$; $\|\bar\lambda - \lambda^\star\|_1\le 2.7\cdot10^{-4}$. Claim 2: the robust gate
beats every baseline on every seed (QUICK 8/8, FULL 32/32); median worst KL (FULL) 0.740
(robust, Lagrange), 0.740 (divide), 0.791 (router), 0.846 (argmax expert), 0.857 (capacity
gate), 0.868 (2-GMM), 0.911 (Group-DRO), 0.926 (uniform), 1.015 (Gaussian); median ratio
robust/uniform 0.81 (QUICK) / 0.79 (FULL). The spec's per-seed 10% margin holds on 7/8
(QUICK) and 27/32 (FULL) seeds only: on 1 (QUICK) and 3 (FULL) seeds the class's weak-duality
lower estimate $\min_\theta\bar\lambda^\top L(\theta) + \bar\lambda^\top\mathrm{KL}(D_j\|p_j)$
is already above $0.9\times$ uniform (the robust gate is within 0.05 nats of it on every seed).
That estimate uses a local inner minimum (Adam on a nonconvex parametrisation), so it is not a
certificate; the certified bound for any model (Blahut-Arimoto on the true domains, which
every model's worst-case KL must exceed and which the test checks) is printed beside it: at
QUICK it rules the margin out on 1 of 8 seeds (the same seed; the robust gate ends within
$6\cdot10^{-4}$ nats of it there); FULL was not re-run with it. Claim 3: gap $\le 0.0047$
(QUICK) / $0.0067$ (FULL); divide
mode 0.0046 / 0.0107 (a lower estimate: the inner minimum is Adam's, from $\bar\theta$).
Claim 4: $|Z - 1|\le 0.0027$ (QUICK) / $0.0057$ (FULL); the error is one-sided
($Z < 1$), plausibly because averaging fluctuating parameters lowers a normalizer that is
convex in the unbounded log-gate's parameters (Jensen; with the $\tanh$ bound only
approximately). Claim 5: the router agrees with the responsibilities' argmax on all but $10^{-6}$ of
$p_g$'s mass (median) and keeps 63% (QUICK) / 71% (FULL) of the gain (median worst KL 8% above
the gate's); keeping only the expert's shape inside each region (no gate value) keeps less
(median 0.820 vs 0.791).
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
from jaxopt_icml.minimax import gate_routing as gr
from jaxopt_icml.minimax import robust_gate as rg

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("Corinna Cortes, Mehryar Mohri, Yutao Zhong, *A Theoretical Framework for Modular "
             "Learning of Robust Generative Models*, ICML 2026, arXiv:2602.17554.")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 32            # misspecified-expert instances (claims 2-5)
    inits: int = 16            # random initialisations for the capacity claim
    grid_size: int = 400
    grid_lim: float = 8.0
    means: tuple = (-2.0, 0.0, 2.5)
    jitter: float = 0.5
    shift: float = 0.3
    scale_range: tuple = (0.8, 1.2)
    steps: int = 5000
    gate_lr: float = 0.005     # misspecified runs (0.01 left duality gaps up to 0.013)
    capacity_gate_lr: float = 0.01
    lr_mix: float = 0.02
    lr_norm: float = 0.1
    penalty: float = 1.0
    averaging_power: float = 3.0
    batch: int = 64
    norm_batch: int = 64
    centers: int = 16
    gate_bound: float = 3.0
    gap_steps: int = 2000
    gap_lr: float = 0.01
    em_iters: int = 200
    dro_steps: int = 3000
    dro_lr: float = 0.02
    router_steps: int = 1000
    router_lr: float = 0.05


FULL = Config()
# QUICK (CI, <= 20 s with compilation): 8 seeds, 8 initialisations, 3000 steps (claims 1-4
# pass there as at FULL), a 1000-step inner minimisation for the gap
QUICK = Config(seeds=8, inits=8, steps=3000, gap_steps=1000)


def _grid(cfg):
    return jnp.linspace(-cfg.grid_lim, cfg.grid_lim, cfg.grid_size)


def _gate(cfg, bound=True):
    centers = jnp.linspace(-cfg.grid_lim + 1.0, cfg.grid_lim - 1.0, cfg.centers)
    width = float(2 * (cfg.grid_lim - 1.0) / (cfg.centers - 1))
    return rg.rbf_log_gate(centers, width, cfg.gate_bound if bound else None)


def quadratic_log_gate(params, xs):
    """``h(x) = w_0 (x/8) + w_1 (x/8)^2 + b`` (one output): a Gaussian family on the grid."""
    u = xs / 8.0
    return (params["w"][0] * u + params["w"][1] * u * u)[:, None] + params["b"][None, :]


def make_problem(cfg: Config, key) -> dict:
    """``perfect``: the capacity problem (one ``GridMixture``, exact batches); ``mis``: per-seed
    misspecified-expert problems (leading seed axis, sampled batches); ``inits``: normalized
    random constant log-gates ``(inits, k)``."""
    grid = _grid(cfg)
    k = len(cfg.means)
    means = jnp.asarray(cfg.means)
    logd = rg.grid_log_gaussian(grid, means, jnp.ones(k))
    perfect = rg.GridMixture(grid, logd, logd, logd)
    kp, ki = jax.random.split(key)

    def one(kk):
        k1, k2, k3 = jax.random.split(kk, 3)
        mu = means + jax.random.uniform(k1, (k,), minval=-cfg.jitter, maxval=cfg.jitter)
        sign = jnp.where(jax.random.bernoulli(k2, 0.5, (k,)), 1.0, -1.0)
        lo, hi = cfg.scale_range
        sc = jax.random.uniform(k3, (k,), minval=lo, maxval=hi)
        d = rg.grid_log_gaussian(grid, mu, jnp.ones(k))
        e = rg.grid_log_gaussian(grid, mu + cfg.shift * sign, sc)
        return rg.GridMixture(grid, d, e, e, cfg.batch, cfg.norm_batch)

    mis = jax.vmap(one)(runner.seed_keys(kp, cfg.seeds))
    b0 = jax.random.normal(ki, (cfg.inits, k))
    return {"perfect": perfect, "mis": mis, "inits": jax.nn.log_softmax(b0, axis=-1)}


def make_methods(cfg: Config) -> dict:
    k = len(cfg.means)
    common_kw = dict(lr_mix=cfg.lr_mix, lr_norm=cfg.lr_norm, penalty=cfg.penalty,
                     averaging_power=cfg.averaging_power)
    return {
        "robust gate (lagrange)": rg.robust_gate_primal_dual(
            _gate(cfg), k, optax.adam(cfg.gate_lr), normalization="lagrange", **common_kw),
        "robust gate (divide)": rg.robust_gate_primal_dual(
            _gate(cfg), k, optax.adam(cfg.gate_lr), normalization="divide", **common_kw),
        "constant gate (lagrange)": rg.robust_gate_primal_dual(
            rg.constant_log_gate, k, optax.adam(cfg.capacity_gate_lr),
            normalization="lagrange", **common_kw),
        "constant gate (divide)": rg.robust_gate_primal_dual(
            rg.constant_log_gate, k, optax.adam(cfg.capacity_gate_lr), normalization="divide",
            **common_kw),
        "Group-DRO Gaussian": rg.robust_gate_primal_dual(
            quadratic_log_gate, k, optax.adam(cfg.dro_lr), normalization="divide",
            lr_mix=cfg.lr_mix, averaging_power=cfg.averaging_power),
    }


# --------------------------------------------------------------------------- baselines


def _pooled(p: rg.GridMixture):
    return jnp.exp(jax.nn.logsumexp(p.log_domains, 0) - jnp.log(p.log_domains.shape[0]))


def gaussian_mle(p: rg.GridMixture):
    """Moment matching = MLE of one (discretised) Gaussian on the pooled domains."""
    w = _pooled(p)
    m = jnp.sum(w * p.grid)
    v = jnp.sum(w * (p.grid - m) ** 2)
    return rg.grid_log_gaussian(p.grid, m, jnp.sqrt(v)), m, v


def em_two_gaussians(p: rg.GridMixture, iters: int):
    """Weighted EM for a 2-component Gaussian mixture on the pooled grid masses."""
    w, x = _pooled(p), p.grid
    cdf = jnp.cumsum(w)
    m0 = x[jnp.searchsorted(cdf, jnp.array([0.25, 0.75]))]
    v0 = jnp.full(2, jnp.sum(w * (x - jnp.sum(w * x)) ** 2) / 4)

    def comp(pi, m, v):
        return (jnp.log(pi)[:, None] - 0.5 * (x[None] - m[:, None]) ** 2 / v[:, None]
                - 0.5 * jnp.log(2 * jnp.pi * v)[:, None])

    def step(_, c):
        pi, m, v = c
        r = jax.nn.softmax(comp(pi, m, v), axis=0) * w[None]
        nk = r.sum(1)
        m = (r @ x) / nk
        v = jnp.maximum(jnp.sum(r * (x[None] - m[:, None]) ** 2, 1) / nk, 1e-3)
        return nk / nk.sum(), m, v

    pi, m, v = jax.lax.fori_loop(0, iters, step, (jnp.full(2, 0.5), m0, v0))
    logq = jax.nn.logsumexp(jnp.log(pi)[:, None] + rg.grid_log_gaussian(x, m, jnp.sqrt(v)), 0)
    return logq


def argmax_expert(p: rg.GridMixture):
    """``q(x) propto max_j p_j(x)``: the expert of the input's most likely domain."""
    lq = jnp.max(p.log_experts, 0)
    return lq - jax.nn.logsumexp(lq)


def _worst(p, logq):
    return jnp.max(rg.domain_kl(p.log_domains, logq))


# --------------------------------------------------------------------------- the program


def _final(alg, x0, prob, key, steps):
    state, trace = base.run(alg, x0, prob, key, steps,
                            trace_fn=lambda s, st, o: s.info["max_loss"])
    return state, trace


@functools.partial(jax.jit, static_argnums=(0,), compiler_options=runner.fast_cpu_compile_options())
def _program(cfg: Config, probs, keys):
    methods = make_methods(cfg)
    k = len(cfg.means)
    out = {}

    # ---- claim 1: capacity identity (perfect experts, constant gates, exact sums)
    perfect = probs["perfect"]
    cap = rg.capacity_blahut_arimoto(jnp.exp(perfect.log_domains))
    out["capacity"] = cap.capacity
    out["capacity_upper"] = cap.upper_bound
    out["lam_star"] = cap.input_dist
    for mode in ("lagrange", "divide"):
        alg = methods[f"constant gate ({mode})"]
        st, _ = jax.vmap(lambda b, a=alg: _final(a, {"b": b}, perfect, keys["c1"], cfg.steps))(
            probs["inits"])
        wc = jax.vmap(lambda prm: _worst(perfect, rg.grid_log_model(
            rg.constant_log_gate, prm, perfect)[0]))(st.avg_params)
        out[f"c1_{mode}_worst_kl"] = wc
        out[f"c1_{mode}_lam_l1"] = jnp.sum(jnp.abs(st.avg_lam - cap.input_dist[None]), -1)

    # ---- claims 2-5: misspecified experts, RBF gate, sampled batches
    mis = probs["mis"]
    gate = _gate(cfg)
    x0 = {"w": jnp.zeros((cfg.centers, k)), "b": jnp.full((k,), -jnp.log(k))}
    for mode in ("lagrange", "divide"):
        alg = methods[f"robust gate ({mode})"]
        st, ml = jax.vmap(lambda p, kk, a=alg: _final(a, x0, p, kk, cfg.steps))(mis, keys["mis"])
        out[f"{mode}_max_loss_trace"] = ml
        out[f"{mode}_params"] = st.avg_params
        out[f"{mode}_lam"] = st.avg_lam

    def evaluate(p, prm, lam):
        logq, logz = rg.grid_log_model(gate, prm, p)
        true = rg.domain_kl(p.log_domains, logq)
        proxy = rg.domain_kl(p.log_domains, logq, p.log_reference)

        def inner_loss(th):
            lq = rg.grid_log_model(gate, th, p)[0]
            return jnp.dot(lam, rg.domain_kl(p.log_domains, lq, p.log_reference))

        opt = optax.adam(cfg.gap_lr)

        def body(c, _):
            th, s = c
            v, g = jax.value_and_grad(inner_loss)(th)
            u, s = opt.update(g, s, th)
            return (optax.apply_updates(th, u), s), v

        (th, _), vals = jax.lax.scan(body, (prm, opt.init(prm)), None, length=cfg.gap_steps)
        inner = jnp.minimum(jnp.min(vals), inner_loss(th))
        return {"true": true, "proxy": proxy, "log_z": logz, "inner": inner, "logq": logq}

    for mode in ("lagrange", "divide"):
        ev = jax.vmap(evaluate)(mis, out[f"{mode}_params"], out[f"{mode}_lam"])
        out[f"{mode}_true_kl"] = ev["true"]
        out[f"{mode}_proxy_kl"] = ev["proxy"]
        out[f"{mode}_log_z"] = ev["log_z"]
        out[f"{mode}_gap"] = jnp.max(ev["proxy"], -1) - ev["inner"]
        out[f"{mode}_inner"] = ev["inner"]
        if mode == "lagrange":
            logq_robust = ev["logq"]

    # KL(D_j || p_j): true KL = proxy + this constant, per domain
    # certified lower bound on the worst-case true KL of ANY model q (gated or not):
    # max_j KL(D_j || q) >= sum_j lam_j KL(D_j || q) >= I(lam) for every lam (weak duality),
    # and Blahut-Arimoto's I(lam) on the true domains is such a value (<= their capacity)
    out["certified_bound"] = jax.vmap(
        lambda p: rg.capacity_blahut_arimoto(jnp.exp(p.log_domains)).capacity)(mis)
    out["expert_kl"] = jax.vmap(lambda p: jnp.sum(
        jnp.exp(p.log_domains) * (p.log_domains - p.log_experts), -1))(mis)
    # baselines
    uniform = {"w": jnp.zeros((cfg.centers, k)), "b": jnp.full((k,), -jnp.log(k))}
    out["uniform_true_kl"] = jax.vmap(lambda p: rg.domain_kl(
        p.log_domains, rg.grid_log_model(gate, uniform, p)[0]))(mis)

    def ba_gate(p):
        a = rg.capacity_blahut_arimoto(jnp.exp(p.log_experts)).input_dist
        logq = jax.nn.logsumexp(jnp.log(a)[:, None] + p.log_experts, 0)
        return rg.domain_kl(p.log_domains, logq)

    out["capacity_gate_true_kl"] = jax.vmap(ba_gate)(mis)
    out["gaussian_true_kl"] = jax.vmap(lambda p: rg.domain_kl(
        p.log_domains, gaussian_mle(p)[0]))(mis)
    out["gmm2_true_kl"] = jax.vmap(lambda p: rg.domain_kl(
        p.log_domains, em_two_gaussians(p, cfg.em_iters)))(mis)
    out["argmax_expert_true_kl"] = jax.vmap(lambda p: rg.domain_kl(
        p.log_domains, argmax_expert(p)))(mis)

    def dro(p, kk):
        n = p.grid.shape[0]
        flat = rg.GridMixture(p.grid, p.log_domains, jnp.full((1, n), -jnp.log(n)),
                              jnp.zeros_like(p.log_domains))
        _, m, v = gaussian_mle(p)
        th0 = {"w": jnp.stack([8.0 * m / v, -32.0 / v]), "b": jnp.zeros(1)}
        st, _ = _final(methods["Group-DRO Gaussian"], th0, flat, kk, cfg.dro_steps)
        logq = quadratic_log_gate(st.avg_params, p.grid)[:, 0]
        return rg.domain_kl(p.log_domains, logq - jax.nn.logsumexp(logq))

    out["group_dro_true_kl"] = jax.vmap(dro)(mis, keys["mis"])

    # structural distillation into a one-expert router
    router = _gate(cfg, bound=False)

    def distill(p, prm, logq):
        h = gate(prm, p.grid)
        target = gr.responsibilities(h, p.log_experts.T)
        r0 = {"w": jnp.zeros((cfg.centers, k)), "b": jnp.zeros(k)}
        r, _ = gr.distill_router(router, r0, p.grid, target, logq,
                                 optax.adam(cfg.router_lr), num_steps=cfg.router_steps)
        route = jnp.argmax(router(r, p.grid), -1)
        logr = gr.routed_log_density(route, p.log_experts, logq, h)
        logr_plain = gr.routed_log_density(route, p.log_experts, logq)
        agree = jnp.sum(jnp.exp(logq) * (route == jnp.argmax(target, -1)))
        return (rg.domain_kl(p.log_domains, logr), rg.domain_kl(p.log_domains, logr_plain),
                agree)

    out["routed_true_kl"], out["routed_plain_true_kl"], out["router_agreement"] = jax.vmap(
        distill)(mis, out["lagrange_params"], logq_robust)
    return out


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """One compiled program (float32): the capacity runs vmapped over initialisations, the
    misspecified runs and every baseline vmapped over seeds. Returns numpy arrays (seeds
    first)."""
    del shard, progress, out_dir, resume
    probs = make_problem(cfg, runner.stream_key(key, fast=True))
    keys = {"c1": runner.stream_key(key, 1, fast=True),
            "mis": runner.seed_keys(key, cfg.seeds, stream=2, fast=True)}
    out = jax.tree.map(np.asarray, _program(cfg, probs, keys))
    out["config"] = dataclasses.asdict(cfg)
    return out


# --------------------------------------------------------------------------- metrics


def _worst_np(r, name):
    return np.max(r[f"{name}_true_kl"], -1)


def capacity_error(mode):
    def metric(r):
        return float(np.max(np.abs(r[f"c1_{mode}_worst_kl"] - r["capacity"])))
    return metric


def lam_error(mode):
    def metric(r):
        return float(np.max(r[f"c1_{mode}_lam_l1"]))
    return metric


def monolithic_worst(r):
    return np.minimum(_worst_np(r, "gaussian"), _worst_np(r, "gmm2"))


def win_rate_uniform_and_mle(r):
    rob = _worst_np(r, "lagrange")
    ok = (rob <= 0.9 * _worst_np(r, "uniform")) & (rob <= monolithic_worst(r))
    return float(np.mean(ok))


BASELINES = ("uniform", "capacity_gate", "gaussian", "gmm2", "group_dro", "argmax_expert")


def win_rate_all_baselines(r):
    best = np.min(np.stack([_worst_np(r, n) for n in BASELINES]), 0)
    return float(np.mean(_worst_np(r, "lagrange") <= best))


def median_ratio_uniform(r):
    return float(np.median(_worst_np(r, "lagrange") / _worst_np(r, "uniform")))


def lower_estimate(r):
    """Weak duality within the gate class, ESTIMATED: a gate of the class has true worst-case
    KL >= min_th lam^T L(th) + lam^T KL(D_j || p_j) (true KL = proxy + KL(D_j || p_j)), at
    lam = the averaged lam. The inner minimum comes from Adam on a nonconvex parametrisation
    (a local minimum), so this is an estimate of the class's bound, not a certified bound."""
    return r["lagrange_inner"] + np.sum(r["lagrange_lam"] * r["expert_kl"], -1)


def margin_infeasible_seeds_estimated(r):
    """Seeds where the (local) class lower estimate exceeds 0.9 x the uniform gate's worst KL."""
    return float(np.sum(lower_estimate(r) > 0.9 * _worst_np(r, "uniform")))


def margin_infeasible_seeds_certified(r):
    """Seeds where the certified bound for ANY model (the true domains' Blahut-Arimoto value)
    exceeds 0.9 x the uniform gate's worst KL."""
    return float(np.sum(np.asarray(r["certified_bound"]) > 0.9 * _worst_np(r, "uniform")))


def win_rate_group_dro(r):
    return float(np.mean(_worst_np(r, "lagrange") <= _worst_np(r, "group_dro")))


def max_gap(r):
    return float(np.max(r["lagrange_gap"]))


def max_norm_error(r):
    return float(np.max(np.abs(np.exp(r["lagrange_log_z"]) - 1.0)))


def retained_gain(r):
    """Median over seeds of (uniform - routed) / (uniform - robust gate): the share of the
    robust gate's gain over the uniform gate that the one-expert router keeps."""
    uni, rob = _worst_np(r, "uniform"), _worst_np(r, "lagrange")
    return float(np.median((uni - _worst_np(r, "routed")) / (uni - rob)))


CLAIMS = (
    theory.Claim("capacity_identity_lagrange", capacity_error("lagrange"), "<=", 1e-3,
                 "spec claim 1: max over inits |max_j KL(D_j||p_a) - C_BA| (nats)"),
    theory.Claim("capacity_identity_divide", capacity_error("divide"), "<=", 1e-3,
                 "spec claim 1, normalization by division"),
    theory.Claim("capacity_lam_lagrange", lam_error("lagrange"), "<=", 0.02,
                 "spec claim 1: max over inits ||lam_avg - lam*||_1"),
    theory.Claim("capacity_lam_divide", lam_error("divide"), "<=", 0.02,
                 "spec claim 1, normalization by division"),
    theory.Claim("robust_beats_uniform_and_mle", win_rate_uniform_and_mle, ">=", 0.9,
                 "spec claim 2 as stated: fraction of seeds with worst KL <= 0.9 x uniform gate "
                 "and <= the better monolithic MLE (Gaussian, 2-GMM); KNOWN_FAILING"),
    # recalibrated companions of claim 2: on some seeds the per-seed 10% margin over the
    # uniform gate looks out of reach for the gate class (margin_infeasible_seeds_estimated, a
    # local estimate, not certified), so the margin is checked on the median and the per-seed
    # claim against every baseline
    theory.Claim("robust_beats_all_baselines", win_rate_all_baselines, ">=", 0.9,
                 "spec claim 2 recalibrated: fraction of seeds with worst KL <= every baseline "
                 "(uniform, capacity gate, Gaussian, 2-GMM, Group-DRO, argmax expert)"),
    theory.Claim("robust_over_uniform_median", median_ratio_uniform, "<=", 0.9,
                 "spec claim 2 recalibrated: median over seeds of worst KL ratio robust/uniform"),
    theory.Claim("robust_beats_group_dro", win_rate_group_dro, ">=", 0.9,
                 "added: fraction of seeds with worst KL <= Group-DRO Gaussian"),
    theory.Claim("duality_gap", max_gap, "<=", 0.01,
                 "spec claim 3: max over seeds of max_j L_j(th_avg) - min_th lam_avg^T L(th); "
                 "the inner min is Adam's (local) minimum from th_avg, 2000 steps (QUICK 1000), "
                 "so the measured gap is a lower estimate of the true gap"),
    theory.Claim("normalization_error", max_norm_error, "<=", 0.01,
                 "spec claim 4: max over seeds |Z(th_avg) - 1| on the grid (Lagrange mode)"),
    theory.Claim("routed_retains_gain", retained_gain, ">=", 0.5,
                 "added (structural distillation): median share of the robust gate's gain over "
                 "the uniform gate kept by the one-expert router"),
)

# Spec claim 2 as stated (per seed: <= 0.9 x uniform gate and <= monolithic MLE, on >= 90% of
# seeds) does not reproduce: 0.875 at QUICK (7 of 8 seeds), 0.84 at FULL (27 of 32). The
# robust gate beats the uniform gate, the capacity gate and every monolithic baseline on every
# seed; the failures are seeds where the uniform gate is already close to the best gate found:
# there the class's weak-duality lower ESTIMATE (`lower_estimate`, from a local inner minimum,
# not certified) is above 0.9 x uniform (1 seed at QUICK, 3 at FULL:
# `margin_infeasible_seeds_estimated`). The certified bound for any model (the true domains'
# Blahut-Arimoto value, `margin_infeasible_seeds_certified`) rules the margin out on 1 of the 8
# QUICK seeds (FULL not re-run with it).
KNOWN_FAILING = ("robust_beats_uniform_and_mle",)


def summarize(results) -> dict:
    r = results
    out = {"capacity (nats)": float(r["capacity"]),
           "capacity bracket width": float(r["capacity_upper"] - r["capacity"])}
    for name in ("lagrange", "divide", "uniform", "capacity_gate", "gaussian", "gmm2",
                 "group_dro", "argmax_expert", "routed"):
        w = _worst_np(r, name)
        out[f"worst KL median [{name}]"] = float(np.median(w))
    out["worst proxy median [lagrange]"] = float(np.median(np.max(r["lagrange_proxy_kl"], -1)))
    out["robust / uniform median ratio"] = float(np.median(
        _worst_np(r, "lagrange") / _worst_np(r, "uniform")))
    out["routed / robust median ratio"] = float(np.median(
        _worst_np(r, "routed") / _worst_np(r, "lagrange")))
    out["router agreement (p_g mass) median"] = float(np.median(r["router_agreement"]))
    out["worst KL median [routed, expert shape only]"] = float(np.median(
        _worst_np(r, "routed_plain")))
    out["seeds where a 10% margin over uniform looks infeasible (class, local estimate)"] = (
        margin_infeasible_seeds_estimated(r))
    out["seeds where it is certified infeasible (any model)"] = (
        margin_infeasible_seeds_certified(r))
    out["robust - class lower estimate, max over seeds"] = float(np.max(
        _worst_np(r, "lagrange") - lower_estimate(r)))
    out["robust - certified bound, min over seeds"] = float(np.min(
        _worst_np(r, "lagrange") - np.asarray(r["certified_bound"])))
    out["duality gap max [divide]"] = float(np.max(r["divide_gap"]))
    out.update(runner.claim_values(CLAIMS, r))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    r = results
    figs = {}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    names = ["lagrange", "divide", "routed", "capacity_gate", "uniform", "argmax_expert",
             "group_dro", "gmm2", "gaussian"]
    data = [_worst_np(r, n) for n in names]
    _dot_plot(ax, names, data)
    runner.finish_axes(ax, xlabel="max_j KL(D_j || model) (nats)", ylabel="gate / baseline",
                       title=f"worst-case KL over {cfg.seeds} seeds", legend=7)
    figs["worst_kl"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    t = np.arange(1, r["lagrange_max_loss_trace"].shape[1] + 1)
    win = 50
    for mode in ("lagrange", "divide"):
        tr = np.median(r[f"{mode}_max_loss_trace"], 0)
        smooth = np.convolve(tr, np.ones(win) / win, mode="valid")
        ax.semilogx(t[win - 1:], smooth, label=f"{mode}: max_j L^_j (batch, {win}-step mean)")
    ax.axhline(float(np.median(np.max(r["lagrange_proxy_kl"], -1))), color="k", ls=":",
               label="averaged gate, exact (median)")
    runner.finish_axes(ax, xlabel="step", ylabel="proxy loss (nats); batch max is biased up",
                       title=f"training: worst-group proxy loss (median of {cfg.seeds} seeds)")
    figs["training"] = fig
    return figs


def _dot_plot(ax, names, data):
    """One row per method (first on top): every seed's value as a dot (spread vertically so
    equal values stay apart) and the seed median as a vertical bar."""
    rows = np.arange(len(names))[::-1]
    n = max(len(v) for v in data)
    offsets = np.linspace(-0.2, 0.2, n) if n > 1 else np.zeros(1)
    xs = np.concatenate([np.asarray(v, dtype=float) for v in data])
    ys = np.concatenate([row + offsets[:len(v)] for row, v in zip(rows, data, strict=True)])
    ax.scatter(xs, ys, s=14, alpha=0.6, color="C0", label=f"one seed (of {n})")
    ax.plot([np.median(v) for v in data], rows, ls="none", marker="|", ms=18, mew=2,
            color="k", label="median over seeds")
    ax.set_yticks(rows, names, fontsize=8)
