r"""Gradient compressors for communication-efficient distributed methods.

A compressor maps a vector $v \in \mathbb R^d$ (and a PRNG key) to a message $C(v)$ and the
number of bits that message takes on the wire. Two classes matter for the theory:

* **contractive** (biased allowed): $\mathbb E\|C(v) - v\|^2 \le (1 - \alpha)\|v\|^2$ with
  $\alpha \in (0, 1]$ (``compressor.alpha(d)``; the EF/EF21 paper writes $\delta$);
* **unbiased**: $\mathbb E\,C(v) = v$ and $\mathbb E\|C(v) - v\|^2 \le \omega\|v\|^2$
  (``compressor.omega(d)``). :func:`as_contractive` turns one into a contractive compressor
  $C/(1 + \omega)$ with $\alpha = 1/(1 + \omega)$.

Every compressor is a :class:`Compressor` whose ``compress(v, key) -> (v_hat, bits)`` works on a
1-D array (the algorithms flatten a worker's pytree first), keeps ``v``'s dtype and returns
``bits`` as a float32 scalar. Values travel as float32 (32 bits each) whatever the compute
dtype, and coordinate indices take $\lceil\log_2 d\rceil$ bits each, so top-$k$ costs
$k(32 + \lceil\log_2 d\rceil)$ bits.

Constants (all tested in ``tests/distributed/test_compressors.py``, exactly for top-$k$ and the
rotation compressor, by Monte Carlo for the random ones):

==================  ==========  ===============================  =====================
compressor          unbiased    $\alpha$ (contractive)           $\omega$ (unbiased)
==================  ==========  ===============================  =====================
``identity``        yes         1                                0
``top_k(k)``        no          $k/d$ (deterministic)            --
``rand_k(k)``       no          $k/d$ (in expectation)           --
``rand_k(k, scaled=True)`` yes  --                               $d/k - 1$
``random_dithering(s)`` yes     --                               $\min(d/s^2, \sqrt d/s)$
``natural()``       yes         --                               $1/8$
``scaled_sign()``   no          $1/d$ (deterministic)            --
``rotation(delta, theta)`` no   $\delta$ (with equality)         --
==================  ==========  ===============================  =====================

References:
  Stich, Cordonnier, Jaggi, *Sparsified SGD with memory*, NeurIPS 2018 (top-k, rand-k).
  Alistarh et al., *QSGD*, NeurIPS 2017 (random dithering).
  Horvath et al., *Natural compression for distributed deep learning*, 2019.
  Karimireddy et al., *Error feedback fixes SignSGD*, ICML 2019 (scaled sign).
  Berg Thomsen, Taylor, Dieuleveut, *A Tight Theory of Error Feedback Algorithms in Distributed
  Optimization*, ICML 2026, arXiv:2605.31594 (the rotation compressor attains the bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxopt_icml.hyperparams import check_float, check_static_int

__all__ = [
    "top_k",
    "rand_k",
    "random_dithering",
    "natural",
    "scaled_sign",
    "Compressor",
    "identity",
    "rotation",
    "as_contractive",
]

VALUE_BITS = 32  # every transmitted value is a float32


class Compressor(NamedTuple):
    r"""A compressor and its constants.

    Attributes:
      name: short description, e.g. ``"top_5"``.
      compress: ``compress(v, key) -> (v_hat, bits)`` on a 1-D array ``v``; ``v_hat`` has
        ``v``'s shape and dtype, ``bits`` is a float32 scalar (the message size).
      alpha: ``alpha(d) -> float`` contraction parameter in ``(0, 1]``
        (:math:`E\|C(v)-v\|^2 \le (1-\alpha)\|v\|^2`), or ``None`` when not contractive.
      omega: ``omega(d) -> float`` variance parameter of an unbiased compressor, or ``None``.
      deterministic: whether ``compress`` ignores its key (then the contraction holds for every
        draw, not only in expectation).
    """

    name: str
    compress: Callable
    alpha: Callable | None = None
    omega: Callable | None = None
    deterministic: bool = False

    @property
    def unbiased(self) -> bool:
        return self.omega is not None


def index_bits(d: int) -> int:
    """Bits to encode one coordinate index of a ``d``-vector: ``ceil(log2 d)`` (0 for d = 1)."""
    return int(math.ceil(math.log2(d))) if d > 1 else 0


def _check_vector(v):
    if jnp.ndim(v) != 1:
        raise ValueError(f"compressors act on 1-D arrays, got shape {jnp.shape(v)}")


def _bits(value) -> jax.Array:
    return jnp.asarray(value, jnp.float32)


def identity() -> Compressor:
    """No compression: ``C(v) = v``, ``32 d`` bits (alpha = 1, omega = 0)."""

    def compress(v, key):
        del key
        _check_vector(v)
        return v, _bits(VALUE_BITS * v.shape[0])

    return Compressor("identity", compress, alpha=lambda d: 1.0, omega=lambda d: 0.0,
                      deterministic=True)


def _check_k(k, d):
    if k > d:
        raise ValueError(f"k must be <= the vector size {d}, got k={k}")


def top_k(k: int) -> Compressor:
    r"""Keeps the ``k`` entries of largest magnitude (ties: the lowest index), zeros the rest.

    :math:`\|C(v) - v\|^2` is the sum of the ``d - k`` smallest squares, at most
    :math:`(1 - k/d)\|v\|^2` for every ``v`` (alpha = k/d, deterministic). Message: ``k``
    values and ``k`` indices, ``k (32 + ceil(log2 d))`` bits.

    Args:
      k: entries kept (static int >= 1, at most the vector size).
    """
    k = check_static_int("k", k, low=1)

    def compress(v, key):
        del key
        _check_vector(v)
        d = v.shape[0]
        _check_k(k, d)
        _, idx = jax.lax.top_k(jnp.abs(v), k)
        out = jnp.zeros_like(v).at[idx].set(v[idx])
        return out, _bits(k * (VALUE_BITS + index_bits(d)))

    return Compressor(f"top_{k}", compress, alpha=lambda d: k / d, deterministic=True)


def rand_k(k: int, *, scaled: bool = False) -> Compressor:
    r"""Keeps ``k`` coordinates drawn uniformly without replacement.

    Unscaled (default): biased, :math:`E\|C(v)-v\|^2 = (1 - k/d)\|v\|^2` (alpha = k/d in
    expectation). ``scaled=True`` multiplies the kept entries by ``d/k``: unbiased with
    :math:`E\|C(v)-v\|^2 = (d/k - 1)\|v\|^2` (omega = d/k - 1). The message is counted as ``k``
    values and ``k`` indices (``k (32 + ceil(log2 d))`` bits), although a shared seed would
    make the indices free.

    Args:
      k: entries kept (static int >= 1, at most the vector size).
      scaled: the unbiased ``d/k`` scaling (static bool).
    """
    k = check_static_int("k", k, low=1)
    if not isinstance(scaled, bool):
        raise ValueError(f"scaled must be a bool, got {scaled!r}")

    def compress(v, key):
        _check_vector(v)
        d = v.shape[0]
        _check_k(k, d)
        idx = jax.random.choice(key, d, (k,), replace=False)
        kept = v[idx] * (d / k) if scaled else v[idx]
        out = jnp.zeros_like(v).at[idx].set(kept.astype(v.dtype))
        return out, _bits(k * (VALUE_BITS + index_bits(d)))

    if scaled:
        return Compressor(f"rand_{k}_scaled", compress, omega=lambda d: d / k - 1.0)
    return Compressor(f"rand_{k}", compress, alpha=lambda d: k / d)


def random_dithering(levels: int = 1) -> Compressor:
    r"""QSGD-style random dithering with ``s = levels`` levels (unbiased).

    :math:`C(v)_i = \|v\|\,\mathrm{sign}(v_i)\,\xi_i/s` with :math:`\xi_i = \lfloor s|v_i|/
    \|v\|\rfloor + \mathrm{Bernoulli}(\text{fractional part})`, so :math:`E\,C(v) = v` and
    :math:`E\|C(v)-v\|^2 \le \min(d/s^2, \sqrt d/s)\|v\|^2` (Alistarh et al. 2017, Lemma 3.1).
    Message: the norm (32 bits) and, per coordinate, a sign and a level index
    (``1 + ceil(log2(s + 1))`` bits; fixed-length, no Elias coding).

    Args:
      levels: number of quantisation levels ``s`` (static int >= 1).
    """
    s = check_static_int("levels", levels, low=1)

    def compress(v, key):
        _check_vector(v)
        ct = jnp.promote_types(v.dtype, jnp.float32)
        w = v.astype(ct)
        norm = jnp.linalg.norm(w)
        safe = jnp.where(norm > 0, norm, 1.0)
        scaled = s * jnp.abs(w) / safe
        low = jnp.floor(scaled)
        up = jax.random.uniform(key, w.shape, ct) < (scaled - low)
        xi = low + up.astype(ct)
        out = jnp.where(norm > 0, norm * jnp.sign(w) * xi / s, 0.0)
        bits = VALUE_BITS + v.shape[0] * (1 + index_bits(s + 1))
        return out.astype(v.dtype), _bits(bits)

    return Compressor(f"dithering_{s}", compress,
                      omega=lambda d: min(d / s**2, math.sqrt(d) / s))


def natural() -> Compressor:
    r"""Natural compression: each entry rounds randomly to a neighbouring power of two.

    With :math:`2^{e-1} \le |v_i| < 2^e`, :math:`C(v)_i = \mathrm{sign}(v_i) 2^e` with
    probability :math:`(|v_i| - 2^{e-1})/2^{e-1}`, else :math:`\mathrm{sign}(v_i) 2^{e-1}`:
    unbiased with omega = 1/8 (Horvath et al. 2019). Message: sign and exponent, 9 bits per
    entry (float32 exponent range).
    """

    def compress(v, key):
        _check_vector(v)
        ct = jnp.promote_types(v.dtype, jnp.float32)
        a = jnp.abs(v.astype(ct))
        _, e = jnp.frexp(a)  # a = m 2^e, m in [0.5, 1)
        low = jnp.ldexp(jnp.ones_like(a), e - 1)
        p = jnp.where(a > 0, (a - low) / low, 0.0)
        up = jax.random.uniform(key, a.shape, ct) < p
        mag = jnp.where(up, 2.0 * low, low)
        out = jnp.where(a > 0, jnp.sign(v.astype(ct)) * mag, 0.0)
        return out.astype(v.dtype), _bits(9 * v.shape[0])

    return Compressor("natural", compress, omega=lambda d: 0.125)


def scaled_sign() -> Compressor:
    r"""Scaled sign: :math:`C(v) = (\|v\|_1/d)\,\mathrm{sign}(v)` (biased, deterministic).

    :math:`\|C(v) - v\|^2 = \|v\|^2 - \|v\|_1^2/d \le (1 - 1/d)\|v\|^2` (alpha = 1/d in the
    worst case). Message: one float and ``d`` signs (``32 + d`` bits).
    """

    def compress(v, key):
        del key
        _check_vector(v)
        ct = jnp.promote_types(v.dtype, jnp.float32)
        w = v.astype(ct)
        out = jnp.sum(jnp.abs(w)) / w.shape[0] * jnp.sign(w)
        return out.astype(v.dtype), _bits(VALUE_BITS + v.shape[0])

    return Compressor("scaled_sign", compress, alpha=lambda d: 1.0 / d, deterministic=True)


def rotation(delta: float, theta: float) -> Compressor:
    r"""The worst-case compressor :math:`C(v) = v - \sqrt{1-\delta}\,R_\theta v`.

    :math:`R_\theta` rotates every consecutive pair of coordinates by ``theta``, so
    :math:`\|C(v) - v\|^2 = (1 - \delta)\|v\|^2` exactly: the contraction bound with equality
    (alpha = delta, deterministic, linear). The EF/EF21 lower bounds use it; messages are dense
    (``32 d`` bits). The vector size must be even.

    Args:
      delta: contraction parameter in ``(0, 1]``.
      theta: rotation angle (radians, any float).
    """
    check_float("delta", delta, high=1.0, allow_schedule=False)
    check_float("theta", theta, low=-math.inf, strict=False, allow_schedule=False)
    q = math.sqrt(1.0 - float(delta))
    c, s = math.cos(float(theta)), math.sin(float(theta))

    def compress(v, key):
        del key
        _check_vector(v)
        if v.shape[0] % 2:
            raise ValueError(f"rotation compressor needs an even vector size, got {v.shape[0]}")
        ct = jnp.promote_types(v.dtype, jnp.float32)
        pairs = v.astype(ct).reshape(-1, 2)
        rot = jnp.stack([c * pairs[:, 0] - s * pairs[:, 1], s * pairs[:, 0] + c * pairs[:, 1]],
                        axis=1)
        out = (pairs - q * rot).reshape(-1)
        return out.astype(v.dtype), _bits(VALUE_BITS * v.shape[0])

    return Compressor(f"rotation_{float(delta):g}_{float(theta):g}", compress,
                      alpha=lambda d: float(delta), deterministic=True)


def as_contractive(compressor: Compressor) -> Compressor:
    r"""An unbiased compressor scaled by :math:`1/(1 + \omega)`: contractive with
    :math:`\alpha = 1/(1 + \omega)` (:math:`E\|C/(1+\omega) - v\|^2 = (\omega/(1+\omega))
    \|v\|^2` at worst). Same message size."""
    if not isinstance(compressor, Compressor) or compressor.omega is None:
        raise ValueError(f"compressor must be an unbiased Compressor, got {compressor!r}")
    omega = compressor.omega

    def compress(v, key):
        out, bits = compressor.compress(v, key)
        d = v.shape[0]
        return (out / (1.0 + omega(d))).astype(v.dtype), bits

    return Compressor(f"{compressor.name}/(1+omega)", compress,
                      alpha=lambda d: 1.0 / (1.0 + omega(d)),
                      deterministic=compressor.deterministic)
