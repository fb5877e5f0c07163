r"""# One-step delay (PipeDream-2BW): Muon robustness and an error-feedback correction

*Philip Zmushko, Egor Petrov, Nursultan Abdullaev, Mikhail Khrushchev, Samuel Horvath, "One-Step
Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline Parallel LLM Pretraining",
ICML 2026, arXiv:2606.30634.*

PipeDream-2BW keeps two weight versions per pipeline stage, so every gradient is exactly one step
stale whatever the pipeline depth. The method: any optimizer $U$ on stale gradients,
$$x_{t+1} = x_t - \eta\, U_t\big(g(x_{t-1})\big),$$
(`one_step_delay(inner)`, first step undelayed: $x_{-1} = x_0$), and the error-feedback
correction chained after it (`delay_correction(gamma)`),
$$d_t = u_t + \gamma\,(u_t - u_{t-1}),\qquad x_{t+1} = x_t + d_t,$$
where $u_t$ is the delayed optimizer's update: the update computed at step $t$ is the one step
$t-1$ should have applied, so the difference to what it did apply is fed back one step late. The
paper's exact rule is not public (abstract and table of contents only); this reconstruction is
documented in `jaxopt_icml/optim/delayed_muon.py`. The inner optimizers are optax's
(`optax.adam`, `optax.adamw`, `optax.contrib.muon`); $\gamma = 1$.

**Claims checked** (`CLAIMS`, spec `56_delayed_muon.md`):

1. *Semantics (exact).* On a 3-layer tanh MLP (full batch), `one_step_delay(optax.sgd(0.1))`
   equals a hand-written loop that evaluates gradients at $x_{t-1}$ over 50 steps (max abs
   difference $\le 10^{-7}$); and an 8-stage pipeline written with `shard_map`/`vmap` over a
   `stage` axis, activations sent forward and cotangents backward with `lax.ppermute`, each
   stage stashing the weight version and input of the in-flight batch (forward of batch $t$ and
   backward of batch $t-1$ in the same ticks), equals `one_step_delay(optax.adam(.),
   first_step="zero")` on the whole model to $10^{-5}$ after 12 steps.
2. *The correction recovers most of the delay penalty.* Matrix least squares
   $W \in \mathbb{R}^{32\times 32}$, inputs with column scales `logspace(0, -1.5)`, label noise
   0.1, minibatch 32, 600 steps, $W_0 = 0$; the learning rate is tuned for the synchronous run
   on a 4-point grid and reused for the delayed runs (same data stream for all three). The
   fraction of the delay penalty left, (corrected $-$ sync)/(delayed $-$ sync) of the seed-median
   final excess loss, is $\le 0.5$ for Adam ($\beta_1 = 0.9, 0.95$) and Muon ($\beta = 0.95$),
   $\le 0.8$ for Muon ($\beta = 0.9$).
3. *Optimizer dependence (the headline, toy scale).* Teacher-student regression with a 2-layer
   bias-free tanh MLP student (spec: $d = 64$, width 256, 2000 steps; see below for FULL and
   QUICK), 8 outputs, teacher width 16, fresh noiseless minibatches of 64, test loss on 1024
   held-out points, each optimizer at its own sync-tuned learning rate (grid): the
   relative degradation (delayed $-$ sync)/sync of the final test loss is smaller for Muon
   ($\beta = 0.95$, Nesterov) than for AdamW ($\beta_1 = 0.9$, $\beta_2 = 0.95$) on $\ge 6/8$
   seeds. The spec's linear least-squares probe did not show this; the MLP does.
4. *Stability theory.* EMA momentum $m_t = \beta m_{t-1} + (1-\beta) g$ on $f = \lambda x^2/2$:
   the synchronous method is stable iff $\eta\lambda < 2(1+\beta)/(1-\beta)$, the delayed one iff
   $\eta\lambda < 1$ for every $\beta$ (characteristic polynomials
   $z^2 - (1+\beta-\eta\lambda(1-\beta))z + \beta$ and $z^2 - (1+\beta)z + \beta +
   \eta\lambda(1-\beta)$). The boundaries are measured by bisection on the spectral radius of
   the Jacobian of the actual optax step (`optax.ema` + `optax.scale`, wrapped or not), for
   $\beta \in \{0, 0.5, 0.9, 0.95, 0.99\}$; relative error $\le 10^{-4}$. Momentum therefore
   cannot absorb a delay on its own: the delayed stable range does not grow with $\beta$, so
   robustness has to come from the normalized (Muon) update. `summarize` also reports the
   boundary with the correction ($\gamma = 1$), not claimed.

**Results (key 0; QUICK and FULL agree on claims 1, 2, 4, which use the same sizes).**
Claim 1: difference 0 (bitwise) and $1.2\times10^{-7}$. Claim 2 (fraction of the delay penalty
left by the correction): Adam $\beta_1 = 0.9$: 0.13, $0.95$: 0.02, Muon $\beta = 0.95$: 0.26,
$0.9$: 0.44 (the penalties themselves are small at the sync-tuned learning rate, 4-16% of the
excess loss; at larger learning rates they grow and the correction still removes most of
them). Claim 3: Muon is less degraded on 7/8 seeds at QUICK and on 6/8 at FULL (exactly the
threshold; median relative degradation AdamW 5.8 vs Muon 4.2 at FULL, both large because the
noiseless teacher makes the sync loss small); the correction reduces both (1.4 and 1.8). The
margin of claim 3 is thin and it should be read as "AdamW degrades somewhat more", not as the
paper's 0.2 vs 0.012 contrast. Claim 4: boundaries within $3\times10^{-6}$ (FULL grid) of the
closed forms; with the correction ($\gamma = 1$) the delayed boundary becomes 0.62
($\beta = 0$), 1.0 ($0.5$), 2.7 ($0.9$), 4.0 ($0.95$), 9.5 ($0.99$): the correction widens the
stable range only together with momentum.

FULL shrinks claim 3 to $d = 32$, width 128, 1000 steps, a 4-point grid (the spec's size,
`Config(mlp_dim=64, mlp_width=256, mlp_steps=2000)`, takes far longer on a CPU); QUICK uses
$d = 16$, width 64, 300 steps.

Precision: float32 everywhere (differences measured are orders of magnitude above rounding);
claim 4's eigenvalues are computed by NumPy in float64 from the float32 Jacobians.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import mesh as mesh_lib
from jaxopt_icml import theory
from jaxopt_icml.optim.delayed_muon import delay_correction, one_step_delay

SLUG, TITLE = runner.paper(__name__)
REFERENCE = (
    "Philip Zmushko, Egor Petrov, Nursultan Abdullaev, Mikhail Khrushchev, Samuel Horvath, "
    "*One-Step Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline Parallel "
    "LLM Pretraining*, ICML 2026, arXiv:2606.30634.")
UPDATE = r"""
Delayed optimizer (`one_step_delay(inner)`): $u_t = \text{inner}(g(x_{t-1}))$; correction
(`delay_correction(gamma)`): $x_{t+1} = x_t + u_t + \gamma(u_t - u_{t-1})$. Methods below:
`<optimizer> (sync)`, `(delayed)`, `(delayed + EF)` for AdamW and Muon (claim 3; claim 2 uses
Adam and Muon with two momenta each). Learning rates are swept in `run`; the ones shown are the
middle of each grid.
"""

MODES = ("sync", "delayed", "delayed + EF")


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes of the experiment. ``seeds`` (claim 3) is vmapped, and sharded with ``shard=True``."""

    seeds: int = 8
    gamma: float = 1.0
    # claim 1: semantics (3-layer MLP) and the 8-stage pipeline
    sem_sizes: tuple = (6, 16, 16, 3)
    sem_points: int = 32
    sem_steps: int = 50
    sem_lr: float = 0.1
    pipe_stages: int = 8
    pipe_width: int = 8
    pipe_batch: int = 8
    pipe_steps: int = 12
    pipe_lr: float = 1e-2
    # claim 2: matrix least squares
    ls_seeds: int = 3
    ls_dim: int = 32
    ls_batch: int = 32
    ls_steps: int = 600
    ls_noise: float = 0.1
    ls_scale_min: float = -1.5
    ls_adam_lrs: tuple = (1e-3, 3e-3, 1e-2, 3e-2)
    ls_muon_lrs: tuple = (3e-3, 1e-2, 3e-2, 1e-1)
    ls_adam_b1s: tuple = (0.9, 0.95)
    ls_muon_betas: tuple = (0.95, 0.9)
    ls_tail: int = 30
    # claim 3: MLP teacher-student
    mlp_dim: int = 64
    mlp_width: int = 256
    mlp_teacher: int = 16
    mlp_out: int = 8
    mlp_batch: int = 64
    mlp_steps: int = 2000
    mlp_test: int = 1024
    mlp_adamw_lrs: tuple = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
    mlp_muon_lrs: tuple = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    mlp_b2: float = 0.95
    mlp_weight_decay: float = 0.0
    mlp_record: int = 50
    # claim 4: stability
    stab_betas: tuple = (0.0, 0.5, 0.9, 0.95, 0.99)
    stab_grid: int = 2001


QUICK = Config(mlp_dim=16, mlp_width=64, mlp_teacher=8, mlp_batch=32,
               mlp_steps=300, mlp_test=512, mlp_adamw_lrs=(1e-3, 3e-3, 1e-2, 3e-2),
               mlp_muon_lrs=(3e-3, 1e-2, 3e-2, 1e-1), mlp_record=30, stab_grid=801)
# FULL shrinks the spec's claim-3 student (d = 64, width 256, 2000 steps) to d = 32, width 128,
# 1000 steps so that it runs in minutes on a CPU; Config(mlp_dim=64, mlp_width=256,
# mlp_steps=2000) is the spec's size (an accelerator run).
FULL = Config(mlp_dim=32, mlp_width=128, mlp_steps=1000, mlp_adamw_lrs=(1e-3, 3e-3, 1e-2, 3e-2),
              mlp_muon_lrs=(1e-3, 3e-3, 1e-2, 3e-2))


# --------------------------------------------------------------------------- problems


def ls_scales(cfg: Config, dtype=jnp.float32) -> jax.Array:
    """Column scales of the least-squares inputs: ``logspace(0, ls_scale_min, ls_dim)``."""
    return jnp.logspace(0.0, cfg.ls_scale_min, cfg.ls_dim, dtype=dtype)


def stability_bounds(beta):
    """Closed-form stable ranges of ``eta * lambda`` for EMA momentum on a quadratic:
    ``(sync, delayed) = (2 (1 + beta) / (1 - beta), 1)``."""
    beta = np.asarray(beta, np.float64)
    return 2.0 * (1.0 + beta) / (1.0 - beta), np.ones_like(beta)


def make_problem(cfg: Config, key: jax.Array) -> dict:
    """Shared constants: least-squares input scales (condition number of the input
    covariance), the model sizes, and the closed-form stability boundaries of claim 4. Per-seed
    data (targets, teachers, minibatches) are drawn inside :func:`run` from the seed keys."""
    del key
    sc = np.asarray(ls_scales(cfg))
    sync, delayed = stability_bounds(cfg.stab_betas)
    return {
        "ls_scales_range": (float(sc.min()), float(sc.max())),
        "ls_input_condition": float((sc.max() / sc.min()) ** 2),
        "mlp_sizes": (cfg.mlp_dim, cfg.mlp_width, cfg.mlp_out),
        "stab_betas": tuple(cfg.stab_betas),
        "sync_bound": tuple(float(v) for v in sync),
        "delayed_bound": tuple(float(v) for v in delayed),
    }


# --------------------------------------------------------------------------- methods


def make_optimizer(kind: str, lr, beta, mode: str, gamma=1.0, cfg: Config = FULL):
    """``kind`` in {"adam", "adamw", "muon"}, ``mode`` in :data:`MODES`; ``lr`` and ``beta``
    (Adam's b1 or Muon's beta) may be traced, so a grid is one vmapped program."""
    if kind == "adam":
        tx = optax.adam(lr, b1=beta)
    elif kind == "adamw":
        tx = optax.adamw(lr, b1=beta, b2=cfg.mlp_b2, weight_decay=cfg.mlp_weight_decay)
    elif kind == "muon":
        tx = optax.contrib.muon(lr, beta=beta, adam_b2=cfg.mlp_b2)
    else:
        raise ValueError(f"kind must be 'adam', 'adamw' or 'muon', got {kind!r}")
    if mode == "sync":
        return tx
    if mode == "delayed":
        return one_step_delay(tx)
    if mode == "delayed + EF":
        return optax.chain(one_step_delay(tx), delay_correction(gamma))
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def make_methods(cfg: Config) -> dict:
    """The claim-3 methods at the middle learning rate of each grid (for display; ``run``
    rebuilds them with traced learning rates over the grids)."""
    out = {}
    for kind, name, lrs, beta in (("adamw", "AdamW", cfg.mlp_adamw_lrs, 0.9),
                                  ("muon", "Muon", cfg.mlp_muon_lrs, 0.95)):
        for mode in MODES:
            out[f"{name} ({mode})"] = make_optimizer(kind, lrs[len(lrs) // 2], beta, mode,
                                                     cfg.gamma, cfg)
    return out


# XLA's CPU backend at optimization level 1 instead of 2 halves the compile time of these
# small programs (which dominates QUICK on a CPU) and leaves the run time unchanged (measured).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 1}


def _compiler_options():
    return COMPILER_OPTIONS if jax.default_backend() == "cpu" else None


def _jit(fn, **kwargs):
    return jax.jit(fn, compiler_options=_compiler_options(), **kwargs)


def _modes_runner(kind, lr, beta, cfg: Config):
    """The three :data:`MODES` of one optimizer as ``(init, step, params)``.

    The delayed run and the corrected one are the same transformation with ``gamma`` in
    ``(0, cfg.gamma)`` (``gamma = 0`` is exactly the identity correction), vmapped over
    ``gamma``: the compiled program holds two optimizer copies instead of three.
    ``step(carry, grad_fn)`` feeds each copy ``grad_fn`` at its own parameters (the caller's
    minibatch is shared, so the modes see the same data stream)."""
    sync = make_optimizer(kind, lr, beta, "sync", cfg=cfg)
    gammas = jnp.asarray([0.0, cfg.gamma])

    def delayed(g):
        return make_optimizer(kind, lr, beta, "delayed + EF", g, cfg)

    def init(p0):
        pd = jax.tree.map(lambda a: jnp.stack([a, a]), p0)
        return (p0, sync.init(p0)), (pd, jax.vmap(lambda g: delayed(g).init(p0))(gammas))

    def step(carry, grad_fn):
        (p, s), (pd, sd) = carry
        u, s = sync.update(grad_fn(p), s, p)

        def one(g, q, t):
            v, t = delayed(g).update(grad_fn(q), t, q)
            return optax.apply_updates(q, v), t

        pd, sd = jax.vmap(one)(gammas, pd, sd)
        return (optax.apply_updates(p, u), s), (pd, sd)

    def params(carry):
        (p, _), (pd, _) = carry
        return [p] + [jax.tree.map(lambda a, j=j: a[j], pd) for j in range(2)]

    return init, step, params


# --------------------------------------------------------------------------- claim 1


def _mlp(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b[None])
    w, b = params[-1]
    return x @ w + b[None]


def _semantics(cfg: Config, key):
    """Max abs difference between ``one_step_delay(sgd)`` and a hand-written stale loop."""
    keys = jax.random.split(key, len(cfg.sem_sizes))
    params = tuple((jax.random.normal(k, (m, n)) / jnp.sqrt(m), jnp.zeros(n))
                   for k, m, n in zip(keys[:-1], cfg.sem_sizes[:-1], cfg.sem_sizes[1:],
                                      strict=True))
    kx, ky = jax.random.split(keys[-1])
    x = jax.random.normal(kx, (cfg.sem_points, cfg.sem_sizes[0]))
    y = jax.random.normal(ky, (cfg.sem_points, cfg.sem_sizes[-1]))
    grad = jax.grad(lambda p: 0.5 * jnp.mean(jnp.sum((_mlp(p, x) - y) ** 2, -1)))
    tx = one_step_delay(optax.sgd(cfg.sem_lr))

    def body(carry, _):
        p, s, q, q_prev = carry
        u, s = tx.update(grad(p), s, p)
        p = optax.apply_updates(p, u)
        q_new = jax.tree.map(lambda a, g: a - cfg.sem_lr * g, q, grad(q_prev))  # g(x_{t-1})
        diff = jnp.max(jnp.stack([jnp.max(jnp.abs(a - b)) for a, b in
                                  zip(jax.tree.leaves(p), jax.tree.leaves(q_new), strict=True)]))
        return (p, s, q_new, q), diff

    _, diffs = jax.lax.scan(body, (params, tx.init(params), params, params), None,
                            length=cfg.sem_steps)
    return jnp.max(diffs)


def pipeline_stage_step(inner, loss_scale, num_stages, axis_name="stage"):
    """One optimizer step of a PipeDream-2BW stage (for ``mesh.simulate`` / ``mesh.shard``).

    ``step(carry, x, y) -> (carry, out)`` for one stage of an ``S``-stage pipeline of blocks
    ``h -> tanh(h W + b)`` with loss ``loss_scale * sum((h_S - y)^2)`` (``loss_scale = 1/(2B)``
    gives the batch-mean of ``||h_S - y||^2 / 2``). ``carry`` holds the stage's current weights,
    the stashed weights and input of the in-flight batch, its target, the optimizer state and
    the step count. In ``S`` ticks, the forward pass of batch ``t`` (current weights) moves
    activations to the next stage with ``ppermute`` while the backward pass of batch ``t - 1``
    (stashed weights, stashed inputs) moves cotangents to the previous stage; then the stage
    applies ``inner`` to the gradient of batch ``t - 1``. No update at ``t = 0`` (nothing came
    back yet). Every stage receives the batch; only stage 0 reads ``x``, only the last ``y``.
    """
    inner = optax.with_extra_args_support(inner)

    def block(p, h):
        return jnp.tanh(h @ p["w"] + p["b"][None])

    def step(carry, x, y):
        i = jax.lax.axis_index(axis_name)
        n = num_stages
        # cyclic shifts (vmap's ppermute needs a full permutation); the wrapped-around
        # messages arrive at stages that ignore them (stage 0 reads x, the last stage c_top)
        fwd = [(j, (j + 1) % n) for j in range(n)]
        bwd = [((j + 1) % n, j) for j in range(n)]
        p, p_old, a_old, y_old = carry["p"], carry["p_old"], carry["a_old"], carry["y_old"]
        last = i == n - 1
        # cotangent at the last stage's output for the in-flight batch (stashed weights)
        out_old = block(p_old, a_old)
        c_top = 2.0 * loss_scale * (out_old - y_old)
        _, vjp = jax.vjp(block, p_old, a_old)  # the backward pass uses the stashed version

        def tick(k, c):
            h_recv, a_new, c_recv, grads = c
            # forward of batch t: stage k consumes its input at tick k
            a_new = jnp.where(i == k, h_recv, a_new)
            h = block(p, h_recv)
            # backward of batch t-1: stage n-1-k at tick k
            g_p, g_a = vjp(jnp.where(last & (k == 0), c_top, c_recv))
            grads = jax.tree.map(lambda acc, g: jnp.where(i == n - 1 - k, g, acc), grads, g_p)
            return (jax.lax.ppermute(h, axis_name, fwd), a_new,
                    jax.lax.ppermute(g_a, axis_name, bwd), grads)

        zeros = jnp.zeros_like(x)
        _, a_new, _, grads = jax.lax.fori_loop(
            0, n, tick, (x, zeros, zeros, jax.tree.map(jnp.zeros_like, p)))
        first = carry["count"] == 0
        u, s = inner.update(grads, carry["opt"], p)
        u = jax.tree.map(lambda v: jnp.where(first, jnp.zeros_like(v), v), u)
        s = jax.tree.map(lambda a, b: jnp.where(first, a, b), carry["opt"], s)
        new = {"p": optax.apply_updates(p, u), "p_old": p, "a_old": a_new, "y_old": y,
               "opt": s, "count": carry["count"] + 1}
        return new, new["p"]

    return step


def _pipeline(cfg: Config, key, shard: bool = False):
    """Max abs difference between the ``S``-stage pipeline and ``one_step_delay(adam,
    first_step="zero")`` on the stacked model, after ``pipe_steps`` steps."""
    S, d, B = cfg.pipe_stages, cfg.pipe_width, cfg.pipe_batch
    kw, kx, ky = jax.random.split(key, 3)
    w0 = jax.random.normal(kw, (S, d, d)) / jnp.sqrt(d) * 1.5
    params = {"w": w0, "b": jnp.zeros((S, d))}
    xs = jax.random.normal(kx, (cfg.pipe_steps, B, d))
    ys = 0.5 * jax.random.normal(ky, (cfg.pipe_steps, B, d))
    inner = optax.adam(cfg.pipe_lr)

    # reference: the wrapper on the whole (stacked) model on one device
    def loss(p, x, y):
        h = x
        for j in range(S):
            h = jnp.tanh(h @ p["w"][j] + p["b"][j][None])
        return 0.5 * jnp.mean(jnp.sum((h - y) ** 2, -1))

    tx = one_step_delay(inner, first_step="zero")

    def ref_body(c, xy):
        p, s = c
        u, s = tx.update(jax.grad(loss)(p, *xy), s, p)
        return (optax.apply_updates(p, u), s), None

    (ref, _), _ = _jit(lambda p: jax.lax.scan(ref_body, (p, tx.init(p)), (xs, ys)))(params)

    # the pipeline: one stage per device (shard) or per vmap lane (simulate)
    step = pipeline_stage_step(inner, 0.5 / B, S)

    def run_stage(p, xs_, ys_):
        p0 = {"w": p["w"], "b": p["b"]}
        carry = {"p": p0, "p_old": p0, "a_old": jnp.zeros((B, d)), "y_old": jnp.zeros((B, d)),
                 "opt": inner.init(p0), "count": jnp.zeros([], jnp.int32)}
        carry, _ = jax.lax.scan(lambda c, xy: step(c, *xy), carry, (xs_, ys_))
        return carry["p"]

    rep = lambda a: jnp.broadcast_to(a, (S, *a.shape))
    if shard and jax.local_device_count() >= S:
        mesh = mesh_lib.make_mesh("stage", jax.local_devices()[:S])
        got = mesh_lib.shard(run_stage, mesh, axis_name="stage")(params, rep(xs), rep(ys))
    else:
        got = mesh_lib.simulate(run_stage, S, axis_name="stage")(params, rep(xs), rep(ys))
    return max(float(jnp.max(jnp.abs(a - b))) for a, b in
               zip(jax.tree.leaves(got), jax.tree.leaves(ref), strict=True))


# --------------------------------------------------------------------------- claim 2


@functools.lru_cache(maxsize=16)
def _ls_program(cfg: Config, kind: str):
    """Jitted ``(lrs, betas, keys) -> excess-loss traces (lr, beta, seed, mode, steps)``."""
    D, B = cfg.ls_dim, cfg.ls_batch
    sc = ls_scales(cfg)

    def one(lr, beta, key):
        kw, kd = jax.random.split(key)
        w_star = jax.random.normal(kw, (D, D)) / jnp.sqrt(D)
        init, step, params = _modes_runner(kind, lr, beta, cfg)
        w0 = jnp.zeros((D, D))

        def loss(w, x, y):
            return 0.5 * jnp.mean(jnp.sum((x @ w - y) ** 2, -1))

        def excess(w):
            return 0.5 * jnp.sum(sc[:, None] ** 2 * (w - w_star) ** 2)

        def body(carry, k):
            kx, ke = jax.random.split(k)
            x = jax.random.normal(kx, (B, D)) * sc[None]
            y = x @ w_star + cfg.ls_noise * jax.random.normal(ke, (B, D))
            carry = step(carry, lambda w: jax.grad(loss)(w, x, y))
            return carry, jnp.stack([excess(w) for w in params(carry)])

        _, tr = jax.lax.scan(body, init(w0), jax.random.split(kd, cfg.ls_steps))
        return tr.T  # (mode, steps)

    f = jax.vmap(jax.vmap(jax.vmap(one, (None, None, 0)), (None, 0, None)), (0, None, None))
    return _jit(f)


def _least_squares(cfg: Config, key):
    out = {}
    k_adam, k_muon = jax.random.split(key)
    for kind, lrs, betas, k in (("adam", cfg.ls_adam_lrs, cfg.ls_adam_b1s, k_adam),
                                ("muon", cfg.ls_muon_lrs, cfg.ls_muon_betas, k_muon)):
        keys = runner.seed_keys(k, cfg.ls_seeds)
        tr = _ls_program(cfg, kind)(jnp.asarray(lrs), jnp.asarray(betas), keys)
        out[kind] = np.asarray(tr)
    return out


# --------------------------------------------------------------------------- claim 3


def _mlp_apply(p, x):
    return jnp.tanh(x @ p["w1"]) @ p["w2"]


@functools.lru_cache(maxsize=16)
def _mlp_program(cfg: Config, kind: str, shard: bool):
    """``(lrs, keys) -> test-loss traces (seed, lr, mode, records)``, vmapped (or sharded) over
    the seed keys."""
    D, H, K, O, B = cfg.mlp_dim, cfg.mlp_width, cfg.mlp_teacher, cfg.mlp_out, cfg.mlp_batch
    beta = 0.9 if kind == "adamw" else 0.95
    every = max(1, cfg.mlp_steps // cfg.mlp_record)

    def one(lr, key):
        kt1, kt2, ks1, ks2, kx, kd = jax.random.split(key, 6)
        teacher = {"w1": 2.0 * jax.random.normal(kt1, (D, K)) / jnp.sqrt(D),
                   "w2": jax.random.normal(kt2, (K, O)) / jnp.sqrt(K)}
        p0 = {"w1": jax.random.normal(ks1, (D, H)) / jnp.sqrt(D),
              "w2": jax.random.normal(ks2, (H, O)) / jnp.sqrt(H)}
        x_test = jax.random.normal(kx, (cfg.mlp_test, D))
        y_test = _mlp_apply(teacher, x_test)
        init, step, params = _modes_runner(kind, lr, beta, cfg)

        def loss(p, x, y):
            return 0.5 * jnp.mean(jnp.sum((_mlp_apply(p, x) - y) ** 2, -1))

        def body(carry, k):
            x = jax.random.normal(k, (B, D))
            y = _mlp_apply(teacher, x)
            return step(carry, lambda p: jax.grad(loss)(p, x, y)), None

        def chunk(carry, ks):
            carry, _ = jax.lax.scan(body, carry, ks)
            return carry, jnp.stack([loss(p, x_test, y_test) for p in params(carry)])

        n_rec = cfg.mlp_steps // every
        ks = jax.random.split(kd, n_rec * every).reshape(n_rec, every, -1)
        _, tr = jax.lax.scan(chunk, init(p0), ks)
        return tr.T  # (mode, records)

    per_seed = lambda lrs, key: jax.vmap(one, (0, None))(lrs, key)
    return runner.seeded_program(jax.vmap(per_seed, (None, 0)), (None, 0), shard=shard,
                                 compiler_options=_compiler_options())


def _teacher_student(cfg: Config, key, shard=False, progress=False):
    out = {}
    keys = runner.seed_keys(key, cfg.seeds)  # same seeds (teachers, data) for both optimizers
    items = (("adamw", cfg.mlp_adamw_lrs), ("muon", cfg.mlp_muon_lrs))
    for kind, lrs in runner.progress(items, enabled=progress, desc="teacher-student"):
        tr = _mlp_program(cfg, kind, bool(shard))(jnp.asarray(lrs), keys)
        out[kind] = np.asarray(jax.device_get(tr))
    return out


# --------------------------------------------------------------------------- claim 4


def _ema_momentum(eta, beta):
    return optax.chain(optax.ema(beta, debias=False), optax.scale(-eta))


@functools.lru_cache(maxsize=4)
def _jacobian_program(mode: str):
    """Jitted ``(eta_lambda, beta) -> Jacobians`` (both of shape ``(N,)``) of one step on
    ``f = x^2/2`` (``lambda = 1``) in the state's float leaves, at a state past the first step
    (count 1). ``mode``: "sync", "delayed" or "corrected" (delayed + correction, gamma = 1)."""

    def make(eta, beta):
        tx = _ema_momentum(eta, beta)
        if mode == "sync":
            return tx
        if mode == "delayed":
            return one_step_delay(tx)
        return optax.chain(one_step_delay(tx), delay_correction(1.0))

    def jac(eta, beta):
        tx = make(eta, beta)
        x0 = jnp.zeros([])
        s0 = jax.tree.map(lambda a: jnp.ones_like(a) if jnp.issubdtype(a.dtype, jnp.integer)
                          else a, tx.init(x0))
        flat, unravel = jax.flatten_util.ravel_pytree((x0, _floats(s0)))

        def step(z):
            x, fs = unravel(z)
            s = _merge_floats(s0, fs)
            u, s = tx.update(x, s, x)  # gradient of x^2/2 is x
            return jax.flatten_util.ravel_pytree((x + u, _floats(s)))[0]

        return jax.jacfwd(step)(flat)

    return _jit(jax.vmap(jac))


def _floats(tree):
    return [a for a in jax.tree.leaves(tree) if jnp.issubdtype(a.dtype, jnp.floating)]


def _merge_floats(tree, floats):
    leaves, treedef = jax.tree.flatten(tree)
    it = iter(floats)
    out = [next(it) if jnp.issubdtype(a.dtype, jnp.floating) else a for a in leaves]
    return jax.tree.unflatten(treedef, out)


def spectral_radius(mode: str, eta_lambda, betas) -> np.ndarray:
    """Spectral radius of the linearized optax step at each pair ``(eta_lambda[j],
    betas[j])`` (1-D arrays of equal length); eigenvalues by NumPy in float64."""
    J = _jacobian_program(mode)(jnp.asarray(eta_lambda, jnp.float32),
                                jnp.asarray(betas, jnp.float32))
    return np.max(np.abs(np.linalg.eigvals(np.asarray(J, np.float64))), axis=-1)


def stability_boundary(mode: str, betas, grid: int = 2001, lo=1e-2, hi=1e3):
    """Largest stable ``eta * lambda`` per beta, and the coarse spectral-radius curves.

    A log grid of ``grid`` points on ``[lo, hi]``, then a linear grid of ``grid`` points inside
    the bracket of the first unstable point (relative resolution about
    ``log(hi / lo) / grid**2``); both passes evaluate all betas in one call of one shape.
    Returns ``(boundaries (betas,), etas (grid,), rho (betas, grid))``; NaN where no sign
    change was found.
    """
    betas = np.asarray(betas, np.float64)
    nb = len(betas)
    etas = np.geomspace(lo, hi, grid)
    rho = spectral_radius(mode, np.tile(etas, nb), np.repeat(betas, grid)).reshape(nb, grid)
    first = np.array([np.argmax(r >= 1.0) if np.any(r >= 1.0) else -1 for r in rho])
    ok = first > 0
    idx = np.where(ok, first, 1)
    a, b = etas[idx - 1], etas[idx]
    fine = a[:, None] + (b - a)[:, None] * np.linspace(0.0, 1.0, grid)[None]
    r = spectral_radius(mode, fine.ravel(), np.repeat(betas, grid)).reshape(nb, grid)
    k = np.array([np.argmax(x >= 1.0) for x in r])
    bound = np.where(k > 0, fine[np.arange(nb), np.maximum(k - 1, 0)], a)
    return np.where(ok, bound, np.nan), etas, rho


def _stability(cfg: Config):
    betas = np.asarray(cfg.stab_betas)
    out = {"betas": betas}
    for mode in ("sync", "delayed", "corrected"):
        out[mode], etas, rho = stability_boundary(mode, betas, cfg.stab_grid)
        out[f"curve_{mode}"] = rho
    out["curve_etas"] = etas
    return out


# --------------------------------------------------------------------------- run


def run(cfg: Config, key: jax.Array, *, shard: bool = False, progress: bool = False,
        out_dir=None, resume: bool = False) -> dict:
    """Runs the four parts (no checkpoints: every loop is seconds to minutes).

    Returns a dict: ``semantics_diff`` and ``pipeline_diff`` (floats); ``ls[kind]`` excess-loss
    traces (lr, beta, seed, mode, steps) for kind in {"adam", "muon"} with the grids in
    ``ls_lrs``/``ls_betas``; ``mlp[kind]`` test-loss traces (seed, lr, mode, records) for kind in
    {"adamw", "muon"} with ``mlp_lrs`` and ``mlp_steps`` (the step of each record); and
    ``stability`` (measured boundaries per beta and spectral-radius curves).
    """
    del out_dir, resume
    k_sem, k_pipe, k_ls, k_mlp = jax.random.split(key, 4)
    sem = float(_jit(functools.partial(_semantics, cfg))(k_sem))
    pipe = _pipeline(cfg, k_pipe, shard=shard)
    ls = _least_squares(cfg, k_ls)
    mlp = _teacher_student(cfg, k_mlp, shard=shard, progress=progress)
    every = max(1, cfg.mlp_steps // cfg.mlp_record)
    return {
        "semantics_diff": sem,
        "pipeline_diff": pipe,
        "ls": ls,
        "ls_lrs": {"adam": np.asarray(cfg.ls_adam_lrs), "muon": np.asarray(cfg.ls_muon_lrs)},
        "ls_betas": {"adam": np.asarray(cfg.ls_adam_b1s),
                     "muon": np.asarray(cfg.ls_muon_betas)},
        "ls_tail": cfg.ls_tail,
        "mlp": mlp,
        "mlp_lrs": {"adamw": np.asarray(cfg.mlp_adamw_lrs),
                    "muon": np.asarray(cfg.mlp_muon_lrs)},
        "mlp_steps": every * np.arange(1, cfg.mlp_steps // every + 1),
        "stability": _stability(cfg),
    }


# --------------------------------------------------------------------------- metrics


def ls_final(r, kind):
    """Seed-median final excess loss (lr, beta, mode): mean of the last ``ls_tail`` steps."""
    tail = r["ls"][kind][..., -r["ls_tail"]:].mean(-1)  # (lr, beta, seed, mode)
    return np.median(tail, axis=2)


def ls_gap_fraction(r, kind, beta_index):
    """(corrected - sync) / (delayed - sync) at the sync-tuned learning rate.

    ``inf`` when the delay did not hurt (delayed <= sync): there is then no penalty to recover
    and a ``<=`` claim on this fraction must fail rather than pass on a meaningless ratio.
    """
    f = ls_final(r, kind)[:, beta_index]  # (lr, mode)
    i = int(np.argmin(f[:, 0]))
    s, d, c = f[i]
    if not d > s:
        return float("inf")
    return float((c - s) / (d - s))


def mlp_final(r, kind):
    """Final test loss (seed, lr, mode): mean of the last 10% of the records."""
    tr = r["mlp"][kind]
    n = max(1, tr.shape[-1] // 10)
    return tr[..., -n:].mean(-1)


def mlp_best_lr(r, kind):
    """Index of the sync-tuned learning rate (seed-median final loss)."""
    return int(np.argmin(np.median(mlp_final(r, kind)[:, :, 0], axis=0)))


def mlp_degradation(r, kind, mode=1):
    """Per-seed relative degradation (mode - sync)/sync at the sync-tuned learning rate."""
    f = mlp_final(r, kind)[:, mlp_best_lr(r, kind)]
    return (f[:, mode] - f[:, 0]) / f[:, 0]


def muon_win_fraction(r):
    return float(np.mean(mlp_degradation(r, "muon") <= mlp_degradation(r, "adamw")))


def _rel_err(measured, expected):
    return float(np.max(np.abs(np.asarray(measured) / np.asarray(expected) - 1.0)))


def _ls_claim(kind, j, name, thr, src):
    return theory.Claim(f"ls_gap_left_{name}", lambda r: ls_gap_fraction(r, kind, j), "<=", thr,
                        src)


CLAIMS = (
    theory.Claim(
        "semantics_sgd_max_abs_diff", lambda r: r["semantics_diff"], "<=", 1e-7,
        "spec claim 1: one_step_delay(sgd) vs hand-written stale-gradient loop, 3-layer MLP, "
        "50 steps, float32"),
    theory.Claim(
        "pipeline_8stage_max_abs_diff", lambda r: r["pipeline_diff"], "<=", 1e-5,
        "spec claim 1: 8-stage ppermute pipeline with weight stashing vs "
        "one_step_delay(adam, first_step='zero'), 12 steps"),
    _ls_claim("adam", 0, "adam_b1_0.9", 0.5, "spec claim 2 (numpy probe left 11%)"),
    _ls_claim("adam", 1, "adam_b1_0.95", 0.5, "spec claim 2 (numpy probe left 8%)"),
    _ls_claim("muon", 0, "muon_beta_0.95", 0.5, "spec claim 2 (numpy probe left 30%)"),
    _ls_claim("muon", 1, "muon_beta_0.9", 0.8, "spec claim 2 (numpy probe left 67%)"),
    theory.Claim(
        "mlp_muon_less_degraded_seed_fraction", muon_win_fraction, ">=", 0.75,
        "spec claim 3: relative degradation of Muon <= AdamW on >= 6/8 seeds (2-layer MLP "
        "teacher-student, each at its sync-tuned lr)"),
    theory.Claim(
        "stability_delayed_boundary_rel_err",
        lambda r: _rel_err(r["stability"]["delayed"], stability_bounds(r["stability"]["betas"])[1]),
        "<=", 1e-4,
        "spec claim 4: delayed EMA momentum stable iff eta*lambda < 1 for every beta"),
    theory.Claim(
        "stability_sync_boundary_rel_err",
        lambda r: _rel_err(r["stability"]["sync"], stability_bounds(r["stability"]["betas"])[0]),
        "<=", 1e-4,
        "spec claim 4: sync EMA momentum stable iff eta*lambda < 2(1+beta)/(1-beta)"),
)


def summarize(results: dict) -> dict:
    """Key numbers: claim-1 differences; claim-2 tuned lrs, final losses and gap fractions;
    claim-3 tuned lrs and median relative degradations (delayed and corrected); claim-4
    measured boundaries (sync, delayed, corrected)."""
    r = results
    out = {"semantics_diff": r["semantics_diff"], "pipeline_diff": r["pipeline_diff"]}
    for kind in ("adam", "muon"):
        f = ls_final(r, kind)
        for j, beta in enumerate(r["ls_betas"][kind]):
            i = int(np.argmin(f[:, j, 0]))
            tag = f"ls/{kind}_beta{beta:g}"
            out[f"{tag}/lr"] = float(r["ls_lrs"][kind][i])
            for m, mode in enumerate(MODES):
                out[f"{tag}/excess_{mode}"] = float(f[i, j, m])
            out[f"{tag}/gap_left"] = ls_gap_fraction(r, kind, j)
    for kind in ("adamw", "muon"):
        i = mlp_best_lr(r, kind)
        out[f"mlp/{kind}/lr"] = float(r["mlp_lrs"][kind][i])
        f = mlp_final(r, kind)[:, i]
        for m in range(f.shape[1]):
            out[f"mlp/{kind}/loss_median_{MODES[m]}"] = float(np.median(f[:, m]))
        out[f"mlp/{kind}/rel_degradation_median"] = float(np.median(mlp_degradation(r, kind)))
        if f.shape[1] > 2:
            out[f"mlp/{kind}/rel_degradation_EF_median"] = float(
                np.median(mlp_degradation(r, kind, 2)))
    out["mlp/muon_less_degraded_fraction"] = muon_win_fraction(r)
    st = r["stability"]
    for j, beta in enumerate(st["betas"]):
        for mode in ("sync", "delayed", "corrected"):
            out[f"stability/beta{beta:g}/{mode}"] = float(st[mode][j])
    return out


def plot(results: dict, cfg: Config) -> dict:
    """Figures: teacher-student test loss (median, 10-90% band), least-squares final excess
    loss per learning rate, spectral radius vs eta*lambda."""
    import matplotlib.pyplot as plt

    r = results
    figs = {}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, kind in zip(axes, ("adamw", "muon"), strict=True):
        i = mlp_best_lr(r, kind)
        for m in range(r["mlp"][kind].shape[2]):
            runner.band_plot(ax, r["mlp_steps"], r["mlp"][kind][:, i, m], label=MODES[m])
        runner.finish_axes(ax, xlabel="step",
                           title=f"{kind} at lr={r['mlp_lrs'][kind][i]:g} (sync-tuned)")
    for ax in axes:  # each panel labelled: the shared axis is easy to misread across panels
        ax.set_ylabel("test loss")
    fig.tight_layout()
    figs["teacher_student"] = fig

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, kind in zip(axes, ("adam", "muon"), strict=True):
        f = ls_final(r, kind)
        for j, beta in enumerate(r["ls_betas"][kind]):
            for m, mode in enumerate(MODES):
                ax.plot(r["ls_lrs"][kind], f[:, j, m], marker="o", ls=("-", "--", ":")[m],
                        color=f"C{j}", label=f"beta={beta:g} {mode}")
        runner.finish_axes(ax, xscale="log", yscale="log", xlabel="learning rate",
                           title=f"least squares, {kind}", legend=7)
    for ax in axes:
        ax.set_ylabel("final excess loss (seed median)")
    fig.tight_layout()
    figs["least_squares"] = fig

    st = r["stability"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, beta in enumerate(st["betas"]):
        ax.plot(st["curve_etas"], st["curve_sync"][j], color=f"C{j}", label=f"sync beta={beta:g}")
        ax.plot(st["curve_etas"], st["curve_delayed"][j], color=f"C{j}", ls="--")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 2)
    runner.finish_axes(ax, xlabel=r"$\eta\lambda$", ylabel="spectral radius (dashed: delayed)",
                       title=r"EMA momentum on $\lambda x^2/2$: sync vs delayed", legend=7)
    figs["stability"] = fig
    return figs
