r"""Momentum under drift: SGD, heavy ball and Nesterov tracking a moving optimum.

The methods are optax's own (``optax.sgd`` with and without ``momentum``/``nesterov``); what
this module adds is the tracking loop and the exact theory of the linear case:

* :func:`tracking_optimizer` builds the three methods with the paper's step-size conventions
  (raw or *matched* effective step :math:`\eta_{\rm eff} = \eta/(1-\beta)`), validated;
* :func:`tracker` runs any optax transformation on a drifting problem
  (:class:`jaxopt_icml.problems.drifting.DriftingQuadratic`) as a ``base.OracleAlgorithm``: the
  gradient is taken on the current objective :math:`f_t`, then the minimiser drifts; the drift
  state lives in the algorithm state (functional, vmappable over seeds and problems);
  :func:`tracking_run` is one ``lax.scan`` of it;
* :func:`tracking_error_decomposition`, :func:`tracking_mse_curve`,
  :func:`stationary_tracking_mse` and :func:`steady_state_lag`: on a diagonal quadratic with
  Gaussian gradient noise and random-walk (or constant-velocity) drift the error dynamics are
  linear, per eigen-direction a 2x2 system, so the expected tracking error has an exact closed
  form that splits into a transient, a noise part (:math:`\propto\sigma^2`) and a drift part
  (:math:`\propto\Delta^2`).

The error dynamics (derived here, per eigenvalue :math:`h` of :math:`H`). With
:math:`e_t = p_t - \theta^\star_t` (``p`` = optax's parameters), :math:`m_t` optax's momentum
trace (:math:`m_0 = 0`), :math:`g_t = h e_t + \sigma\varepsilon_t` and
:math:`\theta^\star_{t+1} = \theta^\star_t + \delta_t`, the state :math:`z_t = (e_t, m_t)` obeys
:math:`z_{t+1} = A z_t + b_\varepsilon \sigma\varepsilon_t + b_\delta \delta_t` with

.. math::

    \text{heavy ball: } A = \begin{pmatrix} 1 - \eta h & -\eta\beta \\ h & \beta\end{pmatrix},
    \ b_\varepsilon = \begin{pmatrix}-\eta \\ 1\end{pmatrix};\qquad
    \text{Nesterov: } A = \begin{pmatrix} 1 - \eta(1+\beta) h & -\eta\beta^2 \\ h & \beta
    \end{pmatrix},\ b_\varepsilon = \begin{pmatrix}-\eta(1+\beta) \\ 1\end{pmatrix},

:math:`b_\delta = (-1, 0)^\top`, and SGD is heavy ball with :math:`\beta = 0`. For white
:math:`\varepsilon_t, \delta_t` (:math:`E\delta_t\delta_t^\top = \Delta^2 I/d`) the covariance
:math:`P` of :math:`z` solves the discrete Lyapunov equation
:math:`P = A P A^\top + \sigma^2 b_\varepsilon b_\varepsilon^\top + (\Delta^2/d)\, b_\delta
b_\delta^\top`, which is linear in :math:`(\sigma^2, \Delta^2)`: :math:`P = \sigma^2 P_\varepsilon
+ (\Delta^2/d) P_\delta`. From a deterministic start :math:`z_0 = (x_0, 0)` the exact finite-time
error is

.. math::

    E\|c^\top z_t\|^2 = \underbrace{(c^\top A^t z_0)^2}_{\text{transient}}
    + \underbrace{\sigma^2 c^\top (P_\varepsilon - A^t P_\varepsilon A^{t\top}) c}_{\text{noise}}
    + \underbrace{\tfrac{\Delta^2}{d} c^\top (P_\delta - A^t P_\delta A^{t\top}) c}_{\text{drift}},

summed over eigen-directions; the transient decays like :math:`\rho(A)^{2t}`, the other two
rise to their stationary values. ``c`` reads the error off the state: :math:`c = (1, 0)` for the
parameters optax returns, and for Nesterov's *iterate* :math:`\theta_t` (see below)
:math:`c = (1, \beta\eta)`.

Theory (what the experiment measures, ``experiments/optim/momentum_tracking.py``): at matched
effective step the drift part of heavy ball / Nesterov exceeds SGD's by a factor that diverges as
:math:`\beta \to 1` (closed form on the spec's problem: 2.4 at :math:`\beta = 0.9`, 16.4 at
0.99), while the noise part is slightly smaller (closed-form ratio 0.79-0.94): momentum is no
free lunch against noise and pays for drift. The exact factor grows like
:math:`(1-\beta)^{-1}` (local exponent :math:`\to 1`), not the :math:`(1-\beta)^{-2}` quoted
for the paper's upper bound.

References:
  S. Sahu, C. J. Hogan, M. T. Wells, "On the Provable Suboptimality of Momentum SGD in
  Nonstationary Stochastic Optimization", ICML 2026, arXiv:2601.12238 (the three-term bound; its
  constants are not transcribed here: the closed forms above are exact for the linear case).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_choice, check_float, check_unit_interval, compute_dtype
from jaxopt_icml.trees import with_shape_check

__all__ = [
    "tracking_optimizer",
    "tracker",
    "tracking_run",
    "tracking_error_decomposition",
    "stationary_tracking_mse",
    "tracking_mse_curve",
    "steady_state_lag",
    "linear_error_dynamics",
    "ErrorDynamics",
    "TrackerState",
    "TrackingCurve",
    "TrackingDecomposition",
    "curve_from_dynamics",
    "decomposition_from_dynamics",
]

PyTree = Any

METHODS = ("sgd", "heavy_ball", "nesterov")
POINTS = ("iterate", "params")


# --------------------------------------------------------------------------- validation


def _check_method(method):
    return check_choice("method", method, METHODS)


def _check_point(point):
    return check_choice("point", point, POINTS)


def _check_momentum(momentum):
    return check_unit_interval("momentum", momentum)


# --------------------------------------------------------------------------- the methods


def tracking_optimizer(method: str, learning_rate: optax.ScalarOrSchedule,
                       momentum: float = 0.9, *,
                       matched_step: bool = False) -> optax.GradientTransformation:
    r"""SGD, Polyak heavy ball or Nesterov as optax builds them, with the paper's step rules.

    .. math::

        \text{sgd: } p_{t+1} = p_t - \eta g_t; \qquad
        \text{heavy\_ball: } m_{t+1} = \beta m_t + g_t,\ p_{t+1} = p_t - \eta m_{t+1}; \qquad
        \text{nesterov: } m_{t+1} = \beta m_t + g_t,\ p_{t+1} = p_t - \eta (g_t + \beta m_{t+1}),

    with :math:`g_t` the stochastic gradient at :math:`p_t` and :math:`m_0 = 0`. With
    ``matched_step=True`` the step is :math:`\eta = \eta_{\rm eff}(1 - \beta)`
    (``learning_rate`` is then :math:`\eta_{\rm eff}`), so all methods take the same
    long-run step :math:`\eta/(1-\beta)` on a constant gradient and their noise floors are
    comparable; this is also optax's trace momentum rewritten in EMA form
    :math:`m \leftarrow \beta m + (1-\beta) g` with step :math:`\eta_{\rm eff}`.

    Args:
      method: ``"sgd"``, ``"heavy_ball"`` or ``"nesterov"`` (static).
      learning_rate: :math:`\eta` (or :math:`\eta_{\rm eff}` when ``matched_step``), a float
        ``> 0`` or an optax schedule.
      momentum: :math:`\beta \in [0, 1)` (default 0.9); ignored by ``"sgd"`` but still
        validated.
      matched_step: scale the step by :math:`1 - \beta` (static bool, default ``False``).

    Returns:
      ``optax.sgd(...)``: ``optax.sgd(eta)`` for SGD, ``optax.sgd(eta, momentum=beta)`` for
      heavy ball, ``optax.sgd(eta, momentum=beta, nesterov=True)`` for Nesterov (same init,
      state and updates), whose ``update`` first checks that the updates and the params (when
      given) agree in tree structure and leaf shapes, raising a ``ValueError`` that names the
      leaf (a trace-time check). Under ``optax.inject_hyperparams`` ``learning_rate`` and
      ``momentum`` are injectable.

    Example:
      >>> tx = tracking_optimizer("heavy_ball", 0.05, 0.9, matched_step=True)  # eta = 0.005

    Paper mapping:
      Heavy ball here is optax's trace form, which IS the Polyak form
      :math:`\theta_{t+1} = \theta_t - \eta g(\theta_t) + \beta(\theta_t - \theta_{t-1})` with the
      same :math:`\eta` (:math:`\theta_t - \theta_{t-1} = -\eta m_t`): optax's parameters are
      the Polyak iterates and the gradient is taken at them. Nesterov's
      :math:`y_t = \theta_t + \beta(\theta_t - \theta_{t-1}),\ \theta_{t+1} = y_t - \eta g(y_t)`
      is optax's ``nesterov=True`` with the same :math:`\eta`, but optax's parameters are the
      look-ahead points :math:`y_t` (where the gradient is taken); the iterate is
      :math:`\theta_t = p_t + \beta\eta m_t`. Both are checked against NumPy recurrences of
      the paper's forms in ``tests/optim/test_momentum_tracking.py``.
    """
    _check_method(method)
    check_float("learning_rate", learning_rate)
    _check_momentum(momentum)
    if not isinstance(matched_step, bool):
        raise ValueError(f"matched_step must be a bool, got {matched_step!r}")
    if method == "sgd":
        return with_shape_check(optax.sgd(learning_rate), "tracking_optimizer")
    lr = learning_rate
    if matched_step:
        if callable(learning_rate):
            lr = lambda count: learning_rate(count) * (1.0 - momentum)
        else:
            lr = learning_rate * (1.0 - momentum)
    return with_shape_check(optax.sgd(lr, momentum=momentum, nesterov=method == "nesterov"),
                            "tracking_optimizer")



# --------------------------------------------------------------------------- the loop


class TrackerState(NamedTuple):
    """State of :func:`tracker`.

    Attributes:
      x: the optimizer's parameters :math:`p_t`.
      inner: the optimizer's state.
      drift: the problem's :class:`~jaxopt_icml.problems.drifting.DriftState`
        :math:`(\\theta^\\star_t, t)`, initialised at :math:`\\theta^\\star_0 = 0`.
    """

    x: PyTree
    inner: PyTree
    drift: PyTree


def tracker(optimizer: optax.GradientTransformation) -> base.OracleAlgorithm:
    r"""Runs ``optimizer`` on a drifting problem: one noisy gradient of :math:`f_t`, then drift.

    Each update does, with independent keys for the two draws,

    .. math::

        g_t = \nabla f_t(p_t) + \sigma\varepsilon_t,\quad (u_t, s_{t+1}) =
        \text{optimizer}(g_t, s_t, p_t),\quad p_{t+1} = p_t + u_t,\quad
        \theta^\star_{t+1} = \text{drift}(\theta^\star_t),

    so every method sees the current objective and the tracking error recorded at step ``t``
    is :math:`\|p_{t+1} - \theta^\star_{t+1}\|^2` (the error of the new point against the new
    objective, i.e. :math:`\|e_{t+1}\|^2` in the module's notation).

    Args:
      optimizer: an ``optax.GradientTransformation`` on ``(d,)`` parameters.

    Returns:
      An ``OracleAlgorithm`` with ``init(x0, key)`` (:math:`\theta^\star_0 = 0`, so ``x0`` is the
      initial error) and ``update(state, problem, key)`` where ``problem`` has
      ``init()``, ``step(drift_state, key)``, ``grad(drift_state, x, key)`` and
      ``tracking_error(drift_state, x)`` (a ``DriftingQuadratic``). ``Step.info`` holds
      ``oracle_calls`` (1) and ``tracking_error``. Build it once and reuse the object:
      ``base.run_seeds`` caches its compiled program on the algorithm object.

    Raises:
      ValueError: if ``optimizer`` is not an optax transformation.

    Example:
      >>> from jaxopt_icml.problems.drifting import drifting_quadratic
      >>> prob = drifting_quadratic(10, 1.0, 10.0, drift_scale=0.05, noise_std=1.0)
      >>> alg = tracker(tracking_optimizer("heavy_ball", 0.05, 0.9, matched_step=True))
      >>> keys = jax.random.split(jax.random.PRNGKey(0), 8)
      >>> _, err = base.run_seeds(alg, jnp.ones(10), prob, keys, 2000,
      ...                         trace_fn=lambda step, state, p: step.info["tracking_error"])
      >>> err.shape  # (seeds, steps): ||theta_t - theta*_t||^2 per step
      (8, 2000)

    Paper mapping:
      :math:`f_t` = ``problem`` at ``drift.t``; :math:`\theta^\star_t` = ``state.drift.theta_star``;
      :math:`g_t` = ``problem.grad(drift, x, key)`` (variance :math:`\sigma^2` per coordinate);
      the paper's tracking error :math:`E\|\theta_t - \theta^\star_t\|^2` is
      ``info["tracking_error"]`` for SGD and heavy ball; for Nesterov it is measured at optax's
      look-ahead :math:`y_t` there, and the experiment reads the iterate
      :math:`\theta_t = y_t + \beta\eta m_t` from ``state.inner`` (see
      :func:`tracking_optimizer`). The drift is applied after the step, the same for every
      method (the spec's pitfall).

    Theory:
      :func:`tracking_mse_curve` gives the exact expectation of this loop on a
      ``DriftingQuadratic``; ``tests/optim/test_momentum_tracking.py`` checks the loop against
      it (exactly without noise, by a z-test with noise) and
      ``experiments/optim/momentum_tracking.py`` reproduces the paper's claims with it.

    References:
      S. Sahu, C. J. Hogan, M. T. Wells, "On the Provable Suboptimality of Momentum SGD in
      Nonstationary Stochastic Optimization", ICML 2026, arXiv:2601.12238.
    """
    if not isinstance(optimizer, optax.GradientTransformation
                      | optax.GradientTransformationExtraArgs):
        raise ValueError("optimizer must be an optax.GradientTransformation, got "
                         f"{type(optimizer).__name__}")

    def init(x0, key):
        del key
        ct = compute_dtype(x0.dtype)
        drift = _zero_drift(x0.shape, ct)
        return TrackerState(x=x0, inner=optimizer.init(x0), drift=drift)

    def update(state, problem, key):
        k_grad, k_drift = jax.random.split(key)
        g = problem.grad(state.drift, state.x, k_grad)
        updates, inner = optimizer.update(g, state.inner, state.x)
        x = optax.apply_updates(state.x, updates)
        drift = problem.step(state.drift, k_drift)
        drift = type(state.drift)(*(n.astype(o.dtype) for n, o in zip(drift, state.drift,
                                                                        strict=True)))
        err = problem.tracking_error(drift, x)
        info = {"oracle_calls": jnp.asarray(1, jnp.int32),
                "tracking_error": err.astype(compute_dtype(x.dtype))}
        return base.Step(x=x, info=info), TrackerState(x=x, inner=inner, drift=drift)

    return base.OracleAlgorithm(init=init, update=update)


def _zero_drift(shape, dtype):
    from jaxopt_icml.problems.drifting import DriftState

    return DriftState(jnp.zeros(shape, dtype), jnp.zeros((), jnp.int32))


def _error_trace(step, state, problem):
    del state, problem
    return step.info["tracking_error"]


def tracking_run(optimizer: optax.GradientTransformation, problem, x0, key, num_steps: int, *,
                 trace_fn: Callable | None = None):
    """``num_steps`` updates of :func:`tracker` as one ``lax.scan`` (see ``base.run``).

    Args:
      optimizer: an optax transformation (e.g. from :func:`tracking_optimizer`).
      problem: a ``DriftingQuadratic``.
      x0: initial point ``(d,)`` (= initial error, since :math:`\\theta^\\star_0 = 0`).
      key: PRNG key.
      num_steps: static positive int.
      trace_fn: ``trace_fn(step, state, problem)``; default: the tracking error
        :math:`\\|p_{t+1} - \\theta^\\star_{t+1}\\|^2`, shape ``(num_steps,)``.

    Returns:
      ``(final TrackerState, trace)``. Vmap it over keys (seeds) and problems, or use
      ``base.run_seeds(tracker(optimizer), ...)``.
    """
    return base.run(tracker(optimizer), x0, problem, key, num_steps,
                    trace_fn=_error_trace if trace_fn is None else trace_fn)


# --------------------------------------------------------------------------- closed form


class TrackingDecomposition(NamedTuple):
    """Stationary tracking MSE :math:`\\lim_t E\\|c^\\top z_t\\|^2` and its two parts.

    Attributes:
      noise: noise part, :math:`\\sigma^2 \\sum_i c^\\top P_{\\varepsilon,i} c`.
      drift: drift part, :math:`(\\Delta^2/d) \\sum_i c^\\top P_{\\delta,i} c`.
      total: ``noise + drift``.
      noise_per_direction, drift_per_direction: the same per eigen-direction, shape ``(d,)``.
      spectral_radius: :math:`\\max_i \\rho(A_i)`; the transient decays like its ``2t``-th power.
      stable: ``spectral_radius < 1`` (otherwise every part is ``inf``).
    """

    noise: jax.Array
    drift: jax.Array
    total: jax.Array
    noise_per_direction: jax.Array
    drift_per_direction: jax.Array
    spectral_radius: jax.Array
    stable: jax.Array


class TrackingCurve(NamedTuple):
    """Exact expected tracking error at ``t = 0..num_steps`` (shape ``(num_steps + 1,)`` each)."""

    transient: jax.Array
    noise: jax.Array
    drift: jax.Array
    total: jax.Array


class ErrorDynamics(NamedTuple):
    r"""Per-direction linear error dynamics, read out as :math:`c^\top z_t`:
    :math:`z_{t+1} = A z_t + b_\varepsilon\sigma\varepsilon_t + b_\delta\delta_t` (leading axis:
    eigen-directions).

    Attributes:
      A: ``(d, 2, 2)``; b_noise: ``(d, 2)``; b_drift: ``(d, 2)``; readout: ``c``, ``(d, 2)``.
    """

    A: jax.Array
    b_noise: jax.Array
    b_drift: jax.Array
    readout: jax.Array


def _float_dtype(*xs):
    return jnp.promote_types(jnp.result_type(*[jnp.asarray(x) for x in xs]), jnp.float32)


def _validate(method, eta, beta, sigma, drift_std, point):
    _check_method(method)
    _check_point(point)
    check_float("eta", eta, allow_schedule=False)
    _check_momentum(beta)
    check_float("sigma", sigma, strict=False, allow_schedule=False)
    check_float("drift_std", drift_std, strict=False, allow_schedule=False)


def linear_error_dynamics(method: str, eta, beta, hessian_eigs, *, point: str = "iterate"):
    r"""The per-direction linear system of the tracking error (see the module docstring).

    Args:
      method: ``"sgd"``, ``"heavy_ball"`` or ``"nesterov"`` (static).
      eta: the RAW step :math:`\eta > 0` given to optax (for matched steps pass
        :math:`\eta_{\rm eff}(1-\beta)`).
      beta: momentum :math:`\beta \in [0, 1)` (ignored by SGD).
      hessian_eigs: eigenvalues of :math:`H`, shape ``(d,)``.
      point: ``"iterate"`` (the paper's :math:`\theta_t`; for Nesterov
        :math:`p_t + \beta\eta m_t`) or ``"params"`` (optax's parameters :math:`p_t`; for
        Nesterov the look-ahead :math:`y_t`). Identical for SGD and heavy ball. Static.

    Returns:
      :class:`ErrorDynamics` ``(A, b_noise, b_drift, c)`` with shapes ``(d, 2, 2)``, ``(d, 2)``,
      ``(d, 2)``, ``(d, 2)``. Systems of different methods can be stacked and passed, vmapped,
      to :func:`decomposition_from_dynamics` and :func:`curve_from_dynamics` (one compiled
      program for every method).
    """
    _check_method(method)
    _check_point(point)
    dt = _float_dtype(hessian_eigs, eta, beta)
    h = jnp.asarray(hessian_eigs, dt)
    eta = jnp.asarray(eta, dt)
    beta = jnp.zeros((), dt) if method == "sgd" else jnp.asarray(beta, dt)
    one, zero = jnp.ones_like(h), jnp.zeros_like(h)
    if method == "nesterov":
        a00, a01 = 1 - eta * (1 + beta) * h, -eta * beta**2 * one
        b_noise = jnp.stack([-eta * (1 + beta) * one, one], -1)
    else:
        a00, a01 = 1 - eta * h, -eta * beta * one
        b_noise = jnp.stack([-eta * one, one], -1)
    A = jnp.stack([jnp.stack([a00, a01], -1), jnp.stack([h, beta * one], -1)], -2)
    b_drift = jnp.stack([-one, zero], -1)
    read = beta * eta if (method == "nesterov" and point == "iterate") else jnp.zeros((), dt)
    c = jnp.stack([one, read * one], -1)
    return ErrorDynamics(A, b_noise, b_drift, c)


def _spectral_radius(A):
    tr = A[..., 0, 0] + A[..., 1, 1]
    det = A[..., 0, 0] * A[..., 1, 1] - A[..., 0, 1] * A[..., 1, 0]
    disc = tr * tr - 4 * det
    sq = jnp.sqrt(jnp.maximum(disc, 0))
    real = jnp.maximum(jnp.abs(tr + sq), jnp.abs(tr - sq)) / 2
    return jnp.where(disc >= 0, real, jnp.sqrt(jnp.maximum(det, 0)))


def _det3(m):
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def _lyapunov(A, b):
    """``P = A P A^T + b b^T`` for a batch of 2x2 systems.

    ``P`` is symmetric, so the equation is a 3x3 linear system in ``(P00, P01, P11)``; it is
    solved by Cramer's rule (elementwise arithmetic: exact, batched, cheap to compile)."""
    a, bb, c, d = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
    rhs = [b[..., 0] ** 2, b[..., 0] * b[..., 1], b[..., 1] ** 2]
    M = [[1 - a * a, -2 * a * bb, -bb * bb],
         [-a * c, 1 - (a * d + bb * c), -bb * d],
         [-c * c, -2 * c * d, 1 - d * d]]
    det = _det3(M)

    def with_column(j):
        return [[rhs[i] if k == j else M[i][k] for k in range(3)] for i in range(3)]

    p, q, r = (_det3(with_column(j)) / det for j in range(3))
    return jnp.stack([jnp.stack([p, q], -1), jnp.stack([q, r], -1)], -2)


def _quad(c, P):
    return jnp.einsum("...i,...ij,...j->...", c, P, c)


def tracking_error_decomposition(method: str, eta, beta, hessian_eigs, sigma, drift_std, *,
                                 point: str = "iterate") -> TrackingDecomposition:
    r"""Exact stationary tracking MSE on a diagonal quadratic, split into noise and drift.

    For gradient noise :math:`\sigma\varepsilon_t` (:math:`\varepsilon_t \sim N(0, I_d)`) and a
    random walk :math:`\theta^\star_{t+1} = \theta^\star_t + (\Delta/\sqrt d)\xi_t`, the stationary
    :math:`E\|\theta_t - \theta^\star_t\|^2` is

    .. math:: \sigma^2 \sum_i c_i^\top P_{\varepsilon,i} c_i + \frac{\Delta^2}{d}\sum_i
        c_i^\top P_{\delta,i} c_i,\qquad P_{\cdot,i} = A_i P_{\cdot,i} A_i^\top + b_{\cdot}
        b_{\cdot}^\top,

    each Lyapunov equation solved exactly (a 3x3 linear system per eigen-direction, by
    Cramer's rule). The
    result is linear in :math:`(\sigma^2, \Delta^2)`, and by Gaussianity it is the whole
    stationary law of the error. Jit- and vmap-compatible in ``eta, beta, sigma, drift_std``.

    Args:
      method, eta, beta, hessian_eigs, point: as in :func:`linear_error_dynamics` (``eta`` is
        the raw optax step).
      sigma: gradient noise standard deviation per coordinate, ``>= 0``.
      drift_std: :math:`\Delta \ge 0`, the rms norm of one random-walk step.

    Returns:
      A :class:`TrackingDecomposition` (``inf`` parts when the iteration is unstable).

    Theory:
      ``experiments/optim/momentum_tracking.py`` checks it against the Monte Carlo time average of
      :func:`tracking_run` (claim ``closed_form_matches_simulation``) and the tests check it
      against independent closed forms (scalar AR(1) for SGD, the AR(2) variance formula for
      heavy ball's noise part) and a NumPy power series.
    """
    _validate(method, eta, beta, sigma, drift_std, point)
    return decomposition_from_dynamics(
        linear_error_dynamics(method, eta, beta, hessian_eigs, point=point), sigma, drift_std)


def _stationary_covariances(dyn, sigma, drift_std):
    A = dyn.A
    dt = A.dtype
    d = A.shape[-3]
    P_n = jnp.asarray(sigma, dt) ** 2 * _lyapunov(A, dyn.b_noise)
    P_d = jnp.asarray(drift_std, dt) ** 2 / d * _lyapunov(A, dyn.b_drift)
    rho = jnp.max(_spectral_radius(A), -1)
    return P_n, P_d, rho


def decomposition_from_dynamics(dynamics: ErrorDynamics, sigma,
                                drift_std) -> TrackingDecomposition:
    """:func:`tracking_error_decomposition` for a given :class:`ErrorDynamics` (unvalidated)."""
    P_n, P_d, rho = _stationary_covariances(dynamics, sigma, drift_std)
    c = dynamics.readout
    stable = rho < 1
    inf = jnp.asarray(jnp.inf, P_n.dtype)
    noise_i = jnp.where(stable, _quad(c, P_n), inf)
    drift_i = jnp.where(stable, _quad(c, P_d), inf)
    noise, drift = jnp.sum(noise_i, -1), jnp.sum(drift_i, -1)
    return TrackingDecomposition(noise, drift, noise + drift, noise_i, drift_i, rho, stable)


def stationary_tracking_mse(method: str, eta, beta, hessian_eigs, sigma, drift_std, *,
                            point: str = "iterate"):
    """The stationary tracking MSE ``noise + drift`` of :func:`tracking_error_decomposition`."""
    return tracking_error_decomposition(method, eta, beta, hessian_eigs, sigma, drift_std,
                                        point=point).total


def tracking_mse_curve(method: str, eta, beta, hessian_eigs, sigma, drift_std, initial_error,
                       num_steps: int, *, point: str = "iterate") -> TrackingCurve:
    r"""Exact :math:`E\|\theta_t - \theta^\star_t\|^2` for ``t = 0..num_steps`` and its three parts.

    From :math:`z_0 = (x_0, 0)` (optax's zero momentum, :math:`\theta^\star_0 = 0`):
    transient :math:`\sum_i (c^\top A_i^t z_{0,i})^2`, noise
    :math:`\sigma^2\sum_i c^\top(P_{\varepsilon,i} - A_i^t P_{\varepsilon,i} A_i^{t\top})c` and
    drift likewise (one ``lax.scan`` over ``t``). Index ``t`` matches the ``t - 1``-th entry
    of :func:`tracking_run`'s trace.

    Args:
      method, eta, beta, hessian_eigs, sigma, drift_std, point: as in
        :func:`tracking_error_decomposition`.
      initial_error: :math:`x_0 - \theta^\star_0`, shape ``(d,)``.
      num_steps: static int ``>= 0``.

    Returns:
      A :class:`TrackingCurve`.
    """
    _validate(method, eta, beta, sigma, drift_std, point)
    dyn = linear_error_dynamics(method, eta, beta, hessian_eigs, point=point)
    return curve_from_dynamics(dyn, sigma, drift_std, initial_error, num_steps)


def curve_from_dynamics(dynamics: ErrorDynamics, sigma, drift_std, initial_error,
                        num_steps: int) -> TrackingCurve:
    """:func:`tracking_mse_curve` for a given :class:`ErrorDynamics` (one ``lax.scan``;
    ``inf`` everywhere when the system is unstable, where the finite-time split through the
    stationary covariance does not exist)."""
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
        raise ValueError(f"num_steps must be an int >= 0, got {num_steps!r}")
    A, c = dynamics.A, dynamics.readout
    dt = A.dtype
    d = A.shape[-3]
    P_n, P_d, rho = _stationary_covariances(dynamics, sigma, drift_std)
    noise_inf, drift_inf = jnp.sum(_quad(c, P_n)), jnp.sum(_quad(c, P_d))
    z0 = jnp.stack([jnp.asarray(initial_error, dt), jnp.zeros((d,), dt)], -1)
    At = lambda M: jnp.swapaxes(M, -1, -2)

    def body(M, _):
        tr = jnp.sum(jnp.einsum("...i,...ij,...j->...", c, M, z0) ** 2)
        noise = noise_inf - jnp.sum(_quad(c, M @ P_n @ At(M)))
        drift = drift_inf - jnp.sum(_quad(c, M @ P_d @ At(M)))
        return A @ M, (tr, noise, drift)

    eye = jnp.broadcast_to(jnp.eye(2, dtype=dt), A.shape)
    _, (tr, noise, drift) = jax.lax.scan(body, eye, None, length=num_steps + 1)
    bad = jnp.where(rho < 1, jnp.zeros((), dt), jnp.asarray(jnp.inf, dt))
    return TrackingCurve(tr + bad, noise + bad, drift + bad, tr + noise + drift + bad)


def steady_state_lag(method: str, eta, beta, hessian_eigs, velocity, *, point: str = "iterate"):
    r"""Exact steady-state error under constant-velocity drift :math:`\theta^\star_{t+1} =
    \theta^\star_t + v` without noise: :math:`c^\top (I - A)^{-1} b_\delta v` per direction.

    For SGD and heavy ball (and Nesterov at ``point="params"``) this equals
    :math:`-H^{-1} v (1-\beta)/\eta = -H^{-1}v/\eta_{\rm eff}`: a constant velocity costs every
    method the same lag at matched effective step. Nesterov's iterate lags by a further
    :math:`\beta v` (:math:`\theta_t = y_t - \beta(\theta_t - \theta_{t-1})`).

    Returns:
      The lag :math:`\lim_t (\theta_t - \theta^\star_t)`, shape ``(d,)``.
    """
    _check_method(method)
    _check_point(point)
    check_float("eta", eta, allow_schedule=False)
    _check_momentum(beta)
    A, _, b_d, c = linear_error_dynamics(method, eta, beta, hessian_eigs, point=point)
    v = jnp.asarray(velocity, A.dtype)
    # z = (I - A)^{-1} b_delta v with the explicit 2x2 inverse
    B = jnp.broadcast_to(jnp.eye(2, dtype=A.dtype), A.shape) - A
    det = B[..., 0, 0] * B[..., 1, 1] - B[..., 0, 1] * B[..., 1, 0]
    r0, r1 = b_d[..., 0] * v, b_d[..., 1] * v
    z0 = (B[..., 1, 1] * r0 - B[..., 0, 1] * r1) / det
    z1 = (B[..., 0, 0] * r1 - B[..., 1, 0] * r0) / det
    return c[..., 0] * z0 + c[..., 1] * z1
