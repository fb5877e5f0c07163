"""Results and provenance: JSON, package versions, the records a notebook leaves for the catalog
and the claims tests (:func:`record_claims`, :func:`quick_results`), and :func:`describe`."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import math
import os
import pickle
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from experiments.runner.configs import config_dict
from experiments.runner.loading import repo_root

__all__ = [
    "RECORD_ENV",
    "REUSE_ENV",
    "describe",
    "devices",
    "fast_cpu_compile_options",
    "provenance",
    "quick_results",
    "record_claims",
    "source_fingerprint",
    "to_jsonable",
    "versions",
    "write_json",
]

_PACKAGES = ("jax", "jaxlib", "optax", "flax", "jaxopt-icml")


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
    ``"1"`` (CI sets it while executing the notebooks, so that ``python -m experiments catalog``
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
        "provenance": provenance(),
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


def _git(*args: str) -> str | None:
    """``git <args>`` in the repository's checkout, stripped; ``None`` without git or a repo."""
    try:
        proc = subprocess.run(["git", *args], cwd=repo_root(), capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def provenance(argv=None) -> dict:
    """Where a result came from: ``commit`` (``git rev-parse HEAD``), ``dirty`` (uncommitted
    changes to tracked files), ``command`` (the command line; ``argv`` are the arguments after
    ``python -m experiments``, default ``sys.argv``), ``device_kind`` and ``backend`` (JAX's
    first device) and :func:`versions`. ``commit`` and ``dirty`` are ``None`` without git or
    outside a checkout."""
    import jax

    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    if argv is None:
        command = shlex.join([os.path.basename(sys.executable), *sys.argv])
    else:
        command = shlex.join(["python", "-m", "experiments", *map(str, argv)])
    return {"commit": commit or None, "dirty": None if status is None else bool(status),
            "command": command, "device_kind": jax.devices()[0].device_kind,
            "backend": jax.default_backend(), "versions": versions()}


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


def _is_key(obj) -> bool:
    import jax

    return jax.dtypes.issubdtype(obj.dtype, jax.dtypes.prng_key)


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
        if hasattr(obj, "shape") and hasattr(obj, "dtype") and _is_key(obj):
            out[prefix] = f"PRNG key array{tuple(obj.shape)}"
        elif hasattr(obj, "shape") and hasattr(obj, "dtype"):
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
