"""Experiment configs (frozen dataclasses or NamedTuples with QUICK and FULL presets)."""

from __future__ import annotations

import dataclasses

__all__ = ["config_dict", "with_seeds"]


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
    from experiments.runner.records import to_jsonable

    return to_jsonable(fields)
