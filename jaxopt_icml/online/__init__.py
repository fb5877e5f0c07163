"""Online learning, bandits and streaming estimation.

Learners are ``base.OracleAlgorithm`` pairs whose ``Step.x`` is the action played or the current
estimate; environments (adversarial loss sequences, stochastic bandits, linear dynamical systems,
covariance streams) are oracle pytrees, so a regret curve over many seeds is one ``lax.scan``
vmapped over keys.
"""
