"""Synthetic problems as pytrees with known constants (L, mu, optimum, equilibrium ...)."""

from jaxopt_icml.problems.games import (
    CountingOperator,
    LinearOperator,
    NoisyOperator,
    bilinear_game,
    monotone_linear,
    random_orthogonal,
    strongly_monotone_linear,
)
from jaxopt_icml.problems.quadratics import Quadratic, random_quadratic

__all__ = [
    "CountingOperator",
    "LinearOperator",
    "NoisyOperator",
    "Quadratic",
    "bilinear_game",
    "monotone_linear",
    "random_orthogonal",
    "random_quadratic",
    "strongly_monotone_linear",
]
