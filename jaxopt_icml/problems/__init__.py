"""Synthetic problems as pytrees with known constants (L, mu, optimum, equilibrium ...)."""

from jaxopt_icml.problems.drifting import DriftingQuadratic, DriftState, drifting_quadratic
from jaxopt_icml.problems.games import (
    CountingOperator,
    LinearOperator,
    NoisyOperator,
    bilinear_game,
    monotone_linear,
    random_orthogonal,
    strongly_monotone_linear,
)
from jaxopt_icml.problems.graphs import (
    GraphSequence,
    complete_graph,
    connectivity_window,
    directed_ring,
    graph_sequence,
    is_column_stochastic,
    is_row_stochastic,
    is_strongly_connected,
    left_perron_vector,
    time_varying_digraphs,
)
from jaxopt_icml.problems.heavy_tailed import (
    FiniteSumMean,
    FiniteSumRidge,
    finite_sum_problem,
    heavy_tailed_dataset,
    student_t,
)
from jaxopt_icml.problems.quadratics import Quadratic, random_quadratic

__all__ = [
    "CountingOperator",
    "DriftState",
    "DriftingQuadratic",
    "FiniteSumMean",
    "FiniteSumRidge",
    "GraphSequence",
    "LinearOperator",
    "NoisyOperator",
    "Quadratic",
    "bilinear_game",
    "complete_graph",
    "connectivity_window",
    "directed_ring",
    "drifting_quadratic",
    "finite_sum_problem",
    "graph_sequence",
    "heavy_tailed_dataset",
    "is_column_stochastic",
    "is_row_stochastic",
    "is_strongly_connected",
    "left_perron_vector",
    "monotone_linear",
    "random_orthogonal",
    "random_quadratic",
    "strongly_monotone_linear",
    "student_t",
    "time_varying_digraphs",
]
