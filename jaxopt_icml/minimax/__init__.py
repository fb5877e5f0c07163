"""Min-max optimisation and monotone variational inequalities.

Field-consuming ``optax`` transformations: pass ``F(z)`` as ``updates`` and ``z`` as ``params``;
oracle-driven pairs (``base.OracleAlgorithm``) for stochastic VIs: minibatch FBF.
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
from jaxopt_icml.minimax.stochastic_vi import (
    StochasticFBFState,
    box_prox,
    linear_batches,
    minibatch_operator,
    relaxed_fbf,
    residual,
    stochastic_fbf,
)

__all__ = [
    "AnchorState",
    "AnchoredPopovState",
    "CountState",
    "GomaState",
    "OptimisticState",
    "PopovState",
    "StochasticFBFState",
    "anchored_popov",
    "box_prox",
    "dseg",
    "eag_c",
    "extragradient",
    "feg",
    "goma",
    "goma_stochastic",
    "linear_batches",
    "minibatch_operator",
    "ogda",
    "popov",
    "relaxed_fbf",
    "residual",
    "scale_by_goma",
    "sgda",
    "stochastic_fbf",
]
