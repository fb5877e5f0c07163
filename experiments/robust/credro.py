r"""# CreDRO: credal predictors from DRO ensembles

*Learning Credal Ensembles via Distributionally Robust Optimization* (K. Wang, G. A. Faza,
F. Cuzzolin, S. L. Chau, D. Moens, H. Hallez; ICML 2026, arXiv 2602.08470). Only the abstract
and introduction were readable: the DRO loss and level grid below are inferred (see "Choices").

## Method

$M$ members, member $m$ trained on the mini-batch DRO loss at its own relaxation level of the
i.i.d. assumption (CVaR at level $\alpha_m$, $\alpha = 1$ being ERM):

$$L_m(\theta) = \max_{w \in \Delta_B,\ w_i \le 1/(\alpha_m B)} \sum_i w_i\,\ell_i(\theta),
\qquad \nabla L_m = \sum_i w_i^\star \nabla \ell_i \ \text{(stop-gradient weights)}.$$

The softmax outputs $p_1(x), \dots, p_M(x)$ give the box credal set
$Q(x) = \{p \in \Delta_K : \min_m p_{m,k} \le p_k \le \max_m p_{m,k}\}$ (tightened to reachable
bounds); total uncertainty is the upper entropy $\overline H = \max_{Q} H$ (exact
water-filling $p_k = \mathrm{clip}(\tau, l_k, u_k)$), aleatoric the lower entropy
$\underline H = \min_Q H$ (exact vertex enumeration for $K \le 10$), and
$\mathrm{EU} = \overline H - \underline H$. Code: `robust.credro` (`dro_weights`, `dro_loss`,
`credal_ensemble`, `deep_ensemble`, `ClassificationData`) and `robust.credal` (`intervals`,
`upper_entropy`, `lower_entropy`, `eu_au`, `mutual_information`).

Baselines (trained once, scored twice): **Deep Ensemble** (ERM members from independent
initialisations and minibatches; EU = mutual information) and **Credal Wrapper** (the same ERM
members, the same box and entropies: CreDRO with every level at ERM). Reported, not claimed:
**Bagging** (`credro.bagging_ensemble`: $M$ ERM members, each on its own bootstrap resample of
the training set, drawn as Multinomial$(N, 1/N)$ count weights; scored by the box EU and by
the mutual information) and a **single DRO model** (CreDRO's most robust member,
$\alpha = 0.3$, read off the trained ensemble: members never interact, so it is a
`credal_ensemble` with one level; scored by its softmax entropy, the total uncertainty of one
model, and predicting with its own argmax).

**Problems and claims** (`CLAIMS`; QUICK sizes in brackets):

1. *Solver exactness* (float64): 1000 [100] boxes per $K \in \{3, 6, 10\}$ (half the min/max
   of 4 Dirichlet(0.5) members, half random intervals, tightened): water-filling $\overline H$
   matches a NumPy entropic mirror descent on the box-simplex (KL projection by bisection)
   within $10^{-7}$; the exhaustive-vertex $\underline H$ matches a NumPy brute force over all
   $K 2^{K-1}$ vertices (written with `itertools`) within $10^{-9}$; the vertex minimum
   alone (without `lower_entropy`'s safeguard minimum with greedy) is never above the greedy
   vertex (the gap is recorded); invariants $\mathrm{EU} \ge 0$, $\mathrm{EU} = 0$ when
   $l = u$, $\overline H \le \log K$.
2. *Reduction identity*: `credal_ensemble` with every level $\alpha_m = 1$ and the same keys
   gives bit-identical member probabilities to `deep_ensemble` (the Credal Wrapper) after the
   whole training run of claim 3.
3. *Shift-aware disagreement*: 2-D, 3-class Gaussian mixture; train on $x_1 < 1$; in-
   distribution test $x_1 < 1$, shifted test $x_1 \in [2, 4]$; $M = 5$ MLPs $2\times 64$,
   2000 [300] Adam steps, batch 128, 8 [4] seeds (a new data set per seed). OOD-vs-ID AUROC
   of EU: CreDRO $\ge$ Credal Wrapper on $\ge 6/8$ seeds and mean improvement $> 0$
   (`summarize` also reports every score's AUROC against chance, 0.5). Member probabilities
   come from the float32 training program; the scores are computed in float64.
4. *Selective classification under subpopulation shift*: class 0 has a rare sub-cluster (5% of
   class 0 in training, 50% at test); the area under the accuracy-rejection curve (ensemble-
   mean prediction, reject the most uncertain first) with CreDRO's EU beats Deep Ensemble's
   mutual information on $\ge 6/8$ seeds (added: and the Credal Wrapper's EU).

**Choices.** CVaR mini-batch DRO (Levy et al. 2020) with $\alpha_m \in$ `linspace(1, 0.3, 5)`
(the spec's default grid), batch 128 (so $\lceil 0.3 B\rceil = 39$ examples carry the
weight), Adam $3\cdot 10^{-3}$; each member draws its own minibatches; members are
initialised from independent keys. The chi-square DRO form is implemented and tested but not
used in the claims. Data (per seed): class means $(-1.5, 1.5)$, $(-1.5, -1.5)$, $(0.5, 0)$ with
unit covariance, shifted inputs $x_1 \sim U[2, 4]$ with $x_2$ from the mixture; subpopulation
problem: class 0 main cluster $(-2, 0)$, rare cluster $(2, 2.5)$, class 1 at $(2, 0)$, class
2 at $(0, -2.5)$, scale 0.7. AUROC is the Mann-Whitney statistic (ties count one half).

**Measured** (key 0; FULL = 8 seeds, 2000 steps; QUICK = 4 seeds, 300 steps, in brackets). Claim
1: $|\overline H - \text{mirror descent}| \le 1.3\cdot 10^{-15}$, exhaustive $\underline H$ vs
brute force $\le 7.8\cdot 10^{-16}$, invariants violated by at most $3\cdot 10^{-15}$. The
greedy vertex is not optimal on 18% / 51% / 62% of the boxes for $K = 3 / 6 / 10$ (mean excess
0.008 / 0.037 / 0.039 nats, max 0.22 / 0.28 / 0.25), so the greedy rule above $K = 10$
under-estimates EU noticeably. Claim 2: 0 differing bits (PASS). Claim 3: OOD AUROC of EU,
CreDRO **0.655** (seeds 0.51-0.78) vs Credal Wrapper 0.392 (0.06-0.97), CreDRO $\ge$ Wrapper on
**6/8** seeds (PASS, at the threshold), mean gain 0.264 [QUICK 0.696 vs 0.225, 4/4]; Deep
Ensemble MI 0.441. The ERM baselines score *below* 0.5: every ERM member extrapolates class 2
confidently into $x_1 \in [2, 4]$, so their disagreement is larger at the in-distribution class
boundaries than off the support: as OOD detectors the Credal Wrapper (0.392) and the Deep
Ensemble (0.441) are *worse than chance*, and CreDRO's 0.655 is 0.155 above chance, so "beats
the Wrapper" here means "beats a detector that is inverted"; the CVaR members extrapolate
differently, which is the paper's point, but 6/8 is a narrow pass. Claim 4 does **not**
reproduce (KNOWN_FAILING): accuracy 0.951 for both ensembles, rare sub-cluster 0.813 (CreDRO) vs
0.812 (ERM): CVaR at $\alpha \ge 0.3$ on batches of 128 barely changes the fit of a 1.7%
subgroup. AUARC: CreDRO EU 0.99236, Deep Ensemble MI 0.99315 (CreDRO wins on **0/8** seeds
[0/4]), Credal Wrapper EU 0.99229 (**5/8** [2/4]); the best epistemic score is CreDRO's own
mutual information (0.99317). (FULL claims 3-4 re-measured after the float64 scoring.) Two
other rare-cluster placements, $(2, 1.5)$ and $(1, 1)$ (tried once each at FULL size, then
discarded), gave 1/8 and 2/8 seeds against the MI baseline.

Added baselines (FULL, same seeds and data; reported, not claims) [QUICK in brackets]. Shift
OOD AUROC: Bagging EU 0.425 (6/8 seeds below 0.5) [0.423], Bagging MI 0.456 (5/8 below 0.5)
[0.464], single DRO model's softmax entropy 0.093 (8/8 below 0.5: one model extrapolates
confidently off the support, so its entropy ranks OOD points as the *most* certain) [0.155];
CreDRO EU $\ge$ Bagging EU on 6/8 seeds [4/4], $\ge$ Bagging MI on 6/8 [4/4], $\ge$ the single
DRO model on 8/8 [4/4]. Bootstrap diversity behaves like seed diversity here (both ERM
ensembles are below chance on average); only the DRO-level diversity gives a detector above
chance. Subpopulation AUARC: Bagging EU 0.99253, Bagging MI 0.99311, single DRO entropy
**0.99441**, the best of every score reported (its accuracy 0.9514, rare sub-cluster 0.817;
Bagging 0.9519, 0.809) [0.98924, 0.99122, 0.99183]; CreDRO EU beats them on 5/8 [3/4], 4/8
[2/4] and 0/8 [1/4] seeds. Total-uncertainty scores beat every EU score at selective
classification on this problem (CreDRO's ensemble entropy 0.99402): its errors sit where the
classes overlap, which is aleatoric. The FULL run with the added baseline took 88 s pinned to
one core.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import runner
from jaxopt_icml import base, theory
from jaxopt_icml.models import mlp
from jaxopt_icml.robust import credal, credro

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("K. Wang, G. A. Faza, F. Cuzzolin, S. L. Chau, D. Moens, H. Hallez. *Learning "
             "Credal Ensembles via Distributionally Robust Optimization*. ICML 2026, "
             "arXiv 2602.08470.")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 8
    # claim 1
    boxes: int = 1000
    classes: tuple = (3, 6, 10)
    # claims 2-4
    levels: tuple = (1.0, 0.825, 0.65, 0.475, 0.3)
    hidden: tuple = (64, 64)
    steps: int = 2000
    batch: int = 128
    lr: float = 3e-3
    n_train: int = 2000
    n_test: int = 1000
    rare_train: float = 0.05
    rare_test: float = 0.5


FULL = Config()
QUICK = Config(seeds=4, boxes=100, steps=300, n_train=1000, n_test=500)


# --------------------------------------------------------------------------- data

_SHIFT_MEANS = np.array([[-1.5, 1.5], [-1.5, -1.5], [0.5, 0.0]], np.float32)
_SUB_MEANS = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, -2.5]], np.float32)
_RARE_MEAN = np.array([2.0, 2.5], np.float32)
_SUB_SCALE = 0.7


def _shift_data(cfg, key):
    """Train / ID test on ``x_1 < 1`` (rejection sampling with a fixed shape), OOD test with
    ``x_1 ~ U[2, 4]`` and ``x_2`` from the mixture."""
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    means = jnp.asarray(_SHIFT_MEANS)

    def truncated(k, n):
        kc, kx = jax.random.split(k)
        pool = 8 * n
        y = jax.random.randint(kc, (pool,), 0, 3)
        x = means[y] + jax.random.normal(kx, (pool, 2))
        keep = jnp.argsort(~(x[:, 0] < 1.0), stable=True)[:n]  # the first n accepted draws
        return x[keep], y[keep]

    X, y = truncated(k1, cfg.n_train)
    X_id, _ = truncated(k2, cfg.n_test)
    y_ood = jax.random.randint(k3, (cfg.n_test,), 0, 3)
    x2 = means[y_ood, 1] + jax.random.normal(k4, (cfg.n_test,))
    x1 = jax.random.uniform(k5, (cfg.n_test,), minval=2.0, maxval=4.0)
    return {"X": X, "y": y, "X_id": X_id, "X_ood": jnp.stack([x1, x2], axis=1)}


def _subpop_data(cfg, key):
    """Class 0 = main cluster + rare cluster (``rare_train`` of class 0 in training,
    ``rare_test`` at test); classes balanced."""
    means = jnp.asarray(_SUB_MEANS)

    def draw(k, n, rare_frac):
        kc, kr, kx = jax.random.split(k, 3)
        y = jax.random.randint(kc, (n,), 0, 3)
        rare = (y == 0) & (jax.random.uniform(kr, (n,)) < rare_frac)
        mu = jnp.where(rare[:, None], jnp.asarray(_RARE_MEAN)[None, :], means[y])
        return mu + _SUB_SCALE * jax.random.normal(kx, (n, 2)), y, rare

    ktr, kte = jax.random.split(key)
    X, y, _ = draw(ktr, cfg.n_train, cfg.rare_train)
    X_te, y_te, rare_te = draw(kte, cfg.n_test, cfg.rare_test)
    return {"X": X, "y": y, "X_test": X_te, "y_test": y_te, "rare_test": rare_te}


def _make_model(cfg):
    return lambda rngs: mlp.MLP(2, cfg.hidden, 3, rngs=rngs)


def make_problem(cfg: Config, key) -> dict:
    """Both data sets for every seed (leading axis ``seeds``): ``shift`` (``X, y, X_id,
    X_ood``) and ``subpop`` (``X, y, X_test, y_test, rare_test``)."""
    return _data(cfg, runner.seed_keys(key, cfg.seeds, fast=True))


@functools.partial(jax.jit, static_argnums=(0,))
def _data(cfg, keys):
    return {"shift": jax.vmap(lambda k: _shift_data(cfg, jax.random.fold_in(k, 0)))(keys),
            "subpop": jax.vmap(lambda k: _subpop_data(cfg, jax.random.fold_in(k, 1)))(keys)}


def make_methods(cfg: Config) -> dict:
    """The ensembles (``OracleAlgorithm``s on stacked member parameters). The single DRO
    model baseline is CreDRO's most robust member (level ``min(levels)``), read off the
    trained CreDRO ensemble (members are trained independently, so it is
    ``credal_ensemble(opt, (min(levels),))``, with other keys)."""
    opt = optax.adam(cfg.lr)
    m = len(cfg.levels)
    return {
        "CreDRO (CVaR levels)": credro.credal_ensemble(opt, cfg.levels, kind="cvar"),
        "Deep Ensemble / Credal Wrapper (ERM)": credro.deep_ensemble(opt, m),
        "CreDRO, all levels ERM": credro.credal_ensemble(opt, (1.0,) * m, kind="cvar"),
        "Bagging (ERM on bootstrap resamples)": credro.bagging_ensemble(
            opt, m, num_examples=cfg.n_train),
    }


# --------------------------------------------------------------------------- claim 1


def _np_entropy(p):
    p = np.clip(p, 0.0, 1.0)
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)


def np_mirror_descent_upper(lo, hi, iters: int = 60, step: float = 0.5,
                            bisect: int = 80) -> np.ndarray:
    """NumPy reference for ``max H`` on the box-simplex: entropic mirror ascent
    ``q = p^{1 - step} e^{-step}`` (the gradient of H is ``-log p - 1``) followed by the KL
    projection ``clip(c q, lo, hi)`` onto the box-simplex with ``c`` found by bisection on
    ``log c``. Vectorised over boxes ``(N, K)``."""
    p = np.clip(np.full_like(lo, 1.0 / lo.shape[-1]), lo, hi)
    p = _np_kl_project(p, lo, hi, bisect)
    for _ in range(iters):
        q = np.exp((1.0 - step) * np.log(np.maximum(p, 1e-300)) - step)
        p = _np_kl_project(q, lo, hi, bisect)
    return _np_entropy(p)


def _np_kl_project(q, lo, hi, bisect):
    a = np.full(q.shape[0], -100.0)
    b = np.full(q.shape[0], 100.0)
    logq = np.log(np.maximum(q, 1e-300))
    for _ in range(bisect):
        mid = 0.5 * (a + b)
        s = np.clip(np.exp(np.minimum(logq + mid[:, None], 700.0)), lo, hi).sum(-1)
        a, b = np.where(s < 1.0, mid, a), np.where(s < 1.0, b, mid)
    return np.clip(np.exp(np.minimum(logq + 0.5 * (a + b)[:, None], 700.0)), lo, hi)


def np_bruteforce_lower(lo, hi, chunk: int = 64) -> np.ndarray:
    """NumPy reference for ``min H`` on the box-simplex: every vertex candidate (``K - 1``
    classes at a bound chosen by ``itertools.product``, the free one at ``1 -`` their sum and
    inside its interval up to ``1e-12``)."""
    n, k = lo.shape
    out = np.full(n, np.inf)
    for free in range(k):
        others = [j for j in range(k) if j != free]
        bits = np.array(list(itertools.product((0, 1), repeat=k - 1)), bool)  # (2^{K-1}, K-1)
        for s in range(0, n, chunk):
            lo_o, hi_o = lo[s:s + chunk][:, others], hi[s:s + chunk][:, others]
            pts = np.where(bits[None], hi_o[:, None], lo_o[:, None])  # (c, 2^{K-1}, K-1)
            pf = 1.0 - pts.sum(-1)
            ok = ((pf >= lo[s:s + chunk, free][:, None] - 1e-12)
                  & (pf <= hi[s:s + chunk, free][:, None] + 1e-12))
            h = _np_entropy(pts) + _np_entropy(pf[..., None])
            out[s:s + chunk] = np.minimum(out[s:s + chunk], np.where(ok, h, np.inf).min(-1))
    return out


def random_boxes(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` boxes on ``K`` classes (float64): the first half min/max of 4 Dirichlet(0.5)
    members, the second half random intervals around a Dirichlet point (both tightened)."""
    rng = np.random.default_rng(seed)
    half = n // 2
    p = rng.dirichlet(0.5 * np.ones(k), size=(half, 4))
    lo1, hi1 = p.min(1), p.max(1)
    c = rng.dirichlet(np.ones(k), size=n - half)
    lo2 = np.clip(c - rng.uniform(0, 0.3, c.shape), 0, 1)
    hi2 = np.clip(c + rng.uniform(0, 0.3, c.shape), 0, 1)
    lo, hi = np.concatenate([lo1, lo2]), np.concatenate([hi1, hi2])
    with jax.enable_x64(True):
        lo, hi = credal.tighten(jnp.asarray(lo), jnp.asarray(hi))
        return np.asarray(lo), np.asarray(hi)


@functools.partial(jax.jit, static_argnames=("exact",))
def _entropies(lo, hi, exact=True):
    up = credal.upper_entropy(lo, hi)
    low = credal.lower_entropy(lo, hi, exact=exact)  # (boxes, K 2^{K-1}) candidates
    greedy = credal.greedy_lower_entropy(lo, hi)
    # the vertex minimum WITHOUT lower_entropy's safeguard min(., greedy), for the claim
    # solver_exact_not_above_greedy (private helper: the claim would be vacuous otherwise)
    vertex = credal._vertex_lower_entropy(lo, hi)
    return up, low, greedy, up - low, vertex  # EU before eu_au's clip at 0


def _solver(cfg, seed):
    out = {}
    for k in cfg.classes:
        lo, hi = random_boxes(k, cfg.boxes, seed + k)
        with jax.enable_x64(True):
            pts = np.random.default_rng(seed + 100 + k).dirichlet(np.ones(k), cfg.boxes)
            up, low, greedy, eu, vertex = map(np.asarray,
                                              _entropies(jnp.asarray(lo), jnp.asarray(hi)))
            eu_pt = np.asarray(_entropies(jnp.asarray(pts), jnp.asarray(pts))[3])  # lo = hi
        out[k] = {"upper": up, "upper_md": np_mirror_descent_upper(lo, hi), "lower": low,
                  "lower_bf": np_bruteforce_lower(lo, hi), "greedy": greedy, "eu": eu,
                  "vertex": vertex,
                  "eu_point": eu_pt, "log_k": math.log(k)}
    return out


# --------------------------------------------------------------------------- claims 2-4


def _train(alg, cfg, X, y, key):
    """Initialise ``M`` members from independent keys and run ``alg`` for ``cfg.steps``."""
    make = _make_model(cfg)
    graphdef = mlp.abstract_params(make)[0]
    apply = mlp.pure_apply(graphdef)
    kinit, krun = jax.random.split(key)
    keys = jax.random.split(kinit, len(cfg.levels))
    params = jax.vmap(lambda k: mlp.init_params(make, k)[1])(keys)
    data = credro.ClassificationData(X, y, apply, cfg.batch)
    state, trace = base.run(alg, params, data, krun, cfg.steps,
                            trace_fn=lambda step, st, o: step.info["robust_loss"])
    return state.params, apply, trace


def _scores(probs):
    u = credal.credal_uncertainty(probs)
    return {"eu": u.epistemic, "tu": u.total, "au": u.aleatoric,
            "mi": credal.mutual_information(probs),
            "entropy": credal.entropy(jnp.mean(probs, axis=0)),
            "pred": jnp.argmax(jnp.mean(probs, axis=0), axis=-1),
            # each member alone (the single-model baseline): softmax entropy, prediction
            "member_entropy": credal.entropy(probs), "member_pred": jnp.argmax(probs, axis=-1)}


_METHODS = (("CreDRO (CVaR levels)", "credro"),
            ("Deep Ensemble / Credal Wrapper (ERM)", "erm"),
            ("CreDRO, all levels ERM", "credro_erm"),
            ("Bagging (ERM on bootstrap resamples)", "bagging"))


@functools.partial(jax.jit, static_argnums=(0,),
                   compiler_options=runner.fast_cpu_compile_options())
def _program(cfg, data_keys, keys):
    """Data (from ``data_keys``), then each ensemble trained on both problems at once (vmapped
    over seeds and the two problems: one training loop per method, from ``keys``), then the
    members' test probabilities."""
    data = _data.__wrapped__(cfg, data_keys)
    methods = make_methods(cfg)
    sh, sp = data["shift"], data["subpop"]
    X = jnp.stack([sh["X"], sp["X"]], axis=1)  # (seeds, 2 problems, n, 2)
    y = jnp.stack([sh["y"], sp["y"]], axis=1)
    pkeys = jax.vmap(lambda k: jax.random.split(k, 2))(keys)  # (seeds, 2)
    apply = mlp.pure_apply(mlp.abstract_params(_make_model(cfg))[0])
    probs, out = [], {"data": data}
    for name, short in _METHODS:
        alg = methods[name]
        train = jax.vmap(jax.vmap(lambda a, b, k, alg=alg: _train(alg, cfg, a, b, k)[::2]))
        params, trace = train(X, y, pkeys)
        p_sh = jax.tree.map(lambda v: v[:, 0], params)
        p_sp = jax.tree.map(lambda v: v[:, 1], params)
        ev = jax.vmap(lambda p, x: credro.member_probs(apply, p, x))
        probs.append(jnp.stack([ev(p_sh, sh["X_id"]), ev(p_sh, sh["X_ood"]),
                                ev(p_sp, sp["X_test"])]))  # (3 sets, seeds, M, N, K)
        out[f"loss/{short}"] = trace[:, :, -1]
    out["probs"] = jnp.stack(probs)  # (4 methods, 3 sets, seeds, M, N, K), float32
    return out


@jax.jit
def _score_all(flat):
    """One float64 scoring program for every method, test set and seed (the entropies of
    nearly agreeing members cancel in H̄ - H̲, so float32 would blur small EU values)."""
    return jax.vmap(jax.vmap(jax.vmap(_scores)))(flat.astype(jnp.float64))


def _split_scores(res, single: int):
    """Per-method scores; ``single``: the CreDRO member that is the single DRO model."""
    flat = res.pop("probs")
    with jax.enable_x64(True):
        scores = jax.tree.map(np.asarray, _score_all(jnp.asarray(flat)))
    for i, (_, short) in enumerate(_METHODS):
        pick = lambda j, i=i: jax.tree.map(lambda v: v[i, j], scores)
        res[f"shift/{short}"] = {"id": pick(0), "ood": pick(1), "probs_ood": flat[i, 1]}
        res[f"subpop/{short}"] = pick(2)
    # single DRO model: CreDRO's member `single`, scored by its own softmax entropy and
    # predicting with its own argmax; the per-member scores are dropped afterwards
    sh, sp = res["shift/credro"], res["subpop/credro"]
    res["shift/single_dro"] = {s: {"entropy": sh[s]["member_entropy"][:, single]}
                               for s in ("id", "ood")}
    res["subpop/single_dro"] = {"entropy": sp["member_entropy"][:, single],
                                "pred": sp["member_pred"][:, single]}
    for _, short in _METHODS:
        e = res[f"shift/{short}"]
        for part in (e["id"], e["ood"], res[f"subpop/{short}"]):
            del part["member_entropy"], part["member_pred"]
    return res


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """Claim 1 in float64 (JAX vs NumPy references), then claims 2-4 as ONE compiled float32
    program (data, four ensembles trained on both problems, vmapped over seeds), whose member
    probabilities are scored in float64 by one more program. ``shard`` is
    accepted and ignored: the program fits one device. Returns numpy arrays."""
    del shard, out_dir, resume, progress
    seed = runner.seed_of(key)
    res = _split_scores(jax.tree.map(np.asarray, _program(
        cfg, runner.seed_keys(key, cfg.seeds, fast=True),
        runner.seed_keys(key, cfg.seeds, stream=1, fast=True))), int(np.argmin(cfg.levels)))
    data = res.pop("data")
    return {"solver": _solver(cfg, seed), "ens": res,
            "subpop_y": data["subpop"]["y_test"], "subpop_rare": data["subpop"]["rare_test"],
            "config": dataclasses.asdict(cfg)}


# --------------------------------------------------------------------------- metrics


def auroc(neg, pos) -> float:
    """``P(score_pos > score_neg) + P(tie)/2`` (Mann-Whitney), NumPy."""
    neg, pos = np.asarray(neg, np.float64), np.asarray(pos, np.float64)
    allv = np.concatenate([neg, pos])
    order = np.argsort(allv, kind="stable")
    ranks = np.empty(allv.size)
    sorted_v = allv[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_v, return_index=True, return_counts=True)
    avg = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(avg, counts)
    r_pos = ranks[neg.size:].sum()
    return float((r_pos - pos.size * (pos.size + 1) / 2.0) / (pos.size * neg.size))


def auarc(score, correct) -> float:
    """Area under the accuracy-rejection curve: accept the least uncertain first; the mean
    over ``k = 1..n`` of the accuracy of the ``k`` most certain points."""
    order = np.argsort(np.asarray(score, np.float64), kind="stable")
    c = np.asarray(correct, np.float64)[order]
    return float(np.mean(np.cumsum(c) / np.arange(1, c.size + 1)))


def shift_aurocs(r, method: str, score: str) -> np.ndarray:
    e = r["ens"][f"shift/{method}"]
    return np.array([auroc(e["id"][score][s], e["ood"][score][s])
                     for s in range(e["id"][score].shape[0])])


def subpop_auarcs(r, method: str, score: str) -> np.ndarray:
    e = r["ens"][f"subpop/{method}"]
    correct = e["pred"] == r["subpop_y"]
    return np.array([auarc(e[score][s], correct[s]) for s in range(correct.shape[0])])


def _solver_max(r, fn) -> float:
    return float(max(np.max(fn(v)) for v in r["solver"].values()))


def solver_upper_gap(r) -> float:
    return _solver_max(r, lambda v: np.abs(v["upper"] - v["upper_md"]))


def solver_lower_gap(r) -> float:
    return _solver_max(r, lambda v: np.abs(v["lower"] - v["lower_bf"]))


def solver_exact_above_greedy(r) -> float:
    """max over boxes of (vertex minimum without the greedy safeguard) - greedy (<= 0: the
    enumeration finds a vertex at least as good as the greedy one)."""
    return _solver_max(r, lambda v: v["vertex"] - v["greedy"])


def solver_invariants(r) -> float:
    """largest violation of EU >= 0, EU = 0 at a point (lo = hi), H̄ <= log K."""
    return _solver_max(r, lambda v: np.concatenate([
        np.maximum(-v["eu"], 0), np.abs(v["eu_point"]),
        np.maximum(v["upper"] - v["log_k"], 0)]))


def reduction_max_diff(r) -> float:
    e = r["ens"]
    a, b = e["shift/credro_erm"]["probs_ood"], e["shift/erm"]["probs_ood"]
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def reduction_bits_differ(r) -> float:
    """fraction of float32 probability entries whose bit patterns differ."""
    e = r["ens"]
    a, b = e["shift/credro_erm"]["probs_ood"], e["shift/erm"]["probs_ood"]
    return float(np.mean(a.view(np.uint32) != b.view(np.uint32)))


def shift_win_rate(r) -> float:
    return float(np.mean(shift_aurocs(r, "credro", "eu") >= shift_aurocs(r, "erm", "eu")))


def shift_mean_gain(r) -> float:
    return float(np.mean(shift_aurocs(r, "credro", "eu") - shift_aurocs(r, "erm", "eu")))


def shift_win_rate_vs_mi(r) -> float:
    return float(np.mean(shift_aurocs(r, "credro", "eu") >= shift_aurocs(r, "erm", "mi")))


def subpop_win_rate_vs_mi(r) -> float:
    return float(np.mean(subpop_auarcs(r, "credro", "eu") > subpop_auarcs(r, "erm", "mi")))


def subpop_win_rate_vs_wrapper(r) -> float:
    return float(np.mean(subpop_auarcs(r, "credro", "eu") > subpop_auarcs(r, "erm", "eu")))


CLAIMS = (
    theory.Claim("solver_upper_vs_mirror_descent", solver_upper_gap, "<=", 1e-7,
                 "spec claim 1: water-filling H̄ == NumPy mirror descent on box-simplex, "
                 "K in {3, 6, 10}, float64"),
    theory.Claim("solver_lower_vs_bruteforce", solver_lower_gap, "<=", 1e-9,
                 "added: exhaustive-vertex H̲ == NumPy itertools brute force, float64"),
    # 1e-12, not 0: the greedy vertex's entropy is summed in a different order than the
    # enumerated candidate's (float64 round-off). Compared against the raw vertex minimum
    # (credal._vertex_lower_entropy), not lower_entropy, which returns min(vertices, greedy)
    theory.Claim("solver_exact_not_above_greedy", solver_exact_above_greedy, "<=", 1e-12,
                 "spec claim 1: exhaustive-vertex H̲ <= greedy H̲ (gap in summarize)"),
    theory.Claim("solver_invariants", solver_invariants, "<=", 1e-12,
                 "spec claim 1: EU >= 0, EU = 0 when lo = hi, H̄ <= log K"),
    theory.Claim("reduction_bitwise", reduction_bits_differ, "<=", 0.0,
                 "spec claim 2: all levels ERM == Credal Wrapper (fraction of differing "
                 "float32 bit patterns of the OOD member probabilities)"),
    theory.Claim("shift_auroc_beats_wrapper", shift_win_rate, ">=", 0.75,
                 "spec claim 3: OOD AUROC of EU, CreDRO >= Credal Wrapper on >= 6/8 seeds"),
    theory.Claim("shift_auroc_mean_gain", shift_mean_gain, ">", 0.0,
                 "spec claim 3: mean AUROC improvement over the Credal Wrapper > 0"),
    theory.Claim("subpop_auarc_beats_deep_ensemble_mi", subpop_win_rate_vs_mi, ">=", 0.75,
                 "spec claim 4: AUARC with CreDRO EU > Deep Ensemble MI on >= 6/8 seeds"),
    theory.Claim("subpop_auarc_beats_wrapper", subpop_win_rate_vs_wrapper, ">=", 0.75,
                 "added: AUARC with CreDRO EU > Credal Wrapper EU on >= 6/8 seeds"),
)

# Documented misses (numbers in the module docstring): claim 4 does not reproduce. CreDRO's and
# the ERM ensemble's accuracy-rejection areas differ in the 4th decimal, and the deep
# ensemble's mutual information ranks errors slightly better than either box EU (two other
# placements of the rare cluster, tried once each at FULL size, gave 1/8 and 2/8 seeds).
KNOWN_FAILING = ("subpop_auarc_beats_deep_ensemble_mi", "subpop_auarc_beats_wrapper")
FULL_ONLY_FAILING: tuple = ()


def _summary_rows():
    """(method, score) rows of `summarize`: every ensemble score of CreDRO, the ERM ensemble
    and bagging, and the single DRO model's softmax entropy."""
    return ([(m, s) for m in ("credro", "erm", "bagging") for s in ("eu", "mi", "tu", "entropy")]
            + [("single_dro", "entropy")])


def summarize(results) -> dict:
    out = {}
    for k, v in results["solver"].items():
        out[f"K={k}: max |H̄ - mirror descent|"] = float(np.max(np.abs(v["upper"] -
                                                                        v["upper_md"])))
        gap = v["greedy"] - v["lower"]
        out[f"K={k}: greedy - exact H̲ (mean, max, fraction > 1e-9)"] = [
            float(gap.mean()), float(gap.max()), float(np.mean(gap > 1e-9))]
    out["reduction max |diff|"] = reduction_max_diff(results)
    for method, score in _summary_rows():
        a = shift_aurocs(results, method, score)
        out[f"shift AUROC {method}/{score} (mean, per seed)"] = [
            float(a.mean()), [round(float(x), 4) for x in a]]
        # against chance: an ERM box EU can rank OOD points BELOW in-distribution ones
        out[f"shift AUROC {method}/{score} vs chance (mean - 0.5, seeds < 0.5)"] = [
            float(a.mean() - 0.5), int(np.sum(a < 0.5))]
    for method in ("credro", "erm", "bagging", "single_dro"):
        e = results["ens"][f"subpop/{method}"]
        correct = e["pred"] == results["subpop_y"]
        rare = results["subpop_rare"]
        out[f"subpop accuracy {method} (all, rare)"] = [
            float(correct.mean()), float(correct[rare].mean())]
    for method, score in _summary_rows():
        a = subpop_auarcs(results, method, score)
        out[f"subpop AUARC {method}/{score} (mean, per seed)"] = [
            float(a.mean()), [round(float(x), 4) for x in a]]
    # the baselines against CreDRO's EU, seed by seed (reported, not claims)
    for name, method, score in (("bagging EU", "bagging", "eu"), ("bagging MI", "bagging", "mi"),
                                ("single DRO entropy", "single_dro", "entropy")):
        out[f"shift AUROC: CreDRO EU >= {name} (seeds)"] = int(np.sum(
            shift_aurocs(results, "credro", "eu") >= shift_aurocs(results, method, score)))
        out[f"subpop AUARC: CreDRO EU > {name} (seeds)"] = int(np.sum(
            subpop_auarcs(results, "credro", "eu") > subpop_auarcs(results, method, score)))
    out.update(runner.claim_values(CLAIMS, results))
    return out


def _seed_strip(ax, vals, names, *, xlabel: str, title: str) -> None:
    """One row per method: every seed's value as a hollow circle and the seed median as a bar
    (horizontal rows keep the long method names readable)."""
    vals = [np.asarray(v, dtype=float) for v in vals]
    rows = np.arange(len(vals))
    ax.scatter(np.concatenate(vals), np.repeat(rows, [v.size for v in vals]), marker="o",
               facecolors="none", edgecolors="C0", s=28, label="one seed")
    ax.plot([np.median(v) for v in vals], rows, ls="none", marker="|", ms=18, mew=2.5,
            color="C3", label=f"median over {vals[0].size} seeds")
    ax.set_yticks(rows, names)
    ax.set_ylim(len(vals) - 0.5, -0.5)
    runner.finish_axes(ax, xlabel=xlabel, ylabel="method (uncertainty score)", title=title,
                       legend=None)


def plot(results, cfg: Config) -> dict:
    """``downstream``: per method, the seeds' OOD-vs-ID AUROC under covariate shift and area
    under the accuracy-rejection curve under subpopulation shift (each seed a circle, the
    median a bar); ``accuracy_rejection``: accuracy of the accepted points against the rejection
    rate under subpopulation shift (seed median, 10-90% band)."""
    import matplotlib.pyplot as plt

    figs = {}
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    pairs = [("CreDRO EU", "credro", "eu"), ("Credal Wrapper EU", "erm", "eu"),
             ("Deep Ensemble MI", "erm", "mi"), ("Bagging EU", "bagging", "eu"),
             ("Bagging MI", "bagging", "mi"), ("single DRO entropy", "single_dro", "entropy")]
    names = [p[0] for p in pairs]
    _seed_strip(axes[0], [shift_aurocs(results, m, s) for _, m, s in pairs], names,
                xlabel="OOD-vs-ID AUROC", title="shift: train x1 < 1, OOD x1 in [2, 4]")
    _seed_strip(axes[1], [subpop_auarcs(results, m, s) for _, m, s in pairs], names,
                xlabel="area under accuracy-rejection curve",
                title="subpopulation shift (rare sub-cluster 5% -> 50%)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    figs["downstream"] = fig
    fig, ax = plt.subplots(figsize=(7, 4.6))
    # the curves nearly coincide: a line style and sparse markers per method keep each visible
    styles = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ("-", "v"), ("--", "x"))
    for (name, m, s), (ls, marker) in zip(pairs, styles, strict=True):
        e = results["ens"][f"subpop/{m}"]
        correct = e["pred"] == results["subpop_y"]
        n = correct.shape[1]
        curves = []
        for i in range(correct.shape[0]):
            c = correct[i][np.argsort(e[s][i], kind="stable")]
            curves.append((np.cumsum(c) / np.arange(1, n + 1))[::-1])
        rej = 1.0 - np.arange(n, 0, -1) / n
        curves = np.array(curves)
        (line,) = ax.plot(rej, np.median(curves, 0), ls=ls, marker=marker, markevery=n // 8,
                          ms=5, mfc="none", label=name)
        band = ax.fill_between(rej, *np.percentile(curves, [10, 90], axis=0), alpha=0.2,
                               color=line.get_color(), linewidth=0,
                               label=f"{name} (median, 10-90% of {len(curves)} seeds)")
        band.median_line = line  # one legend entry for the line and its band (finish_axes)
    runner.finish_axes(ax, xlabel="rejection rate (fraction rejected, most uncertain first)",
                       ylabel="accuracy of accepted points",
                       title="accuracy-rejection, subpopulation shift", legend=7)
    figs["accuracy_rejection"] = fig
    return figs
