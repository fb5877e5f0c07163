r"""# FAB: Push-Pull over time-varying digraphs and first-order distributed bilevel optimization

*Yaoshuai Ma, Xiao Wang, Wei Yao, Jin Zhang, "FAB: A First-Order AB-based Gradient Algorithm for
Distributed Bilevel Optimization over Time-Varying Directed Graphs", ICML 2026
(arXiv:2605.06328).*

**Networks** (`jaxopt_icml.problems.graphs.time_varying_digraphs`). $n = 8$ agents; step $k$
uses the directed ring $i \to i+1$ plus 4 random extra directed edges (a new draw for each of
the `period` graphs, then repeated cyclically), uniform weights
$R_{ij} = 1/(d^{\rm in}_i + 1)$ (row-stochastic pull) and $C_{ij} = 1/(d^{\rm out}_j + 1)$
(column-stochastic push). Every graph is strongly connected and unbalanced.

## Methods

Push-Pull (AB), rows of $X$ = agents:
$$X_{k+1} = R_k (X_k - \alpha Y_k),\qquad Y_{k+1} = C_k Y_k + \nabla F(X_{k+1}) -
\nabla F(X_k),\qquad Y_0 = \nabla F(X_0).$$
Baselines: row-only gradient tracking ($R_k$ also for $Y$) and distributed gradient descent
$X_{k+1} = R_k X_k - \alpha\nabla F(X_k)$.

FAB: Push-Pull on the value-function penalty
$\min_{x,y}\max_z \sum_i f_i(x,y) + \gamma\,(g_i(x,y) - g_i(x,z))$, one tracker per block,
$h^x = \nabla_x f + \gamma(\nabla_x g(x,y) - \nabla_x g(x,z))$,
$h^y = \nabla_y f/\gamma + \nabla_y g(x,y)$, $h^z = \nabla_y g(x,z)$, steps
$(\alpha, \beta_y, \beta_z)$ (`jaxopt_icml.distributed.push_pull_bilevel.fab`). Baselines:
FAB with row-only tracking, and the centralized penalty method (FAB on the complete graph,
$R = C = \mathbf 1\mathbf 1^\top/n$).

## Problems and claims (spec `61_push_pull_bilevel.md`)

1. **Exactness** (float64): $f_i(x) = \frac{a_i}2\|x - b_i\|^2$, $a_i\sim U(0.5, 3)$,
   $b_i\sim N(0, I_5)$, $\alpha = 0.05$, 3000 iterations. Push-Pull
   $\max_i\|x_i - x^\star\| \le 10^{-6}$ ($x^\star = \sum a_ib_i/\sum a_i$) on every seed, while
   row-only tracking and DGD stay $\ge 0.1$ on every seed.
2. **Nonconvex rate** (float64): robust regression with the Cauchy loss
   $f_i(x) = \frac1m\sum_r \log(1 + (a_r^\top x - b_r)^2)$, $d = 20$, $m = 20$ rows per agent
   (20% of the responses are gross outliers), Push-Pull with $\alpha = 0.02$. The seed mean
   of $\min_{k\le K}\big(\|\nabla F(\bar x_k)\|^2 + \frac1n\sum_i\|x_{i,k} - \bar x_k\|^2\big)$
   has least-squares log-log slope $\le -0.8$ over $K\in[100, 3000]$.
3. **Bilevel** (float64): ridge-hyperparameter tuning. Agent $i$ holds $m = 20$ training and 50
   validation rows, $d = 10$; $g_i(x, y) = \frac1{2m}\|A_iy - b_i\|^2 + \frac{e^x}2\|y\|^2$,
   $f_i(x, y) = \frac1{2m}\|A^{\rm val}_iy - b^{\rm val}_i\|^2$. $x^\star$ = minimiser of the
   centralized $F(x) = \frac1n\sum_i f_i(x, y^\star(x))$ on a 1-D grid (closed-form
   $y^\star(x)$). FAB with $\gamma = 100$, 5000 iterations: $|\bar x - x^\star|\le 0.1$ and
   $\max_i|x_i - \bar x| \le 10^{-3}$ on every seed.
4. **Penalty bias**: the seed-mean final $|\bar x - x^\star|$ is smaller with $\gamma = 100$
   than with $\gamma = 10$.

**Choices.** The spec's $g_i$ has no $1/m$; with it the problem is the same up to the shift
$x \to x + \log m$ of the hyperparameter. The ridge data are built so that every seed has an
interior optimum $x^\star$: ill-conditioned features (column scales geometric from 1 to 0.05,
times an agent scale $s_i\sim U(0.5, 1.5)$), heterogeneous agents (agent $i$'s true model is
$w + 0.5\,\xi_i/\sqrt d$), noise 1, and 50 validation rows per agent. With isotropic features
and 20 validation rows (a first design), about a quarter of the seeds had no interior
minimiser (validation loss decreasing as $e^x\to 0$), which makes claim 3 ill-posed; over 40
seeds of the final design none did. FAB steps $\alpha = 0.5$, $\beta_y = \beta_z = 0.3$ for every
penalty (the $y$ direction is normalised by $\gamma$). The graphs are periodic with
`period` = 20 random draws. The single-level runs and FAB run in float64 in one compiled
`lax.scan` (all methods side by side), vmapped over seeds; the data are drawn with NumPy.

**Claim 2 is weak evidence.** The Cauchy-loss regression is nonconvex globally, but Push-Pull
from $x_0 = 0$ enters a region where $F$ is locally strongly convex and then converges
linearly (best-so-far measure $\approx 0.12$ at $K = 100$, $\approx 4\times10^{-28}$ at
$K = 3000$), so the fitted slope ($-14.9$) is far below $-0.8$: it confirms *at least* the
$O(1/K)$ rate, not its tightness.

## Measured (key 0)

FULL (8 seeds): Push-Pull $\max_i\|x_i - x^\star\|\le 2.3\times10^{-15}$; row-only tracking
0.19-0.47 and DGD 0.35-0.52 (spec's NumPy probe: 0.16-0.35 and 0.55-0.62); nonconvex slope
$-14.95$; FAB $|\bar x - x^\star|$ mean / max 0.0072 / 0.030 at $\gamma = 100$ and 0.058 / 0.16
at $\gamma = 10$ (the $O(1/\gamma)$ bias), agents within $6.2\times10^{-5}$; the centralized
penalty method (complete graph) 0.0071 / 0.029, i.e. FAB matches it, while row-only FAB is
biased, 0.30 / 0.58. QUICK (3 seeds): the same claims pass with 0.017 (FAB, $\gamma = 100$) and
$\gamma = 10 \to 100$ error reduction 0.050. Every claim passes in QUICK and FULL; the
thresholds are the spec's.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.distributed.push_pull_bilevel import (
    BilevelPoint,
    distributed_gradient_descent,
    fab,
    push_pull,
)
from jaxopt_icml.problems.graphs import complete_graph, time_varying_digraphs

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("Yaoshuai Ma, Xiao Wang, Wei Yao, Jin Zhang, *FAB: A First-Order AB-based Gradient "
             "Algorithm for Distributed Bilevel Optimization over Time-Varying Directed Graphs*, "
             "ICML 2026, arXiv:2605.06328.")


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes and settings (spec's "Claims to check"); ``seeds`` is vmapped."""

    seeds: int = 8
    num_agents: int = 8
    period: int = 20
    extra_edges: int = 4
    # claim 1
    quad_dim: int = 5
    quad_lr: float = 0.05
    quad_steps: int = 3000
    # claim 2
    robust_dim: int = 20
    robust_rows: int = 20
    robust_outliers: float = 0.2
    robust_lr: float = 0.02
    robust_steps: int = 3000
    rate_start: int = 100
    # claims 3-4
    ridge_dim: int = 10
    ridge_rows: int = 20
    ridge_noise: float = 1.0
    ridge_shift: float = 0.5
    ridge_signal: float = 1.0
    ridge_val_rows: int = 50
    ridge_decay: float = 0.05
    fab_alpha: float = 0.5
    fab_beta_y: float = 0.3
    fab_beta_z: float = 0.3
    penalties: tuple = (10.0, 100.0)
    fab_steps: int = 5000
    grid: tuple = (-10.0, 6.0, 3201)
    # the bilevel baselines (row-only FAB, centralized penalty): FULL only, to keep QUICK fast
    extras: bool = True


FULL = Config()
QUICK = Config(seeds=3, extras=False)


# --------------------------------------------------------------------------- oracles


class LocalQuadratics(NamedTuple):
    """Agent ``i``: :math:`f_i(x) = \\frac{a_i}2\\|x - b_i\\|^2` (leaves: leading agent axis)."""

    a: jax.Array
    b: jax.Array

    def grad(self, x, key):
        del key
        return self.a * (x - self.b)

    def minimizer(self):
        return jnp.sum(self.a * self.b, -2) / jnp.sum(self.a, -2)


class CauchyRegression(NamedTuple):
    """Agent ``i``: :math:`f_i(x) = \\frac1m\\sum_r\\log(1 + (a_r^\\top x - b_r)^2)`."""

    features: jax.Array
    targets: jax.Array

    def loss(self, x):
        r = self.features @ x - self.targets
        return jnp.mean(jnp.log1p(r * r))

    def grad(self, x, key):
        del key
        return jax.grad(self.loss)(x)


class RidgeTuning(NamedTuple):
    """Agent ``i``: :math:`g_i(x, y) = \\frac1{2m}\\|Ay - b\\|^2 + \\frac{e^x}2\\|y\\|^2`,
    :math:`f_i(x, y) = \\frac1{2m}\\|A^{\\rm val}y - b^{\\rm val}\\|^2` (``x`` a scalar)."""

    train_x: jax.Array
    train_y: jax.Array
    val_x: jax.Array
    val_y: jax.Array

    def f_grads(self, x, y, key):
        del key
        r = self.val_x @ y - self.val_y
        return jnp.zeros_like(x), self.val_x.T @ r / r.shape[-1]

    def g_grads(self, x, y, key):
        del key
        r = self.train_x @ y - self.train_y
        reg = jnp.exp(x)
        return 0.5 * reg * jnp.sum(y * y), self.train_x.T @ r / r.shape[-1] + reg * y


def _rng(key) -> np.random.Generator:
    """A NumPy generator from a JAX key (raw or typed), a ``SeedSequence`` or int seed
    material."""
    if isinstance(key, jax.Array):
        raw = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        key = np.asarray(raw).astype(np.uint64).tolist()
    return np.random.default_rng(key)


def make_problem(cfg: Config, key) -> dict:
    """One seed's problems, drawn with NumPy on the host (no compilation): ``{"graph",
    "quadratics", "robust", "ridge"}``; oracle leaves have a leading agent axis. ``key``: a
    JAX key, a ``numpy.random.SeedSequence`` (``runner.seed_sequence``) or int seed material.
    Arrays are float64 NumPy (the run is in float64)."""
    rng = _rng(key)
    n = cfg.num_agents
    graph = time_varying_digraphs(rng, n, cfg.period, extra_edges=cfg.extra_edges,
                                  dtype=np.float64)
    graph = graph.replace(row=np.asarray(graph.row), col=np.asarray(graph.col))
    quad = LocalQuadratics(rng.uniform(0.5, 3.0, (n, 1)), rng.normal(size=(n, cfg.quad_dim)))
    d, m = cfg.robust_dim, cfg.robust_rows
    feats = rng.normal(size=(n, m, d))
    truth = rng.normal(size=d)
    outlier = rng.random((n, m)) < cfg.robust_outliers
    targets = feats @ truth + 0.1 * rng.normal(size=(n, m)) + np.where(outlier, 20.0, 0.0)
    return {"graph": graph, "quadratics": quad, "robust": CauchyRegression(feats, targets),
            "ridge": _ridge_data(cfg, rng)}


def _ridge_data(cfg: Config, rng) -> RidgeTuning:
    n, d, m = cfg.num_agents, cfg.ridge_dim, cfg.ridge_rows
    w = cfg.ridge_signal * rng.normal(size=d) / np.sqrt(d)
    local_w = w + cfg.ridge_shift * rng.normal(size=(n, d)) / np.sqrt(d)
    scale = rng.uniform(0.5, 1.5, (n, 1, 1))
    spectrum = np.geomspace(1.0, cfg.ridge_decay, d)  # ill-conditioned features
    train_x = scale * spectrum * rng.normal(size=(n, m, d))
    val_x = scale * spectrum * rng.normal(size=(n, cfg.ridge_val_rows, d))
    train_y = np.einsum("nmd,nd->nm", train_x, local_w) + cfg.ridge_noise * rng.normal(
        size=(n, m))
    val_y = np.einsum("nmd,nd->nm", val_x, local_w) + cfg.ridge_noise * rng.normal(
        size=(n, cfg.ridge_val_rows))
    return RidgeTuning(train_x, train_y, val_x, val_y)


def describe_problem(problem: dict) -> dict:
    g = problem["graph"]
    return {"agents": g.num_nodes, "graph period": g.period,
            "edges per step (incl. ring)": int(g.adjacency()[0].sum()),
            "claim-1 dim": problem["quadratics"].b.shape[-1],
            "claim-2 dim": problem["robust"].features.shape[-1],
            "claim-3 dim": problem["ridge"].train_x.shape[-1]}


# --------------------------------------------------------------------------- closed forms


def ridge_solution(data: RidgeTuning, x):
    """The centralized lower-level solution :math:`y^\\star(x)` (NumPy float64)."""
    a = np.asarray(data.train_x, np.float64)
    b = np.asarray(data.train_y, np.float64)
    n, m, d = a.shape
    gram = np.einsum("nmd,nme->de", a, a) / (n * m)
    rhs = np.einsum("nmd,nm->d", a, b) / (n * m)
    return np.linalg.solve(gram + np.exp(x) * np.eye(d), rhs)


def ridge_upper(data: RidgeTuning, x) -> float:
    """:math:`F(x) = \\frac1n\\sum_i f_i(x, y^\\star(x))` (NumPy float64)."""
    y = ridge_solution(data, x)
    a = np.asarray(data.val_x, np.float64)
    r = a @ y - np.asarray(data.val_y, np.float64)
    return float(0.5 * np.mean(np.sum(r * r, -1) / r.shape[-1]))


def ridge_optimum(data: RidgeTuning, grid) -> float:
    """:math:`x^\\star`: the grid minimiser of :math:`F`, refined by a parabola through the
    best grid point and its neighbours."""
    xs = np.linspace(*grid[:2], int(grid[2]))
    vals = np.array([ridge_upper(data, x) for x in xs])
    j = int(np.argmin(vals))
    if j in (0, len(xs) - 1):  # no interior minimum on the grid: report the end point
        return float(xs[j])
    y0, y1, y2 = vals[j - 1:j + 2]
    h = xs[1] - xs[0]
    den = y0 - 2 * y1 + y2
    return float(xs[j] + (0.5 * h * (y0 - y2) / den if den > 0 else 0.0))


# --------------------------------------------------------------------------- methods


def make_methods(cfg: Config, graph=None) -> dict:
    """The compared methods for one graph (default: the graph of seed 0)."""
    if graph is None:
        graph = make_problem(cfg, 0)["graph"]
    n = cfg.num_agents
    out = {
        "Push-Pull": push_pull(cfg.quad_lr, graph=graph, num_workers=n),
        "row-only tracking": push_pull(cfg.quad_lr, graph=graph, num_workers=n,
                                       tracker_mixing="row"),
        "DGD": distributed_gradient_descent(cfg.quad_lr, graph=graph, num_workers=n),
    }
    steps = (cfg.fab_alpha, cfg.fab_beta_y, cfg.fab_beta_z)
    for gamma in cfg.penalties:
        out[f"FAB gamma={gamma:g}"] = fab(*steps, gamma, graph=graph, num_workers=n)
    if not cfg.extras:
        return out
    gamma = cfg.penalties[-1]
    out[f"FAB row-only gamma={gamma:g}"] = fab(*steps, gamma, graph=graph, num_workers=n,
                                               tracker_mixing="row")
    out[f"centralized penalty gamma={gamma:g}"] = fab(
        *steps, gamma, graph=complete_graph(n, dtype=graph.row.dtype), num_workers=n)
    return out


# --------------------------------------------------------------------------- runs


def _agent_error(step, state, oracle):
    del step
    err = state.x - oracle.minimizer()[None]
    return jnp.max(jnp.linalg.norm(err, axis=-1))


def _stationarity(step, state, oracle):
    """``||grad F(xbar)||^2 + mean_i ||x_i - xbar||^2``, exact (full local gradients)."""
    xbar = jnp.mean(state.x, 0)
    grad = jnp.mean(jax.vmap(lambda o: o.grad(xbar, None))(oracle), 0)
    return jnp.sum(grad * grad) + jnp.mean(jnp.sum((state.x - xbar[None]) ** 2, -1))


def _upper_trace(point, state, oracle):
    del oracle
    x = state.point[0]
    return {"xbar": point.x, "spread": jnp.max(jnp.abs(x - jnp.mean(x)))}


SINGLE_LEVEL = ("Push-Pull", "row-only tracking", "DGD")


def _together(algs: dict) -> base.OracleAlgorithm:
    """Every method side by side in one ``lax.scan`` (one compiled loop): ``x0``, the oracle
    and the state are dicts keyed like ``algs``; each method gets its own key."""

    def init(x0, key):
        return {n: a.init(x0[n], jax.random.fold_in(key, i)) for i, (n, a) in
                enumerate(algs.items())}

    def update(state, oracle, key):
        steps, new = {}, {}
        for i, (n, a) in enumerate(algs.items()):
            steps[n], new[n] = a.update(state[n], oracle[n], jax.random.fold_in(key, i))
        calls = sum(s.info["oracle_calls"] for s in steps.values())
        return base.Step({n: s.x for n, s in steps.items()}, {"oracle_calls": calls}), new

    return base.OracleAlgorithm(init, update)


def _one_seed(cfg: Config, prob: dict, key):
    """All methods of all claims on one seed's problems (float64), one scan of
    ``max(quad_steps, robust_steps, fab_steps)`` steps."""
    methods = make_methods(cfg, prob["graph"])
    algs, x0, oracles = {}, {}, {}
    for name in SINGLE_LEVEL:
        algs[f"quad/{name}"], x0[f"quad/{name}"] = methods[name], jnp.zeros(cfg.quad_dim)
        oracles[f"quad/{name}"] = prob["quadratics"]
    algs["robust"] = push_pull(cfg.robust_lr, graph=prob["graph"], num_workers=cfg.num_agents)
    x0["robust"], oracles["robust"] = jnp.zeros(cfg.robust_dim), prob["robust"]
    for name, alg in methods.items():
        if name not in SINGLE_LEVEL:
            algs[name], oracles[name] = alg, prob["ridge"]
            x0[name] = BilevelPoint(jnp.zeros(()), jnp.zeros(cfg.ridge_dim))

    def trace_fn(step, state, oracle):
        out = {n: _agent_error(step, state[n], oracle[n]) for n in algs if n.startswith("quad/")}
        out["robust/stationarity"] = _stationarity(step, state["robust"], oracle["robust"])
        for n in algs:
            if n not in out and n != "robust":
                out[n] = _upper_trace(step.x[n], state[n], oracle[n])
        return out

    num_steps = max(cfg.quad_steps, cfg.robust_steps, cfg.fab_steps)
    _, out = base.run(_together(algs), x0, oracles, jax.random.fold_in(key, 1), num_steps,
                      trace_fn=trace_fn)
    for n in list(out):
        if n.startswith("quad/"):
            out[n] = out[n][:cfg.quad_steps]
    out["robust/stationarity"] = out["robust/stationarity"][:cfg.robust_steps]
    return out


@functools.lru_cache(maxsize=8)
def _program(cfg: Config):
    return runner.seeded_program(jax.vmap(functools.partial(_one_seed, cfg)), (0, 0))


def run(cfg: Config, key: jax.Array, *, shard: bool = False, progress: bool = False,
        out_dir=None, resume: bool = False) -> dict:
    """All claims over ``cfg.seeds`` seeds as one compiled program in float64 (every method
    side by side in one ``lax.scan``, vmapped over seeds). ``shard``, ``progress``, ``out_dir``
    and ``resume`` are accepted for the CLI (the run takes seconds; nothing to checkpoint).

    Returns NumPy arrays with a leading seed axis: ``quad/<method>`` (seeds, quad_steps) =
    :math:`\\max_i\\|x_i - x^\\star\\|`, ``robust/stationarity`` (seeds, robust_steps), and
    per bilevel method ``{"xbar", "spread"}`` (seeds, fab_steps), plus ``x_star`` (seeds,)."""
    del shard, progress, out_dir, resume
    with jax.enable_x64(True):
        probs = [make_problem(cfg, runner.seed_sequence(key, 61, i)) for i in range(cfg.seeds)]
        stacked = jax.tree.map(lambda *a: np.stack(a), *probs)
        keys = jnp.asarray(np.asarray([[61, i] for i in range(cfg.seeds)], np.uint32))
        res = jax.tree.map(np.asarray, jax.device_get(_program(cfg)(stacked, keys)))
    res["x_star"] = np.asarray([ridge_optimum(p["ridge"], cfg.grid) for p in probs])
    res["config"] = dataclasses.asdict(cfg)
    return res


# --------------------------------------------------------------------------- claims


def final_error(results, method: str) -> np.ndarray:
    return results[f"quad/{method}"][:, -1]


def rate_grid(results) -> np.ndarray:
    cfg = results["config"]
    return theory.geometric_grid(cfg["rate_start"], cfg["robust_steps"], 12)


def best_so_far(results) -> np.ndarray:
    """(seeds, K grid) ``min_{k <= K}`` of the stationarity measure."""
    tr = np.minimum.accumulate(results["robust/stationarity"], axis=1)
    return tr[:, rate_grid(results) - 1]


def rate_slope(results) -> float:
    return theory.fit_power_law(rate_grid(results), best_so_far(results)).slope


def bilevel_error(results, method: str) -> np.ndarray:
    return np.abs(results[method]["xbar"][:, -1] - results["x_star"])


def _gamma_name(results, i):
    return f"FAB gamma={results['config']['penalties'][i]:g}"


CLAIMS = (
    theory.Claim("push_pull_exact", lambda r: final_error(r, "Push-Pull").max(), "<=", 1e-6,
                 "spec claim 1: max over seeds of max_i ||x_i - x*|| after 3000 steps, float64"),
    theory.Claim("row_tracking_biased", lambda r: final_error(r, "row-only tracking").min(),
                 ">=", 0.1, "spec claim 1: min over seeds, row-only gradient tracking"),
    theory.Claim("dgd_biased", lambda r: final_error(r, "DGD").min(), ">=", 0.1,
                 "spec claim 1: min over seeds, row-stochastic DGD"),
    theory.Claim("nonconvex_rate_slope", rate_slope, "<=", -0.8,
                 "spec claim 2: log-log slope of the seed mean of min_{k<=K} (||grad F(xbar)||^2 "
                 "+ consensus) over K in [100, 3000]"),
    theory.Claim("fab_upper_error", lambda r: bilevel_error(r, _gamma_name(r, -1)).max(), "<=",
                 0.1, "spec claim 3: max over seeds of |xbar - x*|, gamma = 100, 5000 steps"),
    theory.Claim("fab_consensus", lambda r: r[_gamma_name(r, -1)]["spread"][:, -1].max(), "<=",
                 1e-3, "spec claim 3: max over seeds of max_i |x_i - xbar|"),
    theory.Claim("penalty_bias_decreases",
                 lambda r: bilevel_error(r, _gamma_name(r, 0)).mean()
                 - bilevel_error(r, _gamma_name(r, -1)).mean(), ">", 0.0,
                 "spec claim 4: mean |xbar - x*| at gamma=10 minus at gamma=100"),
)


def summarize(results) -> dict:
    out = {}
    for m in ("Push-Pull", "row-only tracking", "DGD"):
        e = final_error(results, m)
        out[f"claim 1 {m}: max_i ||x_i - x*|| (min / max over seeds)"] = (float(e.min()),
                                                                         float(e.max()))
    out["claim 2 slope"] = rate_slope(results)
    out["claim 2 best-so-far at K=100 / K=3000 (seed mean)"] = (
        float(best_so_far(results)[:, 0].mean()), float(best_so_far(results)[:, -1].mean()))
    out["x* per seed"] = results["x_star"].tolist()
    for name, tr in results.items():
        if isinstance(tr, dict) and "xbar" in tr:
            err = bilevel_error(results, name)
            out[f"{name}: |xbar - x*| mean / max"] = (float(err.mean()), float(err.max()))
            out[f"{name}: max_i |x_i - xbar| max"] = float(tr["spread"][:, -1].max())
    return out


def plot(results, cfg: Config) -> dict:
    """``single_level``: claim 1 error curves and claim 2 best-so-far stationarity;
    ``bilevel``: |xbar_k - x*| of every bilevel method."""
    import matplotlib.pyplot as plt

    figs = {}
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2))
    ks = np.arange(1, cfg.quad_steps + 1)
    for m in ("Push-Pull", "row-only tracking", "DGD"):
        runner.band_plot(ax0, ks, np.maximum(results[f"quad/{m}"], 1e-17), label=m)
    runner.finish_axes(ax0, xlabel="iteration k", ylabel=r"$\max_i\|x_{i,k} - x^\star\|$",
                       title="claim 1: unbalanced time-varying digraphs", legend=True)
    grid = rate_grid(results)
    runner.band_plot(ax1, grid, best_so_far(results), label="Push-Pull", marker="o")
    ref = best_so_far(results).mean(0)[0] * (grid / grid[0]) ** -1.0
    ax1.plot(grid, ref, "k:", label="1/K")
    runner.finish_axes(ax1, xlabel="K",
                       ylabel=r"$\min_{k\leq K}\|\nabla F(\bar x_k)\|^2$ + consensus",
                       title="claim 2: nonconvex Cauchy regression", legend=True)
    figs["single_level"] = fig

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ks = np.arange(1, cfg.fab_steps + 1)
    for name, tr in results.items():
        if isinstance(tr, dict) and "xbar" in tr:
            err = np.abs(tr["xbar"] - results["x_star"][:, None])
            runner.band_plot(ax, ks, np.maximum(err, 1e-8), label=name)
    ax.axhline(0.1, color="k", lw=0.8, ls="--")
    runner.finish_axes(ax, xlabel="iteration k",
                       ylabel=r"$|\bar x_k - x^\star|$ (log ridge penalty)",
                       title="claims 3-4: distributed ridge-hyperparameter tuning", legend=7)
    figs["bilevel"] = fig
    return figs


def multihost_case(num_workers: int):
    """``(make, x0, oracle, num_steps)`` for ``experiments.tools.multihost.CASES``: Push-Pull on
    local quadratics over a random time-varying digraph on ``num_workers`` agents, 5 steps."""
    rng = np.random.default_rng(0)
    graph = time_varying_digraphs(rng, num_workers, 4, extra_edges=min(
        4, num_workers * (num_workers - 2)))
    oracle = LocalQuadratics(jnp.asarray(rng.uniform(0.5, 3.0, (num_workers, 1)), jnp.float32),
                             jnp.asarray(rng.normal(size=(num_workers, 4)), jnp.float32))

    def make(mesh_):
        return push_pull(0.05, graph=graph, num_workers=num_workers, mesh=mesh_)

    return make, jnp.zeros(4), oracle, 5
