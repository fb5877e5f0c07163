"""Tests of M+Adam, Madam (jaxopt_icml.optim.m_plus_adam) and the low-precision rounding
(jaxopt_icml.optim.formats)."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import optax
import pytest

from experiments import runner
from jaxopt_icml.optim.formats import (
    FORMATS,
    _nearest_by_reduce_precision,
    dequantize,
    quantize,
    round_to_format,
    tensor_scale,
)
from jaxopt_icml.optim.m_plus_adam import m_plus_adam, madam
from jaxopt_icml.testing import TransformationCase

_LOW = (jnp.bfloat16, jnp.float8_e4m3fn, jnp.float8_e5m2, jnp.float4_e2m1fn)

_INVALID = (
    ({"learning_rate_add": -1e-3}, "learning_rate_add"),
    ({"learning_rate_add": float("nan")}, "learning_rate_add"),
    ({"learning_rate_mul": -1e-3}, "learning_rate_mul"),
    ({"b1": 1.0}, "b1"),
    ({"b1": -0.1}, "b1"),
    ({"b2": 1.0}, "b2"),
    ({"b2": 1.5}, "b2"),
    ({"eps": 0.0}, "eps"),
    ({"max_abs_step": 0.0}, "max_abs_step"),
    ({"max_rel_step": -1.0}, "max_rel_step"),
    ({"w_max": 0.0}, "w_max"),
    ({"param_dtype": jnp.int8}, "param_dtype"),
    ({"param_dtype": "float7"}, "param_dtype"),
    ({"state_dtype": jnp.float8_e4m3fn}, "state_dtype"),
    ({"rounding": "up"}, "rounding"),
    ({"per_tensor_scale": 1}, "per_tensor_scale"),
    ({"form": "log"}, "form"),
    ({"rounding": "stochastic", "key": None}, "key"),
    ({"rounding": "stochastic", "key": 3}, "key"),
)


def _make_nearest(learning_rate_add=1e-2, learning_rate_mul=2e-2, **kw):
    return m_plus_adam(learning_rate_add, learning_rate_mul, **kw)


def _make_stochastic(learning_rate_add=1e-2, learning_rate_mul=5e-2, *, key=None, **kw):
    kw.setdefault("rounding", "stochastic")
    kw.setdefault("key", key)
    return m_plus_adam(learning_rate_add, learning_rate_mul, **kw)


# Case 1: BF16 storage (native for bf16 leaves, emulated in float32/float64 leaves), nearest.
# Case 2: FP8 e4m3 storage with per-tensor scale, stochastic rounding (the mantissa/exponent
# form is checked against NumPy below; in the matrix it only adds compile time).
CONTRACT_CASES = (
    TransformationCase(
        name="m_plus_adam_bf16", make=_make_nearest,
        kwargs={"learning_rate_add": 1e-2, "param_dtype": jnp.bfloat16}, invalid=_INVALID,
        lr_name="learning_rate_add"),
    TransformationCase(
        name="m_plus_adam_fp8_sr", make=_make_stochastic,
        kwargs={"learning_rate_mul": 5e-2, "param_dtype": jnp.float8_e4m3fn},
        invalid=_INVALID[:-2], stochastic=True, lr_name="learning_rate_mul"),
)

# --------------------------------------------------------------------------- references


def _np_round(x, dtype):
    """Nearest-even rounding onto ``dtype`` by ml_dtypes (independent of our bit code),
    saturating at the largest finite value."""
    fmax = float(ml_dtypes.finfo(dtype).max)
    return np.clip(np.asarray(x, np.float64), -fmax, fmax).astype(dtype).astype(np.float64)


@functools.cache
def _grid(dtype):
    """All finite non-negative values of ``dtype``, sorted (by enumerating bit patterns)."""
    bits = ml_dtypes.finfo(dtype).bits
    if bits > 16:
        raise ValueError(dtype)
    if bits == 4:
        vals = np.array([float(ml_dtypes.float4_e2m1fn(v)) for v in
                         (0, .5, 1, 1.5, 2, 3, 4, 6)])
    else:
        u = np.arange(2 ** bits, dtype=np.uint16 if bits == 16 else np.uint8)
        with np.errstate(invalid="ignore"):
            vals = u.view(dtype).astype(np.float64)
    vals = vals[np.isfinite(vals) & (vals >= 0)]
    return np.unique(vals)


def _np_adam_dir(x, m, v, t, b1, b2, eps):
    m = b1 * m + (1 - b1) * x
    v = b2 * v + (1 - b2) * x * x
    return (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps), m, v


def _np_m_plus_adam(w, grads, lr_a, lr_m, b1, b2, eps, form, fmt=None):
    """M+Adam in float64 NumPy from the equations of the docstring (rounding by ml_dtypes)."""
    w = np.asarray(w, np.float64)
    ma = va = mm = vm = np.zeros_like(w)
    out = []
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g, np.float64)
        if form == "mantissa_exponent":
            mant, ex = np.frexp(w)
            ga = g * 2.0 ** ex
        else:
            ga = g
        ua, ma, va = _np_adam_dir(ga, ma, va, t, b1, b2, eps)
        um, mm, vm = _np_adam_dir(w * math.log(2) * g, mm, vm, t, b1, b2, eps)
        if form == "mantissa_exponent":
            new = (mant - lr_a * ua) * 2.0 ** ex * 2.0 ** (-lr_m * um)
        else:
            new = w * 2.0 ** (-lr_m * um) - lr_a * ua
        w = new if fmt is None else _np_round(new, fmt)
        out.append(w)
    return out


def _run(tx, w, grads, **extra):
    s = tx.init(w)
    upd = jax.jit(lambda g, s, p: tx.update(g, s, p, **extra))
    out = []
    for g in grads:
        u, s = upd(jnp.asarray(g, w.dtype), s, w)
        w = optax.apply_updates(w, u)
        out.append(w)
    return out, s


def _grads(n, d, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return [scale * rng.standard_normal(d) for _ in range(n)]


# --------------------------------------------------------------------------- rounding

# XLA:CPU's default code generation (tests/conftest.py switches the suite to the classic
# emitters, whose low-precision conversions differ); an option of the CPU backend only
_DEFAULT_CODEGEN = ({"xla_cpu_use_fusion_emitters": True} if jax.default_backend() == "cpu"
                    else {})


@pytest.mark.parametrize("dtype", _LOW)
def test_nearest_rounding_matches_ml_dtypes(dtype):
    """Random values over 14 decades, the format's ties, subnormals and overflow: equal to
    ml_dtypes' nearest-even conversion (with saturation)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(6000) * 10.0 ** rng.uniform(-9, 5, 6000)
    g = _grid(dtype)
    ties = np.concatenate([(g[1:] + g[:-1]) / 2, g, [g[-1] * 1.5, 1e30]])
    with np.errstate(over="ignore"):
        x = np.concatenate([x, ties, -ties]).astype(np.float32)
    if dtype == jnp.bfloat16:  # XLA flushes float32 subnormals (= BF16's) to zero
        x = x[~(np.abs(x) < ml_dtypes.finfo(np.float32).tiny)]
    ref = _np_round(x, dtype)
    # compiled with XLA:CPU's default emitters, as users run it: tests/conftest.py selects the
    # classic emitters for compile speed, and their float32 -> float4_e2m1fn conversion rounds
    # one of these values differently from ml_dtypes (the default emitters agree exactly)
    rounder = jax.jit(lambda v: round_to_format(v, dtype), compiler_options=_DEFAULT_CODEGEN)
    got = np.asarray(rounder(x), np.float64)
    np.testing.assert_array_equal(got, ref)
    with jax.enable_x64(True):  # float64 inputs (x64 runs): reduce_precision on every backend
        got64 = np.asarray(rounder(jnp.asarray(x, jnp.float64)))
    np.testing.assert_array_equal(got64, ref)


@pytest.mark.parametrize("dtype", (*_LOW, jnp.float16))
def test_rounding_without_a_cast_matches_ml_dtypes(dtype):
    """The nearest rounding used off the CPU (``reduce_precision`` and the subnormal grid, no
    cast) on the values of the test above, float32 and float64 inputs, and float16 (a state
    dtype) too: equal to ml_dtypes."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(6000) * 10.0 ** rng.uniform(-9, 5, 6000)
    g = _grid(dtype)
    ties = np.concatenate([(g[1:] + g[:-1]) / 2, g])
    x = np.concatenate([x, ties, -ties]).astype(np.float32)
    x = x[~(np.abs(x) < ml_dtypes.finfo(np.float32).tiny)]  # XLA flushes f32 subnormals
    fmax = float(ml_dtypes.finfo(dtype).max)
    x = np.clip(x, -fmax, fmax)
    ref = _np_round(x, dtype)
    no_cast = jax.jit(lambda v: _nearest_by_reduce_precision(v, dtype))
    np.testing.assert_array_equal(np.asarray(no_cast(x), np.float64), ref)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(np.asarray(no_cast(jnp.asarray(x, jnp.float64))), ref)


@pytest.mark.parametrize("leaf, fmt, state", [(jnp.float32, jnp.float8_e4m3fn, jnp.bfloat16),
                                              (jnp.bfloat16, None, jnp.float16)])
def test_off_cpu_rounding_gives_the_cpu_step_bit_for_bit(monkeypatch, leaf, fmt, state):
    """Six steps of M+Adam with every ``platform_dependent`` choice forced to the off-CPU
    branch (reduce_precision) equal the CPU branch (casts) bit for bit: weights and moments,
    including float16 second moments that overflow to inf (gradients of about 1e4)."""
    import sys

    module = sys.modules["jaxopt_icml.optim.m_plus_adam"]  # the package exports the function

    w0 = jnp.linspace(-3.0, 3.0, 29).astype(leaf)
    scale = jnp.where(jnp.arange(29) % 7 == 0, 2e4, 0.5)

    def run():
        module._m_plus_adam_leaf.clear_cache()
        tx = m_plus_adam(1e-2, 1e-2, param_dtype=fmt, state_dtype=state,
                         per_tensor_scale=False if fmt else None)

        @jax.jit
        def steps(w):
            s = tx.init(w)
            for _ in range(6):
                u, s = tx.update((scale * jnp.sin(w.astype(jnp.float32))).astype(leaf), s, w)
                w = optax.apply_updates(w, u)
            return w, s

        return steps(w0)

    cpu = run()
    monkeypatch.setattr(jax.lax, "platform_dependent",
                        lambda *args, default, **branches: default(*args))
    off_cpu = run()
    module._m_plus_adam_leaf.clear_cache()
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(np.asarray(a, np.float64),
                                                            np.asarray(b, np.float64)),
                 cpu, off_cpu)
    assert np.isinf(np.asarray(cpu[1].nu_add, np.float64)).any() == (state == jnp.float16)


def test_rounding_survives_a_gpu_compile():
    """Needs JAX's CUDA plugin and JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (skipped otherwise):
    M+Adam's step compiled for an H100 keeps its rounding, one reduce-precision per bf16
    moment and one for the FP8 weights (with cast round trips, XLA:GPU removed all of
    them)."""
    from experiments.tools import gpu_compile

    try:
        sharding = gpu_compile.gpu_sharding()
    except RuntimeError:
        pytest.skip("JAX's CUDA plugin is not installed")
    tx = m_plus_adam(1e-3, 1e-3, param_dtype=jnp.float8_e4m3fn, state_dtype=jnp.bfloat16,
                     per_tensor_scale=False)
    text = gpu_compile.compile_step(tx, jnp.zeros(4096), sharding, donate=False,
                                    grad_input=False)
    assert text.count(" reduce-precision(") == 5


@pytest.mark.parametrize("leaf, fmt", [(jnp.float32, jnp.float8_e4m3fn),
                                       (jnp.float32, jnp.float4_e2m1fn),
                                       (jnp.bfloat16, None)])
def test_rounding_is_not_a_cast_round_trip(leaf, fmt):
    """Off the CPU, the weights and the bf16 moments are rounded by ``reduce_precision``, not
    by a cast to the narrow dtype and back. XLA may fold such a round trip away as excess
    precision: its GPU backend does by default (a deviceless H100 compile with jax 0.10.2 kept
    none of the FP8/FP4 weight rounding and read unrounded moments), which silently trains
    float32 weights. The rounding ops must be in the program lowered for a GPU or TPU: one per
    moment (four, bf16 state) and one for the weights, and the narrow format never appears.
    (On the CPU, whose XLA keeps the round trip, the cheaper cast is used: the other rounding
    tests run it, and the test below checks that both give the same steps.)"""
    tx = m_plus_adam(1e-3, 1e-3, param_dtype=fmt, state_dtype=jnp.bfloat16,
                     per_tensor_scale=False)
    p = jnp.linspace(-2.0, 2.0, 64).astype(leaf)

    def step(p, s):
        u, s = tx.update(0.01 * p, s, p)
        return optax.apply_updates(p, u), s

    traced = jax.jit(step).trace(p, tx.init(p))
    for platform in ("cuda", "rocm", "tpu"):
        text = traced.lower(lowering_platforms=(platform,)).as_text()
        assert text.count("stablehlo.reduce_precision") == 5
        for narrow in ("f8E4M3FN", "f4E2M1FN"):
            assert narrow not in text


@pytest.mark.parametrize("dtype", _LOW)
def test_stochastic_rounding_neighbours_and_unbiased(dtype):
    """Every sample is one of the two grid neighbours (from the enumerated grid), and the
    frequency of the upper one is (x - lo) / (hi - lo) within 5 standard errors."""
    g = _grid(dtype)
    pick = g[1:-1][np.linspace(0, len(g) - 3, 9).astype(int)]
    lo = np.concatenate([pick, [0.0]])
    hi = np.array([g[np.searchsorted(g, v) + 1] for v in lo])
    frac = np.array([0.1, 0.37, 0.5, 0.81, 0.93, 0.25, 0.6, 0.05, 0.7, 0.45])[:len(lo)]
    x = lo + frac * (hi - lo)
    x = np.concatenate([x, -x]).astype(np.float32)
    lo, hi, frac = (np.concatenate([a, s * a]) for a, s in ((lo, -1), (hi, -1), (frac, 1)))
    frac = np.where(np.arange(len(x)) < len(x) // 2, frac, frac)
    xs32 = x.astype(np.float64)
    n = 4000
    keys = jax.random.split(jax.random.key(0), n)
    samples = np.asarray(jax.jit(jax.vmap(lambda k: round_to_format(x, dtype, key=k)))(keys),
                         np.float64)
    up = np.isclose(samples, hi[None], rtol=0, atol=0)
    down = np.isclose(samples, lo[None], rtol=0, atol=0)
    assert np.all(up | down), "stochastic rounding left the two neighbours"
    p = (np.abs(xs32) - np.abs(lo)) / (np.abs(hi) - np.abs(lo))
    se = np.sqrt(p * (1 - p) / n)
    np.testing.assert_array_less(np.abs(up.mean(0) - p), 5 * se + 1e-3)


@pytest.mark.parametrize("dtype", (jnp.float8_e4m3fn, jnp.float8_e5m2, jnp.float4_e2m1fn))
def test_tensor_scale_and_lossless_storage(dtype):
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.standard_normal((5, 7)) * 37.0, jnp.float32)
    s = tensor_scale(x, dtype)
    k = math.log2(float(s))
    fmax = float(ml_dtypes.finfo(dtype).max)
    assert k == int(k), "the scale is a power of two"
    amax = float(jnp.max(jnp.abs(x)))
    assert amax <= float(s) * fmax < 2 * amax, "the smallest 2^k with max|x| <= 2^k max"
    assert float(tensor_scale(jnp.zeros(3), dtype)) == 1.0
    stored = round_to_format(x, dtype, scale=s)
    np.testing.assert_array_equal(np.asarray(stored) / float(s),
                                  _np_round(np.asarray(x) / float(s), dtype))
    codes = quantize(stored, dtype, scale=tensor_scale(stored, dtype))
    assert codes.dtype == jnp.dtype(dtype) and codes.dtype.itemsize == 1
    back = dequantize(codes, tensor_scale(stored, dtype), jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(back, np.float32), np.asarray(stored))


# --------------------------------------------------------------------------- the update rule


@pytest.mark.parametrize("form", ["combined", "mantissa_exponent"])
def test_matches_numpy_rederivation_float64(form):
    """float64 storage: the trajectory equals the NumPy re-derivation to 1e-12."""
    w0 = np.array([40.0, -3.0, 0.02, -0.005, 0.0, 7.5])
    grads = _grads(8, 6)
    ref = _np_m_plus_adam(w0, grads, 0.03, 0.05, 0.9, 0.99, 1e-8, form)
    with jax.enable_x64(True):
        tx = m_plus_adam(0.03, 0.05, b1=0.9, b2=0.99, form=form)
        got, _ = _run(tx, jnp.asarray(w0, jnp.float64), grads)
        for a, b in zip(got, ref, strict=True):
            assert a.dtype == jnp.float64
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("form", ["combined", "mantissa_exponent"])
def test_bf16_storage_matches_numpy_with_rounding(form):
    """BF16 storage emulated in float64 leaves: every stored weight is the NumPy value rounded
    to BF16 by ml_dtypes (rounded once per step), and lies on the BF16 grid."""
    w0 = _np_round(np.array([40.0, -3.0, 0.02, -0.005, 0.0, 7.5, 18.0, -300.0]), jnp.bfloat16)
    grads = _grads(10, 8, seed=3)
    ref = _np_m_plus_adam(w0, grads, 0.01, 0.02, 0.9, 0.95, 1e-8, form, fmt=jnp.bfloat16)
    with jax.enable_x64(True):
        tx = m_plus_adam(0.01, 0.02, b2=0.95, form=form, param_dtype=jnp.bfloat16)
        got, _ = _run(tx, jnp.asarray(w0, jnp.float64), grads)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(np.asarray(a), b)
            np.testing.assert_array_equal(_np_round(np.asarray(a), jnp.bfloat16), np.asarray(a))


def test_no_multiplicative_step_equals_optax_adam():
    """learning_rate_mul = 0 with float32 leaves, state and storage is optax.adam."""
    w0 = jnp.asarray([3.0, -1.0, 0.5, 0.0], jnp.float32)
    grads = _grads(12, 4, seed=4)
    ours, _ = _run(m_plus_adam(1e-2, 0.0), w0, grads)
    ref, _ = _run(optax.adam(1e-2), w0, grads)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _first_direction_bf16_state(x):
    """Adam's step-1 direction from moments stored in bf16: sign(x) up to their rounding,
    (Q(c1 x) / c1) / (sqrt(Q(c2 x^2) / c2) + eps) with c_i = 1 - b_i in float32."""
    c1, c2 = (float(np.float32(1) - np.float32(b)) for b in (0.9, 0.999))
    m, v = _np_round(c1 * x, jnp.bfloat16), _np_round(c2 * x * x, jnp.bfloat16)
    return (m / c1) / (np.sqrt(v / c2) + 1e-8)


def test_first_step_closed_form_and_multiplicative_invariants():
    """Step 1 has u = sign(x) (Adam's first direction) up to the bf16 rounding of the stored
    moments, so w1 = Q(w 2^(-eta_M u(w ln2 g)) - eta_A u(g)); with eta_A = 0 signs are kept
    and 0 is a fixed point."""
    w = jnp.asarray([32.0, -32.0, 0.5, 0.0, -7.0], jnp.bfloat16)
    g = jnp.asarray([1.0, 1.0, -2.0, 3.0, -0.5], jnp.bfloat16)
    u, _ = m_plus_adam(0.01, 0.05).update(g, m_plus_adam(0.01, 0.05).init(w), w)
    wf, gf = np.asarray(w, np.float64), np.asarray(g, np.float64)
    u_add, u_mul = (_first_direction_bf16_state(x) for x in (gf, wf * math.log(2.0) * gf))
    # sign(g) up to rounding: m to 2^-8 relative (bf16's unit roundoff), sqrt(v) to 2^-9
    np.testing.assert_allclose(np.abs(u_add), 1.0, rtol=3 * 2 ** -9)
    exact = wf * 2.0 ** (-0.05 * u_mul) - 0.01 * u_add
    np.testing.assert_array_equal(np.asarray(optax.apply_updates(w, u), np.float64),
                                  _np_round(exact, jnp.bfloat16))
    tx = m_plus_adam(0.0, 0.05)
    p, s = w, tx.init(w)
    for gg in _grads(50, 5, seed=5, scale=3.0):
        u, s = tx.update(jnp.asarray(gg, jnp.bfloat16), s, p)
        p = optax.apply_updates(p, u)
    assert np.all(np.sign(np.asarray(p, np.float32)) == np.sign(np.asarray(w, np.float32)))
    assert float(p[3]) == 0.0


def test_bf16_stagnation_of_additive_steps():
    """|w| in [16, 32): half an ulp is 1/16 > any step of Adam with eta = 1e-2, so optax.adam
    and M+Adam without the multiplicative path never change w; M+Adam does at step 1."""
    w = jnp.full((4,), 20.0, jnp.bfloat16)
    grads = [np.array([1.0, -1.0, 0.5, 2.0]) * (1 + 0.5 * np.sin(t)) for t in range(200)]
    for tx in (optax.adam(1e-2), m_plus_adam(1e-2, 0.0)):
        got, _ = _run(tx, w, grads)
        np.testing.assert_array_equal(np.asarray(got[-1], np.float32), np.asarray(w, np.float32))
    got, _ = _run(m_plus_adam(1e-2, 1e-2), w, grads[:1])
    assert np.all(np.asarray(got[0]) != np.asarray(w))


def test_stochastic_rounding_moves_sub_ulp_steps_in_expectation():
    """Adam + SR at |w| = 20 (ulp 1/8): after 100 steps of a constant gradient the mean
    displacement over 256 seeds is 100 * eta (each step moves by eta in expectation)."""
    w = jnp.full((1,), 20.0, jnp.bfloat16)

    def final(key):
        tx = m_plus_adam(1e-2, 0.0, rounding="stochastic", key=key)
        s = tx.init(w)

        def body(c, _):
            p, s = c
            u, s = tx.update(jnp.ones((1,), jnp.bfloat16), s, p)
            return (optax.apply_updates(p, u), s), None

        return jax.lax.scan(body, (w, s), None, length=100)[0][0][0].astype(jnp.float32)

    out = np.asarray(jax.jit(jax.vmap(final))(jax.random.split(jax.random.key(1), 256)))
    assert np.all(np.isin(out, 20.0 - 0.125 * np.arange(0, 20)))  # on the BF16 grid
    se = np.std(out) / np.sqrt(len(out))
    assert abs((20.0 - out.mean()) - 1.0) < 5 * se + 0.02


def test_apply_updates_lands_on_the_rounded_weight():
    """bf16 leaves + optax.apply_updates vs the same step with float32 leaves and emulated BF16
    storage (where apply_updates is exact): equal whenever Q(new) - w is representable in
    BF16 (in particular same sign and within a factor 2), else within one BF16 ulp of
    max(|w|, |Q(new)|). The large steps force sign changes."""
    rng = np.random.default_rng(6)
    w32 = _np_round(rng.standard_normal(4000) * 10.0 ** rng.uniform(-3, 2, 4000), jnp.bfloat16)
    g = rng.standard_normal(4000)
    tx_n = m_plus_adam(0.3, 0.5)  # bf16 leaves: bf16 state by default
    tx_e = m_plus_adam(0.3, 0.5, param_dtype=jnp.bfloat16, state_dtype=jnp.bfloat16)
    wb = jnp.asarray(w32, jnp.bfloat16)
    u, _ = tx_n.update(jnp.asarray(g, jnp.bfloat16), tx_n.init(wb), wb)
    native = np.asarray(optax.apply_updates(wb, u), np.float64)
    we = jnp.asarray(w32, jnp.float32)
    ue, _ = tx_e.update(jnp.asarray(g, jnp.bfloat16).astype(jnp.float32), tx_e.init(we), we)
    q = np.asarray(optax.apply_updates(we, ue), np.float64)
    assert np.array_equal(_np_round(q, jnp.bfloat16), q)
    representable = _np_round(q - w32, jnp.bfloat16) == q - w32
    sterbenz = (np.sign(q) == np.sign(w32)) & (np.abs(q) <= 2 * np.abs(w32)) & (
        np.abs(w32) <= 2 * np.abs(q))
    assert np.all(representable[sterbenz])
    np.testing.assert_array_equal(native[representable], q[representable])
    big = np.maximum(np.abs(w32), np.abs(q))
    ulp = 2.0 ** (np.floor(np.log2(np.where(big > 0, big, 1.0))) - 7)
    assert np.all(np.abs(native - q) <= ulp)
    assert (~representable).sum() > 0 and (np.sign(q) != np.sign(w32)).sum() > 100


def test_fp8_storage_in_bf16_leaves_is_lossless_and_keeps_dtypes():
    w = jnp.asarray(np.linspace(-50, 50, 33), jnp.bfloat16)
    tx = m_plus_adam(1e-2, 0.1, param_dtype=jnp.float8_e4m3fn)
    s = tx.init(w)
    for gg in _grads(20, 33, seed=7):
        u, s = tx.update(jnp.asarray(gg, jnp.bfloat16), s, w)
        w = optax.apply_updates(w, u)
        assert w.dtype == jnp.bfloat16 and u.dtype == jnp.bfloat16
        sc = tensor_scale(w, jnp.float8_e4m3fn)
        back = dequantize(quantize(w, jnp.float8_e4m3fn, scale=sc), sc, jnp.bfloat16)
        np.testing.assert_array_equal(np.asarray(back, np.float32), np.asarray(w, np.float32))
    assert all(x.dtype == jnp.bfloat16 for x in (s.mu_add, s.nu_add, s.mu_mul, s.nu_mul))


def test_float8_leaves_hold_codes():
    w = jnp.asarray([3.0, -0.5, 100.0], jnp.float8_e4m3fn)
    tx = m_plus_adam(0.2, 0.3)
    u, s = tx.update(jnp.asarray([1.0, -1.0, 1.0], jnp.float8_e4m3fn), tx.init(w), w)
    p = optax.apply_updates(w, u)
    assert p.dtype == jnp.float8_e4m3fn and s.nu_add.dtype == jnp.bfloat16
    assert np.all(np.asarray(p, np.float32) != np.asarray(w, np.float32))


@pytest.mark.parametrize("make", [
    lambda: m_plus_adam(), lambda: m_plus_adam(form="mantissa_exponent"),
    lambda: m_plus_adam(param_dtype=jnp.float8_e4m3fn),
    lambda: m_plus_adam(rounding="stochastic", key=jax.random.key(0),
                        param_dtype=jnp.float4_e2m1fn),
    lambda: madam(), lambda: madam(param_dtype=jnp.float8_e5m2)])
def test_zero_gradients_give_no_nan(make):
    tx = make()
    w = {"a": jnp.asarray([0.0, 1.5, -2.0], jnp.bfloat16), "b": jnp.zeros((2, 2), jnp.bfloat16)}
    s = tx.init(w)
    p = w
    for _ in range(3):
        u, s = tx.update(jax.tree.map(jnp.zeros_like, w), s, p)
        p = optax.apply_updates(p, u)
    for leaf in jax.tree.leaves((u, p, s)):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.all(np.isfinite(np.asarray(leaf, np.float32)))
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(np.asarray(a, np.float32),
                                                            np.asarray(b, np.float32)), p, w)


def test_caps_and_w_max():
    w = jnp.asarray([10.0, -10.0], jnp.float32)
    g = jnp.asarray([1.0, -1.0], jnp.float32)
    tx = m_plus_adam(0.5, 2.0, max_abs_step=0.1, max_rel_step=0.25, w_max=9.0)
    u, _ = tx.update(g, tx.init(w), w)
    np.testing.assert_allclose(np.asarray(optax.apply_updates(w, u)),
                               [min(10 * 2 ** -0.25 - 0.1, 9.0), max(-10 * 2 ** -0.25 + 0.1,
                                                                     -9.0)], rtol=1e-6)


# --------------------------------------------------------------------------- shapes, inject


@pytest.mark.parametrize("make", [lambda: m_plus_adam(1e-2, 1e-2), lambda: madam(1e-2)],
                         ids=["m_plus_adam", "madam"])
def test_mismatched_updates_raise_value_error_naming_the_leaf(make):
    """Reported: (4,) updates for (3,) params gave a raw broadcasting TypeError. Now a
    ValueError names the leaf (trace time, also under jit); so do a different tree structure
    and a state made for other params."""
    tx = make()
    params = {"w": jnp.ones(3), "b": jnp.full((2,), 0.5)}
    state = tx.init(params)
    good = jax.tree.map(jnp.ones_like, params)
    bad = {**good, "w": jnp.ones(4)}
    leaf = r"\['w'\]: shape \(4,\) vs \(3,\)"
    with pytest.raises(ValueError, match=r"updates and params disagree at leaf " + leaf):
        tx.update(bad, state, params)
    with pytest.raises(ValueError, match=leaf):
        jax.jit(tx.update)(bad, state, params)
    with pytest.raises(ValueError, match="different tree structures") as err:
        tx.update({**good, "extra": jnp.ones(1)}, state, params)
    assert "'extra'" in str(err.value)
    other = {**params, "w": jnp.ones(4)}
    with pytest.raises(ValueError, match=r"updates and state\.\w+ disagree at leaf " + leaf):
        tx.update(jax.tree.map(jnp.ones_like, other), state, other)


def test_inject_hyperparams_param_dtype_as_documented():
    """A scalar type such as jnp.float32 is callable: inject_hyperparams takes it for a
    schedule and passes an array, which used to become the storage format silently. It now
    raises a ValueError with the two documented ways out; jnp.dtype(...) works under jit and
    (learning_rate_mul = 0, float32 storage) follows optax.adam."""
    w0 = jnp.asarray([3.0, -1.0, 0.5, 0.0], jnp.float32)
    with pytest.raises(ValueError, match=r"param_dtype.*static_args=\('param_dtype',\)"):
        optax.inject_hyperparams(m_plus_adam)(1e-2, 0.0, param_dtype=jnp.float32).init(w0)
    grads = _grads(5, 4, seed=4)
    ref, _ = _run(optax.adam(1e-2), w0, grads)
    for tx in (optax.inject_hyperparams(m_plus_adam)(1e-2, 0.0,
                                                     param_dtype=jnp.dtype(jnp.float32)),
               optax.inject_hyperparams(m_plus_adam, static_args=("param_dtype",))(
                   1e-2, 0.0, param_dtype=jnp.float32)):
        ours, s = _run(tx, w0, grads)
        assert "param_dtype" not in s.hyperparams
        for a, b in zip(ours, ref, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- Madam


def test_madam_matches_numpy_and_keeps_signs():
    w0 = np.array([2.0, -1.0, 0.3, 0.0, -40.0])
    grads = _grads(15, 5, seed=8)
    w, v, ref = w0.copy(), np.zeros(5), []
    for t, g in enumerate(grads, start=1):
        v = 0.99 * v + 0.01 * g * g
        gs = g / (np.sqrt(v / (1 - 0.99 ** t)) + 1e-8)
        w = w * np.exp(-0.05 * np.sign(w) * gs)
        ref.append(w.copy())
    with jax.enable_x64(True):
        got, _ = _run(madam(0.05, b2=0.99), jnp.asarray(w0, jnp.float64), grads)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12)
    assert np.all(np.sign(ref[-1]) == np.sign(w0))


def test_invalid_arguments_name_the_argument():
    for override, arg in _INVALID:
        with pytest.raises(ValueError, match=arg):
            m_plus_adam(**override)
    for override, arg in (({"learning_rate": 0.0}, "learning_rate"), ({"b2": 1.0}, "b2"),
                          ({"eps": -1.0}, "eps"), ({"w_max": -2.0}, "w_max"),
                          ({"rounding": "stochastic"}, "key")):
        with pytest.raises(ValueError, match=arg):
            madam(**override)
    with pytest.raises(ValueError, match="param_dtype"):  # wider than the leaves
        m_plus_adam(param_dtype=jnp.float32).init(jnp.zeros(3, jnp.bfloat16))
    with pytest.raises(ValueError, match="dtype"):
        round_to_format(jnp.ones(2), jnp.int8)
    with pytest.raises(ValueError, match="params"):
        tx = m_plus_adam()
        tx.update(jnp.ones(2), tx.init(jnp.ones(2)), None)


def test_static_settings_are_keyword_only():
    m_plus_adam(1e-2, 1e-2, 0.9, 0.999, 1e-8, w_max=3.0)
    with pytest.raises(TypeError):
        m_plus_adam(1e-2, 1e-2, 0.9, 0.999, 1e-8, None)
    with pytest.raises(TypeError):
        madam(1e-2, 0.999, 1e-8, None)


def test_formats_listed():
    assert jnp.dtype(jnp.float4_e2m1fn) in FORMATS and jnp.dtype(jnp.bfloat16) in FORMATS


# --------------------------------------------------------------------------- experiment


@pytest.mark.claims
def test_claims_quick(experiment, quick_results):
    """QUICK config, fixed key (deterministic: the margins are in the claims' sources): every
    claim passes except the documented non-reproduction, which must still fail (ratio ~1)."""
    results = quick_results
    checked = runner.check_quick_claims(experiment, results)
    by_name = {c.name: c for c in checked}
    assert by_name["loss_ratio_m_plus_adam_vs_adam_fp8"].value > 0.9
    summary = experiment.summarize(results)
    assert summary["storage round-trip max error (all methods)"] == 0.0
    runner.check_figures(experiment, results, experiment.QUICK,
                         names={"loss", "stagnation", "descent"})


@pytest.mark.claims
def test_figures_are_readable(experiment, quick_results):
    """The QUICK figures (loss, stagnation and descent) pass the readability check: titles, axis
    labels, legends that say what the shaded bands are, y-ranges fitted to the data, tick labels
    that do not overlap and no series hidden under another drawn in the same style (Adam FP8 and
    M+Adam FP8 coincide)."""
    runner.check_quick_figures(experiment, quick_results)
