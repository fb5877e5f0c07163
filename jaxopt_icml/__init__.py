"""jaxopt_icml: ICML 2026 optimization algorithms as pure, composable JAX transformations.

Families are subpackages (``jaxopt_icml.minimax``, ``jaxopt_icml.optim`` ...), imported on first
attribute access so that ``import jaxopt_icml`` stays cheap.
"""

import importlib

__version__ = "0.1.0"

FAMILIES = (
    "optim", "zeroth_order", "minimax", "distributed", "online", "transport", "robust",
    "generative", "decision", "preference", "training", "stats", "systems",
)
_CORE = ("base", "theory", "problems", "sharding", "mesh", "checkpoint", "catalog", "testing",
         "models", "hyperparams", "projections", "trees")


def __getattr__(name):
    if name in FAMILIES or name in _CORE:
        return importlib.import_module(f"jaxopt_icml.{name}")
    raise AttributeError(f"module 'jaxopt_icml' has no attribute {name!r}")


__all__ = ["FAMILIES", "__version__"]
