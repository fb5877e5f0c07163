"""The shared experiment runner: seeds to keys, programs over seeds, the checkpointed loop."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import runner
from jaxopt_icml import theory


@dataclasses.dataclass(frozen=True)
class _Cfg:
    seeds: int = 4
    steps: int = 6


def test_seed_keys_are_the_documented_streams():
    key = jax.random.PRNGKey(3)
    np.testing.assert_array_equal(runner.seed_keys(key, 5), jax.random.split(key, 5))
    np.testing.assert_array_equal(runner.seed_keys(key, 5, stream=7),
                                  jax.random.split(jax.random.fold_in(key, 7), 5))
    fast = runner.seed_keys(key, 5, stream=2, fast=True)
    expected = jax.random.split(jax.random.key(3 + 2, impl="unsafe_rbg"), 5)
    np.testing.assert_array_equal(jax.random.key_data(fast), jax.random.key_data(expected))
    # streams are independent families of keys
    assert not np.array_equal(runner.seed_keys(key, 5, stream=1), runner.seed_keys(key, 5))


@pytest.mark.parametrize("kwargs, match", [
    ({"num_seeds": 0}, "num_seeds"), ({"num_seeds": True}, "num_seeds"),
    ({"num_seeds": 2.0}, "num_seeds"), ({"num_seeds": 2, "stream": 1.5}, "stream"),
])
def test_seed_keys_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        runner.seed_keys(jax.random.PRNGKey(0), **kwargs)


def test_seeded_program_jits_or_shards_the_same_function():
    def per_seed(key, scale):
        return scale * jax.random.normal(key, (3,))

    batched = jax.vmap(per_seed, in_axes=(0, None))
    keys = runner.seed_keys(jax.random.PRNGKey(0), jax.local_device_count())
    plain = runner.seeded_program(batched, (0, None))(keys, 2.0)
    np.testing.assert_allclose(plain, batched(keys, 2.0), rtol=1e-6)
    sharded = runner.seeded_program(batched, (0, None), shard=True)(keys, 2.0)
    np.testing.assert_allclose(sharded, plain, rtol=1e-6)


def _chunk_fn():
    @jax.jit
    def run_chunk(state, c):
        noise = jax.random.normal(jax.random.fold_in(jax.random.PRNGKey(1), c), (3,))
        return {"x": 0.5 * state["x"] + noise, "count": state["count"] + 1}

    return run_chunk


def test_checkpointed_loop_resumes_exactly(tmp_path):
    cfg, keys = _Cfg(), runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    run_chunk = _chunk_fn()
    full = runner.checkpointed_loop(run_chunk, state0, 6)
    out = tmp_path / "run"
    part = runner.checkpointed_loop(run_chunk, state0, 4, out_dir=out, name="m 1", cfg=cfg,
                                    keys=keys)
    assert sorted(p.name for p in (out / "checkpoints" / "m_1").iterdir()
                  if p.name.isdigit()) == ["3", "4"]  # orbax keeps the last two
    assert int(part["count"]) == 4
    resumed = runner.checkpointed_loop(run_chunk, state0, 6, out_dir=out, name="m 1", cfg=cfg,
                                       keys=keys, resume=True)
    np.testing.assert_array_equal(resumed["x"], full["x"])
    assert int(resumed["count"]) == 6
    # without resume the old checkpoints go first: a fresh run starts from chunk 0
    again = runner.checkpointed_loop(run_chunk, state0, 2, out_dir=out, name="m 1", cfg=cfg,
                                     keys=keys)
    assert int(again["count"]) == 2


def test_checkpointed_loop_refuses_another_configuration(tmp_path):
    keys = runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    run_chunk = _chunk_fn()
    runner.checkpointed_loop(run_chunk, state0, 2, out_dir=tmp_path, cfg=_Cfg(), keys=keys)
    with pytest.raises(ValueError, match="steps: 6 -> 7"):
        runner.checkpointed_loop(run_chunk, state0, 3, out_dir=tmp_path, cfg=_Cfg(steps=7),
                                 keys=keys, resume=True)
    with pytest.raises(ValueError, match="seed_keys"):
        runner.checkpointed_loop(run_chunk, state0, 3, out_dir=tmp_path, cfg=_Cfg(),
                                 keys=runner.seed_keys(jax.random.PRNGKey(1), 4), resume=True)
    with pytest.raises(ValueError, match="cfg and keys"):
        runner.checkpointed_loop(run_chunk, state0, 3, out_dir=tmp_path)
    with pytest.raises(ValueError, match="num_chunks"):
        runner.checkpointed_loop(run_chunk, state0, -1)


def test_claim_values_are_the_checked_values():
    claims = (theory.Claim("a", lambda r: r["a"], "<=", 1.0, "s"),
              theory.Claim("b", lambda r: 2 * r["a"], ">", 0.0, "s"))
    assert runner.claim_values(claims, {"a": 0.25}) == {"claim a": 0.25, "claim b": 0.5}


def test_paper_is_the_slug_and_the_catalog_title():
    from jaxopt_icml import catalog

    assert runner.paper("experiments.minimax.goma") == ("goma", catalog.get("goma").title)
    for bad in ("experiments.optim.goma", "experiments.minimax.nope", "goma", "tests.x.goma"):
        with pytest.raises(ValueError, match="experiments.<family>.<slug>"):
            runner.paper(bad)
    for paper in catalog.implemented():  # every experiment takes both from the catalog
        exp = runner.load(paper.slug)
        assert (exp.SLUG, exp.TITLE) == (paper.slug, paper.title)


def test_finish_axes_sets_what_is_given():
    runner.use_agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 10], [1, 100], label="line")
    assert runner.finish_axes(ax, xlabel="k", ylabel="err", title="t", xscale="log",
                              legend=7) is fig
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title(), ax.get_xscale()) == (
        "k", "err", "t", "log")
    assert ax.get_yscale() == "linear" and ax.get_legend().get_texts()[0].get_fontsize() == 7
    fig2, ax2 = plt.subplots()
    runner.finish_axes(ax2, legend=None)
    assert ax2.get_legend() is None and ax2.get_xlabel() == ""
    plt.close(fig)
    plt.close(fig2)
