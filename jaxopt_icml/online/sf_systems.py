r"""Dynamical systems for one-step prediction, and the observation streams they produce.

The environment of an online predictor is an oracle pytree (``flax.struct``) with the method
``observe(t)``: the observation :math:`y_t` revealed at round ``t`` (after the learner has
committed to its prediction :math:`\hat y_t`). :class:`Trajectory` is that oracle: a simulated
sequence of observations, its noise-free version, and (for a linear system) the system itself, so
a reference predictor such as the Kalman filter can read the true model from the oracle. Because
trajectories are data, a ``jax.vmap`` over them runs many seeds and many systems at once.

Systems:

* :class:`LinearDynamicalSystem`: :math:`x_{t+1} = A x_t + w_t`, :math:`y_t = C x_t + v_t`,
  :math:`x_0 \sim N(0, \sigma_0^2 I)`, :math:`w_t \sim N(0, \sigma_w^2 I)`,
  :math:`v_t \sim N(0, \sigma_v^2 I)`. :func:`marginal_lds` builds the asymmetric marginally
  stable systems of the spectral-filtering experiments: ``m`` rotation blocks with
  :math:`|\lambda| = 1` and well separated angles, plus symmetric stable modes in ``[0, a_max]``.
* :class:`LorenzSystem`: the Lorenz-63 flow :math:`\dot x = \sigma(y - x)`,
  :math:`\dot y = x(\rho - z) - y`, :math:`\dot z = xy - \beta z`, integrated by classical RK4;
  all three coordinates are observed with Gaussian noise.

References:
  * E. Dogariu, A. Brahmbhatt, E. Hazan. Universal Learning of Nonlinear Dynamics. ICML 2026
    submission, arXiv 2508.11990.
  * E. N. Lorenz. Deterministic nonperiodic flow. J. Atmos. Sci., 1963.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxopt_icml.hyperparams import check_float, check_static_int

__all__ = [
    "Trajectory",
    "LinearDynamicalSystem",
    "LorenzSystem",
    "marginal_lds",
    "separated_angles",
]


class Trajectory(struct.PyTreeNode):
    """An observation stream: the oracle of an online one-step predictor.

    Attributes:
      ys: observations :math:`y_0, \\dots, y_{T-1}`, shape ``(T, d)``.
      clean: the noise-free observations :math:`C x_t` (or the exact state of a nonlinear
        system), shape ``(T, d)``; diagnostics only, never shown to a learner.
      system: the generating system (a :class:`LinearDynamicalSystem`) or ``None``.
    """

    ys: jax.Array
    clean: jax.Array
    system: Any = None

    @property
    def num_steps(self) -> int:
        return self.ys.shape[-2]

    @property
    def obs_dim(self) -> int:
        return self.ys.shape[-1]

    def observe(self, t, key=None):
        """:math:`y_t` (``key`` is accepted and unused: the noise was drawn at simulation)."""
        del key
        return jax.lax.dynamic_index_in_dim(self.ys, t, axis=-2, keepdims=False)


class LinearDynamicalSystem(struct.PyTreeNode):
    """:math:`x_{t+1} = A x_t + w_t`, :math:`y_t = C x_t + v_t`, :math:`x_0 \\sim N(0, s_0^2 I)`.

    Attributes:
      A: transition matrix, shape ``(n, n)``.
      C: observation matrix, shape ``(d, n)``.
      obs_noise: :math:`\\sigma_v`, observation noise standard deviation (scalar).
      process_noise: :math:`\\sigma_w`, process noise standard deviation (scalar).
      init_scale: :math:`s_0`, standard deviation of the initial state (scalar).
    """

    A: jax.Array
    C: jax.Array
    obs_noise: jax.Array
    process_noise: jax.Array
    init_scale: jax.Array

    @property
    def hidden_dim(self) -> int:
        return self.A.shape[-1]

    @property
    def obs_dim(self) -> int:
        return self.C.shape[-2]

    def simulate(self, key, num_steps: int) -> Trajectory:
        """Draws :math:`x_0` and the noises, returns the :class:`Trajectory` of ``num_steps``
        observations (one ``lax.scan``)."""
        num_steps = check_static_int("num_steps", num_steps)
        dt = self.A.dtype
        n, d = self.hidden_dim, self.obs_dim
        k0, kw, kv = jax.random.split(key, 3)
        x0 = self.init_scale * jax.random.normal(k0, (n,), dt)
        w = self.process_noise * jax.random.normal(kw, (num_steps, n), dt)
        v = self.obs_noise * jax.random.normal(kv, (num_steps, d), dt)

        def body(x, wt):
            return self.A @ x + wt, self.C @ x

        _, clean = jax.lax.scan(body, x0, w)
        return Trajectory(clean + v, clean, self)


def separated_angles(key, num: int, min_gap: float = 0.3, dtype=jnp.float32) -> jax.Array:
    """``num`` sorted angles in ``(min_gap, pi - min_gap)`` with pairwise gaps ``>= min_gap``.

    The free length ``pi - (num + 1) min_gap`` is split at uniform random proportions
    (normalised exponentials) between the ``num + 1`` gaps, so no rejection loop is needed.

    Raises:
      ValueError: when ``num`` angles with that gap do not fit in ``(0, pi)``.
    """
    num = check_static_int("num", num)
    check_float("min_gap", min_gap, allow_schedule=False)
    slack = jnp.pi - (num + 1) * min_gap
    if slack <= 0:
        raise ValueError(f"min_gap={min_gap!r} is too large for num={num} angles in (0, pi)")
    e = jax.random.exponential(key, (num + 1,), dtype)
    gaps = min_gap + slack * e / jnp.sum(e)
    return jnp.cumsum(gaps)[:num]


def marginal_lds(key, *, hidden_dim: int = 32, num_rotations: int = 4, obs_dim: int = 4,
                 max_stable: float = 0.999, min_gap: float = 0.3, obs_noise: float = 0.0,
                 process_noise: float = 0.0, marginal_key=None,
                 dtype=jnp.float32) -> LinearDynamicalSystem:
    r"""An asymmetric marginally stable LDS in modal form.

    :math:`A = \mathrm{blockdiag}(R(\theta_1), \dots, R(\theta_m), \mathrm{diag}(\lambda))` with
    rotations :math:`R(\theta)` (eigenvalues :math:`e^{\pm i\theta}`, :math:`|\lambda| = 1`),
    angles from :func:`separated_angles` and ``hidden_dim - 2m`` symmetric stable modes
    :math:`\lambda \sim U[0, a_{max}]`. :math:`C` has independent Gaussian columns, variance
    :math:`1/(2m)` on the marginal block and :math:`1/(n - 2m)` on the stable one, so both parts
    start with unit expected observation energy per coordinate. The modal basis loses nothing:
    for a Gaussian :math:`C` and :math:`x_0 \sim N(0, I)`, any orthogonal change of basis
    :math:`Q A Q^\top` gives observations with the same law.

    Args:
      key: PRNG key of the stable part (eigenvalues and ``C`` columns).
      hidden_dim: ``n >= 2 m`` (static).
      num_rotations: ``m >= 1`` marginal rotation blocks (static).
      obs_dim: ``d >= 1`` (static).
      max_stable: :math:`a_{max}` in ``(0, 1]``.
      min_gap: minimal angle separation (and distance to 0 and pi), ``> 0``.
      obs_noise, process_noise: :math:`\sigma_v, \sigma_w \ge 0`.
      marginal_key: key of the marginal part (angles and their ``C`` columns); default ``key``.
        Sharing it across calls with different ``hidden_dim`` keeps the same marginal modes.
      dtype: floating dtype.

    Returns:
      A :class:`LinearDynamicalSystem` with ``init_scale = 1``.
    """
    n = check_static_int("hidden_dim", hidden_dim)
    m = check_static_int("num_rotations", num_rotations)
    d = check_static_int("obs_dim", obs_dim)
    if n < 2 * m:
        raise ValueError(f"hidden_dim must be >= 2 * num_rotations = {2 * m}, got {n}")
    check_float("max_stable", max_stable, high=1.0, allow_schedule=False)
    check_float("obs_noise", obs_noise, strict=False, allow_schedule=False)
    check_float("process_noise", process_noise, strict=False, allow_schedule=False)
    marginal_key = key if marginal_key is None else marginal_key
    ka, kc = jax.random.split(marginal_key)
    ks, kcs = jax.random.split(jax.random.fold_in(key, 1))
    theta = separated_angles(ka, m, min_gap, dtype)
    c, s = jnp.cos(theta), jnp.sin(theta)
    rot = jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)  # (m, 2, 2)
    # block diagonal without scatters: E[i, a, j, b] = delta_ij rot[i, a, b]
    A = (jnp.eye(m, dtype=dtype)[:, None, :, None] * rot[:, :, None, :]).reshape(2 * m, 2 * m)
    ns = n - 2 * m
    C = jax.random.normal(kc, (d, 2 * m), dtype) / jnp.sqrt(jnp.asarray(2 * m, dtype))
    if ns:
        lam = max_stable * jax.random.uniform(ks, (ns,), dtype)
        A = jnp.block([[A, jnp.zeros((2 * m, ns), dtype)],
                       [jnp.zeros((ns, 2 * m), dtype), jnp.diag(lam)]])
        C_st = jax.random.normal(kcs, (d, ns), dtype) / jnp.sqrt(jnp.asarray(ns, dtype))
        C = jnp.concatenate([C, C_st], 1)
    f = lambda v: jnp.asarray(v, dtype)
    return LinearDynamicalSystem(A, C, f(obs_noise), f(process_noise), f(1.0))


class LorenzSystem(struct.PyTreeNode):
    """The Lorenz-63 flow integrated by RK4 with step ``dt``.

    Attributes:
      sigma, rho, beta: the flow's parameters (classically 10, 28, 8/3).
      dt: integration step.
    """

    sigma: jax.Array
    rho: jax.Array
    beta: jax.Array
    dt: jax.Array

    @classmethod
    def create(cls, sigma: float = 10.0, rho: float = 28.0, beta: float = 8.0 / 3.0,
               dt: float = 0.01, dtype=jnp.float32) -> LorenzSystem:
        for name, v in (("sigma", sigma), ("rho", rho), ("beta", beta), ("dt", dt)):
            check_float(name, v, allow_schedule=False)
        f = lambda v: jnp.asarray(v, dtype)
        return cls(f(sigma), f(rho), f(beta), f(dt))

    def field(self, x):
        """The vector field :math:`f(x)`."""
        return jnp.stack([self.sigma * (x[1] - x[0]), x[0] * (self.rho - x[2]) - x[1],
                          x[0] * x[1] - self.beta * x[2]])

    def step(self, x):
        """One classical RK4 step of length ``dt``."""
        h = self.dt
        k1 = self.field(x)
        k2 = self.field(x + 0.5 * h * k1)
        k3 = self.field(x + 0.5 * h * k2)
        k4 = self.field(x + h * k3)
        return x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    def simulate(self, key, num_steps: int, *, obs_noise: float = 0.01,
                 burn_in: int = 1000) -> Trajectory:
        """Starts at ``(1, 1, 25) + N(0, 1)``, discards ``burn_in`` steps (onto the attractor),
        then records ``num_steps`` states observed with noise ``N(0, obs_noise^2 I)``."""
        num_steps = check_static_int("num_steps", num_steps)
        burn_in = check_static_int("burn_in", burn_in, low=0)
        check_float("obs_noise", obs_noise, strict=False, allow_schedule=False)
        dt = self.dt.dtype
        k0, kv = jax.random.split(key)
        x0 = jnp.asarray([1.0, 1.0, 25.0], dt) + jax.random.normal(k0, (3,), dt)
        x0 = jax.lax.fori_loop(0, burn_in, lambda i, x: self.step(x), x0)
        _, clean = jax.lax.scan(lambda x, _: (self.step(x), x), x0, None, length=num_steps)
        ys = clean + jnp.asarray(obs_noise, dt) * jax.random.normal(kv, clean.shape, dt)
        return Trajectory(ys, clean, None)
