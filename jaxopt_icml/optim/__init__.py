"""First-order optimizers from ICML 2026 papers (family ``optim``)."""

from jaxopt_icml.optim.multistep_sam import (
    MultiStepSAMState,
    ScaleByMultiStepSAMState,
    multistep_sam,
    scale_by_multistep_sam,
)

__all__ = [
    "MultiStepSAMState",
    "ScaleByMultiStepSAMState",
    "multistep_sam",
    "scale_by_multistep_sam",
]
