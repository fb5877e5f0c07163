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
