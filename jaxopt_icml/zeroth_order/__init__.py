"""Zeroth-order methods from ICML 2026 papers (family ``zeroth_order``).

One module per paper, plus ``estimators`` (what every zeroth-order method shares: direction
sampling, two-point / forward-difference estimators, and ``zo_optimizer``, which feeds any
estimator to any optax transformation). This package re-exports their public names; module
constants (``estimators.DISTRIBUTIONS``) stay in their modules.
"""

from jaxopt_icml.zeroth_order.estimators import (
    Estimator,
    central_difference_estimator,
    central_differences,
    dimension,
    forward_difference,
    normalization,
    sample_directions,
    two_point,
    zo_optimizer,
)
from jaxopt_icml.zeroth_order.romberg_zoge import (
    SmoothTestFunction,
    leading_bias_coefficient,
    noise_amplification,
    romberg_directional_derivative,
    romberg_weights,
    romberg_zoge,
    smooth_test_function,
)
from jaxopt_icml.zeroth_order.zo_entk import (
    OutputLoss,
    entk,
    jacobian_matrix,
    kernel_error_second_moment,
    one_step_output_change,
    projected_kernel,
    zo_entk,
    zo_sgd,
    zo_sgd_direction_key,
    zo_tangent_features,
)

__all__ = [
    "Estimator",
    "OutputLoss",
    "SmoothTestFunction",
    "central_difference_estimator",
    "central_differences",
    "dimension",
    "entk",
    "forward_difference",
    "jacobian_matrix",
    "kernel_error_second_moment",
    "leading_bias_coefficient",
    "noise_amplification",
    "normalization",
    "one_step_output_change",
    "projected_kernel",
    "romberg_directional_derivative",
    "romberg_weights",
    "romberg_zoge",
    "sample_directions",
    "smooth_test_function",
    "two_point",
    "zo_entk",
    "zo_optimizer",
    "zo_sgd",
    "zo_sgd_direction_key",
    "zo_tangent_features",
]
