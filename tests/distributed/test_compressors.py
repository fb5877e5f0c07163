"""Compressors (jaxopt_icml.distributed.compressors): exact top-k / rotation / sign contraction,
Monte Carlo unbiasedness and variance constants, bit counts, dtypes and errors."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_icml.distributed import compressors as C

D = 16


def _vec(seed=0, d=D, dtype=jnp.float32):
    return jax.random.normal(jax.random.key(seed), (d,), dtype)


def test_top_k_exact_against_numpy():
    v = _vec()
    out, bits = C.top_k(4).compress(v, jax.random.key(0))
    ref = np.zeros(D)
    idx = np.argsort(-np.abs(np.asarray(v)))[:4]
    ref[idx] = np.asarray(v)[idx]
    np.testing.assert_array_equal(np.asarray(out), ref.astype(np.float32))
    assert float(bits) == 4 * (32 + 4)  # ceil(log2 16) = 4
    # contraction: exactly the d - k smallest squares, <= (1 - k/d) ||v||^2
    err = float(jnp.sum((out - v) ** 2))
    assert err == pytest.approx(np.sort(np.asarray(v) ** 2)[: D - 4].sum(), rel=1e-6)
    assert err <= (1 - C.top_k(4).alpha(D)) * float(jnp.sum(v**2))


def test_top_k_bound_is_attained_by_flat_vectors():
    v = jnp.ones(D)
    out, _ = C.top_k(3).compress(v, jax.random.key(0))
    assert float(jnp.sum((out - v) ** 2)) == pytest.approx((1 - 3 / D) * D)


def _mc(comp, v, n=6000):
    keys = jax.random.split(jax.random.key(1), n)
    outs = jax.jit(jax.vmap(lambda k: comp.compress(v, k)[0]))(keys)
    return np.asarray(outs, np.float64)


@pytest.mark.parametrize("comp", [C.rand_k(4, scaled=True), C.random_dithering(1),
                                  C.random_dithering(4), C.natural()],
                         ids=lambda c: c.name)
def test_unbiased_compressors_mean_and_variance(comp):
    v = np.asarray(_vec(2), np.float64)
    outs = _mc(comp, jnp.asarray(v, jnp.float32))
    n = outs.shape[0]
    mean = outs.mean(0)
    se = outs.std(0) / math.sqrt(n)
    assert np.all(np.abs(mean - v) <= 5 * se + 1e-6), "E C(v) != v"
    var = np.mean(np.sum((outs - v) ** 2, 1)) / np.sum(v**2)
    assert comp.unbiased and comp.alpha is None
    assert var <= comp.omega(D) * 1.05


def test_scaled_rand_k_variance_is_exact():
    v = np.asarray(_vec(3), np.float64)
    outs = _mc(C.rand_k(4, scaled=True), jnp.asarray(v, jnp.float32))
    var = np.mean(np.sum((outs - v) ** 2, 1)) / np.sum(v**2)
    assert var == pytest.approx(D / 4 - 1, rel=0.05)


def test_rand_k_biased_contraction_in_expectation():
    v = np.asarray(_vec(4), np.float64)
    comp = C.rand_k(4)
    outs = _mc(comp, jnp.asarray(v, jnp.float32))
    err = np.mean(np.sum((outs - v) ** 2, 1)) / np.sum(v**2)
    assert err == pytest.approx(1 - comp.alpha(D), rel=0.04)
    assert np.count_nonzero(outs[0]) == 4


def test_natural_outputs_are_signed_powers_of_two():
    v = _vec(5)
    out, bits = C.natural().compress(v, jax.random.key(0))
    out = np.asarray(out)
    mant, _ = np.frexp(np.abs(out))
    assert np.all(mant == 0.5) and np.all(np.sign(out) == np.sign(np.asarray(v)))
    assert float(bits) == 9 * D


def test_dithering_levels_and_bits():
    v = _vec(6)
    out, bits = C.random_dithering(2).compress(v, jax.random.key(0))
    levels = np.abs(np.asarray(out)) / float(jnp.linalg.norm(v)) * 2
    np.testing.assert_allclose(levels, np.round(levels), atol=1e-5)
    assert float(bits) == 32 + D * (1 + 2)


def test_rotation_attains_the_bound_and_scaled_sign():
    v = _vec(7)
    for delta, theta in ((0.3, 0.7), (0.9, -2.0)):
        out, _ = C.rotation(delta, theta).compress(v, jax.random.key(0))
        assert float(jnp.sum((out - v) ** 2)) == pytest.approx((1 - delta) * float(
            jnp.sum(v**2)), rel=1e-5)
    out, bits = C.scaled_sign().compress(v, jax.random.key(0))
    a = np.asarray(v, np.float64)
    assert float(jnp.sum((out - v) ** 2)) == pytest.approx(
        np.sum(a**2) - np.sum(np.abs(a)) ** 2 / D, rel=1e-4)
    assert float(bits) == 32 + D


def test_as_contractive():
    comp = C.as_contractive(C.rand_k(4, scaled=True))
    v = np.asarray(_vec(8), np.float64)
    outs = _mc(comp, jnp.asarray(v, jnp.float32))
    err = np.mean(np.sum((outs - v) ** 2, 1)) / np.sum(v**2)
    assert err <= (1 - comp.alpha(D)) * 1.05 and comp.alpha(D) == pytest.approx(4 / D)


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32])
def test_dtypes_kept(dtype):
    v = _vec(9, dtype=dtype)
    for comp in (C.top_k(3), C.rand_k(3, scaled=True), C.random_dithering(2), C.natural(),
                 C.scaled_sign(), C.identity(), C.rotation(0.5, 1.0)):
        out, bits = jax.eval_shape(comp.compress, v, jax.random.key(0))
        assert out.dtype == dtype and out.shape == v.shape and bits.dtype == jnp.float32


@pytest.mark.parametrize("call,name", [
    (lambda: C.top_k(0), "k"), (lambda: C.top_k(2.0), "k"), (lambda: C.rand_k(-1), "k"),
    (lambda: C.rand_k(2, scaled=1), "scaled"), (lambda: C.random_dithering(0), "levels"),
    (lambda: C.rotation(0.0, 1.0), "delta"), (lambda: C.rotation(1.5, 1.0), "delta"),
    (lambda: C.rotation(0.5, float("nan")), "theta"),
    (lambda: C.as_contractive(C.top_k(2)), "compressor"),
    (lambda: C.top_k(20).compress(jnp.ones(4), None), "k"),
    (lambda: C.top_k(2).compress(jnp.ones((2, 2)), None), "1-D"),
])
def test_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()
