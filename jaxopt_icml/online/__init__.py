"""Online learning, bandits and streaming estimation.

Learners are ``base.OracleAlgorithm`` pairs whose ``Step.x`` is the action played or the current
estimate; environments (adversarial loss sequences, stochastic bandits, linear dynamical systems,
covariance streams) are oracle pytrees, so a regret curve over many seeds is one ``lax.scan``
vmapped over keys.
"""

from jaxopt_icml.online.cmab import (
    CMABState,
    FiniteClassCMAB,
    epoch_end,
    epsilon_greedy,
    falcon,
    finite_class_learner,
    inverse_gap_weighting,
    logistic_cmab,
    regret_trace,
    sample_action,
    squarecb,
)
from jaxopt_icml.online.opo import OPOPolicy, counterfactual_bonus, opo_cmab, opo_policy
from jaxopt_icml.online.two_point_bco import (
    BCOState,
    Domain,
    QuadraticStream,
    ball_domain,
    box_domain,
    one_point_box_blo,
    optimistic_ogd,
    optimistic_two_point_bco,
    quadratic_stream,
    simplex_domain,
    tangent_direction,
)
from jaxopt_icml.online.observation_sf import (
    KalmanState,
    RLSState,
    SpectralState,
    hankel_factor,
    hankel_matrix,
    kalman_predictor,
    online_ar,
    osf,
    persistence,
    rls_ar,
    spectral_filtering,
    spectral_filters,
)
from jaxopt_icml.online.sf_systems import (
    LinearDynamicalSystem,
    LorenzSystem,
    Trajectory,
    marginal_lds,
    separated_angles,
)
from jaxopt_icml.online.streaming_pca import (
    GaussianStream,
    OjaState,
    SampleCovarianceState,
    adaptive_grouse,
    compressed_oja,
    compressed_step,
    inverse_time_schedule,
    linearised_constant,
    nonadaptive_oja,
    oja,
    orthogonal_direction,
    run_at,
    sample_covariance_pca,
    sin2,
    spiked_stream,
    top_eigenvector,
)
