r"""# DeVA: decoupled variance adaptation, from Adam to adaptive spectral descent

*Zitao Song, Cedar Site Bai, Zhe Zhang, Brian Bullins, David F. Gleich, "Decoupling Variance and
Scale-Invariant Updates in Adaptive Gradient Descent for Unified Vector and Matrix
Optimization", ICML 2026, arXiv:2602.06880.*

An Adam-type step factors as $m/\sqrt{v} = (|m|/\sqrt{v}) \odot \mathrm{sign}(m)$: a
*variance-adaptation* factor times a *scale-invariant* direction. DeVA keeps the factor and
picks the direction from the geometry: `sign` ($\ell_\infty$ form, `deva_linf`) or the matrix
sign `msign` (Schatten-$\infty$ form, `deva_schatten`, in a SOAP eigenbasis).

## The update

$\ell_\infty$ form: $m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t$, $v_t = \beta_2 v_{t-1} +
(1-\beta_2) m_t^2$, $w \leftarrow w - \eta\,\sqrt{m_t^2/(v_t + \epsilon)} \odot
\mathrm{sign}(m_t)$ (no bias correction; $v$ tracks the momentum, not the gradient).

Schatten form, per matrix, in the eigenbasis $\tilde G = Q_L^\top G Q_R$:
$$m_t = \beta_1 m_{t-1} + (1-\beta_1)\tilde G,\quad v_t = \beta_2 v_{t-1} + (1-\beta_2)\, r c^\top,
\quad U_t = \mathrm{msign}(d_t) \odot \frac{\sqrt{r}\sqrt{c}^\top}{\sqrt{v_t+\epsilon}}
\,0.2\sqrt{\max(n,p)},$$
with $r, c$ the row and column norms of $m_t$, $d_t$ the Nesterov look-ahead, `msign` by 5
quintic Newton-Schulz steps, and the step $\eta \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t} Q_L U_t
Q_R^\top$. The first update only initialises $Q_L, Q_R$ (eigh); they are refreshed every 10
updates by a power step and a QR.

**Claims checked** (spec `71_deva.md`):

1. *Decomposition identities.* With $\beta_1 = 0$, `deva_linf` is RMSprop without bias
   correction ($g/\sqrt{v+10^{-5}}$, `optax.rmsprop(eps_in_sqrt=True)`) to $10^{-6}$; the first
   Schatten update is $O_1 \cdot 0.2\sqrt{\max(n,p)}/\sqrt{1-\beta_2}$ to $10^{-5}$ (measured
   with $\epsilon = 10^{-12}$: the identity holds up to $\epsilon/v_1$, and $v_1 \approx
   10^{-4}$ for unit gradients with $\beta_1 = 0.9$, so the default $10^{-8}$ alone moves it by
   $\approx 10^{-5}$); on a rank-1 gradient $s\,ab^\top$, $O_1$ is rank 1 with singular vectors
   $(\hat a, \hat b)$ (cosines $\ge 0.9999$) and singular value in $[0.6, 1.25]$. Ours, the
   *transition*: on diagonal gradients, with no rotation and the exact polar factor, the
   Schatten update equals the $\ell_\infty$ update on the diagonal (times the RMS factor).
2. *Scale invariance.* Multiplying every gradient by $c \in \{0.1, 10\}$ changes the 100-step
   trajectory of `deva_schatten` (defaults, eigenbasis on, a random $8\times 6$ least-squares
   problem with $O(1)$ gradients) by less than $10^{-4}$ relative.
3. *Official trace-quadratic benchmark* (the Figure 2 script): $X \in \mathbb{R}^{9\times 9}$,
   $f(X) = \tfrac12\mathrm{Tr}(X^\top H X)$, $H$ block diagonal with three Haar-rotated $3\times
   3$ blocks, eigenvalues heterogeneous $\{1,2,3\},\{99,100,101\},\{4998,4999,5000\}$ or
   homogeneous $\{1,99,4998\},\{2,100,4999\},\{3,101,5000\}$; stochastic loss
   $\tfrac12\cdot\tfrac93\|A_b X\|_F$ (the norm, not squared, as in the script) with $A =
   H^{1/2}$ and 3 random rows; 400 steps, learning rate 0.1 for 200 steps then linear decay to
   0; $\beta = (0.9, 0.99)$. `deva_schatten`'s final suboptimality $\le$ Muon's on $\ge 70\%$
   of the seeds in both settings, and the median of `deva_linf` $\le 0.5\times$ that of
   momentum signSGD. Muon is `optax.contrib.muon(beta=0.9, nesterov=False,
   consistent_rms=1.0)`, i.e. the script's `SingleDeviceMuon` ($\mathrm{msign}(m)
   \sqrt{\max(n,p)}$; its bias correction cancels in `msign`).

**Small model** (FULL only; no claim, reported): an MLP classifier ($16 \to 64 \to 64 \to
4$, labels from a random teacher network) trained by Adam, Muon, SOAP (ours,
`jaxopt_icml.optim.deva_baselines.soap`; optax 0.2.8 has none), DeVA ($\mathrm{S}_\infty$ on
matrices, $\ell_\infty$ on biases) and signSGD, each at one fixed learning rate with a warm-up and
cosine decay, on the same seeds. The ranking at this scale is whatever `summarize` prints; the
paper's language-model gains are
not claimed here. QUICK (the CI config, and the notebook under `JAXOPT_ICML_QUICK=1`) skips it:
it carries no claim and its compilations cost more than all claims together.

**What does not reproduce (QUICK, key 0, 10 seeds).** Claim 2 with the default
$\epsilon = 10^{-8}$: the relative trajectory change is $4.1\times 10^{-4}$ (float32;
$2.4\times10^{-4}$ in float64), because at $c = 0.1$ the first $v_1 \approx 10^{-5}$ and
$\epsilon/v_1 \approx 10^{-3}$; with $\epsilon = 10^{-12}$ it is $1.6\times10^{-5}$ (passes), so
the method is scale invariant up to $\epsilon$ exactly as derived, but not to $10^{-4}$ at the
defaults (on keys 0-4: $4.1$ to $8.3\times10^{-4}$ at the default, $0.9$ to $4.9\times10^{-5}$
with $10^{-12}$). The homogeneous $\ell_\infty$ ratio is 0.58 (median 35.0 vs 59.9; the spec's
probe had 39.9 vs 92.8), heterogeneous 0.38 passes. That ratio is seed sensitive: over the QUICK
keys 0-4 it is 0.58, 0.43, 0.56, 0.40, 0.31, so it passes on 3 of 5 keys (median 0.43) and key 0,
the one the tests check, is among the two failing ones. `deva_linf`'s median is stable
(32.5-39.0); momentum signSGD's 10-seed median spreads from 59.9 to 106. With 100 seeds (FULL
claims, key 0) the ratio is 0.53 (38.8 vs 72.7): DeVA$_{\ell_\infty}$ roughly halves signSGD's
suboptimality on this spectrum but not by the spec's factor 2, so the claim is borderline rather
than reproduced; the threshold stays at the spec's 0.5. (FULL, 100 seeds, also: claim 2 at
$9.6\times10^{-4}$, with $\epsilon = 10^{-12}$ $2.4\times10^{-5}$; het ratio 0.29; DeVA$_{S_\infty}$
beats Muon on 98% and 99% of the seeds.)
At QUICK DeVA$_{S_\infty}$ beats Muon on 10/10 seeds in both settings (medians 1.18 vs 26.2 and
0.56 vs 18.1); our Muon (Frobenius-normalised Newton-Schulz in
float32) is weaker than the probe's (5.2, 1.45), SOAP is close to DeVA$_{S_\infty}$ (0.81, 0.60).

Everything runs in float32 (the thresholds sit far above float32 rounding).

**Cost.** Claims 1-3 are one compiled program vmapped over the seeds: the six invariance
trajectories (two $\epsilon$ times three scales $c$) are one vmapped scan, the six
trace-quadratic methods step inside one scan body, the random draws are batched into few
`jax.random` call sites (bit-identical streams), and on a CPU XLA compiles at optimization
level 1 (half the compile time; the claims move by float32 rounding only, e.g. the
$\epsilon = 10^{-12}$ invariance change $2.7 \to 1.6\times10^{-5}$, all other claim values
within $2\times10^{-7}$ or unchanged).
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
from jaxopt_icml.models import MLP, abstract_params, init_params, pure_apply
from jaxopt_icml.optim.deva import (
    deva,
    deva_linf,
    deva_schatten,
    scale_by_deva_linf,
    scale_by_deva_schatten,
)
from jaxopt_icml.optim.deva_baselines import signum, soap
from jaxopt_icml.optim.eigenbasis import newton_schulz

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("Zitao Song, Cedar Site Bai, Zhe Zhang, Brian Bullins, David F. Gleich, "
             "\"Decoupling Variance and Scale-Invariant Updates in Adaptive Gradient Descent for "
             "Unified Vector and Matrix Optimization\", ICML 2026, arXiv:2602.06880.")

HET = ((1.0, 2.0, 3.0), (99.0, 100.0, 101.0), (4998.0, 4999.0, 5000.0))
HOM = ((1.0, 99.0, 4998.0), (2.0, 100.0, 4999.0), (3.0, 101.0, 5000.0))
SETTINGS = ("het", "hom")


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes of the experiment; ``seeds`` is vmapped (sharded with ``shard=True``)."""

    seeds: int = 10
    # claim 1
    id_steps: int = 20
    id_shape: tuple = (6, 4)
    rank1_shape: tuple = (7, 5)
    # claim 2
    inv_steps: int = 100
    inv_shape: tuple = (8, 6)
    inv_scales: tuple = (0.1, 10.0)
    # claim 3: the trace quadratic
    tq_steps: int = 400
    tq_lr: float = 0.1
    tq_batch: int = 3
    b1: float = 0.9
    b2: float = 0.99
    # small model
    model_seeds: int = 3
    model_dim: int = 16
    model_classes: int = 4
    model_hidden: tuple = (64, 64)
    model_train: int = 1024
    model_test: int = 2048
    model_batch: int = 64
    model_steps: int = 1000
    model_methods: tuple = ("adam", "muon", "soap", "deva", "deva (no eigenbasis)", "signum")


# QUICK keeps 10 seeds (the claims' seed count) and skips the classifier: it carries no claim
# and its one compiled program per method cost more than all claims together (CI budget).
QUICK = Config(seeds=10, model_methods=())
FULL = Config(seeds=100, model_seeds=5, model_steps=3000)


# --------------------------------------------------------------------------- compilation

# XLA's CPU backend at optimization level 1 instead of the default 2 roughly halves the compile
# time of these small programs, which is most of a QUICK run on a CPU; the claims' numbers move
# by float32 rounding only (measured: see the module docstring).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 1}


def _compiler_options():
    return COMPILER_OPTIONS if jax.default_backend() == "cpu" else None


@functools.cache
def _jitted(fn, *static_argnums):
    return jax.jit(fn, static_argnums=static_argnums, compiler_options=_compiler_options())


# --------------------------------------------------------------------------- problems


# Every ``jax.random`` call site compiles its own threefry kernel (about 0.2 s each on a CPU), so
# the draws are batched into few call sites. They stay bit-identical to one call per key and
# shape: threefry (partitionable, the default) numbers its outputs by flat index, so
# ``normal(k, shape)`` is the first ``prod(shape)`` entries of ``normal(k, (n,))`` for any
# larger ``n`` (and likewise for ``split``).


def _normals(keys, shapes):
    """``[jax.random.normal(k, shape) for k, shape in zip(keys, shapes)]`` by one vmapped call."""
    sizes = [math.prod(shape) for shape in shapes]
    flat = jax.vmap(lambda k: jax.random.normal(k, (max(sizes),)))(jnp.stack(keys))
    return [flat[i, :n].reshape(shape) for i, (n, shape) in enumerate(zip(sizes, shapes,
                                                                          strict=True))]


def _haar3(z):
    """A 3x3 rotation as in the script from a standard normal 3x3 ``z``: the eigenvectors of
    the Wishart matrix ``z z^T``, sign-fixed (``z = normal(key, (3, 3))`` per block)."""
    q = jnp.linalg.eigh(z @ z.T)[1]
    s = jnp.sign(jnp.diag(q))
    return q * jnp.where(s == 0, 1.0, s)[None, :]


def _hessian(q, blocks):
    """Block-diagonal H from the three block rotations ``q`` (3, 3, 3) and eigenvalues."""
    blk = jnp.einsum("bij,bj,bkj->bik", q, jnp.asarray(blocks), q)
    h = jax.scipy.linalg.block_diag(*blk)
    return 0.5 * (h + h.T)


def _sqrt_psd(h):
    w, q = jnp.linalg.eigh(h)
    return (q * jnp.sqrt(jnp.maximum(w, 0.0))[None, :]) @ q.T


def make_problem(cfg: Config, key: jax.Array) -> dict:
    """Per-seed trace-quadratic data, stacked: ``H`` and ``A = H^{1/2}`` of shape
    (2, seeds, 9, 9) (settings ``het``, ``hom``), ``X0`` (seeds, 9, 9); and, when the config
    trains the classifier (``model_methods`` not empty), its data ``model_{train,test}_{x,y}``
    (labels of a random teacher MLP)."""
    return _jitted(_make_problem, 0)(cfg, key)


def _make_problem(cfg, key):
    k_h, k_x, k_m = jax.random.split(key, 3)
    keys = runner.seed_keys(k_h, cfg.seeds)
    block_keys = jax.vmap(lambda k: jax.random.split(k, 3))(keys).reshape(-1, *keys.shape[1:])
    # one call: per seed and block a normal 3x3 (the same rotations in both settings), and X0
    flat = jax.vmap(lambda k: jax.random.normal(k, (cfg.seeds * 81,)))(
        jnp.concatenate([block_keys, k_x[None]]))
    x0 = flat[-1].reshape(cfg.seeds, 9, 9)
    q = jax.vmap(_haar3)(flat[:-1, :9].reshape(-1, 3, 3)).reshape(cfg.seeds, 3, 3, 3)
    hs = jnp.stack([jax.vmap(lambda qq, b=b: _hessian(qq, b))(q) for b in (HET, HOM)])
    a = jax.vmap(jax.vmap(_sqrt_psd))(hs)
    if not cfg.model_methods:  # QUICK: no classifier, no data
        return dict(H=hs, A=a, X0=x0)
    k_t, k_tr, k_te = jax.random.split(k_m, 3)
    k1, k2 = jax.random.split(k_t)
    w1 = jax.random.normal(k1, (cfg.model_dim, 32)) / np.sqrt(cfg.model_dim)
    w2 = jax.random.normal(k2, (32, cfg.model_classes)) / np.sqrt(32)

    def data(k, n):  # labels of a random tanh teacher network
        x = jax.random.normal(k, (n, cfg.model_dim))
        return x, jnp.argmax(jnp.tanh(x @ w1) @ w2, -1).astype(jnp.int32)

    trx, try_ = data(k_tr, cfg.model_train)
    tex, tey = data(k_te, cfg.model_test)
    return dict(H=hs, A=a, X0=x0, model_train_x=trx, model_train_y=try_, model_test_x=tex,
                model_test_y=tey)


def describe_problem(problem: dict) -> dict:
    h = np.asarray(problem["H"])
    eig = np.linalg.eigvalsh(h[:, 0])
    return {"H shape (settings, seeds, 9, 9)": h.shape,
            "eigenvalues het (seed 0)": np.round(eig[0], 3).tolist(),
            "eigenvalues hom (seed 0)": np.round(eig[1], 3).tolist(),
            **({"classifier train/test": (problem["model_train_x"].shape,
                                          problem["model_test_x"].shape),
                "class frequencies": np.bincount(np.asarray(problem["model_train_y"])).tolist()}
               if "model_train_x" in problem else {"classifier": "not in this config"})}


# --------------------------------------------------------------------------- methods


def tq_schedule(cfg: Config):
    """The script's schedule: ``lr`` for the first half of the steps, then linear to 0."""
    half = cfg.tq_steps // 2

    def sched(t):
        frac = (t - half) / max(1, cfg.tq_steps - half)
        return cfg.tq_lr * jnp.where(t < half, 1.0, jnp.maximum(0.0, 1.0 - frac))

    return sched


def make_methods(cfg: Config) -> dict:
    """The trace-quadratic methods, all at the script's learning rate and betas."""
    lr, b1, b2 = tq_schedule(cfg), cfg.b1, cfg.b2
    return {
        "deva_schatten": deva_schatten(lr, b1, b2, 1e-8, 0.0, precondition_frequency=10),
        "muon": optax.contrib.muon(lr, beta=b1, nesterov=False, consistent_rms=1.0),
        "soap": soap(lr, b1, b2, 1e-8, 0.0, precondition_frequency=10),
        "adam": optax.adam(lr, b1, b2),
        "deva_linf": deva_linf(lr, b1, b2),
        "signum": signum(lr, b1),
    }


def make_model_methods(cfg: Config) -> dict:
    """Classifier methods: one learning rate each, warm-up (5%) and cosine decay."""
    def sched(peak):
        return optax.warmup_cosine_decay_schedule(0.0, peak, max(1, cfg.model_steps // 20),
                                                  cfg.model_steps)

    methods = {
        "adam": optax.adamw(sched(3e-3), weight_decay=0.0),
        "muon": optax.contrib.muon(sched(0.02), adam_learning_rate=sched(3e-3)),
        "soap": soap(sched(3e-3), weight_decay=0.0),
        "deva": deva(sched(3e-3), weight_decay=0.0, linf_learning_rate=sched(3e-3)),
        "deva (no eigenbasis)": deva(sched(3e-3), weight_decay=0.0, use_eigenbasis=False,
                                     linf_learning_rate=sched(3e-3)),
        "signum": signum(sched(1e-3)),
    }
    return {k: v for k, v in methods.items() if k in cfg.model_methods}


# --------------------------------------------------------------------------- seed mapping


def _map_seeds(fn, args, in_axes, shard):
    f = runner.seeded_program(jax.vmap(fn, in_axes=in_axes), in_axes, shard=shard,
                              compiler_options=_compiler_options())
    return jax.device_get(f(*args))


# --------------------------------------------------------------------------- claim 1


def _draws(cfg, k_id, k_inv):
    """The random inputs of claims 1 and 2 for one seed, in three ``jax.random`` call sites
    (bit-identical to drawing each from its own key, see :func:`_normals`)."""
    keys = jax.vmap(lambda k: jax.random.split(k, 5))(jnp.stack([k_id, k_inv]))
    k1, k2, k3, k4, k5 = keys[0]
    ka, kb, kw = keys[1, :3]
    n, p = cfg.inv_shape
    names_keys_shapes = (
        ("gs", k1, (cfg.id_steps, *cfg.id_shape)), ("g", k2, cfg.id_shape),
        ("a", k3, (cfg.rank1_shape[0],)), ("b", k4, (cfg.rank1_shape[1],)),
        ("d", k1, (cfg.id_steps, cfg.id_shape[1])),  # k1 again, as the original draws
        ("inv_a", ka, (n + 2, n)), ("inv_b", kb, (n + 2, p)), ("inv_w0", kw, (n, p)))
    names, keys_, shapes = zip(*names_keys_shapes, strict=True)
    out = dict(zip(names, _normals(keys_, shapes), strict=True))
    out["s"] = jnp.exp(jax.random.uniform(k5, (), minval=-3.0, maxval=3.0))
    return out


def _identities(cfg, r):
    """Claim 1 on the draws ``r`` of :func:`_draws`."""
    # (a) b1 = 0: deva_linf == RMSprop (no bias correction), on random gradients
    gs = r["gs"]
    ours, ref = scale_by_deva_linf(0.0, cfg.b2, 1e-5), optax.scale_by_rms(cfg.b2, 1e-5)

    def run(tx):
        def body(s, g):
            u, s = tx.update(g, s)
            return s, u
        return jax.lax.scan(body, tx.init(gs[0]), gs)[1]

    ua, ub = run(ours), run(ref)
    rms_err = jnp.max(jnp.abs(ua - ub)) / jnp.max(jnp.abs(ub))
    # (b) first Schatten update (no rotation, no bias correction, eps 1e-12)
    g = r["g"]
    tx = scale_by_deva_schatten(cfg.b1, cfg.b2, 1e-12, use_eigenbasis=False,
                                bias_correction=False)
    u1, _ = tx.update(g, tx.init(g))
    o1 = newton_schulz(g)
    target = o1 * 0.2 * np.sqrt(max(cfg.id_shape)) / jnp.sqrt(1 - cfg.b2)
    first_err = jnp.max(jnp.abs(u1 - target)) / jnp.max(jnp.abs(target))
    # (c) rank-1 gradient s a b^T
    a, b, s = r["a"], r["b"], r["s"]
    g1 = s * jnp.outer(a, b)
    u, _ = tx.update(g1, tx.init(g1))
    o = u / (0.2 * np.sqrt(max(cfg.rank1_shape)) / jnp.sqrt(1 - cfg.b2))
    uu, ss, vt = jnp.linalg.svd(o)
    cos_a = jnp.abs(uu[:, 0] @ a) / jnp.linalg.norm(a)
    cos_b = jnp.abs(vt[0] @ b) / jnp.linalg.norm(b)
    # (d) the transition: diagonal gradients reduce the Schatten form to the l_inf form
    d = r["d"]
    n = cfg.id_shape[1]
    sch = scale_by_deva_schatten(cfg.b1, cfg.b2, 1e-5, use_eigenbasis=False,
                                 bias_correction=False, nesterov=False, orthogonalize="svd")
    lin = scale_by_deva_linf(cfg.b1, cfg.b2, 1e-5)

    def body(carry, di):
        s1, s2 = carry
        v1, s1 = sch.update(jnp.diag(di), s1)
        v2, s2 = lin.update(di, s2)
        return (s1, s2), (v1, jnp.diag(v2) * 0.2 * np.sqrt(n))

    _, (v1, v2) = jax.lax.scan(body, (sch.init(jnp.zeros((n, n))), lin.init(jnp.zeros(n))), d)
    diag_err = jnp.max(jnp.abs(v1 - v2)) / jnp.max(jnp.abs(v2))
    return dict(rmsprop_err=rms_err, first_step_err=first_err, rank1_cos=jnp.minimum(cos_a, cos_b),
                rank1_sigma=ss[0], rank1_ratio=ss[1] / ss[0], diag_err=diag_err)


# --------------------------------------------------------------------------- claim 2


def _invariance(cfg, r):
    """Claim 2 on the draws ``r`` of :func:`_draws`: the trajectories at c = 1 and every
    ``inv_scales`` c, for eps = 1e-8 (the default) and 1e-12, vmapped over the (eps, c) pairs:
    one scan instead of six."""
    n, p = cfg.inv_shape
    a = r["inv_a"] / np.sqrt(n + 2)
    b, w0 = r["inv_b"], r["inv_w0"]
    loss = lambda w: 0.5 * jnp.sum((a @ w - b) ** 2)
    scales = (1.0, *cfg.inv_scales)
    epss = (1e-8, 1e-12)

    def traj(eps, c):
        tx = deva_schatten(eps=eps)  # eps traced: one program for both values

        def body(carry, _):
            w, s = carry
            u, s = tx.update(c * jax.grad(loss)(w), s, w)
            w = optax.apply_updates(w, u)
            return (w, s), w
        return jax.lax.scan(body, (w0, tx.init(w0)), None, length=cfg.inv_steps)[1]

    eps_all = jnp.repeat(jnp.asarray(epss), len(scales))
    c_all = jnp.tile(jnp.asarray(scales), len(epss))
    trajs = jax.vmap(traj)(eps_all, c_all).reshape(len(epss), len(scales), cfg.inv_steps, n, p)
    norm = lambda x: jnp.linalg.norm(x, axis=(-2, -1))
    base = trajs[:, :1]
    rel = jnp.max(norm(trajs[:, 1:] - base) / norm(base), axis=(1, 2))  # (len(epss),)
    moved = norm(base[:, 0, -1] - w0[None]) / jnp.linalg.norm(w0)
    return {"rel_change": rel[0], "moved": moved[0],
            "rel_change_eps1e-12": rel[1], "moved_eps1e-12": moved[1]}


# --------------------------------------------------------------------------- claim 3


def _trace_quadratic(cfg, methods, h, a, x0, key):
    """Suboptimality f(X_t) - f* (f* = 0, B = 0) after every step, for every method: one scan
    whose body steps all methods on the same minibatch."""
    n = 9
    scale = n / cfg.tq_batch

    def loss(x, idx):
        r = a[idx] @ x
        return 0.5 * scale * jnp.sqrt(jnp.sum(r * r))

    f = lambda x: 0.5 * jnp.sum(x * (h @ x))
    idx = jax.random.randint(key, (cfg.tq_steps, cfg.tq_batch), 0, n)

    def body(carry, i):
        new, vals = {}, {}
        for name, tx in methods.items():
            x, s = carry[name]
            u, s = tx.update(jax.grad(loss)(x, i), s, x)
            x = optax.apply_updates(x, u)
            new[name], vals[name] = (x, s), f(x)
        return new, vals

    init = {name: (x0, tx.init(x0)) for name, tx in methods.items()}
    return jax.lax.scan(body, init, idx)[1]


# --------------------------------------------------------------------------- small model


def _model(cfg, hidden=None):
    hidden = cfg.model_hidden if hidden is None else hidden
    return lambda r: MLP(cfg.model_dim, tuple(hidden), cfg.model_classes, rngs=r)


def _train_model(cfg, prob, tx, key):
    graphdef, _ = abstract_params(_model(cfg))
    apply = pure_apply(graphdef)
    k_init, k_data = jax.random.split(key)
    p0 = init_params(_model(cfg), k_init)[1]
    x, y = prob["model_train_x"], prob["model_train_y"]

    def xent(p, xb, yb):
        return optax.softmax_cross_entropy_with_integer_labels(apply(p, xb), yb).mean()

    def body(carry, t):
        p, s = carry
        idx = jax.random.randint(jax.random.fold_in(k_data, t), (cfg.model_batch,), 0,
                                 x.shape[0])
        val, g = jax.value_and_grad(xent)(p, x[idx], y[idx])
        u, s = tx.update(g, s, p)
        return (optax.apply_updates(p, u), s), val

    (p, _), losses = jax.lax.scan(body, (p0, tx.init(p0)), jnp.arange(cfg.model_steps))
    acc = jnp.mean(jnp.argmax(apply(p, prob["model_test_x"]), -1) == prob["model_test_y"])
    return dict(loss=losses, train_loss=xent(p, x, y), test_acc=acc)


# --------------------------------------------------------------------------- run


def _claims_per_seed(cfg, k_id, k_inv, h, a, x0, k_tq):
    """Claims 1-3 for one seed (``h``, ``a``: (2, 9, 9), settings ``het``, ``hom``), as one
    program: the identities, the invariance trajectories and both trace-quadratic settings."""
    methods = make_methods(cfg)
    tq = jax.vmap(lambda hh, aa: _trace_quadratic(cfg, methods, hh, aa, x0, k_tq))(h, a)
    r = _draws(cfg, k_id, k_inv)
    return {"identities": _identities(cfg, r), "invariance": _invariance(cfg, r),
            "tq": {setting: jax.tree.map(lambda v, i=i: v[i], tq)
                   for i, setting in enumerate(SETTINGS)}}


def run(cfg: Config, key: jax.Array, *, shard: bool = False, progress: bool = False,
        out_dir=None, resume: bool = False, model: bool = True) -> dict:
    """Runs all parts (nothing is long enough to need checkpoints: ``out_dir`` and ``resume``
    are accepted for the CLI and ignored). ``model=False`` skips the classifier (QUICK has no
    classifier methods, so it is skipped there anyway).

    Claims 1-3 are one compiled program vmapped over the seeds; the classifier is one program
    per method. Returns numpy arrays with a leading seed axis: ``identities[name]`` (seeds,),
    ``invariance[name]`` (seeds,), ``tq[setting][method]`` (seeds, steps) suboptimality per
    step, ``model[method][...]`` (model_seeds, ...; empty when skipped).
    """
    del out_dir, resume
    k_prob, k_id, k_inv, k_tq, k_model = jax.random.split(key, 5)
    prob = make_problem(cfg, k_prob)
    seeds = runner.seed_keys
    if progress:
        print(f"claims 1-3: {cfg.seeds} seeds, one program", flush=True)
    # both settings per seed share the seed's X0 and minibatch keys
    out = _map_seeds(
        functools.partial(_claims_per_seed, cfg),
        (seeds(k_id, cfg.seeds), seeds(k_inv, cfg.seeds), jnp.swapaxes(prob["H"], 0, 1),
         jnp.swapaxes(prob["A"], 0, 1), prob["X0"], seeds(k_tq, cfg.seeds)),
        (0,) * 6, shard)
    mdl = {}
    if model and cfg.model_methods:
        mkeys = seeds(k_model, cfg.model_seeds)
        for name, tx in make_model_methods(cfg).items():
            if progress:
                print(f"classifier: {name}", flush=True)
            mdl[name] = _map_seeds(lambda k, tx=tx: _train_model(cfg, prob, tx, k), (mkeys,),
                                   (0,), shard and cfg.model_seeds % jax.device_count() == 0)
    as_np = lambda t: jax.tree.map(np.asarray, t)
    return {**as_np(out), "model": as_np(mdl)}


# --------------------------------------------------------------------------- claims


def _final(r, setting, name):
    return r["tq"][setting][name][:, -1]


def _win_frac(r, setting):
    return float(np.mean(_final(r, setting, "deva_schatten") <= _final(r, setting, "muon")))


def _median_ratio(r, setting, a, b):
    return float(np.median(_final(r, setting, a)) / np.median(_final(r, setting, b)))


CLAIMS = (
    theory.Claim("linf_b1_0_equals_rmsprop_rel_err",
                 lambda r: float(np.max(r["identities"]["rmsprop_err"])), "<=", 1e-6,
                 "spec claim 1: b1=0 deva_linf == g/sqrt(EMA(g^2)+1e-5) (optax.scale_by_rms), "
                 "max over seeds x 20 steps of max|diff|/max|ref|"),
    theory.Claim("schatten_first_step_identity_rel_err",
                 lambda r: float(np.max(r["identities"]["first_step_err"])), "<=", 1e-5,
                 "spec claim 1: U_1 = O_1 0.2 sqrt(max(n,p))/sqrt(1-b2); measured with eps=1e-12 "
                 "(with 1e-8 and unit gradients eps/v_1 alone is ~1e-5)"),
    theory.Claim("rank1_singular_vector_cosine_min",
                 lambda r: float(np.min(r["identities"]["rank1_cos"])), ">=", 0.9999,
                 "spec claim 1: O_1 of s a b^T has singular vectors (a_hat, b_hat)"),
    theory.Claim("rank1_singular_value_min",
                 lambda r: float(np.min(r["identities"]["rank1_sigma"])), ">=", 0.6,
                 "spec claim 1: quintic Newton-Schulz tolerance, lower end"),
    theory.Claim("rank1_singular_value_max",
                 lambda r: float(np.max(r["identities"]["rank1_sigma"])), "<=", 1.25,
                 "spec claim 1: quintic Newton-Schulz tolerance, upper end"),
    theory.Claim("rank1_second_singular_value_ratio",
                 lambda r: float(np.max(r["identities"]["rank1_ratio"])), "<=", 1e-4,
                 "spec claim 1: O_1 is rank 1 (sigma_2/sigma_1, float32)"),
    theory.Claim("diagonal_schatten_equals_linf_rel_err",
                 lambda r: float(np.max(r["identities"]["diag_err"])), "<=", 1e-5,
                 "ours (the vector-to-matrix transition): diagonal gradients, Q = I, exact polar "
                 "factor: Schatten update == l_inf update on the diagonal x 0.2 sqrt(n)"),
    theory.Claim("scale_invariance_rel_change",
                 lambda r: float(np.max(r["invariance"]["rel_change"])), "<", 1e-4,
                 "spec claim 2: gradients x c, c in {0.1, 10}, 100 steps of deva_schatten "
                 "(defaults, eigenbasis on), max relative trajectory change over seeds. KNOWN "
                 "FAILING: measured 4.1e-4 at QUICK key 0 (4.1e-4 to 8.3e-4 on keys 0-4, float32; "
                 "2.4e-4 in float64), because the invariance holds only up to eps: at c = 0.1 "
                 "the first v_1 ~ 1e-5, so the default eps = 1e-8 is eps/v_1 ~ 1e-3 of it; with "
                 "eps = 1e-12 the change is 1.6e-5 (next claim), so this is the eps term of "
                 "the derivation, not a bug"),
    theory.Claim("scale_invariance_rel_change_eps1e-12",
                 lambda r: float(np.max(r["invariance"]["rel_change_eps1e-12"])), "<", 1e-4,
                 "ours, diagnosis of claim 2: the same with eps=1e-12; with eps=1e-8 the "
                 "first v_1 ~ 1e-5 at c=0.1 so eps/v_1 ~ 1e-3 breaks the invariance at 1e-4"),
    theory.Claim("tq_het_deva_schatten_beats_muon_fraction",
                 lambda r: _win_frac(r, "het"), ">=", 0.7,
                 "spec claim 3 (>= 7/10 seeds; probe 8/10): heterogeneous spectrum"),
    theory.Claim("tq_hom_deva_schatten_beats_muon_fraction",
                 lambda r: _win_frac(r, "hom"), ">=", 0.7,
                 "spec claim 3 (>= 7/10 seeds; probe 8/10): homogeneous spectrum"),
    theory.Claim("tq_het_deva_linf_over_signum_median",
                 lambda r: _median_ratio(r, "het", "deva_linf", "signum"), "<=", 0.5,
                 "spec claim 3: median final suboptimality deva_linf / momentum signSGD "
                 "(probe 28.9/142)"),
    theory.Claim("tq_hom_deva_linf_over_signum_median",
                 lambda r: _median_ratio(r, "hom", "deva_linf", "signum"), "<=", 0.5,
                 "spec claim 3: median final suboptimality deva_linf / momentum signSGD "
                 "(probe 39.9/92.8). KNOWN FAILING at QUICK key 0: 0.58 (35.0/59.9). Seed "
                 "sensitive: keys 0-4 give 0.58, 0.43, 0.56, 0.40, 0.31 (passes on 3 of 5 "
                 "keys, median 0.43); deva_linf's median is stable (32.5-39.0) while signSGD's "
                 "10-seed median spreads 59.9-106; with 100 seeds (FULL, key 0) it is 0.53 "
                 "(38.8/72.7), so the claim is borderline, not reproduced at 0.5. Threshold "
                 "kept at the spec's 0.5"),
)


# Claims that do not reproduce at QUICK (key 0), kept failing with their measured values (their
# `source` strings carry the diagnosis): claim 2 with the default eps=1e-8 (4.1e-4: eps/v_1 ~
# 1e-3 at c = 0.1; with eps=1e-12 the change is 1.6e-5) and the homogeneous deva_linf/signum
# median ratio (0.58 at key 0; 0.31-0.58 over keys 0-4, passing on 3 of 5; 0.53 on FULL's 100
# seeds; 0.38 heterogeneous).
# The tests check exactly this set at key 0.
KNOWN_FAILING = ("scale_invariance_rel_change", "tq_hom_deva_linf_over_signum_median")


def summarize(results: dict) -> dict:
    out = {}
    for k, v in results["identities"].items():
        out[f"identities_max/{k}"] = float(np.max(v))
    out["invariance_max_rel_change"] = float(np.max(results["invariance"]["rel_change"]))
    out["invariance_max_rel_change_eps1e-12"] = float(
        np.max(results["invariance"]["rel_change_eps1e-12"]))
    out["invariance_distance_moved"] = float(np.median(results["invariance"]["moved"]))
    for setting, by in results["tq"].items():
        for name, v in by.items():
            out[f"tq_{setting}_final_median/{name}"] = float(np.median(v[:, -1]))
        out[f"tq_{setting}_deva_schatten_beats_muon_fraction"] = _win_frac(results, setting)
        out[f"tq_{setting}_deva_schatten_beats_soap_fraction"] = float(np.mean(
            _final(results, setting, "deva_schatten") <= _final(results, setting, "soap")))
    for name, m in results["model"].items():
        out[f"model_train_loss_mean/{name}"] = float(np.mean(m["train_loss"]))
        out[f"model_test_acc_mean/{name}"] = float(np.mean(m["test_acc"]))
    return out


def plot(results: dict, cfg: Config) -> dict:
    """Suboptimality curves of the trace quadratic (both settings) and, when the classifier
    ran (FULL), its minibatch losses."""
    import matplotlib.pyplot as plt

    figs = {}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, (setting, by) in zip(axes, results["tq"].items(), strict=True):
        for name, v in by.items():
            runner.band_plot(ax, np.arange(1, v.shape[1] + 1), np.maximum(v, 1e-12), label=name)
        runner.finish_axes(ax, xscale="linear", xlabel="step", ylabel=r"$f(X_t) - f^*$",
                           title=f"trace quadratic, {setting} spectrum ({v.shape[0]} seeds)",
                           legend=7)
    fig.tight_layout()
    figs["trace_quadratic"] = fig

    if not results["model"]:  # QUICK: no classifier
        return figs
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, m in results["model"].items():
        loss = m["loss"]
        w = max(1, loss.shape[1] // 50)
        smooth = loss[:, : loss.shape[1] // w * w].reshape(loss.shape[0], -1, w).mean(-1)
        runner.band_plot(ax, (np.arange(smooth.shape[1]) + 1) * w, smooth, label=name)
    runner.finish_axes(ax, xscale="linear", xlabel="step", ylabel="minibatch cross-entropy",
                       title="MLP classifier (teacher labels)", legend=7)
    figs["model"] = fig
    return figs
