"""Helpers shared by the experiments, the CLI and the notebooks.

* finding and loading experiment modules (``experiments/<slug>.py`` for a catalog slug);
* configs: :func:`with_seeds`, :func:`config_dict`;
* results I/O: :func:`to_jsonable`, :func:`write_json`, :func:`versions`, :func:`devices`;
  :func:`record_claims` and :func:`quick_results` (a notebook's QUICK results, reused by the
  claims tests when the source code is identical); :func:`check_quick_claims` (the claims
  tests' check: exactly the documented claims fail);
* figures: :func:`band_plot` (seed median with a 10-90% band on log-log axes),
  :func:`save_figures`, :func:`use_agg`;
* :func:`progress` (a tqdm bar that can be switched off) and :func:`describe` (key constants of
  a problem pytree, for notebooks).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import math
import os
import pickle
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_icml import catalog

__all__ = [
    "UnknownExperiment",
    "available_slugs",
    "band_plot",
    "check_quick_claims",
    "config_dict",
    "describe",
    "devices",
    "fast_cpu_compile_options",
    "load",
    "progress",
    "quick_results",
    "record_claims",
    "repo_root",
    "save_figures",
    "to_jsonable",
    "use_agg",
    "versions",
    "with_seeds",
    "write_json",
]

_PACKAGES = ("jax", "jaxlib", "optax", "flax", "jaxopt-icml")


class UnknownExperiment(LookupError):
    """A slug that is not in the catalog or has no experiment module."""


def repo_root() -> Path:
    """The checkout holding the ``experiments`` package."""
    return Path(__file__).resolve().parent.parent


def available_slugs(root=None) -> list[str]:
    """Catalog slugs that have an ``experiments/<slug>.py``, in catalog order."""
    root = repo_root() if root is None else Path(root)
    return [p.slug for p in catalog.papers() if (root / p.experiment_path).is_file()]


def load(slug: str):
    """Imports the experiment module for ``slug``.

    Raises:
      UnknownExperiment: with the list of valid slugs, when ``slug`` is not in the catalog or
        has no experiment module yet.
    """
    valid = available_slugs()
    if slug not in valid:
        known = slug in catalog.slugs()
        reason = "has no experiment module yet" if known else "is not a catalog slug"
        raise UnknownExperiment(
            f"{slug!r} {reason}; experiments available: {', '.join(valid) or '(none)'}"
        )
    return catalog.load_experiment(slug, repo_root())


# --------------------------------------------------------------------------- configs


def with_seeds(cfg, seeds: int | None):
    """``cfg`` with ``seeds`` replaced (frozen dataclass or NamedTuple); unchanged for ``None``."""
    if seeds is None:
        return cfg
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive int, got {seeds!r}")
    if dataclasses.is_dataclass(cfg):
        return dataclasses.replace(cfg, seeds=seeds)
    return cfg._replace(seeds=seeds)


def config_dict(cfg) -> dict:
    """A config as a JSON-able dict."""
    if dataclasses.is_dataclass(cfg):
        fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    elif hasattr(cfg, "_asdict"):
        fields = cfg._asdict()
    else:
        fields = dict(vars(cfg))
    return to_jsonable(fields)


# --------------------------------------------------------------------------- results I/O


def to_jsonable(obj: Any) -> Any:
    """Converts NumPy/JAX scalars and arrays, tuples, NamedTuples and dataclasses to JSON types.

    Non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"`` (strict JSON has no
    NaN); callables and other objects become their ``repr``.
    """
    if obj is None or isinstance(obj, bool | str | int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else ("nan" if math.isnan(obj) else
                                               ("inf" if obj > 0 else "-inf"))
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if hasattr(obj, "_asdict"):
        return to_jsonable(obj._asdict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "__array__") and hasattr(obj, "shape"):
        return to_jsonable(np.asarray(obj).tolist())
    return repr(obj)


def write_json(path, payload) -> Path:
    """Writes ``to_jsonable(payload)`` as indented strict JSON; creates parent directories."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_jsonable(payload), indent=2, allow_nan=False) + "\n")
    return path


RECORD_ENV = "JAXOPT_ICML_RECORD"


REUSE_ENV = "JAXOPT_ICML_REUSE_RECORDS"
_RESULTS_PICKLE = "quick_results.pkl"


def record_claims(exp, cfg, key: int, claims, *, quick: bool, results=None,
                  root=None) -> Path | None:
    """Writes ``runs/<slug>[-quick]/results.json`` with the claims just evaluated, as
    ``python -m experiments run`` does, when the environment variable ``JAXOPT_ICML_RECORD`` is
    ``"1"`` (CI sets it while executing the notebooks, so that ``python -m jaxopt_icml.catalog``
    reports those outcomes instead of running every experiment again); otherwise nothing.

    With ``results`` (the dict ``exp.run(cfg, PRNGKey(key))`` returned) and ``quick``, the
    results are also pickled beside it, stamped with :func:`source_fingerprint`, for
    :func:`quick_results`.

    Returns the path written, or ``None``.
    """
    if os.environ.get(RECORD_ENV) != "1":
        return None
    root = repo_root() if root is None else Path(root)
    out = root / "runs" / (exp.SLUG + ("-quick" if quick else ""))
    payload = {
        "slug": exp.SLUG,
        "title": exp.TITLE,
        "quick": bool(quick),
        "seeds": cfg.seeds,
        "key": int(key),
        "config": config_dict(cfg),
        "versions": versions(),
        "recorded_by": "notebook",
        "claims": [c.as_dict() for c in claims],
        "all_claims_passed": all(c.passed for c in claims),
        "known_failing": sorted(getattr(exp, "KNOWN_FAILING", ())),
    }
    path = write_json(out / "results.json", payload)
    if results is not None and quick:
        stamp = source_fingerprint(cfg, key)
        try:
            blob = pickle.dumps({"fingerprint": stamp, "results": results})
        except Exception:  # noqa: BLE001 - results that do not pickle are simply not reused
            blob = None
        target = out / _RESULTS_PICKLE
        if blob is None:
            target.unlink(missing_ok=True)  # never leave an older run's results behind
        else:
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(blob)
            os.replace(tmp, target)  # atomic: a killed kernel leaves no truncated file
    return path


def source_fingerprint(cfg, key: int) -> str:
    """SHA-256 over everything a QUICK result depends on here: the bytes of every ``.py`` file
    of ``jaxopt_icml/`` and ``experiments/``, the config, the key, the package versions and
    JAX's x64 and rank-promotion modes. Two runs with equal fingerprints run the same code on
    the same inputs."""
    import jax

    h = hashlib.sha256()
    root = repo_root()
    for package in ("jaxopt_icml", "experiments"):
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    # XLA flags change the numbers (code generation) except the simulated host device count,
    # which only matters to sharded runs (QUICK results are not sharded)
    flags = sorted(f for f in os.environ.get("XLA_FLAGS", "").split()
                   if not f.startswith("--xla_force_host_platform_device_count"))
    meta = {"config": repr(cfg), "key": int(key), "versions": versions(),
            "x64": bool(jax.config.jax_enable_x64),
            "rank_promotion": str(jax.config.jax_numpy_rank_promotion), "xla_flags": flags,
            "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
            "numpy": np.__version__}
    h.update(json.dumps(meta, sort_keys=True).encode())
    return h.hexdigest()


def quick_results(exp, key: int = 0, root=None):
    """``exp.run(exp.QUICK, jax.random.PRNGKey(key))`` in JAX's default 32-bit mode, the run
    the claims tests check (as the CLI and the notebooks run it).

    When the environment variable ``JAXOPT_ICML_REUSE_RECORDS`` is ``"1"`` (CI sets it: the
    notebooks, executed first with ``JAXOPT_ICML_RECORD=1``, ran exactly this) and
    ``runs/<slug>-quick/quick_results.pkl`` carries the current :func:`source_fingerprint`,
    those results are returned instead of running the experiment a second time. Any mismatch
    (other code, config, key, versions or JAX modes) runs the experiment.
    """
    import jax

    # as `python -m experiments run <slug> --quick` and the notebooks run it: JAX's default
    # 32-bit mode outside what the experiment enables itself (a test module's autouse
    # enable_x64 fixture must not change the run)
    with jax.enable_x64(False):
        if os.environ.get(REUSE_ENV) == "1":
            root = repo_root() if root is None else Path(root)
            path = root / "runs" / f"{exp.SLUG}-quick" / _RESULTS_PICKLE
            try:
                stored = pickle.loads(path.read_bytes()) if path.is_file() else {}
            except Exception:  # noqa: BLE001 - an unreadable record is simply not reused
                stored = {}
            if stored:
                if stored.get("fingerprint") == source_fingerprint(exp.QUICK, key):
                    return stored["results"]
        return exp.run(exp.QUICK, jax.random.PRNGKey(key))


def check_quick_claims(exp, results, *, expected_failing=None, tolerate=()) -> list:
    """Checks every claim of ``exp.CLAIMS`` on ``results`` (what ``exp.run`` returned, usually
    :func:`quick_results`), as the claims tests do, and returns the
    :class:`~jaxopt_icml.theory.ClaimResult` list for further assertions.

    Raises ``AssertionError`` (the message ends with :func:`jaxopt_icml.theory.format_claims`
    of the checked claims) unless the checked names are those of ``exp.CLAIMS`` in order and
    exactly the expected claims fail: a claim that starts failing is noticed, and so is an
    expected failure that starts passing.

    Args:
      exp: an experiment module: ``CLAIMS``, and optionally ``KNOWN_FAILING`` and
        ``FULL_ONLY_FAILING``.
      results: the results the claims are evaluated on.
      expected_failing: names of the claims that must fail (compared as sorted lists). By
        default ``exp.KNOWN_FAILING`` less ``exp.FULL_ONLY_FAILING`` (the documented
        non-reproductions that also fail at QUICK size; an absent attribute counts as empty).
        ``()`` demands that every claim pass whatever the module documents.
      tolerate: names of claims whose outcome is not checked either way (wall-clock timings
        that depend on the machine); they are left out of both sides of the comparison.
    """
    from jaxopt_icml import theory

    checked = theory.check(exp.CLAIMS, results)
    table = theory.format_claims(checked)
    names = [c.name for c in checked]
    if names != [c.name for c in exp.CLAIMS]:
        raise AssertionError(f"checked claims {names} are not exp.CLAIMS in order\n{table}")
    if expected_failing is None:
        expected_failing = (set(getattr(exp, "KNOWN_FAILING", ()))
                            - set(getattr(exp, "FULL_ONLY_FAILING", ())))
    tolerate = set(tolerate)
    expected = sorted(n for n in expected_failing if n not in tolerate)
    failed = sorted(c.name for c in checked if not c.passed and c.name not in tolerate)
    if failed != expected:
        raise AssertionError(f"failing claims {failed}, expected {expected}\n{table}")
    return checked


def versions() -> dict:
    """Versions of Python and the libraries the results depend on."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        key = name.replace("-", "_")
        try:
            out[key] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[key] = None
    if out["jaxopt_icml"] is None:
        import jaxopt_icml

        out["jaxopt_icml"] = jaxopt_icml.__version__
    return out


def devices() -> list[str]:
    """The JAX devices as strings (this initialises the backend)."""
    import jax

    return [str(d) for d in jax.devices()]


def fast_cpu_compile_options() -> dict:
    """``jax.jit(..., compiler_options=...)`` for the experiments' small programs: on the CPU
    backend XLA's classic elemental emitters (``xla_cpu_use_fusion_emitters=False``), which
    compile them 1.5-2x faster than the newer MLIR fusion emitters and run them no slower
    (results agree to float32 round-off); ``{}`` on GPU/TPU, where the option does not exist."""
    import jax

    return {"xla_cpu_use_fusion_emitters": False} if jax.default_backend() == "cpu" else {}


def seed_of(key) -> int:
    """The integer seed of an experiment's ``key`` argument (the last word of a raw
    ``PRNGKey`` or of a typed key's data), for experiments that derive their own keys."""
    import jax
    import jax.numpy as jnp

    typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
    return int(np.asarray(jax.random.key_data(key) if typed else key).ravel()[-1])


def rbg_key(seed):
    """A typed ``unsafe_rbg`` key from an int seed (or a traced integer inside ``jit``): on the
    CPU it compiles much faster than threefry inside the experiments' large vmapped programs
    (the random streams differ from threefry's)."""
    import jax

    return jax.random.key(seed, impl="unsafe_rbg")


# --------------------------------------------------------------------------- figures


def use_agg() -> None:
    """Selects matplotlib's non-interactive Agg backend (for writing PNGs from the CLI)."""
    import matplotlib

    matplotlib.use("Agg")


def band_plot(ax, ks, values, label: str | None = None, *, color=None, lower: float = 10.0,
              upper: float = 90.0, alpha: float = 0.25, **line_kwargs):
    """Draws the median over seeds and a ``lower``-``upper`` percentile band, on log-log axes.

    Args:
      ax: a matplotlib ``Axes``.
      ks: x values (iterations), shape ``(n,)``; must be positive for the log scale.
      values: shape ``(seeds, n)`` (or ``(n,)`` for one seed, drawn without a band).
      label: legend label of the median line.
      color: line and band colour (default: the axes' next colour).
      lower, upper: percentiles of the band (default 10 and 90).
      alpha: band opacity.
      **line_kwargs: passed to ``ax.plot`` for the median.

    Returns:
      The median ``Line2D``.
    """
    ks = np.asarray(ks)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[None]
    if values.ndim != 2 or values.shape[1] != ks.shape[0]:
        raise ValueError(
            f"values must have shape (seeds, {ks.shape[0]}) to match ks, got {values.shape}"
        )
    median = np.nanmedian(values, axis=0)
    (line,) = ax.plot(ks, median, label=label, color=color, **line_kwargs)
    if values.shape[0] > 1:
        lo, hi = np.nanpercentile(values, [lower, upper], axis=0)
        ax.fill_between(ks, lo, hi, color=line.get_color(), alpha=alpha, linewidth=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    return line


def save_figures(figures: Mapping[str, Any], out_dir, *, dpi: int = 120,
                 close: bool = True) -> list[Path]:
    """Saves each figure as ``out_dir/<name>.png``; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figures.items():
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        paths.append(path)
        if close:
            import matplotlib.pyplot as plt

            plt.close(fig)
    return paths


# --------------------------------------------------------------------------- misc


def progress(iterable: Iterable, *, enabled: bool = True, desc: str | None = None,
             total: int | None = None):
    """``tqdm(iterable)`` when ``enabled``, else ``iterable`` unchanged.

    The bar goes to stderr and disappears in non-interactive runs with ``TQDM_DISABLE=1``.
    """
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, disable=os.environ.get("TQDM_DISABLE") == "1")


def describe(problem, *, max_size: int = 8) -> dict:
    """Key constants of a problem pytree (for printing in notebooks).

    Scalars and arrays with at most ``max_size`` elements are reported by value (floats to four
    significant digits), larger arrays by shape and dtype (and their range when 1-D, e.g. one
    constant per seed). Works on flax ``struct`` dataclasses, NamedTuples, dicts and plain
    objects; nested containers are flattened with dotted names.
    """
    out: dict[str, Any] = {}

    def visit(prefix, obj):
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            items = [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]
        elif hasattr(obj, "_asdict"):
            items = list(obj._asdict().items())
        elif isinstance(obj, Mapping):
            items = list(obj.items())
        else:
            items = None
        if items is not None:
            for k, v in items:
                visit(f"{prefix}.{k}" if prefix else str(k), v)
            return
        if hasattr(obj, "shape") and hasattr(obj, "dtype"):
            size = int(np.prod(obj.shape))
            if size <= max_size:
                value = np.asarray(obj)
                if np.issubdtype(value.dtype, np.floating):
                    value = np.vectorize(lambda v: float(f"{v:.4g}"), otypes=[float])(value)
                out[prefix] = value.item() if value.ndim == 0 else value.tolist()
            else:
                text = f"array{tuple(obj.shape)} {obj.dtype}"
                value = np.asarray(obj)
                if value.ndim <= 1 and np.issubdtype(value.dtype, np.number):
                    text += f" in [{value.min():.4g}, {value.max():.4g}]"
                out[prefix] = text
        elif isinstance(obj, float):
            out[prefix] = float(f"{obj:.4g}")
        elif isinstance(obj, int | bool | str) or obj is None:
            out[prefix] = obj
        elif not callable(obj):
            out[prefix] = repr(obj)

    visit("", problem)
    return {k or "value": v for k, v in out.items()}
