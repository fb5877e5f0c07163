"""Smoke test of the benchmark harness (tiny sizes; the numbers themselves are not checked)."""

import jax

from experiments.tools import bench, bench_optim


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


def test_modes_run_the_optim_benchmarks_once_per_mode_in_one_file(tmp_path, capsys):
    import argparse
    import json

    args = argparse.Namespace(quick=True, repeats=1, only=["clipped_sgd_vs_optax_chain"],
                              num_params=1000, donate=False, grad_input=False,
                              modes=["plain", "donated-grad-input"], out=str(tmp_path))
    assert bench.main(args) == 0
    got = json.loads((tmp_path / "bench.json").read_text())["modes"]
    assert list(got) == ["plain", "donated-grad-input"]
    assert got["plain"]["optim_mode"] == {"donate": False, "grad_input": False, "XLA_FLAGS":
                                          got["plain"]["optim_mode"]["XLA_FLAGS"]}
    assert got["donated-grad-input"]["optim_mode"]["donate"] is True
    assert got["donated-grad-input"]["optim_mode"]["grad_input"] is True
    for results in got.values():  # only the requested benchmark ran
        assert set(results) & set(bench.TARGETS) == {"clipped_sgd_vs_optax_chain"}
    printed = capsys.readouterr().out
    assert printed.count("clipped_sgd_vs_optax_chain") == 2


def test_modes_reject_unknown_modes_flags_and_other_groups(capsys):
    import argparse

    def run(**kw):
        base = dict(quick=True, repeats=1, only=["optim"], num_params=1000, donate=False,
                    grad_input=False, modes=["plain"], out=None)
        return bench.main(argparse.Namespace(**{**base, **kw}))

    assert run(modes=["inplace"]) == 2
    assert "unknown mode" in capsys.readouterr().out
    assert run(donate=True) == 2
    assert "drop --donate" in capsys.readouterr().out
    assert run(only=["optim", "goma_vs_sgd"]) == 2
    assert "--only optim" in capsys.readouterr().out
    assert run(only=None) == 2


def test_matrix_pytree_sizes():
    tree = bench_optim.matrix_pytree(10_000, jax.random.PRNGKey(0), side=32)
    assert sum(x.size for x in jax.tree.leaves(tree)) == 10_000
    assert tree["w0"].shape == (32, 32)


def test_unknown_benchmark_name_is_rejected():
    import pytest

    with pytest.raises(ValueError, match="unknown benchmark"):
        bench.run_all(quick=True, only=["nope"])


def test_family_benchmarks_run_quick():
    from experiments.tools import bench_families

    out = bench.run_all(quick=True, only=bench_families.GROUPS)
    for name in bench_families.BENCHES:
        assert out[name]["ratio_median"] > 0, name
        assert "meets_target" in out[name], name


# --------------------------------------------------------------------------- gpu-compile

_HLO = """HloModule jit_step, is_scheduled=true

%fused_add (param_0: f32[4,2], param_1: bf16[8]) -> (f32[4,2], bf16[8]) {
  %param_0 = f32[4,2]{1,0} parameter(0)
  ROOT %t = (f32[4,2]{1,0}, bf16[8]{0}) tuple(%param_0, %param_1)
}

ENTRY %main (p.1: f32[4,2], s.1: bf16[8], c.1: s32[]) -> (f32[4,2], bf16[8], f8e4m3fn[16], s32[]) {
  %p.1 = f32[4,2]{1,0} parameter(0)
  %s.1 = bf16[8]{0} parameter(1)
  %c.1 = s32[] parameter(2)
  %loop_fusion = (f32[4,2], bf16[8]{0}, /*index=2*/f8e4m3fn[16]{0}) fusion(%p.1, %s.1), kind=kLoop
  %get-tuple-element.1 = f32[4,2]{1,0} get-tuple-element(%loop_fusion), index=0
  %copy.2 = f32[4,2]{1,0} copy(%get-tuple-element.1)
  %gemm = f32[4,4]{1,0} custom-call(%copy.2, %get-tuple-element.1), custom_call_target="gemm"
  ROOT %tuple.3 = (f32[4,2]{1,0}, s32[]) tuple(%copy.2, %c.1)
}
"""


def test_gpu_compile_reads_launches_and_their_bytes():
    """Launches of a hand-written optimized module and their bytes, counted by hand: the fusion
    reads 32 + 16 bytes and writes 32 + 16 + 16 (a tuple shape with an index comment); the copy
    32 -> 32; the GEMM reads 32 + 32 and writes 64; parameters, tuples and get-tuple-element
    launch nothing."""
    from experiments.tools import gpu_compile

    kernels = gpu_compile.entry_kernels(_HLO)
    assert [(k.name, k.opcode, k.kind) for k in kernels] == [
        ("loop_fusion", "fusion", "kLoop"), ("copy.2", "copy", ""),
        ("gemm", "custom-call", "")]
    assert [(k.bytes_in, k.bytes_out) for k in kernels] == [(48, 64), (32, 32), (64, 64)]
    summary = gpu_compile.summarize(kernels)
    assert summary["kernels"] == 3 and summary["copies"] == 1
    assert summary["traffic_bytes"] == 48 + 64 + 64 + 128
    assert gpu_compile.shape_bytes("(f32[2,3]{1,0}, bf16[4]{0}, f4e2m1fn[2], pred[])") == 35


def test_gpu_compile_operands_shapes_and_unreadable_lines():
    """Operands are read up to the matching parenthesis (printed operand shapes hold
    parentheses), each distinct operand once; what cannot be sized or read raises."""
    import pytest

    from experiments.tools import gpu_compile

    rest = "f32[4]{0} %p, (f32[4]{0}, s32[]) %w, f32[4]{0} %p), kind=kLoop, calls=%f(%x)"
    assert gpu_compile._operands(rest) == ["p", "w"]
    with pytest.raises(ValueError, match="cannot size"):
        gpu_compile.shape_bytes("f8e8m0fnu[4]")
    with pytest.raises(ValueError, match="cannot size"):
        gpu_compile.shape_bytes("f32[<=4]")
    with pytest.raises(ValueError, match="cannot read"):
        gpu_compile.entry_kernels("HloModule m\n\nENTRY %main () -> f32[] {\n"
                                  "  %x = f32[] weird syntax\n}\n")


def test_gpu_compile_reads_an_xla_program():
    """On a program compiled here (the CPU): the elementwise step fuses into one launch that
    reads and writes the 1000-float array once."""
    import jax.numpy as jnp

    from experiments.tools import gpu_compile

    text = jax.jit(lambda x: 2.0 * x + 1.0).lower(jnp.ones(1000)).compile().as_text()
    summary = gpu_compile.summarize(gpu_compile.entry_kernels(text))
    assert summary["kernels"] == 1 and summary["traffic_bytes"] == 8000


def test_gpu_compile_without_the_cuda_plugin_says_what_to_install(capsys):
    import argparse

    import pytest

    from experiments.tools import gpu_compile

    try:
        gpu_compile.gpu_sharding()
    except RuntimeError:
        pass
    else:
        pytest.skip("the CUDA plugin is installed here")
    args = argparse.Namespace(num_params=1000, only=["m_plus_adam_vs_adam"], out=None)
    assert gpu_compile.main(args) == 2
    assert "jax[cuda13]" in capsys.readouterr().out
    args.only = ["nope"]
    assert gpu_compile.main(args) == 2
    assert "unknown benchmark" in capsys.readouterr().out


def _h100_kernels(name, *, num_params, matrix_side=64, donate=False):
    """The launches of benchmark ``name``'s two steps (method, reference) compiled for an H100;
    skips the test without JAX's CUDA plugin (run with JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1)."""
    import pytest

    from experiments.tools import gpu_compile

    try:
        sharding = gpu_compile.gpu_sharding()
    except RuntimeError:
        pytest.skip("JAX's CUDA plugin is not installed")
    pair = next(p for p in bench_optim.pairs(big_pytree=bench._big_pytree,
                                             num_params=num_params, matrix_side=matrix_side)
                if p.name == name)
    return tuple(gpu_compile.entry_kernels(gpu_compile.compile_step(
        tx, pair.tree, sharding, donate=donate, grad_input=False)) for tx in (pair.a, pair.b))


def test_deva_matrix_step_launches_no_more_kernels_than_muon_on_an_h100():
    """DeVA's matrix-form step, compiled for an H100, launches no more kernels than optax's
    Muon on the benchmark's 10M-parameter matrices (190 against 191; with the Newton-Schulz
    coefficients folded in as constants, 256)."""
    deva, muon = _h100_kernels("deva_schatten_vs_muon", num_params=10_000_000,
                               matrix_side=1024)
    assert len(deva) <= len(muon)


def test_delay_wrapper_donated_step_updates_its_stash_in_place_on_an_h100():
    """The donated step of ``one_step_delay(adamw)`` compiled for an H100 copies no
    params-sized buffer (before the stash write read the old stash, XLA:GPU copied every stash
    leaf), so its summed traffic is AdamW's times the exact stash's 8/6."""
    from experiments.tools import gpu_compile

    delay, adamw = _h100_kernels("delay_vs_inner", num_params=1_000_000, donate=True)
    assert [k.name for k in delay if k.opcode == "copy" and k.bytes_out > 1024] == []
    ratio = (gpu_compile.summarize(delay)["traffic_bytes"]
             / gpu_compile.summarize(adamw)["traffic_bytes"])
    assert abs(ratio - 8 / 6) < 1e-3
