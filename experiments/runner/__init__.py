"""The shared experiment runner, one module per concern; import it as ``from experiments import
runner`` and use the names below.

* :mod:`~experiments.runner.loading`: where a paper's experiment, notebook and test live;
  :func:`load` imports an experiment module by slug; :func:`paper` gives a module its
  ``SLUG`` and ``TITLE`` from the catalog.
* :mod:`~experiments.runner.configs`: :func:`with_seeds`, :func:`config_dict`.
* :mod:`~experiments.runner.seeds`: :func:`seed_keys` and :func:`stream_key` (seeds to keys),
  :func:`seeded_program` (jit or shard a seed-vmapped function).
* :mod:`~experiments.runner.loop`: :func:`progress` bars and :func:`checkpointed_loop` (orbax
  checkpoints after every chunk, exact ``--resume``, a corrupt newest chunk skipped),
  :func:`reporting` (what a resume did), :func:`saved_checkpoints`.
* :mod:`~experiments.runner.errors`: :class:`UserError` (one line on stderr, exit status 2)
  and :class:`CheckpointError`.
* :mod:`~experiments.runner.records`: JSON, versions, devices, :func:`provenance`, the QUICK
  records the notebooks leave for the claims tests (:func:`record_claims`,
  :func:`quick_results`), :func:`describe`.
* :mod:`~experiments.runner.claims`: :func:`check_quick_claims` (the per-paper claims test) and
  :func:`claim_values` (the claims' lines of a summary).
* :mod:`~experiments.runner.plotting`: :func:`use_agg`, :func:`band_plot`,
  :func:`finish_axes` (the tail every ``plot`` shares), :func:`save_figures`,
  :func:`check_figure` and :func:`assert_figures_readable` (titles, labels, legends, labelled
  bands, fitted y-ranges, no hidden series), :func:`check_figures` and
  :func:`check_quick_figures` (the per-paper figures test).
"""

from experiments.runner.claims import check_quick_claims, claim_values
from experiments.runner.configs import config_dict, with_seeds
from experiments.runner.errors import CheckpointError, UserError
from experiments.runner.loading import (
    EXPERIMENT_INTERFACE,
    UnknownExperiment,
    available_slugs,
    experiment_module,
    experiment_path,
    load,
    notebook_path,
    paper,
    repo_root,
    test_path,
)
from experiments.runner.loop import (
    CHECKPOINT_CONFIG,
    check_checkpoint_config,
    checkpoint_dir,
    checkpointed_loop,
    progress,
    reporting,
    saved_checkpoints,
)
from experiments.runner.plotting import (
    assert_figures_readable,
    band_plot,
    check_figure,
    check_figures,
    check_quick_figures,
    finish_axes,
    save_figures,
    use_agg,
)
from experiments.runner.records import (
    RECORD_ENV,
    REUSE_ENV,
    describe,
    devices,
    fast_cpu_compile_options,
    provenance,
    quick_results,
    record_claims,
    source_fingerprint,
    to_jsonable,
    versions,
    write_json,
)
from experiments.runner.seeds import (
    STREAMS,
    rbg_key,
    seed_int,
    seed_keys,
    seed_of,
    seed_sequence,
    seeded_program,
    stream_key,
)

__all__ = [
    "CHECKPOINT_CONFIG",
    "CheckpointError",
    "EXPERIMENT_INTERFACE",
    "RECORD_ENV",
    "REUSE_ENV",
    "STREAMS",
    "UnknownExperiment",
    "UserError",
    "assert_figures_readable",
    "available_slugs",
    "band_plot",
    "check_figure",
    "check_figures",
    "check_quick_figures",
    "check_checkpoint_config",
    "check_quick_claims",
    "checkpoint_dir",
    "checkpointed_loop",
    "claim_values",
    "config_dict",
    "describe",
    "devices",
    "experiment_module",
    "experiment_path",
    "fast_cpu_compile_options",
    "finish_axes",
    "load",
    "notebook_path",
    "paper",
    "progress",
    "provenance",
    "quick_results",
    "rbg_key",
    "record_claims",
    "reporting",
    "seed_int",
    "repo_root",
    "save_figures",
    "saved_checkpoints",
    "seed_keys",
    "seed_of",
    "seed_sequence",
    "seeded_program",
    "source_fingerprint",
    "stream_key",
    "test_path",
    "to_jsonable",
    "use_agg",
    "versions",
    "with_seeds",
    "write_json",
]
