"""The 71 papers: slug -> family, public symbols, experiment, notebook, test, and derived status.

The rows come from the packaged ``catalog.json`` (id, slug, title, family). Two things are added
here:

* :data:`SYMBOLS`, the one hand-maintained mapping: the public names a paper's family module
  exports. Only implemented papers have an entry; edit it when a paper lands or a name changes.
* the canonical locations of everything else a paper has (family module, experiment module,
  notebook, test file), derived from the slug and family.

Status is never typed in: :func:`status` looks at the code, the repository files and (on request)
the experiment's claims, and reports what actually exists. Files outside the package (``tests/``,
``experiments/``, ``colab/``) are looked up in the repository checkout that holds this package;
when the package is installed without a checkout they are reported absent.

Command line::

    python -m jaxopt_icml.catalog            # the table with counts
    python -m jaxopt_icml.catalog --claims   # also run each experiment's QUICK claims (slow)
    python -m jaxopt_icml.catalog --json     # the same as JSON
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.resources
import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

from jaxopt_icml import FAMILIES

__all__ = [
    "EXPERIMENT_INTERFACE",
    "FAMILIES",
    "Paper",
    "SYMBOLS",
    "claims_outcome",
    "current_known_failing",
    "get",
    "load_experiment",
    "main",
    "papers",
    "raw_rows",
    "recorded_claims",
    "repo_root",
    "status",
    "slugs",
]


# Public names exported by each implemented paper's family module (``jaxopt_icml.<family>``).
# The one place to edit when a paper is implemented or renames a symbol. Papers without an entry
# have no code yet.
SYMBOLS: dict[str, tuple[str, ...]] = {
    "goma": (
        "goma", "scale_by_goma", "goma_stochastic", "extragradient", "ogda", "popov", "eag_c",
        "feg", "anchored_popov", "dseg", "sgda",
    ),
    "stochastic_vi": ("stochastic_fbf", "relaxed_fbf", "residual", "box_prox",
                      "minibatch_operator", "linear_batches", "StochasticFBFState"),
    "dual_dynamic_smoothing": (
        "dual_dynamic_smoothing", "DualSmoothingState", "MatrixGame", "fw_gap", "fw_gda",
        "power_step", "projected_gda", "simplex_lmo", "simplex_projection", "project_simplex",
        "l1_ball_lmo", "l1_ball_projection", "l2_ball_lmo", "l2_ball_projection", "box_lmo",
        "box_projection", "nuclear_ball_lmo", "nuclear_ball_projection",
        "projected_extragradient", "smoothed_agda", "ProjectedEGState", "SmoothedAGDAState",
    ),
    "irefg_sos": (
        "moment_relaxation", "MomentRelaxation", "Game", "make_game", "absent_minded_driver",
        "forgetful_game", "random_absentminded_chain", "utility_coefficients", "monomials",
        "is_absentminded", "project_strategy", "extract_strategy", "extract_atoms",
        "moment_matrix", "moment_ranks", "certified_upper_bound", "sdp_admm", "solve_sdp",
        "sdp_problem", "sdp_zeros", "SDPProblem", "SDPPoint", "SDPADMMState", "SparseBlocks",
        "psd_projection", "project_psd_blocks", "vertex_enumeration", "grid_search",
        "projected_gradient_ascent", "random_strategy", "pure_strategies", "PGAState",
    ),
    "modular_gating": ("robust_gate_primal_dual", "capacity_blahut_arimoto", "GridMixture",
                       "GateBatch", "RobustGateState", "rbf_log_gate", "constant_log_gate",
                       "distill_router", "routed_log_density"),
    "multistep_sam": ("multistep_sam", "scale_by_multistep_sam"),
    "m_plus_adam": ("m_plus_adam", "madam", "round_to_format", "quantize", "dequantize",
                    "tensor_scale"),
    "deva": ("deva", "deva_linf", "deva_schatten", "scale_by_deva_linf",
             "scale_by_deva_schatten", "scale_invariant_direction", "newton_schulz", "soap",
             "scale_by_soap", "signum"),
    "harm_aware": ("harm_aware", "scale_by_harm_aware", "solve_harm_dual", "last_layer_stats",
                   "last_layer_gram"),
    "clipped_sgd": ("clipped_sgd", "scale_by_clipped_sgd", "clip_by_global_norm_schedule",
                    "power_schedule", "empirical_second_moment"),
    "delayed_muon": ("one_step_delay", "delay_correction", "delayed_muon", "delayed_adamw"),
    "momentum_tracking": ("tracking_optimizer", "tracker", "tracking_run",
                          "tracking_error_decomposition", "stationary_tracking_mse",
                          "tracking_mse_curve", "steady_state_lag", "linear_error_dynamics"),
    "romberg_zoge": ("romberg_zoge", "romberg_weights", "noise_amplification",
                     "leading_bias_coefficient", "romberg_directional_derivative",
                     "smooth_test_function", "two_point", "forward_difference", "zo_optimizer",
                     "sample_directions"),
    "zo_entk": ("zo_entk", "entk", "projected_kernel", "zo_tangent_features",
                "kernel_error_second_moment", "one_step_output_change", "jacobian_matrix",
                "zo_sgd", "OutputLoss"),
    "error_feedback": ("ef", "ef21", "optimal_step_size", "tight_rate", "lyapunov_ef",
                       "lyapunov_ef21", "rotation_spectral_radius", "top_k", "rand_k",
                       "random_dithering", "natural", "scaled_sign", "Compressor"),
    "dream": ("dream", "dream_client", "solve_task_qp", "project_simplex", "pareto_gap", "fmgda",
              "fedavg_scalarized", "scaffold_scalarized", "centralized_mgda",
              "multitask_least_squares"),
    "push_pull_bilevel": ("push_pull", "fab", "distributed_gradient_descent", "push_pull_agent",
                          "fab_agent", "BilevelPoint"),
    "cmab_policy_optimization": ("opo_cmab", "opo_policy", "counterfactual_bonus",
                                 "logistic_cmab", "squarecb", "falcon", "epsilon_greedy",
                                 "inverse_gap_weighting"),
    "gradient_variation_bco": ("optimistic_two_point_bco", "one_point_box_blo", "optimistic_ogd",
                               "BCOState", "Domain", "ball_domain", "box_domain",
                               "simplex_domain", "tangent_direction", "QuadraticStream",
                               "quadratic_stream"),
    "spectral_filtering": ("osf", "spectral_filtering", "online_ar", "rls_ar", "persistence",
                           "kalman_predictor", "spectral_filters", "hankel_matrix",
                           "hankel_factor", "SpectralState", "RLSState", "KalmanState",
                           "Trajectory", "LinearDynamicalSystem", "LorenzSystem", "marginal_lds",
                           "separated_angles"),
    "safe_kl_logsumexp": ("safe_conjugate", "safe_tilt", "safe_logpartition", "log_mean_exp",
                          "safe_log_mean_exp", "lse_dro_loss", "safe_kl_dro_loss",
                          "safe_kl_dro_value", "SemiDualOT", "SemiDualState", "semidual_value",
                          "semidual_ot_safe", "sqeuclidean"),
    "compressed_oja": ("compressed_oja", "compressed_step", "oja", "nonadaptive_oja",
                       "adaptive_grouse", "sample_covariance_pca", "run_at", "sin2",
                       "orthogonal_direction", "top_eigenvector", "inverse_time_schedule",
                       "linearised_constant", "spiked_stream", "GaussianStream", "OjaState",
                       "SampleCovarianceState"),
    "unconstrained_blo": ("pablo", "fkm", "full_information", "coin_betting", "kt_betting",
                          "projected_ogd", "dynamic_ensemble", "linear_losses",
                          "ball_lower_bound", "LinearLosses", "PabloState", "CoinBettingState",
                          "DynamicEnsembleState", "ProjectedOGDState", "sphere_direction",
                          "tree_vdot"),
    "constrained_linear_bai": ("constrained_linbai_dual", "constrained_linbai_uniform",
                               "constrained_linbai_g_optimal",
                               "constrained_linbai_track_and_stop",
                               "constrained_linbai_lingame", "ConstrainedLinearBandit",
                               "Estimate", "LinBAIState", "constrained_instance",
                               "initial_estimate", "feasible_best_arm", "alternative_pieces",
                               "glr_statistic", "relaxed_characteristic_time",
                               "stopping_threshold"),
    "symmetric_ot": ("orbit_partition", "OrbitPartition", "trivial_partition", "ReducedOT",
                     "SymmetricOTOutput", "SymmetricSinkhornState", "TransportSimplexOutput",
                     "lift_entropic_plan", "lift_linear_plan", "lift_potentials",
                     "lifted_reg_ot_cost", "reduce_entropic", "reduce_linear", "solve_reduced",
                     "symmetric_entropic_ot", "symmetric_sinkhorn", "transport_simplex"),
    "ho_sfl": ("ho_sfl", "fo_sfl", "zo_fl", "ho_sfl_worker", "fo_sfl_worker", "zo_fl_worker",
               "client_zo_deltas", "split_loss", "make_split_data", "SplitState"),
    "apub": (
        "ReweighterState", "apub_value", "bootstrap_weights", "clt_bound", "efron_bound",
        "exact_bootstrap_law", "newsvendor_apub_m", "newsvendor_cost",
        "newsvendor_lognormal_expected_cost", "scenario_reweighter", "scenario_weights",
        "tail_weights", "upper_cvar", "LPSolution", "LinearProgram", "PDHGState", "PreparedLP",
        "kkt_residuals", "pdhg_lp", "prepare_lp", "solve_lp", "LShapedResult",
        "ProductMixScenarios", "TwoStageLP", "apub_objective", "extensive_form", "l_shaped",
        "product_mix", "product_mix_recourse", "sample_product_mix"
    ),
    "dro_assortment": (
        "attractions", "brute_force_assortment", "dro_assortment", "mnl_choice_probs",
        "mnl_revenue", "revenue_ordered_sets", "robust_dual", "robust_revenue", "robust_value",
        "subset_masks", "worst_case_distribution", "ContextualMNL", "DRMNLState", "dr_mnl_bandit",
        "mle_theta", "mnl_neg_log_likelihood", "sample_choices", "MNLThompsonState",
        "MNLUCBState", "mnl_thompson_bandit", "mnl_ucb_bandit", "thompson_theta", "ucb_utilities"
    ),
    "dr_nodewise_clustering": (
        "ADMMState", "NodewiseProblem", "dro_admm", "dro_objective", "dro_radius",
        "nodewise_problem", "radius_samples", "spectral_prox", "BlockModel", "block_model",
        "clustering_accuracy", "kmeans", "spectral_clustering", "spectral_embedding",
        "correlation_kmeans", "lasso_lambda_max", "lasso_nodewise", "lasso_objective",
        "LRRResult", "lrr", "lrr_lambda_min", "lrr_objective", "sqrt_lasso_lambda_max",
        "sqrt_lasso_nodewise", "sqrt_lasso_objective"
    ),
    "credro": (
        "CredalUncertainty", "credal_uncertainty", "eu_au", "greedy_lower_entropy", "intervals",
        "lower_entropy", "mutual_information", "tighten", "upper_entropy", "upper_entropy_argmax",
        "ClassificationData", "EnsembleState", "chi2_divergence", "credal_ensemble",
        "deep_ensemble", "dro_loss", "dro_weights", "ensemble_weights", "member_probs",
        "BaggingState", "bagging_ensemble", "bootstrap_counts", "bootstrap_indices"
    ),
    "robust_sim": (
        "AggregateState", "FilterResult", "aggregate", "aggregate_tree", "filter_mean",
        "median_of_means", "trimmed_mean", "RobustGDState", "SIMData", "SpectralInit",
        "esc_constant", "hessian_2d", "min_eig_2d", "per_example_grads", "population_hessian",
        "robust_gd", "robust_spectral_init"
    ),
}

# What every experiment module defines (see CONVENTIONS.md section 8).
EXPERIMENT_INTERFACE = (
    "SLUG", "TITLE", "Config", "QUICK", "FULL", "make_problem", "make_methods", "run",
    "summarize", "plot", "CLAIMS",
)

_PARTS = ("code", "tests", "experiment", "notebook")


class Paper(NamedTuple):
    """One catalog row with the canonical locations of its parts.

    Attributes:
      id: paper number (1..71).
      slug: short name; also the experiment, notebook and test file stem.
      title: paper title as in the catalog.
      family: one of :data:`FAMILIES`.
      symbols: public names in ``module`` (empty until the paper is implemented).
      module: the family module, e.g. ``"jaxopt_icml.minimax"``.
      experiment: the experiment module, e.g. ``"experiments.goma"``.
      notebook: notebook path relative to the repository root, e.g. ``"colab/goma.ipynb"``.
      test: test file relative to the repository root, e.g. ``"tests/minimax/test_goma.py"``.
    """

    id: int
    slug: str
    title: str
    family: str
    symbols: tuple[str, ...]
    module: str
    experiment: str
    notebook: str
    test: str

    @property
    def experiment_path(self) -> str:
        """The experiment module's file, relative to the repository root."""
        return self.experiment.replace(".", "/") + ".py"


def raw_rows() -> list[dict]:
    """The packaged ``catalog.json`` exactly as stored (a list of dicts)."""
    text = importlib.resources.files("jaxopt_icml").joinpath("catalog.json").read_text("utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def papers() -> tuple[Paper, ...]:
    """All rows, in catalog order."""
    out = []
    for row in raw_rows():
        slug, family = row["slug"], row["family"]
        out.append(Paper(
            id=int(row["id"]),
            slug=slug,
            title=row["title"],
            family=family,
            symbols=tuple(SYMBOLS.get(slug, ())),
            module=f"jaxopt_icml.{family}",
            experiment=f"experiments.{slug}",
            notebook=f"colab/{slug}.ipynb",
            test=f"tests/{family}/test_{slug}.py",
        ))
    return tuple(out)


def slugs() -> tuple[str, ...]:
    return tuple(p.slug for p in papers())


def get(slug: str) -> Paper:
    """The row for ``slug``; ``KeyError`` listing the valid slugs otherwise."""
    for p in papers():
        if p.slug == slug:
            return p
    raise KeyError(f"unknown paper slug {slug!r}; valid slugs: {', '.join(slugs())}")


def repo_root() -> Path | None:
    """The checkout holding this package (parent of ``jaxopt_icml/``), or ``None``.

    A directory counts as a checkout when it has ``pyproject.toml`` beside the package; an
    installed copy in ``site-packages`` does not.
    """
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def _root(root) -> Path | None:
    return repo_root() if root is None else Path(root)


def load_experiment(slug: str, root=None):
    """Imports ``experiments.<slug>`` from the checkout ``root`` (default: :func:`repo_root`).

    The checkout is put on ``sys.path`` when it is not there already.

    Raises:
      KeyError: ``slug`` is not in the catalog.
      FileNotFoundError: there is no checkout or no ``experiments/<slug>.py`` in it.
    """
    paper = get(slug)
    root = _root(root)
    if root is None or not (root / paper.experiment_path).is_file():
        where = "no repository checkout" if root is None else str(root / paper.experiment_path)
        raise FileNotFoundError(f"paper {slug!r} has no experiment module ({where})")
    root_str = str(root.resolve())
    if not any(os.path.abspath(p or os.curdir) == root_str for p in sys.path):
        sys.path.insert(0, root_str)
    return importlib.import_module(paper.experiment)


def _has_code(paper: Paper) -> bool:
    if not paper.symbols:
        return False
    try:
        module = importlib.import_module(paper.module)
    except ImportError:
        return False
    return all(hasattr(module, name) for name in paper.symbols)


def _has_experiment(paper: Paper, root: Path | None) -> bool:
    if root is None or not (root / paper.experiment_path).is_file():
        return False
    try:
        module = load_experiment(paper.slug, root)
    except Exception:  # noqa: BLE001 - a module that fails to import is not an experiment
        return False
    return (all(hasattr(module, name) for name in EXPERIMENT_INTERFACE)
            and module.SLUG == paper.slug and bool((module.__doc__ or "").strip()))


def claims_outcome(failed, known_failing=()) -> bool | str:
    """``True`` when nothing failed; ``"known"`` when every failed claim is one of the
    experiment's documented non-reproductions (``KNOWN_FAILING``); ``False`` otherwise."""
    failed = set(failed)
    if not failed:
        return True
    return "known" if failed <= set(known_failing) else False


def _claims_pass(paper: Paper, root: Path | None) -> bool | str:
    import jax

    from jaxopt_icml import theory

    module = load_experiment(paper.slug, root)
    results = module.run(module.QUICK, jax.random.PRNGKey(0))
    failed = [r.name for r in theory.check(module.CLAIMS, results) if not r.passed]
    return claims_outcome(failed, getattr(module, "KNOWN_FAILING", ()))


def recorded_claims(paper: Paper, root: Path | None) -> bool | str | None:
    """Whether the newest ``runs/<slug>*/results.json`` (written by ``python -m experiments
    run``) records every claim passing (``True``), only documented non-reproductions failing
    (``"known"``, see :func:`claims_outcome`) or an unexpected failure (``False``); ``None`` when
    no run was recorded."""
    if root is None or not (root / "runs").is_dir():
        return None
    candidates = [p for p in (root / "runs").glob(f"{paper.slug}*/results.json")
                  if p.parent.name == paper.slug or p.parent.name.startswith(f"{paper.slug}-")]
    if not candidates:
        return None
    newest = max(candidates, key=lambda p: p.stat().st_mtime)
    try:
        payload = json.loads(newest.read_text())
    except (OSError, ValueError):
        return None
    claims = payload.get("claims", [])
    if not claims:
        return False
    failed = [c.get("name") for c in claims if not c.get("passed")]
    # A documented miss counts only while the experiment still documents it: a stale run
    # recorded under an older KNOWN_FAILING does not excuse a failure dropped from it since.
    known = set(payload.get("known_failing", ())) & set(current_known_failing(paper, root))
    return claims_outcome(failed, known)


def current_known_failing(paper: Paper, root: Path | None) -> tuple[str, ...]:
    """The experiment's ``KNOWN_FAILING`` now (empty when it has none or cannot be loaded)."""
    for where in (root, repo_root()):
        try:
            return tuple(getattr(load_experiment(paper.slug, where), "KNOWN_FAILING", ()))
        except (FileNotFoundError, ImportError):
            continue
    return ()


def status(paper: Paper | str, root=None, *, claims: bool = False) -> dict:
    """What exists for ``paper``, derived from the code and files, never typed in.

    Args:
      paper: a :class:`Paper` or a slug.
      root: repository checkout (default: the one holding this package; ``None`` when the
        package is installed without one, and then tests/experiment/notebook are absent).
      claims: run the experiment's QUICK config with ``PRNGKey(0)`` and check its CLAIMS
        (expensive). Without it, the newest recorded run under ``runs/`` is read, if any.

    Returns:
      ``{"code", "tests", "experiment", "notebook"}`` booleans, ``"claims"`` (``True``,
      ``"known"`` when the only failing claims are the experiment's documented
      non-reproductions, ``False``, or ``None`` when neither evaluated nor recorded) and
      ``"status"``: ``"complete"`` when the four parts exist and no claim fails unexpectedly,
      ``"empty"`` when nothing exists, else ``"partial"``.
    """
    paper = get(paper) if isinstance(paper, str) else paper
    root = _root(root)
    out = {
        "code": _has_code(paper),
        "tests": root is not None and (root / paper.test).is_file(),
        "experiment": _has_experiment(paper, root),
        "notebook": root is not None and (root / paper.notebook).is_file(),
    }
    if not out["experiment"]:
        out["claims"] = None
    elif claims:
        out["claims"] = _claims_pass(paper, root)
    else:
        out["claims"] = recorded_claims(paper, root)
    flags = [out[k] for k in _PARTS]
    if all(flags) and out["claims"] is not False:
        out["status"] = "complete"
    else:
        out["status"] = "empty" if not any(flags) else "partial"
    return out


_CLAIM_MARK = {True: "pass", "known": "pass+known-miss", False: "FAIL", None: "?"}


# --------------------------------------------------------------------------- command line


def _table(rows: list[tuple[Paper, dict]]) -> str:
    header = ("id", "slug", "family") + _PARTS + ("claims", "status")
    lines = [header]
    for paper, st in rows:
        marks = tuple("x" if st[p] else "." for p in _PARTS)
        claims = _CLAIM_MARK[st["claims"]] if st["experiment"] else "."
        lines.append((str(paper.id), paper.slug, paper.family) + marks
                     + (claims, st["status"]))
    widths = [max(len(r[i]) for r in lines) for i in range(len(header))]
    text = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


def _counts(rows: list[tuple[Paper, dict]]) -> dict:
    counts = {p: sum(bool(st[p]) for _, st in rows) for p in _PARTS}
    counts["claims passing"] = sum(st["claims"] is True for _, st in rows)
    counts["with documented misses"] = sum(st["claims"] == "known" for _, st in rows)
    for word in ("complete", "partial", "empty"):
        counts[word] = sum(st["status"] == word for _, st in rows)
    counts["total"] = len(rows)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxopt_icml.catalog",
                                     description="Status of the 71 papers, derived from the code.")
    parser.add_argument("--claims", action="store_true",
                        help="also run each experiment's QUICK claims (slow)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    root = repo_root()
    rows = [(p, status(p, root, claims=args.claims)) for p in papers()]
    counts = _counts(rows)
    if args.json:
        payload = {
            "root": None if root is None else str(root),
            "papers": [
                {**p._asdict(), "symbols": list(p.symbols),
                 "has": {k: st[k] for k in _PARTS}, "claims": st["claims"],
                 "status": st["status"]}
                for p, st in rows
            ],
            "counts": counts,
        }
        print(json.dumps(payload, indent=2))
        return 0
    print(_table(rows))
    print()
    print("claims: pass/FAIL as evaluated (--claims) or recorded by the newest run under "
          "runs/ (`python -m experiments run`, or a notebook executed with "
          "JAXOPT_ICML_RECORD=1 as CI does); ? = not evaluated here "
          "(each paper's claims test runs them in CI); pass+known-miss = every failing claim "
          "is a documented non-reproduction (the experiment's KNOWN_FAILING, reported with its "
          "measured value)")
    print("  ".join(f"{k}: {v}" for k, v in counts.items()))
    if root is None:
        print("(no repository checkout found: tests, experiments and notebooks reported absent)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
