r"""DREAM: drift-corrected federated multi-objective learning (ICML 2026).

$N$ clients and $M$ tasks, $F_m(x) = \frac1N\sum_i f_{i,m}(x)$. Each round, every client runs
$K$ local steps from the server model $x_t$ with SCAFFOLD-style control variates per task and
an exponential moving average (momentum) of the corrected gradients, then sends its per-task
displacements $\Delta_{i,m}$; the server averages them and weights the tasks by a regularized
quadratic program over a task correction matrix $A$:

$$v_m \leftarrow \beta v_m + (1-\beta)\,(g_{i,m}(y) - c_{i,m} + c_m), \qquad
\lambda^\star = \arg\min_{\lambda\in\Delta_M}
\tfrac12\lambda^\top A^\top G A\lambda + \tfrac{\mu}{2}\|\lambda - p\|^2,$$

with $G_{mn} = \langle\Delta_m, \Delta_n\rangle$ and $x_{t+1} = x_t - \eta_G\sum_m
(A\lambda^\star)_m\Delta_m$. The per-client step is written once with collectives over the
worker axis and runs through :func:`jaxopt_icml.mesh.across_workers` (``jax.vmap`` on one device
or ``jax.shard_map`` over a mesh). Baselines are parameter settings of the same step:
:func:`fmgda` (Yang et al.), :func:`fedavg_scalarized`, :func:`scaffold_scalarized` and
:func:`centralized_mgda`. The per-task gradients the oracle returns must have the tree
structure and leaf shapes of the model (checked when the update is traced: a mismatch raises a
``ValueError`` naming the leaf).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml import base
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml.hyperparams import (
    cast_like,
    check_bool,
    check_choice,
    check_float,
    check_static_int,
    check_unit_interval,
    compute_dtype,
)

# the library's one sort-based simplex projection (unit mass here), re-exported as DREAM's
from jaxopt_icml.projections import project_simplex
from jaxopt_icml.trees import check_same_shapes

__all__ = [
    "dream",
    "dream_client",
    "solve_task_qp",
    "project_simplex",
    "pareto_gap",
    "fmgda",
    "fedavg_scalarized",
    "scaffold_scalarized",
    "centralized_mgda",
    "multitask_least_squares",
    "DreamState",
    "MultiTaskLeastSquares",
    "NoisyTaskGradients",
    "global_task_grads",
]

TRAJECTORIES = ("shared", "per_task")


# --------------------------------------------------------------------------- server QP


def _two_task_solution(q, preference, reg):
    """Closed form for ``M = 2``: with ``lambda = (s, 1 - s)`` the objective is a scalar
    quadratic, minimised at ``s = (Q22 - Q12 + 2 mu p1) / (Q11 - 2 Q12 + Q22 + 2 mu)``, clipped
    to ``[0, 1]`` (``s = p1`` when the curvature vanishes)."""
    num = q[1, 1] - q[0, 1] + 2 * reg * preference[0]
    den = q[0, 0] - 2 * q[0, 1] + q[1, 1] + 2 * reg
    tiny = jnp.finfo(q.dtype).tiny
    s = jnp.where(den > tiny, num / jnp.where(den > tiny, den, 1), preference[0])
    s = jnp.clip(s, 0, 1)
    return jnp.stack([s, 1 - s])


QP_SOLVERS = ("auto", "exact", "projected_gradient")
# the largest M solved by face enumeration: 2^M - 1 linear systems of size M + 1
EXACT_MAX_TASKS = 10
# full float32 products (no TF32 on GPUs): the QP compares objectives near round-off
_HIGHEST = jax.lax.Precision.HIGHEST


def _qp_objective(lam, q, preference, reg):
    """``1/2 lam^T Q lam + mu/2 ||lam - p||^2`` over the last axis of ``lam`` (the
    ``mu`` term is kept in this form: expanded, it cancels badly for large ``mu``)."""
    quad = jnp.einsum("...i,ij,...j->...", lam, q, lam, precision=_HIGHEST)
    diff = lam - jnp.broadcast_to(preference, lam.shape)
    return quad / 2 + reg / 2 * jnp.sum(diff**2, axis=-1)


def _face_candidates(q, preference, reg, masks):
    r"""For every support ``S`` (rows of the boolean ``masks``, ``(F, M)``), the minimiser of
    the QP on the affine hull of the face ``{lam >= 0, sum lam = 1, lam_i = 0 (i not in S)}``:
    the KKT system ``[[H_SS, 1], [1^T, 0]] [lam_S; nu] = [mu p_S; 1]`` with ``H = Q + mu I``,
    padded to size ``M + 1`` by identity rows ``lam_i = 0`` off ``S`` so that all faces are one
    batched solve. Each solution is clipped at zero and renormalised, so every candidate is a
    point of the simplex (a singular face gives a non-finite or an arbitrary feasible point,
    whose objective is then evaluated like any other). Returns ``(F, M)`` candidates and their
    objectives (``inf`` where not finite)."""
    m = q.shape[0]
    dt = q.dtype
    s = jnp.asarray(masks, dt)
    h = q + reg * jnp.eye(m, dtype=dt)
    f = s.shape[0]
    on = s[:, :, None] * s[:, None, :]
    top = jnp.concatenate([on * h[None] + jax.vmap(jnp.diag)(1 - s), s[:, :, None]], axis=2)
    bottom = jnp.concatenate([s, jnp.zeros((f, 1), dt)], axis=1)[:, None, :]
    kkt = jnp.concatenate([top, bottom], axis=1)
    rhs = jnp.concatenate([s * (reg * preference)[None], jnp.ones((f, 1), dt)], axis=1)
    sol = jnp.linalg.solve(kkt, rhs[:, :, None])[:, :m, 0]
    lam = jnp.maximum(jnp.where(masks, sol, 0), 0)
    total = jnp.sum(lam, axis=1, keepdims=True)
    ok = jnp.all(jnp.isfinite(sol), axis=1) & (total[:, 0] > 0)
    lam = jnp.where(ok[:, None], lam / jnp.where(ok[:, None], total, 1), 0)
    val = _qp_objective(lam, q, preference, reg)
    return lam, jnp.where(ok & jnp.isfinite(val), val, jnp.inf)


def _exact_solution(q, preference, reg):
    """Exhaustive face enumeration: the candidate of smallest objective among ``p`` and the
    ``2^M - 1`` face candidates, the first one on ties (so ``p`` whenever it is a minimiser, as
    for ``Q = 0``). NaN when ``Q``, ``p`` or ``mu`` is not finite."""
    m = q.shape[0]
    masks = (np.arange(1, 2**m)[:, None] >> np.arange(m)) & 1 == 1
    lam, val = _face_candidates(q, preference, reg, masks)
    lam = jnp.concatenate([preference[None], lam])
    val = jnp.concatenate([_qp_objective(preference, q, preference, reg)[None], val])
    best = lam[jnp.argmin(val)]
    finite = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(preference)) & jnp.isfinite(reg)
    return jnp.where(finite, best, jnp.nan)


def _fista_solution(q, preference, reg, num_iters):
    """``num_iters`` FISTA steps from ``p`` with step ``1 / L``, ``L = min(trace(Q), max_i
    sum_j |Q_ij|) + mu`` (both bound the largest eigenvalue of the PSD ``Q``)."""
    dt = q.dtype
    bound = jnp.minimum(jnp.trace(q), jnp.max(jnp.sum(jnp.abs(q), axis=1))) + reg
    step = 1 / jnp.maximum(bound, jnp.finfo(dt).tiny)

    def grad(lam):
        return jnp.matmul(q, lam, precision=_HIGHEST) + reg * (lam - preference)

    def body(_, carry):
        lam, z, t = carry
        new = project_simplex(z - step * grad(z))
        t_new = (1 + jnp.sqrt(1 + 4 * t * t)) / 2
        z = new + ((t - 1) / t_new) * (new - lam)
        return new, z, t_new

    lam, _, _ = jax.lax.fori_loop(0, num_iters, body,
                                  (preference, preference, jnp.ones((), dt)))
    return lam


def _polished_solution(q, preference, reg, num_iters):
    """FISTA, then the exact minimiser on the face of FISTA's support (one KKT solve), kept
    when its objective is not larger: exact once FISTA has found the optimal support."""
    lam = _fista_solution(q, preference, reg, num_iters)
    masks = (lam > 0)[None, :]
    cand, val = _face_candidates(q, preference, reg, masks)
    better = val[0] <= _qp_objective(lam, q, preference, reg)
    return jnp.where(better, cand[0], lam)


def solve_task_qp(gram: jax.Array, *, task_matrix=None, preference=None, reg=0.0,
                  num_iters: int = 100, solver: str = "auto") -> jax.Array:
    r"""Solves the server's task-weighting QP over the simplex.

    .. math::
        \lambda^\star = \arg\min_{\lambda \in \Delta_M}
        \tfrac12 \lambda^\top Q \lambda + \tfrac{\mu}{2}\|\lambda - p\|^2,
        \qquad Q = A^\top G A .

    Solvers:

    - ``"exact"`` (``M <= EXACT_MAX_TASKS = 10``): face enumeration. A minimiser with the
      smallest support ``S`` lies in the relative interior of the face
      ``{lambda_i = 0, i not in S}`` and is the unique solution of that face's KKT system
      ``[[H_SS, 1], [1^T, 0]] [lambda_S; nu] = [mu p_S; 1]``, ``H = Q + mu I`` (a second
      solution would give a minimiser of smaller support). All ``2^M - 1`` systems are solved
      as one batched ``(M + 1)``-dimensional solve (off ``S`` padded by ``lambda_i = 0``); each
      solution is clipped at zero and renormalised onto the simplex, and the candidate of
      smallest objective among these and ``p`` is returned, the first on ties (``p`` when it
      is a minimiser, e.g. ``Q = 0``). Every candidate is feasible and the optimal face's
      candidate is the minimiser, so the result is the exact minimiser up to the round-off of
      the linear solves and of the objective (the objective to float precision of
      ``max|Q| + mu``); with several minimisers (a singular ``Q`` and ``mu = 0``) it returns
      one of them. No tolerance and no iteration count.
    - ``"projected_gradient"``: ``num_iters`` iterations of accelerated projected gradient
      (FISTA) from ``p`` with step ``1 / L``, ``L = min(trace(Q), max_i sum_j |Q_ij|) + mu``
      (both bound the largest eigenvalue of the PSD ``Q``); approximate, ``O(L / k^2)`` in
      objective after ``k`` iterations.
    - ``"auto"`` (default): the closed form for ``M = 2`` (exact), ``"exact"`` for
      ``3 <= M <= 10``, and for ``M > 10`` FISTA followed by the exact KKT solve on the face
      of FISTA's support, kept when its objective is not larger (exact once FISTA has found the
      optimal support).

    All solvers are deterministic functions of their inputs (fixed shapes and iteration
    counts), so replicas on different devices stay bitwise identical; they jit and vmap.
    Computed in ``gram``'s compute dtype (float32 for 16-bit inputs), products at full
    precision.

    Args:
      gram: ``(M, M)`` Gram matrix ``G_mn = <Delta_m, Delta_n>`` (PSD).
      task_matrix: ``(M, M)`` correction matrix ``A`` (default identity).
      preference: ``(M,)`` point ``p`` of the simplex (default uniform).
      reg: ``mu >= 0``; ``mu -> inf`` gives ``lambda = p``, ``mu = 0, A = I`` gives MGDA.
      num_iters: FISTA iterations (static, >= 1) of ``"projected_gradient"`` and of
        ``"auto"`` for ``M > 10``; unused otherwise.
      solver: ``"auto"``, ``"exact"`` or ``"projected_gradient"``.

    Returns:
      ``lambda`` of shape ``(M,)`` on the simplex, in ``gram``'s dtype (NaN if ``gram`` is
      not finite, for the exact solver).

    Example:
      >>> g = jnp.array([[1.0, -0.5], [-0.5, 2.0]])
      >>> lam = solve_task_qp(g)          # MGDA min-norm weights
    """
    num_iters = check_static_int("num_iters", num_iters)
    check_choice("solver", solver, QP_SOLVERS)
    gram = jnp.asarray(gram)
    m = gram.shape[0]
    if solver == "exact" and m > EXACT_MAX_TASKS:
        raise ValueError(f"solver='exact' enumerates 2^M - 1 faces and takes "
                         f"M <= {EXACT_MAX_TASKS} tasks, got M = {m}")
    out_dt = gram.dtype if jnp.issubdtype(gram.dtype, jnp.floating) else jnp.result_type(float)
    dt = compute_dtype(out_dt)
    gram = gram.astype(dt)
    a = jnp.eye(m, dtype=dt) if task_matrix is None else jnp.asarray(task_matrix, dt)
    p = jnp.full((m,), 1.0 / m, dt) if preference is None else jnp.asarray(preference, dt)
    reg = jnp.asarray(reg, dt)
    q = jnp.matmul(jnp.matmul(a.T, gram, precision=_HIGHEST), a, precision=_HIGHEST)
    q = (q + q.T) / 2
    if solver == "projected_gradient":
        lam = _fista_solution(q, p, reg, num_iters)
    elif solver == "exact" or (m != 2 and m <= EXACT_MAX_TASKS):
        lam = _exact_solution(q, p, reg)
    elif m == 2:
        lam = _two_task_solution(q, p, reg)
    else:  # auto, M > EXACT_MAX_TASKS
        lam = _polished_solution(q, p, reg, num_iters)
    return lam.astype(out_dt)


def _gram(tree) -> jax.Array:
    """``G_mn = <tree_m, tree_n>`` summed over leaves whose leading axis is the task axis."""
    leaves = [leaf.reshape(leaf.shape[0], -1) for leaf in jax.tree.leaves(tree)]
    return sum(leaf @ leaf.T for leaf in leaves)


def _combine(weights, tree):
    """``sum_m weights_m tree_m`` for every leaf (leading task axis)."""
    return jax.tree.map(lambda leaf: jnp.tensordot(weights.astype(leaf.dtype), leaf, axes=1),
                        tree)


def pareto_gap(task_grads) -> jax.Array:
    r"""Pareto-stationarity gap ``min_{lambda in simplex} ||sum_m lambda_m g_m||`` of the task
    gradients (a pytree whose leaves have a leading task axis); zero exactly at Pareto-stationary
    points. Uses :func:`solve_task_qp` with ``mu = 0``, ``A = I`` (exact for ``M <= 10``;
    beyond, 200 FISTA iterations and an exact solve on their support)."""
    gram = _gram(task_grads)
    lam = solve_task_qp(gram, num_iters=200)
    return jnp.sqrt(jnp.maximum(lam @ gram @ lam, 0))


# --------------------------------------------------------------------------- the problem


class MultiTaskLeastSquares(NamedTuple):
    r"""One client's tasks ``f_{i,m}(x) = 1/2 ||A_m x - b_m||^2`` (exact gradients).

    Oracle protocol of :func:`dream`: ``task_grad(x, task, key)`` is a (stochastic) gradient of
    task ``task`` (an int32 index) at ``x``; here the exact ``A_m^T (A_m x - b_m)`` (the key is
    unused). Stacked over clients (a leading worker axis on every leaf) it is the federated
    problem that :func:`mesh.across_workers` splits. :class:`NoisyTaskGradients` adds noise.

    Attributes:
      a: ``(M, n, d)`` design matrices.
      b: ``(M, n)`` targets.
    """

    a: jax.Array
    b: jax.Array

    def exact_grad(self, x, task):
        ct = compute_dtype(x.dtype)
        a = jnp.take(self.a, task, axis=0).astype(ct)
        b = jnp.take(self.b, task, axis=0).astype(ct)
        return a.T @ (a @ x.astype(ct) - b)

    def task_grad(self, x, task, key):
        del key
        return self.exact_grad(x, task).astype(x.dtype)


class NoisyTaskGradients(NamedTuple):
    """``problem.exact_grad(x, task) + sigma * xi`` with ``xi`` standard normal (drawn with
    ``key``): the stochastic-gradient oracle of the linear-speedup experiment.

    Attributes:
      problem: a :class:`MultiTaskLeastSquares` (or anything with ``exact_grad``).
      noise_std: ``sigma >= 0`` (an array; a leading client axis when stacked).
    """

    problem: MultiTaskLeastSquares
    noise_std: jax.Array

    def exact_grad(self, x, task):
        return self.problem.exact_grad(x, task)

    def task_grad(self, x, task, key):
        ct = compute_dtype(x.dtype)
        noise = jax.random.normal(key, x.shape, ct) * self.noise_std.astype(ct)
        return (self.exact_grad(x, task) + noise).astype(x.dtype)


class WeightedClients(NamedTuple):
    r"""A client-stacked oracle whose clients the server weights: :func:`dream` then averages
    ``Delta_m = sum_i w_i Delta_{i,m} / sum_i w_i`` (``lax.psum``) instead of the plain mean,
    and :func:`global_task_grads` returns ``sum_i w_i grad f_{i,m} / sum_i w_i``.

    Weights proportional to the clients' data sizes give FedAvg's weighting; weight 0 leaves a
    client out, so runs with different numbers of clients can share one compiled program
    (padding). A weight-0 client still computes (its state is carried but never used), and
    ``info`` counts every client. With equal weights the run is the unweighted one.

    Attributes:
      problem: the client-stacked oracle (``task_grad``, ``exact_grad``).
      weight: ``(N,)`` nonnegative client weights with a positive sum.
    """

    problem: Any
    weight: jax.Array

    def exact_grad(self, x, task):
        return self.problem.exact_grad(x, task)

    def task_grad(self, x, task, key):
        return self.problem.task_grad(x, task, key)


def multitask_least_squares(key, *, num_clients: int, num_tasks: int = 2, dim: int = 20,
                            rows: int = 40, heterogeneity: float = 1.0, noise_std: float = 0.0,
                            dtype=jnp.float32):
    r"""Federated multi-task least squares with client heterogeneity.

    ``A_{i,m} = (B_m + h E_{i,m}) / sqrt(n)`` and ``b_{i,m} = beta_m + h e_{i,m}`` with standard
    normal ``B, E, beta, e``: the tasks conflict (their minimisers differ) and the clients differ
    in curvature and targets by the heterogeneity scale ``h``.

    Returns:
      A :class:`MultiTaskLeastSquares` with a leading client axis of size ``num_clients``,
      wrapped in :class:`NoisyTaskGradients` when ``noise_std > 0``.
    """
    num_clients = check_static_int("num_clients", num_clients)
    num_tasks = check_static_int("num_tasks", num_tasks)
    dim = check_static_int("dim", dim)
    rows = check_static_int("rows", rows)
    check_float("heterogeneity", heterogeneity, strict=False, allow_schedule=False)
    check_float("noise_std", noise_std, strict=False, allow_schedule=False)
    # one normal draw cut into B, E, beta, e: a single sampling program compiles several times
    # faster on CPU than a key split and four draws
    shapes = ((1, num_tasks, rows, dim), (num_clients, num_tasks, rows, dim),
              (1, num_tasks, rows), (num_clients, num_tasks, rows))
    sizes = [int(np.prod(s)) for s in shapes]
    z = jax.random.normal(key, (sum(sizes),), jnp.float32)
    parts = jnp.split(z, np.cumsum(sizes)[:-1])
    shared_a, local_a, shared_b, local_b = (p.reshape(s) for p, s in zip(parts, shapes))
    h = jnp.asarray(heterogeneity, jnp.float32)
    a = (shared_a + h * local_a) / np.sqrt(rows)
    b = shared_b + h * local_b
    problem = MultiTaskLeastSquares(a.astype(dtype), b.astype(dtype))
    if noise_std == 0:
        return problem
    return NoisyTaskGradients(problem, jnp.full((num_clients,), noise_std, dtype))


def global_task_grads(problem, x, num_tasks: int) -> jax.Array:
    """Exact ``grad F_m(x)`` for every task, ``(M, d)``, of a client-stacked problem (anything
    with ``exact_grad(x, task)``, leading client axis): the mean over clients, or the weighted
    mean for :class:`WeightedClients`."""
    tasks = jnp.arange(num_tasks, dtype=jnp.int32)

    def client(p):
        return jax.vmap(lambda m: p.exact_grad(x, m))(tasks)

    grads = jax.vmap(client)(problem)
    if isinstance(problem, WeightedClients):
        w = problem.weight.astype(grads.dtype)
        return jnp.tensordot(w / jnp.sum(w), grads, axes=1)
    return jnp.mean(grads, axis=0)


# --------------------------------------------------------------------------- the client step


class DreamState(NamedTuple):
    """One client's state (``across_workers`` adds a leading worker axis).

    Attributes:
      params: the server model ``x_t`` (replicated: equal on every client).
      client_cv: control variates ``c_{i,m}``, leading task axis, compute dtype.
      global_cv: server control variates ``c_m`` (replicated), leading task axis.
      momentum: per-task momentum ``v_{i,m}``, leading task axis, kept across rounds.
      weights: the last QP solution ``lambda`` ``(M,)`` (starts at the preference ``p``).
      count: rounds done, int32.
    """

    params: base.PyTree
    client_cv: base.PyTree
    global_cv: base.PyTree
    momentum: base.PyTree
    weights: jax.Array
    count: jax.Array


def _check_task_inputs(num_tasks, task_matrix, preference):
    if task_matrix is None:
        a = np.eye(num_tasks)
    else:
        a = np.asarray(task_matrix, np.float64)
        if a.shape != (num_tasks, num_tasks) or not np.all(np.isfinite(a)):
            raise ValueError(f"task_matrix must be a finite ({num_tasks}, {num_tasks}) array, "
                             f"got shape {a.shape}")
    if preference is None:
        p = np.full((num_tasks,), 1.0 / num_tasks)
    else:
        p = np.asarray(preference, np.float64)
        if (p.shape != (num_tasks,) or not np.all(np.isfinite(p)) or np.any(p < 0)
                or abs(p.sum() - 1) > 1e-6):
            raise ValueError(f"preference must be a point of the {num_tasks}-simplex "
                             f"(nonnegative, sums to 1), got {preference!r}")
    return a, p


def dream_client(*, num_tasks: int, local_steps: int = 5, local_lr=0.05, global_lr=1.0,
                 momentum=0.9, qp_reg=0.0, task_matrix=None, preference=None,
                 qp_iters: int = 100, control_variates: bool = True,
                 trajectory: str = "shared", fixed_weights: bool = False,
                 axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    """One client's DREAM round as an ``OracleAlgorithm`` calling ``lax.pmean`` over
    ``axis_name`` (run it with :func:`dream`, which wraps it in ``mesh.across_workers``).
    Arguments as in :func:`dream`."""
    num_tasks = check_static_int("num_tasks", num_tasks)
    local_steps = check_static_int("local_steps", local_steps)
    qp_iters = check_static_int("qp_iters", qp_iters)
    check_float("local_lr", local_lr, allow_schedule=False)
    check_float("global_lr", global_lr, allow_schedule=False)
    check_unit_interval("momentum", momentum)
    check_float("qp_reg", qp_reg, strict=False, allow_schedule=False)
    check_bool("control_variates", control_variates)
    check_bool("fixed_weights", fixed_weights)
    check_choice("trajectory", trajectory, TRAJECTORIES)
    a_np, p_np = _check_task_inputs(num_tasks, task_matrix, preference)
    eta_l = jnp.asarray(local_lr, jnp.float32)
    eta_g = jnp.asarray(global_lr, jnp.float32)
    beta = jnp.asarray(momentum, jnp.float32)
    mu = jnp.asarray(qp_reg, jnp.float32)
    per_task = trajectory == "per_task"
    tasks = np.arange(num_tasks, dtype=np.int32)

    def stacked_zeros(x):
        return jax.tree.map(
            lambda a: jnp.zeros((num_tasks, *jnp.shape(a)), compute_dtype(a.dtype)), x)

    def qp_dtype(x):
        return jnp.result_type(*[compute_dtype(a.dtype) for a in jax.tree.leaves(x)])

    def init(x0, key):
        del key
        dt = qp_dtype(x0)
        zeros = stacked_zeros(x0)
        return DreamState(params=x0, client_cv=zeros, global_cv=zeros, momentum=zeros,
                          weights=jnp.asarray(p_np, dt), count=jnp.zeros((), jnp.int32))

    def update(state, oracle, key):
        x = state.params
        dt = qp_dtype(x)
        a_mat = jnp.asarray(a_np, dt)
        p_vec = jnp.asarray(p_np, dt)
        xc = jax.tree.map(lambda a: a.astype(compute_dtype(a.dtype)), x)
        if control_variates:
            correction = jax.tree.map(jnp.subtract, state.global_cv, state.client_cv)
        else:
            correction = stacked_zeros(x)
        path_weights = a_mat @ state.weights

        def task_grad(yy, m, kk):  # one task's gradient, its shapes checked against x's
            g = oracle.task_grad(yy, m, kk)
            check_same_shapes("oracle.task_grad(x, m)", g, "x", x, context="dream")
            return g

        def task_grads(y, k):
            keys = jax.random.split(k, num_tasks)
            if per_task:  # y has a task axis: task m's gradient at its own iterate
                g = jax.vmap(task_grad)(cast_like(y, x), tasks, keys)
            else:
                g = jax.vmap(lambda m, kk: task_grad(cast_like(y, x), m, kk))(tasks, keys)
            return jax.tree.map(lambda gi, ci: gi.astype(ci.dtype), g, correction)

        def body(k, carry):
            y, v, acc = carry
            g = task_grads(y, jax.random.fold_in(key, k))
            v = jax.tree.map(lambda vi, gi, ci: beta * vi + (1 - beta) * (gi + ci),
                             v, g, correction)
            acc = jax.tree.map(jnp.add, acc, v)
            if per_task:
                y = jax.tree.map(lambda yi, vi: yi - eta_l * vi, y, v)
            else:
                y = jax.tree.map(lambda yi, di: yi - eta_l * di, y, _combine(path_weights, v))
            return y, v, acc

        if per_task:
            y0 = jax.tree.map(lambda a: jnp.broadcast_to(a, (num_tasks, *a.shape)), xc)
        else:
            y0 = xc
        _, v, acc = jax.lax.fori_loop(0, local_steps, body,
                                      (y0, state.momentum, stacked_zeros(x)))
        local_delta = jax.tree.map(lambda s: eta_l * s, acc)  # Delta_{i,m} = x_t - y^K_{i,m}
        delta = _server_mean(local_delta, oracle, axis_name)  # the only message
        gram = _gram(delta).astype(dt)
        if fixed_weights:
            lam = p_vec
        else:
            lam = solve_task_qp(gram, task_matrix=a_mat, preference=p_vec, reg=mu,
                                num_iters=qp_iters)
        direction = _combine(a_mat @ lam, delta)
        new_x = jax.tree.map(lambda xi, di, leaf: (xi - eta_g * di).astype(leaf.dtype),
                             xc, direction, x)
        if control_variates:  # SCAFFOLD option II; c_m = mean_i c_{i,m} = Delta_m / (K eta)
            scale = 1 / (local_steps * eta_l)
            client_cv = jax.tree.map(lambda ci, cg, dl: ci - cg + scale * dl,
                                     state.client_cv, state.global_cv, local_delta)
            global_cv = jax.tree.map(lambda d: scale * d, delta)
        else:
            client_cv, global_cv = state.client_cv, state.global_cv
        sent = sum(leaf.size * jnp.finfo(leaf.dtype).bits
                   for leaf in jax.tree.leaves(local_delta))
        dnorm = jnp.sqrt(sum(jnp.sum(d.astype(dt) ** 2) for d in jax.tree.leaves(direction)))
        info = {"oracle_calls": jnp.asarray(local_steps * num_tasks, jnp.int32),
                "bits_sent": jnp.asarray(sent, jnp.float32),
                "direction_norm": dnorm.astype(jnp.float32),
                "max_task_weight": jnp.max(lam).astype(jnp.float32)}
        new_state = DreamState(params=new_x, client_cv=client_cv, global_cv=global_cv,
                               momentum=v, weights=lam.astype(state.weights.dtype),
                               count=state.count + 1)
        return base.Step(x=new_x, info=info), new_state

    return base.OracleAlgorithm(init, update)


def _server_mean(local_delta, oracle, axis_name):
    """``lax.pmean`` of the displacements, or their weighted mean for :class:`WeightedClients`
    (``oracle.weight`` is this client's scalar weight)."""
    if not isinstance(oracle, WeightedClients):
        return jax.lax.pmean(local_delta, axis_name)

    def mean(d):
        w = oracle.weight.astype(d.dtype)
        return jax.lax.psum(w * d, axis_name) / jax.lax.psum(w, axis_name)

    return jax.tree.map(mean, local_delta)


def dream(*, num_tasks: int, num_workers: int, local_steps: int = 5, local_lr=0.05,
          global_lr=1.0, momentum=0.9, qp_reg=0.0, task_matrix=None, preference=None,
          qp_iters: int = 100, control_variates: bool = True, trajectory: str = "shared",
          fixed_weights: bool = False, mesh=None,
          axis_name: str = mesh_lib.DEFAULT_AXIS) -> base.OracleAlgorithm:
    r"""DREAM: drift-aware control variates, momentum-smoothed local steps, QP task weighting.

    Round :math:`t` on client :math:`i` (``K = local_steps``, ``eta = local_lr``), from
    :math:`y^0 = x_t`, with :math:`w = A\lambda_{t-1}`:

    .. math::
        v_m &\leftarrow \beta v_m + (1-\beta)\,(g_{i,m}(y_m) - c_{i,m} + c_m), \\
        y_m &\leftarrow y_m - \eta v_m \quad (\text{per\_task}), \qquad
        y \leftarrow y - \eta \textstyle\sum_m w_m v_m \quad (\text{shared}), \\
        \Delta_{i,m} &= \eta \textstyle\sum_{k<K} v_m^{k} \;(= x_t - y^K_{i,m}\text{ per task}),
        \qquad \Delta_m = \tfrac1N\textstyle\sum_i \Delta_{i,m} \;(\texttt{lax.pmean}),

    then every client solves the same QP on the replicated Gram :math:`G_{mn} =
    \langle\Delta_m, \Delta_n\rangle` (:func:`solve_task_qp`) and applies

    .. math::
        x_{t+1} = x_t - \eta_G \textstyle\sum_m (A\lambda^\star)_m \Delta_m, \quad
        c_{i,m} \leftarrow c_{i,m} - c_m + \frac{\Delta_{i,m}}{K\eta}, \quad
        c_m \leftarrow \frac{\Delta_m}{K\eta} = \tfrac1N\textstyle\sum_i c_{i,m}.

    Only :math:`\Delta_{i,m}` is communicated (the new :math:`c_m` follows from it), so
    ``info["bits_sent"]`` is ``M * size(x) * 32`` per client per round (64 for float64 models).

    Special cases (parameter settings): ``qp_reg -> inf`` or ``fixed_weights=True`` gives the
    linear scalarization with weights ``A p``; ``qp_reg=0, task_matrix=None`` gives MGDA;
    a diagonal ``task_matrix`` scales (prioritizes) tasks; ``control_variates=False,
    momentum=0, trajectory="per_task"`` is FMGDA (:func:`fmgda`).

    Args:
      num_tasks: ``M`` (static, >= 1).
      num_workers: ``N`` clients (static, >= 1).
      local_steps: ``K`` (static, >= 1, default 5).
      local_lr: ``eta_L > 0`` (default 0.05).
      global_lr: ``eta_G > 0`` (default 1).
      momentum: ``beta`` in ``[0, 1)`` (default 0.9); momentum is kept across rounds.
      qp_reg: ``mu >= 0`` (default 0: no regularization, the conflict-avoiding MGDA-type QP).
      task_matrix: ``A``, ``(M, M)`` finite (default identity).
      preference: ``p`` on the simplex (default uniform).
      qp_iters: FISTA iterations of the task QP for ``M > 10`` (static, >= 1; ``M <= 10`` is
        solved exactly).
      control_variates: use the drift-aware corrections ``c_m - c_{i,m}`` (default True).
      trajectory: ``"shared"`` (one local trajectory along ``sum_m w_m v_m``, default) or
        ``"per_task"`` (``M`` trajectories, FMGDA style).
      fixed_weights: skip the QP and use ``lambda = p`` (scalarization baselines).
      mesh: ``None`` (clients simulated with ``vmap``) or a mesh with axis ``axis_name``.
      axis_name: collective axis name (default ``"workers"``).

    Returns:
      An ``OracleAlgorithm`` over all clients. Its oracle has a leading client axis on every
      leaf and the method ``task_grad(x, task, key)`` (e.g. :class:`MultiTaskLeastSquares`;
      wrapped in :class:`WeightedClients`, the server average is weighted); ``Step.x`` is the
      server model ``x_{t+1}``; ``info`` holds ``oracle_calls`` (``K M`` per client: per-task
      gradient evaluations), ``bits_sent``, ``direction_norm`` and ``max_task_weight``.
      Control variates and momentum are stored in the compute dtype (float32 for 16-bit
      models).

    Example:
      >>> prob = multitask_least_squares(jax.random.key(0), num_clients=4)
      >>> alg = dream(num_tasks=2, num_workers=4, local_steps=10, momentum=0.5)
      >>> state, trace = base.run(alg, jnp.zeros(20), prob, jax.random.key(1), 50)

    **Paper mapping.** ``N`` -> ``num_workers``, ``M`` -> ``num_tasks``, ``K`` ->
    ``local_steps``, ``eta_L, eta_G`` -> ``local_lr, global_lr``, momentum ``beta`` ->
    ``momentum``, correction matrix -> ``task_matrix``, regularization ``mu`` -> ``qp_reg``,
    preference -> ``preference``. Only the abstract is public: the client update (SCAFFOLD option
    II control variates per task plus an EMA of the corrected gradients), the QP form and the
    shared local trajectory are our reconstruction (spec ``03_dream.md``). The default
    ``"shared"`` trajectory follows the previous round's weights ``A lambda_{t-1}``: with control
    variates its fixed points are exactly Pareto stationary (``y`` then stays at ``x_t``,
    ``c_{i,m} = grad f_{i,m}(x_t)`` and ``Delta_m = K eta grad F_m``), whereas ``M`` separate
    local trajectories precondition each task differently and leave an ``O(K eta L)`` floor.
    Control variates and momentum start at zero and ``lambda_0 = p``.

    **Theory.** Linear speedup ``O(1/sqrt(NT))`` (non-convex), conflict avoidance at ``mu = 0``
    (``<Delta_m, d> >= ||d||^2``), convergence to a ``mu``-dependent neighbourhood.
    ``tests/distributed/test_dream.py`` checks the QP special cases against closed forms and a
    NumPy active-set solver and rounds (also with weighted clients) against a NumPy
    re-implementation; the property matrix (``tests/test_contract.py``) checks ``mesh=None``
    against ``shard_map``; ``experiments/distributed/dream.py`` checks drift removal against
    FMGDA and the ``1/N`` noise floor (linear speedup).

    References:
      Yuan Zhou, Yidan Ou, Xinli Shi, *DREAM: A Unified Framework for Drift-Corrected Federated
      Multi-Objective Learning*, ICML 2026. Baselines: H. Yang et al., *Federated
      Multi-Objective Learning* (arXiv:2310.09866); S. P. Karimireddy et al., *SCAFFOLD*
      (arXiv:1910.06378); J.-A. Desideri, MGDA (2012).
    """
    client = dream_client(
        num_tasks=num_tasks, local_steps=local_steps, local_lr=local_lr, global_lr=global_lr,
        momentum=momentum, qp_reg=qp_reg, task_matrix=task_matrix, preference=preference,
        qp_iters=qp_iters, control_variates=control_variates, trajectory=trajectory,
        fixed_weights=fixed_weights, axis_name=axis_name)
    return mesh_lib.across_workers(client, num_workers, mesh=mesh, axis_name=axis_name)


def fmgda(*, num_tasks: int, num_workers: int, local_steps: int = 5, local_lr=0.05,
          global_lr=1.0, mesh=None, axis_name: str = mesh_lib.DEFAULT_AXIS):
    """FMGDA (Yang et al. 2023): ``K`` plain local steps per task from ``x_t``, MGDA min-norm
    weights of the averaged displacements, ``x_{t+1} = x_t - eta_G sum_m lambda_m Delta_m``.
    :func:`dream` with ``control_variates=False, momentum=0, trajectory="per_task",
    qp_reg=0``. With a stochastic oracle this is FSMGDA. Arguments as in :func:`dream`."""
    return dream(num_tasks=num_tasks, num_workers=num_workers, local_steps=local_steps,
                 local_lr=local_lr, global_lr=global_lr, momentum=0.0, qp_reg=0.0,
                 control_variates=False, trajectory="per_task", mesh=mesh,
                 axis_name=axis_name)


def fedavg_scalarized(*, num_tasks: int, num_workers: int, local_steps: int = 5,
                      local_lr=0.05, global_lr=1.0, preference=None, mesh=None,
                      axis_name: str = mesh_lib.DEFAULT_AXIS):
    """FedAvg on the fixed scalarization ``sum_m p_m f_{i,m}``: :func:`dream` with
    ``fixed_weights=True, control_variates=False, momentum=0``."""
    return dream(num_tasks=num_tasks, num_workers=num_workers, local_steps=local_steps,
                 local_lr=local_lr, global_lr=global_lr, momentum=0.0, preference=preference,
                 control_variates=False, fixed_weights=True, mesh=mesh, axis_name=axis_name)


def scaffold_scalarized(*, num_tasks: int, num_workers: int, local_steps: int = 5,
                        local_lr=0.05, global_lr=1.0, preference=None, mesh=None,
                        axis_name: str = mesh_lib.DEFAULT_AXIS):
    """SCAFFOLD (option II) on the fixed scalarization ``sum_m p_m f_{i,m}``: :func:`dream` with
    ``fixed_weights=True, control_variates=True, momentum=0``."""
    return dream(num_tasks=num_tasks, num_workers=num_workers, local_steps=local_steps,
                 local_lr=local_lr, global_lr=global_lr, momentum=0.0, preference=preference,
                 control_variates=True, fixed_weights=True, mesh=mesh, axis_name=axis_name)


def centralized_mgda(*, num_tasks: int, num_workers: int, learning_rate=0.5, mesh=None,
                     axis_name: str = mesh_lib.DEFAULT_AXIS):
    """Centralized MGDA (reference): one gradient per task and client at ``x_t``, averaged
    (the exact ``grad F_m`` for full gradients), min-norm weights, step ``learning_rate``.
    :func:`fmgda` with ``local_steps=1, local_lr=learning_rate, global_lr=1``."""
    return fmgda(num_tasks=num_tasks, num_workers=num_workers, local_steps=1,
                 local_lr=learning_rate, global_lr=1.0, mesh=mesh, axis_name=axis_name)
