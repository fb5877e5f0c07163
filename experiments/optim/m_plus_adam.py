r"""# M+Adam: additive plus multiplicative updates for low-precision master weights

*Xiaoyuan Liang, Sebastian Loeschcke, Mads Toftrup, Anima Anandkumar, ICML 2026* (workshop
version: "M+Adam: Stable Low-Precision Training with Combined Adam-Madam Updates", OPT 2025).

**The failure modes.** With weights stored in a low-precision format and no FP32 copy, an
additive step $\eta_A u_A$ disappears in rounding wherever it is below half an ulp of the weight:
in BF16 (8 significant bits) half an ulp of $|w| \in [16, 32)$ is $1/16$, so Adam with
$\eta_A = 10^{-2}$ (whose steps are at most a few $\eta_A$) never changes such a weight. A
multiplicative (Madam) step $w \cdot 2^{-\eta u}$ moves every weight by a fixed relative amount,
but keeps its sign and leaves 0 fixed. **M+Adam** combines both and rounds once:
$$w_{t+1} = Q\big(w_t\, 2^{-\eta_M u_M} - \eta_A u_A\big),$$
$u_A$ the Adam direction of $g$, $u_M$ the Adam direction of $g_e = w \ln 2\, g$ (the gradient
with respect to the exponent of $w = m 2^e$), $Q$ = round to the storage format
(`jaxopt_icml.optim.m_plus_adam.m_plus_adam`; the combined form is our reading of the abstract,
the workshop's mantissa/exponent form is `form="mantissa_exponent"`).

**Problem** (spec `25_m_plus_adam.md`). Noiseless linear regression, $d = 256$, $n = 1024$,
$X_{ij} \sim N(0, 1/d)$, $y = X w^\star$, $|w^\star_i|$ log-uniform in $[10^{-2}, 50]$ with random
signs; $w_0 = w^\star e^{0.5 z}$, $z \sim N(0, 1)$ (we read the spec's $N(0, 0.25)$ as a variance),
with the signs of exactly 10% of the coordinates flipped; minibatches of 64 (the same sequence
for every method of a seed); loss $\frac{1}{2n}\|Xw - y\|^2$ on all $n$ points; 3000 steps;
gradients computed in float32 from the stored weights and cast to the storage container
(bfloat16).

**Storage.** BF16 runs keep the parameters AND the optimizer state in `bfloat16` arrays (optax's
Adam, Lion, Madam, M+Adam alike). FP8 (e4m3) and FP4 (e2m1) runs carry one-byte/half-byte
codes (`jnp.float8_e4m3fn`, `jnp.float4_e2m1fn` arrays) plus one power-of-two scale per tensor
(`tensor_scale`: the smallest $2^k$ with $\max|w| \le 2^k \max_{\text{format}}$) through the
loop; each step dequantizes them into a bfloat16 container, updates with
`param_dtype=<format>` (so the new weight lies on the scaled format's grid), and quantizes
again; `summarize` reports that this round trip is lossless (maximum error 0). The optimizer
state stays BF16. FP8/FP4 "Adam" is `m_plus_adam` with $\eta_M = 0$, i.e. $Q(w - \eta_A u_A)$
(equal to `optax.adam` up to the rounding; tested).

**Claims** (`CLAIMS`):

1. *Stagnation.* BF16 `optax.adam` ($\eta = 10^{-2}$): every coordinate with
   $|w_0| \ge 16$ keeps its initial BF16 value for all steps, on every seed; BF16 M+Adam
   ($\eta_A = \eta_M = 10^{-2}$) changes $\ge 99\%$ of them within the first 100 steps.
2. *Complementarity.* Final loss of BF16 M+Adam $\le 0.05\times$ BF16 Adam's on every seed;
   BF16 Madam never changes a sign (exact invariant: 0 sign changes over all steps and seeds),
   so its loss plateaus $\ge 5\times$ M+Adam's on every seed.
3. *Descent.* Full-batch float32 gradients, float32 weights and state,
   $\eta_A = \eta_M = 10^{-4}$, 2000 steps: the loss does not increase at $\ge 99\%$ of the
   steps on every seed.
4. *Precision ladder.* FP8 (e4m3) master weights: final loss of M+Adam $\le 0.2\times$ FP8
   Adam's on every seed.

**Reported, not claimed.** Adam with FP32 master weights (the upper reference), BF16 Lion, Adam
and M+Adam with stochastic rounding (SR makes Adam's sub-ulp steps move *in expectation*, so its
stagnation disappears: the spec's pitfall), the FP8 SR variants, FP4 (e2m1, per-tensor scale)
with nearest and stochastic rounding, and the BF16 version of the descent run. With one scale
per tensor, FP4's 8 magnitudes $\{0, 0.5, \dots, 6\} \cdot 2^k$ cannot resolve weights spread
over four decades: nearest rounding sends most of them to 0 and freezes every method (ratio
exactly 1), so the paper's FP4 gains (which need finer, block-wise scales) are not reproduced
here; the numbers are in `summarize` (`fp4 ...`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import theory
from jaxopt_icml.optim.formats import dequantize, quantize, tensor_scale
from jaxopt_icml.optim.m_plus_adam import m_plus_adam, madam

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("Xiaoyuan Liang, Sebastian Loeschcke, Mads Toftrup, Anima Anandkumar, "
             "\"M+Adam\", ICML 2026; workshop version \"M+Adam: Stable Low-Precision Training "
             "with Combined Adam-Madam Updates\", OPT 2025 (OpenReview NKT7LFio6e). Madam: "
             "Bernstein et al., NeurIPS 2020, arXiv:2006.14560.")
UPDATE = r"""$$u = \frac{\hat\mu}{\sqrt{\hat\nu} + \epsilon} \text{ (Adam direction)},\qquad
w_{t+1} = Q\big(w_t\, 2^{-\eta_M u_M(w \ln 2\, g)} - \eta_A u_A(g)\big).$$
Baselines: `optax.adam` ($w + Q$-rounded $-\eta u_A$ in BF16, no master copy), Madam
($w\,e^{-\eta\,\mathrm{sign}(w) g/\sqrt{\hat\nu}}$), Adam with FP32 master weights, Lion, and Adam
with stochastic rounding."""

BF16, FP32 = "bfloat16", "float32"
FP8, FP4 = "float8_e4m3fn", "float4_e2m1fn"


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes and step sizes (spec values by default)."""

    seeds: int = 8
    d: int = 256
    n: int = 1024
    batch: int = 64
    steps: int = 3000
    log_every: int = 25
    w_lo: float = 1e-2
    w_hi: float = 50.0
    init_sigma: float = 0.5
    flip_fraction: float = 0.1
    lr_add: float = 1e-2
    lr_mul: float = 1e-2
    fp8_lr_mul: float = 0.1
    b2: float = 0.95
    madam_lr: float = 1e-2
    lion_lr: float = 1e-3
    probe_steps: int = 100
    large: float = 16.0
    descent_steps: int = 2000
    descent_lr: float = 1e-4
    extras: bool = True  # FP32-master Adam, Lion, stochastic rounding, FP4, BF16 descent


FULL = Config()
QUICK = Config(seeds=4, extras=False)


# --------------------------------------------------------------------------- problem


def make_problem(cfg: Config, key: jax.Array) -> dict:
    """Per-seed regression problems (leading seed axis), float32.

    Returns ``{"X": (S, n, d), "y": (S, n), "w_star": (S, d), "w0": (S, d), "flipped": (S, d),
    "batches": (S, steps, batch)}``; the optimum is ``w_star`` (loss 0), ``flipped`` marks the
    coordinates whose initial sign is wrong and ``batches`` holds the minibatch indices of every
    step (drawn with replacement; the same for every method of a seed).
    """
    return _make_problem(cfg, key)


@functools.partial(jax.jit, static_argnums=0)
def _make_problem(cfg, key):
    def one(k):
        kx, km, ks, kp, kf, kb = jax.random.split(k, 6)
        x = jax.random.normal(kx, (cfg.n, cfg.d)) / jnp.sqrt(cfg.d)
        lo, hi = jnp.log(cfg.w_lo), jnp.log(cfg.w_hi)
        mag = jnp.exp(jax.random.uniform(km, (cfg.d,), minval=lo, maxval=hi))
        w_star = mag * jax.random.rademacher(ks, (cfg.d,)).astype(jnp.float32)
        num_flip = int(round(cfg.flip_fraction * cfg.d))
        flipped = jnp.zeros(cfg.d, bool).at[jax.random.permutation(kf, cfg.d)[:num_flip]].set(True)
        w0 = w_star * jnp.exp(cfg.init_sigma * jax.random.normal(kp, (cfg.d,)))
        w0 = jnp.where(flipped, -w0, w0)
        batches = jax.random.randint(kb, (cfg.steps, cfg.batch), 0, cfg.n, jnp.int32)
        return {"X": x, "y": x @ w_star, "w_star": w_star, "w0": w0, "flipped": flipped,
                "batches": batches}

    return jax.vmap(one)(runner.seed_keys(key, cfg.seeds))


def describe_problem(problem) -> dict:
    s, n, d = problem["X"].shape
    w0 = np.asarray(problem["w0"])
    return {
        "seeds, n, d": (s, n, d),
        "|w*| range": (float(np.abs(problem["w_star"]).min()),
                       float(np.abs(problem["w_star"]).max())),
        "coordinates |w0| >= 16 per seed": np.sum(np.abs(w0) >= 16, axis=1).tolist(),
        "flipped signs per seed": np.asarray(problem["flipped"]).sum(1).tolist(),
        "initial loss (median)": float(np.median(_loss(problem["X"], problem["y"],
                                                       problem["w0"]))),
    }


def _loss(x, y, w):
    r = jnp.einsum("...nd,...d->...n", x, w) - y
    return 0.5 * jnp.mean(r * r, axis=-1)


# --------------------------------------------------------------------------- methods


class Method(NamedTuple):
    """One configuration: ``family`` in {"m_plus_adam", "adam", "madam", "lion"}, the storage
    format, the step sizes (``(eta_A, eta_M)`` for M+Adam, ``(eta,)`` otherwise), ``b2``
    (``None``: the config's; Lion keeps its own 0.99), the weight rounding and the part of the
    experiment (``"train"``: minibatches, ``"descent"``: full batch)."""

    family: str
    storage: str
    lr: tuple
    rounding: str = "nearest"
    part: str = "train"
    b2: float | None = None


def make_methods(cfg: Config) -> dict:
    """``{name: Method}``; the storage format is in the name."""
    a, m = cfg.lr_add, cfg.lr_mul
    out = {
        "M+Adam BF16": Method("m_plus_adam", BF16, (a, m)),
        "Adam BF16 (optax)": Method("adam", BF16, (a,)),
        "Madam BF16": Method("madam", BF16, (cfg.madam_lr,)),
        "M+Adam FP8": Method("m_plus_adam", FP8, (a, m)),
        f"M+Adam FP8 eta_M={cfg.fp8_lr_mul:g}": Method("m_plus_adam", FP8, (a, cfg.fp8_lr_mul)),
        "Adam FP8": Method("m_plus_adam", FP8, (a, 0.0)),
        "M+Adam descent FP32": Method("m_plus_adam", FP32, (cfg.descent_lr,) * 2,
                                      part="descent"),
    }
    if cfg.extras:
        out.update({
            "M+Adam BF16 b2=0.999": Method("m_plus_adam", BF16, (a, m), b2=0.999),
            "Adam BF16 (optax) b2=0.999": Method("adam", BF16, (a,), b2=0.999),
            "Adam FP32 master (optax)": Method("adam", FP32, (a,)),
            "Lion BF16 (optax)": Method("lion", BF16, (cfg.lion_lr,)),
            "M+Adam BF16 SR": Method("m_plus_adam", BF16, (a, m), "stochastic"),
            "Adam BF16 SR": Method("m_plus_adam", BF16, (a, 0.0), "stochastic"),
            "M+Adam FP8 SR": Method("m_plus_adam", FP8, (a, m), "stochastic"),
            "Adam FP8 SR": Method("m_plus_adam", FP8, (a, 0.0), "stochastic"),
            "Madam FP8": Method("madam", FP8, (cfg.madam_lr,)),
            "M+Adam FP4": Method("m_plus_adam", FP4, (a, m)),
            "Adam FP4": Method("m_plus_adam", FP4, (a, 0.0)),
            "M+Adam FP4 SR": Method("m_plus_adam", FP4, (a, m), "stochastic"),
            "Adam FP4 SR": Method("m_plus_adam", FP4, (a, 0.0), "stochastic"),
            "M+Adam descent BF16": Method("m_plus_adam", BF16, (cfg.descent_lr,) * 2,
                                          part="descent"),
        })
    return out


def _container(storage):
    return jnp.float32 if storage == FP32 else jnp.bfloat16


def build_tx(family, storage, rounding, hp, key):
    """The transformation of a method with (possibly traced) hyperparameters
    ``hp = (*step_sizes, b2)``."""
    fmt = None if storage in (BF16, FP32) else jnp.dtype(storage)
    sr = {"rounding": rounding, "key": key if rounding == "stochastic" else None}
    b2 = hp[-1]
    if family == "m_plus_adam":
        return m_plus_adam(hp[0], hp[1], b2=b2, param_dtype=fmt, **sr)
    if family == "madam":
        return madam(hp[0], b2=b2, param_dtype=fmt, **sr)
    if family == "adam":
        return optax.adam(hp[0], b2=b2)
    if family == "lion":
        return optax.lion(hp[0])
    raise ValueError(f"unknown family {family!r}")


# --------------------------------------------------------------------------- storage


def _encode(w, storage):
    """Stored form of ``w``: ``(values, scale)``; FP8/FP4 values are codes of that dtype."""
    if storage in (BF16, FP32):
        return w.astype(storage), jnp.ones((), jnp.float32)
    s = tensor_scale(w, storage)
    return quantize(w, storage, scale=s), s


def _decode(values, scale, storage):
    if storage in (BF16, FP32):
        return values
    return dequantize(values, scale, jnp.bfloat16)


# --------------------------------------------------------------------------- runs


def _one_run(cfg, family, storage, rounding, part, prob, key, lr):
    """One seed, one method: the whole run as nested scans. Returns a dict of traces."""
    x, y, batches = prob["X"], prob["y"], prob["batches"]
    tx = build_tx(family, storage, rounding, lr, jax.random.fold_in(key, 1))
    ct = _container(storage)
    values0, scale0 = _encode(prob["w0"], storage)
    p0 = _decode(values0, scale0, storage)
    p0_f32 = p0.astype(jnp.float32)
    descent = part == "descent"
    steps = cfg.descent_steps if descent else cfg.steps
    never = jnp.full((cfg.d,), steps + 1, jnp.int32)

    def grad_at(p, t):
        w = p.astype(jnp.float32)
        if descent:
            xb, yb = x, y
        else:
            idx = batches[t - 1]
            xb, yb = x[idx], y[idx]
        r = xb @ w - yb
        return (xb.T @ r / xb.shape[0]).astype(ct), 0.5 * jnp.mean(r * r)

    def step(carry, t):
        values, scale, state, first, flipped, err = carry
        p = _decode(values, scale, storage)
        g, batch_loss = grad_at(p, t)
        u, state = tx.update(g, state, p)
        p_new = optax.apply_updates(p, u)
        values, scale = _encode(p_new, storage)
        back = _decode(values, scale, storage).astype(jnp.float32)
        w = p_new.astype(jnp.float32)
        err = jnp.maximum(err, jnp.max(jnp.abs(back - w)))
        first = jnp.where((back != p0_f32) & (first > t), t, first)
        flipped = flipped | (jnp.sign(back) != jnp.sign(p0_f32))
        return (values, scale, state, first, flipped, err), batch_loss

    init = (values0, scale0, tx.init(p0), never, jnp.zeros(cfg.d, bool),
            jnp.zeros((), jnp.float32))
    if descent:  # full-batch loss at every iterate
        carry, losses = jax.lax.scan(step, init, jnp.arange(1, steps + 1, dtype=jnp.int32))
        w_end = _decode(carry[0], carry[1], storage).astype(jnp.float32)
        curve = jnp.concatenate([losses, _loss(x, y, w_end)[None]])
    else:
        every = cfg.log_every

        def chunk(carry, c):
            ts = c * every + jnp.arange(1, every + 1, dtype=jnp.int32)
            carry, _ = jax.lax.scan(step, carry, ts)
            w = _decode(carry[0], carry[1], storage).astype(jnp.float32)
            return carry, _loss(x, y, w)

        carry, curve = jax.lax.scan(chunk, init, jnp.arange(steps // every, dtype=jnp.int32))
        curve = jnp.concatenate([_loss(x, y, p0_f32)[None], curve])
    values, scale, _, first, flipped, err = carry
    return {"loss": curve, "first_change": first, "sign_changed": flipped,
            "roundtrip_error": err, "w_final": _decode(values, scale, storage).astype(jnp.float32)}


@functools.lru_cache(maxsize=64)
def _program(cfg, family, storage, rounding, part, shard):
    """One compiled program per (family, storage, rounding, part): vmapped over seeds and over
    the methods' step sizes (so, e.g., FP8 M+Adam and FP8 Adam share it)."""

    def per_seed(prob, key, lrs):
        return jax.vmap(lambda lr: _one_run(cfg, family, storage, rounding, part, prob, key,
                                            lr))(lrs)

    return runner.seeded_program(jax.vmap(per_seed, in_axes=(0, 0, None)), (0, 0, None),
                                 shard=shard)


def run(cfg: Config, key: jax.Array, *, shard: bool = False, progress: bool = False,
        out_dir=None, resume: bool = False) -> dict:
    """Runs every method on every seed; methods that differ only in their step sizes run in one
    program (vmap over step sizes inside a vmap over seeds; ``lax.scan`` over steps).

    ``out_dir`` and ``resume`` are accepted for the CLI and ignored (no long training loop).

    Returns a dict: ``loss[name]`` (seeds, points) with the full-data loss at steps
    ``steps_logged[part]``; ``first_change[name]`` (seeds, d), the first step at which each
    stored weight differs from its initial stored value (``steps + 1``: never);
    ``sign_changed[name]`` (seeds, d), whether its sign ever differed from the initial one;
    ``roundtrip_error[name]`` (seeds,), the largest error of encoding the new weights into the
    storage format (0: the weights were on the grid); ``w_final[name]`` (seeds, d); the problem's
    ``w0``, ``w_star``, ``flipped``; and the config.
    """
    del out_dir, resume
    k_prob, k_run = jax.random.split(key)
    prob = make_problem(cfg, k_prob)
    keys = runner.seed_keys(k_run, cfg.seeds)
    methods = make_methods(cfg)
    groups: dict[tuple, list[str]] = {}
    for name, m in methods.items():
        groups.setdefault((m.family, m.storage, m.rounding, m.part), []).append(name)
    out = {k: {} for k in ("loss", "first_change", "sign_changed", "roundtrip_error", "w_final")}
    for spec in runner.progress(list(groups), enabled=progress, desc=SLUG):
        names = groups[spec]
        lrs = jnp.asarray([(*methods[n].lr, cfg.b2 if methods[n].b2 is None else methods[n].b2)
                           for n in names], jnp.float32)
        res = jax.device_get(_program(cfg, *spec, bool(shard))(prob, keys, lrs))
        for i, name in enumerate(names):
            for k in out:
                out[k][name] = np.asarray(res[k][:, i])
    every = cfg.log_every
    return {
        **out,
        "steps_logged": {"train": np.arange(0, cfg.steps + 1, every),
                         "descent": np.arange(cfg.descent_steps + 1)},
        "part": {n: m.part for n, m in methods.items()},
        "w0": np.asarray(prob["w0"]),
        "w_star": np.asarray(prob["w_star"]),
        "flipped": np.asarray(prob["flipped"]),
        "config": dataclasses.asdict(cfg),
    }


# --------------------------------------------------------------------------- metrics


def _large_mask(r):
    return np.abs(r["w0"]) >= r["config"]["large"]


def _large_w0_stored(r):
    # |w0| >= 16 on the BF16 grid: the rounding of w0 cannot cross 16 (a power of two).
    return _large_mask(r)


def frozen_fraction(r, name="Adam BF16 (optax)") -> float:
    """min over seeds of the fraction of |w0| >= 16 coordinates never changed in all steps."""
    never = r["first_change"][name] > r["config"]["steps"]
    mask = _large_w0_stored(r)
    return float(min(never[s][mask[s]].mean() for s in range(len(mask))))


def moved_fraction(r, name="M+Adam BF16") -> float:
    """min over seeds of the fraction of |w0| >= 16 coordinates changed within probe steps."""
    moved = r["first_change"][name] <= r["config"]["probe_steps"]
    mask = _large_w0_stored(r)
    return float(min(moved[s][mask[s]].mean() for s in range(len(mask))))


def final_loss(r, name) -> np.ndarray:
    return r["loss"][name][:, -1]


def max_ratio(r, num, den) -> float:
    """max over seeds of final_loss(num) / final_loss(den)."""
    return float(np.max(final_loss(r, num) / final_loss(r, den)))


def min_ratio(r, num, den) -> float:
    return float(np.min(final_loss(r, num) / final_loss(r, den)))


def madam_sign_changes(r, name="Madam BF16") -> float:
    return float(np.sum(r["sign_changed"][name]))


def descent_fraction(r, name="M+Adam descent FP32") -> float:
    """min over seeds of the fraction of steps with L_{t+1} <= L_t (full-batch loss)."""
    d = np.diff(r["loss"][name], axis=1)
    return float(np.min(np.mean(d <= 0, axis=1)))


CLAIMS = (
    theory.Claim(
        "adam_bf16_frozen_fraction_large", frozen_fraction, ">=", 1.0,
        "spec claim 1 (provable): BF16 optax.adam, eta=1e-2; min over seeds of the fraction of "
        "|w0|>=16 coordinates that keep their initial BF16 value for all steps"),
    theory.Claim(
        "m_plus_adam_bf16_moved_fraction_large", moved_fraction, ">=", 0.99,
        "spec claim 1: BF16 M+Adam changes >= 99% of the |w0|>=16 coordinates within the "
        "first 100 steps (min over seeds)"),
    theory.Claim(
        "loss_ratio_m_plus_adam_vs_adam_bf16",
        lambda r: max_ratio(r, "M+Adam BF16", "Adam BF16 (optax)"), "<=", 0.05,
        "spec claim 2: final loss M+Adam / Adam in BF16, max over seeds (every seed)"),
    theory.Claim(
        "madam_bf16_sign_changes", madam_sign_changes, "<=", 0.0,
        "spec claim 2: Madam never changes a sign (coordinates x seeds x steps)"),
    theory.Claim(
        "loss_ratio_madam_vs_m_plus_adam_bf16",
        lambda r: min_ratio(r, "Madam BF16", "M+Adam BF16"), ">=", 5.0,
        "spec claim 2: Madam plateaus >= 5x M+Adam's final loss, min over seeds"),
    theory.Claim(
        "descent_fraction_fp32", descent_fraction, ">=", 0.99,
        "spec claim 3: full batch, fp32, eta_A=eta_M=1e-4, 2000 steps: fraction of "
        "non-increasing steps, min over seeds"),
    theory.Claim(
        "loss_ratio_m_plus_adam_vs_adam_fp8",
        lambda r: max_ratio(r, "M+Adam FP8", "Adam FP8"), "<=", 0.2,
        "spec claim 4 as stated (eta_A = eta_M = 1e-2, nearest rounding), FP8 e4m3 master "
        "weights with a per-tensor power-of-two scale, final loss M+Adam / Adam, max over seeds. "
        "DOES NOT REPRODUCE (measured ratio 0.9993 at QUICK and FULL, key 0): the "
        "multiplicative step 2^(-0.01|u|) changes a weight by < 2.1% for |u| < 3, below half "
        "an FP8 ulp (3.1-6.25% relative), so it always rounds away and M+Adam adds nothing "
        "over Adam on the large weights; the additive path still moves the small ones (the "
        "per-tensor grid is fine there), which is why both stall at the same loss"),
    theory.Claim(
        "loss_ratio_m_plus_adam_eta_mul_0.1_vs_adam_fp8",
        lambda r: max_ratio(r, _fp8_tuned(r), "Adam FP8"), "<=", 0.2,
        "spec claim 4 in the paper's spirit (our tuning): eta_M = 0.1, so that the "
        "multiplicative step (about 7% per step) exceeds half an FP8 ulp; eta_A = 1e-2, "
        "nearest rounding; max over seeds"),
)

# Documented non-reproductions: reported failing with the measured value, never hidden. The
# spec's claim 4 as stated (nearest rounding, eta_M = 1e-2) does not reproduce in FP8: the
# multiplicative step is below half an FP8 ulp and rounds away (see the claim's source).
KNOWN_FAILING = ("loss_ratio_m_plus_adam_vs_adam_fp8",)


def _fp8_tuned(r):
    return f"M+Adam FP8 eta_M={r['config']['fp8_lr_mul']:g}"


def summarize(results: dict) -> dict:
    """Median final losses, the claim metrics, and the reported-only comparisons."""
    out = {}
    names = list(results["loss"])
    for name in names:
        out[f"final loss median/{name}"] = float(np.median(final_loss(results, name)))
    for name in names:
        if results["part"][name] == "train":
            fixed = results["sign_changed"][name] & results["flipped"]
            out[f"wrong signs fixed (fraction)/{name}"] = float(
                fixed.sum() / results["flipped"].sum())
            out[f"|w0|>=16 ever changed (fraction)/{name}"] = float(
                np.mean((results["first_change"][name] <= results["config"]["steps"])
                        [_large_mask(results)]))
    out["storage round-trip max error (all methods)"] = float(
        max(np.max(v) for v in results["roundtrip_error"].values()))
    pairs = [("M+Adam BF16", "Adam BF16 (optax)"), ("M+Adam FP8", "Adam FP8"),
             ("M+Adam BF16 SR", "Adam BF16 SR"), ("M+Adam FP8 SR", "Adam FP8 SR"),
             ("M+Adam FP4", "Adam FP4"), ("M+Adam FP4 SR", "Adam FP4 SR"),
             ("M+Adam BF16", "Adam FP32 master (optax)"), ("Madam BF16", "M+Adam BF16")]
    for a, b in pairs:
        if a in names and b in names:
            out[f"ratio median/{a} vs {b}"] = float(np.median(final_loss(results, a)
                                                              / final_loss(results, b)))
    for name in names:
        if results["part"][name] == "descent":
            out[f"non-increasing steps (min over seeds)/{name}"] = descent_fraction(results, name)
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results: dict, cfg: Config) -> dict:
    """``loss``: full-data loss per storage format (seed median, 10-90% band, log axes);
    ``stagnation``: first step at which each coordinate changed against |w0| (BF16);
    ``descent``: the full-batch descent runs."""
    import matplotlib.pyplot as plt

    figs = {}
    groups = [("BF16 / FP32", ("BF16", "FP32 master")), ("FP8 e4m3", ("FP8",)),
              ("FP4 e2m1", ("FP4",))]
    train = [n for n in results["loss"] if results["part"][n] == "train"]
    panels = [(t, [n for n in train if any(k in n for k in keys)]) for t, keys in groups]
    panels = [(t, ns) for t, ns in panels if ns]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    ks = results["steps_logged"]["train"]
    # within a panel the formats' curves can coincide (Adam FP8 and M+Adam FP8 do), so each
    # series gets its own line style and hollow marker
    styles = (("-", None), ("--", "o"), (":", "s"), ("-.", "^"))
    for ax, (title, ns) in zip(axes[0], panels, strict=True):
        for i, name in enumerate(ns):
            ls, marker = styles[i % len(styles)]
            runner.band_plot(ax, ks[1:], results["loss"][name][:, 1:], label=name, ls=ls,
                             marker=marker, markevery=0.1, ms=5, mfc="none")
        runner.finish_axes(ax, xlabel="step", ylabel="training loss",
                           title=f"{title}, {cfg.seeds} seeds", legend=7)
    fig.tight_layout()
    figs["loss"] = fig

    fig, ax = plt.subplots(figsize=(6, 4.2))
    w0 = np.abs(results["w0"]).ravel()
    for name, marker in (("Adam BF16 (optax)", "x"), ("M+Adam BF16", "o"), ("Madam BF16", ".")):
        first = results["first_change"][name].ravel().astype(float)
        first[first > cfg.steps] = np.nan
        ax.scatter(w0, first, s=8, marker=marker, label=name, alpha=0.6)
    ax.axvline(cfg.large, color="k", ls="--", lw=1, label=f"|w| = {cfg.large:g}")
    runner.finish_axes(ax, xscale="log", yscale="log", xlabel="|w0|",
                       ylabel="first step the stored weight changed (missing: never)",
                       title="BF16 stagnation of additive updates", legend=7)
    figs["stagnation"] = fig

    fig, ax = plt.subplots(figsize=(6, 4.2))
    kd = results["steps_logged"]["descent"]
    for name in results["loss"]:
        if results["part"][name] == "descent":
            v = results["loss"][name]
            runner.band_plot(ax, kd[1:], v[:, 1:] / v[:, :1], label=name)
    runner.finish_axes(ax, yscale="linear", xlabel="step",
                       ylabel="loss / initial loss (full batch)",
                       title=f"descent, eta_A = eta_M = {cfg.descent_lr:g}", legend=7)
    figs["descent"] = fig
    return figs
