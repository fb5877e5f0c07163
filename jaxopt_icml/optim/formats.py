r"""Low-precision number formats: rounding onto a storage format and back.

The formats (:data:`FORMATS`: float64, float32, bfloat16, float16, FP8 e4m3/e5m2, FP4 e2m1) and
the exact rounding onto their grids, nearest-even or stochastic, computed in float32 (float64 for
float64 inputs): :func:`round_to_format`, :func:`quantize` (the codes, an array of the format's
dtype), :func:`dequantize` (back) and :func:`tensor_scale` (the per-tensor power-of-two scale
for FP8/FP4). Off the CPU, nearest rounding goes through ``lax.reduce_precision`` and a uniform
grid in the format's subnormal range (chosen with ``lax.platform_dependent``), because XLA may
fold a cast to the format and back away as excess precision. Used by the M+Adam and Madam
optimizers (:mod:`jaxopt_icml.optim.m_plus_adam`) for their low-precision master weights and
moments.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes

from jaxopt_icml.hyperparams import compute_dtype

__all__ = [
    "round_to_format",
    "quantize",
    "dequantize",
    "tensor_scale",
]

#: Storage formats accepted as ``param_dtype`` (and by the rounding helpers).
FORMATS = tuple(jnp.dtype(d) for d in (
    jnp.float64, jnp.float32, jnp.bfloat16, jnp.float16,
    jnp.float8_e4m3fn, jnp.float8_e5m2, jnp.float4_e2m1fn))

# compute dtype -> (unsigned int of the same width, stored mantissa bits)
_BITS = {jnp.dtype(jnp.float32): (jnp.uint32, 23), jnp.dtype(jnp.float64): (jnp.uint64, 52)}
_EXP_BITS = {jnp.dtype(jnp.float32): 8, jnp.dtype(jnp.float64): 11}


def _format(dtype, name="dtype") -> jnp.dtype:
    try:
        d = jnp.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d not in FORMATS:
        names = ", ".join(f.name for f in FORMATS)
        raise ValueError(f"{name} must be one of {names}, got {dtype!r}")
    return d


def _info(fmt):
    """``(stored mantissa bits, min normal exponent, largest finite value)`` of ``fmt``."""
    fi = ml_dtypes.finfo(fmt)
    return int(fi.nmant), int(fi.minexp), float(fi.max)


def _holds(container, fmt) -> bool:
    """Whether every finite value of ``fmt`` times a moderate power of two is exact in
    ``container`` (more mantissa bits and at least the exponent range)."""
    (nc, ec, mc), (nf, ef, mf) = _info(container), _info(fmt)
    return nc >= nf and ec <= ef and mc >= mf


def _as_compute(x):
    x = jnp.asarray(x)
    return x.astype(compute_dtype(x.dtype))


def _nearest_by_reduce_precision(x, fmt):
    """``x`` (float32 or float64) rounded to nearest even onto fmt's grid within fmt's range
    without a cast: ``lax.reduce_precision`` of the mantissa within the compute dtype's own
    exponent range, then the uniform grid of fmt's subnormal range."""
    ct = x.dtype
    nm, minexp, _ = _info(fmt)
    y = jax.lax.reduce_precision(x, exponent_bits=_EXP_BITS[ct], mantissa_bits=nm)
    if minexp <= ml_dtypes.finfo(ct).minexp:
        return y
    step = 2.0 ** (minexp - nm)
    zq = jnp.round(x * jnp.asarray(1 / step, ct))
    return jnp.where(jnp.abs(x) < jnp.asarray(2.0 ** minexp, ct), zq * jnp.asarray(step, ct), y)


def _round_values(x, fmt, rbits=None):
    """``x`` (float32 or float64) rounded onto the grid of ``fmt``, saturating at its largest
    finite value; nearest-even when ``rbits`` is ``None``, else stochastic with the uniform
    random unsigned integers ``rbits`` (same width as ``x``). Returns ``x``'s dtype."""
    ct = x.dtype
    fmt = jnp.dtype(fmt)
    if fmt == ct:
        return x
    if ct not in _BITS:
        raise ValueError(f"rounding computes in float32 or float64, got {ct}")
    uint, mbits = _BITS[ct]
    nm, minexp, fmax = _info(fmt)
    if nm > mbits:
        raise ValueError(f"cannot round {ct} values onto the wider format {fmt}")
    x = jnp.clip(x, -fmax, fmax)
    if rbits is None:
        by_reduce_precision = functools.partial(_nearest_by_reduce_precision, fmt=fmt)
        if ct != jnp.float32:
            return by_reduce_precision(x)  # no double rounding through float32
        # XLA's float32 -> fmt conversion rounds to nearest even, subnormals included (checked
        # against ml_dtypes in the tests), and on the CPU it is the cheaper one. Elsewhere a cast
        # to fmt and back may be folded away as excess precision (XLA's GPU backend does so by
        # default), which would leave float32 weights in disguise: reduce_precision is kept.
        return jax.lax.platform_dependent(
            x, cpu=lambda x: x.astype(fmt).astype(ct), default=by_reduce_precision)
    # stochastic: add uniform noise below the kept mantissa bits, then truncate
    low = uint((1 << (mbits - nm)) - 1)
    bits = jax.lax.bitcast_convert_type(x, uint)
    sign_mask = uint(1 << (8 * jnp.dtype(uint).itemsize - 1))
    sign, mag = bits & sign_mask, bits & ~sign_mask
    mag = mag + (rbits & low)  # P(up) = the dropped fraction of an ulp
    y = jax.lax.bitcast_convert_type(sign | (mag & ~low), ct)
    if minexp <= ml_dtypes.finfo(ct).minexp:
        return y
    step = 2.0 ** (minexp - nm)  # fmt's subnormal range: a uniform grid
    shift = 8 * jnp.dtype(uint).itemsize - (mbits + 1)
    u = (rbits >> uint(shift)).astype(ct) * jnp.asarray(2.0 ** -(mbits + 1), ct)
    zq = jnp.floor(x * jnp.asarray(1 / step, ct) + u)
    return jnp.where(jnp.abs(x) < jnp.asarray(2.0 ** minexp, ct), zq * jnp.asarray(step, ct), y)


def _as_stored(x, dtype):
    """``x`` (compute dtype) cast to the state ``dtype``, such that reading it back as
    ``stored.astype(x.dtype)`` gives the stored value on every backend: off the CPU, XLA may
    fold a bare narrowing-widening cast pair into ``x`` (the reader would see the unrounded
    ``x``), so there the value is first rounded by ``reduce_precision``, and beyond the
    format's largest finite value mapped to infinity as the cast does (float16 moments)."""
    dtype = jnp.dtype(dtype)
    if ml_dtypes.finfo(dtype).nmant >= ml_dtypes.finfo(x.dtype).nmant:
        return x.astype(dtype)

    def rounded(x):
        r = _nearest_by_reduce_precision(x, dtype)
        fmax = float(ml_dtypes.finfo(dtype).max)
        if fmax < float(ml_dtypes.finfo(x.dtype).max):
            r = jnp.where(jnp.abs(r) > fmax, jnp.copysign(jnp.inf, r).astype(x.dtype), r)
        return r.astype(dtype)

    return jax.lax.platform_dependent(x, cpu=lambda x: x.astype(dtype), default=rounded)


def _random_bits(key, shape, ct):
    return jax.random.bits(key, shape, _BITS[jnp.dtype(ct)][0])


def tensor_scale(x: jax.Array, dtype) -> jax.Array:
    r"""The per-tensor power-of-two scale :math:`s = 2^k` for storing ``x`` in ``dtype``.

    :math:`k` is the smallest integer with :math:`\max|x| \le s \cdot \max(\text{dtype})`, so the
    largest entry uses the top of the format's range and small entries keep as many binades as
    the format has; :math:`s = 1` for an all-zero (or non-finite) tensor. Returns a scalar in the
    compute dtype of ``x`` (float32 for 16-bit and narrower inputs).
    """
    fmt = _format(dtype)
    x = _as_compute(x)
    amax = jnp.max(jnp.abs(x)) if x.size else jnp.zeros((), x.dtype)
    ratio = amax / jnp.asarray(_info(fmt)[2], x.dtype)
    mant, ex = jnp.frexp(ratio)
    k = jnp.where(mant == 0.5, ex - 1, ex)
    k = jnp.where(jnp.isfinite(ratio) & (ratio > 0), k, 0)
    return jnp.ldexp(jnp.ones((), x.dtype), k)


def round_to_format(x: jax.Array, dtype, *, key: jax.Array | None = None,
                    scale: jax.Array | float | None = None) -> jax.Array:
    r"""``x`` rounded onto the grid :math:`s \cdot \mathcal{F}` of the format ``dtype``.

    Nearest (ties to even) without ``key``; stochastic rounding with ``key``: each entry goes to
    the grid point below or above with probabilities proportional to the distance to the other
    one, so :math:`\mathbb{E}[Q(x)] = x` within the format's range. Values beyond the largest
    finite value saturate (also for formats with infinities). The arithmetic is exact, in
    float32 (float64 for float64 ``x``): integer operations on the bit patterns (stochastic);
    nearest for float32 ``x`` by XLA's conversion to ``dtype`` and back on the CPU, elsewhere
    (and for float64 ``x`` everywhere) by ``lax.reduce_precision`` of the mantissa and a
    uniform grid in the format's subnormal range, because XLA may fold a cast and its inverse
    away as excess precision (its GPU backend does by default: the values would not be
    rounded at all). XLA flushes float32
    subnormals to zero, so BF16 values below ``finfo(bfloat16).tiny`` (1.2e-38) become 0 in
    float32 compute.

    Args:
      x: array of any float dtype.
      dtype: the format, one of :data:`FORMATS`.
      key: a PRNG key for stochastic rounding, or ``None`` (default) for nearest.
      scale: ``None`` (default, :math:`s = 1`) or a power of two :math:`s` (e.g.
        :func:`tensor_scale`); other values give a grid that is not a scaled format.

    Returns:
      The rounded values in ``x``'s compute dtype (float32 for 16-bit and narrower ``x``), so
      ``round_to_format(x, jnp.float8_e4m3fn)`` is exactly representable in
      ``jnp.float8_e4m3fn`` after dividing by ``scale``.
    """
    fmt = _format(dtype)
    x = _as_compute(x)
    if fmt == x.dtype:
        return x
    s = None if scale is None else jnp.asarray(scale, x.dtype)
    y = x if s is None else x / s
    rbits = None if key is None else _random_bits(key, x.shape, x.dtype)
    y = _round_values(y, fmt, rbits)
    return y if s is None else y * s


def quantize(x: jax.Array, dtype, *, key: jax.Array | None = None,
             scale: jax.Array | float | None = None) -> jax.Array:
    """The codes of ``x`` in the format ``dtype`` (an array OF that dtype, e.g. one byte per
    entry for FP8): ``round_to_format(x, dtype, key=key, scale=scale) / scale`` cast to
    ``dtype``, exactly. :func:`dequantize` inverts it."""
    fmt = _format(dtype)
    y = round_to_format(x, fmt, key=key, scale=scale)
    if scale is not None:
        y = y / jnp.asarray(scale, y.dtype)
    return y.astype(fmt)


def dequantize(codes: jax.Array, scale: jax.Array | float | None = None,
               dtype=jnp.float32) -> jax.Array:
    """``codes * scale`` in ``dtype`` (exact when ``dtype`` holds the scaled format)."""
    y = jnp.asarray(codes).astype(dtype)
    return y if scale is None else y * jnp.asarray(scale, dtype)
