r"""A JAX-native LP solver: restarted primal-dual hybrid gradient (PDLP style).

Problem (:class:`LinearProgram`, dense data, vmappable over instances):

.. math::
   \min_x c^\top x \quad\text{s.t.}\quad A x = b,\quad G x \ge h,\quad l \le x \le u

with saddle function :math:`L(x, y) = c^\top x - y^\top(Kx - q)`, :math:`K = [A; G]`,
:math:`q = [b; h]`, :math:`y = [y_A; y_G]`, :math:`y_G \ge 0`. One PDHG iteration with primal
weight :math:`\omega` and step :math:`\eta < 1/\|K\|_2`:

.. math::
   x^+ = \Pi_{[l,u]}\big(x - \tfrac{\eta}{\omega}(c - K^\top y)\big),\qquad
   y^+ = \Pi_Y\big(y + \eta\omega\,(q - K(2x^+ - x))\big).

PDLP ingredients kept: diagonal preconditioning (``ruiz_iters`` Ruiz equilibration sweeps, then
Pock-Chambolle with exponent 1) in :func:`prepare_lp`; the average of the iterates since the last
restart; adaptive restarts to the better of (current, average) in the weighted KKT error
:math:`\sqrt{\omega^2\|r_P\|^2 + \|r_D\|^2/\omega^2 + \mathrm{gap}^2}` with PDLP's constants
(sufficient decay 0.2, necessary decay 0.8 with no progress, artificial after 36% of the
iterations); the primal-weight update :math:`\omega \leftarrow \exp(\tfrac12\log(\Delta y /
\Delta x) + \tfrac12 \log\omega)` at each restart. Left out: adaptive step sizes (a fixed
:math:`\eta = 0.95/\|K\|_2` from a power iteration instead), presolve, feasibility polishing
and infeasibility certificates (an infeasible or unbounded LP ends with status 1).

Termination (relative, on the unscaled problem):
:math:`\|r_P\| \le \epsilon(1 + \|q\|)`, :math:`\|r_D\| \le \epsilon(1 + \|c\|)`,
:math:`|p - d| \le \epsilon(1 + |p| + |d|)`, where the dual objective is
:math:`d = q^\top y + \sum_i (l_i \lambda_i^+ - u_i \lambda_i^-)` with the reduced costs
:math:`\lambda = c - K^\top y` split on the finite bounds, and :math:`r_D` is the part of
:math:`\lambda` no finite bound absorbs.

References:
  D. Applegate, M. Diaz, O. Hinder, H. Lu, M. Lubin, B. O'Donoghue, W. Schudy. *Practical
  large-scale linear programming using primal-dual hybrid gradient*. NeurIPS 2021.
  A. Chambolle, T. Pock. *A first-order primal-dual algorithm for convex problems with
  applications to imaging*. JMIV 2011.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml import base

__all__ = [
    "LPSolution",
    "LinearProgram",
    "PDHGState",
    "PreparedLP",
    "kkt_residuals",
    "pdhg_lp",
    "prepare_lp",
    "solve_lp",
]

STATUS_OPTIMAL = 0
STATUS_ITERATION_LIMIT = 1
STATUS_NONFINITE = 2


class LinearProgram(NamedTuple):
    """``min c.x  s.t.  A x = b,  G x >= h,  lb <= x <= ub`` (dense; ``A``/``G`` may have zero
    rows; bounds may be infinite)."""

    c: jax.Array
    A: jax.Array
    b: jax.Array
    G: jax.Array
    h: jax.Array
    lb: jax.Array
    ub: jax.Array


class PreparedLP(NamedTuple):
    """A preconditioned LP: ``scaled`` has ``x = col * x_scaled``, ``y = row * y_scaled``;
    ``norm`` estimates ``||K_scaled||_2``; ``original`` is the LP as given."""

    scaled: LinearProgram
    col: jax.Array
    row: jax.Array
    norm: jax.Array
    original: LinearProgram


class PDHGState(NamedTuple):
    """Iterates live in the scaled space. ``x, y``: current; ``x_sum, y_sum``: sums since the
    last restart (``n_avg`` terms); ``x_anchor, y_anchor, kkt_anchor``: last restart point;
    ``kkt_prev``: candidate KKT error at the previous check; ``omega``: primal weight;
    ``iters``, ``since_restart``: int32 counters; ``restarts``: int32."""

    x: jax.Array
    y: jax.Array
    x_sum: jax.Array
    y_sum: jax.Array
    n_avg: jax.Array
    x_anchor: jax.Array
    y_anchor: jax.Array
    kkt_anchor: jax.Array
    kkt_prev: jax.Array
    omega: jax.Array
    iters: jax.Array
    since_restart: jax.Array
    restarts: jax.Array


class LPSolution(NamedTuple):
    """``x, y`` in the original space (``y = [y_eq; y_ineq]``, ``y_ineq >= 0``); relative
    residuals ``primal_residual``, ``dual_residual``, ``gap``; objectives; ``iterations``
    (int32); ``status``: 0 optimal, 1 iteration limit, 2 non-finite iterates."""

    x: jax.Array
    y: jax.Array
    primal_obj: jax.Array
    dual_obj: jax.Array
    primal_residual: jax.Array
    dual_residual: jax.Array
    gap: jax.Array
    iterations: jax.Array
    status: jax.Array


def _K(lp, x):
    return jnp.concatenate([lp.A @ x, lp.G @ x])


def _KT(lp, y):
    m1 = lp.A.shape[0]
    return lp.A.T @ y[:m1] + lp.G.T @ y[m1:]


def _proj_y(lp, y):
    m1 = lp.A.shape[0]
    return jnp.concatenate([y[:m1], jnp.maximum(y[m1:], 0)])


def _q(lp):
    return jnp.concatenate([lp.b, lp.h])


def kkt_residuals(lp: LinearProgram, x, y):
    """Absolute ``(primal_res, dual_res, primal_obj, dual_obj)`` of ``(x, y)`` (Euclidean
    norms; ``x`` is first clipped to its bounds)."""
    x = jnp.clip(x, lp.lb, lp.ub)
    y = _proj_y(lp, y)
    m1 = lp.A.shape[0]
    kx = _K(lp, x)
    q = _q(lp)
    r = kx - q
    r = jnp.concatenate([r[:m1], jnp.minimum(r[m1:], 0)])
    lam = lp.c - _KT(lp, y)
    fin_l, fin_u = jnp.isfinite(lp.lb), jnp.isfinite(lp.ub)
    lam_pos = jnp.where(fin_l, jnp.maximum(lam, 0), 0)
    lam_neg = jnp.where(fin_u, jnp.minimum(lam, 0), 0)
    rd = lam - lam_pos - lam_neg
    pobj = lp.c @ x
    dobj = (q @ y + jnp.sum(jnp.where(fin_l, lp.lb, 0) * lam_pos)
            + jnp.sum(jnp.where(fin_u, lp.ub, 0) * lam_neg))
    return jnp.linalg.norm(r), jnp.linalg.norm(rd), pobj, dobj


def _rel(lp, x, y):
    pr, dr, p, d = kkt_residuals(lp, x, y)
    return (pr / (1 + jnp.linalg.norm(_q(lp))), dr / (1 + jnp.linalg.norm(lp.c)),
            jnp.abs(p - d) / (1 + jnp.abs(p) + jnp.abs(d)), p, d)


def prepare_lp(lp: LinearProgram, *, ruiz_iters: int = 10, power_iters: int = 40) -> PreparedLP:
    """Diagonal preconditioning (Ruiz, then Pock-Chambolle) and a power-iteration estimate of
    the scaled operator norm (times 1.01 for safety).

    Args:
      lp: the problem. ``ruiz_iters``, ``power_iters``: static counts (>= 0, >= 1).
    """
    if isinstance(ruiz_iters, bool) or not isinstance(ruiz_iters, int) or ruiz_iters < 0:
        raise ValueError(f"ruiz_iters must be an int >= 0, got {ruiz_iters!r}")
    if isinstance(power_iters, bool) or not isinstance(power_iters, int) or power_iters < 1:
        raise ValueError(f"power_iters must be a positive int, got {power_iters!r}")
    K = jnp.concatenate([lp.A, lp.G], axis=0)
    dt = K.dtype
    row = jnp.ones(K.shape[0], dt)
    col = jnp.ones(K.shape[1], dt)

    def safe(v):
        return jnp.where(v > 0, v, 1.0)

    def ruiz(_, rc):
        r, c = rc
        Ks = r[:, None] * K * c[None, :]
        rn = jnp.sqrt(safe(jnp.max(jnp.abs(Ks), axis=1)))
        cn = jnp.sqrt(safe(jnp.max(jnp.abs(Ks), axis=0)))
        return r / rn, c / cn

    row, col = jax.lax.fori_loop(0, ruiz_iters, ruiz, (row, col))
    Ks = row[:, None] * K * col[None, :]
    row = row / jnp.sqrt(safe(jnp.sum(jnp.abs(Ks), axis=1)))
    col = col / jnp.sqrt(safe(jnp.sum(jnp.abs(Ks), axis=0)))
    Ks = row[:, None] * K * col[None, :]
    m1 = lp.A.shape[0]
    scaled = LinearProgram(c=col * lp.c, A=Ks[:m1], b=row[:m1] * lp.b, G=Ks[m1:],
                           h=row[m1:] * lp.h, lb=lp.lb / col, ub=lp.ub / col)

    def power(_, v):
        w = Ks.T @ (Ks @ v)
        return w / jnp.maximum(jnp.linalg.norm(w), jnp.finfo(dt).tiny)

    v0 = jnp.ones(K.shape[1], dt) / jnp.sqrt(jnp.asarray(K.shape[1], dt))
    v = jax.lax.fori_loop(0, power_iters, power, v0)
    norm = 1.01 * jnp.sqrt(jnp.linalg.norm(Ks.T @ (Ks @ v)))
    norm = jnp.maximum(norm, jnp.finfo(dt).eps)
    return PreparedLP(scaled, col, row, norm, lp)


def _kkt_w(res, omega):
    pr, dr, p, d = res
    return jnp.sqrt(omega ** 2 * pr ** 2 + dr ** 2 / omega ** 2 + (p - d) ** 2)


def pdhg_lp(*, inner_iters: int = 64, step_scale: float = 0.95) -> base.OracleAlgorithm:
    r"""Restarted PDHG as an ``OracleAlgorithm`` over a :class:`PreparedLP` oracle.

    One ``update`` runs ``inner_iters`` PDHG iterations (``lax.fori_loop``) on the scaled LP,
    then the restart check described in the module docstring.

    Args:
      inner_iters: PDHG iterations per update and restart-check period (static, >= 1;
        PDLP checks every 64).
      step_scale: :math:`\eta\,\|K\|_2` in (0, 1) (static float; 0.95).

    Returns:
      ``OracleAlgorithm``: ``init(x0, key)`` with ``x0 = (x, y)`` a starting primal-dual pair
      in the SCALED space (zeros are the usual start; :func:`solve_lp` converts warm starts);
      ``update(state, prepared, key)`` -> ``Step(x=(x, y) unscaled candidate, info)`` with
      ``info``: ``oracle_calls`` (matrix-vector products with ``K`` and ``K^T``),
      ``primal_residual``, ``dual_residual``, ``gap`` (relative, unscaled), ``restarted``.
    """
    if isinstance(inner_iters, bool) or not isinstance(inner_iters, int) or inner_iters < 1:
        raise ValueError(f"inner_iters must be a positive int, got {inner_iters!r}")
    if not isinstance(step_scale, int | float) or not 0.0 < step_scale < 1.0:
        raise ValueError(f"step_scale must be in (0, 1), got {step_scale!r}")

    def init(x0, key):
        del key
        x, y = x0
        dt = x.dtype
        inf = jnp.asarray(jnp.inf, dt)
        zero = jnp.zeros((), jnp.int32)
        return PDHGState(x=x, y=y, x_sum=jnp.zeros_like(x), y_sum=jnp.zeros_like(y),
                         n_avg=zero, x_anchor=x, y_anchor=y, kkt_anchor=inf, kkt_prev=inf,
                         omega=jnp.ones((), dt), iters=zero, since_restart=zero,
                         restarts=zero)

    def update(state, prepared, key):
        del key
        lp = prepared.scaled
        dt = state.x.dtype
        eta = jnp.asarray(step_scale, dt) / prepared.norm.astype(dt)
        first = ~jnp.isfinite(state.kkt_anchor)
        cn, qn = jnp.linalg.norm(lp.c), jnp.linalg.norm(_q(lp))
        omega0 = jnp.where((cn > 0) & (qn > 0), cn / jnp.where(qn > 0, qn, 1), 1.0)
        omega = jnp.where(first, jnp.clip(omega0, 1e-4, 1e4).astype(dt), state.omega)
        tau, sigma = eta / omega, eta * omega

        def it(_, c):
            x, y, xs, ys = c
            xn = jnp.clip(x - tau * (lp.c - _KT(lp, y)), lp.lb, lp.ub)
            yn = _proj_y(lp, y + sigma * (_q(lp) - _K(lp, 2 * xn - x)))
            return xn, yn, xs + xn, ys + yn

        x, y, xs, ys = jax.lax.fori_loop(
            0, inner_iters, it, (state.x, state.y, state.x_sum, state.y_sum))
        n_avg = state.n_avg + inner_iters
        xa, ya = xs / n_avg.astype(dt), ys / n_avg.astype(dt)
        # residuals of the current and the average point, both at once
        res = jax.vmap(lambda u, v: kkt_residuals(lp, u, v))(jnp.stack([x, xa]),
                                                              jnp.stack([y, ya]))
        k_both = _kkt_w(res, omega)
        k_cur, k_avg = k_both[0], k_both[1]
        use_avg = k_avg < k_cur
        xc = jnp.where(use_avg, xa, x)
        yc = jnp.where(use_avg, ya, y)
        k_c = jnp.minimum(k_avg, k_cur)
        iters = state.iters + inner_iters
        since = state.since_restart + inner_iters
        restart = (first | (k_c <= 0.2 * state.kkt_anchor)
                   | ((k_c <= 0.8 * state.kkt_anchor) & (k_c > state.kkt_prev))
                   | (since >= 0.36 * iters))
        dx = jnp.linalg.norm(xc - state.x_anchor)
        dy = jnp.linalg.norm(yc - state.y_anchor)
        tiny = jnp.finfo(dt).eps
        new_omega = jnp.where(
            (dx > tiny) & (dy > tiny) & ~first,
            jnp.exp(0.5 * jnp.log(jnp.maximum(dy, tiny) / jnp.maximum(dx, tiny))
                    + 0.5 * jnp.log(omega)), omega)
        new_omega = jnp.where(jnp.isfinite(new_omega), new_omega, omega)
        # keep the primal weight in a sane range (a guard, not in PDLP)
        new_omega = jnp.clip(new_omega, 1e-4, 1e4).astype(dt)

        def pick(a, b):
            return jnp.where(restart, a, b)

        state = PDHGState(
            x=pick(xc, x), y=pick(yc, y),
            x_sum=pick(jnp.zeros_like(x), xs), y_sum=pick(jnp.zeros_like(y), ys),
            n_avg=pick(jnp.zeros_like(n_avg), n_avg),
            x_anchor=pick(xc, state.x_anchor), y_anchor=pick(yc, state.y_anchor),
            kkt_anchor=pick(_kkt_w(jax.tree.map(lambda r: jnp.where(use_avg, r[1], r[0]), res),
                                   new_omega), state.kkt_anchor),
            kkt_prev=pick(jnp.asarray(jnp.inf, dt), k_c),
            omega=pick(new_omega, omega), iters=iters,
            since_restart=pick(jnp.zeros_like(since), since),
            restarts=state.restarts + restart.astype(jnp.int32))
        xo, yo = prepared.col * xc, prepared.row * yc
        pr, dr, gap, _, _ = _rel(prepared.original, xo, yo)
        info = {"oracle_calls": jnp.asarray(2 * inner_iters + 4, jnp.int32),
                "primal_residual": pr, "dual_residual": dr, "gap": gap,
                "restarted": restart.astype(jnp.int32)}
        return base.Step(x=(xo, yo), info=info), state

    # jitted as a whole: called eagerly, the restart logic is one compiled call instead of
    # dozens of op-by-op dispatches (the oracle is always a PreparedLP pytree)
    return base.OracleAlgorithm(init=init, update=jax.jit(update))


def solve_lp(lp: LinearProgram, *, tol: float = 1e-6, max_iters: int = 20000,
          inner_iters: int = 64, x0=None, y0=None, ruiz_iters: int = 10) -> LPSolution:
    """Solves ``lp`` with restarted PDHG until the relative KKT tolerance ``tol`` or
    ``max_iters`` iterations (a ``lax.while_loop``; vmappable: under ``vmap`` finished
    instances are frozen while the others run).

    Args:
      lp: a :class:`LinearProgram` (float32 reaches about 1e-5 relative; use float64 for
        tighter tolerances).
      tol: relative tolerance (> 0; dynamic).
      max_iters: PDHG iteration budget (static, >= inner_iters).
      inner_iters: iterations between restart/termination checks (static).
      x0, y0: optional warm start in the original space.
      ruiz_iters: Ruiz sweeps in :func:`prepare_lp`.

    Returns:
      :class:`LPSolution`.

    Theory: ``tests/robust/test_apub.py`` checks objectives (primal and dual), solutions and
    the status against scipy's HiGHS on random LPs with equality rows, inequality rows, free
    and one-sided variables, an infeasible instance (status 1) and the APUB-M extensive form
    of a product-mix instance.
    """
    if isinstance(tol, int | float) and not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < inner_iters:
        raise ValueError(f"max_iters must be an int >= inner_iters, got {max_iters!r}")
    alg = pdhg_lp(inner_iters=inner_iters)
    prep = prepare_lp(lp, ruiz_iters=ruiz_iters)
    dt = lp.c.dtype
    n, m = lp.c.shape[0], lp.A.shape[0] + lp.G.shape[0]
    xs = jnp.zeros(n, dt) if x0 is None else jnp.clip(x0 / prep.col, prep.scaled.lb,
                                                      prep.scaled.ub)
    xs = jnp.where(jnp.isfinite(xs), xs, 0)
    ys = jnp.zeros(m, dt) if y0 is None else y0 / prep.row
    state = alg.init((xs.astype(dt), ys.astype(dt)), None)
    tol = jnp.asarray(tol, dt)
    big = jnp.asarray(jnp.inf, dt)

    def cond(c):
        state, _, res, _ = c
        ok = (res[0] <= tol) & (res[1] <= tol) & (res[2] <= tol)
        finite = jnp.all(jnp.isfinite(state.x)) & jnp.all(jnp.isfinite(state.y))
        return ~ok & (state.iters < max_iters) & finite

    def body(c):
        state, _, _, _ = c
        step, state = alg.update(state, prep, None)
        res = (step.info["primal_residual"], step.info["dual_residual"], step.info["gap"])
        return state, step.x, res, state.iters

    x_init = (prep.col * xs, prep.row * ys)
    state, (x, y), res, iters = jax.lax.while_loop(
        cond, body, (state, x_init, (big, big, big), jnp.zeros((), jnp.int32)))
    ok = (res[0] <= tol) & (res[1] <= tol) & (res[2] <= tol)
    finite = jnp.all(jnp.isfinite(x)) & jnp.all(jnp.isfinite(y))
    status = jnp.where(~finite, STATUS_NONFINITE,
                       jnp.where(ok, STATUS_OPTIMAL, STATUS_ITERATION_LIMIT)).astype(jnp.int32)
    _, _, _, p, d = _rel(lp, x, y)
    return LPSolution(x=jnp.clip(x, lp.lb, lp.ub), y=_proj_y(lp, y), primal_obj=p, dual_obj=d,
                      primal_residual=res[0], dual_residual=res[1], gap=res[2],
                      iterations=iters, status=status)
