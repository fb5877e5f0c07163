"""Min-max optimisation and monotone variational inequalities.

Field-consuming ``optax`` transformations: pass ``F(z)`` as ``updates`` and ``z`` as ``params``;
oracle-driven pairs (``base.OracleAlgorithm``): minibatch FBF for stochastic VIs, projection-free
saddle-point methods by dual dynamic smoothing (with LMOs and projections for common sets), the
stochastic primal-dual robust gate for modular generative models, and a first-order SDP solver
(dual ADMM) for the moment-SOS relaxations of imperfect-recall games.
"""

from jaxopt_icml import catalog

# The public names of every paper registered in catalog.json for this family (each module's
# __all__); a new paper's names appear here with no edit to this file.
__all__ = catalog.export_family(globals())
