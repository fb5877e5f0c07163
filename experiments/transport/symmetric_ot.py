r"""# Symmetry-reduced optimal transport via orbit decomposition

*Optimal Transport with Symmetry Groups* (ICML 2026, poster 65591; only the abstract was
available). Predecessor: Takeda, Akagi, Marumo, Niwa, *Optimal Transport with Cyclic Symmetry*
(AAAI 2024).

**Method** (`transport.orbits`, `transport.symmetric`). No group is given. Colour refinement
(1-WL) on the weighted bipartite graph of $C$, started from the weights $a, b$, returns row
classes $R_s$ (sizes $r_s$) and column classes $S_t$ (sizes $s_t$) of an *equitable* partition
(every orbit of every symmetry lies in one class); detection is one jitted program on the device
(hash refinement in a `lax.while_loop`, an exact sort-based equitability check: XLA's sort on
accelerators, NumPy's through `pure_callback` on the CPU backend), then one read of the class
counts.
Entropic OT reduces to ordinary entropic OT on
$\tilde C_{st} = -\varepsilon\ln\sum_{j\in S_t}e^{-C_{i_s j}/\varepsilon}$,
$\tilde a_s = r_s a_{i_s}$, $\tilde b_t = s_t b_{j_t}$, solved by ott-jax's `Sinkhorn`; the lift
is $f_i = \tilde f_s - \varepsilon\ln r_s$, $g_j = \tilde g_t$, and
$\mathrm{reg\_ot\_cost} = \widetilde{\mathrm{reg\_ot\_cost}} + \varepsilon\sum_t\tilde b_t\ln s_t$.
Linear OT reduces to $\tilde C^0_{st} = \min_{j\in S_t}C_{i_s j}$ and the lift spreads $Q_{st}$
evenly over the argmin pairs of each block.

**Problems.** Points on concentric rings: sources are $L$ rotations $\times$ $R$ radii, targets $L$
rotations (offset by half a step) $\times$ $R'$ other radii, radii $\sim U[0.5, 1.5]$ per seed,
squared Euclidean cost, weights uniform inside a ring with ring weights $\sim U[1, 2]$
(normalised); the dihedral group of order $2L$ acts. $\varepsilon = 0.05\,\mathrm{mean}(C)$.

**Claims** (`CLAIMS`; spec numbers):

1. Entropic exactness ($L = 64$, $8\to4$ radii, $n = 512$, $m = 256$, 8 seeds, float64, both
   solves with ott-jax `Sinkhorn`, threshold $10^{-9}$): refinement finds $p = 8$, $q = 4$;
   $|$full reg_ot_cost $-$ lifted$|\le10^{-6}$ relative; $\max|P_{full} - \mathrm{lift}(Q)|\le
   10^{-7}$; both marginal errors of the lifted plan $\le10^{-6}$.
2. Linear exactness ($L = 16$, $8\to8$ radii, $n = m = 128$): HiGHS on the full $128\times128$
   LP equals `transport_simplex` on the reduced $8\times8$ LP within $10^{-8}$ relative; the
   lifted plan is feasible (marginal error $\le10^{-9}$) with the same cost.
3. Speed ($L = 512$, $8\to8$ radii, $n = m = 4096$, float32, threshold $10^{-6}$ for both; QUICK:
   $L = 128$): the reduced pipeline *including* orbit detection takes $\le0.2\times$ the wall
   clock of ott-jax's full `Sinkhorn` (median of interleaved rounds). Reported beside it: the
   ratio *excluding* detection, the detection time alone, and the marginal error each method
   reaches on the full problem.
4. Approximate symmetry (the claim-2 problem plus i.i.d. Gaussian noise of standard deviation
   $10^{-3}$ on $C$, linear OT): refinement at `tol` $=10^{-9}$ returns the trivial partition (no
   reduction); at `tol` $= 10^{-2}$ the problem reduces (added) with the reduced value within 1%
   of the full one. The value-versus-`tol` curve is reported (the spec's value claims for a
   trivial partition were dropped in review: the reduced LP is then the full LP, they cannot
   fail).
5. Molecule: a benzene-like graph (6-cycle of carbons, one pendant hydrogen each), shortest-path
   cost; refinement finds 2 classes on each side and the reduced LP value equals the full one.
   Deviation: the spec's uniform weights on both sides give value 0 trivially; the target here
   is mass-weighted (C: 12, H: 1, normalised), the source uniform.

Choices: reduced LPs are solved exactly in JAX (`transport_simplex`, a transportation simplex);
full LPs by `scipy.optimize.linprog(method="highs")` as the independent reference (the spec's
full-LP baseline). Detection uses
`tol = 1e-9` in float64 and `tol = 1e-5` on the float32 cost of claim 3. Timings are wall
clock on whatever CPU runs this (shared and noisy in CI). Not done: image and molecular data
sets from the paper; the cyclic-symmetry baseline of Takeda et al. with a known period.

**Measured** (key 0; a shared 2-core CPU, so timings are indicative and vary run to run; QUICK /
FULL). Claim 1: $p = 8$, $q = 4$ on every seed; value error 1.4e-15 / 1.8e-15 relative, plan error
3.0e-14 / 3.1e-14, marginal errors 8.8e-10 / 8.8e-10; the full and reduced ott-jax solves stop
after the same number of iterations on 15 of 16 seed runs (FULL: 90, 20, 60, 20, 20, 30, 30, 20
for both, except 40 vs 30 once). Claim 2 (reduced LP by `transport_simplex`, full by HiGHS):
1.4e-15 / 8.9e-16 relative, lifted plan marginal error 4.6e-16 / 2.4e-16, same cost. Claim 3
(FULL: $n = m = 4096$, $p = q = 8$, $|G| = 1024$): full ott-jax `Sinkhorn` 1.51 s, reduced
pipeline 0.68 s, detection alone 0.56 s (medians), so the time ratio including detection is 0.41
(speedup 2.4; it **fails** the spec's 0.2 in all four FULL runs made: 0.38-0.58); detection by
hash refinement without the exact sort-based equitability check gives a speedup of 4.7 (ratio
0.21); excluding detection the speedup is 1961 ($\ge |G|/2 = 512$). No detection from $C$ can
reach $|G|/2$ on this problem: it must read all $nm$ costs at least once while the full Sinkhorn
reads them twice per iteration, so time(full) / (one pass over $C$ + the reduced solve) bounds the
end-to-end speedup of any detecting pipeline; measured (`read_bound`, a later FULL run with other
jobs on the cores: full 0.84 s, pass over $C$ 3.0 ms, speedups 2.0 incl. / 781 excl. detection) it
is 230 ($< 512$); the bench (quiet CPU) gives 323. QUICK ($n = 1024$): ratio 0.49 including
detection. Both reach the threshold on the full problem (largest L1 marginal error, float64
evaluation: 7.1e-7 reduced vs 8.4e-7 full). Claim 4: rounding never reduces the noisy problem
(trivial partition for every `tol` up to 0.1: the value is exact but nothing is gained, a
**non-reproduction** of the reduction); single-linkage clustering finds the $8\times8$ orbit
partition for `tol` $\ge 3\cdot10^{-3}$ with relative LP error 1.7e-3 (QUICK) / 4.3e-3 (FULL)
$\le$ 1%. Claim 5: 2 classes per side, values equal (0.42308).
"""

from __future__ import annotations

import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
from ott.geometry import geometry
from ott.problems.linear import linear_problem
from ott.solvers.linear import sinkhorn

from experiments import runner
from jaxopt_icml import theory
from jaxopt_icml.transport import orbits
from jaxopt_icml.transport import symmetric as sym

SLUG, TITLE = runner.paper(__name__)
REFERENCE = ("*Optimal Transport with Symmetry Groups*, ICML 2026 (poster 65591; no arXiv id "
             "found). Predecessor: S. Takeda, Y. Akagi, N. Marumo, K. Niwa, *Optimal Transport "
             "with Cyclic Symmetry*, AAAI 2024.")
UPDATE = (r"Reduce: $\tilde C_{st} = -\varepsilon\ln\sum_{j\in S_t}e^{-C_{i_s j}/\varepsilon}$, "
          r"$\tilde a_s = \sum_{i\in R_s}a_i$, $\tilde b_t = \sum_{j\in S_t}b_j$; solve with "
          r"ott-jax `Sinkhorn` on $p\times q$; lift $f_i = \tilde f_s - \varepsilon\ln r_s$, "
          r"$g_j = \tilde g_t$.")


@dataclasses.dataclass(frozen=True)
class Config:
    seeds: int = 8
    rotations: int = 64
    src_radii: int = 8
    tgt_radii: int = 4
    eps_scale: float = 0.05
    threshold: float = 1e-9
    lp_rotations: int = 16
    lp_radii: int = 8
    speed_rotations: int = 512
    speed_radii: int = 8
    speed_threshold: float = 1e-6
    speed_repeats: int = 5
    noise: float = 1e-3
    noise_tols: tuple = (1e-9, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


FULL = Config()
# QUICK (CI, <= 20 s): 4 seeds for claim 1, the speed claim at L = 128 (n = m = 1024) with 2
# interleaved rounds, and 4 tolerances on the noise curve.
QUICK = Config(seeds=4, speed_rotations=128, speed_repeats=2, noise_tols=(1e-9, 1e-3, 1e-2, 1e-1))


# --------------------------------------------------------------------------- problems


def rings(rotations: int, radii, offset: float) -> np.ndarray:
    """Points ``radius * (cos, sin)(2 pi (l + offset) / L)``, ring by ring, ``(L R, 2)``."""
    th = 2 * np.pi * (np.arange(rotations) + offset) / rotations
    unit = np.stack([np.cos(th), np.sin(th)], 1)
    return np.concatenate([r * unit for r in np.asarray(radii)])


def ring_problem(rng, rotations: int, src_radii: int, tgt_radii: int):
    """``(C, a, b)`` in float64 NumPy: squared Euclidean cost between two ring sets."""
    x = rings(rotations, rng.uniform(0.5, 1.5, src_radii), 0.0)
    y = rings(rotations, rng.uniform(0.5, 1.5, tgt_radii), 0.5)
    C = np.sum((x[:, None, :] - y[None, :, :]) ** 2, -1)
    a = np.repeat(rng.uniform(1.0, 2.0, src_radii), rotations)
    b = np.repeat(rng.uniform(1.0, 2.0, tgt_radii), rotations)
    return C, a / a.sum(), b / b.sum()


def benzene():
    """12 atoms: carbons 0..5 on a cycle, hydrogen 6 + k bonded to carbon k; shortest-path
    distances (Floyd-Warshall) as the cost; uniform source, mass-weighted target."""
    n = 12
    D = np.full((n, n), np.inf)
    np.fill_diagonal(D, 0.0)
    for k in range(6):
        for u, v in ((k, (k + 1) % 6), (k, 6 + k)):
            D[u, v] = D[v, u] = 1.0
    for k in range(n):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    b = np.array([12.0] * 6 + [1.0] * 6)
    return D, np.full(n, 1.0 / n), b / b.sum()


def make_problem(cfg: Config, key) -> dict:
    """Per-seed ring problems for claim 1, the LP problem (claims 2, 4), its noisy copy, the
    speed problem (claim 3) and the molecule (claim 5); NumPy float64."""
    rng = np.random.default_rng(runner.seed_of(key))
    ent = [ring_problem(rng, cfg.rotations, cfg.src_radii, cfg.tgt_radii)
           for _ in range(cfg.seeds)]
    lp = ring_problem(rng, cfg.lp_rotations, cfg.lp_radii, cfg.lp_radii)
    noisy = (lp[0] + cfg.noise * rng.standard_normal(lp[0].shape), lp[1], lp[2])
    speed = ring_problem(rng, cfg.speed_rotations, cfg.speed_radii, cfg.speed_radii)
    return {"entropic": ent, "lp": lp, "noisy": noisy, "speed": speed, "benzene": benzene()}


def describe_problem(problem: dict) -> dict:
    """Sizes of the claims' problems (for the notebook)."""
    ent = problem["entropic"]
    return {"entropic (claim 1)": f"{len(ent)} seeds of {ent[0][0].shape[0]} x "
                                  f"{ent[0][0].shape[1]}",
            "LP (claims 2, 4)": "x".join(map(str, problem["lp"][0].shape)),
            "speed (claim 3)": "x".join(map(str, problem["speed"][0].shape)),
            "benzene (claim 5)": "x".join(map(str, problem["benzene"][0].shape))}


def make_methods(cfg: Config) -> dict:
    """The paper's pipeline and the ott-jax baseline, as ``fn(C, a, b, eps, threshold)``."""
    del cfg
    return {"symmetry-reduced (ours)": reduced_pipeline, "ott-jax Sinkhorn (full)": full_sinkhorn}


# --------------------------------------------------------------------------- solvers


@functools.partial(jax.jit, static_argnames=("max_iterations",))
def _full(C, a, b, eps, threshold, max_iterations=5000):
    geom = geometry.Geometry(cost_matrix=C, epsilon=eps)
    with jax.numpy_rank_promotion("allow"):  # ott-jax relies on implicit rank promotion
        out = sinkhorn.Sinkhorn(threshold=threshold, max_iterations=max_iterations)(
            linear_problem.LinearProblem(geom, a, b))
    return out.f, out.g, out.reg_ot_cost, out.n_iters


def full_sinkhorn(C, a, b, eps, threshold):
    """ott-jax's log-domain ``Sinkhorn`` on the full ``n x m`` problem (the baseline)."""
    return _full(C, a, b, eps, threshold)


@functools.partial(jax.jit, static_argnames=("max_iterations",))
def _reduced(C, a, b, part, eps, threshold, max_iterations=5000):
    red = sym.reduce_entropic(C, a, b, part, eps)
    out = sym.solve_reduced(red, threshold=threshold, max_iterations=max_iterations)
    f, g = sym.lift_potentials(out.f, out.g, red, part)
    return f, g, sym.lifted_reg_ot_cost(out.reg_ot_cost, red), out.n_iters, red, out.f, out.g


def reduced_pipeline(C, a, b, eps, threshold, *, tol=1e-9, partition=None):
    """Orbit detection (jitted, unless ``partition`` is given), reduction, ott-jax ``Sinkhorn`` on
    ``p x q``, lift of the potentials and the value (same outputs as :func:`full_sinkhorn`)."""
    part = orbits.orbit_partition(C, a, b, tol=tol) if partition is None else partition
    return _reduced(C, a, b, part, eps, threshold)[:4]


def full_marginal_errors(C, a, b, f, g, eps):
    """``(||P 1 - a||_1, ||P^T 1 - b||_1)`` of ``P = exp((f + g - C)/eps)`` on the full cost,
    evaluated in float64 (so float32 potentials are judged without float32 evaluation noise,
    ``ulp(f) / eps`` per entry, which is the size of a 1e-6 threshold)."""
    with jax.enable_x64(True), jax.numpy_rank_promotion("allow"):
        C, a, b, f, g = (jnp.asarray(np.asarray(x), jnp.float64) for x in (C, a, b, f, g))
        geom = geometry.Geometry(cost_matrix=C, epsilon=jnp.asarray(float(eps), jnp.float64))
        return (float(jnp.sum(jnp.abs(geom.marginal_from_potentials(f, g, axis=1) - a))),
                float(jnp.sum(jnp.abs(geom.marginal_from_potentials(f, g, axis=0) - b))))


def lp_value(C, a, b):
    """Exact LP value and plan by ``scipy.optimize.linprog(method="highs")``: the independent
    reference (the spec's full-LP baseline), never used by the method itself."""
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix, eye, kron, vstack

    n, m = C.shape
    ones = lambda k: csr_matrix(np.ones((1, k)))
    A = vstack([kron(eye(n), ones(m)), kron(ones(n), eye(m))]).tocsr()
    res = linprog(np.ravel(C), A_eq=A, b_eq=np.concatenate([a, b]), bounds=(0, None),
                  method="highs")
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    return float(res.fun), res.x.reshape(n, m)


_simplex = jax.jit(sym.transport_simplex)


def reduced_lp(red):
    """The reduced LP solved exactly in JAX (:func:`transport_simplex`, float64)."""
    out = _simplex(red.cost, red.a, red.b)
    if not bool(out.converged):
        raise RuntimeError("transport_simplex did not converge")
    return float(out.value), np.asarray(out.plan)


# --------------------------------------------------------------------------- the claims' runs


@jax.jit
def _entropic_check(C, a, b, part, eps, thr, f_full, g_full, v_full):
    """Reduced pipeline on one seed and its errors against the full solve (one program)."""
    f, g, value, iters, red, ft, gt = _reduced(C, a, b, part, eps, thr)
    with jax.numpy_rank_promotion("allow"):
        geom = geometry.Geometry(cost_matrix=C, epsilon=eps)
        P_full = geom.transport_from_potentials(f_full, g_full)
        P_lift = sym.lift_entropic_plan(ft, gt, red, part, C)
        row = jnp.sum(jnp.abs(P_lift.sum(1) - a))
        col = jnp.sum(jnp.abs(P_lift.sum(0) - b))
    return (jnp.abs(value - v_full) / jnp.abs(v_full), jnp.max(jnp.abs(P_full - P_lift)), row,
            col, iters)


def _entropic_runs(cfg, problems) -> dict:
    with jax.enable_x64(True):
        Cs = jnp.asarray(np.stack([p[0] for p in problems]))
        As = jnp.asarray(np.stack([p[1] for p in problems]))
        Bs = jnp.asarray(np.stack([p[2] for p in problems]))
        eps = cfg.eps_scale * jnp.mean(Cs, axis=(1, 2))
        thr = jnp.asarray(cfg.threshold)
        axes = (0, 0, 0, 0, None)
        f, g, val, iters = runner.seeded_program(jax.vmap(_full, in_axes=axes), axes)(
            Cs, As, Bs, eps, thr)
        out = {k: [] for k in ("p", "q", "value_rel_err", "plan_err", "row_err", "col_err",
                               "iters_full", "iters_reduced")}
        for k, (C, a, b) in enumerate(problems):
            part = orbits.orbit_partition(C, a, b)
            checks = _entropic_check(Cs[k], As[k], Bs[k], part, eps[k], thr, f[k], g[k], val[k])
            out["p"].append(part.num_row_classes)
            out["q"].append(part.num_col_classes)
            for name, v in zip(("value_rel_err", "plan_err", "row_err", "col_err",
                                "iters_reduced"), checks, strict=True):
                out[name].append(float(v) if name != "iters_reduced" else int(v))
            out["iters_full"].append(int(iters[k]))
    return {k: np.asarray(v) for k, v in out.items()}


def _lp_runs(problem) -> dict:
    C, a, b = problem
    part = orbits.orbit_partition(C, a, b)
    with jax.enable_x64(True):
        red = sym.reduce_linear(C, a, b, part)
        v_red, Q = reduced_lp(red)
        P = np.asarray(sym.lift_linear_plan(Q, C, part, red))
    v_full, _ = lp_value(C, a, b)
    marg = max(np.abs(P.sum(1) - a).sum(), np.abs(P.sum(0) - b).sum())
    return {"p": part.num_row_classes, "q": part.num_col_classes, "full": v_full,
            "reduced": v_red, "lift_cost": float(np.sum(P * C)), "lift_marginal_err": marg,
            "lift_min_entry": float(P.min())}


def _noise_runs(cfg, problem) -> dict:
    C, a, b = problem
    v_full, _ = lp_value(C, a, b)
    out = {"full": v_full, "n": C.shape[0], "m": C.shape[1]}
    with jax.enable_x64(True):
        for quantize in ("round", "cluster"):
            rows = []
            for tol in cfg.noise_tols:
                part = orbits.orbit_partition(C, a, b, tol=tol, quantize=quantize)
                red = sym.reduce_linear(C, a, b, part)
                if part.num_row_classes * part.num_col_classes == C.size:
                    # trivial partition: the reduced LP IS the full one (same C, a, b up to
                    # the identity relabelling), whose HiGHS value is already known; the
                    # O((p + q) p q)-per-pivot simplex is meant for small reduced problems
                    assert np.array_equal(np.asarray(red.cost), C)
                    v = v_full
                else:
                    v, _ = reduced_lp(red)
                rows.append((tol, part.num_row_classes, part.num_col_classes,
                             abs(v - v_full) / abs(v_full)))
            out[quantize] = np.asarray(rows)
    return out


def _speed_inputs(problem):
    C, a, b = (jnp.asarray(x, jnp.float32) for x in problem)
    return C, a, b, 0.05 * jnp.mean(C)


def speed_comparison(problem, *, threshold: float, repeats: int, inner: int = 1) -> dict:
    """Interleaved timing (``experiments.tools.bench.interleaved_ratio``) of ott-jax's full
    ``Sinkhorn`` against the reduced pipeline, float32, same threshold. ``ratio_median`` is
    time(full) / time(reduced *including* orbit detection); ``excluding_detection`` holds the
    same dict with a precomputed partition; ``detection_s`` is the median detection time;
    ``read_s`` the median time of one jitted pass over ``C`` (``jnp.sum``) and ``read_bound`` =
    time(full) / (``read_s`` + time(reduced solve)), an estimated ceiling on the speedup of
    any pipeline that detects the orbits from ``C`` (it must read every cost once)."""
    from experiments.tools.bench import interleaved_ratio

    C, a, b, eps = _speed_inputs(problem)
    thr = jnp.asarray(threshold, jnp.float32)
    part = orbits.orbit_partition(C, a, b, tol=1e-5)
    full = lambda: full_sinkhorn(C, a, b, eps, thr)
    ours = lambda: reduced_pipeline(C, a, b, eps, thr, tol=1e-5)
    ours_pre = lambda: reduced_pipeline(C, a, b, eps, thr, partition=part)
    ours_hash = lambda: reduced_pipeline(C, a, b, eps, thr, partition=orbits.orbit_partition(
        C, a, b, tol=1e-5, verify=False))
    incl = interleaved_ratio(full, ours, repeats=repeats, inner=inner)
    excl = interleaved_ratio(full, ours_pre, repeats=repeats, inner=inner)
    unverified = interleaved_ratio(full, ours_hash, repeats=repeats, inner=inner)
    det, read = [], []
    read_once = jax.jit(jnp.sum)
    jax.block_until_ready(read_once(C))
    for _ in range(repeats):
        t0 = time.perf_counter()
        orbits.orbit_partition(C, a, b, tol=1e-5)
        det.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        jax.block_until_ready(read_once(C))
        read.append(time.perf_counter() - t0)
    # Any detection reads all n m costs at least once, the full Sinkhorn reads them twice per
    # iteration: time(full) / (one pass over C + the reduced solve) estimates a ceiling on the
    # speedup of ANY pipeline that detects the orbits from C (it grows with the iterations).
    read_s = float(np.median(read))
    read_bound = excl["a_median_s"] / (read_s + excl["b_median_s"])
    f0, g0, v0, it0 = full()
    f1, g1, v1, it1 = ours_pre()
    incl.update(
        excluding_detection=excl, without_exact_check=unverified, detection_s=float(np.median(det)),
        read_s=read_s, read_bound=read_bound,
        ratio="time(full ott-jax Sinkhorn) / time(reduced incl. orbit detection)",
        n=int(C.shape[0]), m=int(C.shape[1]), p=part.num_row_classes, q=part.num_col_classes,
        group_order=int(C.shape[0] // part.num_row_classes) * 2,
        full_marginal_err=full_marginal_errors(C, a, b, f0, g0, eps),
        reduced_marginal_err=full_marginal_errors(C, a, b, f1, g1, eps),
        full_iters=int(it0), reduced_iters=int(it1), value_full=float(v0),
        value_reduced=float(v1), threshold=threshold)
    return incl


def benchmark(rotations: int = 512, radii: int = 8, *, repeats: int = 7, inner: int = 1,
              threshold: float = 1e-6, include_detection: bool = True, seed: int = 0) -> dict:
    """ott-jax's full ``Sinkhorn`` vs the symmetry-reduced pipeline on ``rotations x radii``
    ring sets (``n = m = rotations * radii``, float32, same threshold), interleaved.

    Args:
      rotations, radii: problem size (``|G| = 2 rotations``, the dihedral group acting).
      repeats, inner: interleaved rounds and calls per round.
      threshold: Sinkhorn's marginal-error threshold for both.
      include_detection: which ratio is the top-level ``ratio_median``: ``True`` (default)
        time(full) / time(reduced pipeline INCLUDING orbit detection with its exact check);
        ``False``: time(full) / time(reduction + reduced solve + lift, partition precomputed).
      seed: problem seed.

    Returns:
      :func:`experiments.tools.bench.interleaved_ratio`'s dict for the chosen ratio (its ``ratio``
      entry says which), the other one under ``including_detection`` /
      ``excluding_detection``, ``without_exact_check`` (detection by hashing only),
      ``detection_s``, ``n``, ``m``, ``p``, ``q``, ``group_order``, the full-problem marginal
      errors each method reaches (float64 evaluation), iterations and values. Quick size for
      CI smoke tests: ``rotations=32, radii=4, repeats=2``.
    """
    rng = np.random.default_rng(seed)
    problem = ring_problem(rng, rotations, radii, radii)
    out = speed_comparison(problem, threshold=threshold, repeats=repeats, inner=inner)
    if include_detection:
        return out
    excl = out.pop("excluding_detection")
    context = {k: v for k, v in out.items() if k not in excl}
    incl = {k: out[k] for k in excl if k in out}
    excl.update(context, including_detection=incl,
                ratio="time(full ott-jax Sinkhorn) / time(reduce + reduced solve + lift, "
                      "partition precomputed)")
    return excl


def run(cfg: Config, key, *, shard: bool = False, progress: bool = False, out_dir=None,
        resume: bool = False) -> dict:
    """All claims' runs (partitions detected on the device, jitted ott-jax solves). Returns
    plain dicts of NumPy values: ``entropic`` (per seed), ``lp``, ``noise``, ``speed``,
    ``benzene``."""
    del shard, out_dir, resume
    probs = make_problem(cfg, key)
    steps = ["entropic", "lp", "noise", "benzene", "speed"]
    out = {"config": dataclasses.asdict(cfg)}
    for name in runner.progress(steps, enabled=progress, desc=SLUG):
        if name == "entropic":
            out[name] = _entropic_runs(cfg, probs["entropic"])
        elif name == "lp":
            out[name] = _lp_runs(probs["lp"])
        elif name == "noise":
            out[name] = _noise_runs(cfg, probs["noisy"])
        elif name == "benzene":
            out[name] = _lp_runs(probs["benzene"])
        else:
            out[name] = speed_comparison(probs["speed"], threshold=cfg.speed_threshold,
                                         repeats=cfg.speed_repeats)
    return out


# --------------------------------------------------------------------------- metrics


def _curve_at(results, tol, quantize="round"):
    curve = results["noise"][quantize]
    return curve[np.argmin(np.abs(np.log(curve[:, 0] / tol)))]


def partition_mismatch(r):
    e = r["entropic"]
    c = r["config"]
    return float(np.max(np.abs(e["p"] - c["src_radii"]) + np.abs(e["q"] - c["tgt_radii"])))


def noise_reduction(r, tol, quantize="round"):
    """(p q) / (n m) at ``tol`` on the noisy problem (1 = trivial partition)."""
    row = _curve_at(r, tol, quantize)
    return float(row[1] * row[2] / (r["noise"]["n"] * r["noise"]["m"]))


CLAIMS = (
    theory.Claim("entropic_partition_mismatch", partition_mismatch, "<=", 0.0,
                 "spec claim 1: refinement finds p = 8 row and q = 4 column classes"),
    theory.Claim("entropic_value_rel_err", lambda r: float(np.max(r["entropic"]["value_rel_err"])),
                 "<=", 1e-6, "spec claim 1: |full reg_ot_cost - lifted| / |full|, max over seeds"),
    theory.Claim("entropic_plan_max_err", lambda r: float(np.max(r["entropic"]["plan_err"])),
                 "<=", 1e-7, "spec claim 1: max |P_full - lift(Q)|, max over seeds"),
    theory.Claim("entropic_marginal_err", lambda r: float(max(
        np.max(r["entropic"]["row_err"]), np.max(r["entropic"]["col_err"]))), "<=", 1e-6,
        "spec claim 1: L1 marginal errors of the lifted plan on the full problem"),
    theory.Claim("lp_value_rel_err", lambda r: abs(r["lp"]["reduced"] - r["lp"]["full"]) /
                 abs(r["lp"]["full"]), "<=", 1e-8,
                 "spec claim 2: HiGHS full 128x128 vs reduced 8x8 value (transport_simplex)"),
    theory.Claim("lp_lift_marginal_err", lambda r: r["lp"]["lift_marginal_err"], "<=", 1e-9,
                 "spec claim 2: lifted plan feasibility"),
    theory.Claim("lp_lift_cost_rel_err", lambda r: abs(r["lp"]["lift_cost"] - r["lp"]["full"]) /
                 abs(r["lp"]["full"]), "<=", 1e-8, "spec claim 2: lifted plan's cost"),
    theory.Claim("speed_time_ratio_incl_detection",
                 lambda r: 1.0 / r["speed"]["ratio_median"], "<=", 0.2,
                 "spec claim 3: time(reduced incl. detection) / time(full ott-jax Sinkhorn), "
                 "median of interleaved rounds (QUICK: n = 1024, FULL: n = 4096)"),
    theory.Claim("speed_reduced_accuracy", lambda r: max(r["speed"]["reduced_marginal_err"]) /
                 r["speed"]["threshold"], "<=", 1.0,
                 "spec claim 3 ('same threshold'): the lifted reduced solution's largest L1 "
                 "marginal error on the FULL problem (evaluated in float64) / the threshold"),
    theory.Claim("noise_exact_no_reduction", lambda r: noise_reduction(r, 1e-9), ">=", 1.0,
                 "spec claim 4: noisy C, tol = 1e-9 -> trivial partition (pq / nm = 1)"),
    # (review) The two value claims of spec claim 4 for quantize='round' were dropped: with a
    # trivial partition the reduced LP *is* the full LP (the code reuses its value), so they
    # could not fail; the value errors stay in the reported curve.
    theory.Claim("noise_round_tol_1e-2_reduction", lambda r: noise_reduction(r, 1e-2), "<=",
                 0.01, "added to spec claim 4: rounding at tol = 1e-2 actually reduces "
                 "(pq / nm <= 0.01; the true orbits give 64 / 16384)"),
    theory.Claim("noise_cluster_tol_1e-2_value_rel_err",
                 lambda r: float(_curve_at(r, 1e-2, "cluster")[3]), "<=", 0.01,
                 "spec claim 4 with single-linkage quantisation (quantize='cluster')"),
    theory.Claim("noise_cluster_tol_1e-2_reduction",
                 lambda r: noise_reduction(r, 1e-2, "cluster"), "<=", 0.01,
                 "spec claim 4 with quantize='cluster': pq / nm <= 0.01"),
    theory.Claim("benzene_classes", lambda r: float(abs(r["benzene"]["p"] - 2) +
                                                      abs(r["benzene"]["q"] - 2)), "<=", 0.0,
                 "spec claim 5: 2 classes (C, H) on each side"),
    theory.Claim("benzene_value_rel_err", lambda r: abs(r["benzene"]["reduced"] -
                                                        r["benzene"]["full"]) /
                 abs(r["benzene"]["full"]), "<=", 1e-9,
                 "spec claim 5: reduced LP value = full (mass-weighted target)"),
)

# Documented non-reproductions (numbers in the module docstring):
# * speed_time_ratio_incl_detection: with the exact (sort-based) equitability check, orbit
#   detection costs 40-60% of ott-jax's full Sinkhorn at n = 4096 (which converges in 50
#   iterations at eps = 0.05 mean(C)), so the pipeline's time ratio is 0.4-0.6, not <= 0.2.
#   Hash refinement alone reaches ~0.2 and the reduced solve alone is > 500x faster.
# * noise_round_tol_1e-2_reduction: with 1e-3 noise, rounding costs to a 1e-2 grid splits the
#   noisy clusters at grid points, refinement returns the trivial partition (no reduction).
#   quantize="cluster" (single linkage) recovers the 8 x 8 orbits within 1% (claims pass).
KNOWN_FAILING = ("noise_round_tol_1e-2_reduction", "speed_time_ratio_incl_detection")


def summarize(results) -> dict:
    e, s = results["entropic"], results["speed"]
    out = {
        "claim 1 p, q (per seed)": [e["p"].tolist(), e["q"].tolist()],
        "claim 1 Sinkhorn iterations full / reduced": [e["iters_full"].tolist(),
                                                        e["iters_reduced"].tolist()],
        "claim 2 LP values full / reduced": [results["lp"]["full"], results["lp"]["reduced"]],
        "claim 3 n, p, q, |G|": [s["n"], s["p"], s["q"], s["group_order"]],
        "claim 3 speedup incl. detection (median)": s["ratio_median"],
        "claim 3 speedup excl. detection (median)": s["excluding_detection"]["ratio_median"],
        "claim 3 speedup incl. detection without the exact check (median)":
            s["without_exact_check"]["ratio_median"],
        "claim 3 full Sinkhorn s / reduced incl. detection s / detection s": [
            s["a_median_s"], s["b_median_s"], s["detection_s"]],
        "claim 3 one pass over C s / read bound on any detecting pipeline's speedup": [
            s.get("read_s"), s.get("read_bound")],
        "claim 3 full-problem marginal errors (row, col) full / reduced": [
            list(s["full_marginal_err"]), list(s["reduced_marginal_err"])],
        "claim 4 curve, rounding (tol, p, q, rel err)": results["noise"]["round"].tolist(),
        "claim 4 curve, clustering (tol, p, q, rel err)": results["noise"]["cluster"].tolist(),
        "claim 5 benzene values full / reduced": [results["benzene"]["full"],
                                                  results["benzene"]["reduced"]],
    }
    out.update(runner.claim_values(CLAIMS, results))
    return out


def plot(results, cfg: Config) -> dict:
    import matplotlib.pyplot as plt

    figs = {}
    n, m = results["noise"]["n"], results["noise"]["m"]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for quantize in ("round", "cluster"):
        curve = results["noise"][quantize]
        ax[0].loglog(curve[:, 0], np.maximum(curve[:, 3], 1e-17), "o-", label=quantize)
        ax[1].loglog(curve[:, 0], curve[:, 1] * curve[:, 2] / (n * m), "s-", label=quantize)
    ax[0].axhline(0.01, color="k", ls=":", lw=0.8, label="claim threshold 0.01")
    ax[1].axhline(0.01, color="k", ls=":", lw=0.8, label="claim threshold 0.01")
    runner.finish_axes(ax[0], xlabel="quantisation tol",
                       ylabel="|reduced - full| / full (LP; 1e-17 = exact)",
                       title="relative error of the OT value", legend=True)
    runner.finish_axes(ax[1], xlabel="quantisation tol", ylabel="pq / nm (reduced / full size)",
                       title="size reduction", legend=True)
    fig.suptitle(f"approximate symmetry: noise {cfg.noise:g} on C")
    fig.tight_layout()
    figs["noise_curve"] = fig
    s = results["speed"]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    labels = ["full ott-jax", "reduced incl. detection", "detection only",
              "reduced excl. detection"]
    vals = [s["a_median_s"], s["b_median_s"], s["detection_s"],
            s["excluding_detection"]["b_median_s"]]
    ax.bar(labels, vals)
    runner.finish_axes(ax, yscale="log", ylabel="median wall clock (s)",
                       title=f"n = m = {s['n']}, p = {s['p']}, q = {s['q']}", legend=None)
    ax.tick_params(axis="x", labelsize=7)
    figs["speed"] = fig
    return figs
