"""Online learning, bandits and streaming estimation.

Learners are ``base.OracleAlgorithm`` pairs whose ``Step.x`` is the action played or the current
estimate; environments (adversarial loss sequences, stochastic bandits, linear dynamical systems,
covariance streams) are oracle pytrees, so a regret curve over many seeds is one ``lax.scan``
vmapped over keys.
"""

from jaxopt_icml import catalog

# The public names of every paper registered in catalog.json for this family (each module's
# __all__); a new paper's names appear here with no edit to this file.
__all__ = catalog.export_family(globals())
