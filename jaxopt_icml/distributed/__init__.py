"""Federated, decentralized and compressed-communication methods from ICML 2026 papers (family
``distributed``).

One module per paper; this package re-exports their public functions and state types. Every
per-worker step is written once with collectives over a named axis and runs on one device
(``mesh.simulate``/``jax.vmap``) or across a device mesh (``mesh.shard``/``jax.shard_map``).
"""

from jaxopt_icml import catalog

# The public names of every paper registered in catalog.json for this family (each module's
# __all__); a new paper's names appear here with no edit to this file.
__all__ = catalog.export_family(globals())
