r"""Two-stage linear programs with random recourse, APUB-M by extensive form and L-shaped.

Problem: :math:`F(x, \xi) = c^\top x + Q(x, \xi)`, :math:`x \in [l, u]`,

.. math:: Q(x, \xi) = \min_y \{ q(\xi)^\top y : W(\xi) y = h(\xi) - T(\xi) x,\ 0 \le y \le
   \bar y(\xi) \},

with the scenarios :math:`\xi_1..\xi_N` stacked on a leading axis (:class:`TwoStageLP`). The
bounds :math:`\bar y` must be implied (valid for every :math:`x \in [l, u]`), so they do not
change :math:`Q`; they make every dual vector give a valid cut (below). APUB-M with bootstrap
weights ``Wb (M, N)`` and level :math:`\alpha`:

.. math:: \min_{x, t, s, y}\ c^\top x + t + \frac{1}{\alpha M}\sum_m s_m \quad
   s_m \ge \sum_n Wb_{mn} q_n^\top y_n - t,\ s \ge 0,\ \text{recourse constraints},

(:func:`extensive_form`; ``c.x`` sits outside the CVaR by translation invariance).

L-shaped (:func:`l_shaped`): the master LP in :math:`(x, t, s, \theta)` replaces
:math:`q_n^\top y_n` by :math:`\theta_n \ge \theta^{lb}_n` and per-scenario optimality cuts; each
iteration solves the master by PDHG (:mod:`jaxopt_icml.robust.lp`), the ``N`` recourse LPs at
its ``x`` by vmapped PDHG, and adds one cut per scenario. Cut tolerance: first-order duals
:math:`\pi` are inexact (not exactly dual feasible), so instead of a fudge term we use the
Lagrangian cut

.. math:: \theta_n \ge \pi^\top(h_n - T_n x) + \sum_j \min\big(0, (q_n - W_n^\top\pi)_j\big)
   \bar y_{nj},

which is valid for ANY :math:`\pi` (weak duality of the box-constrained Lagrangian) and
equals the Benders cut when :math:`\pi` is dual feasible: the cut tolerance is exactly 0, and
the inexactness only loosens the cut by (dual infeasibility x bound). The loop runs a fixed
number of iterations (one ``lax.scan``, shapes fixed: cut slots not yet used repeat the bound
:math:`\theta_n \ge \theta^{lb}_n`) and returns the iterate with the best upper bound.

Product mix (:func:`product_mix`): a Dantzig-style instance of ours (the paper's data were not
readable): 4 products, 2 resources (carpentry, finishing hours) bought at ``c = (2, 3)`` per
hour, ``x <= (3000, 1500)``; random hours per unit (uniform +-12.5% carpentry, +-20% finishing
around ``(4, 9, 7, 10)`` and ``(1, 1, 3, 4)``), random demands ``U(0.5, 1.5) * (100, 80, 60,
50)``, profits ``(12, 25, 21, 40)``. Recourse: ``max p.y`` s.t. hours ``<= x``, ``y <= d``.
:func:`product_mix_recourse` evaluates :math:`Q` exactly by enumerating the 15 candidate
vertices of its two-dimensional dual (an independent reference for the LP route).

References:
  R. M. Van Slyke, R. Wets. *L-shaped linear programs with applications to optimal control
  and stochastic programming*. SIAM J. Appl. Math., 1969.
  H. Liu, S. Gao, C. Hu. APUB. ICML 2026, arXiv 2403.08966.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml.robust import apub
from jaxopt_icml.robust import lp as lp_lib

__all__ = [
    "LShapedResult",
    "ProductMixScenarios",
    "TwoStageLP",
    "apub_objective",
    "extensive_form",
    "l_shaped",
    "product_mix",
    "product_mix_recourse",
    "sample_product_mix",
]


class TwoStageLP(NamedTuple):
    """Scenario data on a leading axis ``N``: ``c (n1,)``, ``lb, ub (n1,)``, ``q (N, n2)``,
    ``W (N, m2, n2)``, ``h (N, m2)``, ``T (N, m2, n1)``, ``y_ub (N, n2)`` implied recourse
    bounds, ``theta_lb (N,)`` a lower bound of ``Q(x, xi_n)`` on ``[lb, ub]``."""

    c: jax.Array
    lb: jax.Array
    ub: jax.Array
    q: jax.Array
    W: jax.Array
    h: jax.Array
    T: jax.Array
    y_ub: jax.Array
    theta_lb: jax.Array


PROFIT = (12.0, 25.0, 21.0, 40.0)
HOURS = ((4.0, 9.0, 7.0, 10.0), (1.0, 1.0, 3.0, 4.0))
SPREAD = (0.125, 0.2)
DEMAND = (100.0, 80.0, 60.0, 50.0)
COST = (2.0, 3.0)
CAPACITY = (3000.0, 1500.0)


def sample_product_mix(key, num: int, dtype=jnp.float32):
    """``num`` product-mix scenarios: ``(hours (num, 2, 4), demand (num, 4))``."""
    k1, k2 = jax.random.split(key)
    base = jnp.asarray(HOURS, dtype)[None]
    spread = jnp.asarray(SPREAD, dtype)[None, :, None]
    u = jax.random.uniform(k1, (num, 2, 4), dtype, -1.0, 1.0)
    hours = base * (1 + spread * u)
    demand = jnp.asarray(DEMAND, dtype)[None] * jax.random.uniform(k2, (num, 4), dtype, 0.5,
                                                                  1.5)
    return hours, demand


def product_mix(hours, demand) -> TwoStageLP:
    """The product-mix :class:`TwoStageLP` of given scenarios (recourse ``y = (prod (4),
    resource slack (2), demand slack (4))``, ``W = [[H, I, 0], [I, 0, I]]``, ``h - T x =
    (x, d)``)."""
    dt = hours.dtype
    n = hours.shape[0]
    p = jnp.asarray(PROFIT, dt)
    cap = jnp.asarray(CAPACITY, dt)
    top = jnp.concatenate([hours, jnp.broadcast_to(jnp.eye(2, dtype=dt), (n, 2, 2)),
                           jnp.zeros((n, 2, 4), dt)], axis=2)
    bot = jnp.concatenate([jnp.broadcast_to(jnp.eye(4, dtype=dt), (n, 4, 4)),
                           jnp.zeros((n, 4, 2), dt),
                           jnp.broadcast_to(jnp.eye(4, dtype=dt), (n, 4, 4))], axis=2)
    W = jnp.concatenate([top, bot], axis=1)
    h = jnp.concatenate([jnp.zeros((n, 2), dt), demand], axis=1)
    T = jnp.broadcast_to(jnp.concatenate([-jnp.eye(2, dtype=dt), jnp.zeros((4, 2), dt)]),
                         (n, 6, 2))
    q = jnp.broadcast_to(jnp.concatenate([-p, jnp.zeros(6, dt)]), (n, 10))
    y_ub = jnp.concatenate([demand, jnp.broadcast_to(cap, (n, 2)), demand], axis=1)
    return TwoStageLP(c=jnp.asarray(COST, dt), lb=jnp.zeros(2, dt), ub=cap, q=q, W=W, h=h,
                      T=T, y_ub=y_ub, theta_lb=-(demand @ p))


def product_mix_recourse(x, hours, demand):
    r"""Exact :math:`Q(x, \xi)` of the product mix and a subgradient in ``x``, by dual vertex
    enumeration: :math:`Q = \max_{\lambda \ge 0} -\lambda^\top x + \sum_j d_j \min(0,
    H_j^\top\lambda - p_j)`, a concave piecewise-linear maximum attained at the origin, an axis
    crossing of a line :math:`H_j^\top\lambda = p_j` or a crossing of two such lines (15
    candidates). Works on one scenario; vmap over scenarios.

    Returns:
      ``(Q, dQ/dx = -lambda*)``.
    """
    dt = hours.dtype
    p = jnp.asarray(PROFIT, dt)
    cands = [jnp.zeros(2, dt)]
    for j in range(4):
        cands.append(jnp.stack([p[j] / hours[0, j], jnp.zeros((), dt)]))
        cands.append(jnp.stack([jnp.zeros((), dt), p[j] / hours[1, j]]))
    for j, k in itertools.combinations(range(4), 2):
        M = jnp.stack([hours[:, j], hours[:, k]])
        det = M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]
        sol = jnp.stack([p[j] * M[1, 1] - p[k] * M[0, 1], M[0, 0] * p[k] - M[1, 0] * p[j]])
        cands.append(jnp.where(jnp.abs(det) > 1e-12, sol / jnp.where(det == 0, 1, det), 0))
    lam = jnp.stack(cands)
    val = -lam @ x + jnp.minimum(0, lam @ hours - p[None]) @ demand
    val = jnp.where(jnp.all(lam >= -1e-9, axis=1), val, -jnp.inf)
    i = jnp.argmax(val)
    return val[i], -lam[i]


@jax.jit  # one compiled call when used eagerly (the 15-vertex enumeration is many small ops)
def _pm_value_and_grad(x, hours, demand):
    ct = jnp.promote_types(hours.dtype, jnp.float32)
    xc = x.astype(ct)
    Q, dQ = jax.vmap(product_mix_recourse, in_axes=(None, 0, 0))(
        xc, hours.astype(ct), demand.astype(ct))
    c = jnp.asarray(COST, ct)
    return c @ xc + Q, c[None, :] + dQ


class ProductMixScenarios(NamedTuple):
    """Oracle for :func:`jaxopt_icml.robust.apub.scenario_reweighter`: ``hours (N, 2, 4)``,
    ``demand (N, 4)``. ``scenario_value_and_grad(x)`` returns the exact per-scenario costs
    ``c.x + Q(x, xi_n)`` and their subgradients (float32 or wider: bfloat16 data are
    promoted)."""

    hours: jax.Array
    demand: jax.Array

    def scenario_value_and_grad(self, x):
        return _pm_value_and_grad(x, self.hours, self.demand)

    def expected_cost(self, x):
        """Mean cost over the stored scenarios (a Monte Carlo estimate of ``E F(x, xi)``)."""
        return self.scenario_value_and_grad(x)[0].mean()


def apub_objective(x, prob: TwoStageLP, Wb, alpha, recourse_values):
    """``c.x + APUB_alpha(Q)`` given the scenario recourse values ``Q (N,)``."""
    return prob.c @ x + apub.apub_value(recourse_values, Wb, alpha)


def extensive_form(prob: TwoStageLP, Wb, alpha) -> lp_lib.LinearProgram:
    """The APUB-M extensive-form LP in ``z = (x (n1), t, s (M), y (N * n2))``.

    ``Wb`` ``(M, N)`` bootstrap weights (``ones((1, N)) / N`` with ``alpha = 1`` is SAA).
    """
    N, m2, n2 = prob.W.shape
    n1 = prob.c.shape[0]
    M = Wb.shape[0]
    dt = prob.c.dtype
    alpha = jnp.asarray(alpha, dt)
    nv = n1 + 1 + M + N * n2
    c = jnp.concatenate([prob.c, jnp.ones(1, dt), jnp.full(M, 1.0, dt) / (alpha * M),
                         jnp.zeros(N * n2, dt)])
    # recourse rows: T_n x + W_n y_n = h_n
    blk = jax.scipy.linalg.block_diag(*[prob.W[i] for i in range(N)])
    A = jnp.concatenate([prob.T.reshape(N * m2, n1), jnp.zeros((N * m2, 1 + M), dt), blk],
                        axis=1)
    b = prob.h.reshape(-1)
    # CVaR rows: s_m + t - sum_n Wb_mn q_n.y_n >= 0
    qy = -(Wb[:, :, None] * prob.q[None]).reshape(M, N * n2)
    G = jnp.concatenate([jnp.zeros((M, n1), dt), jnp.ones((M, 1), dt), jnp.eye(M, dtype=dt),
                         qy], axis=1)
    lb = jnp.concatenate([prob.lb, jnp.full(1, -jnp.inf, dt), jnp.zeros(M + N * n2, dt)])
    ub = jnp.concatenate([prob.ub, jnp.full(1 + M, jnp.inf, dt), prob.y_ub.reshape(-1)])
    del nv
    return lp_lib.LinearProgram(c, A, b, G, jnp.zeros(M, dt), lb, ub)


def _master(prob, Wb, alpha, cut_beta, cut_rhs):
    """Master LP in ``(x, t, s (M), theta (N))``; cuts ``theta_n + beta.x >= rhs``."""
    N = prob.q.shape[0]
    n1 = prob.c.shape[0]
    M = Wb.shape[0]
    K = cut_rhs.shape[0]
    dt = prob.c.dtype
    c = jnp.concatenate([prob.c, jnp.ones(1, dt), jnp.full(M, 1.0, dt) / (alpha * M),
                         jnp.zeros(N, dt)])
    G1 = jnp.concatenate([jnp.zeros((M, n1), dt), jnp.ones((M, 1), dt), jnp.eye(M, dtype=dt),
                          -Wb], axis=1)
    eyeN = jnp.broadcast_to(jnp.eye(N, dtype=dt), (K, N, N))
    G2 = jnp.concatenate([cut_beta, jnp.zeros((K, N, 1 + M), dt), eyeN], axis=2)
    G = jnp.concatenate([G1, G2.reshape(K * N, -1)])
    h = jnp.concatenate([jnp.zeros(M, dt), cut_rhs.reshape(-1)])
    lb = jnp.concatenate([prob.lb, jnp.full(1, -jnp.inf, dt), jnp.zeros(M, dt), prob.theta_lb])
    ub = jnp.concatenate([prob.ub, jnp.full(1 + M + N, jnp.inf, dt)])
    return lp_lib.LinearProgram(c, jnp.zeros((0, c.shape[0]), dt), jnp.zeros(0, dt), G, h,
                                lb, ub)


def _recourse_lp(prob_n, x):
    n2 = prob_n.q.shape[0]
    dt = prob_n.q.dtype
    return lp_lib.LinearProgram(prob_n.q, prob_n.W, prob_n.h - prob_n.T @ x,
                                jnp.zeros((0, n2), dt), jnp.zeros(0, dt), jnp.zeros(n2, dt),
                                prob_n.y_ub)


class LShapedResult(NamedTuple):
    """``x``: the iterate with the best upper bound; ``value``: that upper bound (``c.x +
    APUB`` of the PDHG recourse values); ``lower``/``upper``: per-iteration master objective
    and upper bound; ``master_status``/``sub_status``: worst PDHG status per iteration."""

    x: jax.Array
    value: jax.Array
    lower: jax.Array
    upper: jax.Array
    master_status: jax.Array
    sub_status: jax.Array


def l_shaped(prob: TwoStageLP, Wb, alpha, *, num_iters: int = 20, master_tol: float = 1e-6,
             sub_tol: float = 1e-7, master_max_iters: int = 20000,
             sub_max_iters: int = 20000) -> LShapedResult:
    """APUB-M by the L-shaped method with per-scenario Lagrangian cuts (module docstring).

    Args:
      prob: the two-stage problem (``N`` scenarios); ``Wb``: ``(M, N)`` bootstrap weights;
        ``alpha`` in (0, 1].
      num_iters: L-shaped iterations = cut slots per scenario (static, >= 1).
      master_tol, sub_tol: PDHG relative tolerances (float64 recommended below 1e-5).
      master_max_iters, sub_max_iters: PDHG iteration budgets (static).

    Returns:
      :class:`LShapedResult`.

    Paper mapping: the paper's L-shaped method for APUB-M with random recourse; whether the
    paper uses one cut per scenario or aggregated cuts per resample was not visible, we use
    one per scenario (``N`` cuts per iteration). Theory: the final value matches HiGHS on the
    extensive form within 5e-6 (relative) in ``tests/robust/test_apub.py``; the claim
    ``lshaped_bounds_meet`` of ``experiments/robust/apub.py`` checks that the bounds meet.
    """
    if isinstance(num_iters, bool) or not isinstance(num_iters, int) or num_iters < 1:
        raise ValueError(f"num_iters must be a positive int, got {num_iters!r}")
    apub._check_alpha(alpha)
    N = prob.q.shape[0]
    n1 = prob.c.shape[0]
    M = Wb.shape[0]
    dt = prob.c.dtype
    alpha = jnp.asarray(alpha, dt)
    beta0 = jnp.zeros((num_iters, N, n1), dt)
    rhs0 = jnp.broadcast_to(prob.theta_lb, (num_iters, N))
    n_master = n1 + 1 + M + N
    scen = TwoStageLP(*(jnp.broadcast_to(a, (N,) + a.shape) for a in prob[:3]), *prob[3:])

    def sub_solve(pn, x):
        return lp_lib.solve_lp(_recourse_lp(pn, x), tol=sub_tol, max_iters=sub_max_iters)

    def body(carry, k):
        beta, rhs, xw, yw, best_x, best_v = carry
        sol = lp_lib.solve_lp(_master(prob, Wb, alpha, beta, rhs), tol=master_tol,
                           max_iters=master_max_iters, x0=xw, y0=yw)
        x = jnp.clip(sol.x[:n1], prob.lb, prob.ub)
        subs = jax.vmap(sub_solve, in_axes=(0, None))(scen, x)
        pi = subs.y  # (N, m2)
        red = prob.q - jnp.einsum("nij,ni->nj", prob.W, pi)
        corr = jnp.sum(jnp.minimum(red, 0) * prob.y_ub, axis=1)
        cut_rhs = jnp.einsum("ni,ni->n", pi, prob.h) + corr
        cut_beta = jnp.einsum("nij,ni->nj", prob.T, pi)
        beta = beta.at[k].set(cut_beta)
        rhs = rhs.at[k].set(cut_rhs)
        ub_val = apub_objective(x, prob, Wb, alpha, subs.primal_obj)
        better = ub_val < best_v
        carry = (beta, rhs, sol.x, sol.y, jnp.where(better, x, best_x),
                 jnp.where(better, ub_val, best_v))
        return carry, (sol.primal_obj, ub_val, sol.status, jnp.max(subs.status))

    m_rows = M + num_iters * N
    init = (beta0, rhs0, jnp.zeros(n_master, dt), jnp.zeros(m_rows, dt), prob.lb,
            jnp.asarray(jnp.inf, dt))
    (_, _, _, _, bx, bv), (lo, up, ms, ss) = jax.lax.scan(body, init, jnp.arange(num_iters))
    return LShapedResult(bx, bv, lo, up, ms, ss)
