r"""Compressed Oja: streaming top-eigenvector estimation from two adaptive measurements per sample.

Samples ``x_t`` are i.i.d., zero mean, with covariance ``S`` (eigenvalues
``lambda_1 > lambda_2 >= ...``, gap ``Delta = lambda_1 - lambda_2``, top eigenvector ``v_1``). The
estimate is a unit vector ``w_t``. Compressed Oja observes only two scalars of each sample,

.. math::
   y_t = \langle w_t, x_t\rangle,\qquad z_t = \langle u_t, x_t\rangle,\qquad
   u_t \sim \mathrm{Unif}\{u : \|u\| = 1,\ u \perp w_t\},

and runs Oja's update on the unbiased sketch ``x^_t = y_t w_t + (d - 1) z_t u_t``
(``E_u[x^ | x] = x`` because ``E[(d - 1) u u^T] = I - w w^T``):

.. math::
   w_{t+1} = \frac{(1 + \eta_t y_t^2)\, w_t + \eta_t (d - 1)\, y_t z_t\, u_t}
                  {\|(1 + \eta_t y_t^2)\, w_t + \eta_t (d - 1)\, y_t z_t\, u_t\|}.

Each step rotates ``w`` towards one random direction of its complement, which costs a factor
``d`` in the noise and gives ``E sin^2(w_t, v_1) = O(lambda_1 lambda_2 d^2 / (Delta^2 t))``.

Oracles are data pytrees (:class:`GaussianStream`) with ``sample(key) -> x`` (a full sample, for
the fully observed baselines) and ``measure(directions, key) -> directions @ x`` (the SAME sample
``x`` for every row of ``directions``: the compressed measurements). Every algorithm here splits
its key as ``(k_direction, k_sample) = split(key)`` and draws the sample with ``k_sample``, so
methods run with the same key see the same data stream (common random numbers).

:func:`compressed_step` is the same step on measurements taken outside JAX (query ``w`` and
:func:`orthogonal_direction`, measure, update), for sensing hardware.

Baselines: :func:`oja` (full samples), :func:`nonadaptive_oja` (two measurements along
directions independent of ``w``), :func:`adaptive_grouse` (the geodesic GROUSE step on the same
two adaptive measurements; analysed only without noise) and :func:`sample_covariance_pca`
(top eigenvector of the running sample covariance, the fully observed oracle estimate).
:func:`run_at` runs any ``OracleAlgorithm`` as one ``lax.scan`` that records a trace only at
given checkpoints (long streams without storing every step).

References:
  * A. Saad-Falcon, B. Ancelin, J. Romberg. Global Convergence of Adaptive Sensing for Principal
    Eigenvector Estimation. ICML 2026, arXiv 2505.10882.
  * E. Oja. A simplified neuron model as a principal component analyzer. J. Math. Biology, 1982.
  * P. Jain, C. Jin, S. Kakade, P. Netrapalli, A. Sidford. Streaming PCA: matching matrix
    Bernstein and near-optimal finite sample guarantees for Oja's algorithm. COLT 2016.
  * L. Balzano, R. Nowak, B. Recht. Online identification and tracking of subspaces from highly
    incomplete information (GROUSE). Allerton 2010.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_icml import base
from jaxopt_icml.hyperparams import check_float, compute_dtype, resolve

__all__ = [
    "compressed_oja",
    "compressed_step",
    "oja",
    "nonadaptive_oja",
    "adaptive_grouse",
    "sample_covariance_pca",
    "run_at",
    "sin2",
    "orthogonal_direction",
    "top_eigenvector",
    "inverse_time_schedule",
    "linearised_constant",
    "spiked_stream",
    "GaussianStream",
    "OjaState",
    "SampleCovarianceState",
]


# --------------------------------------------------------------------------- oracle


class GaussianStream(NamedTuple):
    """Gaussian samples ``x = B (s * g)``, ``g ~ N(0, I)``: covariance ``B diag(s^2) B^T``.

    Attributes:
      scales: ``s``, square roots of the eigenvalues, sorted non-increasing, shape ``(d,)``.
      basis: orthogonal ``B`` (columns: eigenvectors), shape ``(d, d)``, or ``None`` for the
        identity (then ``S = diag(s^2)`` and ``v_1 = e_1``).
    """

    scales: jax.Array
    basis: jax.Array | None = None

    def sample(self, key: jax.Array) -> jax.Array:
        """One full sample ``x`` (shape ``(d,)``, dtype of ``scales``)."""
        v = self.scales * jax.random.normal(key, self.scales.shape, self.scales.dtype)
        return v if self.basis is None else self.basis @ v

    def measure(self, directions: jax.Array, key: jax.Array) -> jax.Array:
        """``directions @ x`` for one sample ``x = sample(key)``: one scalar per row."""
        x = self.sample(key)
        return directions @ x.astype(directions.dtype)

    @property
    def eigenvalues(self) -> jax.Array:
        return self.scales**2

    @property
    def top_eigenvector(self) -> jax.Array:
        d = self.scales.shape[-1]
        if self.basis is None:
            return jnp.zeros((d,), self.scales.dtype).at[0].set(1.0)
        return self.basis[:, 0]

    @property
    def gap(self) -> jax.Array:
        """``Delta = lambda_1 - lambda_2``."""
        lam = self.eigenvalues
        return lam[0] - lam[1]


def spiked_stream(d: int, lam1: float = 2.0, lam2: float = 1.0, *, dtype=jnp.float32,
                  basis: jax.Array | None = None) -> GaussianStream:
    """The spiked covariance ``S = diag(lam1, lam2, ..., lam2)`` (in ``basis`` if given).

    Args:
      d: dimension, static int ``>= 2``.
      lam1: top eigenvalue ``> lam2``.
      lam2: the other eigenvalues, ``>= 0`` (``0`` is the noiseless, rank-one case).
      dtype: float dtype of the oracle.
      basis: optional orthogonal ``(d, d)`` matrix of eigenvectors.

    Returns:
      A :class:`GaussianStream`.

    Example:
      >>> stream = spiked_stream(8, 2.0, 1.0)
      >>> round(float(stream.gap), 6)  # eigenvalues are scales**2 in float32
      1.0
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ValueError(f"d must be a static int >= 2, got {d!r}")
    check_float("lam2", lam2, strict=False, allow_schedule=False)
    check_float("lam1", lam1, low=float(lam2), allow_schedule=False)
    scales = np.full((d,), np.sqrt(float(lam2)))
    scales[0] = np.sqrt(float(lam1))
    b = None if basis is None else jnp.asarray(basis, dtype)
    return GaussianStream(jnp.asarray(scales, dtype), b)


# --------------------------------------------------------------------------- helpers


def sin2(w: jax.Array, v: jax.Array) -> jax.Array:
    """``sin^2`` of the angle between ``w`` and ``v``: ``1 - <w, v>^2 / (|w|^2 |v|^2)``
    (sign invariant; in ``[0, 1]``)."""
    c = jnp.vdot(w, v) ** 2 / (jnp.vdot(w, w) * jnp.vdot(v, v))
    return jnp.clip(1.0 - c, 0.0, 1.0)


def orthogonal_direction(w: jax.Array, key: jax.Array) -> jax.Array:
    """A direction uniform on the unit sphere of ``w``'s orthogonal complement (``w`` unit):
    ``u = normalize(g - <g, w> w)``, ``g ~ N(0, I)``; ``<u, w> = 0`` up to round-off."""
    g = jax.random.normal(key, w.shape, w.dtype)
    g = g - jnp.vdot(g, w) * w
    g = g - jnp.vdot(g, w) * w  # second Gram-Schmidt pass: orthogonal to round-off
    return g / jnp.linalg.norm(g)


def _normalize(v):
    return v / jnp.linalg.norm(v)


def inverse_time_schedule(gap: float, d: int, *, c: float = 2.0, t0: float | None = None
                          ) -> Callable:
    r"""``eta_t = c / (Delta (t + t0))`` with ``t0 = d^2`` by default.

    The offset ``t0`` plays the paper's warm-up role: it keeps ``eta_t (d - 1) |y z|`` well below
    one while ``w`` is still nearly orthogonal to ``v_1``. ``t0 = d^2`` rather than the spec's
    ``4 d^2``: with ``4 d^2`` a few seeds leave the near-orthogonal start so late that the seed
    mean over ``[T/4, T]`` still carries them (``experiments/online/compressed_oja.py``).

    Args:
      gap: ``Delta > 0``.
      d: dimension (static int ``>= 2``), used for the default ``t0``.
      c: ``> 1/2`` for the ``1/t`` rate (the asymptotic constant is ``c^2 / (2c - 1)``).
      t0: offset ``>= 0``; default ``d^2`` (use about ``d`` for full-sample Oja).

    Returns:
      ``schedule(count) -> eta`` (traceable).

    Example:
      >>> float(inverse_time_schedule(1.0, 4)(0))
      0.125
    """
    check_float("gap", gap, allow_schedule=False)
    check_float("c", c, allow_schedule=False)
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ValueError(f"d must be a static int >= 2, got {d!r}")
    t0 = float(d * d) if t0 is None else t0
    check_float("t0", t0, strict=False, allow_schedule=False)
    scale, offset = float(c) / float(gap), float(t0)

    def schedule(count):
        return scale / (jnp.asarray(count, jnp.float32) + offset)

    return schedule


class OjaState(NamedTuple):
    """State of the vector methods.

    Attributes:
      w: the unit-norm estimate (dtype of ``x0``).
      count: int32 number of samples used.
    """

    w: jax.Array
    count: jax.Array


def _vector_init(x0, key):
    del key
    w = x0.astype(compute_dtype(x0.dtype))
    return OjaState(_normalize(w).astype(x0.dtype), jnp.zeros([], jnp.int32))


def _info(measurements: int) -> dict:
    return {"oracle_calls": jnp.asarray(1, jnp.int32),
            "measurements": jnp.asarray(measurements, jnp.int32)}


def _check_step(step_size):
    check_float("step_size", step_size)
    return step_size


# --------------------------------------------------------------------------- methods


def compressed_step(w: jax.Array, u: jax.Array, y: jax.Array, z: jax.Array, eta: jax.Array,
                    scale: jax.Array | None = None) -> jax.Array:
    r"""One compressed Oja step from measurements taken outside JAX (e.g. by sensing hardware).

    ``normalize((1 + eta y^2) w + eta scale y z u)`` with ``scale = d - 1`` by default. Query the
    directions with ``w`` and ``u = orthogonal_direction(w, key)``, measure ``y = <w, x>`` and
    ``z = <u, x>``, then call this; :func:`compressed_oja` does the same inside an oracle loop.

    Args:
      w: unit estimate, shape ``(d,)``. u: unit direction orthogonal to ``w``.
      y, z: the two measurements. eta: step size ``> 0``. scale: ``d - 1`` if ``None``.

    Returns:
      The new unit estimate (dtype of ``w``).

    Example:
      >>> import jax.numpy as jnp
      >>> w = compressed_step(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]), 1.0, 1.0, 0.5)
      >>> [round(float(v), 4) for v in w]  # normalize([1.5, 0.5])
      [0.9487, 0.3162]
    """
    d = w.shape[-1]
    cd = compute_dtype(w.dtype)
    wc, uc = w.astype(cd), u.astype(cd)
    y, z, eta = (jnp.asarray(v).astype(cd) for v in (y, z, eta))
    c = jnp.asarray(d - 1 if scale is None else scale).astype(cd)
    return _normalize((1 + eta * y * y) * wc + eta * c * y * z * uc).astype(w.dtype)



def compressed_oja(step_size: float | Callable = 0.01, *, orth_scale: str | float = "d-1"
                   ) -> base.OracleAlgorithm:
    r"""Oja's algorithm on two adaptive measurements per sample (the paper's method).

    .. math::
       y = \langle w, x\rangle,\ z = \langle u, x\rangle,\ u \perp w\ \text{uniform};\qquad
       w \leftarrow \mathrm{normalize}\big((1 + \eta_t y^2) w + \eta_t\, c\, y z\, u\big),

    with ``c = d - 1`` (``orth_scale="d-1"``), i.e. Oja's step ``w + eta y x^`` on the unbiased
    sketch ``x^ = y w + (d - 1) z u``.

    Args:
      step_size: ``eta_t > 0``: a float or a schedule ``count -> eta`` (e.g.
        :func:`inverse_time_schedule`).
      orth_scale: ``"d-1"`` (default, the unbiased sketch) or a float ``c > 0`` multiplying the
        orthogonal measurement. Static.

    Returns:
      ``OracleAlgorithm``; ``init(x0, key)`` normalises ``x0`` (draw it at random: a uniform
      start has ``sin^2 ~ 1 - 1/d``); ``update(state, oracle, key)`` calls
      ``oracle.measure(stack([w, u]), key)`` once. ``Step.x`` is ``w``; ``info`` holds
      ``"oracle_calls"`` (1 sample) and ``"measurements"`` (2).

    Example:
      >>> import jax
      >>> stream = spiked_stream(8)
      >>> alg = compressed_oja(inverse_time_schedule(1.0, 8))
      >>> x0 = jax.random.normal(jax.random.PRNGKey(0), (8,))
      >>> _, err = base.run(alg, x0, stream, jax.random.PRNGKey(1), 2000,
      ...                   trace_fn=lambda s, st, o: sin2(s.x, o.top_eigenvector))

    Paper mapping: ``w_t`` -> ``state.w``, ``y_t, z_t`` -> the two measurements, ``u_t`` ->
    :func:`orthogonal_direction`; the sketch's ``(d - 1)`` factor is inferred (the spec's
    "unbiased version"; the paper's constants may differ); the paper's two-phase step (constant
    warm-up then ``~1/(Delta t)``) is replaced by one schedule ``c / (Delta (t + t0))`` whose
    offset ``t0 ~ d^2`` does the warm-up.

    Theory: ``E sin^2(w_t, v_1) = O(lambda_1 lambda_2 d^2 / (Delta^2 t))``, matched by a lower
    bound (claims ``compressed_*`` in ``experiments/online/compressed_oja.py``). A linearisation
    around ``v_1`` gives the constant ``c^2 / (2c - 1) (d - 1)^2 lambda_1 lambda_2 / Delta^2`` for
    ``eta_t = c / (Delta t)`` (tested in ``tests/online/test_compressed_oja.py``).

    References: Saad-Falcon, Ancelin & Romberg, ICML 2026, arXiv 2505.10882.
    """
    _check_step(step_size)
    if isinstance(orth_scale, str):
        if orth_scale != "d-1":
            raise ValueError(f"orth_scale must be 'd-1' or a float > 0, got {orth_scale!r}")
    else:
        check_float("orth_scale", orth_scale, allow_schedule=False)

    def update(state, oracle, key):
        k_dir, k_x = jax.random.split(key)
        cd = compute_dtype(state.w.dtype)
        w = state.w.astype(cd)
        u = orthogonal_direction(w, k_dir)
        y, z = oracle.measure(jnp.stack([w, u]), k_x).astype(cd)
        eta = resolve(step_size, state.count, cd)
        scale = None if isinstance(orth_scale, str) else orth_scale
        new = compressed_step(w, u, y, z, eta, scale).astype(state.w.dtype)
        return base.Step(new, _info(2)), OjaState(new, state.count + 1)

    return base.OracleAlgorithm(_vector_init, update)


def oja(step_size: float | Callable = 0.01) -> base.OracleAlgorithm:
    r"""Oja's algorithm on full samples: ``w <- normalize(w + eta_t <w, x> x)``.

    Args:
      step_size: ``eta_t > 0``, a float or a schedule ``count -> eta``.

    Returns:
      ``OracleAlgorithm`` (state :class:`OjaState`; calls ``oracle.sample(key)`` once).

    Example:
      >>> alg = oja(inverse_time_schedule(1.0, 8))

    Paper mapping: the fully observed baseline (Oja 1982), whose minimax rate is
    ``Theta(lambda_1 lambda_2 d / (Delta^2 t))``; the linearised constant for
    ``eta_t = c / (Delta t)`` is ``c^2 / (2c - 1) (d - 1) lambda_1 lambda_2 / Delta^2``.

    Theory: the exponent of the final error in ``d`` is about 1 (claim ``full_oja_d_exponent``).
    """
    _check_step(step_size)

    def update(state, oracle, key):
        _, k_x = jax.random.split(key)
        cd = compute_dtype(state.w.dtype)
        w = state.w.astype(cd)
        x = oracle.sample(k_x).astype(cd)
        eta = resolve(step_size, state.count, cd)
        new = _normalize(w + eta * jnp.vdot(w, x) * x).astype(state.w.dtype)
        info = _info(w.shape[-1])
        return base.Step(new, info), OjaState(new, state.count + 1)

    return base.OracleAlgorithm(_vector_init, update)


def nonadaptive_oja(step_size: float | Callable = 0.01) -> base.OracleAlgorithm:
    r"""Oja on two NON-adaptive measurements: directions ``a, b`` uniform on the sphere,
    independent of ``w``; with ``m_a = <a, x>``, ``m_b = <b, x>``,

    .. math::
       \hat C = \tfrac{d^2}{2}\, m_a m_b\, (a b^\top + b a^\top),\qquad
       w \leftarrow \mathrm{normalize}(w + \eta_t \hat C w),

    an unbiased estimate of ``S`` (``E[a a^T] = I/d``) from two scalars.

    Args:
      step_size: ``eta_t > 0``, a float or a schedule.

    Returns:
      ``OracleAlgorithm`` (state :class:`OjaState`; calls ``oracle.measure`` once, 2 rows).

    Example:
      >>> alg = nonadaptive_oja(inverse_time_schedule(1.0, 8))

    Paper mapping: the spec's non-adaptive two-measurement scheme; the paper proves every such
    scheme suffers ``Omega(lambda_2^2 d^3 / (Delta^2 t))``. The noise of ``C^ w`` per trailing
    coordinate is about ``(tr S)^2 / 2``, so the linearised error is
    ``~ c^2/(2c-1) d^3 lambda_2^2 / (2 Delta^2 t)`` for ``lambda_1 << d lambda_2``.

    Theory: claims ``nonadaptive_*`` in ``experiments/online/compressed_oja.py``.
    """
    _check_step(step_size)

    def update(state, oracle, key):
        k_dir, k_x = jax.random.split(key)
        cd = compute_dtype(state.w.dtype)
        w = state.w.astype(cd)
        d = w.shape[-1]
        ab = jax.random.normal(k_dir, (2, d), cd)
        ab = ab / jnp.linalg.norm(ab, axis=-1, keepdims=True)
        a, b = ab[0], ab[1]
        ma, mb = oracle.measure(ab, k_x).astype(cd)
        eta = resolve(step_size, state.count, cd)
        cw = (0.5 * d * d) * ma * mb * (a * jnp.vdot(b, w) + b * jnp.vdot(a, w))
        new = _normalize(w + eta * cw).astype(state.w.dtype)
        return base.Step(new, _info(2)), OjaState(new, state.count + 1)

    return base.OracleAlgorithm(_vector_init, update)


def adaptive_grouse(step_size: str | float | Callable = "greedy") -> base.OracleAlgorithm:
    r"""GROUSE's geodesic step for a rank-one subspace on the two adaptive measurements.

    With ``y = <w, x>`` (the weight), ``z = <u, x>`` (the residual ``r = z u`` seen in the
    measured plane) and ``theta`` the rotation angle,

    .. math::
       w \leftarrow \cos\theta\, w + \sin\theta\, \mathrm{sign}(y z)\, u,\qquad
       \theta = \begin{cases} \arctan(|z| / |y|) & \text{greedy}\\
                              \min(\eta_t |y| |z|, \pi/2) & \text{GROUSE step } \eta_t.
                \end{cases}

    The greedy angle moves ``w`` to ``normalize(y w + z u)``, the unit vector of the measured
    plane closest to ``x``. Noiseless (``x = s v_1``) it contracts exactly:
    ``E[sin^2_{t+1} | w_t] = (1 - 1/(d - 1)) sin^2_t``; with noise it keeps jumping (no
    ``1/t`` rate), the gap the paper's noisy analysis closes.

    Args:
      step_size: ``"greedy"`` (default) or ``eta_t > 0`` (a float or a schedule).

    Returns:
      ``OracleAlgorithm`` (state :class:`OjaState`).

    Example:
      >>> alg = adaptive_grouse()

    Paper mapping: "adaptive GROUSE" of the paper's related work (noiseless analysis only);
    Balzano et al.'s update ``U + [(cos(sigma eta) - 1) U p/|p| + sin(sigma eta) r/|r|] p^T/|p|``
    with ``p = y``, ``r = z u``, ``sigma = |r||p|``. Theory: the contraction law is tested in
    ``tests/online/test_compressed_oja.py``.
    """
    greedy = isinstance(step_size, str)
    if greedy and step_size != "greedy":
        raise ValueError(f"step_size must be 'greedy' or a float > 0 / schedule, got "
                         f"{step_size!r}")
    if not greedy:
        _check_step(step_size)

    def update(state, oracle, key):
        k_dir, k_x = jax.random.split(key)
        cd = compute_dtype(state.w.dtype)
        w = state.w.astype(cd)
        u = orthogonal_direction(w, k_dir)
        y, z = oracle.measure(jnp.stack([w, u]), k_x).astype(cd)
        if greedy:
            theta = jnp.arctan2(jnp.abs(z), jnp.abs(y))
        else:
            eta = resolve(step_size, state.count, cd)
            theta = jnp.minimum(eta * jnp.abs(y * z), jnp.pi / 2)
        new = jnp.cos(theta) * w + jnp.sin(theta) * jnp.sign(y * z) * u
        new = _normalize(new).astype(state.w.dtype)
        return base.Step(new, _info(2)), OjaState(new, state.count + 1)

    return base.OracleAlgorithm(_vector_init, update)


class SampleCovarianceState(NamedTuple):
    """State of :func:`sample_covariance_pca`.

    Attributes:
      cov: running mean of ``x x^T`` (``(d, d)``, dtype of ``x0``: float32 or float64).
      count: int32 number of samples.
    """

    cov: jax.Array
    count: jax.Array


def top_eigenvector(cov: jax.Array) -> jax.Array:
    """Unit top eigenvector of a symmetric matrix (``jnp.linalg.eigh``), sign fixed so that its
    largest-magnitude entry is positive."""
    v = jnp.linalg.eigh(cov)[1][:, -1]
    return v * jnp.where(v[jnp.argmax(jnp.abs(v))] < 0, -1.0, 1.0).astype(v.dtype)


def sample_covariance_pca() -> base.OracleAlgorithm:
    r"""Top eigenvector of the running sample covariance ``C_t = (1/t) sum_s x_s x_s^T``: the
    fully observed reference estimate, with ``E sin^2 ~ (d - 1) lambda_1 lambda_2 /
    (Delta^2 t)`` for large ``t`` (spiked model).

    Returns:
      ``OracleAlgorithm`` with state :class:`SampleCovarianceState` (``O(d^2)`` memory, unlike
      the ``O(d)`` streaming methods); ``Step.x`` is :func:`top_eigenvector` of ``C_t`` (in
      ``x0``'s dtype, float32 or float64: ``eigh`` has no 16-bit form, so 16-bit ``x0`` raises
      ``ValueError``; ``x0`` only fixes shape and dtype). The eigendecomposition is not part of
      the state, so :func:`run_at` computes it only at its checkpoints (dead code elsewhere).

    Example:
      >>> alg = sample_covariance_pca()

    Paper mapping: the "batch eigh" oracle baseline of the spec.
    """

    def init(x0, key):
        del key
        d, dtype = x0.shape[-1], jnp.dtype(x0.dtype)
        if dtype not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64)):
            raise ValueError(f"sample_covariance_pca needs a float32 or float64 x0, got {dtype}")
        return SampleCovarianceState(jnp.zeros((d, d), dtype),
                                     jnp.zeros([], jnp.int32))

    def update(state, oracle, key):
        _, k_x = jax.random.split(key)
        cd = state.cov.dtype
        x = oracle.sample(k_x).astype(cd)
        n = (state.count + 1).astype(cd)
        cov = state.cov + (jnp.outer(x, x) - state.cov) / n
        info = _info(x.shape[-1])
        return base.Step(top_eigenvector(cov), info), SampleCovarianceState(cov, state.count + 1)

    return base.OracleAlgorithm(init, update)


# --------------------------------------------------------------------------- runner


def _checkpoints(checkpoints) -> np.ndarray:
    cps = np.asarray(checkpoints)
    if (cps.ndim != 1 or cps.size == 0 or not np.issubdtype(cps.dtype, np.integer)
            or cps[0] < 1 or np.any(np.diff(cps) <= 0)):
        raise ValueError("checkpoints must be a non-empty, strictly increasing sequence of ints "
                         f">= 1, got {checkpoints!r}")
    return cps.astype(np.int32)


def run_at(alg: base.OracleAlgorithm, x0: Any, oracle: Any, key: jax.Array,
           checkpoints: Sequence[int], *, trace_fn: Callable | None = None):
    """``base.run`` recording the trace only after ``checkpoints[i]`` updates.

    One ``lax.scan`` over the checkpoints, each advancing with a ``lax.fori_loop``; the key
    schedule is ``base.run``'s (``init_key, update_key = split(key)``, update ``t`` uses
    ``fold_in(update_key, t)``), so ``run_at(...)[1][i] == base.run(...)[1][checkpoints[i] - 1]``.

    Args:
      alg: an ``OracleAlgorithm``.
      x0, oracle, key: as in ``base.run``.
      checkpoints: strictly increasing ints ``>= 1`` (static); the run makes ``checkpoints[-1]``
        updates.
      trace_fn: ``trace_fn(step, state, oracle)`` (default ``step.info``).

    Returns:
      ``(final_state, trace)``, trace leaves with a leading axis ``len(checkpoints)``.

    Example:
      >>> import jax
      >>> stream = spiked_stream(4)
      >>> _, err = run_at(oja(0.05), jax.numpy.ones(4), stream, jax.random.PRNGKey(0),
      ...                 [10, 100, 1000], trace_fn=lambda s, st, o: sin2(s.x, o.top_eigenvector))
    """
    cps = _checkpoints(checkpoints)
    trace_fn = (lambda step, state, oracle: step.info) if trace_fn is None else trace_fn
    init_key, update_key = jax.random.split(key)
    state = alg.init(x0, init_key)
    starts = np.concatenate([[0], cps[:-1]]).astype(np.int32)

    def advance(t, st):
        return alg.update(st, oracle, jax.random.fold_in(update_key, t))[1]

    def body(state, bounds):
        start, end = bounds
        state = jax.lax.fori_loop(start, end - 1, advance, state)
        step, state = alg.update(state, oracle, jax.random.fold_in(update_key, end - 1))
        return state, trace_fn(step, state, oracle)

    return jax.lax.scan(body, state, (jnp.asarray(starts), jnp.asarray(cps)))


def linearised_constant(d: int, lam1: float, lam2: float, c: float, method: str) -> float:
    r"""Linearised ``lim_t t E sin^2(w_t, v_1)`` for ``eta_t = c / (Delta t)`` on the spiked model.

    Around ``v_1`` each trailing coordinate ``theta_i`` of ``w`` follows
    ``theta_i <- (1 - eta Delta) theta_i + eta xi_i`` with noise variance ``V``, whose stationary
    solution is ``E theta_i^2 ~ c^2 / (2c - 1) V / (Delta^2 t)`` (``c > 1/2``). Full Oja:
    ``V = lambda_1 lambda_2``; compressed Oja: ``V = (d - 1) lambda_1 lambda_2`` (from
    ``E[(d-1)^2 z^2 u_i^2] = (d - 1) lambda_2`` with the sphere moments of ``u``). Summed over the
    ``d - 1`` trailing coordinates.

    Args:
      d: dimension. lam1, lam2: the spiked eigenvalues. c: the schedule's constant (> 1/2).
      method: ``"oja"`` or ``"compressed"``.

    Returns:
      The constant (a float).

    Example:
      >>> linearised_constant(16, 2.0, 1.0, 2.0, "compressed")  # 4/3 * 225 * 2
      600.0
    """
    if method not in ("oja", "compressed"):
        raise ValueError(f"method must be 'oja' or 'compressed', got {method!r}")
    if not c > 0.5:
        raise ValueError(f"c must be > 1/2, got {c!r}")
    gap = lam1 - lam2
    k = c * c / (2 * c - 1) / gap**2 * (d - 1) * lam1 * lam2
    return k * (d - 1) if method == "compressed" else k
