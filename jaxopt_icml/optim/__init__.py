"""First-order optimizers from ICML 2026 papers (family ``optim``).

One module per paper; this package re-exports their public functions and state types.
Module-level constants (``formats.FORMATS``, ``eigenbasis.NS_COEFFS``,
``delayed_muon.FIRST_STEPS``, ``momentum_tracking.METHODS`` ...) stay in their modules.
"""

from jaxopt_icml import catalog

# The public names of every paper registered in catalog.json for this family (each module's
# __all__); a new paper's names appear here with no edit to this file.
__all__ = catalog.export_family(globals())
