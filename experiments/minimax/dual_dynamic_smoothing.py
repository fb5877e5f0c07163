r"""# Projection-free saddle-point methods by dual dynamic smoothing

*Projection-Free Algorithms for Minimax Problems* (K.-H. Giang-Tran, S. Shafiee, N. Ho-Nguyen;
ICML 2026, arXiv 2603.29870). Only the abstract was available: the method below is the spec's
inferred reading (Nesterov dual smoothing with a decreasing, horizon-free $\mu_k$).

## The method

`minimax.dual_dynamic_smoothing` solves $\min_{x\in X}\max_{y\in Y} f(x, y)$ with one step on
$y$ (tracking the maximiser of the smoothed $f(x_k, \cdot) - \frac{\mu_k}{2}\|\cdot - y_0\|^2$)
and then one step on $x$ at the NEW $y$ (alternating order, $y$ first), with
$\mu_k = \mu_0/(k+1)^{p}$:

$$d_k = \nabla_y f(x_k, y_k) - \mu_k (y_k - y_0),\quad
y_{k+1} = y_k + \delta_k(\mathrm{LMO}_Y(-d_k) - y_k)\ \text{or}\ P_Y(y_k + \tau d_k),$$
$$g_k = \nabla_x f(x_k, y_{k+1}),\quad
x_{k+1} = x_k + \gamma_k(\mathrm{LMO}_X(g_k) - x_k)\ \text{or}\ P_X(x_k - a g_k).$$

V1 = LMO on $x$ + projection on $y$, V2 = projection on $x$ + LMO on $y$, V3 = LMO on both
(chosen by which of `lmo_x`/`proj_x`, `lmo_y`/`proj_y` is given). Defaults
$\gamma_k = \delta_k = 2/(k+2)$, $\mu_0 = 1$, $p = 1/2$; running averages (uniform) for the
duality gap. Baselines: naive FW-GDA ($\mu = 0$), alternating projected GDA, projected
extragradient (mirror-prox), Smoothed-AGDA.

**Problems.** (1) Matrix game $\min_{x\in\Delta_{50}}\max_{y\in\Delta_{50}} x^\top A y$,
$A_{ij}\sim U[-1, 1]$, $x_0 = y_0 = $ barycentre; duality gap
$\max_j (A^\top \bar x)_j - \min_i (A \bar y)_i$ of the averages; game value from
`scipy.optimize.linprog`. (2) Robust classification, nonconvex in $x$, strongly concave in $y$:
$\min_{\|x\|_1\le 5}\max_{y\in\Delta_5}\sum_j y_j f_j(x) - 0.05\|y - \tfrac15\mathbf 1\|^2$,
$f_j(x) = \frac{1}{200}\sum_i \sigma(-b_i a_i^\top x)$ (sigmoid loss), $d = 50$, group $j$ has its
own feature shift and labelling vector; stationarity = Frank-Wolfe gap of
$\phi(x) = \max_y f(x, y)$ with the exact $y^*(x)$ (a simplex projection). (3) Robust matrix
completion on the nuclear ball, $X\in\mathbb R^{200\times200}$, $\|X\|_*\le 200$ (about half of
the target's nuclear norm, so the constraint is active): $f(X, y) = \sum_{j=1}^5 y_j
\frac{1}{2|\Omega_j|}\|P_{\Omega_j}(X - M)\|_F^2 - 0.05\|y - \tfrac15\mathbf 1\|^2$,
$M$ of rank 5, 20% of the entries observed in 5 groups; V1 (power-iteration LMO, 30
iterations) against projected GDA (full SVD projection, step $|\Omega_j|$).

**Claims** (`CLAIMS`; FULL = 16 seeds, QUICK = 8):

1. V3 on the matrix game, 20000 steps (QUICK 10000): gap $\le 0.02$ on every seed; slope of
   the seed-mean gap against $k$ on $[1000, 20000]$ $\le -0.25$;
   $|\bar x^\top A\bar y - v^*_{\text{linprog}}| \le 0.02$ on every seed.
2. Robust problem, V1 ($\tau = 1$) and V3, $\mu_0 = 0.1$: $\min_{k\le 5000}$ FW gap $\le 0.05$
   on every seed (QUICK: 1000 steps); added: $\le 5\%$ of the first iterate's gap; running
   twice as long leaves the first 5000 iterates and gaps bitwise unchanged (anytime: no horizon
   parameter anywhere).
3. Nuclear ball: one power-iteration LMO costs $\le 1/5$ of one SVD projection (the brief's
   measure), and a whole V1 step $\le 1/5$ of a projected-GDA step (median wall times, one
   instance, jitted); at equal wall clock (10 s per seed; QUICK 0.5 s) V1's primal objective
   $\max_y f(X, y)$ is $\le$ projected GDA's on $\ge 12/16$ seeds. Added: the same at a short
   budget (0.05 s). A budget is turned into step counts with the measured step times (both
   methods are run once for the longest budget and read off at each budget).
4. Smoothing matters: with $\mu = 0$ (naive FW-GDA, V3's other settings unchanged) the
   matrix-game gap stays $\ge 0.1$ on $\ge 75\%$ of the seeds. Added: V1 with a constant
   projection step ($\tau = 0.5$), where dynamic smoothing beats $\mu = 0$ on $\ge 75\%$ of the
   seeds.

**Timing setup.** OpenBLAS is pinned to one thread (`OPENBLAS_NUM_THREADS=1`, set at import
unless already set): its threaded 200x200 SVD is slower (9 ms vs 2.8 ms on an idle 2-core
machine) and collapses under shared cores (0.65 s), which would flatter the LMO. The power
iteration computes $G^\top G v$ as $(G v)^\top G$ (3x faster on CPU than `G.T @ (G @ v)`).

**Measured** (key 0, float32; FULL on a shared 2-core CPU, 347 s; timings vary by about
10% between runs).

* Claim 1: V3 gap mean 0.0068, max 0.0090 (QUICK 0.0133 at 10000 steps); slope $-0.56$; value
  error $\le 4.6\cdot10^{-4}$. Sweep over $p$ ($\mu_0 = 1$): $p = 0$ (fixed smoothing, a
  CG-RPGA-like fixed regulariser) stalls at mean gap 0.039 (smoothing bias), $p = 0.25, 0.5, 1$
  give 0.0080, 0.0068, 0.0080. Other variants (mean gap): V1 ($\tau = 0.5$) 0.0090, V2 0.0022;
  the projection baselines are far better on this game: alternating projected GDA
  $5.9\cdot10^{-5}$, projected EG $7.4\cdot10^{-5}$ (slope about $-1$).
* Claim 2: max over seeds of $\min_k$ FW gap $3.2\cdot10^{-4}$ (V1) and $6.8\cdot10^{-4}$ (V3)
  against a first-iterate gap of about 0.11 (relative: at most 0.0042); anytime differences
  exactly 0. Projection
  baselines with the same iterations: projected GDA $1.3\cdot10^{-7}$, Smoothed-AGDA
  $3.9\cdot10^{-7}$ (projection onto the l1 ball is cheap here, so this problem is about the
  FW gap, not cost).
* Claim 3: LMO 0.16 ms vs SVD projection 2.7 ms (ratio 0.060); V1 step 0.32 ms vs
  projected-GDA step 2.9 ms (ratio 0.11). At 0.05 s per seed V1 wins on 16/16 seeds (median
  objective 0.129 vs 0.170); the win fraction drops below one half at about 0.2 s (about 70
  projected-GDA steps); at 10 s (31665 V1 and 3467 projected-GDA steps) V1 loses on 16/16 seeds, but
  only by a median relative excess of about $2\cdot10^{-5}$: projected GDA converges linearly
  to the constrained optimum once the rank settles, Frank-Wolfe sublinearly.
* Claim 4: FW-GDA ($\mu = 0$) reaches mean gap 0.0080 (max 0.0096): 0 of 16 seeds stay
  $\ge 0.1$. With V1 and a constant step, $\mu = 0$ doubles the gap (0.018 vs 0.0090, 16/16
  seeds).

**Known failing** (`KNOWN_FAILING`):

* `fw_gda_mu0_stuck_fraction` (0.0): on the matrix game the unsmoothed alternating
  Frank-Wolfe with weights $2/(k+2)$ behaves like (alternating) fictitious play, which converges
  on zero-sum games; it is only about 17% behind the smoothed V3. The spec's expectation that it
  stalls at gap $\ge 0.1$ is not borne out (an earlier attempt measured the same: 0.0079 vs
  0.0070). Smoothing does matter where the $y$ step is a projected gradient step with a constant
  step (the added V1 claim) and the decay matters (fixed $\mu$ stalls).
* `equal_time_win_fraction_long` (0.0 at 10 s; 0.0 at QUICK's 0.5 s): see claim 3. At 200x200
  the SVD is only about 17x dearer than 30 power iterations, so projected GDA's linear rate wins
  every long race; V1 wins every short one (the added short-budget claim). The outcome depends on
  the machine's wall clock, so the claims test checks only its range.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.minimax import dual_smoothing as ds
from jaxopt_icml.minimax import lmo as lm
from jaxopt_icml.minimax import smoothing_baselines as sb

# Timing (claim 3) needs a fixed LAPACK thread count: OpenBLAS's threaded SVD of a 200x200
# matrix is slower than one thread even on an idle 2-core machine (9 ms vs 2.7 ms here), and
# catastrophically so when the cores are shared (0.65 s). JAX loads LAPACK (through scipy)
# lazily, at its first decomposition, so this takes effect unless something already did; `run`
# records which.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
_LAPACK_PRELOADED = "scipy.linalg" in sys.modules

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("K.-H. Giang-Tran, S. Shafiee, N. Ho-Nguyen. Projection-Free Algorithms for Minimax "
             "Problems. ICML 2026, arXiv 2603.29870.")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 16
    # (1) matrix game
    game_n: int = 50
    game_steps: int = 20000
    slope_start: int = 1000
    mu0: float = 1.0
    mu_power: float = 0.5
    mu_powers: tuple = (0.0, 0.25, 1.0)  # sweep (reported, not claimed)
    v1_tau: float = 0.5
    pgda_step: float = 0.1
    eg_step: float = 0.1
    # (2) robust nonconvex-strongly-concave
    rob_d: int = 50
    rob_groups: int = 5
    rob_per_group: int = 200
    rob_radius: float = 5.0
    rob_lam: float = 0.1
    rob_mu0: float = 0.1
    rob_tau: float = 1.0
    rob_steps: int = 5000
    rob_pgda_step: float = 1.0
    # (3) nuclear ball
    nuc_seeds: int = 16
    nuc_n: int = 200
    nuc_rank: int = 5
    nuc_groups: int = 5
    nuc_observed: float = 0.2
    nuc_radius: float = 200.0
    nuc_lam: float = 0.1
    nuc_power_iters: int = 30
    budgets: tuple = (0.05, 10.0)  # seconds per seed: (short, spec's equal wall clock)
    timing_reps: int = 30
    extras: bool = True  # baselines outside the claims (V2, projected GDA/EG, S-AGDA)


FULL = Config()
# QUICK (CI, <= 20 s with compilation): 8 seeds, 10000 game steps (slope on [1000, 10000]), no
# mu_power sweep and no extra baselines; the nuclear comparison on 4
# seeds with budgets 0.05 s and 0.5 s per seed (the spec's 10 s per seed would take minutes; the
# crossover measured in FULL is near 0.2 s, so 0.5 s is on the same side as 10 s on a machine up
# to about twice slower); the robust problem for 1000 steps (+1000 for the anytime check).
QUICK = Config(seeds=8, game_steps=10000, mu_powers=(), rob_steps=1000, nuc_seeds=4,
               budgets=(0.05, 0.5), timing_reps=9, extras=False)


_OPTS = runner.fast_cpu_compile_options()


# --------------------------------------------------------------------------- problems


class RobustSigmoid(struct.PyTreeNode):
    """``f(x, y) = sum_j y_j mean_i sigmoid(-b_ji a_ji^T x) - (lam/2)||y - 1/m||^2``."""

    a: jax.Array  # (m, n, d)
    b: jax.Array  # (m, n)
    lam: jax.Array
    radius: jax.Array

    def losses(self, x):
        return jnp.mean(jax.nn.sigmoid(-self.b * (self.a @ x)), axis=1)

    def f(self, x, y):
        m = y.shape[0]
        return y @ self.losses(x) - 0.5 * self.lam * jnp.sum((y - 1.0 / m) ** 2)

    def grads(self, x, y, key=None):
        del key
        return jax.grad(self.f, argnums=(0, 1))(x, y)

    def y_star(self, x):
        m = self.b.shape[0]
        return lm.project_simplex(1.0 / m + self.losses(x) / self.lam)

    def fw_gap(self, x):
        """FW gap of ``phi(x) = max_y f(x, y)`` on the l1 ball (exact ``y*``, exact LMO)."""
        g = jax.grad(self.f)(x, self.y_star(x))
        return jnp.vdot(g, x) + self.radius * jnp.max(jnp.abs(g))


class MatrixCompletion(struct.PyTreeNode):
    """``f(X, y) = sum_j y_j ||P_j(X - M)||^2 / (2|Omega_j|) - (lam/2)||y - 1/m||^2``."""

    M: jax.Array  # (n, n)
    W: jax.Array  # (m, n, n): group masks divided by the group sizes
    lam: jax.Array

    def losses(self, X):
        R = X - self.M
        m = self.W.shape[0]
        return 0.5 * (self.W.reshape(m, -1) @ (R * R).reshape(-1))  # a matvec: fast on CPU

    def f(self, X, y):
        m = y.shape[0]
        return y @ self.losses(X) - 0.5 * self.lam * jnp.sum((y - 1.0 / m) ** 2)

    def grads(self, X, y, key=None):
        del key
        m = y.shape[0]
        gX = (y @ self.W.reshape(m, -1)).reshape(X.shape) * (X - self.M)
        return gX, self.losses(X) - self.lam * (y - 1.0 / m)

    def primal(self, X):
        m = self.W.shape[0]
        return self.f(X, lm.project_simplex(1.0 / m + self.losses(X) / self.lam))


@functools.partial(jax.jit, static_argnums=(1,), compiler_options=_OPTS)
def _build(key, sizes):
    seeds, n_game, m, per, d, lam, radius = sizes
    kg, kr = jax.random.split(key)
    A = jax.random.uniform(kg, (seeds, n_game, n_game), minval=-1.0, maxval=1.0)

    def robust(k):
        k1, k2, k3, k4 = jax.random.split(k, 4)
        w = jax.random.normal(k1, (m, d))
        shift = 0.5 * jax.random.normal(k2, (m, 1, d))
        a = jax.random.normal(k3, (m, per, d)) + shift
        b = jnp.sign(jnp.einsum("mnd,md->mn", a, w) / np.sqrt(d)
                     + 0.5 * jax.random.normal(k4, (m, per)))
        return RobustSigmoid(a, b, jnp.float32(lam), jnp.float32(radius))

    return ds.MatrixGame(A), jax.vmap(robust)(runner.seed_keys(kr, seeds))


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4), compiler_options=_OPTS)
def _build_nuclear(keys, n, rank, groups, observed):
    def one(k):
        k1, k2, k3 = jax.random.split(k, 3)
        U, V = jax.random.normal(k1, (n, rank)), jax.random.normal(k2, (n, rank))
        grp = jax.random.randint(k3, (n, n), 0, int(round(groups / observed)))
        masks = (grp[None] == jnp.arange(groups)[:, None, None]).astype(jnp.float32)
        return U @ V.T / np.sqrt(rank), masks / jnp.sum(masks, axis=(1, 2), keepdims=True)

    return jax.vmap(one)(keys)


def make_problem(cfg: Config, key) -> dict:
    """Per-seed instances (leading seed axis): ``game`` (:class:`ds.MatrixGame`), ``robust``
    (:class:`RobustSigmoid`), ``nuclear`` (:class:`MatrixCompletion`)."""
    game, robust = _build(runner.stream_key(key, fast=True),
                          (cfg.seeds, cfg.game_n, cfg.rob_groups, cfg.rob_per_group, cfg.rob_d,
                           cfg.rob_lam, cfg.rob_radius))
    M, W = _build_nuclear(runner.seed_keys(key, cfg.nuc_seeds, stream=7, fast=True), cfg.nuc_n,
                          cfg.nuc_rank, cfg.nuc_groups, cfg.nuc_observed)
    lam = jnp.full((cfg.nuc_seeds,), cfg.nuc_lam, jnp.float32)
    return {"game": game, "robust": robust, "nuclear": MatrixCompletion(M, W, lam)}


def describe_problem(problem) -> dict:
    g, r, n = problem["game"], problem["robust"], problem["nuclear"]
    return {"game A": f"{tuple(g.A.shape)} U[-1,1]", "robust a": str(tuple(r.a.shape)),
            "robust radius": float(r.radius[0]), "robust lam": float(r.lam[0]),
            "nuclear M": str(tuple(n.M.shape)),
            "nuclear norm of M (seed 0)": float(jnp.sum(jnp.linalg.svd(
                n.M[0], compute_uv=False))),
            "observed entries per group (seed 0)": float(1.0 / n.W[0, 0].max())}


# --------------------------------------------------------------------------- methods


def make_methods(cfg: Config) -> dict:
    S, P = lm.simplex_lmo(), lm.simplex_projection()
    return {
        "V3 (LMO x, LMO y)": ds.dual_dynamic_smoothing(lmo_x=S, lmo_y=S, mu0=cfg.mu0,
                                                       mu_power=cfg.mu_power),
        "FW-GDA (mu = 0)": ds.fw_gda(lmo_x=S, lmo_y=S),
        "V1 (LMO x, proj y)": ds.dual_dynamic_smoothing(lmo_x=S, proj_y=P, mu0=cfg.mu0,
                                                        mu_power=cfg.mu_power,
                                                        step_y=cfg.v1_tau),
        "V2 (proj x, LMO y)": ds.dual_dynamic_smoothing(proj_x=P, lmo_y=S, mu0=cfg.mu0,
                                                        mu_power=cfg.mu_power,
                                                        step_x=ds.power_step(1.0, 0.5, 1.0)),
        "projected GDA": ds.projected_gda(cfg.pgda_step, cfg.pgda_step, proj_x=P, proj_y=P),
        "projected EG": sb.projected_extragradient(cfg.eg_step, proj_x=P, proj_y=P),
    }


def _grid(steps, start):
    return np.unique(np.concatenate([theory.geometric_grid(1, steps, 60), [start, steps]])) - 1


def _game_trace(step, state, game):
    return game.duality_gap(state.x_avg, state.y_avg)


@functools.partial(jax.jit, static_argnums=(0, 4), compiler_options=_OPTS)
def _game_program(kind, game, hp, keys, steps):
    """One variant over a batch of hyperparameters ``hp`` (leading axis) and seeds."""
    n = game.A.shape[-1]
    z0 = (jnp.full((n,), 1.0 / n), jnp.full((n,), 1.0 / n))
    S, P = lm.simplex_lmo(), lm.simplex_projection()

    def alg_of(h):
        if kind == "V3":
            return ds.dual_dynamic_smoothing(lmo_x=S, lmo_y=S, mu0=h[0], mu_power=h[1])
        if kind == "V1":
            return ds.dual_dynamic_smoothing(lmo_x=S, proj_y=P, mu0=h[0], mu_power=h[1],
                                             step_y=h[2])
        if kind == "V2":
            return ds.dual_dynamic_smoothing(proj_x=P, lmo_y=S, mu0=h[0], mu_power=h[1],
                                             step_x=ds.power_step(1.0, 0.5, 1.0))
        if kind == "PGDA":
            return ds.projected_gda(h[2], h[2], proj_x=P, proj_y=P)
        return sb.projected_extragradient(h[2], proj_x=P, proj_y=P)

    def one(h, g, k):
        state, gaps = base.run(alg_of(h), z0, g, k, steps, trace_fn=_game_trace)
        return gaps, g.value(state.x_avg, state.y_avg)

    per_hp = lambda h: jax.vmap(lambda g, k: one(h, g, k))(game, keys)
    return jax.vmap(per_hp)(hp)


def game_values(A) -> np.ndarray:
    """``min_x max_y x^T A y`` per seed by ``scipy.optimize.linprog`` (``min t`` subject to
    ``A^T x <= t``, ``x`` in the simplex)."""
    from scipy.optimize import linprog

    out = []
    for a in np.asarray(A, np.float64):
        n, m = a.shape
        c = np.r_[np.zeros(n), 1.0]
        res = linprog(c, A_ub=np.c_[a.T, -np.ones(m)], b_ub=np.zeros(m),
                      A_eq=np.r_[np.ones(n), 0.0][None], b_eq=[1.0],
                      bounds=[(0, None)] * n + [(None, None)], method="highs")
        out.append(res.fun)
    return np.array(out)


def _robust_algs(cfg, kind):
    L1, S, P = lm.l1_ball_lmo(cfg.rob_radius), lm.simplex_lmo(), lm.simplex_projection()
    if kind == "V1":
        return ds.dual_dynamic_smoothing(lmo_x=L1, proj_y=P, mu0=cfg.rob_mu0,
                                         mu_power=cfg.mu_power, step_y=cfg.rob_tau)
    if kind == "V3":
        return ds.dual_dynamic_smoothing(lmo_x=L1, lmo_y=S, mu0=cfg.rob_mu0,
                                         mu_power=cfg.mu_power)
    proj_x = lm.l1_ball_projection(cfg.rob_radius)
    if kind == "PGDA":
        return ds.projected_gda(cfg.rob_pgda_step, cfg.rob_tau, proj_x=proj_x, proj_y=P)
    return sb.smoothed_agda(cfg.rob_pgda_step, cfg.rob_tau, proj_x=proj_x, proj_y=P,
                            prox=1.0, beta=0.5)


def _rob_trace(step, state, prob):
    return prob.fw_gap(step.x[0]), step.x[0]


@functools.partial(jax.jit, static_argnums=(0, 1, 4), compiler_options=_OPTS)
def _robust_program(cfg, kind, probs, keys, steps):
    d, m = cfg.rob_d, cfg.rob_groups
    z0 = (jnp.zeros((d,)), jnp.full((m,), 1.0 / m))
    alg = _robust_algs(cfg, kind)

    def one(p, k):
        _, (gaps, xs) = base.run(alg, z0, p, k, steps, trace_fn=_rob_trace)
        if kind != "V1":
            return gaps, jnp.zeros(()), jnp.zeros(())
        # anytime: twice as long, same key -> the first `steps` iterates must be identical
        _, (gl, xl) = base.run(alg, z0, p, k, 2 * steps, trace_fn=_rob_trace)
        return gl, jnp.max(jnp.abs(gl[:steps] - gaps)), jnp.max(jnp.abs(xl[:steps] - xs))

    return jax.vmap(one)(probs, keys)


# --------------------------------------------------------------------------- nuclear ball


def _nuc_algs(cfg, step_x):
    R, P = cfg.nuc_radius, lm.simplex_projection()
    v1 = ds.dual_dynamic_smoothing(lmo_x=lm.nuclear_ball_lmo(R, num_iters=cfg.nuc_power_iters),
                                   proj_y=P, mu0=cfg.rob_mu0, mu_power=cfg.mu_power,
                                   step_y=1.0)
    pgda = ds.projected_gda(step_x, 1.0, proj_x=lm.nuclear_ball_projection(R), proj_y=P)
    return {"V1": v1, "PGDA": pgda}


def _median_time(fn, args, reps):
    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def _nuclear_times(cfg, prob0, step_x):
    """Median seconds of one nuclear LMO, one SVD projection, one V1 step and one projected
    GDA step (single instance, jitted, interleaved repetitions)."""
    n, m = cfg.nuc_n, cfg.nuc_groups
    G = prob0.grads(prob0.M * 0.5, jnp.full((m,), 1.0 / m))[0]
    lmo = jax.jit(lm.nuclear_ball_lmo(cfg.nuc_radius, num_iters=cfg.nuc_power_iters),
                  compiler_options=_OPTS)
    proj = jax.jit(lm.nuclear_ball_projection(cfg.nuc_radius), compiler_options=_OPTS)
    algs = _nuc_algs(cfg, step_x)
    z0 = (jnp.zeros((n, n)), jnp.full((m,), 1.0 / m))
    steps = {k: jax.jit(a.update, compiler_options=_OPTS) for k, a in algs.items()}
    states = {k: a.init(z0, runner.rbg_key(0)) for k, a in algs.items()}
    calls = {"lmo": (lmo, (G, runner.rbg_key(1))), "proj": (proj, (G,)),
             "V1": (steps["V1"], (states["V1"], prob0, runner.rbg_key(2))),
             "PGDA": (steps["PGDA"], (states["PGDA"], prob0, runner.rbg_key(3)))}
    out = {k: [] for k in calls}
    for _ in range(3):  # interleaved rounds against load drift
        for k, (f, a) in calls.items():
            out[k].append(_median_time(f, a, max(1, cfg.timing_reps // 3)))
    return {k: float(np.median(v)) for k, v in out.items()}


@functools.partial(jax.jit, static_argnums=(0, 1, 3, 4), compiler_options=_OPTS)
def _nuc_program(cfg, kind, probs, steps, step_x, keys):
    n, m = cfg.nuc_n, cfg.nuc_groups
    z0 = (jnp.zeros((n, n)), jnp.full((m,), 1.0 / m))
    alg = _nuc_algs(cfg, step_x)[kind]
    tr = lambda s, st, p: p.primal(s.x[0])
    return jax.vmap(lambda p, k: base.run(alg, z0, p, k, steps, trace_fn=tr)[1])(probs, keys)


# --------------------------------------------------------------------------- run


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """All runs in float32. Returns numpy arrays (seeds first): matrix-game gap traces on a
    geometric grid ``game_k`` per method, final averaged values and the linprog values; robust
    FW-gap traces (V1 run for twice the steps) and the anytime differences; nuclear timings,
    step counts and primal-objective traces."""
    del shard, out_dir, resume
    probs = make_problem(cfg, key)
    game = probs["game"]
    K = cfg.game_steps
    grid = _grid(K, cfg.slope_start)
    out = {"config": dataclasses.asdict(cfg), "game_k": grid + 1}
    mus = [(cfg.mu0, cfg.mu_power), (0.0, 0.0)] + [(cfg.mu0, p) for p in cfg.mu_powers]
    jobs = [("V3", [(a, b, 0.0) for a, b in mus]),
            ("V1", [(cfg.mu0, cfg.mu_power, cfg.v1_tau), (0.0, 0.0, cfg.v1_tau)])]
    if cfg.extras:
        jobs += [("V2", [(cfg.mu0, cfg.mu_power, 0.0)]), ("PGDA", [(0.0, 0.0, cfg.pgda_step)]),
                 ("EG", [(0.0, 0.0, cfg.eg_step)])]
    names = {"V3": ["V3", "FW-GDA (mu=0)"] + [f"V3 p={p:g}" for p in cfg.mu_powers],
             "V1": ["V1", "V1 mu=0"], "V2": ["V2"], "PGDA": ["projected GDA"],
             "EG": ["projected EG"]}
    gaps, values = {}, {}
    for i, (kind, hp) in enumerate(runner.progress(jobs, enabled=progress, desc=SLUG)):
        keys = runner.seed_keys(key, cfg.seeds, stream=i + 1, fast=True)
        g, v = _game_program(kind, game, jnp.asarray(hp, jnp.float32), keys, K)
        g, v = np.asarray(g)[:, :, grid], np.asarray(v)
        for j, name in enumerate(names[kind]):
            gaps[name], values[name] = g[j], v[j]
    out.update(game_gaps=gaps, game_values=values, game_linprog=game_values(game.A))
    # (2) robust problem
    rob = {}
    for i, kind in enumerate(("V1", "V3", "PGDA", "S-AGDA")[:4 if cfg.extras else 2]):
        keys = runner.seed_keys(key, cfg.seeds, stream=20 + i, fast=True)
        g, dg, dx = _robust_program(cfg, kind, probs["robust"], keys, cfg.rob_steps)
        rob[kind] = np.asarray(g)
        if kind == "V1":
            out["anytime_gap_diff"] = float(np.max(dg))
            out["anytime_x_diff"] = float(np.max(dx))
    out["robust_gaps"] = rob
    # (3) nuclear ball
    nuc = probs["nuclear"]
    step_x = float(1.0 / jnp.max(nuc.W[0]))  # |Omega_j|: 1/L of the largest group weight
    prob0 = jax.tree.map(lambda a: a[0], nuc)
    times = _nuclear_times(cfg, prob0, step_x)
    long = max(cfg.budgets)
    counts = {k: max(1, int(long / times[k])) for k in ("V1", "PGDA")}
    traces = {}
    for i, kind in enumerate(("V1", "PGDA")):
        keys = runner.seed_keys(key, cfg.nuc_seeds, stream=40 + i, fast=True)
        traces[kind] = np.asarray(_nuc_program(cfg, kind, nuc, counts[kind], step_x, keys))
    out.update(nuc_times=times, nuc_traces=traces, lapack_preloaded=_LAPACK_PRELOADED,
               openblas_threads=os.environ.get("OPENBLAS_NUM_THREADS"))
    return out


# --------------------------------------------------------------------------- metrics


def _final(results, name):
    return results["game_gaps"][name][:, -1]


def game_gap_max(results, name="V3") -> float:
    return float(np.max(_final(results, name)))


def game_gap_slope(results, name="V3") -> float:
    ks = results["game_k"]
    sel = ks >= results["config"]["slope_start"]
    return float(theory.fit_power_law(ks[sel], results["game_gaps"][name][:, sel]).slope)


def game_value_error(results, name="V3") -> float:
    return float(np.max(np.abs(results["game_values"][name] - results["game_linprog"])))


def fw_gda_stuck_fraction(results) -> float:
    """Fraction of seeds where the mu = 0 gap stays >= 0.1 at the end (spec claim 4)."""
    return float(np.mean(_final(results, "FW-GDA (mu=0)") >= 0.1))


def v1_smoothing_win_fraction(results) -> float:
    return float(np.mean(_final(results, "V1") < _final(results, "V1 mu=0")))


def robust_min_gap(results, kind="V1") -> float:
    """max over seeds of min_{k <= rob_steps} FW gap."""
    K = results["config"]["rob_steps"]
    return float(np.max(np.min(results["robust_gaps"][kind][:, :K], axis=1)))


def robust_min_gap_relative(results, kind="V1") -> float:
    """max over seeds of min_{k <= rob_steps} FW gap / FW gap after the first step."""
    K = results["config"]["rob_steps"]
    g = results["robust_gaps"][kind]
    return float(np.max(np.min(g[:, :K], axis=1) / g[:, 0]))


def anytime_diff(results) -> float:
    return max(results["anytime_gap_diff"], results["anytime_x_diff"])


def time_ratio(results, a="lmo", b="proj") -> float:
    t = results["nuc_times"]
    return t[a] / t[b]


def equal_time_objectives(results, budget):
    """Per-seed primal objectives of V1 and projected GDA after ``budget`` seconds each (steps =
    budget / measured time per step)."""
    t, tr = results["nuc_times"], results["nuc_traces"]
    out = []
    for kind in ("V1", "PGDA"):
        k = int(np.clip(budget / t[kind], 1, tr[kind].shape[1]))
        out.append(tr[kind][:, k - 1])
    return out


def equal_time_win_fraction(results, which=1, budget=None) -> float:
    budget = results["config"]["budgets"][which] if budget is None else budget
    v1, pg = equal_time_objectives(results, budget)
    return float(np.mean(v1 <= pg))


def crossover_budget(results) -> float:
    """The smallest budget on a geometric grid (20 per decade) from the short to the long one
    at which V1 wins on fewer than half of the seeds (inf if never)."""
    lo, hi = results["config"]["budgets"]
    for b in np.geomspace(lo, hi, int(20 * np.log10(hi / lo)) + 1):
        if equal_time_win_fraction(results, budget=b) < 0.5:
            return float(b)
    return float("inf")


CLAIMS = (
    theory.Claim("v3_game_gap_max", game_gap_max, "<=", 0.02,
                 "spec claim 1: duality gap of the averages after game_steps, max over seeds"),
    theory.Claim("v3_game_gap_slope", game_gap_slope, "<=", -0.25,
                 "spec claim 1: log-log slope of the seed-mean gap on [1000, game_steps]"),
    theory.Claim("v3_game_value_error", game_value_error, "<=", 0.02,
                 "spec claim 1: |x_avg^T A y_avg - linprog value|, max over seeds"),
    theory.Claim("robust_v1_min_fw_gap", robust_min_gap, "<=", 0.05,
                 "spec claim 2: max over seeds of min_{k<=5000} FW gap (V1; QUICK 1000 steps)"),
    theory.Claim("robust_v3_min_fw_gap", functools.partial(robust_min_gap, kind="V3"), "<=",
                 0.05, "spec claim 2: the same for V3"),
    theory.Claim("robust_v1_min_fw_gap_relative", robust_min_gap_relative, "<=", 0.05,
                 "added: the same relative to the first iterate's gap (about 0.11 here, so the "
                 "spec's absolute 0.05 is loose): a 20x reduction on every seed"),
    theory.Claim("anytime_prefix_max_diff", anytime_diff, "<=", 0.0,
                 "spec claim 2: running 2x longer leaves the prefix bitwise unchanged"),
    theory.Claim("nuclear_lmo_over_svd_time", time_ratio, "<=", 0.2,
                 "spec claim 3 (brief): one power-iteration LMO / one SVD projection, 200x200"),
    theory.Claim("v1_over_pgda_step_time", functools.partial(time_ratio, a="V1", b="PGDA"),
                 "<=", 0.2, "spec claim 3: time per iteration, V1 / projected GDA"),
    theory.Claim("equal_time_win_fraction_short", functools.partial(
        equal_time_win_fraction, which=0), ">=", 0.75,
                 "added: V1 objective <= projected GDA's at the short budget (0.05 s/seed)"),
    theory.Claim("equal_time_win_fraction_long", equal_time_win_fraction, ">=", 0.75,
                 "spec claim 3: the same at 10 s/seed (QUICK: 0.5 s/seed; both past the "
                 "crossover near 0.2 s)"),
    theory.Claim("fw_gda_mu0_stuck_fraction", fw_gda_stuck_fraction, ">=", 0.75,
                 "spec claim 4: naive FW-GDA (mu = 0) gap >= 0.1 on >= 12/16 seeds"),
    theory.Claim("v1_smoothing_win_fraction", v1_smoothing_win_fraction, ">=", 0.75,
                 "added: V1 (tau = 0.5) gap with dynamic mu < with mu = 0"),
)

KNOWN_FAILING = ("equal_time_win_fraction_long", "fw_gda_mu0_stuck_fraction")


def summarize(results) -> dict:
    out = {}
    for name, g in results["game_gaps"].items():
        out[f"game gap {name} (mean, max)"] = [float(g[:, -1].mean()), float(g[:, -1].max())]
    out["game value |linprog| mean"] = float(np.mean(np.abs(results["game_linprog"])))
    for kind, g in results["robust_gaps"].items():
        K = results["config"]["rob_steps"]
        out[f"robust {kind} min_k FW gap (mean, max)"] = [
            float(np.min(g[:, :K], 1).mean()), float(np.min(g[:, :K], 1).max())]
    out["robust initial FW gap (mean)"] = float(results["robust_gaps"]["V1"][:, 0].mean())
    out["nuclear times (ms)"] = {k: 1e3 * v for k, v in results["nuc_times"].items()}
    for b in results["config"]["budgets"]:
        v1, pg = equal_time_objectives(results, b)
        out[f"equal time {b:g}s: V1, PGDA objective (median)"] = [float(np.median(v1)),
                                                                 float(np.median(pg))]
        out[f"equal time {b:g}s: median relative excess of V1 over PGDA"] = float(
            np.median((v1 - pg) / np.abs(pg)))
    out["equal time crossover budget (s)"] = crossover_budget(results)
    out["equal time steps at the long budget (V1, PGDA)"] = [
        int(max(results["config"]["budgets"]) / results["nuc_times"][k]) for k in ("V1", "PGDA")]
    out["OPENBLAS_NUM_THREADS / LAPACK loaded before import"] = [
        results.get("openblas_threads"), results.get("lapack_preloaded")]
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    figs = {}
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ks = results["game_k"]
    for name, g in results["game_gaps"].items():
        runner.band_plot(ax, ks, np.maximum(g, 1e-8), label=name)
    runner.finish_axes(ax, xlabel="iteration k", ylabel="duality gap of the averages",
                       title="matrix game 50x50", legend=7)
    figs["matrix_game"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for kind, g in results["robust_gaps"].items():
        best = np.minimum.accumulate(np.maximum(g, 1e-10), axis=1)
        runner.band_plot(ax, np.arange(1, g.shape[1] + 1), best, label=kind)
    runner.finish_axes(ax, xlabel="iteration k", ylabel="min_{i<=k} FW gap",
                       title="robust sigmoid loss (nonconvex-strongly-concave)", legend=True)
    figs["robust"] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    t = results["nuc_times"]
    for kind, tr in results["nuc_traces"].items():
        secs = t[kind] * np.arange(1, tr.shape[1] + 1)
        ref = np.min([x.min(1) for x in results["nuc_traces"].values()], axis=0)
        runner.band_plot(ax, secs, np.maximum(tr - ref[:, None], 1e-9), label=kind)
    runner.finish_axes(ax, xlabel="estimated wall clock per seed (s)",
                       ylabel="primal objective - best seen", title="nuclear ball 200x200",
                       legend=True)
    figs["nuclear"] = fig
    return figs
