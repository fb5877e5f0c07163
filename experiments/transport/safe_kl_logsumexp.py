r"""# Safe KL: a stochastic-gradient-friendly LogSumExp for DRO and semi-dual OT

*Improved Stochastic Optimization of LogSumExp* (E. Gladin, A. Kroshnin, J.-J. Zhu,
P. Dvurechensky; ICML 2026, arXiv 2509.24894). Full text not read: the construction below is
the one inferred in the project's spec (see "Choices").

## Method

The log-partition $F(\phi) = \ln E_\mu e^{\phi} = \min_c\, c + E_\mu(e^{\phi - c} - 1)$ has an
unbiased per-sample form but an exponential that overflows. Safe KL caps the likelihood ratio of
the tilted measure at $M = 1/\varepsilon$, which replaces $e^s - 1$ by its $C^1$
exponential-then-linear continuation $f_M^*$:

$$f_M^*(s) = e^s - 1 \ (s \le \ln M),\qquad M(s - \ln M) + M - 1 \ (s > \ln M),\qquad
F_M(\phi) = \min_c\, c + E_\mu f_M^*(\phi - c).$$

$F_M \le F$, nondecreasing in $M$, $F_M = F$ once $M \ge \max_i e^{\phi_i - F}$; gradients
$f_M^{*\prime} = \min(e^s, M)$ are bounded. Code: `transport.safe_kl` (`safe_log_mean_exp`,
exact in closed form after one sort; `safe_kl_dro_loss`, a loss with an extra scalar
parameter $c$ for any optax optimizer; `semidual_ot_safe`, SGD on $(g, c)$ for the entropic
semi-dual $\max_g \langle b, g\rangle - e\sum_i a_i F_M((g - C_{i\cdot})/e; b)$).

**Problems and claims** (`CLAIMS`; QUICK sizes in brackets):

1. *Identity* (float64): $\phi_i \sim N(0, 9)$, $n = 10^5$, $M \in \{10, \dots, 10^5\}$:
   $F_M \le F + 10^{-9}$, nondecreasing in $M$, $= F$ within $10^{-9}$ once $M \ge$ the largest
   tilt; the closed form agrees with a NumPy bisection on $E\min(e^{\phi - c}, M) = 1$.
2. *Unbiasedness*: KL-DRO logistic regression, $n = 10^4$, $d = 20$, $\lambda = 0.5$, 20%
   flipped labels, at $\theta = \theta^\star/2$ (half the generating model; largest tilt 179,
   so $F_M = F$ there) with $c = c^\star(\theta)$: the mean of $10^4$ batch-32 Safe-KL
   gradients matches the full Safe-KL gradient within 2% (relative), the minibatch-LSE
   gradients miss the full LSE gradient by $\ge 10\%$. Added: the Safe-KL squared error over
   its exact Monte Carlo variance $\mathrm{tr\,Cov}/(NB)$ is $\le 5$ (mean 1 when unbiased).
3. *DRO training*: Adam ($10^{-2}$, cosine decay), 5000 [1000] steps, batch 64, 16 [8] seeds,
   from $\theta = 0$, $c = \ln 2/\lambda$. The exact LSE-DRO objective at the Safe-KL
   solution is $\le$ the minibatch-LSE solution's on $\ge 80\%$ of seeds; the naive
   exponential dual ($M = \infty$) at the same learning rate gives inf/NaN or a worse
   objective than Safe KL on $\ge 50\%$ of seeds. Added: with plain SGD (rate 1, cosine
   decay) the exponential dual gives inf/NaN on $\ge 50\%$ of seeds, while Safe KL
   ($M = 10^2$) ends within 1% of the Adam Safe-KL median on every seed.
4. *Semi-dual OT* against ott-jax: 2-D Gaussian mixtures, $n = m = 512$ [128], squared
   Euclidean cost, $e = 0.1$, cap $10^3$, $64 \times 64$ [$32\times 32$] samples per step,
   $2\cdot 10^4$ [4000] steps, 4 [2] seeds. The exact semi-dual at the averaged iterate is
   within 1% of `Sinkhorn(...).reg_ot_cost` (ott-jax's KL$(P\|a\otimes b)$ convention, the same
   as the semi-dual's: pinned on a 3x3 case in the tests and here at ott's own potential);
   added: the naive exponential dual at the same learning rate ends further away.

**Choices.** $f_M^*$ is the spec's inferred Safe-KL conjugate, not checked against the paper.
DRO data: $\theta^\star = 2 z/\sqrt d$, $y = \mathrm{sign}(x^\top\theta^\star + 0.3\xi)$,
20% flipped; claim 2 at $\theta^\star/2$, where the minibatch-LSE bias is large while the
tilt stays below the cap (at $\theta^\star$ itself the tilt reaches 3190 > M and the Monte
Carlo error of the Safe-KL mean is about 8%). Adam uses cosine decay: with a constant rate the
final iterates sit in a noise ball that hides the bias (QUICK, constant $10^{-2}$: medians
0.6075 vs 0.6079, 6/8 wins). OT SGD is preconditioned by the marginal weights ($g_j$ and
$e\,c_i$ in potential units) with Polyak averaging; rate $0.01$ ($\eta\, m/(B e) < 2$ keeps
the per-coordinate step stable; in one-seed 5000-step trials at FULL size on a similar
instance, rates 0.01 / 0.02 / 0.05 ended 0.6% / 7% / 150% below Sinkhorn). Because $\nu$ has
$m$ atoms every tilt is $\le m$, so $M = 10^3 > m$ makes $F_M = F$ on every row: the OT
claim measures stochastic optimisation, not approximation bias. Not implemented: the SCENT
and $\chi^2$-DRO baselines and a minibatch-LSE OT baseline.

**Measured** (key 0; FULL = 16 DRO seeds, 4 OT seeds; QUICK in brackets).
Claim 1: $F = 4.7436$, largest tilt 8760; $F - F_M$ = 1.41, 0.558, 0.196 for
$M = 10, 10^2, 10^3$ and $9\cdot 10^{-16}$ for $M = 10^4, 10^5$; closed form = bisection to
$4\cdot10^{-16}$ (spec's NumPy calibration: 1.29, 0.47, 0.14, 9.3e-3, 9e-16 with largest tilt
1.46e4). Claim 2: Safe-KL mean off by **2.69%** (FAIL against 2%; the exact Monte Carlo
standard error of that mean is 3.09%, and the squared error is 0.76 of its variance, so the
estimator is unbiased and 2% is below the noise of $10^4$ batches here); minibatch LSE off by
34.9% (squared error 127 times the Safe-KL mean's Monte Carlo variance). Claim 3: Safe KL $\le$
minibatch LSE on **12/16 = 0.75** seeds (FAIL
against 0.8; [7/8 = 0.875, PASS]); the medians differ by only $1.2\cdot10^{-5}$ (0.652901 vs
0.652914): at $\lambda = 0.5$ the tilt at the solution is mild. The exponential dual under Adam
**never** fails (0/16, FAIL against 0.5): Adam's normalised steps keep $e^{\phi - c}$ in range
and its results equal Safe KL's (the cap never binds). Under plain SGD it gives NaN on 16/16
[8/8] seeds, Safe KL ($M = 10^2$) ends within 0.031% [0.079%] of the Adam median. Claim 4:
ott-jax reg_ot_cost 1.51976 [1.68945]; Safe-KL semi-dual 1.51502-1.51543 per seed, worst gap
**0.31%** [0.82%] (PASS); exponential dual 1.4549-1.4889 (2.0-4.3% away).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import theory
from jaxopt_icml.transport import safe_kl as sk

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("E. Gladin, A. Kroshnin, J.-J. Zhu, P. Dvurechensky. *Improved Stochastic "
             "Optimization of LogSumExp*. ICML 2026, arXiv 2509.24894.")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 16
    # claim 1
    id_n: int = 100_000
    id_caps: tuple = (10.0, 1e2, 1e3, 1e4, 1e5)
    # claims 2, 3: KL-DRO logistic regression
    n: int = 10_000
    d: int = 20
    lam: float = 0.5
    flip: float = 0.2
    theta_scale: float = 2.0
    grad_at: float = 0.5  # claim 2 is evaluated at grad_at * theta*
    cap: float = 1e3
    grad_batch: int = 32
    grad_batches: int = 10_000
    adam_lr: float = 1e-2
    dro_steps: int = 5000
    dro_batch: int = 64
    sgd_lr: float = 1.0  # added plain-SGD comparison (cosine decay), same rate for both
    sgd_cap: float = 1e2
    # claim 4: semi-dual OT
    ot_n: int = 512
    ot_eps: float = 0.1
    ot_cap: float = 1e3
    ot_batch: int = 64
    ot_steps: int = 20_000
    ot_lr: float = 0.01
    ot_seeds: int = 4
    ot_chunks: int = 10


FULL = Config()
# QUICK (CI): 8 seeds, 1000 Adam/SGD steps; OT with 128 points, 32 x 32 samples, 4000 steps,
# 2 seeds (per-coordinate step eta m / (B e) = 0.4, FULL's 0.8; 2000 steps ended 2.4% from
# Sinkhorn, 4000 steps 0.7-0.8%; a rate of 0.02 ended 3-5% away)
QUICK = Config(seeds=8, dro_steps=1000, ot_n=128, ot_batch=32, ot_steps=4000, ot_seeds=2)


def _mixture(key, n, centers, scale=0.3):
    k1, k2 = jax.random.split(key)
    comp = jax.random.randint(k1, (n,), 0, centers.shape[0])
    return centers[comp] + scale * jax.random.normal(k2, (n, 2))


def make_problem(cfg: Config, key) -> dict:
    """``dro``: logistic data ``X (n, d)``, labels ``y`` in {-1, 1} (a fraction ``flip``
    flipped) and the generating ``theta``; ``ot``: a :class:`transport.safe_kl.SemiDualOT`
    between two 3-component Gaussian mixtures in the plane, uniform weights."""
    key = runner.stream_key(key, fast=True)
    kx, kt, kf, kn, ko1, ko2 = jax.random.split(key, 6)
    X = jax.random.normal(kx, (cfg.n, cfg.d))
    theta = cfg.theta_scale * jax.random.normal(kt, (cfg.d,)) / math.sqrt(cfg.d)
    y = jnp.sign(X @ theta + 0.3 * jax.random.normal(kn, (cfg.n,)))
    y = jnp.where(jax.random.uniform(kf, (cfg.n,)) < cfg.flip, -y, y)
    cx = jnp.array([[-1.0, -1.0], [1.0, -1.0], [0.0, 1.0]])
    cy = jnp.array([[-1.0, 1.0], [1.0, 1.0], [0.0, -1.5]])
    m = cfg.ot_n
    w = jnp.full((m,), 1.0 / m)
    ot = sk.SemiDualOT(_mixture(ko1, m, cx), _mixture(ko2, m, cy), w, w)
    return {"dro": {"X": X, "y": y, "theta": theta}, "ot": ot}


def _losses(theta, X, y):
    return jax.nn.softplus(-y * (X @ theta))


def make_methods(cfg: Config) -> dict:
    """DRO: ``(loss(params, Xb, yb), optax optimizer)`` per method; OT: OracleAlgorithms."""
    lam = cfg.lam

    def safe(cap):
        return lambda p, Xb, yb: sk.safe_kl_dro_loss(_losses(p["theta"], Xb, yb), p["c"],
                                                     lam, cap)

    def mb_lse(p, Xb, yb):
        return sk.lse_dro_loss(_losses(p["theta"], Xb, yb), lam)

    # cosine decay to 0: with a constant rate the final iterates sit in a noise ball that hides
    # the minibatch-LSE bias (QUICK, constant 1e-2: medians 0.6075 vs 0.6079, 6/8 wins)
    adam = optax.adam(optax.cosine_decay_schedule(cfg.adam_lr, cfg.dro_steps))
    sgd = optax.sgd(optax.cosine_decay_schedule(cfg.sgd_lr, cfg.dro_steps))
    return {
        "Safe-KL DRO (Adam)": (safe(cfg.cap), adam),
        "minibatch-LSE DRO (Adam)": (mb_lse, adam),
        "exponential dual DRO (Adam)": (safe(math.inf), adam),
        "Safe-KL DRO (SGD)": (safe(cfg.sgd_cap), sgd),
        "exponential dual DRO (SGD)": (safe(math.inf), sgd),
        "Safe-KL semi-dual OT": sk.semidual_ot_safe(
            cfg.ot_lr, eps=cfg.ot_eps, cap=cfg.ot_cap, batch_x=cfg.ot_batch,
            batch_y=cfg.ot_batch),
        "exponential semi-dual OT": sk.semidual_ot_safe(
            cfg.ot_lr, eps=cfg.ot_eps, cap=math.inf, batch_x=cfg.ot_batch,
            batch_y=cfg.ot_batch),
    }


# --------------------------------------------------------------------------- claim 1


def bisection_c(phi: np.ndarray, cap: float, iters: int = 80) -> float:
    """NumPy reference: the root of ``mean(min(e^{phi - c}, cap)) = 1`` by bisection on
    ``[min phi, max phi]`` (independent of the closed form)."""
    lo, hi = float(phi.min()), float(phi.max())
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if np.mean(np.minimum(np.exp(phi - mid), cap)) > 1.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def numpy_safe_value(phi: np.ndarray, cap: float, c: float) -> float:
    s = phi - c
    lc = math.log(cap)
    fs = np.where(s <= lc, np.expm1(np.minimum(s, lc)), cap * (s - lc) + cap - 1)
    return float(c + fs.mean())


@jax.jit
def _safe_values(phi, caps):
    return jax.vmap(lambda M: sk.safe_log_mean_exp(phi, M))(caps)


def _identity(cfg, key):
    with jax.enable_x64(True):
        phi = 3.0 * jax.random.normal(runner.stream_key(key, fast=True), (cfg.id_n,),
                                      jnp.float64)
        F = float(sk.log_mean_exp(phi))
        caps = jnp.asarray(cfg.id_caps, jnp.float64)
        # phi is an argument (a closed-over constant would be constant-folded: minutes)
        vals = np.asarray(_safe_values(phi, caps))
        phi_np = np.asarray(phi)
    ref = np.array([numpy_safe_value(phi_np, M, bisection_c(phi_np, M)) for M in cfg.id_caps])
    return {"F": F, "F_M": vals, "F_M_bisection": ref, "caps": np.asarray(cfg.id_caps),
            "max_tilt": float(np.exp(phi_np.max() - F))}


# --------------------------------------------------------------------------- claims 2, 3


def _grad_bias(cfg, prob, key):
    X, y = prob["X"], prob["y"]
    theta = cfg.grad_at * prob["theta"]
    lam, cap = cfg.lam, cfg.cap
    l_full = _losses(theta, X, y)
    _, c = sk.safe_log_mean_exp(l_full / lam, cap, return_c=True)
    safe = lambda th, Xb, yb: sk.safe_kl_dro_loss(_losses(th, Xb, yb), c, lam, cap)
    lse = lambda th, Xb, yb: sk.lse_dro_loss(_losses(th, Xb, yb), lam)
    full_safe = jax.grad(safe)(theta, X, y)
    full_lse = jax.grad(lse)(theta, X, y)
    idx = jax.random.randint(runner.stream_key(key, 1, fast=True),
                             (cfg.grad_batches, cfg.grad_batch), 0, cfg.n)
    per = lambda f: jax.vmap(lambda i: jax.grad(f)(theta, X[i], y[i]))(idx).mean(0)
    rel = lambda a, b: jnp.linalg.norm(a - b) / jnp.linalg.norm(b)
    # Monte Carlo variance of the mean of N batches of B i.i.d. examples: tr Cov / (N B), with
    # Cov the exact per-example covariance of the Safe-KL gradient over the data set
    each = jax.vmap(lambda xi, yi: jax.grad(safe)(theta, xi[None], yi[None]))(X, y)
    mc_var = jnp.sum(jnp.var(each, axis=0)) / (cfg.grad_batches * cfg.grad_batch)
    mean_safe, mean_lse = per(safe), per(lse)
    err_safe, err_lse = mean_safe - full_safe, mean_lse - full_lse
    return {"safe_rel_err": rel(mean_safe, full_safe), "lse_rel_err": rel(mean_lse, full_lse),
            "safe_z2": jnp.sum(err_safe ** 2) / mc_var, "lse_z2": jnp.sum(err_lse ** 2) / mc_var,
            "mc_rel_std": jnp.sqrt(mc_var) / jnp.linalg.norm(full_safe),
            "max_tilt": jnp.max(jnp.exp(l_full / lam - sk.log_mean_exp(l_full / lam))),
            "safe_equals_lse_grad": rel(full_safe, full_lse)}


def _dro_train(cfg, prob, keys):
    """All DRO methods x seeds (one key per seed): one scan, vmapped. Returns the exact
    objective per method and seed (``inf`` when the run produced inf/NaN)."""
    X, y = prob["X"], prob["y"]
    methods = make_methods(cfg)
    names = [k for k in methods if "DRO" in k]
    c0 = math.log(2.0) / cfg.lam
    exact = lambda th: sk.lse_dro_loss(_losses(th, X, y), cfg.lam)

    def one(method, key):
        loss, opt = methods[method]
        p0 = {"theta": jnp.zeros(cfg.d), "c": jnp.asarray(c0)}

        def body(carry, k):
            p, s = carry
            i = jax.random.randint(k, (cfg.dro_batch,), 0, cfg.n)
            g = jax.grad(loss)(p, X[i], y[i])
            u, s = opt.update(g, s, p)
            return (optax.apply_updates(p, u), s), None

        keys = jax.random.split(key, cfg.dro_steps)
        (p, _), _ = jax.lax.scan(body, (p0, opt.init(p0)), keys)
        val = exact(p["theta"])
        return jnp.where(jnp.isfinite(val), val, jnp.inf)

    return {name: jax.vmap(functools.partial(one, name))(keys) for name in names}


# --------------------------------------------------------------------------- claim 4


def _ot_run(cfg, ot, keys):
    from ott.geometry import pointcloud
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn

    geom = pointcloud.PointCloud(ot.x, ot.y, epsilon=cfg.ot_eps)
    with jax.numpy_rank_promotion("allow"):  # ott-jax relies on implicit rank promotion
        out = sinkhorn.Sinkhorn(threshold=1e-5, max_iterations=5000)(
            linear_problem.LinearProblem(geom, ot.a, ot.b))
    methods = make_methods(cfg)
    chunk = cfg.ot_steps // cfg.ot_chunks
    x0 = (jnp.zeros(cfg.ot_n), jnp.zeros(cfg.ot_n))

    def one(alg, key):
        def inner(state, t):
            _, state = alg.update(state, ot, jax.random.fold_in(key, t))
            return state, None

        def outer(state, j):
            state, _ = jax.lax.scan(inner, state, j * chunk + jnp.arange(chunk))
            g = state.avg[0]
            return state, (sk.semidual_value(g, ot, eps=cfg.ot_eps),
                           jnp.isfinite(g).all() & jnp.isfinite(state.x[1]).all())

        _, (vals, fin) = jax.lax.scan(outer, alg.init(x0, key), jnp.arange(cfg.ot_chunks))
        return jnp.where(fin, vals, -jnp.inf)

    res = {name: jax.vmap(functools.partial(one, methods[name]))(keys)
           for name in ("Safe-KL semi-dual OT", "exponential semi-dual OT")}
    res["ott_reg_ot_cost"] = out.reg_ot_cost
    res["ott_semidual_at_g"] = sk.semidual_value(out.g, ot, eps=cfg.ot_eps)
    res["ott_converged"] = out.converged
    res["steps"] = (jnp.arange(cfg.ot_chunks) + 1) * chunk
    return res


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _program(cfg, prob, ot, key, dro_keys, ot_keys):
    return {"grad": _grad_bias(cfg, prob, key), "dro": _dro_train(cfg, prob, dro_keys),
            "ot": _ot_run(cfg, ot, ot_keys)}


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """Claim 1 in float64 (closed form and NumPy bisection), then claims 2-4 as ONE compiled
    float32 program (the DRO methods and the OT methods vmapped over seeds). Returns numpy
    arrays: ``identity``, ``grad``, ``dro`` (exact objective per method, shape ``(seeds,)``),
    ``ot`` (exact semi-dual of the averaged iterate per method, ``(ot_seeds, chunks)``, and the
    ott-jax reference). ``shard`` is accepted and ignored: the program is small enough for one
    device (the seed axis is vmapped)."""
    del shard, out_dir, resume, progress
    probs = make_problem(cfg, key)
    out = {"identity": _identity(cfg, key), "config": dataclasses.asdict(cfg)}
    res = _program(cfg, probs["dro"], probs["ot"], key,
                   runner.seed_keys(key, cfg.seeds, stream=2, fast=True),
                   runner.seed_keys(key, cfg.ot_seeds, stream=3, fast=True))
    out.update(jax.tree.map(np.asarray, res))
    return out


# --------------------------------------------------------------------------- metrics


def identity_upper_gap(r) -> float:
    """max over caps of F_M - F (must be <= 1e-9)."""
    i = r["identity"]
    return float(np.max(i["F_M"] - i["F"]))


def identity_monotone_drop(r) -> float:
    """largest decrease of F_M between consecutive caps (0 when nondecreasing)."""
    return float(max(0.0, -np.min(np.diff(r["identity"]["F_M"]))))


def identity_exact_gap(r) -> float:
    """max |F_M - F| over caps above the largest tilt (inf if no cap is)."""
    i = r["identity"]
    big = i["caps"] >= i["max_tilt"]
    return float(np.max(np.abs(i["F_M"][big] - i["F"]))) if big.any() else float("inf")


def identity_vs_bisection(r) -> float:
    i = r["identity"]
    return float(np.max(np.abs(i["F_M"] - i["F_M_bisection"])))


def safe_grad_rel_err(r) -> float:
    return float(r["grad"]["safe_rel_err"])


def lse_grad_rel_err(r) -> float:
    return float(r["grad"]["lse_rel_err"])


def safe_grad_z2(r) -> float:
    """``||mean - full||^2 / (tr Cov / (N B))`` for Safe KL: about 1 when unbiased."""
    return float(r["grad"]["safe_z2"])


def dro_safe_win_rate(r) -> float:
    d = r["dro"]
    return float(np.mean(d["Safe-KL DRO (Adam)"] <= d["minibatch-LSE DRO (Adam)"]))


def dro_exp_fail_rate(r) -> float:
    d = r["dro"]
    naive, safe = d["exponential dual DRO (Adam)"], d["Safe-KL DRO (Adam)"]
    return float(np.mean(~np.isfinite(naive) | (naive > safe)))


def dro_sgd_exp_nonfinite_rate(r) -> float:
    return float(np.mean(~np.isfinite(r["dro"]["exponential dual DRO (SGD)"])))


def dro_sgd_safe_rel_excess(r) -> float:
    """max over seeds of the SGD Safe-KL exact objective over the Adam Safe-KL median, - 1."""
    d = r["dro"]
    return float(np.max(d["Safe-KL DRO (SGD)"]) / np.median(d["Safe-KL DRO (Adam)"]) - 1.0)


def _ot_rel_gap(r, name):
    o = r["ot"]
    ref = float(o["ott_reg_ot_cost"])
    return (ref - o[name][:, -1]) / abs(ref)


def ot_safe_rel_gap(r) -> float:
    """max over seeds of |reg_ot_cost - semi-dual(avg g)| / |reg_ot_cost| at the end."""
    return float(np.max(np.abs(_ot_rel_gap(r, "Safe-KL semi-dual OT"))))


def ot_exp_minus_safe_gap(r) -> float:
    """mean over seeds of (naive exponential gap - Safe-KL gap); > 0: Safe KL is closer."""
    return float(np.mean(np.abs(_ot_rel_gap(r, "exponential semi-dual OT"))
                         - np.abs(_ot_rel_gap(r, "Safe-KL semi-dual OT"))))


def ot_convention_gap(r) -> float:
    """|semi-dual at ott's g - ott's reg_ot_cost| / |reg_ot_cost| (same convention: ~0)."""
    o = r["ot"]
    return float(abs(o["ott_semidual_at_g"] - o["ott_reg_ot_cost"]) / abs(o["ott_reg_ot_cost"]))


CLAIMS = (
    theory.Claim("identity_below_lse", identity_upper_gap, "<=", 1e-9,
                 "spec claim 1: F_M <= F + 1e-9 for M in {1e1..1e5}, float64"),
    theory.Claim("identity_monotone_in_cap", identity_monotone_drop, "<=", 0.0,
                 "spec claim 1: F_M nondecreasing in M"),
    theory.Claim("identity_exact_above_max_tilt", identity_exact_gap, "<=", 1e-9,
                 "spec claim 1: F_M = F within 1e-9 once M >= max_i n softmax(phi)_i"),
    theory.Claim("identity_closed_form_vs_bisection", identity_vs_bisection, "<=", 1e-9,
                 "added: sort-based closed form == NumPy bisection (80 halvings)"),
    theory.Claim("unbiased_safe_grad_rel_err", safe_grad_rel_err, "<=", 0.02,
                 "spec claim 2: mean of 1e4 batch-32 Safe-KL gradients vs the full one"),
    theory.Claim("unbiased_safe_grad_within_mc_noise", safe_grad_z2, "<=", 5.0,
                 "added: squared error of the Safe-KL mean over its exact Monte Carlo variance "
                 "tr Cov/(N B) (mean 1 if unbiased; 5 = chi^2_1 97.5% quantile, the worst case "
                 "of one dominant direction)"),
    theory.Claim("unbiased_minibatch_lse_rel_err", lse_grad_rel_err, ">=", 0.10,
                 "spec claim 2: mean of 1e4 batch-32 minibatch-LSE gradients misses the full "
                 "LSE gradient by >= 10%"),
    theory.Claim("dro_safe_beats_minibatch_lse", dro_safe_win_rate, ">=", 0.8,
                 "spec claim 3: exact LSE-DRO objective, Safe KL <= minibatch LSE, fraction "
                 "of seeds"),
    theory.Claim("dro_exponential_dual_fails", dro_exp_fail_rate, ">=", 0.5,
                 "spec claim 3: naive exponential dual inf/NaN or worse than Safe KL, "
                 "fraction of seeds"),
    theory.Claim("dro_sgd_exponential_dual_nonfinite", dro_sgd_exp_nonfinite_rate, ">=", 0.5,
                 "added: with plain SGD (rate 1, cosine decay) the exponential dual gives "
                 "inf/NaN on >= 50% of seeds"),
    theory.Claim("dro_sgd_safe_converges", dro_sgd_safe_rel_excess, "<=", 0.01,
                 "added: Safe KL (M = 1e2) with the same SGD ends within 1% of the Adam "
                 "Safe-KL median on every seed"),
    theory.Claim("ot_convention_pinned", ot_convention_gap, "<=", 1e-4,
                 "spec pitfall: semi-dual at ott's g == ott's reg_ot_cost (KL(P|a x b))"),
    theory.Claim("ot_safe_within_1pct_of_sinkhorn", ot_safe_rel_gap, "<=", 0.01,
                 "spec claim 4: |semi-dual(avg iterate) - Sinkhorn reg_ot_cost| relative, "
                 "worst seed"),
    theory.Claim("ot_safe_closer_than_exponential", ot_exp_minus_safe_gap, ">", 0.0,
                 "added: at the same learning rate the naive exponential dual ends further "
                 "from Sinkhorn (mean over seeds of the gap difference)"),
)


# Documented misses (numbers in the module docstring). unbiased_safe_grad_rel_err is the spec's
# threshold being infeasible rather than the paper failing: 2% is below the Monte Carlo standard
# error of the mean of 1e4 batches (3.09%), so any unbiased estimator misses it; the added
# squared-error-over-variance claim is the real test (0.76). dro_exponential_dual_fails fails at
# QUICK and FULL; dro_safe_beats_minibatch_lse fails at FULL only (12/16; QUICK 7/8 passes).
KNOWN_FAILING = ("unbiased_safe_grad_rel_err", "dro_exponential_dual_fails",
                 "dro_safe_beats_minibatch_lse")
FULL_ONLY_FAILING = ("dro_safe_beats_minibatch_lse",)


def summarize(results) -> dict:
    i, g, d, o = results["identity"], results["grad"], results["dro"], results["ot"]
    out = {"identity F": i["F"], "identity max tilt": i["max_tilt"]}
    for M, v in zip(i["caps"], i["F_M"], strict=True):
        out[f"identity F - F_M (M={M:g})"] = float(i["F"] - v)
    out["DRO max tilt at the claim-2 point"] = float(g["max_tilt"])
    out["claim 2 Monte Carlo relative std of the Safe-KL mean"] = float(g["mc_rel_std"])
    out["claim 2 minibatch-LSE squared error / Safe-KL MC variance"] = float(g["lse_z2"])
    out["DRO |grad F_M - grad F| / |grad F| at the claim-2 point"] = float(
        g["safe_equals_lse_grad"])
    for k, v in d.items():
        out[f"{k}: exact objective median"] = float(np.median(v))
        out[f"{k}: non-finite seeds"] = int(np.sum(~np.isfinite(v)))
    out["OT Sinkhorn reg_ot_cost (ott-jax)"] = float(o["ott_reg_ot_cost"])
    out["OT Sinkhorn converged"] = bool(o["ott_converged"])
    for k in ("Safe-KL semi-dual OT", "exponential semi-dual OT"):
        out[f"{k}: final semi-dual per seed"] = [float(v) for v in o[k][:, -1]]
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    figs = {}
    i = results["identity"]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.loglog(i["caps"], np.maximum(i["F"] - i["F_M"], 1e-17), "o-", label="F - F_M")
    ax.axvline(i["max_tilt"], color="k", ls=":", label="largest tilt")
    runner.finish_axes(ax, xlabel="cap M = 1/eps", ylabel="F - F_M (float64)",
                       title="capped LSE identity: gap to the exact log-sum-exp", legend=True)
    figs["identity"] = fig
    fig, ax = plt.subplots(figsize=(7, 4.2))
    d = results["dro"]
    names = list(d)
    _dot_plot(ax, [k.replace(" DRO", "") for k in names], [np.asarray(d[k]) for k in names])
    runner.finish_axes(ax, xlabel="exact LSE-DRO objective at the final iterate",
                       ylabel="dual / optimizer", legend=7,
                       title=f"KL-DRO logistic regression, lam = {cfg.lam}")
    figs["dro"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    o = results["ot"]
    ref = float(o["ott_reg_ot_cost"])
    for k in ("Safe-KL semi-dual OT", "exponential semi-dual OT"):
        gap = np.abs(ref - np.where(np.isfinite(o[k]), o[k], np.nan)) / abs(ref)
        runner.band_plot(ax, o["steps"], gap, label=k)
    ax.axhline(0.01, color="k", ls=":", label="claim threshold (1% of Sinkhorn)")
    runner.finish_axes(ax, xlabel="SGD steps", ylabel="|Sinkhorn - semi-dual(avg g)| / Sinkhorn",
                       title="entropic OT: semi-dual SGD vs Sinkhorn (ott-jax)", legend=True)
    figs["ot"] = fig
    return figs


def _dot_plot(ax, names, data):
    """One row per method (first on top): every seed's value as a dot (spread vertically so
    equal values stay apart), the median of the finite seeds as a vertical bar, and a note on
    rows whose seeds returned a non-finite objective (diverged)."""
    rows = np.arange(len(names))[::-1]
    n = max(len(v) for v in data)
    offsets = np.linspace(-0.2, 0.2, n) if n > 1 else np.zeros(1)
    xs = np.concatenate(data).astype(float)
    ys = np.concatenate([row + offsets[:len(v)] for row, v in zip(rows, data, strict=True)])
    ok = np.isfinite(xs)
    ax.scatter(xs[ok], ys[ok], s=14, alpha=0.6, color="C0", label=f"one seed (of {n})")
    med = [np.median(v[np.isfinite(v)]) if np.isfinite(v).any() else np.nan for v in data]
    ax.plot(med, rows, ls="none", marker="|", ms=18, mew=2, color="k",
            label="median over finite seeds")
    for row, v in zip(rows, data, strict=True):
        bad = int(np.sum(~np.isfinite(v)))
        if bad:
            ax.text(0.02, row, f"non-finite on {bad}/{len(v)} seeds (diverged)", fontsize=8,
                    va="center", color="C3", transform=ax.get_yaxis_transform())
    ax.set_yticks(rows, names, fontsize=8)


# --------------------------------------------------------------------------- benchmark


def make_step_fns(n: int = 10_000, batch: int = 64, *, d: int = 20, seed: int = 0):
    """One Safe-KL stochastic step vs one full-batch LSE step on the same KL-DRO logistic
    problem (``n`` examples, ``d`` features, Adam), float32, jitted.

    Returns:
      ``(safe_step, full_step, safe_args, full_args)``: ``safe_step(*safe_args)`` draws a batch
      of ``batch`` examples and takes one Adam step on ``safe_kl_dro_loss``;
      ``full_step(*full_args)`` takes one Adam step on the exact ``lse_dro_loss`` of all ``n``
      examples. Both return ``(params, opt_state)``.
    """
    cfg = dataclasses.replace(FULL, n=n, d=d)
    prob = make_problem(cfg, jax.random.PRNGKey(seed))["dro"]
    X, y = prob["X"], prob["y"]
    opt = optax.adam(cfg.adam_lr)
    p0 = {"theta": jnp.zeros(d), "c": jnp.asarray(math.log(2.0) / cfg.lam)}

    def safe_loss(p, Xb, yb):
        return sk.safe_kl_dro_loss(_losses(p["theta"], Xb, yb), p["c"], cfg.lam, cfg.cap)

    def full_loss(p, X, y):
        return sk.lse_dro_loss(_losses(p["theta"], X, y), cfg.lam)

    # The data are arguments, not closure constants (n = 1e6 would bake 80 MB into the program).
    @jax.jit
    def safe_step(p, s, key, X, y):
        i = jax.random.randint(key, (batch,), 0, n)
        u, s = opt.update(jax.grad(safe_loss)(p, X[i], y[i]), s, p)
        return optax.apply_updates(p, u), s

    @jax.jit
    def full_step(p, s, X, y):
        u, s = opt.update(jax.grad(full_loss)(p, X, y), s, p)
        return optax.apply_updates(p, u), s

    s0 = opt.init(p0)
    return safe_step, full_step, (p0, s0, runner.rbg_key(seed + 1), X, y), (p0, s0, X, y)


def benchmark(n: int = 10_000, batch: int = 64, *, repeats: int = 21, inner: int = 20,
              seed: int = 0) -> dict:
    """Median over interleaved rounds of time(Safe-KL step) / time(full-batch LSE step)."""
    from experiments.tools.bench import interleaved_ratio

    safe_step, full_step, sa, fa = make_step_fns(n, batch, seed=seed)
    out = interleaved_ratio(lambda: safe_step(*sa), lambda: full_step(*fa), repeats=repeats,
                            inner=inner)
    out.update(n=n, batch=batch)
    return out
