"""Optimal transport: new methods built on ott-jax geometries, problems and solvers."""

from jaxopt_icml.transport.safe_kl import (
    SemiDualOT,
    SemiDualState,
    log_mean_exp,
    lse_dro_loss,
    safe_conjugate,
    safe_kl_dro_loss,
    safe_kl_dro_value,
    safe_log_mean_exp,
    safe_logpartition,
    safe_tilt,
    semidual_ot_safe,
    semidual_value,
    sqeuclidean,
)

__all__ = [
    "SemiDualOT",
    "SemiDualState",
    "log_mean_exp",
    "lse_dro_loss",
    "safe_conjugate",
    "safe_kl_dro_loss",
    "safe_kl_dro_value",
    "safe_log_mean_exp",
    "safe_logpartition",
    "safe_tilt",
    "semidual_ot_safe",
    "semidual_value",
    "sqeuclidean",
]
