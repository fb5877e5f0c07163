"""Min-max optimisation and monotone variational inequalities.

Field-consuming ``optax`` transformations: pass ``F(z)`` as ``updates`` and ``z`` as ``params``.
"""

from jaxopt_icml.minimax.baselines import (
    AnchoredPopovState,
    AnchorState,
    CountState,
    OptimisticState,
    PopovState,
    anchored_popov,
    dseg,
    eag_c,
    extragradient,
    feg,
    ogda,
    popov,
    sgda,
)
from jaxopt_icml.minimax.goma import GomaState, goma, goma_stochastic, scale_by_goma

__all__ = [
    "AnchorState",
    "AnchoredPopovState",
    "CountState",
    "GomaState",
    "OptimisticState",
    "PopovState",
    "anchored_popov",
    "dseg",
    "eag_c",
    "extragradient",
    "feg",
    "goma",
    "goma_stochastic",
    "ogda",
    "popov",
    "scale_by_goma",
    "sgda",
]
