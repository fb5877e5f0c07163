r"""A quadratic whose minimiser drifts: the benchmark of momentum under distribution shift.

At time :math:`t` the objective is

.. math:: f_t(\theta) = \tfrac12 (\theta - \theta^\star_t)^\top H (\theta - \theta^\star_t),
    \qquad H = \mathrm{diag}(h_1, \dots, h_d),

the oracle returns :math:`g_t(\theta) = H(\theta - \theta^\star_t) + \sigma \varepsilon_t` with
:math:`\varepsilon_t \sim N(0, I_d)`, and after the step the minimiser moves:

.. math:: \theta^\star_{t+1} = \theta^\star_t + v + \frac{\Delta}{\sqrt d}\,\xi_t
    + a\big(\sin(\omega (t+1)) - \sin(\omega t)\big)\,u, \qquad \xi_t \sim N(0, I_d),

a constant velocity :math:`v` (linear drift), a random walk with per-step displacement
:math:`E\|\theta^\star_{t+1} - \theta^\star_t\|^2 = \Delta^2` (for :math:`v = 0, a = 0`) and a
sinusoid of amplitude :math:`a` along :math:`u = \mathbf 1/\sqrt d`, so that
:math:`\theta^\star_t = \theta^\star_0 + v t + a \sin(\omega t) u + \text{walk}_t`. Every
component is zero unless set, so one pytree describes every drift of the experiments.

The problem is data (a ``flax.struct`` pytree: vmappable over instances, e.g. a sweep over
:math:`\sigma` and :math:`\Delta`); the moving part is a separate :class:`DriftState`
``(theta_star, t)`` carried functionally by the caller (``init`` / ``step``), never stored in
Python. Coordinates are centred on the initial minimiser: :math:`\theta^\star_0 = 0`, so an
initial point ``x0`` is also the initial error.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxopt_icml.hyperparams import check_float, compute_dtype

__all__ = ["DRIFTS", "DriftState", "DriftingQuadratic", "drifting_quadratic"]

DRIFTS = ("random_walk", "linear", "sinusoid", "none")


class DriftState(NamedTuple):
    """The moving part of a :class:`DriftingQuadratic`.

    Attributes:
      theta_star: the current minimiser :math:`\\theta^\\star_t`, shape ``(d,)``, in the
        problem's compute dtype (float32 for 16-bit problems, so that small drift increments
        are not rounded away).
      t: number of drift steps taken, int32 scalar.
    """

    theta_star: jax.Array
    t: jax.Array


class DriftingQuadratic(struct.PyTreeNode):
    """Diagonal quadratic with a drifting minimiser and Gaussian gradient noise.

    Attributes:
      hessian_eigs: diagonal of :math:`H`, shape ``(d,)`` (positive).
      noise_std: :math:`\\sigma`, gradient noise standard deviation per coordinate.
      drift_std: :math:`\\Delta`, root-mean-square norm of one random-walk step.
      velocity: :math:`v`, constant drift per step, shape ``(d,)``.
      amplitude: :math:`a`, sinusoid amplitude (along :math:`\\mathbf 1/\\sqrt d`).
      frequency: :math:`\\omega`, sinusoid angular frequency per step.
    """

    hessian_eigs: jax.Array
    noise_std: jax.Array
    drift_std: jax.Array
    velocity: jax.Array
    amplitude: jax.Array
    frequency: jax.Array

    # ------------------------------------------------------------------ constants

    @property
    def dim(self) -> int:
        return self.hessian_eigs.shape[-1]

    @property
    def lipschitz(self):
        """:math:`L = \\max_i h_i`."""
        return jnp.max(self.hessian_eigs, axis=-1)

    @property
    def strong_convexity(self):
        """:math:`\\mu = \\min_i h_i`."""
        return jnp.min(self.hessian_eigs, axis=-1)

    def _ct(self):
        return compute_dtype(self.hessian_eigs.dtype)

    # ------------------------------------------------------------------ drift

    def init(self, key=None) -> DriftState:
        """:math:`\\theta^\\star_0 = 0` and ``t = 0`` (``key`` is accepted and unused)."""
        del key
        return DriftState(jnp.zeros(self.hessian_eigs.shape, self._ct()),
                          jnp.zeros((), jnp.int32))

    def step(self, state: DriftState, key) -> DriftState:
        """One drift step :math:`\\theta^\\star_t \\to \\theta^\\star_{t+1}` (uses ``key`` for the
        random walk)."""
        ts = state.theta_star
        ct = ts.dtype
        d = ts.shape[-1]
        xi = jax.random.normal(key, ts.shape, ct)
        t = state.t.astype(ct)
        w = self.frequency.astype(ct)
        sin_step = self.amplitude.astype(ct) * (jnp.sin(w * (t + 1)) - jnp.sin(w * t))
        inc = (self.velocity.astype(ct)
               + self.drift_std.astype(ct) / jnp.sqrt(jnp.asarray(d, ct)) * xi
               + sin_step / jnp.sqrt(jnp.asarray(d, ct)))
        return DriftState(ts + inc, state.t + jnp.ones((), jnp.int32))

    # ------------------------------------------------------------------ oracle

    def grad(self, state: DriftState, theta, key=None):
        """:math:`H(\\theta - \\theta^\\star_t) + \\sigma\\varepsilon` (exact when ``key`` is None),
        computed in the compute dtype and returned in ``theta``'s dtype."""
        ct = jnp.promote_types(compute_dtype(theta.dtype), state.theta_star.dtype)
        g = self.hessian_eigs.astype(ct) * (theta.astype(ct) - state.theta_star.astype(ct))
        if key is not None:
            g = g + self.noise_std.astype(ct) * jax.random.normal(key, g.shape, ct)
        return g.astype(theta.dtype)

    def value(self, state: DriftState, theta):
        """:math:`f_t(\\theta)`, exact."""
        e = self.error(state, theta)
        return 0.5 * jnp.sum(self.hessian_eigs.astype(e.dtype) * e * e)

    def error(self, state: DriftState, theta):
        """:math:`\\theta - \\theta^\\star_t` in the compute dtype."""
        ct = jnp.promote_types(compute_dtype(theta.dtype), state.theta_star.dtype)
        return theta.astype(ct) - state.theta_star.astype(ct)

    def tracking_error(self, state: DriftState, theta):
        """:math:`\\|\\theta - \\theta^\\star_t\\|^2`, exact."""
        e = self.error(state, theta)
        return jnp.sum(e * e)


def drifting_quadratic(dim: int = 10, mu: float = 1.0, L: float = 10.0, *,
                       drift: str = "random_walk", drift_scale: float = 0.05,
                       noise_std: float = 1.0, period: float = 1000.0,
                       direction=None, dtype=jnp.float32) -> DriftingQuadratic:
    """The spec's problem: ``H = diag(linspace(mu, L, dim))`` with one kind of drift.

    Args:
      dim: dimension ``d >= 1`` (static).
      mu, L: smallest and largest curvature, ``0 < mu <= L``.
      drift: ``"random_walk"`` (``drift_std = drift_scale``), ``"linear"`` (velocity
        ``drift_scale * direction``), ``"sinusoid"`` (amplitude ``drift_scale``, period
        ``period`` steps) or ``"none"``.
      drift_scale: size of the drift, ``>= 0`` (see ``drift``).
      noise_std: gradient noise ``sigma >= 0``.
      period: sinusoid period in steps, ``> 0``.
      direction: unit direction of the linear drift, shape ``(dim,)`` (default
        ``ones / sqrt(dim)``); used as given (not normalised).
      dtype: floating dtype of the problem's arrays.

    Returns:
      A :class:`DriftingQuadratic`.

    Raises:
      ValueError: naming the argument, for an invalid ``dim``, ``drift`` or out-of-range float.
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be an int >= 1, got {dim!r}")
    if drift not in DRIFTS:
        raise ValueError(f"drift must be one of {DRIFTS}, got {drift!r}")
    check_float("mu", mu, allow_schedule=False)
    check_float("L", L, low=float(mu), strict=False, allow_schedule=False)
    check_float("drift_scale", drift_scale, strict=False, allow_schedule=False)
    check_float("noise_std", noise_std, strict=False, allow_schedule=False)
    check_float("period", period, allow_schedule=False)
    f = lambda v: jnp.asarray(v, dtype)
    if direction is None:
        direction = jnp.ones((dim,), dtype) / jnp.sqrt(jnp.asarray(dim, dtype))
    direction = jnp.asarray(direction, dtype)
    if direction.shape != (dim,):
        raise ValueError(f"direction must have shape ({dim},), got {direction.shape}")
    zero = f(0.0)
    return DriftingQuadratic(
        hessian_eigs=jnp.linspace(mu, L, dim).astype(dtype),
        noise_std=f(noise_std),
        drift_std=f(drift_scale) if drift == "random_walk" else zero,
        velocity=(drift_scale * direction if drift == "linear" else jnp.zeros((dim,), dtype)),
        amplitude=f(drift_scale) if drift == "sinusoid" else zero,
        frequency=f(2 * jnp.pi / period),
    )
