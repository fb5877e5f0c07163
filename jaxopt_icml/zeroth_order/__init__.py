"""Zeroth-order methods from ICML 2026 papers (family ``zeroth_order``).

One module per paper, plus ``estimators`` (what every zeroth-order method shares: direction
sampling, two-point / forward-difference estimators, and ``zo_optimizer``, which feeds any
estimator to any optax transformation). This package re-exports their public names; module
constants (``estimators.DISTRIBUTIONS``) stay in their modules.
"""

from jaxopt_icml import catalog

# The public names of every paper registered in catalog.json for this family (each module's
# __all__); a new paper's names appear here with no edit to this file.
__all__ = catalog.export_family(globals())
