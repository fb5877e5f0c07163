"""The shared experiment runner: seeds to keys, programs over seeds, the checkpointed loop."""

import dataclasses
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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
    expected = jax.random.split(jax.random.key(3 * 65536 + 2, impl="unsafe_rbg"), 5)
    np.testing.assert_array_equal(jax.random.key_data(fast), jax.random.key_data(expected))
    # streams are independent families of keys
    assert not np.array_equal(runner.seed_keys(key, 5, stream=1), runner.seed_keys(key, 5))
    # one key per part: the stream key itself
    assert runner.stream_key(key) is key
    np.testing.assert_array_equal(runner.stream_key(key, 4), jax.random.fold_in(key, 4))
    data = lambda k: np.asarray(jax.random.key_data(k))
    np.testing.assert_array_equal(
        data(runner.stream_key(jax.random.PRNGKey(0), 7, fast=True)),
        data(jax.random.key(7, impl="unsafe_rbg")))  # key 0's streams are rbg_key(stream)
    # two keys' fast streams do not coincide (key 1 stream 0 is not key 0 stream 1)
    assert not np.array_equal(data(runner.stream_key(jax.random.PRNGKey(1), 0, fast=True)),
                              data(runner.stream_key(jax.random.PRNGKey(0), 1, fast=True)))


def test_stream_key_is_the_same_traced_inside_jit():
    key = jax.random.PRNGKey(5)
    traced = jax.jit(lambda k: jax.random.key_data(runner.stream_key(k, 3, fast=True)))(key)
    concrete = jax.random.key_data(runner.stream_key(key, 3, fast=True))
    np.testing.assert_array_equal(traced, concrete)
    np.testing.assert_array_equal(concrete, jax.random.key_data(
        jax.random.key(5 * 65536 + 3, impl="unsafe_rbg")))


@pytest.mark.parametrize("kwargs, match", [
    ({"num_seeds": 0}, "num_seeds"), ({"num_seeds": True}, "num_seeds"),
    ({"num_seeds": 2.0}, "num_seeds"), ({"num_seeds": 2, "stream": 1.5}, "stream"),
    ({"num_seeds": 2, "stream": -1, "fast": True}, "stream"),
    ({"num_seeds": 2, "stream": 65536, "fast": True}, "stream"),
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


def test_seed_sequence_is_the_key_words_and_streams():
    key = jax.random.PRNGKey(9)
    words = [int(w) for w in np.asarray(key)]
    expected = np.random.default_rng([*words, 61, 2]).normal(size=4)
    np.testing.assert_array_equal(
        np.random.default_rng(runner.seed_sequence(key, 61, 2)).normal(size=4), expected)
    typed = jax.random.wrap_key_data(key)
    assert runner.seed_sequence(typed).entropy == runner.seed_sequence(key).entropy
    with pytest.raises(ValueError, match="stream"):
        runner.seed_sequence(key, 1.5)


def test_checkpointed_loop_refuses_checkpoints_past_its_chunks(tmp_path):
    keys = runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    runner.checkpointed_loop(_chunk_fn(), state0, 5, out_dir=tmp_path, cfg=_Cfg(), keys=keys)
    with pytest.raises(ValueError, match="past the 3 chunks"):
        runner.checkpointed_loop(_chunk_fn(), state0, 3, out_dir=tmp_path, cfg=_Cfg(), keys=keys,
                                 resume=True)


def test_checkpoints_of_another_layout_are_refused(tmp_path):
    import json

    keys = runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    runner.checkpointed_loop(_chunk_fn(), state0, 2, out_dir=tmp_path, cfg=_Cfg(), keys=keys)
    path = tmp_path / "checkpoints" / runner.CHECKPOINT_CONFIG
    record = json.loads(path.read_text())
    del record["layout"]  # as written before checkpoints were numbered by chunk
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="layout"):
        runner.checkpointed_loop(_chunk_fn(), state0, 3, out_dir=tmp_path, cfg=_Cfg(), keys=keys,
                                 resume=True)


def _empty_data_files(step_dir):
    """Truncates every array data file of one saved chunk (a disk error, a partial copy)."""
    files = [p for p in Path(step_dir).rglob("*") if p.is_file() and p.parent.name == "d"
             and p.parent.parent.name == "default"]
    assert files
    for p in files:
        p.write_bytes(b"")


def test_resume_falls_back_past_a_corrupt_newest_chunk(tmp_path):
    cfg, keys = _Cfg(), runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    run_chunk = _chunk_fn()
    full = runner.checkpointed_loop(run_chunk, state0, 6)
    runner.checkpointed_loop(run_chunk, state0, 4, out_dir=tmp_path, name="m", cfg=cfg, keys=keys)
    _empty_data_files(tmp_path / "checkpoints" / "m" / "4")
    reports = []
    with runner.reporting(lambda kind, msg: reports.append((kind, msg))):
        resumed = runner.checkpointed_loop(run_chunk, state0, 6, out_dir=tmp_path, name="m",
                                           cfg=cfg, keys=keys, resume=True)
    np.testing.assert_array_equal(resumed["x"], full["x"])  # bitwise: chunk 3 restored, 4-6 run
    assert int(resumed["count"]) == 6
    assert [k for k, _ in reports] == ["fallback", "resumed"]
    assert all("\n" not in m for _, m in reports)
    assert "chunk 4" in reports[0][1] and "falling back to chunk 3" in reports[0][1]
    assert "resumed loop 'm' at chunk 3 of 6" in reports[1][1]
    # without a reporter the fallback is a warning
    runner.checkpointed_loop(run_chunk, state0, 4, out_dir=tmp_path, name="m", cfg=cfg, keys=keys)
    _empty_data_files(tmp_path / "checkpoints" / "m" / "4")
    with pytest.warns(RuntimeWarning, match="partial or corrupt"):
        runner.checkpointed_loop(run_chunk, state0, 5, out_dir=tmp_path, name="m", cfg=cfg,
                                 keys=keys, resume=True)


def test_resume_with_no_valid_chunk_or_record_is_a_clear_error(tmp_path):
    cfg, keys = _Cfg(), runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    runner.checkpointed_loop(_chunk_fn(), state0, 4, out_dir=tmp_path, name="m", cfg=cfg,
                             keys=keys)
    for step in ("3", "4"):
        _empty_data_files(tmp_path / "checkpoints" / "m" / step)
    with pytest.raises(runner.CheckpointError, match="no valid checkpoint.*--overwrite"):
        runner.checkpointed_loop(_chunk_fn(), state0, 6, out_dir=tmp_path, name="m", cfg=cfg,
                                 keys=keys, resume=True)
    (tmp_path / "checkpoints" / runner.CHECKPOINT_CONFIG).write_text('{"config": ')
    with pytest.raises(runner.CheckpointError, match="config.json is unreadable"):
        runner.checkpointed_loop(_chunk_fn(), state0, 6, out_dir=tmp_path, name="m", cfg=cfg,
                                 keys=keys, resume=True)


def test_resume_reports_that_nothing_was_saved(tmp_path):
    reports = []
    with runner.reporting(lambda kind, msg: reports.append((kind, msg))):
        runner.checkpointed_loop(_chunk_fn(), {"x": jnp.ones(3), "count": jnp.int32(0)}, 2,
                                 out_dir=tmp_path, name="m", cfg=_Cfg(),
                                 keys=runner.seed_keys(jax.random.PRNGKey(0), 4), resume=True)
    assert [k for k, _ in reports] == ["fresh"] and "nothing to resume" in reports[0][1]


_KILLED_LOOP = textwrap.dedent("""
    import dataclasses, sys
    import jax, jax.numpy as jnp
    from experiments import runner
    from jaxopt_icml import checkpoint

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        seeds: int = 4
        steps: int = 6

    save = checkpoint.save
    def announced_save(directory, step, pytree, **kw):
        print(f"saving {step}", flush=True)
        save(directory, step, pytree, **kw)
    checkpoint.save = announced_save

    @jax.jit
    def run_chunk(state, c):
        noise = jax.random.normal(jax.random.fold_in(jax.random.PRNGKey(1), c), (3,))
        return {"x": 0.5 * state["x"] + noise, "count": state["count"] + 1}

    runner.checkpointed_loop(run_chunk, {"x": jnp.ones(3), "count": jnp.int32(0)}, 10000,
                             out_dir=sys.argv[1], name="m", cfg=Cfg(),
                             keys=runner.seed_keys(jax.random.PRNGKey(0), 4))
""")


def test_a_run_killed_while_saving_resumes_from_the_last_complete_chunk(tmp_path):
    import signal

    script = tmp_path / "loop.py"
    script.write_text(_KILLED_LOOP)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "JAX_PLATFORMS": "cpu"}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "run")], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    target = random.Random().randint(2, 4)
    try:
        for line in proc.stdout:
            if line.strip() == f"saving {target}":
                break
        time.sleep(random.Random().uniform(0.0, 0.01))
        os.kill(proc.pid, signal.SIGKILL)  # a save is under way
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    cfg, keys = _Cfg(), runner.seed_keys(jax.random.PRNGKey(0), 4)
    state0 = {"x": jnp.ones(3), "count": jnp.int32(0)}
    reports = []
    with runner.reporting(lambda kind, msg: reports.append((kind, msg))):
        resumed = runner.checkpointed_loop(_chunk_fn(), state0, 12, out_dir=tmp_path / "run",
                                           name="m", cfg=cfg, keys=keys, resume=True)
    full = runner.checkpointed_loop(_chunk_fn(), state0, 12)
    np.testing.assert_array_equal(resumed["x"], full["x"])
    assert int(resumed["count"]) == 12
    kinds = [k for k, _ in reports]
    assert kinds[-1] == "resumed", reports
    step = int(reports[-1][1].split(" at chunk ")[1].split()[0])
    assert step in (target - 1, target)  # the last complete chunk


def _figure(**kw):
    """A one-axes figure (Agg) with two log-log lines and a labelled band; keyword overrides
    spoil one readability property at a time."""
    runner.use_agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    k = np.arange(1, 101)
    y = np.stack([k**-1.0, 2 * k**-1.0, 3 * k**-1.0])
    runner.band_plot(ax, k, y, label="method A")
    ax.plot(k, kw.get("second", k**-2.0), kw.get("style", "-"), label="method B")
    runner.finish_axes(ax, xlabel="iteration k", ylabel="error", title=kw.get("title", "t"),
                       legend=kw.get("legend", 8))
    return fig, ax


def test_band_plot_labels_its_band_in_one_legend_entry():
    fig, ax = _figure()
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["method A (median, 10-90% of 3 seeds)", "method B"]
    assert runner.plotting.check_figure(fig) == []
    import matplotlib.pyplot as plt

    plt.close(fig)


def _problems(fig):
    import matplotlib.pyplot as plt

    out = runner.plotting.check_figure(fig)
    plt.close(fig)
    return out


def test_check_figure_finds_each_readability_problem():
    import matplotlib.pyplot as plt

    assert any("no title" in p for p in _problems(_figure(title="")[0]))
    assert any("no legend" in p for p in _problems(_figure(legend=None)[0]))
    fig, ax = _figure()
    ax.set_xlabel("")
    assert any("no x label" in p for p in _problems(fig))
    fig, ax = _figure()  # the error_feedback symptom: the y-axis down to 1e-22
    ax.set_ylim(1e-22, None)
    assert any("far below the data" in p for p in _problems(fig))
    fig, ax = _figure()  # an unlabelled shaded band
    ax.fill_between([1, 100], [1e-3, 1e-3], [1e-2, 1e-2])
    assert any("band has no label" in p for p in _problems(fig))
    k = np.arange(1, 101)  # a series drawn exactly over another in the same style
    assert any("on top of each other" in p for p in _problems(_figure(second=2 * k**-1.0)[0]))
    # ... which a different line style makes distinguishable
    assert not _problems(_figure(second=2 * k**-1.0, style="--")[0])
    fig, ax = plt.subplots(figsize=(2, 2))  # linear axis mostly empty; crowded tick labels
    ax.plot([0, 1], [0.0, 0.1])
    ax.set_ylim(-5, 5)
    ax.set_xticks(np.linspace(0, 1, 30), [f"{v:.4f}" for v in np.linspace(0, 1, 30)])
    runner.finish_axes(ax, xlabel="x", ylabel="y", title="t", legend=None)
    probs = _problems(fig)
    assert any("fills under 25%" in p for p in probs)
    assert any("overlapping x tick labels" in p for p in probs)


def test_assert_figures_readable_names_figure_and_axes():
    good, _ = _figure()
    bad, _ = _figure(title="")
    with pytest.raises(AssertionError, match=r"bad: axes 0 .*no title"):
        runner.plotting.assert_figures_readable({"good": good, "bad": bad})
    runner.plotting.assert_figures_readable({"good": good})
    import matplotlib.pyplot as plt

    plt.close(good)
    plt.close(bad)
