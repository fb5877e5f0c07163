"""Seed-vmapped statistics for theory checks, and claims as data.

A paper's claim is a :class:`Claim`: a name, a ``metric(results) -> float``, a comparison and a
threshold. The experiment, its test and its notebook all run the same ``Claim`` objects through
:func:`check`, which returns :class:`ClaimResult`s with the measured values; a failing claim is
reported as failing, never hidden.

Statistics:
  * :func:`power_law_slopes` / :func:`fit_power_law`: least-squares slope of ``log v`` against
    ``log k`` per seed, and on the seed mean with a bootstrap confidence interval over seeds.
  * :func:`win_rate` with a Wilson score interval, :func:`binomial_test` (exact, one-sided).
  * :func:`clt_ztest`: a z-test of a mean from the central limit theorem.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

__all__ = [
    "Claim",
    "ClaimResult",
    "PowerLawFit",
    "WinRate",
    "ZTest",
    "binomial_test",
    "check",
    "clt_ztest",
    "fit_power_law",
    "format_claims",
    "geometric_grid",
    "normal_cdf",
    "power_law_slopes",
    "wilson_interval",
    "win_rate",
]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


class Claim(NamedTuple):
    """A checkable statement about experiment results.

    Attributes:
      name: short identifier, e.g. ``"goma_slope_bilinear"``.
      metric: ``metric(results) -> float``; ``results`` is what the experiment's ``run`` returns.
      op: one of ``"<="``, ``"<"``, ``">="``, ``">"``; the claim holds when
        ``metric(results) op threshold``.
      threshold: the bound.
      source: where the statement and threshold come from (paper section, spec, recalibration
        note).
    """

    name: str
    metric: Callable[[Any], float]
    op: str
    threshold: float
    source: str = ""


class ClaimResult(NamedTuple):
    """The outcome of one :class:`Claim` on one set of results."""

    name: str
    value: float
    op: str
    threshold: float
    passed: bool
    source: str

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "value": self.value,
            "op": self.op,
            "threshold": self.threshold,
            "passed": self.passed,
            "source": self.source,
        }


def check(claims: Sequence[Claim], results: Any) -> list[ClaimResult]:
    """Evaluates every claim on ``results``. A NaN metric fails its claim."""
    out = []
    for claim in claims:
        if claim.op not in _OPS:
            raise ValueError(
                f"Claim {claim.name!r}: op must be one of {sorted(_OPS)}, got {claim.op!r}")
        value = float(claim.metric(results))
        passed = bool(np.isfinite(value) and _OPS[claim.op](value, claim.threshold))
        out.append(ClaimResult(claim.name, value, claim.op, float(claim.threshold), passed,
                               claim.source))
    return out


def format_claims(results: Sequence[ClaimResult]) -> str:
    """A fixed-width table: claim, measured value, comparison, threshold, PASS/FAIL."""
    rows = [("claim", "measured", "op", "threshold", "result")]
    for r in results:
        rows.append((r.name, f"{r.value:.4g}", r.op, f"{r.threshold:.4g}",
                     "PASS" if r.passed else "FAIL"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --------------------------------------------------------------------------- power laws


class PowerLawFit(NamedTuple):
    """``values ~ exp(intercept) * k**slope``; ``ci`` is a bootstrap interval over seeds."""

    slope: float
    intercept: float
    ci_low: float
    ci_high: float


def geometric_grid(start: int, stop: int, num: int) -> np.ndarray:
    """Unique integers ``start <= k <= stop`` spaced geometrically (for log-log fits)."""
    if not 1 <= start < stop:
        raise ValueError(f"need 1 <= start < stop, got start={start}, stop={stop}")
    return np.unique(np.geomspace(start, stop, num).round().astype(np.int64))


def power_law_slopes(ks, values) -> np.ndarray:
    """Per-seed least-squares slopes of ``log values`` against ``log ks`` (in NumPy float64).

    Computed on the host in float64 whatever JAX's precision mode, so that diverging runs
    (values near the float32 overflow) give huge slopes rather than NaN.

    Args:
      ks: positive iteration indices, shape ``(n,)``.
      values: positive values, shape ``(seeds, n)`` (or ``(n,)`` for one seed).

    Returns:
      Slopes, shape ``(seeds,)`` (or a 0-d array).
    """
    log_k = np.log(np.asarray(ks, np.float64))
    log_v = np.log(np.asarray(values, np.float64))
    xc = log_k - log_k.mean()
    centred = log_v - log_v.mean(axis=-1, keepdims=True)
    return np.asarray(centred @ xc / (xc @ xc))


def fit_power_law(ks, values, *, key: jax.Array | None = None, num_bootstrap: int = 1000,
                  confidence: float = 0.95) -> PowerLawFit:
    """Slope of ``log(mean over seeds of values)`` against ``log ks``, with a bootstrap CI.

    The bootstrap resamples seeds with replacement, recomputes the seed mean and refits; the
    interval is the ``(1 - confidence)/2`` and ``(1 + confidence)/2`` quantiles.

    Args:
      ks: positive indices, shape ``(n,)``.
      values: shape ``(seeds, n)``; a 1-D array is one seed (then the CI is the point).
      key: PRNG key for the bootstrap (default ``PRNGKey(0)``).
      num_bootstrap: bootstrap replicates (>= 1).
      confidence: in (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if num_bootstrap < 1:
        raise ValueError(f"num_bootstrap must be >= 1, got {num_bootstrap}")
    values = np.asarray(values, np.float64)
    if values.ndim == 1:
        values = values[None]
    log_k = np.log(np.asarray(ks, np.float64))
    slope, intercept = _np_fit(log_k, np.log(values.mean(0)))
    seeds = values.shape[0]
    if seeds == 1:
        return PowerLawFit(slope, intercept, slope, slope)
    key = jax.random.PRNGKey(0) if key is None else key
    idx = np.asarray(jax.random.randint(key, (num_bootstrap, seeds), 0, seeds))
    boot_means = values[idx].mean(1)  # (num_bootstrap, n)
    xc = log_k - log_k.mean()
    ly = np.log(boot_means)
    boot = (ly - ly.mean(1, keepdims=True)) @ xc / (xc @ xc)
    lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
    return PowerLawFit(float(slope), float(intercept), float(lo), float(hi))


def _np_fit(log_k: np.ndarray, log_v: np.ndarray) -> tuple[float, float]:
    xc = log_k - log_k.mean()
    slope = float(xc @ (log_v - log_v.mean()) / (xc @ xc))
    return slope, float(log_v.mean() - slope * log_k.mean())


# --------------------------------------------------------------------------- win rates


class WinRate(NamedTuple):
    """Fraction of wins with a Wilson score interval."""

    rate: float
    low: float
    high: float
    wins: int
    trials: int


def normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _normal_quantile(p: float) -> float:
    # Bisection on the CDF: exact enough for confidence levels, no SciPy needed.
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if normal_cdf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in [0, trials], got {successes}")
    z = _normal_quantile(0.5 + confidence / 2)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def win_rate(a, b, *, lower_is_better: bool = True, confidence: float = 0.95) -> WinRate:
    """How often ``a`` beats ``b`` seed by seed (ties count as losses)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
    wins = int(np.sum(a < b) if lower_is_better else np.sum(a > b))
    n = int(a.size)
    lo, hi = wilson_interval(wins, n, confidence)
    return WinRate(wins / n, lo, hi, wins, n)


def binomial_test(successes: int, trials: int, p0: float = 0.5) -> float:
    """Exact one-sided p-value ``P[Binomial(trials, p0) >= successes]``."""
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"p0 must be in (0, 1), got {p0}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in [0, trials], got {successes}")
    return float(sum(math.comb(trials, i) * p0**i * (1 - p0) ** (trials - i)
                     for i in range(successes, trials + 1)))


# --------------------------------------------------------------------------- z-tests


class ZTest(NamedTuple):
    """``z = (mean - mean0) / (std / sqrt(n))`` with two- and one-sided p-values."""

    z: float
    p_two_sided: float
    p_greater: float
    mean: float
    stderr: float


def clt_ztest(samples, mean0: float = 0.0) -> ZTest:
    """CLT z-test of ``E[samples] == mean0`` (sample std, ``n >= 2``)."""
    x = np.asarray(samples, np.float64).ravel()
    if x.size < 2:
        raise ValueError(f"need at least 2 samples, got {x.size}")
    mean = float(x.mean())
    stderr = float(x.std(ddof=1) / math.sqrt(x.size))
    if stderr > 0:
        z = (mean - mean0) / stderr
    else:
        z = 0.0 if mean == mean0 else math.copysign(math.inf, mean - mean0)
    return ZTest(z, 2 * (1 - normal_cdf(abs(z))), 1 - normal_cdf(z), mean, stderr)
