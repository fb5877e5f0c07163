r"""# Variable clustering via distributionally robust nodewise regression (ADMM)

*Variable Clustering via Distributionally Robust Nodewise Regression* (K. Wang, X. Xu,
X. Y. Zhou; ICML 2026, arXiv 2212.07944). Full text not read: the method is restated from the
released reference code (see "Choices").

## Method

Regress every variable on all the others, robustly over a Wasserstein-type ball of radius
$\delta$; the convex relaxation is

$$\min_{\mathrm{diag}(B)=0}\ \tfrac{1}{\sqrt n}\|X - XB\|_F + \sqrt\delta\,\|I - B\|_2,$$

a square-root loss plus the spectral norm (dual norm of the robust region) of $I - B$. The
radius is data-driven: $\Upsilon_{ij} = \hat\Sigma_{ii}\hat\Sigma_{jj} + \hat\Sigma_{ij}^2$,
$Z$ symmetric with entries $N(0, \Upsilon_{ij})$, $R = \mathrm{tr}(Z^\top
\mathrm{diag}(\hat\Sigma)^{-1}Z)/4$, $\sqrt\delta = \sqrt{q_{1-\alpha}(R)/n}$. ADMM splits
$B_1 + B_2 = I$ and $Z = G^{1/2}(I - B_1)$ ($G = X^\top X$): $B_1$ in closed form (a least
squares with $\mathrm{diag}(B_1) = 0$, one multiplier per diagonal entry, through the fixed
$(I + G)^{-1}$), $B_2 = \mathrm{prox}_{(\sqrt\delta/\rho)\|\cdot\|_2}(I - B_1 - U)$ (SVD; the top
singular values are cut at a water level), $Z$ by the Frobenius block shrink (the prox of the
square-root loss), then the dual steps, with residual balancing. The variables are
clustered by spectral clustering of $|B| + |B|^\top$. Code: `robust.nodewise` (`preprocess`,
`dro_radius`, `spectral_prox`, `dro_admm`), `robust.variable_clustering` (`block_model`,
`spectral_clustering`, `kmeans`, `clustering_accuracy`), `robust.nodewise_baselines`
(`lasso_nodewise`, `sqrt_lasso_nodewise`, `lrr`, `correlation_kmeans`).

**Problems and claims** (`CLAIMS`; QUICK sizes in brackets). Data: the multi-factor block model
(noise variance $U(0, 0.5)$, global-factor weight $U(0, 0.5)$, factors per cluster uniform on
$1..|\text{cluster}|-1$), preprocessed (centred, unit-norm columns).

1. *Prox identity* (float64): random $30\times 30$ $M$, $\lambda \in \{0.1, 1, 5\}$:
   `spectral_prox` equals a NumPy water level found by bisection within $10^{-8}$, and
   $(M - P)/\lambda$ has nuclear norm $\le 1$ with $\langle M - P, P\rangle = \lambda\|P\|_2$.
2. *Solver* (float64): $n = 60$, $d = 30$, $K = 3$, data-driven radius, 4 [1] instances. ADMM
   (300 outer iterations) reaches the objective of an independent
   NumPy Condat-Vu primal-dual run (3000 [600] iterations) within $10^{-4}$ (relative), with
   primal residual $\le 10^{-4}$.
3. *Clustering*: $n = 120$, $d = 100$, $K = 5$ [$n = 80$, $d = 40$, $K = 2$], 16 [8] seeds.
   Mean DRO accuracy $\ge 0.80$; DRO beats k-means on correlation rows by $\ge 0.05$ in mean
   accuracy, and beats the best fixed-$\lambda$ Lasso nodewise (the grid point with the best mean
   accuracy, chosen with the labels: an oracle choice favouring the baseline) on $\ge 60\%$ of
   seeds (strictly; ties count as losses).
4. *Radius*: accuracy changes by $\le 0.05$ across $\alpha \in \{0.01, 0.05, 0.1, 0.2\}$ on
   $\ge 80\%$ of seeds; scaling $\sqrt\delta$ by 0.1 or 10 lowers the mean accuracy by $\ge 0.05$
   for at least one of them.

**Choices.** Objective, radius, prox and ADMM constants (rho0 = 1, mu = 5, tau = 2, tolerances
$10^{-5} d$ and $10^{-4}$) follow the released code. The released code solves the $B_1$
sub-problem (square-root loss plus penalty) by an adaptive Nesterov loop with restarts; we split
the residual off as $Z = G^{1/2}(I - B_1)$ so that every sub-problem is closed-form (a
two-block ADMM, fixed trip counts for jit/vmap). An earlier inner-gradient version stalled at
the kink of the square-root loss when $n < d$ (the paper's default $n = 250 < d = 500$) and
reported convergence at a suboptimal point; the split handles the kink by the shrink, and the
tests check the $n < d$ optimum against an independent NumPy Chambolle-Pock run. Clustering
uses 60 [40] outer iterations (the residuals at the end are reported). Spectral clustering takes
the eigenvectors of the $K$ largest eigenvalues (the code: top singular vectors) and 10 k-means++
restarts. Baselines (reported, no claims): Lasso nodewise, square-root Lasso nodewise, LRR
and k-means on correlation rows. The
Lasso grid is $\lambda/\lambda_{\max} \in \{0.2, 0.1, 0.05, 0.02, 0.01, 0.005\}$ (FISTA, 300
steps); square-root Lasso $\lambda/\lambda_{\max} \in \{0.4, 0.2, 0.1, 0.05, 0.025, 0.0125\}$
[first four] (Chambolle-Pock with averaged restarts, 300 [150] steps); LRR
$\lambda/\lambda_{\min} \in \{1.5, 3, 6, 12, 24, 48, 96\}$ [first four]
($\lambda_{\min} = 1/\|X^\top X\|_2$ for unit columns: below it $Z = 0$; two-block ADMM with
SVT, 200 [100] steps). All are clustered by the same spectral clustering and k-means keys, and
each penalised baseline is reported at its grid point with the best mean accuracy (the same
label-oracle rule as the Lasso). The solver reference is Condat-Vu (not projected
subgradient, which would need ~$10^8$
steps for $10^{-4}$): $B \leftarrow P_{\mathrm{diag}=0}(B - \tau(\nabla\ell(B) - W))$,
$W \leftarrow \Pi_{\|\cdot\|_*\le\sqrt\delta}(W + \sigma(I - 2B^+ + B))$ with its own bisection
$\ell_1$-ball projection.

**Measured** (key 0; FULL, QUICK in brackets). Claim 1: the prox equals the bisection water
level to 0.0 (same LAPACK SVD), optimality violated by $1.9\cdot10^{-12}$. Claim 2: ADMM
objective within $3.4\cdot10^{-13}$ [$1.6\cdot10^{-8}$, reference 600 steps] of the Condat-Vu
reference on 4 [1] instances ($\sqrt\delta \approx 0.28$), primal residual
$1.7\cdot10^{-11}$ [$1.5\cdot10^{-14}$]. Claim 3: data-driven $\sqrt\delta \approx 0.440$ [0.274]
(seed mean; $\alpha$ moves it by at most 1.7% [3.8%] relative on any seed: $R$ sums $d(d+1)/2$
chi-squares and concentrates, so claim 4's $\alpha$ part is a weak test). Mean DRO accuracy
**0.944** [0.956]; k-means on correlation rows 0.384 [0.563]; Lasso nodewise 0.804 / 0.851 /
0.894 / **0.929** / 0.860 / 0.616 over the grid [0.928 / 0.934 / **0.941** / 0.828 / 0.763 /
0.681]. DRO beats the best Lasso on **8/16 = 0.50** seeds (FAIL against 0.6; 3 ties, 5 losses;
mean +0.015) [3/8 = 0.375 with 4 ties and 1 loss; mean +0.016]: DRO has the higher mean
accuracy, but with a label-tuned $\lambda$ the Lasso is as good on about half the seeds at this
small scale, so the spec's 60% win rate does not reproduce (KNOWN_FAILING). The clustering ADMM
ends with primal and dual residuals $\le 2.3\cdot10^{-2}$ [$1.6\cdot10^{-2}$] (60 [40] outer
iterations, float32). Claim 4: accuracy varies by $\le 0.05$ across the four $\alpha$ on 16/16
[8/8] seeds (mean 0.942 / 0.944 / 0.944 / 0.946 [0.956 for all four]); $\sqrt\delta \times 0.1$
gives 0.894 [0.847] and $\times 10$ gives 0.367 [0.578] (drops 0.05 and 0.58 [0.11 and 0.38]).
Other baselines, mean accuracy at the best grid point (label oracle): square-root Lasso
**0.950** (0.692 / 0.906 / 0.947 / **0.950** / 0.830 / 0.564 over its grid) and LRR **0.981**
(0.313 / 0.357 / 0.512 / 0.812 / **0.981** / 0.512 / 0.288; ADMM relative residual
$\le 6\cdot10^{-7}$), against DRO 0.944 and the best Lasso 0.929 [QUICK: 0.944 and 0.913 on
the first four grid points, DRO 0.956, Lasso 0.941]. So with $\lambda$ chosen by the labels,
two of the spec's baselines beat DRO's data-driven radius at FULL size; LRR's accuracy swings
from 0.81 to 0.98 to 0.51 across three neighbouring grid points, so its 0.981 leans on that
oracle, which DRO (no tuning) does not use. (A first FULL run on the four-point QUICK grids
peaked at their edges, 0.950 at 0.05 and 0.812 at 12; the grids were extended.)
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.robust import nodewise as nw
from jaxopt_icml.robust import nodewise_baselines as nb
from jaxopt_icml.robust import variable_clustering as vc

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("K. Wang, X. Xu, X. Y. Zhou. *Variable Clustering via Distributionally Robust "
             "Nodewise Regression*. ICML 2026, arXiv 2212.07944.")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 16
    # claims 3, 4: clustering
    n: int = 120
    d: int = 100
    num_clusters: int = 5
    noise_range: tuple = (0.0, 0.5)
    rho_range: tuple = (0.0, 0.5)
    num_sims: int = 1000
    alpha: float = 0.05
    alphas: tuple = (0.01, 0.05, 0.1, 0.2)
    radius_scales: tuple = (0.1, 10.0)
    outer_steps: int = 60
    lasso_fracs: tuple = (0.2, 0.1, 0.05, 0.02, 0.01, 0.005)
    lasso_steps: int = 300
    # square-root Lasso: lambda / sqrt_lasso_lambda_max; LRR: lambda / lrr_lambda_min
    # (a first FULL run with the QUICK grids below peaked at their edges, 0.05 and 12: the
    # FULL grids extend them so each baseline's best point is interior)
    sqrt_fracs: tuple = (0.4, 0.2, 0.1, 0.05, 0.025, 0.0125)
    sqrt_steps: int = 300
    lrr_mults: tuple = (1.5, 3.0, 6.0, 12.0, 24.0, 48.0, 96.0)
    lrr_steps: int = 200
    kmeans_init: int = 10
    # claim 2: solver
    sol_n: int = 60
    sol_d: int = 30
    sol_clusters: int = 3
    sol_instances: int = 4
    sol_outer: int = 300
    ref_iters: int = 3000
    # claim 1: prox
    prox_dim: int = 30
    prox_lams: tuple = (0.1, 1.0, 5.0)


FULL = Config()
# QUICK (CI): n = 80, d = 40, K = 2 (clusters of ~20 variables as in FULL; with d = 40 and
# K = 4 the clusters of ~10 variables span up to 9 of 40 factors and every method drops to
# 0.77-0.82), 8 seeds, 40 outer iterations, 300 radius draws; the solver check on one instance
# with a 600-step reference (1e-6 relative after 500 in a float64 trial)
QUICK = Config(seeds=8, n=80, d=40, num_clusters=2, num_sims=300, outer_steps=40,
               sol_instances=1, ref_iters=600, sqrt_steps=150, lrr_steps=100,
               sqrt_fracs=(0.4, 0.2, 0.1, 0.05), lrr_mults=(1.5, 3.0, 6.0, 12.0))


def make_problem(cfg: Config, key) -> dict:
    """``cluster``: one block model per seed (vmapped, a :class:`BlockModel` with a leading seed
    axis) with the preprocessed data. The claim-2 instances are drawn by ``run`` (stream 7)."""
    return {"cluster": _data(cfg, runner.seed_keys(key, cfg.seeds, fast=True))}


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _data(cfg, keys):
    def one(k):
        k1, k2 = jax.random.split(k)
        m = vc.block_model(k1, cfg.n, cfg.d, cfg.num_clusters, noise_range=cfg.noise_range,
                           rho_range=cfg.rho_range)
        X = nw.preprocess(m.X)
        R = nw.radius_samples(X, k2, cfg.num_sims)
        sd = jnp.sqrt(jnp.quantile(R, 1.0 - jnp.asarray(cfg.alphas, R.dtype)) / cfg.n)
        return {"model": m, "X": X, "sqrt_delta": sd}

    return jax.vmap(one)(keys)


def make_methods(cfg: Config) -> dict:
    """The paper's ADMM (clustering budget) and the baselines (as callables)."""
    return {
        "DRO nodewise (ADMM)": nw.dro_admm(),
        "Lasso nodewise (FISTA grid)": functools.partial(nb.lasso_nodewise,
                                                         num_steps=cfg.lasso_steps),
        "Square-root Lasso nodewise (Chambolle-Pock grid)": functools.partial(
            nb.sqrt_lasso_nodewise, num_steps=cfg.sqrt_steps),
        "LRR (ADMM with SVT, grid)": functools.partial(nb.lrr, num_steps=cfg.lrr_steps),
        "k-means on correlation rows": functools.partial(nb.correlation_kmeans,
                                                         num_clusters=cfg.num_clusters),
    }


# --------------------------------------------------------------------------- claim 1


def np_water_level(s, lam, iters=200):
    """NumPy reference: ``theta`` with ``sum (s - theta)_+ = lam`` by bisection (0 if
    ``sum s <= lam``)."""
    if s.sum() <= lam:
        return 0.0
    lo, hi = 0.0, float(s.max())
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if np.maximum(s - mid, 0.0).sum() > lam:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _prox_check(cfg, seed):
    rng = np.random.default_rng(seed)
    out = {"err": [], "nuclear": [], "inner": []}
    prox = jax.jit(nw.spectral_prox)
    with jax.enable_x64(True):
        for lam in cfg.prox_lams:
            M = rng.standard_normal((cfg.prox_dim, cfg.prox_dim))
            P = np.asarray(prox(jnp.asarray(M), lam))
            U, s, Vt = np.linalg.svd(M)
            ref = (U * np.minimum(s, np_water_level(s, lam))) @ Vt
            out["err"].append(np.max(np.abs(P - ref)))
            D = (M - P) / lam
            out["nuclear"].append(np.linalg.svd(D, compute_uv=False).sum())
            out["inner"].append(abs(np.sum((M - P) * P) - lam * np.linalg.norm(P, 2)))
    return {k: np.asarray(v) for k, v in out.items()}


# --------------------------------------------------------------------------- claim 2


def np_nuclear_ball(W, r):
    U, s, Vt = np.linalg.svd(W)
    if s.sum() > r:
        s = np.maximum(s - np_water_level(s, r), 0.0)
    return (U * s) @ Vt


def np_objective(X, B, sqrt_delta):
    n, d = X.shape
    return (np.linalg.norm(X - X @ B) / np.sqrt(n)
            + sqrt_delta * np.linalg.norm(np.eye(d) - B, 2))


def condat_vu(X, sqrt_delta, iters):
    """Independent NumPy reference for the DRO program: Condat-Vu primal-dual iterations on
    ``min_{diag B = 0} l(B) + sqrt_delta ||I - B||_2`` (``l`` the square-root loss, smooth for
    ``n > d`` with curvature ``<= ||X||_2^2 / (sqrt(n) sigma_min(X) sqrt(d))``)."""
    n, d = X.shape
    sv = np.linalg.svd(X, compute_uv=False)
    lip = sv[0] ** 2 / (np.sqrt(n) * sv[-1] * np.sqrt(d))
    sigma = 1.0
    tau = 0.99 / (lip / 2 + sigma)
    eye = np.eye(d)
    mask = 1.0 - eye
    B, W = np.zeros((d, d)), np.zeros((d, d))
    for _ in range(iters):
        R = X - X @ B
        g = -X.T @ R / (np.sqrt(n) * np.linalg.norm(R))
        Bn = (B - tau * (g - W)) * mask
        W = np_nuclear_ball(W + sigma * (eye - (2 * Bn - B)), sqrt_delta)
        B = Bn
    return B


def _solver_check(cfg, key):
    alg = nw.dro_admm()
    with jax.enable_x64(True):
        @functools.partial(jax.jit, compiler_options=runner.fast_cpu_compile_options())
        def one(k):
            k1, k2 = jax.random.split(k)
            m = vc.block_model(k1, cfg.sol_n, cfg.sol_d, cfg.sol_clusters,
                               noise_range=cfg.noise_range, rho_range=cfg.rho_range,
                               dtype=jnp.float64)
            X = nw.preprocess(m.X)
            sd = nw.dro_radius(X, k2)
            prob = nw.nodewise_problem(X, sd)
            state, trace = base.run(alg, jnp.zeros((cfg.sol_d, cfg.sol_d)), prob, k2,
                                    cfg.sol_outer)
            return X, sd, state.B1, trace

        rows = []
        for i in range(cfg.sol_instances):
            X, sd, B, trace = one(jax.random.fold_in(key, i))
            X, sd, B = np.asarray(X), float(sd), np.asarray(B)
            Bref = condat_vu(X, sd, cfg.ref_iters)
            f, fref = np_objective(X, B, sd), np_objective(X, Bref, sd)
            rows.append({"f_admm": f, "f_ref": fref, "rel_gap": (f - fref) / fref,
                         "primal_residual": float(trace["primal_residual"][-1]),
                         "residual_trace": np.asarray(trace["primal_residual"]),
                         "dual_trace": np.asarray(trace["dual_residual"]),
                         "sqrt_delta": sd, "diag_max": float(np.max(np.abs(np.diag(B))))})
    return {k: np.asarray([r[k] for r in rows]) for k in rows[0]}


# --------------------------------------------------------------------------- claims 3, 4


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _dro_runs(cfg, X, sqrt_delta):
    """ADMM for every seed x radius (``sqrt_delta`` of shape ``(seeds, radii)``), vmapped."""
    alg = nw.dro_admm()
    d = cfg.d

    def one(X, sd):
        prob = nw.nodewise_problem(X, sd)
        state, trace = base.run(alg, jnp.zeros((d, d), X.dtype), prob, jax.random.PRNGKey(0),
                                cfg.outer_steps)
        return state.B1, trace["primal_residual"][-1], trace["dual_residual"][-1]

    return jax.vmap(lambda X, s: jax.vmap(lambda v: one(X, v))(s))(X, sqrt_delta)


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _spectral_acc(cfg, Bs, labels, keys):
    """Accuracy of spectral clustering for ``Bs`` of shape ``(seeds, m, d, d)`` (k-means keys:
    one per seed)."""

    def one(B, lab, k):
        pred = vc.spectral_clustering(B, cfg.num_clusters, k, num_init=cfg.kmeans_init)
        return vc.clustering_accuracy(lab, pred, cfg.num_clusters)

    return jax.vmap(lambda Bm, lab, k: jax.vmap(lambda B: one(B, lab, k))(Bm))(Bs, labels, keys)


def _per_seed_grid(X, mults, reference_lam, solve):
    """``solve(X_s, m * reference_lam(X_s))`` for every seed's data ``X_s`` and multiplier
    ``m`` (vmapped over both): a lambda grid relative to each data set's own scale."""
    mults = jnp.asarray(mults, X.dtype)

    def one(X):
        lam0 = reference_lam(X)
        return jax.vmap(lambda m: solve(X, m * lam0))(mults)

    return jax.vmap(one)(X)


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _lasso_grid(cfg, X):
    return _per_seed_grid(X, cfg.lasso_fracs, nb.lasso_lambda_max, lambda X, lam:
                          nb.lasso_nodewise(X, lam, num_steps=cfg.lasso_steps))


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _sqrt_lasso_grid(cfg, X):
    return _per_seed_grid(X, cfg.sqrt_fracs, nb.sqrt_lasso_lambda_max, lambda X, lam:
                          nb.sqrt_lasso_nodewise(X, lam, num_steps=cfg.sqrt_steps))


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _lrr_grid(cfg, X):
    def solve(X, lam):
        out = nb.lrr(X, lam, num_steps=cfg.lrr_steps)
        return out.Z, out.residual

    return _per_seed_grid(X, cfg.lrr_mults, nb.lrr_lambda_min, solve)


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _corr_acc(cfg, X, labels, keys):
    return jax.vmap(lambda X, lab, k: vc.clustering_accuracy(
        lab, nb.correlation_kmeans(X, cfg.num_clusters, k, num_init=cfg.kmeans_init),
        cfg.num_clusters))(X, labels, keys)


def _clustering(cfg, data, key):
    """Claims 3-4 on ``data`` (:func:`make_problem`'s ``cluster``); ``key``: the experiment's
    key, whose streams 12 (spectral clustering) and 13 (correlation k-means) seed k-means."""
    spectral_keys = runner.seed_keys(key, cfg.seeds, stream=12, fast=True)
    X, labels, sd = data["X"], data["model"].labels, data["sqrt_delta"]
    base_idx = list(cfg.alphas).index(cfg.alpha)
    scaled = sd[:, base_idx, None] * jnp.asarray(cfg.radius_scales, sd.dtype)[None, :]
    radii = jnp.concatenate([sd, scaled], axis=1)  # (seeds, alphas + scales)
    B, r, s = _dro_runs(cfg, X, radii)
    acc = np.asarray(_spectral_acc(cfg, B, labels, spectral_keys))
    # one LAPACK-heavy program at a time (see the brief's eigh deadlock note)
    # the Lasso grid and the spec's other baselines (square-root Lasso, LRR): same seeds, same
    # spectral clustering and k-means keys, one batched call (one compilation)
    Z, lrr_res = _lrr_grid(cfg, X)
    grids = jnp.concatenate([_lasso_grid(cfg, X), _sqrt_lasso_grid(cfg, X), Z], axis=1)
    base_acc = np.asarray(_spectral_acc(cfg, grids, labels, spectral_keys))
    nl, ns = len(cfg.lasso_fracs), len(cfg.sqrt_fracs)
    lasso, sqrt_lasso, lrr = base_acc[:, :nl], base_acc[:, nl:nl + ns], base_acc[:, nl + ns:]
    corr = np.asarray(_corr_acc(cfg, X, labels,
                                runner.seed_keys(key, cfg.seeds, stream=13, fast=True)))
    na = len(cfg.alphas)
    return {"dro": acc[:, base_idx], "dro_alphas": acc[:, :na], "dro_scaled": acc[:, na:],
            "lasso": lasso, "sqrt_lasso": sqrt_lasso, "lrr": lrr,
            "lrr_residual": np.asarray(lrr_res), "corr": corr, "sqrt_delta": np.asarray(sd),
            "primal_residual": np.asarray(r), "dual_residual": np.asarray(s),
            "num_factors": np.asarray(data["model"].num_factors)}


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """Claim 1 and 2 in float64 (NumPy references), claims 3-4 in float32: data and radii,
    then ADMM over seeds x radii, spectral clustering, the Lasso grid and correlation k-means
    (separate compiled programs, one batched LAPACK kernel each). ``shard`` is accepted and
    ignored (the seed axis is vmapped on one device)."""
    del shard, out_dir, resume
    seed = runner.seed_of(key)
    stages = ["prox", "solver", "clustering"]
    out = {"config": dataclasses.asdict(cfg)}
    for stage in runner.progress(stages, enabled=progress, desc=SLUG):
        if stage == "prox":
            out["prox"] = _prox_check(cfg, seed)
        elif stage == "solver":
            out["solver"] = _solver_check(cfg, runner.stream_key(key, 7, fast=True))
        else:
            out["cluster"] = _clustering(cfg, make_problem(cfg, key)["cluster"], key)
    return out


# --------------------------------------------------------------------------- metrics


def prox_max_err(r) -> float:
    return float(np.max(r["prox"]["err"]))


def prox_optimality_violation(r) -> float:
    """max over lam of max(nuclear norm of (M - P)/lam - 1, |<M-P, P> - lam ||P||_2|)."""
    p = r["prox"]
    return float(max(np.max(p["nuclear"] - 1.0), np.max(p["inner"])))


def solver_rel_gap(r) -> float:
    """max over instances of |f(ADMM) - f(reference)| / f(reference)."""
    return float(np.max(np.abs(r["solver"]["rel_gap"])))


def solver_primal_residual(r) -> float:
    return float(np.max(r["solver"]["primal_residual"]))


def dro_mean_accuracy(r) -> float:
    return float(np.mean(r["cluster"]["dro"]))


def dro_minus_corr(r) -> float:
    c = r["cluster"]
    return float(np.mean(c["dro"]) - np.mean(c["corr"]))


def best_lasso(r, key: str = "lasso") -> np.ndarray:
    """Accuracies of the grid point with the best mean accuracy (``key``: ``"lasso"``, or the
    other penalised baselines ``"sqrt_lasso"``, ``"lrr"``; the same oracle rule for all)."""
    acc = r["cluster"][key]
    return acc[:, int(np.argmax(acc.mean(0)))]


def dro_beats_lasso_rate(r) -> float:
    return theory.win_rate(r["cluster"]["dro"], best_lasso(r), lower_is_better=False).rate


def alpha_stable_rate(r) -> float:
    """Fraction of seeds whose accuracy range over the alphas is <= 0.05."""
    a = r["cluster"]["dro_alphas"]
    return float(np.mean(a.max(1) - a.min(1) <= 0.05 + 1e-9))


def scaled_radius_drop(r) -> float:
    """max over the scales (0.1, 10) of the mean accuracy drop from the data-driven radius."""
    c = r["cluster"]
    return float(np.max(np.mean(c["dro"]) - c["dro_scaled"].mean(0)))


CLAIMS = (
    theory.Claim("prox_matches_water_level", prox_max_err, "<=", 1e-8,
                 "spec claim 1: spectral_prox vs a NumPy bisection water level, 30x30, "
                 "lam in {0.1, 1, 5}, float64"),
    theory.Claim("prox_optimality", prox_optimality_violation, "<=", 1e-8,
                 "spec claim 1: ||(M-P)/lam||_* <= 1 and <M-P, P> = lam ||P||_2"),
    theory.Claim("admm_matches_reference", solver_rel_gap, "<=", 1e-4,
                 "spec claim 2: n=60, d=30, 300 outer iterations vs NumPy Condat-Vu"),
    theory.Claim("admm_primal_residual", solver_primal_residual, "<=", 1e-4,
                 "spec claim 2: ||B1 + B2 - I||_F after 300 outer iterations"),
    theory.Claim("dro_accuracy", dro_mean_accuracy, ">=", 0.80,
                 "spec claim 3: mean DRO clustering accuracy"),
    theory.Claim("dro_beats_corr_kmeans", dro_minus_corr, ">=", 0.05,
                 "spec claim 3: mean accuracy, DRO minus k-means on correlation rows"),
    theory.Claim("dro_beats_best_lasso", dro_beats_lasso_rate, ">=", 0.6,
                 "spec claim 3: fraction of seeds with DRO accuracy > the best fixed-lambda "
                 "Lasso nodewise (ties lose)"),
    theory.Claim("alpha_insensitive", alpha_stable_rate, ">=", 0.8,
                 "spec claim 4: accuracy range <= 0.05 over alpha in {0.01, 0.05, 0.1, 0.2}; "
                 "weak test: sqrt(delta) itself moves by only ~1-3% across these alphas (R "
                 "concentrates; summary: 'sqrt(delta) relative spread across alpha')"),
    theory.Claim("scaled_radius_degrades", scaled_radius_drop, ">=", 0.05,
                 "spec claim 4: mean accuracy drop for sqrt(delta) x 0.1 or x 10"),
)
KNOWN_FAILING = ("dro_beats_best_lasso",)
FULL_ONLY_FAILING = ()


def summarize(results) -> dict:
    c, s = results["cluster"], results["solver"]
    bl = best_lasso(results)
    out = {"prox max error": float(np.max(results["prox"]["err"])),
           "solver f(ADMM)": [float(v) for v in s["f_admm"]],
           "solver f(reference)": [float(v) for v in s["f_ref"]],
           "solver sqrt(delta)": [float(v) for v in s["sqrt_delta"]],
           "sqrt(delta) per alpha (seed mean)": [float(v) for v in c["sqrt_delta"].mean(0)],
           "sqrt(delta) relative spread across alpha (max over seeds)": float(np.max(
               np.ptp(c["sqrt_delta"], axis=1) / c["sqrt_delta"].mean(1))),
           "DRO accuracy per seed": [float(v) for v in c["dro"]],
           "DRO accuracy per alpha (mean)": [float(v) for v in c["dro_alphas"].mean(0)],
           "DRO accuracy per radius scale (mean)": [float(v) for v in c["dro_scaled"].mean(0)],
           "Lasso accuracy per lambda/lambda_max (mean)": [float(v) for v in
                                                           c["lasso"].mean(0)],
           "square-root Lasso accuracy per lambda/lambda_max (mean)": [
               float(v) for v in c["sqrt_lasso"].mean(0)],
           "LRR accuracy per lambda/lambda_min (mean)": [float(v) for v in c["lrr"].mean(0)],
           "LRR ADMM relative residual (max)": float(c["lrr_residual"].max()),
           "mean accuracy per method (penalised baselines at their best grid point)": {
               "DRO nodewise": float(c["dro"].mean()), "Lasso nodewise": float(bl.mean()),
               "square-root Lasso nodewise": float(best_lasso(results, "sqrt_lasso").mean()),
               "LRR": float(best_lasso(results, "lrr").mean()),
               "correlation k-means": float(c["corr"].mean())},
           "correlation k-means accuracy (mean)": float(c["corr"].mean()),
           "DRO minus best Lasso, mean accuracy": float(c["dro"].mean() - bl.mean()),
           "DRO vs best Lasso seeds (win, tie, loss)": [
               int(np.sum(c["dro"] > bl)), int(np.sum(c["dro"] == bl)),
               int(np.sum(c["dro"] < bl))],
           "clustering ADMM primal residual (max)": float(c["primal_residual"].max()),
           "clustering ADMM dual residual (max)": float(c["dual_residual"].max())}
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    """``accuracy``: horizontal box plots of the clustering accuracy over seeds for DRO, the
    baselines at their best grid point and DRO with a rescaled radius; ``admm_residuals``: the
    ADMM primal and dual residuals per outer iteration (seed median, 10-90% band)."""
    import matplotlib.pyplot as plt

    figs = {}
    c = results["cluster"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    best = int(np.argmax(c["lasso"].mean(0)))
    cols = [c["dro"], c["lasso"][:, best], c["corr"]]
    names = ["DRO (ADMM)", f"Lasso (lam={cfg.lasso_fracs[best]} lam_max)", "corr. k-means"]
    if "sqrt_lasso" in c:
        bs, bz = int(np.argmax(c["sqrt_lasso"].mean(0))), int(np.argmax(c["lrr"].mean(0)))
        cols += [c["sqrt_lasso"][:, bs], c["lrr"][:, bz]]
        names += [f"sqrt-Lasso ({cfg.sqrt_fracs[bs]} lam_max)",
                  f"LRR ({cfg.lrr_mults[bz]:g} lam_min)"]
    for j, sc in enumerate(cfg.radius_scales):
        cols.append(c["dro_scaled"][:, j])
        names.append(f"DRO, sqrt(delta) x {sc:g}")
    # horizontal boxes keep the long method names readable; the legend says what the box parts
    # are (one entry each, taken from the first box)
    bp = ax.boxplot(cols, orientation="horizontal")
    ax.set_yticks(range(1, len(names) + 1), names)
    ax.invert_yaxis()
    n_seeds = len(np.asarray(cols[0]))
    bp["medians"][0].set_label(f"median over {n_seeds} seeds")
    bp["boxes"][0].set_label("box: 25-75% of seeds")
    bp["whiskers"][0].set_label("whiskers: within 1.5 IQR")
    if any(len(f.get_xdata()) for f in bp["fliers"]):
        next(f for f in bp["fliers"] if len(f.get_xdata())).set_label("outlying seed")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7)
    runner.finish_axes(ax, xlabel="clustering accuracy (fraction of variables)",
                       ylabel="method",
                       title=f"block model n={cfg.n}, d={cfg.d}, K={cfg.num_clusters}", legend=None)
    figs["accuracy"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    s = results["solver"]
    ks = np.arange(1, s["residual_trace"].shape[1] + 1)
    runner.band_plot(ax, ks, np.maximum(s["residual_trace"], 1e-16), label="primal residual")
    runner.band_plot(ax, ks, np.maximum(s["dual_trace"], 1e-16), label="dual residual")
    runner.finish_axes(ax, xlabel="outer ADMM iteration", ylabel="residual (float64)",
                       title=f"n={cfg.sol_n}, d={cfg.sol_d}", legend=True)
    figs["admm_residuals"] = fig
    return figs
