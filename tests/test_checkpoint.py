"""checkpoint: orbax save/restore against an abstract target keeps types, dtypes and values."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxopt_icml import base, checkpoint


class RunState(NamedTuple):
    x: dict
    count: jax.Array
    key: jax.Array


def _state():
    params = {"w": jnp.arange(6.0).reshape(2, 3), "h": jnp.ones(4, jnp.bfloat16)}
    opt = optax.adam(1e-2)
    return params, opt, {
        "opt": opt.init(params),
        "run": RunState(params, jnp.int32(7), jax.random.key(3)),
        "legacy_key": jax.random.PRNGKey(5),
    }


def _assert_same(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        assert type(x) is type(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x, np.float32), np.asarray(y, np.float32))


def test_round_trip_against_eval_shape_target(tmp_path):
    params, opt, state = _state()
    grads = jax.tree.map(jnp.ones_like, params)
    _, state["opt"] = opt.update(grads, state["opt"], params)
    checkpoint.save(tmp_path, 1, state)
    target = jax.eval_shape(lambda: _state()[2])
    restored = checkpoint.restore(tmp_path, target)
    _assert_same(restored, state)
    assert isinstance(restored["run"], RunState)
    assert isinstance(restored["opt"][0], optax.ScaleByAdamState)
    # the next update is bitwise identical
    a = opt.update(grads, restored["opt"], params)
    b = opt.update(grads, state["opt"], params)
    _assert_same(a, b)


def test_restore_against_concrete_target_and_algorithm_state(tmp_path):
    alg = base.from_transformation(optax.sgd(0.1))
    state = alg.init(jnp.arange(3.0), jax.random.key(0))
    checkpoint.save(tmp_path / "run", 0, state)
    restored = checkpoint.restore(tmp_path / "run", state)
    _assert_same(restored, state)
    assert isinstance(restored, base.TransformationState)


def test_latest_step_and_max_to_keep(tmp_path):
    assert checkpoint.latest_step(tmp_path / "missing") is None
    for step in (1, 2, 3):
        checkpoint.save(tmp_path, step, {"v": jnp.full((2,), float(step))})
    assert checkpoint.latest_step(tmp_path) == 3
    target = {"v": jax.ShapeDtypeStruct((2,), jnp.float32)}
    np.testing.assert_array_equal(checkpoint.restore(tmp_path, target)["v"], [3.0, 3.0])
    np.testing.assert_array_equal(checkpoint.restore(tmp_path, target, step=2)["v"], [2.0, 2.0])
    with pytest.raises(Exception):  # noqa: B017 - step 1 was pruned (max_to_keep=2)
        checkpoint.restore(tmp_path, target, step=1)


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        checkpoint.restore(tmp_path / "nothing", {"v": jnp.zeros(2)})
    for bad in (-1, 1.0, True, None):
        with pytest.raises(ValueError, match="step"):
            checkpoint.save(tmp_path, bad, {"v": jnp.zeros(2)})


def _empty_data_files(step_dir):
    """Truncates every array data file of one saved step (as a disk error or a partial copy)."""
    files = [p for p in step_dir.rglob("*") if p.is_file() and p.parent.name == "d"
             and p.parent.parent.name == "default"]
    assert files
    for p in files:
        p.write_bytes(b"")


def test_restore_newest_valid_skips_a_corrupt_newest_step(tmp_path):
    for step in (1, 2, 3):
        checkpoint.save(tmp_path, step, {"v": jnp.full((2,), float(step))})
    _empty_data_files(tmp_path / "3")
    target = {"v": jax.ShapeDtypeStruct((2,), jnp.float32)}
    step, state, skipped = checkpoint.restore_newest_valid(tmp_path, target, remove_invalid=True)
    assert step == 2 and [s for s, _ in skipped] == [3] and "\n" not in skipped[0][1]
    np.testing.assert_array_equal(state["v"], [2.0, 2.0])
    assert checkpoint.steps(tmp_path) == [2]  # the corrupt step is gone, so it can be redone
    _empty_data_files(tmp_path / "2")
    with pytest.raises(checkpoint.CorruptCheckpoint, match="no valid checkpoint"):
        checkpoint.restore_newest_valid(tmp_path, target)
    assert checkpoint.restore_newest_valid(tmp_path / "none", target) == (None, None, [])
