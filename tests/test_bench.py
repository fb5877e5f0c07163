"""Smoke test of the benchmark harness (tiny sizes; the numbers themselves are not checked)."""

import jax

from experiments import bench, bench_optim


def test_optim_benchmarks_run_and_report_every_target():
    out = bench_optim.run_benchmarks(big_pytree=bench._big_pytree,
                                     ratio=bench.interleaved_ratio, num_params=20_000,
                                     matrix_side=64, repeats=1, inner=1)
    assert set(out) == set(bench_optim.TARGETS)
    for name, row in out.items():
        assert row["ratio_median"] > 0, name
        assert row["num_params"] >= 20_000 - 1, name


def test_stepper_modes_take_one_step_of_the_transformation():
    """Each mode (plain / donated, gradient formed in the step / passed in) advances the params
    by exactly one update of ``tx`` on the gradient 0.01 p at the current params."""
    import jax.numpy as jnp
    import numpy as np
    import optax

    p0 = {"a": jnp.linspace(-1.0, 2.0, 7), "b": jnp.ones((2, 3))}
    tx = optax.adam(0.1)
    want = optax.apply_updates(p0, tx.update(jax.tree.map(lambda x: 0.01 * x, p0),
                                             tx.init(p0), p0)[0])
    for donate in (False, True):
        for grad_input in (False, True):
            got = bench_optim.stepper(tx, p0, donate=donate, grad_input=grad_input)()
            for k in p0:
                np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
    assert float(p0["a"][0]) == -1.0  # the caller's params are not donated


def test_matrix_pytree_sizes():
    tree = bench_optim.matrix_pytree(10_000, jax.random.PRNGKey(0), side=32)
    assert sum(x.size for x in jax.tree.leaves(tree)) == 10_000
    assert tree["w0"].shape == (32, 32)


def test_unknown_benchmark_name_is_rejected():
    import pytest

    with pytest.raises(ValueError, match="unknown benchmark"):
        bench.run_all(quick=True, only=["nope"])


def test_family_benchmarks_run_quick():
    from experiments import bench_families

    out = bench.run_all(quick=True, only=bench_families.GROUPS)
    for name in bench_families.BENCHES:
        assert out[name]["ratio_median"] > 0, name
        assert "meets_target" in out[name], name
