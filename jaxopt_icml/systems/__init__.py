"""Systems: simulators, schedulers and policies.
"""

from jaxopt_icml import catalog

# The public names of every paper registered in catalog.json for this family (each module's
# __all__); a new paper's names appear here with no edit to this file.
__all__ = catalog.export_family(globals())
