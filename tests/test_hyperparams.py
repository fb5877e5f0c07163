"""Tests of jaxopt_icml.hyperparams (shared validation and compute dtypes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxopt_icml.hyperparams import check_float, compute_dtype, concrete_float

# --------------------------------------------------------------------------- compute_dtype


@pytest.mark.parametrize("dtype,expected", [
    (jnp.bfloat16, jnp.float32), (jnp.float16, jnp.float32), (jnp.float32, jnp.float32),
    (jnp.int32, jnp.int32), (jnp.complex64, jnp.complex64), (np.float16, jnp.float32),
    ("bfloat16", jnp.float32), (jnp.float8_e4m3fn, jnp.float32),
])
def test_compute_dtype(dtype, expected):
    assert compute_dtype(dtype) == jnp.dtype(expected)


def test_compute_dtype_float64():
    assert compute_dtype(np.float64) == jnp.dtype(np.float64)


# --------------------------------------------------------------------------- concrete_float


def test_concrete_float_values():
    assert concrete_float(0.5) == 0.5
    assert concrete_float(2) == 2.0
    assert concrete_float(jnp.asarray(0.25, jnp.bfloat16)) == 0.25
    assert concrete_float(np.float32(1.5)) == 1.5
    assert np.isnan(concrete_float(float("nan")))


@pytest.mark.parametrize("value", [None, "0.5", optax.constant_schedule(0.1), lambda t: t,
                                   jnp.ones(3), object()])
def test_concrete_float_none(value):
    assert concrete_float(value) is None


def test_concrete_float_tracer_is_none():
    seen = []
    jax.jit(lambda x: seen.append(concrete_float(x)) or x)(1.0)
    jax.vmap(lambda x: seen.append(concrete_float(x)) or x)(jnp.ones(2))
    assert seen == [None, None]


# --------------------------------------------------------------------------- check_float


@pytest.mark.parametrize("value", [0.1, 1, 1e9, np.float32(0.3), jnp.asarray(0.2),
                                   jnp.asarray(2, jnp.int32), optax.linear_schedule(0.1, 0, 10)])
def test_check_float_accepts_and_returns_value(value):
    assert check_float("lr", value) is value


@pytest.mark.parametrize("value,kwargs,shown", [
    (0.0, {}, "(0, inf)"),
    (-1.0, {"strict": False}, "[0, inf)"),
    (float("nan"), {}, "(0, inf)"),
    (float("inf"), {}, "(0, inf)"),
    (1.5, {"strict": False, "high": 1.0}, "[0, 1]"),
    (0.5, {"low": 0.5}, "(0.5, inf)"),
    (True, {}, "(0, inf)"),
    ("0.1", {}, "(0, inf)"),
    (None, {}, "(0, inf)"),
    ([0.1], {}, "(0, inf)"),
])
def test_check_float_rejects_naming_argument_value_range(value, kwargs, shown):
    with pytest.raises(ValueError) as err:
        check_float("my_arg", value, **kwargs)
    msg = str(err.value)
    assert msg.startswith("my_arg must be")
    assert shown in msg
    assert repr(value) in msg


def test_check_float_bounds_are_inclusive_unless_strict():
    check_float("x", 0.0, strict=False)
    check_float("x", 1.0, strict=False, high=1.0)
    check_float("x", -2.0, low=-3.0)
    with pytest.raises(ValueError, match=r"\(-3, inf\)"):
        check_float("x", -3.0, low=-3.0)


def test_check_float_none_and_schedules_by_option():
    assert check_float("inner_lr", None, allow_none=True) is None
    with pytest.raises(ValueError, match="eps .*schedules are not supported"):
        check_float("eps", lambda t: 1e-8, allow_schedule=False)
    with pytest.raises(ValueError, match="eps must be a scalar"):
        check_float("eps", jnp.ones(2))


def test_check_float_traced_values_pass():
    """Tracers (jit, vmap, inject_hyperparams) are only checked when concrete."""
    jax.jit(lambda x: check_float("lr", x))(-1.0)
    jax.vmap(lambda x: check_float("lr", x))(jnp.asarray([-1.0, 1.0]))


def test_check_float_under_inject_hyperparams():
    def make(learning_rate):
        check_float("learning_rate", learning_rate)
        return optax.sgd(learning_rate)

    opt = optax.inject_hyperparams(make)(learning_rate=0.1)
    state = opt.init(jnp.zeros(2))
    jax.jit(opt.update)(jnp.ones(2), state)
    with pytest.raises(ValueError, match="learning_rate"):
        optax.inject_hyperparams(make)(learning_rate=-0.1).init(jnp.zeros(2))


def test_unit_interval_static_int_bool_choice_and_resolve():
    import numpy as np

    from jaxopt_icml.hyperparams import (
        check_bool,
        check_choice,
        check_static_int,
        check_unit_interval,
        resolve,
    )

    assert check_unit_interval("b1", 0.0) == 0.0 and check_unit_interval("b1", 0.999) == 0.999
    for bad in (1.0, -0.1, float("nan"), "0.5", True, lambda c: 0.5):
        with pytest.raises(ValueError, match="b1"):
            check_unit_interval("b1", bad)
    jax.jit(lambda b: check_unit_interval("b1", b) * 1.0)(0.5)  # tracers pass
    assert check_static_int("k", 3) == 3 and check_static_int("k", np.int32(2)) == 2
    assert check_static_int("k", 0, low=0) == 0
    for bad in (0, 50.0, True, "3", None, np.zeros(2, np.int32)):
        with pytest.raises(ValueError, match="k must be a static int"):
            check_static_int("k", bad)
    with pytest.raises(ValueError, match="static_args"):
        jax.jit(lambda k: check_static_int("k", k))(3)
    assert check_bool("flag", False) is False
    for bad in (0, 1, "yes", None):
        with pytest.raises(ValueError, match="flag must be a bool"):
            check_bool("flag", bad)
    assert check_choice("form", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"form must be one of \('a', 'b'\)"):
        check_choice("form", "c", ("a", "b"))
    count = jnp.asarray(4, jnp.int32)
    assert resolve(lambda c: 0.5 * c, count, jnp.float32) == 2.0
    assert resolve(0.25, count, jnp.bfloat16).dtype == jnp.bfloat16


def test_check_static_ints_names_every_traced_int_at_once():
    from jaxopt_icml.hyperparams import check_static_ints

    assert check_static_ints("tx", a=(None, 5), b=(7, 1)) == (5, 7)

    @jax.jit
    def traced(a, b):
        check_static_ints("tx", a=(a, 5), b=(b, 1), c=(None, 2))

    with pytest.raises(ValueError, match=r"tx: a, b must be static ints .*"
                                         r"static_args=\('a', 'b'\).*static ints of tx are "
                                         r"a, b, c"):
        traced(3, 4)
    with pytest.raises(ValueError, match="b must be a static int >= 1"):
        check_static_ints("tx", b=(0, 1))


def test_check_float_dtype():
    from jaxopt_icml.hyperparams import check_float_dtype

    assert check_float_dtype("mu_dtype", None) is None
    assert check_float_dtype("mu_dtype", jnp.bfloat16) == jnp.dtype(jnp.bfloat16)
    assert check_float_dtype("mu_dtype", "float32") == jnp.dtype(jnp.float32)
    with pytest.raises(ValueError, match=r"got an array .*static_args=\('mu_dtype',\)"):
        check_float_dtype("mu_dtype", jnp.asarray(1.0, jnp.bfloat16))  # inject_hyperparams' doing
    with pytest.raises(ValueError, match="floating dtype"):
        check_float_dtype("mu_dtype", jnp.int32)
    with pytest.raises(ValueError, match="must be a floating dtype"):
        check_float_dtype("mu_dtype", None, allow_none=False)
